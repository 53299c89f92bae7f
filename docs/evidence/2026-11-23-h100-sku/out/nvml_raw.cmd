$ python3 /work/main/.devq/nodetypes/payload/nvml_raw.py
