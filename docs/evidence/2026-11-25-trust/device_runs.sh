#!/usr/bin/env bash
# Issue 24's evidence on a lent GPU machine: healthy suites through `gpuaccept run` (the path the nightly timer,
# the suite role and Slurm take), each judged by the shipped references, then (FOREIGN=1) one nightly run with a
# foreign process holding a CUDA context on GPU 0. No Ansible; ReFrame and its Python dependencies from carried
# cp312 wheels; the benchmarks built beforehand here (nvcc 13.0, sm_90; the host GEMM linked statically against
# PyPI's mkl-static 2024.2.2) and linked by the checks' build fixture, so nothing compiles while a suite measures.
# Read-only towards the GPU's settings.
#   C=carried dir  O=output dir  BUDGET=seconds  COMMISSION=n  NIGHTLY=n  FOREIGN=0|1  TAG=start label
#   NIGHTLY_FIRST=1: one nightly run before the commission runs (the rest after)
set -u
C=${C:?carried files}; O=${O:?output directory}; BUDGET=${BUDGET:-560}
COMMISSION=${COMMISSION:-1}; NIGHTLY=${NIGHTLY:-4}; FOREIGN=${FOREIGN:-0}; TAG=${TAG:-start}
T0=$SECONDS; left() { echo $(( BUDGET - (SECONDS - T0) )); }
mkdir -p "$O"
export LC_ALL=C.UTF-8 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$C"/whl/*.whl > "$O/pip.log" 2>&1
SITE=$(python3 -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
NCCL=$(find "$SITE/nvidia" -name 'libnccl.so.2' | head -1)
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH LD_LIBRARY_PATH=${NCCL%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rm -rf build/bench && mkdir -p build && cp -a "$C/bench" build/bench && cp "$C/gitrev" .gitrev
R=/tmp/results; mkdir -p "$R"
{
  echo "start $TAG; revision $(cat .gitrev)"; cat "$C/trees"; date -u; uname -r; nproc
  nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id,serial,driver_version,power.draw,power.limit,clocks.sm,pcie.link.gen.max,pcie.link.width.max,persistence_mode,ecc.mode.current --format=csv
  python3 -c 'import reframe, jsonschema, tabulate; print("reframe", reframe.VERSION)'
  ldd build/bench/gpuaccept-nccl | grep nccl
} > "$O/machine-$TAG.txt" 2>&1
run() {  # run NAME SUITE TIMEOUT: gpuaccept run, its wall time and exit status in walls.txt
  local name=$1 suite=$2 limit=$3 t0 rc
  t0=$(date +%s.%N)
  timeout -k 10 "$limit" python3 -m gpuaccept run --suite "$suite" --results "$R" --bench-dir build/bench \
    > "$O/$TAG-$name.log" 2>&1; rc=$?
  echo "$TAG $name: gpuaccept run --suite $suite: exit $rc, wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" \
    | tee -a "$O/walls-$TAG.txt"
}
n=0
if [ "${NIGHTLY_FIRST:-0}" = 1 ] && [ "$NIGHTLY" -gt 0 ]; then n=1; run nightly-1 nightly 200; fi
for i in $(seq 1 "$COMMISSION"); do [ "$(left)" -gt 200 ] && run "commission-$i" commission 400; done
for i in $(seq $((n + 1)) "$NIGHTLY"); do [ "$(left)" -gt 100 ] && run "nightly-$i" nightly 200; done
if [ "$FOREIGN" = 1 ] && [ "$(left)" -gt 90 ]; then
  # A foreign process on the GPU (what a stray job looks like): a CUDA context holding 64 MiB, then the nightly.
  python3 -c 'import ctypes as C, time
c = C.CDLL("libcuda.so.1"); d = C.c_int(); x = C.c_void_p(); p = C.c_void_p()
assert c.cuInit(0) == 0 and c.cuDeviceGet(C.byref(d), 0) == 0 and c.cuDevicePrimaryCtxRetain(C.byref(x), d) == 0
assert c.cuCtxSetCurrent(x) == 0 and c.cuMemAlloc_v2(C.byref(p), C.c_size_t(1 << 26)) == 0
print("foreign process ready", flush=True); time.sleep(170)' > "$O/foreign-process-$TAG.txt" 2>&1 &
  fp=$!; sleep 3; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv >> "$O/foreign-process-$TAG.txt" 2>&1
  echo "foreign pid $fp" >> "$O/foreign-process-$TAG.txt"
  run nightly-foreign nightly 200
  kill "$fp" 2>/dev/null; wait "$fp" 2>/dev/null
fi
# Every run directory (reports, documents, verdicts, textfiles); stage build trees and sources left out.
tar czf "$O/results-$TAG.tar.gz" --exclude='*/stage/*' -C "$R" .
cat "$O/walls-$TAG.txt"
for f in "$O"/$TAG-*.log; do echo "== $f"; grep -E "ACCEPTED|REJECTED|^warning|attempt" "$f" | tail -4; done
