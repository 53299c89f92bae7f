#!/bin/bash
/work/main/results/localhost/20261128T140938Z-evaluation/reframe/stage/gpuaccept/node/builtin/OverlapBuild_7847bbb9/gpuaccept-overlap --output overlap.json
_gpuaccept_rc=$?
if [ -f overlap.json ]; then /work/main/.venv/bin/python -m gpuaccept overlap-model overlap.json || { [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi
exit $_gpuaccept_rc
