#!/usr/bin/env bash
# The run directory's manifest and the strict judge on a lent GPU machine (1 GPU or more): the nightly suite
# through `make accept` (as docs/evidence/device_accept.sh runs it: .whl, .deb and .gitrev carried), then, on the
# run directory it left, each of these must hold:
#   manifest   manifest.json lists every document of the run (reframe-report.json, node-facts.json, each check's
#              JSON) and none of the judge's outputs (verdict.json, gpuaccept.prom, exit-status);
#   rejudge    `gpuaccept summarize` on the run as it is: the same verdict as recorded, no "no manifest" row;
#   tampered   the GEMM document with one figure changed: REJECTED, the row naming the file ("changed since the run");
#   added      a copy of the run with an extra JSON file under reframe/: REJECTED naming it ("added since the run");
#   edited     a copy of verdict.json with 'verdict' set to pass over a failed row: `gpuaccept show` prints REJECTED,
#              warns that the field disagrees, exits 1;
#   model      the run judged as the other GPU model's node type (h200 on an H100, h100_sxm5_80gb on an H200):
#              REJECTED with the node/gpu_model row naming both models.
# Usage, from the repository root: OUT=/path bash docs/evidence/2026-11-27-manifest/device_manifest.sh
# Output under $OUT: accept.log, checks.txt (one line per check above, PASS or FAIL, then a summary), the run
# directory as results.tar.gz (stage trees left out). Exit 0 when every check held. About 4 minutes on a bare
# machine (tool environment and builds about 160 s, the nightly suite about 60 s on one H100).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0  # on several GPUs the nightly suite's checks must not create NVLink multicast objects
mkdir -p /tmp/obl; for d in .deb/*.deb; do dpkg -x "$d" /tmp/obl; done
export LD_LIBRARY_PATH=/tmp/obl/usr/lib/x86_64-linux-gnu:/tmp/obl/usr/lib/x86_64-linux-gnu/openblas-pthread
OBL=/tmp/obl/usr
ARGS="-e gpuaccept_reframe_openblas_inc=$OBL/include/x86_64-linux-gnu/openblas-pthread -e gpuaccept_reframe_openblas_lib=$OBL/lib/x86_64-linux-gnu/openblas-pthread"
echo "revision $(cat .gitrev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)" | tee "$OUT/checks.txt"
nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id --format=csv | tee -a "$OUT/checks.txt"
t0=$SECONDS
WHEELHOUSE=.whl make accept SUITE=nightly ANSIBLE_ARGS="$ARGS" > "$OUT/accept.log" 2>&1
echo "make accept SUITE=nightly: exit $?, wall $((SECONDS - t0)) s" | tee -a "$OUT/checks.txt"
run=$(ls -d results/*/*-nightly 2>/dev/null | sort | tail -1)
[ -n "$run" ] || { echo "no nightly run directory under results/" | tee -a "$OUT/checks.txt"; exit 1; }
tar czf "$OUT/results.tar.gz" --exclude='*/stage/*' "$run"
RUN="$run" .venv/bin/python - <<'PY' 2>&1 | tee -a "$OUT/checks.txt"
import json, os, shutil, subprocess, sys, tempfile
from pathlib import Path
run = Path(os.environ["RUN"]).resolve()
gpuaccept = [str(Path(".venv/bin/gpuaccept").resolve())]
recorded = json.loads((run / "verdict.json").read_text())
node_type, suite = recorded["node_type"], recorded["suite"]
results = []
def check(name, ok, detail=""):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""))
def summarize(run_dir, node_type=node_type):
    return subprocess.run([*gpuaccept, "summarize", "--run-dir", str(run_dir), "--node-type", node_type, "--suite",
                           suite, "--facts", str(run_dir / "node-facts.json")], capture_output=True, text=True)
def copy():
    d = Path(tempfile.mkdtemp()) / run.parent.name / run.name
    shutil.copytree(run, d, symlinks=True)
    return d
files = json.loads((run / "manifest.json").read_text())["files"]
docs = [str(p.relative_to(run)) for p in run.rglob("*.json") if p.name not in ("verdict.json", "manifest.json")]
check("manifest", all(d in files for d in docs) and not {"verdict.json", "gpuaccept.prom", "exit-status"} & set(files),
      f"{len(files)} files, {len(docs)} JSON documents, verdict {recorded['verdict']}")
d = copy(); p = summarize(d); again = json.loads((d / "verdict.json").read_text())
check("rejudge", again["verdict"] == recorded["verdict"] and "no manifest" not in p.stdout,
      f"exit {p.returncode}, {again['verdict']}")
d = copy(); gemm = next(d.rglob("gemm.json")); doc = json.loads(gemm.read_text())
name = next(iter(doc["metrics"])); doc["metrics"][name]["value"] = (doc["metrics"][name]["value"] or 1) * 1.01
gemm.write_text(json.dumps(doc)); p = summarize(d); text = " ".join(p.stdout.split())
check("tampered", p.returncode == 1 and "changed since the run" in text, f"exit {p.returncode}")
d = copy(); (d / "reframe" / "extra.json").write_text("{}"); p = summarize(d); text = " ".join(p.stdout.split())
check("added", p.returncode == 1 and "reframe/extra.json: added since the run" in text, f"exit {p.returncode}")
d = copy(); v = json.loads((d / "verdict.json").read_text())
v["rows"].append({"check": "gemm", "metric": None, "status": "fail", "reason": "edited in (this script)"})
v["verdict"] = "pass"; (d / "verdict.json").write_text(json.dumps(v))
p = subprocess.run([*gpuaccept, "show", str(d)], capture_output=True, text=True)
check("edited", p.returncode == 1 and "REJECTED" in p.stdout and "its 'verdict' field says pass" in p.stderr,
      f"exit {p.returncode}")
facts = json.loads((run / "node-facts.json").read_text())
other = "h200" if "H100" in (facts["gpus"][0].get("name") or "") else "h100_sxm5_80gb"
count = len(facts["gpus"]); other += "" if count == 1 else f"_x{count}"
d = copy(); p = summarize(d, other); v = json.loads((d / "verdict.json").read_text())
row = next((r for r in v["rows"] if (r["check"], r["metric"]) == ("node", "gpu_model")), {})
check("model", v["verdict"] == "fail" and row.get("status") == "fail", f"as {other}: {row.get('reason', '')[:200]}")
print(f"{sum(results)} of {len(results)} checks held")
sys.exit(0 if all(results) else 1)
PY
