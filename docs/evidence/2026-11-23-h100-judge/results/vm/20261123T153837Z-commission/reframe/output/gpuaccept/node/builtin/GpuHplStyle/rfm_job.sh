#!/bin/bash
/opt/torch/.venv/bin/python3 -m gpuaccept sample --interval 0.1 --output power.json -- /tmp/final-results/vm/20261123T153837Z-commission/reframe/stage/gpuaccept/node/builtin/HplStyleBuild_01392a28/gpuaccept-hplstyle --output hplstyle.json
