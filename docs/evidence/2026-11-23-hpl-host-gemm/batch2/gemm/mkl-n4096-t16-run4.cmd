OMP_PROC_BIND=close OMP_PLACES=cores /tmp/gpuaccept-hpl-w/bin/gpuaccept-cpugemm-mkl --threads 16
