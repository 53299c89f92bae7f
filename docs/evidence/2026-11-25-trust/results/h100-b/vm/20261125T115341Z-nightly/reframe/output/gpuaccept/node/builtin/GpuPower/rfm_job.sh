#!/bin/bash
/opt/torch/.venv/bin/python3 -m gpuaccept powercheck --gemm /tmp/results/vm/20261125T115341Z-nightly/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-gemm --precision fp64 --output power_check.json --quick
