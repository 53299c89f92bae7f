#!/bin/bash
export LC_ALL=C
/work/main/results/localhost/20261128T142259Z-evaluation/reframe/stage/gpuaccept/node/builtin/FftBuild_a4898c0a/gpuaccept-fft --output fft_offload.json
_gpuaccept_rc=$?
if [ -f fft_offload.json ]; then /work/main/.venv/bin/python -m gpuaccept.probe.fft fft_offload.json || { [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi
exit $_gpuaccept_rc
