#!/bin/bash
/work/main/.venv/bin/python -m gpuaccept sample --interval 0.1 --output power.json -- /work/main/results/localhost/20261128T140938Z-evaluation/reframe/stage/gpuaccept/node/builtin/HplStyleBuild_01392a28/gpuaccept-hplstyle --output hplstyle.json
_gpuaccept_rc=$?
if [ -f hplstyle.json ]; then /work/main/.venv/bin/python -m gpuaccept peaks hplstyle.json --reference-dir /work/main/reference_values --power power.json || { [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi
exit $_gpuaccept_rc
