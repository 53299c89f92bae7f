"""The health probe: is this node's GPU side healthy right now (docs/checks/health.md).

Two steps, each testable alone:
1. observe: read every GPU through NVML (``nvidia-smi -q`` where NVML cannot be loaded), with its NVLink links
   (gpuaccept.probe.nvlink) and configuration (gpuaccept.probe.gpuconfig), the PCIe link while a
   short host-to-device copy load runs (links train down at idle), the compute processes on the GPUs, and the
   NVIDIA XID lines of the kernel log since a given time (or why the kernel log could not be read);
2. write one gpuaccept.bench/1 document (``gpuaccept health --output health.json``) with the observations.

The judge (gpuaccept.judge.health_rules) turns the observations into findings against the node type's
``health:`` expectations; this module never decides pass or fail.

Read-only: nothing here changes a GPU setting (the load only copies memory).
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import os
import pwd
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gpuaccept.atomic import write_text_atomic
from gpuaccept.probe import document, gpuconfig, nvlink, pcie
from gpuaccept.probe.nvml import Nvml
from gpuaccept.probe.smi_q import parse_smi_q

# ------------------------------------------------------------------------------------------------
# The kernel log: NVIDIA XID events.

XID_RE = re.compile(r"NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})[^)]*\): (?P<xid>\d+),")
DMESG_TIME_RE = re.compile(r"^\[\s*(?P<secs>\d+\.\d+)\]")
UNIX_TIME_RE = re.compile(r"^(?P<epoch>\d{9,}\.\d+)\s")



def parse_since(text: str, now: float | None = None, boot: float | None = None) -> float:
    """``boot``, ``24h``/``30m``/``90s``/``2d`` ago, seconds since the epoch, or an ISO 8601 time -> epoch."""
    now = time.time() if now is None else now
    text = text.strip()
    if text == "boot":
        return boot_time() if boot is None else boot
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text)
    if m:
        return now - float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--xid-since {text!r}: give 'boot', a duration ago (24h, 30m, 2d), epoch seconds or an ISO 8601 time"
        ) from None
    return when.replace(tzinfo=when.tzinfo or dt.UTC).timestamp()


def boot_time(uptime: str | None = None, now: float | None = None) -> float:
    if uptime is None:
        uptime = Path("/proc/uptime").read_text(encoding="ascii")
    return (time.time() if now is None else now) - float(uptime.split()[0])


def line_time(line: str, boot: float) -> float | None:
    """A kernel-log line's time (epoch): ``dmesg``'s seconds since ``boot`` or ``journalctl -k -o short-unix``'s epoch
    seconds; None for a line without a time."""
    if t := DMESG_TIME_RE.match(line):
        return boot + float(t.group("secs"))
    if t := UNIX_TIME_RE.match(line):
        return float(t.group("epoch"))
    return None


def log_events(text: str, since: float, boot: float, pattern: re.Pattern[str],
               fields: Callable[[re.Match[str]], dict[str, Any]]) -> list[dict[str, Any]]:  # fmt: skip
    """The lines of kernel-log text that ``pattern`` finds, at or after ``since`` (epoch; a line without a time is
    kept: it cannot be excluded), each as its line number, time, ``fields`` of the match and the text from it."""
    events = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = pattern.search(line)
        if not m:
            continue
        when = line_time(line, boot)
        if when is not None and when < since:
            continue
        events.append({"line": lineno, "time_unix": when, **fields(m), "text": line[m.start() :].strip()})
    return events


def parse_xids(text: str, since: float, boot: float) -> list[dict[str, Any]]:
    """XID events in kernel-log text at or after ``since`` (epoch). Lines are ``dmesg`` (``[secs since boot]``)
    or ``journalctl -k -o short-unix`` (epoch seconds); a line without a time is kept (cannot be excluded)."""
    return log_events(text, since, boot, XID_RE, lambda m: {"pci": m.group("pci").lower(), "xid": int(m.group("xid"))})


# An NVSwitch error (an "SXid", NVIDIA's Fabric Manager User Guide): "nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 24007,
# Fatal, Link 44 ...".
SXID_RE = re.compile(r"SXid \(PCI:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})[^)]*\): (?P<sxid>\d+),"
                     r"\s*(?P<severity>Fatal|Non-fatal)?")


def parse_sxids(text: str, since: float, boot: float) -> list[dict[str, Any]]:
    """NVSwitch SXID events in kernel-log text at or after ``since``, timed as ``parse_xids`` times XID lines."""
    return log_events(text, since, boot, SXID_RE, lambda m: {"pci": m.group("pci").lower(),
                      "sxid": int(m.group("sxid")), "severity": m.group("severity")})  # fmt: skip


KERNEL_LOG_ENV = "GPUACCEPT_KERNEL_LOG"
KERNEL_LOG_HEADER = "# gpuaccept kernel log, read as root with:"


def read_kernel_log(since: float) -> tuple[str | None, str, list[str]]:
    """The kernel log as text, how it was read, and why other ways failed (None: unreadable).

    With ``GPUACCEPT_KERNEL_LOG`` set, only that file: the nightly unit runs the suite unprivileged, and a small
    root step (gpuaccept-kernel-log, before the suite) writes the kernel log there, its first line saying how."""
    env = {**os.environ, "LC_ALL": "C"}
    why = []
    given = os.environ.get(KERNEL_LOG_ENV)
    if given:
        try:
            text = Path(given).read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            return None, "", [f"{KERNEL_LOG_ENV}={given}: {err.strerror} (the unit's kernel-log step did not write it)"]
        first = text.split("\n", 1)[0]
        how = first.removeprefix(KERNEL_LOG_HEADER).strip() if first.startswith(KERNEL_LOG_HEADER) else "unknown"
        return text, f"{given} ({how})", why
    journalctl = shutil.which("journalctl")
    if journalctl:
        cmd = [journalctl, "-k", "-o", "short-unix", "--no-pager", "--since", f"@{int(since)}"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, check=False)
        if out.returncode == 0 and "No journal files were found" not in out.stderr:
            return out.stdout, "journalctl -k -o short-unix", why
        why.append(f"journalctl exited {out.returncode}: {out.stderr.strip()[:200]}")
    else:
        why.append("journalctl not found")
    dmesg = shutil.which("dmesg")
    if dmesg:
        out = subprocess.run([dmesg], capture_output=True, text=True, timeout=60, env=env, check=False)
        if out.returncode == 0:
            return out.stdout, "dmesg", why
        why.append(f"dmesg exited {out.returncode}: {out.stderr.strip()[:200]} (reading it may need root)")
    else:
        why.append("dmesg not found")
    return None, "", why


# ------------------------------------------------------------------------------------------------
# Processes.


def process_info(pid: int, proc: Path = Path("/proc")) -> dict[str, Any]:
    """Pid, user and executable name of a process (None where /proc does not say: another PID namespace).

    Never its command line: another user's arguments may carry a secret (``--api-key=...``), and what the probe
    finds lands in result files. The name is the executable's file name, or the kernel's ``comm`` when the
    executable link is not readable (another user's process, read without privilege)."""
    info: dict[str, Any] = {"pid": pid, "user": None, "name": None}
    try:
        for line in (proc / str(pid) / "status").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Uid:"):
                uid = int(line.split()[1])
                try:
                    info["user"] = pwd.getpwuid(uid).pw_name
                except KeyError:
                    info["user"] = str(uid)
    except OSError:
        return info
    try:
        exe = os.readlink(proc / str(pid) / "exe")
        info["name"] = os.path.basename(exe.removesuffix(" (deleted)")) or None
    except OSError:
        try:
            info["name"] = (proc / str(pid) / "comm").read_text(encoding="utf-8", errors="replace").strip() or None
        except OSError:
            pass
    return info


# ------------------------------------------------------------------------------------------------
# A PCIe load: host-to-device copies through the CUDA driver API (libcuda, part of every driver install).


class CudaLoad:
    """Copies a pinned host buffer to every GPU in a loop, one thread per GPU, until stopped."""

    def __init__(self, nbytes: int = 64 << 20) -> None:
        self.nbytes = nbytes
        self.errors: list[str] = []
        self.copies = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self._check(self.cuda.cuInit(0), "cuInit")
        count = ctypes.c_int()
        self._check(self.cuda.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        self.devices = count.value

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise OSError(f"{what} failed with CUDA error {rc}")

    def _worker(self, ordinal: int) -> None:
        cu = self.cuda
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        dptr, hptr = ctypes.c_uint64(), ctypes.c_void_p()
        try:
            self._check(cu.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
            self._check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            self._check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            self._check(cu.cuMemAlloc_v2(ctypes.byref(dptr), ctypes.c_size_t(self.nbytes)), "cuMemAlloc")
            self._check(cu.cuMemAllocHost_v2(ctypes.byref(hptr), ctypes.c_size_t(self.nbytes)), "cuMemAllocHost")
            while not self._stop.is_set():
                self._check(cu.cuMemcpyHtoD_v2(dptr, hptr, ctypes.c_size_t(self.nbytes)), "cuMemcpyHtoD")
                self.copies += 1
        except OSError as err:
            self.errors.append(f"CUDA device {ordinal}: {err}")
        finally:
            if hptr.value:
                cu.cuMemFreeHost(hptr)
            if dptr.value:
                cu.cuMemFree_v2(dptr)
            if ctx.value:
                cu.cuDevicePrimaryCtxRelease_v2(dev)

    @contextlib.contextmanager
    def running(self, warmup_s: float = 0.5) -> Iterator[CudaLoad]:
        self._threads = [threading.Thread(target=self._worker, args=(i,), daemon=True) for i in range(self.devices)]
        for t in self._threads:
            t.start()
        time.sleep(warmup_s)
        try:
            yield self
        finally:
            self._stop.set()
            for t in self._threads:
                t.join(timeout=30)


# ------------------------------------------------------------------------------------------------
# Observing through NVML.


def observe_nvml(load_s: float = 1.0, exempt_pids: set[int] | None = None) -> dict[str, Any]:
    """Every GPU's health readings through NVML; the PCIe link is read during a copy load of ``load_s``."""
    exempt = {os.getpid(), *(exempt_pids or set())}
    with Nvml() as nv:
        n, opt = nv.lib, nv.optional
        driver, cuda = nv.versions()
        obs: dict[str, Any] = {"source": "nvml", "driver_version": driver, "cuda_version": cuda, "gpus": []}
        handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(n.nvmlDeviceGetCount())]
        for i, h in enumerate(handles):
            bus = opt(lambda h=h: n.nvmlDeviceGetPciInfo(h).busId)
            ecc = opt(n.nvmlDeviceGetEccMode, h)
            remap = opt(n.nvmlDeviceGetRemappedRows, h)
            sbe = opt(n.nvmlDeviceGetRetiredPages, h, n.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
            dbe = opt(n.nvmlDeviceGetRetiredPages, h, n.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
            pending_pages = opt(n.nvmlDeviceGetRetiredPagesPendingStatus, h)
            links = nvlink.read_gpu(nv, h)
            nvlink_links, nvlink_up = nvlink.summary(links)
            procs = opt(n.nvmlDeviceGetComputeRunningProcesses, h) or []
            persistence = opt(n.nvmlDeviceGetPersistenceMode, h)
            util = opt(n.nvmlDeviceGetUtilizationRates, h)
            power_mw = opt(n.nvmlDeviceGetPowerUsage, h)
            bus_id = bus.decode() if isinstance(bus, bytes) else bus
            obs["gpus"].append(
                {
                    "index": i,
                    "name": opt(n.nvmlDeviceGetName, h),
                    "uuid": opt(n.nvmlDeviceGetUUID, h),
                    "serial": opt(n.nvmlDeviceGetSerial, h),
                    "pci_bus_id": bus.decode() if isinstance(bus, bytes) else bus,
                    "pcie_gen_max": opt(n.nvmlDeviceGetMaxPcieLinkGeneration, h),
                    "pcie_width_max": opt(n.nvmlDeviceGetMaxPcieLinkWidth, h),
                    "pcie_gen_idle": opt(n.nvmlDeviceGetCurrPcieLinkGeneration, h),
                    "pcie_width_idle": opt(n.nvmlDeviceGetCurrPcieLinkWidth, h),
                    "ecc_enabled": None if ecc is None else bool(ecc[0]),
                    "ecc_pending_enabled": None if ecc is None else bool(ecc[1]),
                    "ecc_uncorrectable_volatile": opt(
                        n.nvmlDeviceGetTotalEccErrors, h, n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, n.NVML_VOLATILE_ECC
                    ),
                    "ecc_uncorrectable_aggregate": opt(
                        n.nvmlDeviceGetTotalEccErrors, h, n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, n.NVML_AGGREGATE_ECC
                    ),
                    "remapped_rows": None
                    if remap is None
                    else {
                        "correctable": remap[0],
                        "uncorrectable": remap[1],
                        "pending": bool(remap[2]),
                        "failure": bool(remap[3]),
                    },
                    "retired_pages": None
                    if sbe is None and dbe is None
                    else {
                        "single_bit": len(sbe or []),
                        "double_bit": len(dbe or []),
                        "pending": None if pending_pages is None else bool(pending_pages),
                    },
                    "persistence_mode": None if persistence is None else bool(persistence),
                    "nvlink_links": nvlink_links,
                    "nvlink_up": nvlink_up,
                    "nvlink": links,
                    "config": gpuconfig.from_nvml(nv, h),
                    "pcie_counters": pcie.from_nvml(nv, h, bus_id),
                    "utilization_gpu_pct": None if util is None else util.gpu,
                    "power_w": None if power_mw is None else round(power_mw / 1000.0, 2),
                    "processes": [
                        {**process_info(p.pid), "used_memory_bytes": p.usedGpuMemory}
                        for p in procs
                        if p.pid not in exempt
                    ],
                }
            )
        obs["pcie_load"] = _loaded_links(
            load_s,
            lambda: [
                (opt(n.nvmlDeviceGetCurrPcieLinkGeneration, h), opt(n.nvmlDeviceGetCurrPcieLinkWidth, h))
                for h in handles
            ],
            obs["gpus"],
        )
        return obs


def _loaded_links(load_s: float, read, gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the copy load, read the links a few times, keep each GPU's best reading."""
    info: dict[str, Any] = {"seconds": load_s, "ran": False, "error": None, "copies": 0}
    for g in gpus:
        g["pcie_gen_loaded"], g["pcie_width_loaded"] = None, None
    if load_s <= 0:
        info["error"] = "no load asked for (--load-s 0)"
        return info
    try:
        load = CudaLoad()
    except OSError as err:
        info["error"] = f"cannot load the GPUs through libcuda: {err}"
        return info
    with load.running():
        end = time.monotonic() + load_s
        while True:
            for g, (gen, width) in zip(gpus, read(), strict=True):
                if gen is not None and (g["pcie_gen_loaded"] is None or gen > g["pcie_gen_loaded"]):
                    g["pcie_gen_loaded"] = gen
                if width is not None and (g["pcie_width_loaded"] is None or width > g["pcie_width_loaded"]):
                    g["pcie_width_loaded"] = width
            if time.monotonic() >= end:
                break
            time.sleep(0.1)
    info.update(ran=not load.errors, error="; ".join(load.errors) or None, copies=load.copies)
    return info


# ------------------------------------------------------------------------------------------------
# Observing through nvidia-smi -q (fallback; also what the tests feed recorded outputs through).


def _int(value: Any) -> int | None:
    if value is None:
        return None
    m = re.match(r"^\s*(\d+)", str(value))
    return int(m.group(1)) if m else None


def _flag(value: Any, yes: str) -> bool | None:
    if value is None or str(value).strip() in ("N/A", "[N/A]", "Unknown"):
        return None
    return str(value).strip() == yes


def observe_smi_q(text: str, loaded_text: str | None = None) -> dict[str, Any]:
    """Observations from ``nvidia-smi -q`` output; ``loaded_text``: the same taken during a load (PCIe)."""
    q = parse_smi_q(text)
    loaded = parse_smi_q(loaded_text)["GPUs"] if loaded_text else {}
    obs: dict[str, Any] = {
        "source": "nvidia-smi -q",
        "driver_version": q.get("Driver Version"),
        "cuda_version": q.get("CUDA Version"),
        "gpus": [],
    }
    for index, (bus, g) in enumerate(q["GPUs"].items()):
        link = g.get("PCI", {}).get("GPU Link Info", {})
        gen, width = link.get("PCIe Generation", {}), link.get("Link Width", {})
        lg = loaded.get(bus, {}).get("PCI", {}).get("GPU Link Info", {})
        ecc = g.get("ECC Errors", {})
        remap = g.get("Remapped Rows", {})
        retired = g.get("Retired Pages", {})
        nums = [_int(v) for v in (retired.get("Single Bit ECC"), retired.get("Double Bit ECC"))]
        procs = []
        listed = g.get("Processes")
        for key, value in listed.items() if isinstance(listed, dict) else []:
            if key.startswith("Process ID") and _int(value) is not None:
                procs.append({**process_info(int(value)), "used_memory_bytes": None})  # type: ignore[arg-type]
        obs["gpus"].append(
            {
                "index": index,  # nvidia-smi lists GPUs in index order; the minor number may differ
                "name": g.get("Product Name"),
                "uuid": g.get("GPU UUID"),
                "serial": g.get("Serial Number") if g.get("Serial Number") not in (None, "N/A") else None,
                "pci_bus_id": bus,
                "pcie_gen_max": _int(gen.get("Max")),
                "pcie_width_max": _int(width.get("Max")),
                "pcie_gen_idle": _int(gen.get("Current")),
                "pcie_width_idle": _int(width.get("Current")),
                "pcie_gen_loaded": _int(lg.get("PCIe Generation", {}).get("Current")) if lg else None,
                "pcie_width_loaded": _int(lg.get("Link Width", {}).get("Current")) if lg else None,
                "ecc_enabled": _flag(g.get("ECC Mode", {}).get("Current"), "Enabled"),
                "ecc_pending_enabled": _flag(g.get("ECC Mode", {}).get("Pending"), "Enabled"),
                "ecc_uncorrectable_volatile": _sum_uncorrectable(ecc.get("Volatile", {})),
                "ecc_uncorrectable_aggregate": _sum_uncorrectable(ecc.get("Aggregate", {})),
                "remapped_rows": None
                if not remap or _int(remap.get("Uncorrectable Error")) is None
                else {
                    "correctable": _int(remap.get("Correctable Error")),
                    "uncorrectable": _int(remap.get("Uncorrectable Error")),
                    "pending": _flag(remap.get("Pending"), "Yes"),
                    "failure": _flag(remap.get("Remapping Failure Occurred"), "Yes"),
                },
                "retired_pages": None
                if all(v is None for v in nums)
                else {
                    "single_bit": nums[0] or 0,
                    "double_bit": nums[1] or 0,
                    "pending": _flag(retired.get("Pending Page Blacklist"), "Yes"),
                },
                "persistence_mode": _flag(g.get("Persistence Mode"), "Enabled"),
                "nvlink_links": None,
                "nvlink_up": None,
                "nvlink": None,  # nvidia-smi -q lists no NVLink link states
                "config": gpuconfig.from_smi_q(g),
                "pcie_counters": pcie.from_smi_q(g, bus),
                "utilization_gpu_pct": _int((g.get("Utilization") or {}).get("GPU"))
                if isinstance(g.get("Utilization"), dict) else None,
                "power_w": _watts(g),
                "processes": procs,
            }
        )
    obs["pcie_load"] = {"ran": bool(loaded_text), "error": None if loaded_text else "no reading under load"}
    return obs


def _watts(g: dict[str, Any]) -> float | None:
    """The power draw of one GPU's ``nvidia-smi -q`` section (``GPU Power Readings``, ``Power Readings`` before
    driver 535)."""
    power = g.get("GPU Power Readings") or g.get("Power Readings") or {}
    draw = power.get("Power Draw") or power.get("Instantaneous Power Draw") or ""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*W", str(draw))
    return float(m.group(1)) if m else None


def _sum_uncorrectable(section: dict[str, Any]) -> int | None:
    values = [_int(v) for k, v in section.items() if "Uncorrectable" in k or k == "Double Bit"]
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def observe_smi(load_s: float, exempt_pids: set[int] | None = None) -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        raise FileNotFoundError("nvidia-smi not found on PATH")
    env = {**os.environ, "LC_ALL": "C"}

    def query() -> str:
        out = subprocess.run([smi, "-q"], capture_output=True, text=True, timeout=120, env=env, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"nvidia-smi -q exited {out.returncode}: {(out.stderr or out.stdout).strip()[:300]}")
        return out.stdout

    idle = query()
    loaded, error = None, None
    try:
        load = CudaLoad()
        with load.running():
            loaded = query()
    except OSError as err:
        error = f"cannot load the GPUs through libcuda: {err}"
    obs = observe_smi_q(idle, loaded)
    exempt = {os.getpid(), *(exempt_pids or set())}
    for g in obs["gpus"]:
        g["processes"] = [p for p in g["processes"] if p["pid"] not in exempt]
    if error:
        obs["pcie_load"] = {"ran": False, "error": error}
    return obs


def observe(load_s: float = 1.0, exempt_pids: set[int] | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """NVML, else nvidia-smi -q; (None, reasons) when neither can read the GPUs."""
    why = []
    for name, fn in (("NVML", observe_nvml), ("nvidia-smi", observe_smi)):
        try:
            return fn(load_s, exempt_pids), why
        except Exception as err:  # NVML raises its own types; ImportError/OSError without a driver
            why.append(f"{name}: {err}")
    return None, why


def metrics_of(obs: dict[str, Any] | None, xids: list[dict[str, Any]] | None) -> tuple[dict, dict]:
    """The document's metrics and waived metrics (docs/checks/health.md): what was measured. The findings and
    their count are the judge's (gpuaccept.judge.health_rules), made from the observations."""
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    gpus = (obs or {}).get("gpus") or []

    def put(name: str, value: float, unit: str, better: str, description: str) -> None:
        metrics[name] = {"value": value, "unit": unit, "better": better, "description": description}

    gens = [g.get("pcie_gen_loaded") for g in gpus]
    widths = [g.get("pcie_width_loaded") for g in gpus]
    if gpus and all(v is not None for v in gens + widths):
        put("pcie_gen_min", min(gens), "count", "higher", "min over GPUs of the PCIe generation under a copy load")
        put("pcie_width_min", min(widths), "count", "higher", "min over GPUs of the PCIe link width under a copy load")
    else:
        why = ((obs or {}).get("pcie_load") or {}).get("error") or "no GPU read"
        waived["pcie_gen_min"] = waived["pcie_width_min"] = f"PCIe link not measured under load: {why}"
    readings = [g.get("nvlink") for g in gpus]
    if not gpus:
        waived["nvlink_links_up_min"] = "no GPU read"
    elif not all(isinstance(r, dict) for r in readings):
        waived["nvlink_links_up_min"] = "NVLink not read: nvidia-smi -q lists no link states (NVML could not be loaded)"
    elif any(r.get("supported") for r in readings):
        ups = [nvlink.summary(r)[1] or 0 for r in readings]
        put("nvlink_links_up_min", min(ups), "count", "higher", "min over GPUs of the NVLink links up")
    else:
        whys = sorted({str(r.get("why")) for r in readings})
        waived["nvlink_links_up_min"] = "no NVLink on this node: " + "; ".join(whys)
    if xids is not None:
        put("xid_events", len(xids), "count", "lower", "NVIDIA XID lines in the kernel log since --xid-since")
    else:
        waived["xid_events"] = "kernel log unreadable"
    return metrics, waived


def bus_prefix(bus_id: str | None) -> str:
    """NVML's "00000000:2A:00.0" and the XID line's "0000:2a:00" as one key: "0000:2a:00"."""
    if not bus_id or ":" not in bus_id:
        return ""
    domain, _, rest = bus_id.partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest.split('.')[0].lower()}"
    except ValueError:
        return ""


def gpu_rows(obs: dict[str, Any] | None, xids: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Each GPU's own health figures: its PCIe link under the load, its NVLink links up (0 where it has none, as
    ``metrics_of`` counts them) and the XID events that name its bus."""
    rows = []
    for g in (obs or {}).get("gpus") or []:
        mine = None if xids is None else sum(e["pci"] == bus_prefix(g.get("pci_bus_id")) for e in xids)
        reading = g.get("nvlink")
        links_up = (nvlink.summary(reading)[1] or 0) if isinstance(reading, dict) else None
        rows.append({"gpu": g.get("index"), "pcie_gen": g.get("pcie_gen_loaded"),
                     "pcie_width": g.get("pcie_width_loaded"), "nvlink_links_up": links_up,
                     "xid_events": mine})  # fmt: skip
    return rows


# The per-GPU metrics of the health probe and each GPU's figure in gpu_rows (the metric is their min, or for XID
# events the count of the node's, those on a PCI device that is no GPU of the node included).
GPU_FIGURES = {
    "pcie_gen_min": ("pcie_gen", "count", "higher"),
    "pcie_width_min": ("pcie_width", "count", "higher"),
    "nvlink_links_up_min": ("nvlink_links_up", "count", "higher"),
    "xid_events": ("xid_events", "count", "lower"),
}

# ------------------------------------------------------------------------------------------------
# The document and the command.

TOOL = "gpuaccept-health"
EXIT_OK, EXIT_ERROR = 0, 1
KERNEL_LOG_FIX = (
    "under the nightly unit, its root step gpuaccept-kernel-log writes the log to $GPUACCEPT_KERNEL_LOG (see its "
    "journal); elsewhere run the probe as root, or give its user CAP_SYSLOG, or set kernel.dmesg_restrict=0, or add "
    "the user to the systemd-journal group"
)


def probe(
    expected_gpus: int | None,
    xid_since: str,
    load_s: float,
    exempt_pids: set[int],
    argv: list[str],
) -> tuple[dict[str, Any], int]:
    """Observe and build the document; returns it and the exit status (0 read, 1 the GPUs could not be read).
    Nothing here judges: the observations go to the judge (gpuaccept.judge.health_rules)."""
    t0, started = time.monotonic(), document.utc_iso()
    since = parse_since(xid_since)
    errors: list[str] = []
    obs, why = observe(load_s, exempt_pids)
    if obs is None:
        errors.append("cannot read the GPUs (" + "; ".join(why) + ")")
    log, how, log_why = read_kernel_log(since)
    xids = None if log is None else parse_xids(log, since, boot_time())
    metrics, waived = metrics_of(obs, xids)
    if obs is None:
        metrics = {k: v for k, v in metrics.items() if k == "xid_events"}
        for m in ("pcie_gen_min", "pcie_width_min"):
            waived[m] = errors[0]
    gpus = (obs or {}).get("gpus") or []
    sxids = None if log is None else parse_sxids(log, since, boot_time())
    kernel_log: dict[str, Any] = {"read_with": how or None, "xid_events": xids, "sxid_events": sxids}
    if log is None:
        kernel_log.update(unreadable="; ".join(log_why) or "no reader found", fix=KERNEL_LOG_FIX)
    timing = (
        f"one reading of each GPU; the PCIe link read every 0.1 s during a {load_s:g} s host-to-device copy load, "
        "the highest reading kept"
    )
    doc = {
        **document.header(TOOL, argv, started, timing, time.monotonic() - t0),
        "cuda": {
            "driver_version": None,
            "runtime_version": None,
            "driver_release": (obs or {}).get("driver_version"),
        },
        "devices": [{k: g.get(k) for k in ("index", "name", "pci_bus_id", "uuid", "serial")} for g in gpus],
        "parameters": {
            "expected_gpus": expected_gpus,
            "xid_since": xid_since,
            "xid_since_unix": since,
            "load_s": load_s,
        },
        "results": {"observations": obs, "kernel_log": kernel_log},
        "metrics": metrics,
        "gpu_metrics": document.gpu_metrics(gpu_rows(obs, xids), metrics, GPU_FIGURES),
        "waived": waived,
        # What the probe itself can verify: that it read every GPU. The health rules are the judge's.
        "verification": {"passed": obs is not None, "checked": len(gpus), "failures": list(errors)},
        "errors": errors,
    }
    return doc, EXIT_ERROR if obs is None else EXIT_OK


def run(args: Any, argv: list[str]) -> tuple[dict[str, Any], int]:
    """``gpuaccept health``: probe, write the document; the caller judges it (cli_probes.cmd_health)."""
    load_s = args.load_s if args.load_s is not None else (0.5 if args.quick else 1.0)
    if not 0 <= load_s <= 60:
        raise ValueError(f"--load-s {load_s}: must be between 0 and 60 seconds")
    parse_since(args.xid_since)  # a bad --xid-since is a bad command line, before anything runs
    doc, status = probe(args.expected_gpus, args.xid_since, load_s, set(args.exempt_pid or []), argv)
    write_text_atomic(args.output, document.dumps(doc, indent=1))
    for e in doc["errors"]:
        print(f"error: {e}")
    kernel_log = doc["results"]["kernel_log"]
    if kernel_log.get("unreadable"):
        print(f"note: kernel log unreadable ({kernel_log['unreadable']}): XID events not checked; {KERNEL_LOG_FIX}")
    print(f"{TOOL}: {len(doc['devices'])} GPUs read -> {args.output}")
    return doc, status
