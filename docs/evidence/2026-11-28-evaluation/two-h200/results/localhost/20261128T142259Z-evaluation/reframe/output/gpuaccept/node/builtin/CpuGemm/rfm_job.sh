#!/bin/bash
export KMP_AFFINITY=granularity=fine,compact,1,0
export OMP_PROC_BIND=close
export OMP_PLACES=cores
export LC_ALL=C
/work/main/results/localhost/20261128T142259Z-evaluation/reframe/stage/gpuaccept/node/builtin/CpuBenchBuild_5e956f92/gpuaccept-cpugemm --output cpu_gemm.json
