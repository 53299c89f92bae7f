#!/usr/bin/env bash
# gpuaccept on a lent machine of several GPUs as an operator runs it: `make accept` (the tool environment from a
# carried wheelhouse, the commission playbook on inventories/local, the verdict), with HPL 2.3's source given so
# that HPL-CUDA runs over every GPU. Run from the repository root, in phases, several per call; the machine keeps
# what an earlier call left (the tool environment, the builds, results/) while it stays warm:
#
#   OUT=... bash docs/evidence/2026-11-27-multigpu/device_accept.sh PHASE...
#
# Phases:
#   setup-play       make accept SUITE=commission without the suite (--skip-tags gpuaccept_suite): the tool
#                    environment and every build, timed on its own
#   setup            the node's description (facts, topology, NVLink, clocks), the tool environment's MKL BLAS
#                    subset and headers, the playbook's extra variables
#   commission       make accept SUITE=commission
#   nightly          make accept SUITE=nightly
#   foreign[:GPU]    make accept SUITE=nightly with a foreign process loading GPU (default 1): a PyTorch BF16
#                    matmul loop pinned to it by CUDA_VISIBLE_DEVICES (PCI order), started before and killed after
#   burnin[:MIN]     make accept SUITE=burnin with GPUACCEPT_BURNIN_MINUTES=MIN (default 1)
#   burnin-foreign[:MIN]  the same with the foreign load started on GPU 1 halfway through
#   memtest-selftest gpuaccept-memtest --inject-error on every GPU (expected: exit 2 naming each flipped word)
#   hpl-scaling      docs/evidence/2026-11-27-hpl-multigpu/device_hpl_scaling.sh (1, 2 and 4 GPUs; 1 x 4, 2 x 2)
#   pack             every run directory (stage trees left out) and the logs into $OUT
# A phase starts only while BUDGET (seconds, default 560) leaves it room (MIN_LEFT per phase below).
# Carried: .whl (the cp312 wheels of requirements/tools.txt), .carry (HPL 2.3's source tarball, the MKL BLAS subset
# of scripts/mkl-blas-subset.sh, xz-compressed, and mkl-include's headers). Read-only towards the GPUs' settings;
# NVLink SHARP/multicast stays off (NCCL_NVLS_ENABLE=0 in this environment, inherited by every process).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; BUDGET=${BUDGET:-560}; T0=$SECONDS
R=$PWD; W=/tmp/gpuaccept-w; mkdir -p "$W"
export LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_DEVICE_ORDER=PCI_BUS_ID
exec > >(tee -a "$OUT/console.log") 2>&1
left() { echo $(( BUDGET - (SECONDS - T0) )); }
step() { echo "[$(date -u +%T) +$((SECONDS - T0))s] $*"; }
# The carried revision first: the lent machine's copy of the checkout answers `git rev-parse` with the commit the
# session started at, not the tree sent (and so do the documents' git_revision: the evidence READMEs say which).
REV=$(cat .carry/gitrev 2>/dev/null || cat .gitrev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
HPL_SHA256=d09c2c708becc4eaa9bd652115243f603fc4f715483bf26dd6b1bd07259ef459

accept() {  # accept NAME SUITE LIMIT [ENV=VALUE...]: make accept, its wall time and last line in walls.txt
  local name=$1 suite=$2 limit=$3 t0 rc; shift 3
  t0=$(date +%s.%N)
  env "$@" WHEELHOUSE=.whl timeout -k 10 "$limit" make accept SUITE="$suite" \
    "ANSIBLE_ARGS=-e @$W/extra-vars.yml ${ANSIBLE_EXTRA:-}" > "$OUT/$name.log" 2>&1; rc=$?
  printf '%s %s: make accept SUITE=%s: exit %d, wall %s s; %s\n' "$(date -u +%FT%TZ)" "$name" "$suite" "$rc" \
    "$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")" "$(tail -1 "$OUT/$name.log")" | tee -a "$OUT/walls.txt"
  grep -E "\((h100|h200|a100)[^)]*suite [a-z]+\): (ACCEPTED|REJECTED)|^warning|gpuaccept run: " "$OUT/$name.log" | tail -5
}

