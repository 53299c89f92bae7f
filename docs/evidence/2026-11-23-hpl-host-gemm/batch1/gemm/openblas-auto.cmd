LD_LIBRARY_PATH=/tmp/gpuaccept-hpl-w/lib /tmp/gpuaccept-hpl-w/bin/gpuaccept-cpugemm-openblas --threads 1,16
