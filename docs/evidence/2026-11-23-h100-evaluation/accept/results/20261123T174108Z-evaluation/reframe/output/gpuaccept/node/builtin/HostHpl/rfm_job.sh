#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1
export MKL_NUM_THREADS=1
mpirun --bind-to core --map-by core -np 16 /work/main/hpl/build-d09c2c708bec/host/bin/gpuaccept/xhpl
