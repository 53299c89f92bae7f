LD_LIBRARY_PATH=/tmp/gpuaccept-hpl-w/lib OPENBLAS_CORETYPE=SkylakeX /tmp/gpuaccept-hpl-w/bin/gpuaccept-cpugemm-openblas --threads 1,16
