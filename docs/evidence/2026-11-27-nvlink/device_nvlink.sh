#!/bin/bash
# NVLink and configuration on a 2- or 4-GPU machine (docs/checks/health.md, "NVLink", "Configuration"): records,
# under $OUT, what the NVLink rules and the x2/x4 node types' expectations need as real inputs:
#   1. nvidia-smi's own view: nvlink -s (state and speed per link), nvlink -e (error counters), topo -m, -q;
#   2. gpuaccept's: the node facts before (node-facts.json), the health probe's document (health.json), ~5 s of
#      peer copies GPU0 <-> every other GPU through torch (CUDA P2P over NVLink; no NCCL), the facts after
#      (node-facts-end.json), nvidia-smi nvlink -e again;
#   3. the NVLink rules on the two snapshots (growth.json: a healthy node grows 0), the health section the facts
#      show (health-expectations.yaml) and the health rules against the detected node type (health-judged.txt).
# Runs from the repository root with PYTHONPATH=src and the machine's python3 (nvidia-ml-py, PyYAML, torch); the
# judge's step needs jsonschema and tabulate and says so where they are missing. Read-only but for the copies.
# Usage: bash docs/evidence/2026-11-27-nvlink/device_nvlink.sh      (about 30 s; OUT defaults to /tmp/out)
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # nothing here starts NCCL; kept off in case torch does
REPO=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}" LC_ALL=C
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || cat .gitrev 2>/dev/null)"

smi() {  # smi NAME ARGS...: nvidia-smi ARGS > $OUT/NAME.txt, its exit status in NAME.rc
  local name=$1; shift
  nvidia-smi "$@" > "$OUT/$name.txt" 2>&1; echo $? > "$OUT/$name.rc"
  echo "-- nvidia-smi $* (exit $(cat "$OUT/$name.rc")): $(wc -l < "$OUT/$name.txt") lines"
}
smi nvlink-s nvlink -s
smi nvlink-e-before nvlink -e
smi topo topo -m
smi nvidia-smi-q -q
cat "$OUT/topo.txt"; head -40 "$OUT/nvlink-s.txt"

python3 - "$OUT" <<'EOF'
import json, sys, time
from pathlib import Path
from gpuaccept.probe import facts, health
out = Path(sys.argv[1])
t0 = time.monotonic()
before = facts.gather()
(out / "node-facts.json").write_text(json.dumps(before, indent=2, sort_keys=True) + "\n")
print(f"facts: {len(before['gpus'])} GPUs via {before['gpu_source']} in {time.monotonic() - t0:.1f} s")
for g in before["gpus"]:
    nv, cfg = g.get("nvlink") or {}, g.get("config") or {}
    links = nv.get("links") or []
    up = sum(1 for ln in links if ln.get("state") == "up")
    speeds = sorted({ln.get("speed_mbps") for ln in links})
    print(f"GPU {g['index']}: NVLink supported={nv.get('supported')} links={len(links)} up={up} speeds={speeds} "
          f"counters={links[0].get('counters') if links else None} why={nv.get('why')}")
    print(f"       vbios={cfg.get('vbios_version')} inforom={cfg.get('inforom_image_version')} "
          f"power={cfg.get('power_enforced_limit_w')} W mig={cfg.get('mig_mode_current')} "
          f"unavailable={cfg.get('unavailable')}")
doc, status = health.probe(len(before["gpus"]), "boot", 0.5, set(), ["device_nvlink.sh"])
(out / "health.json").write_text(json.dumps(doc, indent=1) + "\n")
print(f"health probe: exit {status}, metrics {json.dumps(doc['metrics'])}, waived {json.dumps(doc['waived'])}")
EOF
echo "facts and probe: exit $?"

python3 - "$OUT" <<'EOF'
import sys, time
from pathlib import Path
out = Path(sys.argv[1])
try:
    import torch
except ImportError as err:
    (out / "p2p-load.txt").write_text(f"not run: {err}\n"); print(f"p2p load not run: {err}"); sys.exit(0)
n = torch.cuda.device_count()
lines = [f"{n} GPUs"]
if n > 1:
    size = 256 << 20
    bufs = [torch.empty(size, dtype=torch.uint8, device=f"cuda:{i}") for i in range(n)]
    for i in range(1, n):
        lines.append(f"peer access 0<->{i}: {torch.cuda.can_device_access_peer(0, i)}")
    t0, copies = time.monotonic(), 0
    while time.monotonic() - t0 < 5:
        for i in range(1, n):
            bufs[i].copy_(bufs[0]); bufs[0].copy_(bufs[i]); copies += 2
    for i in range(n):
        torch.cuda.synchronize(i)
    dt = time.monotonic() - t0
    lines.append(f"{copies} copies of 256 MiB in {dt:.1f} s ({copies * size / dt / 1e9:.1f} GB/s over all pairs)")
(out / "p2p-load.txt").write_text("\n".join(lines) + "\n"); print("\n".join(lines))
EOF
echo "p2p load: exit $?"

smi nvlink-e-after nvlink -e
python3 - "$OUT" <<'EOF'
import json, sys
from pathlib import Path
from gpuaccept.judge import nvlink_rules
from gpuaccept.probe import facts
from gpuaccept.results import health_expect
out = Path(sys.argv[1])
after = facts.gather()
(out / "node-facts-end.json").write_text(json.dumps(after, indent=2, sort_keys=True) + "\n")
before = json.loads((out / "node-facts.json").read_text())
findings, notes = [], []
total, why = nvlink_rules.growth(before, after, {}, findings, notes)
result = {"total_growth": total, "why_none": why, "findings": findings, "notes": notes}
(out / "growth.json").write_text(json.dumps(result, indent=1) + "\n")
print(f"NVLink growth over the copies: {total} ({why or 'compared'}); findings {len(findings)}; notes {len(notes)}")
for f in findings[:10]:
    print("  ", f["message"])
try:
    text = health_expect.render(before, "node-facts.json", "nvlink-device-2026-11-27")
except health_expect.HealthExpectError as err:
    text = f"# not derived: {err}\n"
(out / "health-expectations.yaml").write_text(text); print(text)
EOF
echo "growth and expectations: exit $?"

python3 - "$OUT" > "$OUT/health-judged.txt" 2>&1 <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
try:
    from gpuaccept.judge import health_rules
    from gpuaccept import references
    from gpuaccept.layout import REFERENCE_DIR
except ImportError as err:
    print(f"judge not run: {err} (carry jsonschema and tabulate, as for ReFrame: docs/evidence/README.md)"); sys.exit(0)
facts = json.loads((out / "node-facts.json").read_text())
end = json.loads((out / "node-facts-end.json").read_text())
doc = json.loads((out / "health.json").read_text())
try:
    nt = references.detect(REFERENCE_DIR, facts)
except references.ReferenceError as err:
    print(f"no node type fits: {err}"); sys.exit(0)
findings, notes, not_run = health_rules.assess(doc, nt, None, facts, end)
metrics, waived = health_rules.judged_metrics(doc, findings, health_rules.expectations(nt), facts, end)
print(f"node type {nt.name}: {len(findings)} findings; not run: {not_run}")
for f in findings:
    print(f"FINDING {f['rule']}: {f['message']} -> {f['fix']}")
for n in notes:
    print(f"note: {n}")
print(f"judged metrics {json.dumps(metrics)}, waived {json.dumps(waived)}")
EOF
echo "judge: exit $?"; cat "$OUT/health-judged.txt"
echo "== done $(date -u +%FT%TZ): $(ls "$OUT" | tr '\n' ' ')"
