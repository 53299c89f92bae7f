#!/bin/bash
/work/main/.wt/issue-4/.venv/bin/python -m gpuaccept powercheck --gemm /work/main/.wt/issue-4/results/localhost/20261122T070352Z-nightly/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --precision fp64 --output power_check.json --quick
