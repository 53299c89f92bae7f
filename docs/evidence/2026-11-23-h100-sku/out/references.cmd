$ python3 -m gpuaccept references --reference-dir /work/main/.devq/nodetypes/payload/reference_values
