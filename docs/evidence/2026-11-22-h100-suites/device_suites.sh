#!/usr/bin/env bash
# On a 1 x H100 80 GB SXM5 VM, from the repository root, with the wheelhouse of
# requirements/tools.txt carried (WHEELHOUSE, default ../../.whl): the health probe on the idle node and with a
# foreign compute process holding the GPU (a recorded failing output), then the suites through `make accept`
# with their wall times: SUITES (default "nightly nightly": the first run also creates the tool environment,
# the second is what a nightly timer sees; PREPARE_VENV=1 creates the tool environment first, timed apart, so
# that every suite run finds it). SKIP_PROBES=1 skips the two health probes. Read-only towards the GPU settings.
set -uo pipefail
OUT=${OUT:-/tmp/out}; D=$OUT/suites; mkdir -p "$D"
exec > >(tee "$D/device_suites.log") 2>&1
WH=$(realpath "${WHEELHOUSE:-../../.whl}")
export LC_ALL=C.UTF-8
echo "revision $(cat .gitrev 2>/dev/null)"; date -u
nvidia-smi --query-gpu=index,name,pci.bus_id,power.draw,clocks.sm,persistence_mode --format=csv
if [ "${SKIP_PROBES:-0}" != 1 ]; then
  echo "== health, idle node"
  PYTHONPATH=$PWD/src python3 -m gpuaccept health --node-type h100_sxm5_80gb --expected-gpus 1 --xid-since boot \
    --output "$D/health-idle.json"; echo "rc=$?"
  echo "== health with a foreign compute process (python3 holding a CUDA context)"
  python3 -c 'import time, torch; x = torch.ones(1, device="cuda"); print("foreign pid ready", flush=True); time.sleep(20)' &
  fpid=$!
  for _ in $(seq 40); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q "$fpid" && break; sleep 0.5; done
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv | tee "$D/foreign-process.csv"
  PYTHONPATH=$PWD/src python3 -m gpuaccept health --node-type h100_sxm5_80gb --expected-gpus 1 --xid-since boot \
    --output "$D/health-foreign.json"; echo "rc=$? (2 expected: unhealthy)"
  kill "$fpid"; wait "$fpid" 2>/dev/null
fi
if [ "${PREPARE_VENV:-0}" = 1 ]; then
  t0=$(date +%s.%N); WHEELHOUSE=$WH scripts/venv.sh; t1=$(date +%s.%N)
  echo "scripts/venv.sh (tool environment): exit $?, wall $(python3 -c "print(round($t1 - $t0, 1))") s" | tee -a "$D/walls.txt"
fi
n=0
for suite in ${SUITES:-nightly nightly}; do
  n=$((n + 1)); t0=$(date +%s.%N)
  WHEELHOUSE=$WH make accept SUITE="$suite" 2>&1 | tee "$D/$suite-$n.log"
  rc=${PIPESTATUS[0]}; t1=$(date +%s.%N)
  echo "make accept SUITE=$suite (run $n): exit $rc, wall $(python3 -c "print(round($t1 - $t0, 1))") s" | tee -a "$D/walls.txt"
done
cat "$D/walls.txt"
tar czf "$OUT/results.tar.gz" --exclude='*/stage/*/GpuBenchBuild*' --exclude='*/stage/*/CpuBenchBuild*' results
tar czf "$OUT/suites.tar.gz" -C "$OUT" suites && rm -rf "$D"
ls -la "$OUT"
