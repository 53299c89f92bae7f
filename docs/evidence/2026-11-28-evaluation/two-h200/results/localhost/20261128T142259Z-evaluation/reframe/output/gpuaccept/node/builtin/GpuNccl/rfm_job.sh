#!/bin/bash
export NCCL_NVLS_ENABLE=0
/work/main/results/localhost/20261128T142259Z-evaluation/reframe/stage/gpuaccept/node/builtin/NcclBuild_ef3de546/gpuaccept-nccl --output nccl.json
