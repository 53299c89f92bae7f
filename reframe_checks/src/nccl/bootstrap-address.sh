#!/bin/sh
# Prints HOST:PORT for GPUACCEPT_BOOTSTRAP (docs/checks/nccl.md, "Bootstrap: TCP at rank 0"): the host where rank 0
# of gpuaccept-nccl --multi-process will run. In a Slurm job that is the first host of the allocation (srun's block
# distribution puts task 0 there): the first name `scontrol show hostnames` expands SLURM_JOB_NODELIST into.
# Outside Slurm (a local or mpirun launcher started on rank 0's host) it is this host's name.
# Usage: bootstrap-address.sh PORT. Exit 3 with a message naming what is missing.
set -eu
port=${1:-}
case $port in
  '' | *[!0-9]*) echo "bootstrap-address.sh: give the bootstrap port (a number), not '$port'" >&2; exit 3 ;;
esac
if [ -n "${SLURM_JOB_NODELIST:-}" ]; then
  if ! command -v scontrol >/dev/null 2>&1; then
    echo "bootstrap-address.sh: SLURM_JOB_NODELIST is set but scontrol is not on PATH" >&2
    exit 3
  fi
  host=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
else
  host=$(hostname)
fi
if [ -z "$host" ]; then
  echo "bootstrap-address.sh: no host for rank 0 (SLURM_JOB_NODELIST='${SLURM_JOB_NODELIST:-}')" >&2
  exit 3
fi
echo "$host:$port"
