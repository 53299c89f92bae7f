#!/bin/bash
export NCCL_NVLS_ENABLE=0
/tmp/results/vm/20261125T114204Z-commission/reframe/stage/gpuaccept/node/builtin/NcclBuild_ef3de546/gpuaccept-nccl --output nccl.json
