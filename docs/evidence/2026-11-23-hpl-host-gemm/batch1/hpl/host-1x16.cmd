== hpl host-1x16 (limit 60s): OMP_NUM_THREADS=16 OMP_PROC_BIND=close OMP_PLACES=cores mpirun -np 1 --bind-to none /tmp/gpuaccept-hpl-w/host/hpl-2.3/bin/gpuaccept/xhpl
rc=0 wall=58s
