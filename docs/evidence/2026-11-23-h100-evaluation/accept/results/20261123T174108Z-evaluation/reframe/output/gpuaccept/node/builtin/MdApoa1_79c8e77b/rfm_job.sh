#!/bin/bash
export GPUACCEPT_GIT_REVISION=eacdb85
export LC_ALL=C
/work/main/.venv/bin/python -m gpuaccept.probe.md_apoa1 --output md_apoa1.json --inputs /work/main/md/apoa1
