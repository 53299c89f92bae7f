#!/usr/bin/env bash
# Final batch (issue 14, md): the final gpuaccept-md-apoa1, 5 full runs of md_apoa1 (APOA1, 92,224 atoms) with
# the check's defaults (what the ReFrame check runs), for the H100 references (gpuaccept baseline).
set -uo pipefail
W=$O; mkdir -p "$W"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$P"/whl/*.whl > "$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 1; }
export PYTHONPATH=/tmp/site:$P/src PYTHONUNBUFFERED=1 LC_ALL=C
NV=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])')
LD_LIBRARY_PATH=$(ls -d "$NV"/*/lib | tr '\n' ':')${LD_LIBRARY_PATH:-}; export LD_LIBRARY_PATH
export GPUACCEPT_GIT_REVISION=$(cat "$P/gitrev")
{
  echo "revision: $GPUACCEPT_GIT_REVISION"; date -u; uname -a
  nvidia-smi --query-gpu=index,name,pci.bus_id,uuid,driver_version,power.draw,power.limit,clocks.sm,memory.used --format=csv
  python3 -c 'import openmm as o; print("openmm", o.__version__, [o.Platform.getPlatform(i).getName() for i in range(o.Platform.getNumPlatforms())], o.Platform.getPluginLoadFailures())'
  nproc
} 2>&1 | tee "$W/machine.txt"
python3 -m gpuaccept facts --output "$W/node-facts.json" > /dev/null 2>&1 || echo "facts failed" >> "$W/machine.txt"
IN=$P/apoa1.tar.gz
for i in 1 2 3 4 5; do
  t0=$SECONDS; mkdir -p "$W/run$i"; cp "$W/node-facts.json" "$W/run$i/" 2>/dev/null
  echo "== run$i: python3 -m gpuaccept.probe.md_apoa1 --inputs apoa1.tar.gz --output run$i/md_apoa1.json" | tee -a "$W/commands.txt"
  timeout 45 python3 -m gpuaccept.probe.md_apoa1 --inputs "$IN" --output "$W/run$i/md_apoa1.json" > "$W/run$i/md_apoa1.log" 2>&1
  echo "run$i: exit $?, wall $((SECONDS - t0)) s" | tee -a "$W/commands.txt"
done
echo "== summary"
python3 - "$W" <<'PY'
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/run*/md_apoa1.json")):
    d = json.load(open(f)); m = d.get("metrics", {})
    g = lambda k: round(m[k]["value"], 4) if k in m else None
    print(f"{f.split('/')[-2]} pass={d['verification']['passed']} ns/day={g('ns_per_day')} drift={g('energy_drift_ratio')} W={g('gpu_power_avg_w')} "
          f"ns/day/kW={g('ns_per_day_per_kw')} cpu={g('cpu_ns_per_day')} GiB={g('gpu_memory_used_gib')} e={g('energy_bonded_max_rel_diff')},{g('energy_nonbonded_rel_diff')} "
          f"t={round(d['elapsed_s'])} err={d.get('errors')} fail={d['verification']['failures']}")
PY
