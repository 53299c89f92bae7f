#!/usr/bin/env bash
# Across nodes, emulated on one machine of 2 GPUs (no second node, no HCA here): gpuaccept across with
# --launcher emulate (gpuaccept.nccl_emulate: each node its own NCCL host, NCCL's sockets over loopback), four
# emulated nodes, every mode, healthy and with one node slowed. The figures are loopback TCP and the CPUs driving it,
# not a network. Also the passive health check and the fabric probe on the same machine. Read-only towards the GPUs;
# NCCL_NVLS_ENABLE=0 in every process.
#
#   OUT=... bash docs/evidence/2026-11-28-across-nodes/device_across.sh PHASE...
#
# Phases: setup (tool environment from the carried wheelhouse .whl; gpuaccept-nccl built for sm_90)
#         tool       gpuaccept-nccl alone across emulated hosts (device_nccl_emulated.sh: world, rail, groups, a
#                    CPU-starved rank)
#         healthy    gpuaccept across over node-a..node-d: modes world,rail,pairwise,quick,halving (2 ranks a node
#                    for rail)
#         slow       the same nodes, node-c starved of CPU in every launch it takes part in: world,quick, then
#                    halving on failure; and every pair
#         slow8      eight emulated nodes (four ranks a GPU), node-f starved of CPU: halving alone; world,quick then
#                    halving on failure
#         hc         gpuaccept health-check (device_healthcheck.sh) and the fabric probe (2026-11-28-fabric/run.sh)
#         pack       everything under $OUT into at most 8 files
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R=$PWD; W=/tmp/gpuaccept-across; mkdir -p "$W"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1 CUDA_DEVICE_ORDER=PCI_BUS_ID PATH="/usr/local/cuda/bin:$PATH"
exec > >(tee -a "$OUT/console.log") 2>&1
T0=$SECONDS; step() { echo "[$(date -u +%T) +$((SECONDS - T0))s] $*"; }
REV=$(cat .carry/gitrev 2>/dev/null || git rev-parse --short HEAD)
TOOL=$W/build/gpuaccept-nccl
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
sweep=(--tool-arg=--min-bytes --tool-arg=1048576 --tool-arg=--max-bytes --tool-arg=67108864 --tool-arg=--factor
       --tool-arg=4 --tool-arg=--warmup --tool-arg=3 --tool-arg=--iters --tool-arg=10 --tool-arg=--timeout-s
       --tool-arg=60 --tool-arg=--bootstrap-timeout-s --tool-arg=60)

across() {  # across NAME [gpuaccept across options...]
  local name=$1 rc=0 t0=$SECONDS; shift
  .venv/bin/gpuaccept across --hosts "${HOSTS:-$W/hosts.txt}" --launcher emulate --gpus "$GPUS" --tool "$TOOL" \
    --timeout-s 150 "${sweep[@]}" --results "$OUT/$name" "$@" > "$OUT/$name.txt" 2>&1 || rc=$?
  step "across $name: exit $rc in $((SECONDS - t0)) s"; cat "$OUT/$name.txt"
}

for p in "$@"; do
  step "$p"
  case $p in
    setup)
      { echo "revision $REV"; uname -r; nproc; free -g | head -2
        nvidia-smi --query-gpu=index,name,pci.bus_id,serial,driver_version,power.limit --format=csv
        nvidia-smi topo -m; } > "$OUT/machine.txt" 2>&1
      WHEELHOUSE=.whl bash scripts/venv.sh > "$OUT/venv.log" 2>&1 || { tail "$OUT/venv.log"; exit 1; }
      make -C reframe_checks/src BUILD_DIR="$W/build" GIT_REV="$REV" CUDA_ARCH="-gencode=arch=compute_90,code=sm_90" \
        nccl > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
      printf 'node-a\nnode-b\nnode-c\nnode-d\n' > "$W/hosts.txt" ;;
    tool) OUT=$OUT/tool bash docs/evidence/2026-11-28-across-nodes/device_nccl_emulated.sh > /dev/null 2>&1
          step "tool: exit $?"; cat "$OUT/tool/summary.txt" ;;
    healthy)
      across healthy-world-quick --modes world,quick --on-failure halving
      across healthy-pairwise --modes pairwise --on-failure none
      across healthy-halving --modes halving --on-failure none
      across healthy-rail --modes world,rail --ranks-per-node 2 --on-failure none ;;
    slow)
      across slow-c-world-quick --modes world,quick --on-failure halving --emulate-slow-node node-c
      across slow-c-pairwise --modes pairwise --on-failure none --emulate-slow-node node-c ;;
    slow8)
      printf 'node-%s\n' a b c d e f g h > "$W/hosts8.txt"
      HOSTS=$W/hosts8.txt across slow-f8-halving --modes halving --on-failure none --emulate-slow-node node-f
      HOSTS=$W/hosts8.txt across slow-f8-world-quick --modes world,quick --on-failure halving \
        --emulate-slow-node node-f ;;
    hc) OUT=$OUT/hc bash docs/evidence/2026-11-28-healthcheck/device_healthcheck.sh > /dev/null 2>&1
        step "health-check: exit $?"; cat "$OUT/hc/checks.txt" 2>/dev/null
        OUT=$OUT/fabric bash docs/evidence/2026-11-28-fabric/run.sh > /dev/null 2>&1; step "fabric: exit $?"
        tail -5 "$OUT/fabric/fabric.log" ;;
    pack) tag=$(date -u +%H%M%S)
          (cd "$OUT" && tar czf "$W/across-$tag.tar.gz" --exclude=console.log . \
             && find . -mindepth 1 -maxdepth 1 ! -name console.log -exec rm -rf {} + && mv "$W/across-$tag.tar.gz" .)
          ls -la "$OUT" ;;
    *) echo "unknown phase $p"; exit 4 ;;
  esac
done
step done
