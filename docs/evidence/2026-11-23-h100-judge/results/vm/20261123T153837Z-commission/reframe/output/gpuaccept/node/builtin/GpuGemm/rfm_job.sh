#!/bin/bash
/tmp/final-results/vm/20261123T153837Z-commission/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --output gemm.json
