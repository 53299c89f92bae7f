"""Each GPU's PCIe error counters (docs/checks/health.md, "PCIe counters"): the replay counter NVML keeps
(``nvmlDeviceGetPcieReplayCounter``; ``Replays Since Reset`` in ``nvidia-smi -q``: a TLP the link sent again after
an error) and the Linux AER counters of the GPU's PCI function, where the kernel exposes them
(``/sys/bus/pci/devices/<bus id>/aer_dev_correctable``, ``aer_dev_nonfatal``, ``aer_dev_fatal``).

Read-only. A counter that cannot be read is None with the reason beside it (``replay_why``, ``aer_why``), never 0:
a VM without AER files, a driver that does not answer. The judge compares two readings
(gpuaccept.judge.pcie_rules).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

#: The AER count files of a PCI function and the line holding their total (Linux, drivers/pci/pcie/aer.c).
AER_FILES = {
    "correctable": ("aer_dev_correctable", "TOTAL_ERR_COR"),
    "nonfatal": ("aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
    "fatal": ("aer_dev_fatal", "TOTAL_ERR_FATAL"),
}
#: Where the PCI functions are (a test points it at a tree it built in the kernel's layout).
SYSFS_ENV = "GPUACCEPT_SYSFS_PCI_DEVICES"


def sysfs_root() -> Path:
    return Path(os.environ.get(SYSFS_ENV) or "/sys/bus/pci/devices")


def sysfs_name(bus_id: str) -> str:
    """NVML's "00000000:2A:00.0" as sysfs names the function: "0000:2a:00.0"."""
    domain, _, rest = bus_id.strip().partition(":")
    return f"{int(domain, 16):04x}:{rest.lower()}"


def _total(text: str, total_key: str) -> int | None:
    """The total of one AER file: its TOTAL_ line, else the sum of its per-error lines."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\s*(\S+)\s+(\d+)\s*", line)
        if m:
            values[m.group(1)] = int(m.group(2))
    if total_key in values:
        return values[total_key]
    return sum(values.values()) if values else None


def read_aer(bus_id: str | None, root: Path | None = None) -> tuple[dict[str, int] | None, str | None]:
    """(the AER totals by severity, None) or (None, why not)."""
    if not bus_id:
        return None, "no PCI bus id"
    try:
        device = (root or sysfs_root()) / sysfs_name(bus_id)
    except ValueError:
        return None, f"PCI bus id {bus_id!r} not understood"
    if not device.exists():
        return None, f"{device} does not exist (no such PCI function seen by this kernel)"
    counts: dict[str, int] = {}
    for severity, (name, total_key) in AER_FILES.items():
        try:
            value = _total((device / name).read_text(encoding="ascii", errors="replace"), total_key)
        except OSError as err:
            return None, f"{device / name}: {err.strerror} (the kernel exposes no AER counters here)"
        if value is None:
            return None, f"{device / name}: no count in it"
        counts[severity] = value
    return counts, None


def reading(replay: int | None, replay_why: str | None, bus_id: str | None) -> dict[str, Any]:
    """One GPU's ``pcie_counters``: the replay counter (or why not) and the AER totals (or why not)."""
    aer, aer_why = read_aer(bus_id)
    return {"replay": replay, "replay_why": None if replay is not None else replay_why or "not read",
            "aer": aer, "aer_why": aer_why}  # fmt: skip


def from_nvml(nv: Any, handle: Any, bus_id: str | None) -> dict[str, Any]:
    value, why = nv.call("nvmlDeviceGetPcieReplayCounter", handle)
    return reading(None if value is None else int(value), why, bus_id)


def from_smi_q(section: dict[str, Any], bus_id: str | None) -> dict[str, Any]:
    """From one GPU's ``nvidia-smi -q`` section (gpuaccept.probe.smi_q.parse_smi_q): ``PCI`` / ``Replays Since
    Reset``."""
    raw = (section.get("PCI") or {}).get("Replays Since Reset") if isinstance(section.get("PCI"), dict) else None
    m = re.match(r"^\s*(\d+)\s*$", str(raw)) if raw is not None else None
    why = None if m else f"nvidia-smi -q: Replays Since Reset is {raw or 'absent'}"
    return reading(int(m.group(1)) if m else None, why, bus_id)
