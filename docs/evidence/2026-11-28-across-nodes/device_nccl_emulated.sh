#!/usr/bin/env bash
# gpuaccept-nccl --multi-process across emulated hosts on one GPU machine (2 x H200 intended; any machine with
# 2 GPUs): each rank is its own NCCL host (NCCL_HOSTID) and NCCL moves every byte over loopback sockets
# (python -m gpuaccept.nccl_emulate; docs/checks/nccl.md, "Emulating hosts on one machine"). The figures are
# loopback TCP and the CPU driving it, not a network; what the runs show is the bootstrap, the layouts (world,
# rail, groups), the verification, the transport NCCL reports, one document from rank 0, and that a CPU-starved
# rank shows in the figures of its group and not in the others.
#
# Usage, from the repository root on the GPU machine: bash docs/evidence/2026-11-28-across-nodes/device_nccl_emulated.sh
# Writes every JSON document, each rank's log and summary.txt under $OUT (default ./out-nccl-emulated).
# NCCL_NVLS_ENABLE=0 in every process (the launcher sets it for every rank; exported here for the build too).
# Nothing changes GPU settings. About 3-4 minutes: the build (sm_90 only) and 9 runs of 1-64 MiB sweeps.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 LC_ALL=C
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-$PWD/out-nccl-emulated}
mkdir -p "$out"
start=$(date +%s)
cd "$repo"
export PATH="/usr/local/cuda/bin:$PATH"
build=$(mktemp -d "${TMPDIR:-/tmp}/gpuaccept-nccl-build.XXXXXX")
{
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
  echo "NCCL: $(sh reframe_checks/src/find-nccl.sh 2>&1)"
  nvcc --version | tail -1
} | tee "$out/summary.txt"
make -C reframe_checks/src BUILD_DIR="$build" GIT_REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" nccl > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
tool="$build/gpuaccept-nccl"
gpus=$(nvidia-smi -L | wc -l)
sweep=(--min-bytes 1048576 --max-bytes 67108864 --factor 4 --warmup 3 --iters 10 --timeout-s 60
       --bootstrap-timeout-s 60)

# run NAME RANKS HOSTS [launcher options...] -- [tool options...]; skipped once 250 s have gone since the start (the
# 5-minute budget).
run() {
  local name=$1 ranks=$2 hosts=$3
  if [ $(($(date +%s) - start)) -gt 250 ]; then
    echo "== $name: skipped (past 250 s)" | tee -a "$out/summary.txt"
    return 0
  fi
  shift 3
  local launcher=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  local t0 rc=0
  t0=$(date +%s.%N)
  PYTHONPATH="$repo/src" timeout 120 python3 -m gpuaccept.nccl_emulate --ranks "$ranks" --gpus "$gpus" \
    --hosts "$hosts" --timeout-s 110 --log-dir "$out/$name.logs" "${launcher[@]}" -- \
    "$tool" "${sweep[@]}" "$@" --nccl-log-dir "$out/$name.logs" --output "$out/$name.json" \
    > "$out/$name.launcher.log" 2>&1 || rc=$?
  echo "== $name: exit $rc in $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-6) s" | tee -a "$out/summary.txt"
  [ -f "$out/$name.json" ] && python3 - "$out/$name.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["parameters"]
print(f"   comm {p['comm']}, ranks {p['ranks']}, algo {p['algo_requested']}, nvls {p['nvls']}, "
      f"passed {d['verification']['passed']} (checked {d['verification']['checked']}), errors {d['errors'][:2]}")
for r in d["results"]["ranks"]:
    print(f"   rank {r['rank']} host {r['host']} local {r['local_rank']} GPU {r['device']['index']} "
          f"{r['device']['pci_bus_id']} transports {r['transports']}")
for g in d["results"]["groups"]:
    m = {k: round(v["value"], 2) for k, v in g["metrics"].items()}
    print(f"   group {g['label']}: {m}")
print("   node-level:", {k: round(v["value"], 2) for k, v in d["metrics"].items()})
PY
  return 0
}

run world-2hosts 2 2 -- --comm world
run world-4hosts 4 4 -- --comm world --ring
# 4 ranks as 2 emulated hosts x 2 GPUs: rails {0,2} (GPU 0 of each host) and {1,3} (GPU 1). On one machine the
# two members of a rail are the same physical GPU, each its own NCCL host (NCCL counts 4 nodes whatever the host
# ids), so every byte still crosses loopback sockets: the layout, not a NIC per rail, is what is exercised.
run rail-2x2 4 2 -- --comm rail --ring
# Pairwise rounds over 4 emulated hosts (every pair once, two pairs at a time).
run pairs-r1 4 4 -- --comm groups:0-1,2-3 --ring
run pairs-r2 4 4 -- --comm groups:0+2,1+3 --ring
run pairs-r3 4 4 -- --comm groups:0+3,1+2 --ring
# Rank 3 starved of CPU (pinned to one CPU shared with 2 busy processes; the other ranks kept off that CPU).
run world-4hosts-slow3 4 4 --slow-rank 3 -- --comm world --ring
run pairs-r1-slow3 4 4 --slow-rank 3 -- --comm groups:0-1,2-3 --ring
run pairs-r3-slow3 4 4 --slow-rank 3 -- --comm groups:0+3,1+2 --ring
rm -rf "$build"
echo "== done $(date -u +%FT%TZ)" | tee -a "$out/summary.txt"
