"""The burn-in's sampler: every GPU read through NVML about once a second while the load runs
(docs/checks/burnin.md). Per sample: SM and memory clocks, GPU and memory (HBM) temperature, power, the clock-event
(throttle) reasons, the volatile ECC counts, the remapped rows (pending, failure, uncorrectable), and the NVLink
error counts summed over the GPU's links; per GPU once: the temperature thresholds, the power limit, and each
NVLink link's error counters at the start and the end. Beside the samples: XID events as NVML raises them (an
event set of ``nvmlEventTypeXidCriticalError``), and every compute process on a GPU that the burn-in did not
start.

Read-only: nothing here changes a GPU setting. The session is gpuaccept.probe.nvml's (tests give a stand-in).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept.probe import burnin_timeline
from gpuaccept.probe.health import process_info

# NVML field ids read in one call per GPU and sample (nvmlDeviceGetFieldValues): memory temperature, and the NVLink
# error counts summed over the GPU's links. Names as pynvml spells them; a field NVML does not know here is None.
FIELDS = (
    ("mem_temp_c", "NVML_FI_DEV_MEMORY_TEMP"),
    ("nvlink_crc_flit", "NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"),
    ("nvlink_crc_data", "NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"),
    ("nvlink_replay", "NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"),
    ("nvlink_recovery", "NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"),
)
# Each NVLink link's counters at the start and the end (nvmlDeviceGetNvLinkErrorCounter).
LINK_COUNTERS = (
    ("crc_flit", "NVML_NVLINK_ERROR_DL_CRC_FLIT"),
    ("crc_data", "NVML_NVLINK_ERROR_DL_CRC_DATA"),
    ("replay", "NVML_NVLINK_ERROR_DL_REPLAY"),
    ("recovery", "NVML_NVLINK_ERROR_DL_RECOVERY"),
)
# Temperature thresholds (nvmlDeviceGetTemperatureThreshold): the GPU's slowdown, shutdown and maximum operating
# temperatures, and the memory's maximum operating temperature (where HBM slows down).
THRESHOLDS = (
    ("gpu_slowdown_c", "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN"),
    ("gpu_shutdown_c", "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN"),
    ("gpu_max_operating_c", "NVML_TEMPERATURE_THRESHOLD_GPU_MAX"),
    ("memory_max_operating_c", "NVML_TEMPERATURE_THRESHOLD_MEM_MAX"),
)
XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
NVML_ERROR_TIMEOUT = 10
XID_WAIT_MS = 500


# nvmlValue_t's member for each nvmlValueType_t (double, unsigned int, unsigned long, unsigned long long, signed
# long long, signed int, unsigned short).
_VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def _field_value(fv: Any) -> float | int | None:
    """One nvmlFieldValue_t's value by its type; None where NVML returned an error for the field."""
    if getattr(fv, "nvmlReturn", 1) != 0:
        return None
    member = _VALUE_MEMBERS.get(getattr(fv, "valueType", None))
    return getattr(fv.value, member, None) if member else None


def descendants(root: int, proc: Path = Path("/proc")) -> set[int]:
    """Every process below ``root`` (its children, theirs, ...), read from /proc's PPid lines."""
    parents: dict[int, int] = {}
    try:
        entries = [p for p in proc.iterdir() if p.name.isdigit()]
    except OSError:
        return set()
    for p in entries:
        try:
            for line in (p / "status").read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("PPid:"):
                    parents[int(p.name)] = int(line.split()[1])
                    break
        except (OSError, ValueError):
            continue
    out, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier and pid not in out}
        out |= frontier
    return out


@dataclass
class Foreign:
    """A compute process the burn-in did not start, seen on a GPU from ``first_s`` to ``last_s``."""

    gpu: int
    pid: int
    first_s: float
    last_s: float
    user: str | None = None
    name: str | None = None
    used_memory_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "user": self.user,
            "name": self.name,
            "first_s": round(self.first_s, 3),
            "last_s": round(self.last_s, 3),
            "used_memory_bytes": self.used_memory_bytes,
        }


@dataclass
class GpuState:
    """What the sampler holds of one GPU: its fixed facts, its timeline, its NVLink links' counters."""

    index: int
    handle: Any
    facts: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, list[Any]] = field(default_factory=burnin_timeline.empty)
    links: list[int] = field(default_factory=list)
    link_errors_start: dict[str, dict[str, int | None]] = field(default_factory=dict)
    link_errors_end: dict[str, dict[str, int | None]] = field(default_factory=dict)


