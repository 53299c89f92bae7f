#!/bin/bash
/work/main/results/localhost/20261122T080147Z-commission/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --output gemm.json
