#!/bin/bash
# Issue 26 items 1 and 7: the native tools before and after their shared skeleton (common/tool_main.h), built on
# the same GPU machine from the two revisions' reframe_checks/src (carried as .devq/src-old.tar and
# .devq/src-new.tar: `git archive <rev> reframe_checks/src`), each tool run in its quick mode on GPU 0, old and new
# alternating, and their figures and verification compared (compare_skeleton.py). Everything under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; REPO=$PWD
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(cat .devq/gitrev 2>/dev/null)"
nvidia-smi --query-gpu=index,name,serial,pci.bus_id,power.limit,driver_version --format=csv | tee "$OUT/gpu.csv"
NCCL=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
for rev in old new; do
  mkdir -p /tmp/src-$rev && tar xf .devq/src-$rev.tar -C /tmp/src-$rev
  s=$SECONDS
  make -j8 -C /tmp/src-$rev/reframe_checks/src BUILD_DIR=/tmp/b-$rev CUDA_ARCH=-arch=sm_90 NCCL_HOME=$NCCL GIT_REV=$rev \
    /tmp/b-$rev/gpuaccept-bw /tmp/b-$rev/gpuaccept-gemm /tmp/b-$rev/gpuaccept-hplstyle /tmp/b-$rev/gpuaccept-nccl \
    /tmp/b-$rev/gpuaccept-overlap /tmp/b-$rev/gpuaccept-xgemm > "$OUT/build-$rev.log" 2>&1 || { tail -20 "$OUT/build-$rev.log"; exit 1; }
  echo "built $rev in $((SECONDS - s)) s"
done
run() {  # rev tool args...
  local rev=$1 tool=$2; shift 2
  local o="$OUT/$rev"; mkdir -p "$o"
  /tmp/b-$rev/gpuaccept-$tool "$@" --output "$o/$tool.json" > "$o/$tool.out" 2> "$o/$tool.err"
  echo "$rev $tool rc=$?" | tee -a "$OUT/rc.txt"
}
for tool in bw gemm hplstyle nccl overlap xgemm; do
  for rev in old new; do
    case $tool in
      nccl) run $rev nccl --quick ;;
      xgemm) run $rev xgemm --gpu 0 --sizes 1024,4096,8192 ;;
      *) run $rev $tool --quick --gpus 0 ;;
    esac
  done
done
for rev in old new; do
  /tmp/b-$rev/gpuaccept-gemm --quick --gpus 0 --precisions fp64 --inject-error --output "$OUT/$rev/gemm_inject.json" > /dev/null 2>&1
  echo "$rev gemm --inject-error rc=$? (2 expected)" | tee -a "$OUT/rc.txt"
done
python3 "$REPO/docs/evidence/2026-11-26-native-skeleton/compare_skeleton.py" "$OUT/old" "$OUT/new" | tee "$OUT/compare.txt"
echo "== done $(date -u +%FT%TZ)"
cd "$OUT" && tar czf /tmp/results.tar.gz --exclude=console.log . && mv /tmp/results.tar.gz . && find . -mindepth 1 ! -name results.tar.gz ! -name console.log -delete