FOREIGN_PID=""
foreign_start() {  # foreign_start GPU SECONDS: a BF16 matmul loop on that GPU alone, for at most SECONDS
  CUDA_VISIBLE_DEVICES=$1 python3 -c "
import time, torch
a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
print('foreign load on', torch.cuda.get_device_name(0), flush=True)
end = time.time() + $2
while time.time() < end:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
" > "$OUT/foreign-$1.txt" 2>&1 &
  FOREIGN_PID=$!
  sleep 5
  { date -u +%FT%TZ; echo "foreign pid $FOREIGN_PID on GPU $1"
    nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,used_memory --format=csv; } >> "$OUT/foreign-$1.txt" 2>&1
}
foreign_stop() { [ -n "$FOREIGN_PID" ] && { kill "$FOREIGN_PID" 2>/dev/null; wait "$FOREIGN_PID" 2>/dev/null; FOREIGN_PID=""; }; }
trap foreign_stop EXIT

phase_setup() {
  { echo "revision $REV; $(date -u +%FT%TZ)"; uname -r; nproc; free -g | head -2
    nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id,serial,vbios_version,driver_version,power.limit,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max,persistence_mode,ecc.mode.current --format=csv
    nvidia-smi topo -m; nvidia-smi nvlink -s; } > "$OUT/machine.txt" 2>&1
  nvidia-smi nvlink -e > "$OUT/nvlink-errors-before.txt" 2>&1
  nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
  [ -f .gitrev ] || cp .carry/gitrev .gitrev 2>/dev/null
  [ -x .venv/bin/python ] || python3 -m venv .venv
  mkdir -p .venv/lib .venv/include
  [ -f .venv/lib/libgpuaccept-mklblas.so ] || xz -dc .carry/libgpuaccept-mklblas.so.xz > .venv/lib/libgpuaccept-mklblas.so
  [ -f .venv/include/mkl.h ] || tar xJf .carry/mkl-include.tar.xz -C .venv
  echo "$HPL_SHA256  .carry/hpl-2.3-icl-utk-edu.tar.gz" | sha256sum -c - || return 1
  cat > "$W/extra-vars.yml" <<YML
gpuaccept_hpl_source_path: $R/.carry/hpl-2.3-icl-utk-edu.tar.gz
gpuaccept_hpl_source_sha256: $HPL_SHA256
gpuaccept_hpl_source_blas: custom
gpuaccept_hpl_custom_blas_lib: $R/.venv/lib/libgpuaccept-mklblas.so
YML
  cp "$W/extra-vars.yml" "$OUT/extra-vars.yml"
  echo "WHEELHOUSE=.whl make accept SUITE=<suite> 'ANSIBLE_ARGS=-e @extra-vars.yml'" > "$OUT/command.txt"
}

phase_memtest_selftest() {
  local bin
  bin=$(find build results -name gpuaccept-memtest -type f -perm -u+x 2>/dev/null | head -1)
  [ -n "$bin" ] || { echo "no gpuaccept-memtest built yet"; return 1; }
  "$bin" --inject-error --passes 2 --output "$OUT/memtest-selftest.json" > "$OUT/memtest-selftest.out" 2>&1
  echo "memtest --inject-error: exit $? (2 expected)" | tee -a "$OUT/walls.txt"
  tail -8 "$OUT/memtest-selftest.out"
}

