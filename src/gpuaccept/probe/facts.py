"""Node facts: CPU, NUMA nodes and NVIDIA GPUs, read through NVML (nvidia-ml-py), or ``nvidia-smi`` where NVML
cannot be loaded: each GPU's identity and PCIe link, its configuration (VBIOS, InfoROM, ECC, persistence, power
limits, MIG: gpuaccept.probe.gpuconfig), its NVLink links with their error counters (gpuaccept.probe.nvlink),
its PCIe replay and AER counters (gpuaccept.probe.pcie) and the InfiniBand / RoCE ports with their counters
(gpuaccept.probe.fabric). Read-only: nothing here changes a GPU setting."""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from gpuaccept.probe import fabric, gpuconfig, nvlink, pcie
from gpuaccept.probe.nvml import Nvml
from gpuaccept.probe.smi_q import parse_smi_q

SMI_FIELDS = (
    "index",
    "name",
    "uuid",
    "serial",
    "pci.bus_id",
    "memory.total",
    "compute_cap",
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "driver_version",
)


def cpu_model(cpuinfo: str | None = None) -> str:
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "unknown"
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def parse_cpulist(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_nodes(sysfs: Path = Path("/sys/devices/system/node")) -> list[dict[str, Any]]:
    nodes = []
    for entry in sorted(sysfs.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        try:
            cpus = parse_cpulist((entry / "cpulist").read_text())
        except (OSError, ValueError):
            continue
        if cpus:
            nodes.append({"id": int(entry.name[4:]), "cpus": cpus})
    if not nodes:
        nodes.append({"id": 0, "cpus": list(range(os.cpu_count() or 1))})
    return nodes


def sysfs_bus_id(bus_id: str) -> str:
    """NVML's "00000000:2A:00.0" as sysfs spells it: "0000:2a:00.0"."""
    domain, _, rest = bus_id.strip().partition(":")
    return f"{int(domain, 16):04x}:{rest.lower()}"


def pci_numa_node(bus_id: str, root: Path = Path("/sys/bus/pci/devices")) -> int | None:
    try:
        node = int((root / sysfs_bus_id(bus_id) / "numa_node").read_text().strip())
    except (OSError, ValueError):
        return None
    return max(node, 0)


def _nvml_facts() -> dict[str, Any]:
    with Nvml() as nv:
        pynvml, optional = nv.lib, nv.optional
        driver, cuda = nv.versions()
        facts: dict[str, Any] = {
            "gpu_source": "nvml",
            "driver_version": driver,
            "cuda_driver_version": cuda,
            "gpus": [],
        }
        for index in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(index)
            pci = optional(pynvml.nvmlDeviceGetPciInfo, h)
            bus_id = pci.busId if pci else None
            if isinstance(bus_id, bytes):
                bus_id = bus_id.decode()
            cc = optional(pynvml.nvmlDeviceGetCudaComputeCapability, h)
            mem = optional(pynvml.nvmlDeviceGetMemoryInfo, h)
            facts["gpus"].append(
                {
                    "index": index,
                    "name": optional(pynvml.nvmlDeviceGetName, h),
                    "uuid": optional(pynvml.nvmlDeviceGetUUID, h),
                    "serial": optional(pynvml.nvmlDeviceGetSerial, h),
                    "pci_bus_id": bus_id,
                    # The GPU SKU as DCGM keys it: device id << 16 | vendor id, "0x233010DE" for an H100 SXM5 80GB.
                    "pci_device_id": f"0x{pci.pciDeviceId:08X}" if pci else None,
                    "numa_node": pci_numa_node(bus_id) if bus_id else None,
                    "memory_bytes": mem.total if mem else None,
                    "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                    "pcie_gen_max": optional(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
                    "pcie_width_max": optional(pynvml.nvmlDeviceGetMaxPcieLinkWidth, h),
                    "pcie_gen_current": optional(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
                    "pcie_width_current": optional(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h),
                    "config": gpuconfig.from_nvml(nv, h),
                    "nvlink": nvlink.read_gpu(nv, h),
                    "pcie_counters": pcie.from_nvml(nv, h, bus_id),
                }
            )
        return facts


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def parse_nvidia_smi_csv(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits``."""
    gpus, driver = [], None
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(SMI_FIELDS):
            raise ValueError(f"nvidia-smi output line {lineno}: {len(row)} fields, expected {len(SMI_FIELDS)}: {row}")
        v = dict(zip(SMI_FIELDS, (c.strip() for c in row), strict=True))
        driver = v["driver_version"]
        mem_mib = _int_or_none(v["memory.total"])
        bus_id = v["pci.bus_id"]
        gpus.append(
            {
                "index": int(v["index"]),
                "name": v["name"],
                "uuid": v["uuid"],
                "serial": None if v["serial"] in ("[N/A]", "N/A") else v["serial"],
                "pci_bus_id": bus_id,
                "pci_device_id": None,  # not queried: the GPU SKU is then recognised by its name
                "numa_node": pci_numa_node(bus_id),
                "memory_bytes": mem_mib * 1024 * 1024 if mem_mib is not None else None,
                "compute_capability": v["compute_cap"] or None,
                "pcie_gen_max": _int_or_none(v["pcie.link.gen.max"]),
                "pcie_width_max": _int_or_none(v["pcie.link.width.max"]),
                "pcie_gen_current": _int_or_none(v["pcie.link.gen.current"]),
                "pcie_width_current": _int_or_none(v["pcie.link.width.current"]),
            }
        )
    return {"gpu_source": "nvidia-smi", "driver_version": driver, "cuda_driver_version": None, "gpus": gpus}


def _smi_facts() -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        raise FileNotFoundError("nvidia-smi not found on PATH")
    out = subprocess.run(
        [smi, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"nvidia-smi exited {out.returncode}: {(out.stderr or out.stdout).strip()}")
    found = parse_nvidia_smi_csv(out.stdout)
    add_smi_q(found["gpus"], smi)
    return found


def add_smi_q(gpus: list[dict[str, Any]], smi: str) -> None:
    """Each GPU's configuration from ``nvidia-smi -q`` (the CSV query has no InfoROM objects); NVLink is not
    read there (``nvidia-smi -q`` lists no link states)."""
    out = subprocess.run([smi, "-q"], capture_output=True, text=True, timeout=120, env={**os.environ, "LC_ALL": "C"},
                         check=False)  # fmt: skip
    sections = parse_smi_q(out.stdout)["GPUs"] if out.returncode == 0 else {}
    by_bus = {bus.upper(): section for bus, section in sections.items()}
    for g in gpus:
        section = by_bus.get(str(g.get("pci_bus_id") or "").upper())
        g["config"] = gpuconfig.from_smi_q(section) if section else None
        g["pcie_counters"] = (pcie.from_smi_q(section, g.get("pci_bus_id")) if section else
                              pcie.reading(None, "nvidia-smi -q could not be read", g.get("pci_bus_id")))  # fmt: skip
        why = "not read: NVML could not be loaded (nvidia-smi fallback)"
        g["nvlink"] = {"supported": None, "why": why, "links": []}


def gather() -> dict[str, Any]:
    """Facts of this node. With no NVIDIA GPU, ``gpus`` is empty and ``gpu_error`` says why."""
    facts: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "numa_nodes": numa_nodes(),
        "gpu_source": None,
        "gpu_error": None,
        "driver_version": None,
        "cuda_driver_version": None,
        "gpus": [],
        # The InfiniBand / RoCE ports and their counters (gpuaccept.probe.fabric): the fabric check's counters
        # are judged from this reading before the suite to the one after it (node-facts-end.json).
        "fabric": fabric.read(),
        "gathered_unix": round(time.time(), 3),
    }
    errors = []
    for name, probe in (("NVML", _nvml_facts), ("nvidia-smi", _smi_facts)):
        try:
            found = probe()
        except Exception as err:
            errors.append(f"{name}: {err}")
            continue
        facts.update(found)
        if found["gpus"]:
            return facts
        errors.append(f"{name}: 0 GPUs")
    facts["gpu_error"] = "no NVIDIA GPU found (" + "; ".join(errors) + ")"
    return facts
