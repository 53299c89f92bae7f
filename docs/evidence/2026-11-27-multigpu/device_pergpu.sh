#!/usr/bin/env bash
# Every GPU judged and named, and the tools' time on several GPUs (issue 33 items 3 and 6), on a lent machine
# with 4 GPUs (2 or 1 work too), without Ansible or ReFrame. Run from the repository root, with .whl carried
# (the cp312 wheels of requirements/tools.txt, as for device_smoke.sh: the judge needs jsonschema and tabulate):
#
#   OUT=... bash docs/evidence/2026-11-27-multigpu/device_pergpu.sh clean    # part 1, about 6 minutes
#   OUT=... bash docs/evidence/2026-11-27-multigpu/device_pergpu.sh loaded   # part 2, about 4 minutes
#
# (two calls on the same warm machine, each well inside the 8 minutes a call may take; the second reuses the
# build and facts the first left; `all` runs both in one, about 10 minutes).
#
# Part 1 (clean): builds gpuaccept-gemm, gpuaccept-bw and gpuaccept-hplstyle (into build/pergpu, kept between
# calls), records the node (facts, nvidia-smi topo), runs each tool once on all GPUs with the commission suite's
# options (and gpuaccept powercheck and gpuaccept health), timing each, then the judge on those documents
# (judge_documents.py, expected ACCEPTED).
# Part 2 (loaded): the nightly suite's options on all GPUs (timed: the suite's time on several GPUs), each GPU's
# GEMM and device-local copies alone against all at once (the schedules the tools chose), then a foreign load on
# GPU 1 (a second gpuaccept-gemm, FP64, pinned to it by CUDA_VISIBLE_DEVICES in PCI order, started in the
# background and killed by its pid afterwards) while the same tools run again, then the judge on those documents
# (expected REJECTED naming GPU 1 alone: index, bus id and serial; every other GPU's rows PASS).
# Nothing here changes a clock, a power limit or any GPU setting; no NCCL communicator is made.
# What proves the work: $OUT/judge-clean.txt ends "expectation (ACCEPTED): holds", $OUT/judge-loaded.txt ends
# "expectation (REJECTED naming GPU 1 alone): holds", and $OUT/timings.txt has each tool's wall time.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; PART=${1:-clean}; REPO=$PWD
case "$PART" in clean|loaded|all) ;; *) echo "usage: $0 clean|loaded|all" >&2; exit 4 ;; esac
B=$REPO/build/pergpu; mkdir -p "$B"
exec > >(tee -a "$OUT/console.log") 2>&1
export NCCL_NVLS_ENABLE=0 CUDA_DEVICE_ORDER=PCI_BUS_ID LC_ALL=C
HERE=docs/evidence/2026-11-27-multigpu
LOAD_PID=""
stop_load() { if [ -n "$LOAD_PID" ]; then kill "$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null; LOAD_PID=""; fi; }
trap stop_load EXIT

# One timed step: its wall time to timings.txt, its output to <name>.out/.err, its exit status to rc.txt.
timed() {
  local name=$1; shift
  local t0; t0=$(date +%s%N)
  "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%-28s rc=%d %5d.%01d s\n' "$name" "$rc" $((ms / 1000)) $(((ms % 1000) / 100)) | tee -a "$OUT/timings.txt"
  echo "$name rc=$rc" >> "$OUT/rc.txt"
  return 0
}

REV=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || cat .gitrev 2>/dev/null || echo unknown)
echo "== $(date -u +%FT%TZ) part $PART on $(hostname), revision $REV"
if [ -d .whl ] && [ ! -d /tmp/site/jsonschema ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$REPO/src
nvidia-smi -L | tee "$OUT/gpus.txt"
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
if [ ! -x "$B/gpuaccept-gemm" ] || [ ! -x "$B/gpuaccept-bw" ] || [ ! -x "$B/gpuaccept-hplstyle" ]; then
  echo "== build"
  timed build make -C reframe_checks/src -j 3 BUILD_DIR="$B" GIT_REV="$REV" \
    CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 "$B/gpuaccept-gemm" "$B/gpuaccept-bw" "$B/gpuaccept-hplstyle"
fi
[ -s "$OUT/facts.json" ] || python3 -m gpuaccept facts --output "$OUT/facts.json"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1 || true
JUDGE=(python3 "$HERE/judge_documents.py" --facts "$OUT/facts.json")

# The tools as the suites call them (gpuaccept.run.SUITE_OPTIONS, reframe_checks/gpu_checks.py).
run_tools() {  # $1: directory under $OUT; $2: commission or nightly
  local d=$OUT/$1; mkdir -p "$d"
  local quick=() bw=() gemm=()
  if [ "$2" = nightly ]; then
    quick=(--quick); gemm=(--window-s 3)
    bw=(--max-bytes 1GiB --matrix-bytes 256MiB --trials 7 --target-ms 5)
  fi
  timed "$1-gemm" "$B/gpuaccept-gemm" "${quick[@]}" "${gemm[@]}" --output "$d/gemm.json"
  timed "$1-bandwidth" "$B/gpuaccept-bw" "${quick[@]}" "${bw[@]}" --output "$d/bandwidth.json"
  timed "$1-hplstyle" "$B/gpuaccept-hplstyle" --output "$d/hplstyle.json"
  timed "$1-power" python3 -m gpuaccept powercheck --gemm "$B/gpuaccept-gemm" "${quick[@]}" --output "$d/power_check.json"
  timed "$1-health" python3 -m gpuaccept health --expected-gpus "$NGPU" --xid-since 1h "${quick[@]}" \
    --output "$d/health.json"
  python3 -m gpuaccept peaks "$d/gemm.json" > /dev/null 2>&1 || echo "peaks: gemm.json not annotated"
}

if [ "$PART" = all ] || [ "$PART" = clean ]; then
  echo "== part 1: commission options, every GPU"
  run_tools clean commission
  "${JUDGE[@]}" --expect-accepted --output "$OUT/verdict-clean.json" "$OUT"/clean/{gemm,bandwidth,hplstyle,power_check,health}.json \
    > "$OUT/judge-clean.txt" 2>&1
  echo "judge (clean): exit $?"; tail -3 "$OUT/judge-clean.txt"
fi

if [ "$PART" = all ] || [ "$PART" = loaded ]; then
  echo "== part 2a: nightly options, every GPU"
  run_tools nightly nightly
  "${JUDGE[@]}" --expect-accepted --output "$OUT/verdict-nightly.json" \
    "$OUT"/nightly/{gemm,bandwidth,hplstyle,power_check,health}.json > "$OUT/judge-nightly.txt" 2>&1
  echo "judge (nightly): exit $?"; tail -3 "$OUT/judge-nightly.txt"

  echo "== part 2b: each GPU alone against every GPU at once (FP64 GEMM windows, the device-local sweep)"
  mkdir -p "$OUT/schedules"
  timed gemm-one-at-a-time "$B/gpuaccept-gemm" --quick --window-s 3 --precisions fp64 --one-at-a-time \
    --output "$OUT/schedules/gemm-one-at-a-time.json"
  for g in $(seq 0 $((NGPU - 1))); do
    timed "d2d-gpu$g-alone" "$B/gpuaccept-bw" --gpus "$g" --cases d2d_oneway --no-matrix --no-peer --max-bytes 1GiB \
      --size-step 2 --perturbation 0 --trials 7 --target-ms 5 --output "$OUT/schedules/d2d-gpu$g.json"
  done
  python3 - "$OUT" <<'EOF' | tee "$OUT/schedules.txt"
import json, sys
out = sys.argv[1]


def doc(name):
    try:
        return json.load(open(f"{out}/{name}"))
    except (OSError, ValueError) as err:
        print(f"{name}: not read ({err})")
        return {}


def windows(d, mode=None):
    return " ".join(f"GPU {r['gpu']} {r['tflops_median']:.2f}" for r in (d.get("results") or {}).get("gemm") or []
                    if r.get("phase") == "window" and r.get("precision") == "fp64" and r.get("tflops_median")
                    and (mode is None or r.get("mode") == mode))


def d2d(e):
    v = (e.get("metrics") or {}).get("d2d_min", {}).get("value")
    return f"GPU {e.get('gpu')} {v:.1f}" if isinstance(v, (int, float)) else f"GPU {e.get('gpu')} -"


one = doc("schedules/gemm-one-at-a-time.json")
print("fp64 window, each alone (solo)      :", windows(one, "solo"))
print("fp64 window, then all at once       :", windows(one, "concurrent"))
print("fp64 window, together (nightly run) :", windows(doc("nightly/gemm.json")))
alone = [doc(f"schedules/d2d-gpu{i}.json") for i in range(len(doc("nightly/bandwidth.json").get("devices") or []))]
print("d2d at 1 GiB, each GPU alone        :", " ".join(d2d({**e, "gpu": i}) for i, e in enumerate(alone)))
print("d2d at 1 GiB, every GPU at once     :", " ".join(d2d(e) for e in doc("nightly/bandwidth.json").get("gpu_metrics") or []))
EOF

  echo "== part 2c: a foreign FP64 GEMM on GPU 1 while the tools run again"
  mkdir -p "$OUT/loaded"
  CUDA_VISIBLE_DEVICES=1 "$B/gpuaccept-gemm" --precisions fp64 --series none --large none --window-s 590 \
    --output "$OUT/loaded/foreign-load.json" > "$OUT/loaded/foreign-load.out" 2>&1 &
  LOAD_PID=$!
  echo "foreign load: pid $LOAD_PID on GPU 1 (PCI order)"; sleep 8
  nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv | tee "$OUT/loaded/compute-apps.csv"
  run_tools loaded nightly
  stop_load
  "${JUDGE[@]}" --expect-gpu 1 --output "$OUT/verdict-loaded.json" \
    "$OUT"/loaded/{gemm,bandwidth,hplstyle,power_check,health}.json > "$OUT/judge-loaded.txt" 2>&1
  echo "judge (loaded, GPU 1): exit $?"; tail -3 "$OUT/judge-loaded.txt"
fi
echo "== done $(date -u +%FT%TZ)"; cat "$OUT/timings.txt"
