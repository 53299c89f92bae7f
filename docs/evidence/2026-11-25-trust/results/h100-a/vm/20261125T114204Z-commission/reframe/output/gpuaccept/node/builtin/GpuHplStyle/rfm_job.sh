#!/bin/bash
/opt/torch/.venv/bin/python3 -m gpuaccept sample --interval 0.1 --output power.json -- /tmp/results/vm/20261125T114204Z-commission/reframe/stage/gpuaccept/node/builtin/HplStyleBuild_01392a28/gpuaccept-hplstyle --output hplstyle.json
_gpuaccept_rc=$?
if [ -f hplstyle.json ]; then /opt/torch/.venv/bin/python3 -m gpuaccept peaks hplstyle.json --reference-dir /work/main/reference_values --power power.json || { [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi
exit $_gpuaccept_rc
