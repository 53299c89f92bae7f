#!/usr/bin/env bash
# A GPU slowed by about 5 % among healthy siblings, on a lent machine of several GPUs, as an operator runs gpuaccept:
# `make accept SUITE=nightly` through docs/evidence/2026-11-27-multigpu/device_accept.sh (its phases: setup, nightly,
# pack), with a duty-cycled foreign load (duty_load.py) on one GPU during some runs. Run from the repository root:
#
#   OUT=... bash docs/evidence/2026-11-28-sibling-load/device_sibling_load.sh [GPU] [PHASES...]
#
# Phases (default: setup calibrate nightly loaded nightly pack):
#   calibrate   calibrate.py on GPU: FP64/BF16 GEMM without and with duty loads 0.03, 0.05, 0.08; the duty whose FP64
#               loss is nearest 5 % is used by `loaded` (DUTY overrides)
#   loaded      make accept SUITE=nightly with the duty load on GPU for the whole run
#   hc          the passive health check (docs/evidence/2026-11-28-healthcheck/device_healthcheck.sh) into $OUT/hc
#   other phases are device_accept.sh's.
# Read-only towards the GPUs' settings; NCCL_NVLS_ENABLE=0 in the environment of every process.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
HERE=docs/evidence/2026-11-28-sibling-load
GPU=${1:-1}; shift || true
PHASES=("$@"); [ ${#PHASES[@]} -gt 0 ] || PHASES=(setup calibrate nightly loaded nightly pack)
export NCCL_NVLS_ENABLE=0 CUDA_DEVICE_ORDER=PCI_BUS_ID PYTHONUNBUFFERED=1
T0=$SECONDS; BUDGET=${BUDGET:-570}
left() { echo $(( BUDGET - (SECONDS - T0) )); }
accept_phase() { BUDGET=$(left) OUT=$OUT bash docs/evidence/2026-11-27-multigpu/device_accept.sh "$@"; }
for p in "${PHASES[@]}"; do
  case $p in
    calibrate)
      CUDA_VISIBLE_DEVICES=$GPU python3 "$HERE/calibrate.py" --duties 0.03 0.05 0.08 --output "$OUT/calibrate.json" \
        2>&1 | tee "$OUT/calibrate.txt"
      DUTY=${DUTY:-$(python3 -c "
import json; d = json.load(open('$OUT/calibrate.json'))
print(min((r for r in d['runs'] if r['duty']), key=lambda r: abs(r['fp64_tflops_loss'] - 0.05))['duty'])")}
      echo "duty chosen: $DUTY" | tee -a "$OUT/calibrate.txt" ;;
    loaded)
      [ "$(left)" -ge 110 ] || { echo "skipped loaded: $(left) s left"; continue; }
      CUDA_VISIBLE_DEVICES=$GPU python3 "$HERE/duty_load.py" --duty "${DUTY:-0.05}" --seconds 400 \
        > "$OUT/duty-load-gpu$GPU-$(date -u +%H%M%S).txt" 2>&1 &
      pid=$!; sleep 4
      echo "$(date -u +%FT%TZ) loaded run: duty ${DUTY:-0.05} on GPU $GPU (pid $pid)" | tee -a "$OUT/loaded-runs.txt"
      accept_phase nightly
      kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      echo "$(date -u +%FT%TZ) load stopped" | tee -a "$OUT/loaded-runs.txt" ;;
    hc) OUT=$OUT/hc bash docs/evidence/2026-11-28-healthcheck/device_healthcheck.sh > /dev/null 2>&1
        echo "health-check script: exit $?"; cat "$OUT/hc/checks.txt" ;;
    *) accept_phase "$p" ;;
  esac
done
