#!/bin/bash
# The passive health check and the PCIe counters on a real GPU machine (docs/checks/health.md, "PCIe counters",
# "The passive health check"). Records under $OUT:
#   1. nvidia-smi -q (its "Replays Since Reset") and which GPUs have Linux AER files (aer-files.txt);
#   2. the node facts (node-facts.json) with each GPU's pcie_counters: the replay counter through NVML and the AER
#      counts, or the reason they could not be read;
#   3. `gpuaccept health-check` run three times on the idle node (each one's line, exit status and wall time in
#      checks.txt, the records and the state under state/): the first says the counters' growth starts with the
#      next check, the later ones judge it; a run with --clear-xids.
# Runs from the repository root with PYTHONPATH=src and the machine's python3 (nvidia-ml-py, PyYAML, jsonschema);
# as root, the kernel log is read; otherwise the check answers UNKNOWN (exit 2) naming the fix. Read-only.
# Usage: bash docs/evidence/2026-11-28-healthcheck/device_healthcheck.sh    (about 15 s; OUT defaults to /tmp/out)
set -uo pipefail
REPO=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}" LC_ALL=C
# The tool environment where make accept left one (the machine's python3 lacks some of its packages).
PY=python3; [ -x "$REPO/.venv/bin/python" ] && PY=$REPO/.venv/bin/python
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || cat .gitrev 2>/dev/null)"

nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
grep -E "Bus Id|Replays Since Reset|Replay Number Rollovers" "$OUT/nvidia-smi-q.txt"
for bus in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader); do
  dev=/sys/bus/pci/devices/$(echo "${bus#0000}" | tr '[:upper:]' '[:lower:]')
  files=$(for f in "$dev"/aer_dev_*; do [ -e "$f" ] && printf '%s ' "${f##*/}"; done)
  echo "$bus ($dev): ${files:-no AER files}"
done | tee "$OUT/aer-files.txt"

"$PY" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
from gpuaccept.probe import facts
out = Path(sys.argv[1])
f = facts.gather()
(out / "node-facts.json").write_text(json.dumps(f, indent=2, sort_keys=True) + "\n")
for g in f["gpus"]:
    print(f"GPU {g['index']} {g['pci_bus_id']}: pcie_counters {json.dumps(g.get('pcie_counters'))}")
PY

gpus=$(nvidia-smi -L | grep -c '^GPU ')
node_type=h200; [ "$gpus" -gt 1 ] && node_type=h200_x$gpus
echo "== node type $node_type"
for run in 1 2 3 clear; do
  extra=(); [ "$run" = clear ] && extra=(--clear-xids)
  t0=$EPOCHREALTIME
  line=$("$PY" -m gpuaccept health-check --node-type "$node_type" --expected-gpus "$gpus" \
    --state-dir "$OUT/state" --output "$OUT/health-check-$run.json" "${extra[@]}" 2>"$OUT/health-check-$run.err")
  status=$?
  t1=$EPOCHREALTIME
  secs=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
  echo "$run: exit $status in $secs s: $line" | tee -a "$OUT/checks.txt"
  sleep 2
done
"$PY" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
r = json.loads((Path(sys.argv[1]) / "health-check-3.json").read_text())
print("status", r["status"], "| findings", [f["message"] for f in r["findings"]])
print("warnings", r["warnings"])
print("not_run", r["not_run"], "| sxid", r["sxid"])
PY
