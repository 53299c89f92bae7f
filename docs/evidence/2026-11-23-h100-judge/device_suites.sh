#!/usr/bin/env bash
# The one judge and the one run path on the lent H100 (issue 12): `gpuaccept run` (no Ansible), the suites'
# benchmarks built once beforehand (make -C reframe_checks/src ... gpu cpu, carried in build/bench), ReFrame and
# its Python dependencies from carried cp312 wheels, Debian's OpenBLAS 0.3.21 for the host GEMM (carried, as
# the earlier runs had it). Read-only towards the GPU's settings.
#   PHASE=1: the commission suite once, then the nightly suite while the time budget allows (at most NIGHTLY);
#   PHASE=2: the nightly suite from run FIRST until NIGHTLY healthy runs exist, then once with a foreign process
#   on the GPU.
# Run from the repository root, with the carried files in $C (wheels/, lib.tar.xz, bench/, gitrev).
set -u
C=${C:?carried files}; O=${O:?output directory}; BUDGET=${BUDGET:-540}; NIGHTLY=${NIGHTLY:-5}
T0=$SECONDS; left() { echo $(( BUDGET - (SECONDS - T0) )); }
mkdir -p "$O" /tmp/final-lib
export LC_ALL=C.UTF-8 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/final-site "$C"/wheels/*.whl > "$O/pip.log" 2>&1
tar xJf "$C/lib.tar.xz" -C /tmp/final-lib
export PYTHONPATH=/tmp/final-site:$PWD/src PATH=/tmp/final-site/bin:$PATH LD_LIBRARY_PATH=/tmp/final-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p build && rm -rf build/bench && cp -a "$C/bench" build/bench && cp "$C/gitrev" .gitrev
R=/tmp/final-results; mkdir -p "$R"
{
  echo "revision $(cat .gitrev)"; date -u; uname -r; nproc
  nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id,driver_version,power.draw,power.limit,clocks.sm,persistence_mode,ecc.mode.current --format=csv
  python3 -c 'import reframe, jsonschema, tabulate; print("reframe", reframe.VERSION)'
} > "$O/machine-phase$PHASE.txt" 2>&1
run() {  # run NAME SUITE TIMEOUT: gpuaccept run, its wall time and exit status in walls.txt
  local name=$1 suite=$2 limit=$3 t0 rc
  t0=$(date +%s.%N)
  timeout -k 10 "$limit" python3 -m gpuaccept run --suite "$suite" --results "$R" > "$O/$name.log" 2>&1; rc=$?
  echo "$name: gpuaccept run --suite $suite: exit $rc, wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" \
    | tee -a "$O/walls.txt"
}
healthy=$(( ${FIRST:-1} - 1 ))  # nightly runs already made (by phase 1: FIRST=n+1 for phase 2)
if [ "${PHASE}" = 1 ]; then
  run commission-1 commission 330
fi
while [ "$healthy" -lt "$NIGHTLY" ] && [ "$(left)" -gt 100 ]; do
  healthy=$((healthy + 1)); run "nightly-$healthy" nightly 110
done
if [ "${PHASE}" = 2 ] && [ "$(left)" -gt 100 ]; then
  # A foreign process on the GPU (what a stray job looks like): a CUDA context holding 64 MiB, then the nightly.
  python3 -c 'import ctypes as C, time
c = C.CDLL("libcuda.so.1"); d = C.c_int(); x = C.c_void_p(); p = C.c_void_p()
assert c.cuInit(0) == 0 and c.cuDeviceGet(C.byref(d), 0) == 0 and c.cuDevicePrimaryCtxRetain(C.byref(x), d) == 0
assert c.cuCtxSetCurrent(x) == 0 and c.cuMemAlloc_v2(C.byref(p), C.c_size_t(1 << 26)) == 0
print("foreign process ready", flush=True); time.sleep(150)' > "$O/foreign-process.txt" 2>&1 &
  fp=$!; sleep 3; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv >> "$O/foreign-process.txt" 2>&1
  echo "foreign pid $fp" >> "$O/foreign-process.txt"
  run nightly-foreign nightly 110
  kill "$fp" 2>/dev/null; wait "$fp" 2>/dev/null
fi
cp "$O/walls.txt" "$O/walls-phase$PHASE.txt" 2>/dev/null
# Every run directory (reports, documents, verdicts, textfiles); stage build trees and sources left out.
tar czf "$O/results-phase$PHASE.tar.gz" --exclude='*/stage/*/*Build*' --exclude='*.cu' --exclude='*.cpp' \
  --exclude='*.h' -C "$R" .
cat "$O/walls.txt"
for f in "$O"/nightly-*.log "$O"/commission-*.log; do [ -f "$f" ] && { echo "== $f"; tail -4 "$f"; }; done
