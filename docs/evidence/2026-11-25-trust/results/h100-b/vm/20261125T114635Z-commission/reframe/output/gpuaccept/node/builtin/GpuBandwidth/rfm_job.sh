#!/bin/bash
/tmp/results/vm/20261125T114635Z-commission/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-bw --output bandwidth.json
