#!/usr/bin/env bash
# On a lent single-H200 machine: record its outputs and run each benchmark once (device_smoke.sh), derive a
# provisional h200 reference file from that run ON THE DEVICE ONLY (so that `gpuaccept detect` recognises the
# node and the suite can judge it), then the evaluation suite (REPEAT repeats) through `make accept`.
# The h200 references shipped in reference_values/ are derived afterwards from the suite runs alone.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/smoke"
OUT="$OUT/smoke" bash docs/evidence/device_smoke.sh > "$OUT/smoke.log" 2>&1
grep -E "rc=|real" "$OUT/smoke.log"
PYTHONPATH=/tmp/site:$PWD/src python3 -m gpuaccept baseline --node-type h200 --description provisional \
  --machine "device tool nvidia-h200" --evidence "$OUT/smoke" --source-id provisional \
  --facts "$OUT/smoke/facts.json" --output reference_values/h200.yaml --force "$OUT/smoke"
SKIP_ACCEPT=1 REPEAT=${REPEAT:-3} bash docs/evidence/device_accept.sh > "$OUT/eval.log" 2>&1
grep -E "evaluation: exit|ACCEPTED|REJECTED" "$OUT/eval.log" | tail -3
