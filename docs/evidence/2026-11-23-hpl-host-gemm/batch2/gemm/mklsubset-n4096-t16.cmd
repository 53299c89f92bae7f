OMP_PROC_BIND=close OMP_PLACES=cores LD_LIBRARY_PATH=/tmp/gpuaccept-hpl-w/lib /tmp/gpuaccept-hpl-w/bin/gpuaccept-cpugemm-mklsubset --threads 16