class Sampler:
    """Reads every GPU of ``session`` (an open gpuaccept.probe.nvml.Nvml) every ``interval`` seconds in a thread,
    and watches for XID events in another. ``ours`` gives the processes the burn-in started (their compute
    contexts are no foreign process); ``exempt`` names more (a monitoring agent)."""

    def __init__(
        self,
        session: Any,
        interval: float = 1.0,
        exempt: set[int] | None = None,
        ours: Callable[[], set[int]] | None = None,
    ) -> None:
        self.session = session
        self.nv = session.lib
        self.interval = interval
        self.exempt = {os.getpid(), *(exempt or set())}
        self.ours = ours or (lambda: descendants(os.getpid()))
        self.errors: list[str] = []
        self.xid_events: list[dict[str, Any]] = []
        self.xid_source: str | None = None  # "nvml_events" when every GPU raises XID events to the event set
        self.xid_why_not: str = ""
        self.foreign: dict[tuple[int, int], Foreign] = {}
        self.samples = 0
        self._fields = [(name, getattr(self.nv, fid, None)) for name, fid in FIELDS]
        self._reasons_fn = getattr(self.nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            self.nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        self.gpus = [GpuState(i, h) for i, h in enumerate(session.handles())]
        for g in self.gpus:
            g.facts = self._facts(g)
            g.links = self._active_links(g.handle)
            g.link_errors_start = self._link_errors(g)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._event_set: Any = None
        self._t0 = 0.0

    # -- what NVML says once per GPU

    def _opt(self, fn: Any, *args: Any) -> Any:
        return None if fn is None else self.session.optional(fn, *args)

    def _facts(self, g: GpuState) -> dict[str, Any]:
        n, h = self.nv, g.handle
        bus = self._opt(lambda: n.nvmlDeviceGetPciInfo(h).busId)
        limit = self._opt(n.nvmlDeviceGetEnforcedPowerLimit, h)
        thresholds = {
            key: self._opt(n.nvmlDeviceGetTemperatureThreshold, h, getattr(n, const)) if hasattr(n, const) else None
            for key, const in THRESHOLDS
        }
        return {
            "index": g.index,
            "name": self._opt(n.nvmlDeviceGetName, h),
            "uuid": self._opt(n.nvmlDeviceGetUUID, h),
            "serial": self._opt(n.nvmlDeviceGetSerial, h),
            "pci_bus_id": bus.decode() if isinstance(bus, bytes) else bus,
            "power_limit_w": None if limit is None else limit / 1000.0,
            "thresholds_c": thresholds,
        }

    def _active_links(self, h: Any) -> list[int]:
        n = self.nv
        count = getattr(n, "NVML_NVLINK_MAX_LINKS", 0)
        return [link for link in range(count) if self._opt(n.nvmlDeviceGetNvLinkState, h, link)]

    def _link_errors(self, g: GpuState) -> dict[str, dict[str, int | None]]:
        n = self.nv
        fn = getattr(n, "nvmlDeviceGetNvLinkErrorCounter", None)
        return {
            str(link): {key: self._opt(fn, g.handle, link, getattr(n, const, None)) for key, const in LINK_COUNTERS}
            for link in g.links
        }

    # -- one sample of one GPU

    def _field_values(self, h: Any) -> dict[str, Any]:
        known = [(name, fid) for name, fid in self._fields if fid is not None]
        out: dict[str, Any] = {name: None for name, _ in self._fields}
        if not known:
            return out
        values = self._opt(self.nv.nvmlDeviceGetFieldValues, h, [fid for _, fid in known])
        if values is None:
            return out
        for (name, _), fv in zip(known, values, strict=False):
            out[name] = _field_value(fv)
        return out

    def read(self, g: GpuState, t_s: float) -> dict[str, Any]:
        """One sample of one GPU, by the names of burnin_timeline.COLUMNS."""
        n, h = self.nv, g.handle
        mw = self._opt(n.nvmlDeviceGetPowerUsage, h)
        remap = self._opt(getattr(n, "nvmlDeviceGetRemappedRows", None), h)
        fields = self._field_values(h)
        crc = [fields["nvlink_crc_flit"], fields["nvlink_crc_data"]]
        volatile = getattr(n, "NVML_VOLATILE_ECC", 0)
        return {
            "t_s": round(t_s, 3),
            "sm_mhz": self._opt(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
            "mem_mhz": self._opt(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
            "gpu_temp_c": self._opt(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
            "mem_temp_c": fields["mem_temp_c"] or None,  # 0: no memory sensor
            "power_w": None if mw is None else round(mw / 1000.0, 3),
            "reasons": self._opt(self._reasons_fn, h),
            "ecc_corrected": self._opt(n.nvmlDeviceGetTotalEccErrors, h, n.NVML_MEMORY_ERROR_TYPE_CORRECTED, volatile),
            "ecc_uncorrected": self._opt(
                n.nvmlDeviceGetTotalEccErrors, h, n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, volatile
            ),
            "remap_pending": None if remap is None else int(bool(remap[2])),
            "remap_failure": None if remap is None else int(bool(remap[3])),
            "remap_uncorrectable": None if remap is None else remap[1],
            "nvlink_crc": None if not g.links or None in crc else sum(crc),  # type: ignore[arg-type]
            "nvlink_replay": fields["nvlink_replay"] if g.links else None,
            "nvlink_recovery": fields["nvlink_recovery"] if g.links else None,
        }

    def processes(self, g: GpuState, t_s: float, ours: set[int]) -> None:
        """The GPU's compute processes that are not the burn-in's, each remembered from when it was first seen."""
        procs = self._opt(self.nv.nvmlDeviceGetComputeRunningProcesses, g.handle) or []
        for p in procs:
            pid = getattr(p, "pid", None)
            if pid is None or pid in self.exempt or pid in ours:
                continue
            seen = self.foreign.get((g.index, pid))
            if seen is None:
                info = process_info(pid)
                used = getattr(p, "usedGpuMemory", None)
                seen = Foreign(g.index, pid, t_s, t_s, info["user"], info["name"], used)
                self.foreign[(g.index, pid)] = seen
            seen.last_s = t_s

    def sample_all(self, t_s: float) -> None:
        ours = self.ours()
        for g in self.gpus:
            burnin_timeline.append(g.timeline, self.read(g, t_s))
            self.processes(g, t_s, ours)
        self.samples += 1

    # -- XID events

    def _open_events(self) -> None:
        """An event set for XID events on every GPU; where NVML refuses one (a VM may not pass events through),
        none, and ``xid_why_not`` says why (the burn-in then reads the kernel log, gpuaccept.probe.burnin)."""
        n = self.nv
        try:
            self._event_set = n.nvmlEventSetCreate()
            for g in self.gpus:
                n.nvmlDeviceRegisterEvents(
                    g.handle, getattr(n, "nvmlEventTypeXidCriticalError", XID_EVENT), self._event_set
                )
        except self.session.error as err:
            self.xid_why_not = f"NVML event sets: {err}"
            self._close_events()
            return
        except AttributeError as err:
            self.xid_why_not = f"this NVML binding has no event sets ({err})"
            return
        self.xid_source = "nvml_events"

    def _close_events(self) -> None:
        if self._event_set is not None:
            try:
                self.nv.nvmlEventSetFree(self._event_set)
            except self.session.error:
                pass
            self._event_set = None

    def _watch_xids(self) -> None:
        n = self.nv
        wait = getattr(n, "nvmlEventSetWait_v2", None) or n.nvmlEventSetWait
        while not self._stop.is_set():
            try:
                data = wait(self._event_set, XID_WAIT_MS)
            except self.session.error as err:
                if getattr(err, "value", None) == NVML_ERROR_TIMEOUT:
                    continue
                # NVML stopped delivering events (some drivers refuse only at the wait, and a GPU lost mid-run ends
                # it): the burn-in reads the kernel log for the whole run instead.
                self.xid_source = None
                self.xid_why_not = f"NVML's event wait: {err}"
                return
            t_s = time.monotonic() - self._t0
            gpu = self._opt(n.nvmlDeviceGetIndex, data.device)
            self.xid_events.append(
                {"gpu": gpu, "xid": int(data.eventData), "t_s": round(t_s, 3), "source": "nvml_events"}
            )

    # -- the threads

    def start(self, t0: float) -> None:
        self._t0 = t0
        self._open_events()

        def loop() -> None:
            tick = 0
            while True:
                try:
                    self.sample_all(time.monotonic() - t0)
                except Exception as err:  # a reading this code did not expect: said in the document, sampling goes on
                    why = f"sampling at {time.monotonic() - t0:.0f} s: {type(err).__name__}: {err}"
                    if why.split(": ", 1)[1] not in {e.split(": ", 1)[1] for e in self.errors}:
                        self.errors.append(why)
                tick += 1
                if self._stop.wait(max(0.0, t0 + tick * self.interval - time.monotonic())):
                    break

        self._threads = [threading.Thread(target=loop, name="gpuaccept-burnin-sampler", daemon=True)]
        if self.xid_source:
            self._threads.append(threading.Thread(target=self._watch_xids, name="gpuaccept-burnin-xid", daemon=True))
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Stop both threads, take one last sample and each link's counters at the end."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        self.sample_all(time.monotonic() - self._t0)
        self._close_events()
        for g in self.gpus:
            g.link_errors_end = self._link_errors(g)

    def foreign_of(self, gpu: int) -> list[dict[str, Any]]:
        return [f.to_json() for (g, _), f in sorted(self.foreign.items()) if g == gpu]
