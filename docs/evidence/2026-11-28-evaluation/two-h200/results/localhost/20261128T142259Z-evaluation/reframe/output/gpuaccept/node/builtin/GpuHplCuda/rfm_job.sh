#!/bin/bash
export NCCL_NVLS_ENABLE=0
export OMP_NUM_THREADS=16
export MKL_NUM_THREADS=16
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(cd sweep && mpirun --bind-to none -x NCCL_NVLS_ENABLE -np 2 /work/main/hpl/gpuaccept-hpl-rank.sh /work/main/hpl/build-d09c2c708bec/cuda/bin/gpuaccept/xhpl > HPL.out 2> stderr.txt) || echo 'gpuaccept: the sweep failed' >&2
cp sweep/HPL.dat HPL.sweep.dat; cp sweep/HPL.out HPL.sweep.out; cp sweep/stderr.txt HPL.sweep.err
/work/main/.venv/bin/python -m gpuaccept.probe.hpl_dat --ranks 2 --grid columns --memory-bytes 150754820096 --fraction 0.92 --threshold 16.0 --sweep sweep/HPL.out --output HPL.dat
/work/main/.venv/bin/python -m gpuaccept sample --interval 0.1 --output power.json -- mpirun --bind-to none -x NCCL_NVLS_ENABLE -np 2 /work/main/hpl/gpuaccept-hpl-rank.sh /work/main/hpl/build-d09c2c708bec/cuda/bin/gpuaccept/xhpl
