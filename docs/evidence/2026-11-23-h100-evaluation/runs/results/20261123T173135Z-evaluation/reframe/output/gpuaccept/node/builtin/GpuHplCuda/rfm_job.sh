#!/bin/bash
export NVBLAS_CONFIG_FILE=/work/main/hpl/nvblas.conf
export OMP_NUM_THREADS=16
export MKL_NUM_THREADS=16
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
/work/main/.venv/bin/python -m gpuaccept sample --interval 0.1 --output power.json -- mpirun --bind-to none -np 1 /work/main/hpl/gpuaccept-hpl-rank.sh /work/main/hpl/build-d09c2c708bec/cuda/bin/gpuaccept/xhpl
