#!/usr/bin/env bash
# What the fabric probe sees on a lent GPU machine (docs/checks/fabric.md). Read-only: sysfs, /proc/modules, and,
# where perftest is installed and an HCA is there, one ib_write_bw loopback per HCA. Run from the repository root
# on the device; the documents land in $OUT. Expected on a VM without an InfiniBand/RoCE HCA: root_present false,
# "no /sys/class/infiniband: ...", and the judge's NOT RUN reason; with HCAs: each HCA and port listed.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/fabric.log") 2>&1
export PYTHONPATH=$PWD/src
echo "== machine"; date -u; uname -r
ls -l /sys/class/infiniband/ 2>&1; ls /sys/class/infiniband/*/ports/*/ 2>&1 | head -20
grep -E '^(nvidia_peermem|nv_peer_mem|ib_core|mlx5_ib|rdma_rxe) ' /proc/modules || echo "no RDMA or peer-memory module loaded"
if command -v ib_write_bw; then echo "--use_cuda in its --help: $(ib_write_bw --help 2>&1 | grep -c -- --use_cuda)"
else echo "no ib_write_bw (perftest not installed)"; fi
echo "== snapshot"
python3 -m gpuaccept.probe.fabric_doc snapshot --output "$OUT/fabric-snapshot.json"; echo "rc=$?"
echo "== probe (ib_write_bw where installed)"
python3 -m gpuaccept.probe.fabric_doc probe --output "$OUT/fabric.json"; echo "rc=$?"
python3 - "$OUT/fabric.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
after = doc["results"]["after"]
print("root_present:", after["root_present"], "| why:", after["why"])
for h in after["hcas"]:
    for p in h["ports"]:
        print(h["name"], p["port"], p["state"], p["phys_state"], p["rate_text"], p["link_layer"], p["pkeys"],
              p["netdev"], p["carrier_changes"])
print("gpudirect:", after["gpudirect"])
for r in doc["results"]["ib_write_bw"].get("runs", []):
    print(r["hca"], r["memory"], r["gbps"], r["error"])
print("metrics:", doc["metrics"], "| waived:", doc["waived"])
PY
