#!/bin/bash
/work/main/.venv/bin/python -m gpuaccept powercheck --gemm /work/main/results/localhost/20261128T142259Z-evaluation/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --precision fp64 --output power_check.json
