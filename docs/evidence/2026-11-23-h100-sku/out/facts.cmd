$ python3 -m gpuaccept facts --output /tmp/devq-out/nodetypes/facts.json
