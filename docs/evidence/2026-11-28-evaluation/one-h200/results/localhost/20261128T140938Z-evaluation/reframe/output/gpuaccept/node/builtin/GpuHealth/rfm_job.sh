#!/bin/bash
/work/main/.venv/bin/python -m gpuaccept health --output health.json --expected-gpus 1 --xid-since 24h
