$ python3 /work/main/.devq/nodetypes/payload/sku_report.py /tmp/devq-out/nodetypes/facts.json /work/main/.devq/nodetypes/payload/reference_values
