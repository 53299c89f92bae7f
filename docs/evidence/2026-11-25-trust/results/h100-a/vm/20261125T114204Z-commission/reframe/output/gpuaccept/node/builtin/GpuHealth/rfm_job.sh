#!/bin/bash
/opt/torch/.venv/bin/python3 -m gpuaccept health --output health.json --expected-gpus 1 --xid-since 24h
