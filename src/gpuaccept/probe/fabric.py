"""The node's InfiniBand / RoCE fabric as the kernel shows it in sysfs (docs/checks/fabric.md): every HCA and port,
its state, physical state, rate and width, link layer, partition keys, every counter, the carrier changes of the
port's network device, and whether GPUDirect RDMA can be used.

The layout read is the one the Linux kernel documents in Documentation/ABI/stable/sysfs-class-infiniband (and, for
the per-port ``pkeys/`` table, Documentation/infiniband/sysfs.txt)::

    <sysfs>/class/infiniband/<hca>/node_type, fw_ver, device/numa_node, device/net/<netdev>/dev_port
    <sysfs>/class/infiniband/<hca>/ports/<n>/state        "4: ACTIVE"
                                          /phys_state   "5: LinkUp" ("2: Polling": no link to the switch)
                                          /rate         "400 Gb/sec (4X NDR)"
                                          /link_layer   "InfiniBand" or "Ethernet" (RoCE)
                                          /pkeys/<i>    "0xffff" (one file per P_Key table entry)
                                          /counters/<name>, hw_counters/<name>   integers
                                          /gid_attrs/ndevs/<i>                  the RoCE GID's net device
    <sysfs>/class/net/<netdev>/carrier_changes          (Documentation/ABI/testing/sysfs-class-net)

GPUDirect RDMA (the HCA reading and writing GPU memory) is decided from ``/proc/modules``: ``nvidia_peermem`` (or
the older ``nv_peer_mem``) loaded and Live. The DMA-BUF path (no peer-memory module; NVIDIA's open kernel module
and a kernel with DMA-BUF move-notify) leaves no sign in sysfs that says it works: it is shown only by a transfer,
so ``dmabuf`` here is null and the ib_write_bw runner (gpuaccept.probe.perftest) tries ``--use_cuda_dmabuf`` where
no peer-memory module is loaded and records whether it ran.

Read-only; every file that cannot be read is recorded with why, never as zero. Nothing here decides: the judge does
(gpuaccept.judge.fabric_rules). ``python -m gpuaccept.probe.fabric_doc snapshot --output F`` writes one reading as a
JSON document (atomically); ``... probe --output fabric.json`` the check's document (gpuaccept.probe.fabric_doc).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

SNAPSHOT_SCHEMA = "gpuaccept.fabric_snapshot/1"
#: The kernel modules that give GPUDirect RDMA through peer memory (NVIDIA's, and Mellanox's older one).
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
# "4: ACTIVE" -> (4, "ACTIVE"); "5: LinkUp" -> (5, "LinkUp").
_CODED_RE = re.compile(r"^\s*(\d+)\s*:\s*(\S.*?)\s*$")
# "400 Gb/sec (4X NDR)" -> 400, "4X", "NDR"; "2.5 Gb/sec (1X SDR)"; "100 Gb/sec (2X HDR)".
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\((\d+X)\s*([A-Za-z0-9]+)?\))?")


def _text(path: Path, unread: dict[str, str], key: str) -> str | None:
    """A sysfs file's text without its newline; None and why in ``unread`` where it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        unread[key] = "absent"
    except OSError as err:
        unread[key] = err.strerror or type(err).__name__
    return None


def parse_coded(text: str | None) -> tuple[int | None, str | None]:
    """``"4: ACTIVE"`` -> (4, "ACTIVE"); text without a code -> (None, text)."""
    if text is None:
        return None, None
    m = _CODED_RE.match(text)
    return (int(m.group(1)), m.group(2)) if m else (None, text or None)


def parse_rate(text: str | None) -> dict[str, Any]:
    """``"400 Gb/sec (4X NDR)"`` -> rate_gbps 400.0, width "4X", speed "NDR" (each None where absent)."""
    m = _RATE_RE.match(text or "")
    if not m:
        return {"rate_gbps": None, "width": None, "speed": None}
    return {"rate_gbps": float(m.group(1)), "width": m.group(2), "speed": m.group(3)}


def _counters(folder: Path, unread: dict[str, str], where: str) -> dict[str, int]:
    """Every counter file of ``counters/`` or ``hw_counters/`` as an integer (``lifespan``, the refresh period in
    ms that hw_counters holds beside its counters, is a setting and is left out)."""
    out: dict[str, int] = {}
    if not folder.is_dir():
        return out
    for f in sorted(folder.iterdir()):
        if f.name == "lifespan" or not f.is_file():
            continue
        text = _text(f, unread, f"{where}/{f.name}")
        if text is None:
            continue
        try:
            out[f.name] = int(text, 0)
        except ValueError:
            unread[f"{where}/{f.name}"] = f"not an integer: {text[:40]!r}"
    return out


def _pkeys(folder: Path, unread: dict[str, str]) -> list[str] | None:
    """The port's P_Key table, its non-empty entries (0x0000 is an empty slot) in index order, as "0x8001"."""
    if not folder.is_dir():
        unread["pkeys"] = "absent"
        return None
    entries: list[tuple[int, str]] = []
    for f in folder.iterdir():
        text = _text(f, unread, f"pkeys/{f.name}") if f.name.isdigit() else None
        if text is None:
            continue
        try:
            value = int(text, 16)
        except ValueError:
            unread[f"pkeys/{f.name}"] = f"not a P_Key: {text[:20]!r}"
            continue
        if value & 0x7FFF:
            entries.append((int(f.name), f"0x{value:04x}"))
    return [key for _, key in sorted(entries)]


