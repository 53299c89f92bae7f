== hpl cuda-n16384 (limit 110s): OMP_NUM_THREADS=16 OMP_PROC_BIND=close OMP_PLACES=cores NVBLAS_CONFIG_FILE=/tmp/gpuaccept-hpl-w/nvblas-plain.conf mpirun -np 1 --bind-to none /tmp/gpuaccept-hpl-w/cuda/hpl-2.3/bin/gpuaccept/xhpl
rc=0 wall=30s
