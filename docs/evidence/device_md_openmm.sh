#!/usr/bin/env bash
# On the lent H100 (no network): OpenMM's CUDA platform from carried PyPI wheels (openmm, openmm-cuda-13 8.6.1
# in .ommwhl/; the CUDA 13 libraries it loads, nvrtc/cufft/cudart, are those of the machine's PyTorch), then
# gpuaccept-openmm (src/gpuaccept/md_openmm.py): a quick smoke run, then RUNS full runs (the runs the h100
# md_openmm references are derived from), numbered from FIRST (default 1); SMOKE=0 skips the smoke run.
# Run from the repository root. Read-only towards the GPU.
set -uo pipefail
OUT=${OUT:-/tmp/out}; W=/tmp/md; mkdir -p "$W" "$OUT"
RUNS=${RUNS:-3}; FIRST=${FIRST:-1}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .ommwhl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 LC_ALL=C
NV=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])')
LD_LIBRARY_PATH=$(ls -d "$NV"/*/lib | tr '\n' ':')${LD_LIBRARY_PATH:-}; export LD_LIBRARY_PATH
{
  echo "revision: $(cat .gitrev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"; date -u; uname -a
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.draw,power.limit,clocks.sm --format=csv
  python3 -c 'import openmm as o; print("openmm", o.__version__, [o.Platform.getPlatform(i).getName() for i in range(o.Platform.getNumPlatforms())], o.Platform.getPluginLoadFailures())'
} 2>&1 | tee "$W/machine.txt"
python3 -m gpuaccept facts --output "$W/node-facts.json"
rc=0
if [ "${SMOKE:-1}" = 1 ]; then
  t0=$SECONDS
  python3 -m gpuaccept.md_openmm --quick --output "$W/smoke/md_openmm.json" 2>&1 | tee "$W/smoke.log"
  rc=${PIPESTATUS[0]}; echo "smoke: exit $rc, wall $((SECONDS - t0)) s" | tee -a "$W/smoke.log"
fi
if [ "$rc" = 0 ]; then
  for i in $(seq "$FIRST" $((FIRST + RUNS - 1))); do
    t0=$SECONDS; mkdir -p "$W/run$i"; cp "$W/node-facts.json" "$W/run$i/"
    python3 -m gpuaccept.md_openmm --output "$W/run$i/md_openmm.json" 2>&1 | tee "$W/run$i/log"
    echo "run $i: exit ${PIPESTATUS[0]}, wall $((SECONDS - t0)) s" | tee -a "$W/run$i/log"
  done
fi
tar czf "$OUT/md.tar.gz" -C /tmp md
