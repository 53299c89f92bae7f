#!/usr/bin/env bash
# The probes' one NVML reader (src/gpuaccept/probe/nvml.py) on the lent H100: node facts, the health probe
# (judged against the node type), the power sampler around a short sleep, and the MD runner's GPU memory read.
# From the repository root, with ReFrame's wheels (for jsonschema) in $C/wheels. Read-only towards the GPU.
set -u
O=${O:?output directory}; mkdir -p "$O"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nvml-site "$C"/wheels/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/nvml-site:$PWD/src LC_ALL=C.UTF-8
cat "$C/gitrev" > "$O/revision.txt" 2>/dev/null || git rev-parse --short HEAD > "$O/revision.txt"
nvidia-smi --query-gpu=name,pci.device_id,driver_version --format=csv > "$O/machine.txt" 2>&1
python3 -m gpuaccept facts --output "$O/facts.json"; echo "facts exit $?"
python3 -m gpuaccept health --node-type h100_sxm5_80gb --output "$O/health.json" --xid-since boot; echo "health exit $?"
python3 -m gpuaccept sample --interval 0.1 --output "$O/sample.json" -- sleep 2; echo "sample exit $?"
python3 -c 'from gpuaccept.probe import md_apoa1; print("gpu_memory", md_apoa1.gpu_memory(0))'
python3 - "$O" <<'PY'
import json, sys
o = sys.argv[1]
f = json.load(open(f"{o}/facts.json")); h = json.load(open(f"{o}/health.json")); s = json.load(open(f"{o}/sample.json"))
print("facts:", f["gpu_source"], [(g["name"], g["pci_device_id"]) for g in f["gpus"]])
print("health:", h["results"]["observations"]["source"], h["verification"], {k: v["value"] for k, v in h["metrics"].items()})
print("sample:", s["results"]["backend"], s["verification"]["passed"], {k: v["value"] for k, v in s["metrics"].items()})
PY
