#!/bin/bash
/work/main/results/localhost/20261128T142259Z-evaluation/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --output gemm.json
_gpuaccept_rc=$?
if [ -f gemm.json ]; then /work/main/.venv/bin/python -m gpuaccept peaks gemm.json --reference-dir /work/main/reference_values || { [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi
exit $_gpuaccept_rc
