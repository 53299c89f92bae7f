#!/bin/bash
export OMP_NUM_THREADS=16
export MKL_NUM_THREADS=16
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(cd sweep && mpirun --bind-to none -np 1 /work/main/roles/gpuaccept_hpl/files/gpuaccept-hpl-rank.sh /tmp/hplgpu/hpl/bin/gpuaccept/xhpl > HPL.out 2> stderr.txt) || echo 'gpuaccept: the sweep failed' >&2
cp sweep/HPL.dat HPL.sweep.dat; cp sweep/HPL.out HPL.sweep.out; cp sweep/stderr.txt HPL.sweep.err
/opt/torch/.venv/bin/python3 -m gpuaccept.probe.hpl_dat --ranks 1 --grid columns --memory-bytes 85520809984 --fraction 0.92 --threshold 16.0 --sweep sweep/HPL.out --output HPL.dat
/opt/torch/.venv/bin/python3 -m gpuaccept sample --interval 0.1 --output power.json -- mpirun --bind-to none -np 1 /work/main/roles/gpuaccept_hpl/files/gpuaccept-hpl-rank.sh /tmp/hplgpu/hpl/bin/gpuaccept/xhpl
