#!/bin/bash
# Run on the GPU machine (a 1 x H100 80 GB SXM5 VM) from the repository root: builds gpuaccept-hplstyle for sm_90,
# checks its refusals and its failed-residual self-test, sweeps N and the getrf algorithm, then runs the
# default size 5 times with nvidia-smi sampling power alongside. Everything lands in $OUT/hpl.tar.gz.
set -u
R=$OUT/hpl
mkdir -p $R
exec > >(tee $R/device.log) 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,temperature.gpu,memory.total --format=csv
make -C reframe_checks/src hpl BUILD_DIR=/tmp/b GIT_REV=$(cat .gitrev 2>/dev/null || echo issue-3) \
  CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" || exit 1
B=/tmp/b/gpuaccept-hplstyle
run() { # name, args...
  local name=$1; shift
  echo "== $name: $B $*"
  $B "$@" --output $R/$name.json > $R/$name.out 2> $R/$name.err; echo "exit $?" | tee -a $R/$name.out
  grep -E "^(CUSOLVER|\|\|Ax|node:)" $R/$name.out; tail -3 $R/$name.err
}
run small --n 2048 --warmup-n 512
run inject --n 8192 --inject-error
run toobig --n 120000
for n in ${SWEEP_N:-32768 49152 65536 81920}; do run sweep_n${n}_alg0 --n $n; done
run sweep_auto_alg0
run sweep_auto_alg1 --alg 1
run sweep_n65536_alg1 --n 65536 --alg 1
for i in 1 2 3 4 5; do
  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $R/default$i.smi.csv &
  SMI=$!
  run default$i ${DEFAULT_OPTS:-}
  kill $SMI
done
date -u
tar -C $OUT -czf $OUT/hpl.tar.gz hpl
rm -rf $R
