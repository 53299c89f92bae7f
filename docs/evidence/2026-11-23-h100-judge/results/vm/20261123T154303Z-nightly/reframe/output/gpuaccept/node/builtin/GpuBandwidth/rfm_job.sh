#!/bin/bash
/tmp/final-results/vm/20261123T154303Z-nightly/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-bw --output bandwidth.json --quick --max-bytes 1GiB --trials 7 --target-ms 5
