#!/bin/sh
# One GPU per MPI rank for HPL-CUDA: the rank's node-local index picks the GPU (the rank then sees only it).
# Open MPI, MPICH/Hydra and Slurm name the local rank differently.
# NVLink SHARP (NCCL's multicast) stays off in every rank, whatever the launcher passed, unless GPUACCEPT_HPL_NVLS=1
# asks for NCCL's own choice (xhpl applies the same rule before its first NCCL call).
rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}
if [ -n "${GPUACCEPT_HPL_GPUS:-}" ]; then
  CUDA_VISIBLE_DEVICES=$(echo "$GPUACCEPT_HPL_GPUS" | cut -d, -f$((rank + 1)))
else
  CUDA_VISIBLE_DEVICES=$rank
fi
export CUDA_VISIBLE_DEVICES
if [ "${GPUACCEPT_HPL_NVLS:-0}" != 1 ]; then
  NCCL_NVLS_ENABLE=0
  export NCCL_NVLS_ENABLE
fi
exec "$@"
