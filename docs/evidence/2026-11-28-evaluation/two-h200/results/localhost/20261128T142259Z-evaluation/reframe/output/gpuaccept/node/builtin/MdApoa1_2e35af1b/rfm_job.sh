#!/bin/bash
export GPUACCEPT_GIT_REVISION=25e4adc
export LC_ALL=C
/work/main/.venv/bin/python -m gpuaccept.probe.md_apoa1 --output md_apoa1_x12.json --inputs /work/main/md/apoa1 --replicate 3,2,2
