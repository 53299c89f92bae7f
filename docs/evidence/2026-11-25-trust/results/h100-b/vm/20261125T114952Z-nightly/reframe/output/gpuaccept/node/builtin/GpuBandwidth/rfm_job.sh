#!/bin/bash
/tmp/results/vm/20261125T114952Z-nightly/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-bw --output bandwidth.json --quick --max-bytes 1GiB --matrix-bytes 256MiB --trials 7 --target-ms 5
