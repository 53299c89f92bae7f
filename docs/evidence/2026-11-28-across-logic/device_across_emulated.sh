#!/usr/bin/env bash
# gpuaccept across on one GPU machine, four emulated nodes (--launcher emulate: gpuaccept.nccl_emulate, each node
# its own NCCL host, NCCL's sockets over loopback): the launches, the documents, the modes and the judge end to end.
# The figures are loopback TCP and the CPU driving it, not a network. Needs the multi-process gpuaccept-nccl and
# gpuaccept.nccl_emulate (branch nccl-net) merged.
#
#   1. healthy: world, then every pair (3 rounds of 2 pairs at once); expected exit 0 unless loopback figures of
#      the pairs spread by more than 7 % (then the named node and the pair figures are in across.json: say so);
#   2. node-c starved of CPU in every round it takes part in (--emulate-slow-node: gpuaccept.nccl_emulate
#      --slow-rank on node-c's rank, wherever the round places it): expected exit 1, node-c FAIL naming its pairs
#      with node-a, node-b and node-d and their figures, no other node named.
#
# Usage, from the repository root on a machine with 2 or more GPUs (2 x H200 intended):
#   bash docs/evidence/2026-11-28-across-logic/device_across_emulated.sh
# Writes under $OUT (default ./out-across-emulated): both runs' results trees (raw documents, logs, across.json,
# the heat maps) and summary.txt. Needs the tool environment (.venv, as `make accept` leaves it; offline:
# WHEELHOUSE=<dir> bash scripts/venv.sh report); matplotlib in it draws the heat maps, without it they are skipped.
# NCCL_NVLS_ENABLE=0 everywhere (the emulator sets it per rank). Nothing changes GPU settings. About 3-5 minutes.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 LC_ALL=C
repo=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-$PWD/out-across-emulated}
mkdir -p "$out"
cd "$repo"
export PATH="/usr/local/cuda/bin:$PATH"
[ -x .venv/bin/gpuaccept ] || bash scripts/venv.sh report > "$out/venv.log" 2>&1 \
  || { echo "no tool environment (.venv): see $out/venv.log; set WHEELHOUSE for an offline machine" >&2; exit 1; }
build=$(mktemp -d "${TMPDIR:-/tmp}/gpuaccept-across-build.XXXXXX")
make -C reframe_checks/src BUILD_DIR="$build" CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" nccl \
  > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
gpus=$(nvidia-smi -L | wc -l)
printf 'node-a\nnode-b\nnode-c\nnode-d\n' > "$out/hosts.txt"
common=(--hosts "$out/hosts.txt" --launcher emulate --gpus "$gpus" --tool "$build/gpuaccept-nccl"
        --modes world,pairwise --timeout-s 150
        --tool-arg=--min-bytes --tool-arg=1048576 --tool-arg=--max-bytes --tool-arg=67108864
        --tool-arg=--warmup --tool-arg=3 --tool-arg=--iters --tool-arg=10 --tool-arg=--timeout-s --tool-arg=60
        --tool-arg=--bootstrap-timeout-s --tool-arg=60)
{ echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
  echo "revision $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"; } | tee "$out/summary.txt"
for run in healthy slow-node-c; do
  extra=()
  [ "$run" = slow-node-c ] && extra=(--emulate-slow-node node-c)
  rc=0
  PYTHONPATH="$repo/src" .venv/bin/gpuaccept across "${common[@]}" "${extra[@]}" --results "$out/$run" \
    > "$out/$run.txt" 2>&1 || rc=$?
  { echo "== $run: exit $rc"; cat "$out/$run.txt"; } | tee -a "$out/summary.txt"
done
rm -rf "$build"
echo "== done $(date -u +%FT%TZ)" | tee -a "$out/summary.txt"
