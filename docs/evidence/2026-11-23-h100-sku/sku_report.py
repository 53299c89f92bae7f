"""The SKU and node type the two-layer detection picks for this node's facts, and for the same facts with the
GPU replicated to 2, 3, 4 and 8 GPUs (what an HGX board of this SKU would report), as a table."""
import copy
import json
import sys

from gpuaccept import references

facts = json.load(open(sys.argv[1]))
ref_dir = sys.argv[2]
g = facts["gpus"][0]
print(f"NVML: {len(facts['gpus'])} GPU(s), name {g['name']!r}, PCI device id {g.get('pci_device_id')}, "
      f"memory {g['memory_bytes'] / 2**30:.1f} GiB, PCIe Gen{g.get('pcie_gen_max')} x{g.get('pcie_width_max')}")
sku = references.detect_sku(ref_dir, facts)
print(f"GPU SKU: {sku.name} ({sku.path}), matched by "
      + ("PCI device id" if g.get("pci_device_id") in sku.pci_device_ids else "name"))
rows = [("GPUs", "node type", "node layer")]
for n in (len(facts["gpus"]), 2, 3, 4, 8):
    f = copy.deepcopy(facts)
    f["gpus"] = [dict(g, index=i) for i in range(n)]
    t = references.detect(ref_dir, f)
    rows.append((str(n) + (" (this node)" if n == len(facts["gpus"]) else " (replicated)"), t.name,
                 "present" if t.node_layer_missing is None else "MISSING: " + t.node_layer_missing))
w = [max(len(r[i]) for r in rows) for i in range(2)]
for r in rows:
    print(f"{r[0].ljust(w[0])}  {r[1].ljust(w[1])}  {r[2]}")
