$ python3 -m gpuaccept detect --facts /tmp/devq-out/nodetypes/facts.json --reference-dir /work/main/.devq/nodetypes/payload/reference_values
