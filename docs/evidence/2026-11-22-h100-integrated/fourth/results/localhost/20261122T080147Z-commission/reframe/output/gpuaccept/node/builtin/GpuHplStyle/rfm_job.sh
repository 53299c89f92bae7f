#!/bin/bash
/work/main/.venv/bin/python -m gpuaccept sample --interval 0.1 --output power.json -- /work/main/results/localhost/20261122T080147Z-commission/reframe/stage/gpuaccept/node/builtin/HplStyleBuild_01392a28/gpuaccept-hplstyle --output hplstyle.json
