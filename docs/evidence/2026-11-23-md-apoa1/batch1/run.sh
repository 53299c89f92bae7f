#!/usr/bin/env bash
# Batch 1 (issue 14, md): OpenMM CUDA platform from carried wheels; APOA1 step-0 energies on the GPU vs NAMD 3.0;
# ns/day of integrator/precision variants; the 3x2x2 replicated APOA1 (1,106,688 atoms): memory, ns/day.
set -uo pipefail
W=$O; mkdir -p "$W"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$P"/whl/*.whl > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 1; }
export PYTHONPATH=/tmp/site:$P/src PYTHONUNBUFFERED=1 LC_ALL=C
NV=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])')
LD_LIBRARY_PATH=$(ls -d "$NV"/*/lib | tr '\n' ':')${LD_LIBRARY_PATH:-}; export LD_LIBRARY_PATH
export GPUACCEPT_GIT_REVISION=$(cat "$P/gitrev")
{
  echo "revision: $GPUACCEPT_GIT_REVISION"; date -u; uname -a
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.draw,power.limit,clocks.sm,memory.used --format=csv
  python3 -c 'import openmm as o; print("openmm", o.__version__, [o.Platform.getPlatform(i).getName() for i in range(o.Platform.getNumPlatforms())], o.Platform.getPluginLoadFailures())'
  nproc
} 2>&1 | tee "$W/machine.txt"
IN=$P/apoa1.tar.gz
run() {  # name, options...
  local name=$1; shift; local t0=$SECONDS
  echo "== $name: gpuaccept-md-apoa1 $*" | tee -a "$W/commands.txt"
  timeout 120 python3 -m gpuaccept.probe.md_apoa1 --inputs "$IN" --output "$W/$name.json" "$@" > "$W/$name.log" 2>&1
  echo "$name: exit $?, wall $((SECONDS - t0)) s" | tee -a "$W/commands.txt"
  grep -v "^Warn\|warnings.warn" "$W/$name.log" | tail -25
}
run apoa1_mts_mixed --integrator mts --precision mixed
run apoa1_verlet_mixed --integrator verlet --precision mixed --cpu-steps 0
run apoa1_mts_single --integrator mts --precision single --cpu-steps 0
run apoa1_verlet_single --integrator verlet --precision single --cpu-steps 0
run apoa1_x12_mts_mixed --replicate 3,2,2 --integrator mts --precision mixed --steps 400 --repeats 3 --warmup-steps 100
echo; echo "== summary"
python3 - "$W" <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    d = json.load(open(f)); m = d.get("metrics", {})
    g = lambda k: m.get(k, {}).get("value")
    ev = (d.get("results") or {}).get("energy_validation", {}).get("terms", {})
    worst = max((r["rel_diff"] for r in ev.values()), default=None)
    print(f"{os.path.basename(f):28s} pass={d['verification']['passed']} ns/day={g('ns_per_day')} drift={g('energy_drift_ratio')} "
          f"W={g('gpu_power_avg_w')} ns/day/kW={g('ns_per_day_per_kw')} cpu={g('cpu_ns_per_day')} mem={g('gpu_memory_used_bytes')} "
          f"worst_rel={worst} err={d.get('errors')} fail={d['verification']['failures']}")
PY
