#!/bin/bash
/work/main/.wt/issue-4/results/localhost/20261122T065350Z-nightly/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --output gemm.json --quick