phase_hpl_scaling() {
  mkdir -p "$OUT/hpl"
  OUT=$OUT/hpl HPL_TARBALL=.carry/hpl-2.3-icl-utk-edu.tar.gz BLAS_LIB=.venv/lib/libgpuaccept-mklblas.so \
    REPEATS=${HPL_REPEATS:-1} CHECKS=${HPL_CHECKS:-0} BUDGET_S=$(( $(left) - 90 )) \
    timeout -k 10 $(( $(left) - 20 )) bash docs/evidence/2026-11-27-hpl-multigpu/device_hpl_scaling.sh \
    > /dev/null 2>&1
  echo "hpl-scaling: exit $?" | tee -a "$OUT/walls.txt"; tail -12 "$OUT/hpl/summary.txt" 2>/dev/null
}

phase_pack() {  # at most 8 files come back from a call: the logs and every run directory in one archive
  nvidia-smi nvlink -e > "$OUT/nvlink-errors-after.txt" 2>&1
  local tag; tag=$(date -u +%H%M%S)
  mkdir -p "$W/pack"
  tar czf "$W/pack/results.tar.gz" --exclude='*/stage/*' results 2>/dev/null
  (cd "$OUT" && find . -type f ! -name 'console.log' ! -name 'walls.txt' ! -name 'call-*.tar.gz' -print0 \
    | tar czf "$W/pack/logs.tar.gz" --null -T - --remove-files)
  tar cf "$OUT/call-$tag.tar" -C "$W/pack" results.tar.gz logs.tar.gz && rm -f "$W/pack"/*.tar.gz
  rm -rf "$OUT/hpl"
  ls -la "$OUT"
}

for p in "$@"; do
  name=${p%%:*}; arg=${p#*:}; [ "$arg" = "$p" ] && arg=""
  case $name in
    setup) need=30 ;; setup-play) need=200 ;; commission) need=300 ;; nightly|foreign) need=110 ;; burnin|burnin-foreign) need=$(( ${arg:-1} * 60 + ${BURNIN_OVERHEAD:-100} )) ;;
    memtest-selftest) need=40 ;; hpl-scaling) need=200 ;; pack) need=5 ;; *) echo "unknown phase $p"; exit 4 ;;
  esac
  if [ "$(left)" -lt "$need" ]; then step "skipped $p: $(left) s left, it needs $need"; continue; fi
  step "$p"
  case $name in
    setup) phase_setup ;;
    setup-play) ANSIBLE_EXTRA="--skip-tags gpuaccept_suite" accept "setup-play" commission $(( $(left) - 10 )) ;;
    commission) accept "commission-$(date +%H%M%S)" commission $(( $(left) - 10 )) ;;
    nightly) accept "nightly-$(date +%H%M%S)" nightly $(( $(left) - 10 )) ;;
    foreign) foreign_start "${arg:-1}" 400; accept "nightly-foreign-gpu${arg:-1}-$(date +%H%M%S)" nightly $(( $(left) - 10 )); foreign_stop ;;
    burnin) accept "burnin-$(date +%H%M%S)" burnin $(( $(left) - 10 )) GPUACCEPT_BURNIN_MINUTES="${arg:-1}" ;;
    burnin-foreign)
      # halfway through the burn-in itself: its stage directory appears when ReFrame starts it (the set-up before
      # it takes 30 s on a warm machine and about 170 s on a bare one)
      touch "$W/burnin-mark"
      ( until find results -path '*-burnin/reframe/stage/*/GpuBurnin' -newer "$W/burnin-mark" -print -quit 2>/dev/null \
          | grep -q .; do sleep 2; done
        step "burn-in started"; sleep $(( ${arg:-1} * 30 )); foreign_start 1 $(( ${arg:-1} * 60 )); wait ) &
      bg=$!
      accept "burnin-foreign-$(date +%H%M%S)" burnin $(( $(left) - 10 )) GPUACCEPT_BURNIN_MINUTES="${arg:-1}"
      kill "$bg" 2>/dev/null; pkill -f "foreign load on" 2>/dev/null; wait "$bg" 2>/dev/null ;;
    memtest-selftest) phase_memtest_selftest ;;
    hpl-scaling) phase_hpl_scaling ;;
    pack) phase_pack ;;
  esac
done
step "done"
