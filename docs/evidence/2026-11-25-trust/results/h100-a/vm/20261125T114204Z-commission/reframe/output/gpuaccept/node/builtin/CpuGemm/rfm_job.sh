#!/bin/bash
export KMP_AFFINITY=granularity=fine,compact,1,0
export OMP_PROC_BIND=close
export OMP_PLACES=cores
export LC_ALL=C
/tmp/results/vm/20261125T114204Z-commission/reframe/stage/gpuaccept/node/builtin/CpuBenchBuild_5e956f92/gpuaccept-cpugemm --output cpu_gemm.json
