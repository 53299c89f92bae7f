"""What NVML itself says of each GPU: name, PCI device and subsystem ids, memory (read-only)."""
import json

import pynvml

pynvml.nvmlInit()
try:
    out = {"driver": pynvml.nvmlSystemGetDriverVersion(), "count": pynvml.nvmlDeviceGetCount(), "gpus": []}
    for i in range(out["count"]):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        pci = pynvml.nvmlDeviceGetPciInfo(h)
        out["gpus"].append({
            "index": i,
            "name": pynvml.nvmlDeviceGetName(h),
            "pciDeviceId": f"0x{pci.pciDeviceId:08X}",
            "pciSubSystemId": f"0x{pci.pciSubSystemId:08X}",
            "busId": pci.busId.decode() if isinstance(pci.busId, bytes) else pci.busId,
            "memory_total_bytes": pynvml.nvmlDeviceGetMemoryInfo(h).total,
        })
    print(json.dumps(out, indent=2, default=str))
finally:
    pynvml.nvmlShutdown()
