#!/usr/bin/env bash
# The burnin suite at a short length on a lent GPU machine, through `gpuaccept run --suite burnin` (the path the
# suite role, the nightly timer and Slurm take; no Ansible): once on the healthy node, then (with two GPUs or more)
# with a foreign CUDA process started on GPU 1 halfway through the burn-in and kept until it ends (a PyTorch
# matmul loop under CUDA_VISIBLE_DEVICES=1). Each run is judged on the machine by the shipped references.
# Read-only towards the GPUs' settings. Run from the repository root:
#   OUT=$OUT bash docs/evidence/2026-11-27-burnin/device_burnin.sh        (device tool, carry [".devq"])
# Carried: .devq/whl/ (cp312 wheels of reframe-hpc 4.10.4 and its dependencies, pinned as in
# requirements/tools.txt: docs/evidence/2026-11-25-trust/README.md lists them) and, optionally, .devq/gitrev.
# The benchmarks are built here with nvcc (gpuaccept-gemm; gpuaccept-memtest where reframe_checks/src/Makefile
# has its target: else the burn-in runs GEMM windows alone and says so).
#   MINUTES=2 (the burn-in's length, whole minutes)   RUNS="healthy foreign" (the foreign run needs two GPUs)
# About 3 minutes per run at 2 minutes (ReFrame, the health probe, the burn-in, the judge), plus about a minute to
# install the wheels and build (build/bench is kept on a warm machine: a second call builds nothing): 4 minutes on
# one GPU, 7 with the foreign run; RUNS=healthy and then RUNS=foreign splits it into two calls.
set -uo pipefail
OUT=${OUT:?output directory}; MINUTES=${MINUTES:-2}; RUNS=${RUNS:-healthy foreign}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/console.log") 2>&1
export LC_ALL=C.UTF-8 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
REV=$(cat .devq/gitrev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
export GPUACCEPT_GIT_REVISION=$REV
T0=$SECONDS
stamp() { echo "== $(date -u +%FT%TZ) (+$((SECONDS - T0)) s) $*"; }

stamp "revision $REV, burn-in of $MINUTES minutes"
{
  uname -r; nproc
  nvidia-smi --query-gpu=index,name,pci.bus_id,serial,driver_version,power.limit,temperature.gpu,clocks.sm,persistence_mode,ecc.mode.current --format=csv
  nvidia-smi -q -d TEMPERATURE | grep -E 'GPU [0-9]|Temp'
} > "$OUT/machine.txt" 2>&1
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
if [[ " $RUNS " == *" foreign "* ]] && [ "$GPUS" -lt 2 ]; then
  echo "one GPU: no foreign run (it takes GPU 1)"; RUNS=${RUNS//foreign/}
fi
echo "$GPUS GPUs; runs: $RUNS"

python3 -m pip install --quiet --no-index --no-deps --target /tmp/rfm .devq/whl/*.whl > "$OUT/pip.log" 2>&1 ||
  { echo "the carried wheels did not install (.devq/whl): see pip.log"; exit 1; }
export PYTHONPATH=/tmp/rfm:$PWD/src PATH=/tmp/rfm/bin:$PATH
BENCH=$PWD/build/bench
mkdir -p "$BENCH"
[ -x "$BENCH/gpuaccept-gemm" ] || make -C reframe_checks/src BUILD_DIR="$BENCH" CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 GIT_REV="$REV" \
  gemm > "$OUT/build.log" 2>&1 || { echo "gpuaccept-gemm did not build: see build.log"; tail -5 "$OUT/build.log"; exit 1; }
if make -C reframe_checks/src -n memtest > /dev/null 2>&1; then
  make -C reframe_checks/src BUILD_DIR="$BENCH" CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 GIT_REV="$REV" \
    memtest >> "$OUT/build.log" 2>&1 || echo "gpuaccept-memtest did not build (build.log): GEMM windows alone"
else
  echo "no memtest target in reframe_checks/src/Makefile: GEMM windows alone"
fi
ls -l "$BENCH"
stamp "built"

R=/tmp/results
run() {  # run NAME: gpuaccept run --suite burnin; its wall time and exit status in walls.txt
  local name=$1 t0=$SECONDS rc
  timeout -k 10 $((MINUTES * 60 + 420)) python3 -m gpuaccept run --suite burnin --burnin-minutes "$MINUTES" \
    --results "$R/$name" --bench-dir "$BENCH" --reframe /tmp/rfm/bin/reframe > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name: gpuaccept run --suite burnin --burnin-minutes $MINUTES: exit $rc, wall $((SECONDS - t0)) s" | tee -a "$OUT/walls.txt"
}

if [[ " $RUNS " == *" healthy "* ]]; then
  stamp "healthy run"
  run healthy
fi

if [[ " $RUNS " == *" foreign "* ]]; then
  stamp "run with a foreign process on GPU 1 halfway through"
  run foreign &
  runner=$!
  # The burn-in has started when its first GEMM turn has (ReFrame runs the health probe before or after it).
  for _ in $(seq 1 300); do
    find "$R/foreign" -path '*GpuBurnin/burnin-turns/gemm-gpu0-1.log' 2> /dev/null | grep -q . && break
    sleep 1
  done
  stamp "burn-in started; the foreign process comes in $((MINUTES * 30)) s"
  sleep $((MINUTES * 30))
  CUDA_VISIBLE_DEVICES=1 python3 - $((MINUTES * 60)) > "$OUT/foreign-process.txt" 2>&1 <<'PY' &
import os, sys, time
import torch
a = torch.randn(8192, 8192, device="cuda")
print(f"foreign process pid {os.getpid()} on CUDA_VISIBLE_DEVICES=1 ({torch.cuda.get_device_name(0)}) from "
      f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    b = a @ a
torch.cuda.synchronize()
PY
  foreign=$!
  stamp "foreign process started, pid $foreign"
  sleep 5; nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,used_memory --format=csv >> "$OUT/foreign-process.txt" 2>&1
  # It runs for the rest of the burn-in: stopped when the burn-in's document is written.
  while kill -0 "$runner" 2> /dev/null; do
    find "$R/foreign" -path '*GpuBurnin/burnin.json' 2> /dev/null | grep -q . && break
    sleep 1
  done
  kill "$foreign" 2> /dev/null; wait "$foreign" 2> /dev/null
  stamp "foreign process stopped"
  wait "$runner"
  stamp "foreign run done"
fi

# The verdicts, the burn-in's findings, and a report of the runs where matplotlib is there.
for d in "$R"/*/*/*/; do
  echo "== $d"
  python3 -m gpuaccept show "$d" 2>&1 | tail -25
done | tee "$OUT/verdicts.txt"
groups=()
for name in healthy foreign; do
  d=$(find "$R/$name" -mindepth 2 -maxdepth 2 -type d 2> /dev/null | head -1)
  [ -n "$d" ] && groups+=("$name=$d")
done
if python3 -c 'import matplotlib' 2> /dev/null; then
  python3 -m gpuaccept report --title "burn-in, $MINUTES minutes, $GPUS GPUs" --output "$OUT/report.html" "${groups[@]}"
else
  echo "no matplotlib here: no report (gpuaccept report on the run directories elsewhere)"
fi
# Every run directory (reports, documents, timelines, verdicts, textfiles); stage trees left out.
tar czf "$OUT/results.tar.gz" --exclude='*/stage/*' -C "$R" .
find "$R" -path '*/output/*' \( -name burnin.json -o -name 'burnin_gpu*.csv' -o -name health.json \) | while read -r f; do
  name=$(echo "${f#"$R"/}" | cut -d/ -f1)
  mkdir -p "$OUT/$name" && cp "$f" "$OUT/$name/"
done
find "$R" -name verdict.json | while read -r f; do cp "$f" "$OUT/$(echo "${f#"$R"/}" | cut -d/ -f1)/"; done
cat "$OUT/walls.txt"
stamp "done"
