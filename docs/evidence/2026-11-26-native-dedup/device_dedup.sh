#!/bin/bash
# Issue 26 items 1 and 7: the native tools before and after the duplicates between them were removed (run_gpu_tool,
# end_parameters, CudaOwned, Args::get_seconds in common/; with_element_types and timed_and_verified in
# gpuaccept-gemm; method/not_run in gpuaccept-overlap), built on the same GPU machine from the two revisions'
# reframe_checks/src (carried as .devq/src-old.tar, main at c60e4c6, and .devq/src-new.tar, branch fixtures-native:
# `git archive <rev> reframe_checks/src`). Each tool runs in its quick mode on GPU 0, old and new alternating, in
# ROUNDS rounds (default 2); round 1's documents are compared by ../2026-11-26-native-skeleton/compare_skeleton.py,
# the later rounds' metrics are listed beside them (the noise). Then the paths the change touched besides the
# measurements: gpuaccept-gemm --inject-error (exit 2), a --gpus index that is not there (exit 3), no visible
# device (exit 1 and a document), gpuaccept-overlap and -xgemm writing their document to stdout. Everything under
# $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; REPO=$PWD; ROUNDS=${ROUNDS:-2}
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(cat .devq/gitrev 2>/dev/null)"
nvidia-smi --query-gpu=index,name,serial,pci.bus_id,power.limit,driver_version --format=csv | tee "$OUT/gpu.csv"
NCCL=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
TOOLS="bw gemm hplstyle nccl overlap xgemm"
for rev in old new; do
  mkdir -p /tmp/src-$rev && tar xf .devq/src-$rev.tar -C /tmp/src-$rev
  s=$SECONDS
  make -j8 -C /tmp/src-$rev/reframe_checks/src BUILD_DIR=/tmp/b-$rev CUDA_ARCH=-arch=sm_90 NCCL_HOME=$NCCL GIT_REV=$rev \
    $(for t in $TOOLS; do echo /tmp/b-$rev/gpuaccept-$t; done) > "$OUT/build-$rev.log" 2>&1 \
    || { tail -20 "$OUT/build-$rev.log"; exit 1; }
  echo "built $rev in $((SECONDS - s)) s"
done
run() {  # dir rev tool args...
  local dir=$1 rev=$2 tool=$3; shift 3
  local o="$OUT/$dir/$rev"; mkdir -p "$o"
  /tmp/b-$rev/gpuaccept-$tool "$@" --output "$o/$tool.json" > "$o/$tool.out" 2> "$o/$tool.err"
  echo "$dir $rev $tool rc=$?" | tee -a "$OUT/rc.txt"
}
for round in $(seq 1 "$ROUNDS"); do
  dir=round$round
  for tool in $TOOLS; do
    for rev in old new; do
      case $tool in
        nccl) run $dir $rev nccl --quick ;;
        xgemm) run $dir $rev xgemm --gpu 0 --sizes 1024,4096,8192 ;;
        *) run $dir $rev $tool --quick --gpus 0 ;;
      esac
    done
  done
done
mkdir -p "$OUT/paths/old" "$OUT/paths/new"
for rev in old new; do
  o="$OUT/paths/$rev"
  /tmp/b-$rev/gpuaccept-gemm --quick --gpus 0 --precisions fp64 --inject-error --output "$o/gemm_inject.json" > /dev/null 2>&1
  echo "paths $rev gemm --inject-error rc=$? (2 expected)" | tee -a "$OUT/rc.txt"
  for tool in bw gemm hplstyle nccl overlap; do
    /tmp/b-$rev/gpuaccept-$tool --quick --gpus 9 --output "$o/badgpu-$tool.json" > /dev/null 2> "$o/badgpu-$tool.err"
    echo "paths $rev $tool --gpus 9 rc=$? (3 expected)" | tee -a "$OUT/rc.txt"
    CUDA_VISIBLE_DEVICES= /tmp/b-$rev/gpuaccept-$tool --quick --output "$o/nogpu_$tool.json" > /dev/null 2> "$o/nogpu-$tool.err"
    echo "paths $rev $tool no visible GPU rc=$? (1 expected)" | tee -a "$OUT/rc.txt"
  done
  /tmp/b-$rev/gpuaccept-xgemm --gpu 9 > /dev/null 2> "$o/badgpu-xgemm.err"
  echo "paths $rev xgemm --gpu 9 rc=$? (3 expected)" | tee -a "$OUT/rc.txt"
  CUDA_VISIBLE_DEVICES= /tmp/b-$rev/gpuaccept-xgemm --sizes 1024 > "$o/nogpu_xgemm.json" 2> "$o/nogpu-xgemm.err"
  echo "paths $rev xgemm no visible GPU, document on stdout rc=$? (1 expected)" | tee -a "$OUT/rc.txt"
  /tmp/b-$rev/gpuaccept-overlap --quick --gpus 0 --intensities 1 --streams 2 > "$o/overlap_stdout.json" 2> "$o/overlap-stdout.err"
  echo "paths $rev overlap, document on stdout rc=$? (0 expected)" | tee -a "$OUT/rc.txt"
  /tmp/b-$rev/gpuaccept-xgemm --gpu 0 --sizes 1024 > "$o/xgemm_stdout.json" 2> "$o/xgemm-stdout.err"
  echo "paths $rev xgemm, document on stdout rc=$? (0 expected)" | tee -a "$OUT/rc.txt"
done
COMPARE="$REPO/docs/evidence/2026-11-26-native-skeleton/compare_skeleton.py"
for dir in $(cd "$OUT" && ls -d round* paths); do
  echo "#### $dir" | tee -a "$OUT/compare.txt"
  python3 "$COMPARE" "$OUT/$dir/old" "$OUT/$dir/new" | tee -a "$OUT/compare.txt"
done
echo "== done $(date -u +%FT%TZ)"
cd "$OUT" && tar czf /tmp/results.tar.gz --exclude=console.log . && mv /tmp/results.tar.gz . && find . -mindepth 1 ! -name results.tar.gz ! -name console.log -delete
