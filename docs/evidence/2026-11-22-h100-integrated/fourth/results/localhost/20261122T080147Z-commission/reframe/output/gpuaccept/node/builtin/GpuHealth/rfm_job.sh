#!/bin/bash
/work/main/.venv/bin/python -m gpuaccept health --output health.json --node-type h100_sxm5_80gb --reference-dir /work/main/reference_values --expected-gpus 1 --xid-since 24h