def _netdev(hca: Path, port: Path, number: int) -> str | None:
    """The port's network device: the RoCE GID table's (``gid_attrs/ndevs/0``), else the HCA's PCI device's net
    device whose ``dev_port`` is this port's (0-based), else its only one (IPoIB on a one-port HCA)."""
    ndev = port / "gid_attrs" / "ndevs" / "0"
    try:
        name = ndev.read_text(encoding="utf-8").strip()
        if name:
            return name
    except OSError:
        pass
    nets = hca / "device" / "net"
    if not nets.is_dir():
        return None
    found = sorted(d.name for d in nets.iterdir())
    for name in found:
        try:
            if int((nets / name / "dev_port").read_text().strip()) == number - 1:
                return name
        except (OSError, ValueError):
            continue
    return found[0] if len(found) == 1 else None


def read_port(sysfs: Path, hca: Path, port: Path) -> dict[str, Any]:
    """One port's reading (the module's docstring lists the files)."""
    unread: dict[str, str] = {}
    number = int(port.name)
    state_code, state = parse_coded(_text(port / "state", unread, "state"))
    phys_code, phys = parse_coded(_text(port / "phys_state", unread, "phys_state"))
    rate_text = _text(port / "rate", unread, "rate")
    netdev = _netdev(hca, port, number)
    carrier = None
    if netdev:
        text = _text(sysfs / "class" / "net" / netdev / "carrier_changes", unread, "carrier_changes")
        carrier = int(text) if text is not None and text.isdigit() else None
    return {
        "port": number,
        "state": state,
        "state_code": state_code,
        "phys_state": phys,
        "phys_state_code": phys_code,
        "rate_text": rate_text,
        **parse_rate(rate_text),
        "link_layer": _text(port / "link_layer", unread, "link_layer"),
        "pkeys": _pkeys(port / "pkeys", unread),
        "counters": _counters(port / "counters", unread, "counters"),
        "hw_counters": _counters(port / "hw_counters", unread, "hw_counters"),
        "netdev": netdev,
        "carrier_changes": carrier,
        "unreadable": unread,
    }


def read_hca(sysfs: Path, hca: Path) -> dict[str, Any]:
    unread: dict[str, str] = {}
    numa = _text(hca / "device" / "numa_node", unread, "device/numa_node")
    ports_dir = hca / "ports"
    ports = sorted((p for p in ports_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)) if (
        ports_dir.is_dir()) else []  # fmt: skip
    return {
        "name": hca.name,
        "node_type": _text(hca / "node_type", unread, "node_type"),
        "fw_ver": _text(hca / "fw_ver", unread, "fw_ver"),
        "numa_node": int(numa) if numa is not None and re.fullmatch(r"-?\d+", numa) else None,
        "ports": [read_port(sysfs, hca, p) for p in ports],
        "unreadable": unread,
    }


def gpudirect(proc_modules: Path = Path("/proc/modules")) -> dict[str, Any]:
    """Whether a peer-memory module is loaded (``/proc/modules``: name, size, users, dependents, state Live)."""
    try:
        text = proc_modules.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        return {"peermem_module": None, "peermem": None, "dmabuf": None,
                "why": f"{proc_modules}: {err.strerror or type(err).__name__}"}  # fmt: skip
    live = {}
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] in PEERMEM_MODULES:
            live[fields[0]] = len(fields) < 5 or fields[4] == "Live"
    module = next((m for m in PEERMEM_MODULES if live.get(m)), None)
    return {
        "peermem_module": module,
        "peermem": module is not None,
        "dmabuf": None,
        "why": None if module else f"neither {' nor '.join(PEERMEM_MODULES)} is loaded (/proc/modules)",
    }


def read(sysfs: Path = Path("/sys"), proc_modules: Path = Path("/proc/modules")) -> dict[str, Any]:
    """The whole fabric: ``{"root_present", "why", "hcas": [...], "gpudirect": {...}, "gathered_unix"}``. Without
    ``<sysfs>/class/infiniband`` the node has no RDMA device (or its kernel no RDMA core): ``root_present`` false."""
    root = sysfs / "class" / "infiniband"
    out: dict[str, Any] = {"root_present": root.is_dir(), "why": None, "hcas": [],
                           "gpudirect": gpudirect(proc_modules), "gathered_unix": round(time.time(), 3)}  # fmt: skip
    if not out["root_present"]:
        out["why"] = f"no {root}: this node has no InfiniBand or RoCE HCA (or its kernel has no RDMA core loaded)"
        return out
    try:
        hcas = sorted(root.iterdir())
    except OSError as err:
        out["why"] = f"{root}: {err.strerror or type(err).__name__}"
        return out
    out["hcas"] = [read_hca(sysfs, h) for h in hcas]
    if not out["hcas"]:
        out["why"] = f"{root} is empty: no RDMA device registered"
    return out


def ports(reading: dict[str, Any] | None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(HCA, port) pairs of a reading, in order."""
    return [(h, p) for h in (reading or {}).get("hcas") or [] for p in h.get("ports") or []]
