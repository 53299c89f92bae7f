#!/bin/bash
/root/out/results/vm/20261126T022443Z-evaluation/reframe/stage/gpuaccept/node/builtin/OverlapBuild_7847bbb9/gpuaccept-overlap --output overlap.json
_gpuaccept_rc=$?
if [ -f overlap.json ]; then /opt/torch/.venv/bin/python3 -m gpuaccept overlap-model overlap.json || { [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi
exit $_gpuaccept_rc
