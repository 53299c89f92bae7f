== hpl host-16x1 (limit 60s): OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 mpirun -np 16 --bind-to core --map-by core /tmp/gpuaccept-hpl-w/host/hpl-2.3/bin/gpuaccept/xhpl
rc=0 wall=26s
