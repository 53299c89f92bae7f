#!/bin/bash
# The GPU memory test (issue 35 item 2) on every GPU of the lent machine: build gpuaccept-memtest (its own
# Makefile target, for this machine's compute capability), then, each timed:
#   commission  --seconds 20, what the GpuMemtest check passes in the commissioning and evaluation suites: every
#               GPU at once; must exit 0 with no bad word and at least 0.9 of each GPU's memory tested;
#   selftest    --inject-error --passes 2: one bit flipped on each GPU; must exit 2, each GPU reporting exactly the
#               flipped word (its offset and bit);
#   quick       --quick (5 s), what quick mode passes; must exit 0.
# NVML's ECC and row-remapping counters before and after (nvidia-smi -q -d ECC,ROW_REMAPPER) beside the documents.
# Usage, from the repository root: OUT=/path bash docs/evidence/2026-11-27-memtest/device_memtest.sh
# Output under $OUT: console.log, summary.txt (per GPU: memory tested, passes, GB/s, bad words; the self-test's
# words; wall times), times.txt, <run>.json / .out / .err / .rc, gpu.csv, ecc-before.txt, ecc-after.txt, build.log.
# Exit 0 when every expectation above held, 1 otherwise. About 1 minute: build ~25 s, runs ~25 + ~6 + ~9 s.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; B=/tmp/gpuaccept-memtest-build
export PATH=/usr/local/cuda/bin:$PATH
export NCCL_NVLS_ENABLE=0  # nothing here creates an NCCL communicator; set as on every run over several GPUs
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || cat .devq/gitrev 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=index,name,serial,pci.bus_id,memory.total,memory.used,ecc.mode.current,driver_version,compute_cap \
  --format=csv | tee "$OUT/gpu.csv"
nvidia-smi -q -d ECC,ROW_REMAPPER > "$OUT/ecc-before.txt" 2>&1
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
s=$SECONDS
make -C reframe_checks/src BUILD_DIR=$B CUDA_ARCH="-gencode=arch=compute_${cc},code=sm_${cc}" \
  GIT_REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" $B/gpuaccept-memtest > "$OUT/build.log" 2>&1 \
  || { tail -20 "$OUT/build.log"; exit 1; }
echo "build (sm_${cc}) in $((SECONDS - s)) s" | tee "$OUT/times.txt"

run() {  # run NAME OPTIONS...: one timed run, its document, output, error output and exit status under $OUT
  local name=$1; shift
  local t0; t0=$(date +%s%N)
  timeout 300 "$B/gpuaccept-memtest" "$@" --output "$OUT/$name.json" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local rc=$?
  echo "$rc" > "$OUT/$name.rc"
  echo "$name ($*): exit $rc, wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/times.txt"
  tail -6 "$OUT/$name.err"; cat "$OUT/$name.out"
}
run commission --seconds 20
run selftest --inject-error --passes 2
run quick --quick
nvidia-smi -q -d ECC,ROW_REMAPPER > "$OUT/ecc-after.txt" 2>&1

OUT="$OUT" python3 - <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = os.environ["OUT"]
bad = []
def load(name):
    rc = int(open(f"{out}/{name}.rc").read())
    try:
        return rc, json.load(open(f"{out}/{name}.json"))
    except (OSError, ValueError) as err:
        bad.append(f"{name}: no readable document ({err})")
        return rc, None
print(open(f"{out}/times.txt").read())
for name, want_rc in (("commission", 0), ("quick", 0), ("selftest", 2)):
    rc, doc = load(name)
    print(f"== {name}: exit {rc} (expected {want_rc})")
    if rc != want_rc:
        bad.append(f"{name}: exit {rc}, expected {want_rc}")
    if doc is None:
        continue
    print("  metrics:", {k: round(v["value"], 4) for k, v in doc["metrics"].items()})
    print("  errors:", doc["errors"], " notes:", doc["results"]["notes"])
    for g in doc["results"]["per_gpu"]:
        rates = {p["pattern"]: round(p["throughput_gbps"]) for p in g["patterns"]}
        print(f"  GPU {g['gpu']} {g['pci_bus_id']}: tested {g['tested_bytes'] / 2**30:.2f} GiB of "
              f"{g['total_bytes'] / 2**30:.2f} ({g['tested_fraction']:.4f}), free {g['free_bytes'] / 2**30:.2f}, margin "
              f"{g['margin_bytes'] / 2**30:.2f} GiB, {g['chunks']} chunks; {g['passes']} passes in {g['seconds']:.2f} s "
              f"(kernels {g['kernel_seconds']:.2f} s), {g['throughput_gbps']:.0f} GB/s {rates}; bad words "
              f"{g['mismatches']}; ECC change {g['ecc']['change']}; stopped {g['stopped']}")
        if name != "selftest":
            if g["mismatches"] or g["passes"] < 1 or g["tested_fraction"] < 0.9:
                bad.append(f"{name}: GPU {g['gpu']}: {g['mismatches']} bad words, {g['passes']} passes, "
                           f"fraction {g['tested_fraction']}")
            continue
        inj = g["injected"] or {}
        found = [w for p in g["patterns"] for w in p["first_bad"]]
        print(f"    injected {inj}; found {found}")
        ok = (inj.get("reported") is True and g["mismatches"] == 1 and len(found) == 1
              and found[0]["offset"] == inj.get("offset") and found[0]["bits"] == [inj.get("bit")])
        if not ok:
            bad.append(f"selftest: GPU {g['gpu']}: the flipped word was not reported exactly once")
    if name == "selftest":
        print("  failures:", *doc["verification"]["failures"], sep="\n    ")
        if len(doc["verification"]["failures"]) != len(doc["results"]["per_gpu"]):
            bad.append("selftest: not one failure per GPU")
print("== expectations:", "all held" if not bad else "FAILED")
for b in bad:
    print("  ", b)
sys.exit(1 if bad else 0)
PY
rc=$?
echo "== done $(date -u +%FT%TZ), exit $rc"
exit $rc
