#!/bin/sh
# One GPU per MPI rank for HPL-CUDA: the rank's node-local index picks the GPU (the rank then sees only it).
# Open MPI, MPICH/Hydra and Slurm name the local rank differently.
rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}
if [ -n "${GPUACCEPT_HPL_GPUS:-}" ]; then
  CUDA_VISIBLE_DEVICES=$(echo "$GPUACCEPT_HPL_GPUS" | cut -d, -f$((rank + 1)))
else
  CUDA_VISIBLE_DEVICES=$rank
fi
export CUDA_VISIBLE_DEVICES
exec "$@"
