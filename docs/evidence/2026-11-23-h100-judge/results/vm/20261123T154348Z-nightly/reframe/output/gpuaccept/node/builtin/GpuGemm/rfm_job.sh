#!/bin/bash
/tmp/final-results/vm/20261123T154348Z-nightly/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --output gemm.json --quick
