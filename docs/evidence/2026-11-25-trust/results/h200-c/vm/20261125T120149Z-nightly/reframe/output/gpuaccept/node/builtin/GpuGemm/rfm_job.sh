#!/bin/bash
/tmp/results/vm/20261125T120149Z-nightly/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --output gemm.json --quick --window-s 3
_gpuaccept_rc=$?
if [ -f gemm.json ]; then /opt/torch/.venv/bin/python3 -m gpuaccept peaks gemm.json --reference-dir /work/main/reference_values || { [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi
exit $_gpuaccept_rc
