#!/bin/bash
/root/out/results/vm/20261126T022443Z-evaluation/reframe/stage/gpuaccept/node/builtin/GpuBenchBuild_b29dcee5/gpuaccept-bw --output bandwidth.json
