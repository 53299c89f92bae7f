#!/bin/bash
/opt/torch/.venv/bin/python3 -m gpuaccept health --output health.json --quick --expected-gpus 1 --xid-since 24h
