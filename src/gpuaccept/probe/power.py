"""The power sampler: run a command while reading every GPU's power, clocks, temperature and clock-event
(throttle) reasons at a fixed interval, bracket it with NVML's total-energy counter, and write one
gpuaccept.bench/1 document (docs/checks/power.md).

GPUs are read through NVML (nvidia-ml-py); where NVML cannot be loaded, through a streaming ``nvidia-smi
--query-gpu ... -lms`` query (no energy counter there: energy is then the time integral of the samples).
Read-only: nothing here changes a GPU setting.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept.atomic import write_text_atomic
from gpuaccept.probe import document as bench_document
from gpuaccept.probe.nvml import Nvml

TOOL = "gpuaccept-sample"

# NVML's clock-event ("throttle") reason bits (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*),
# with the names nvidia-smi -q prints beside them.
REASON_BITS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)

# nvidia-smi fields of the fallback; the clock-event field was called clocks_throttle_reasons before r535.
SMI_FIELDS = ("index", "power.draw", "clocks.sm", "clocks.mem", "temperature.gpu")
SMI_REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")


def reason_names(mask: int | None) -> list[str]:
    """The names of the bits set in a clock-event reason mask (unknown bits as hex)."""
    if not mask:
        return []
    names = [name for bit, name in REASON_BITS if mask & bit]
    rest = mask & ~sum(bit for bit, _ in REASON_BITS)
    if rest:
        names.append(f"unknown_{rest:#x}")
    return names


@dataclass
class Reading:
    """One GPU read once: ``tick`` numbers the sampling rounds (all GPUs of a round share it)."""

    gpu: int
    tick: int
    t_s: float  # seconds since the command started
    power_w: float | None
    sm_mhz: int | None
    mem_mhz: int | None
    temp_c: int | None
    reasons: int | None


@dataclass
class Device:
    index: int
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    power_limit_w: float | None = None  # enforced power limit, read only
    extra: dict[str, Any] = field(default_factory=dict)


class SamplerError(Exception):
    """The GPUs cannot be read at all (no NVML and no nvidia-smi, or no GPU)."""


# ------------------------------------------------------------------------------------------------
# Back ends.


class NvmlBackend:
    """Reads GPUs through NVML in a thread, every ``interval`` seconds."""

    name = "nvml"

    def __init__(self) -> None:
        self.session = Nvml()
        self.nvml = pynvml = self.session.lib
        self.handles = self.session.handles()
        if not self.handles:
            self.session.close()
            raise SamplerError("NVML sees no GPU")
        self._reasons_fn = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        self.driver_version = self._optional(pynvml.nvmlSystemGetDriverVersion)
        self.devices = [self._device(i, h) for i, h in enumerate(self.handles)]
        self.readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _optional(self, fn, *args):
        return self.session.optional(fn, *args)

    def _device(self, index: int, h) -> Device:
        n = self.nvml
        bus = self._optional(lambda: n.nvmlDeviceGetPciInfo(h).busId)
        limit = self._optional(n.nvmlDeviceGetEnforcedPowerLimit, h)
        return Device(
            index,
            self._optional(n.nvmlDeviceGetName, h),
            self._optional(n.nvmlDeviceGetUUID, h),
            self._optional(n.nvmlDeviceGetSerial, h),
            bus.decode() if isinstance(bus, bytes) else bus,
            None if limit is None else limit / 1000.0,
        )

    def energy_mj(self) -> list[float | None]:
        """NVML's total-energy counter per GPU (mJ since the driver loaded); None where unsupported."""
        return [self._optional(self.nvml.nvmlDeviceGetTotalEnergyConsumption, h) for h in self.handles]

    def read(self, tick: int, t_s: float) -> list[Reading]:
        n, out = self.nvml, []
        for i, h in enumerate(self.handles):
            mw = self._optional(n.nvmlDeviceGetPowerUsage, h)
            out.append(
                Reading(
                    i,
                    tick,
                    t_s,
                    None if mw is None else mw / 1000.0,
                    self._optional(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM),
                    self._optional(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
                    self._optional(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
                    self._optional(self._reasons_fn, h) if self._reasons_fn else None,
                )
            )
        return out

    def start(self, t0: float, interval: float) -> None:
        def loop() -> None:
            tick = 0
            while True:
                now = time.monotonic()
                self.readings.extend(self.read(tick, now - t0))
                tick += 1
                if self._stop.wait(max(0.0, t0 + tick * interval - time.monotonic())):
                    break

        self._thread = threading.Thread(target=loop, name="gpuaccept-sample", daemon=True)
        self._thread.start()

    def stop(self, t0: float) -> list[Reading]:
        self._stop.set()
        if self._thread:
            self._thread.join()
        # One last round after the command ended, so that the series covers the whole run.
        tick = (self.readings[-1].tick + 1) if self.readings else 0
        self.readings.extend(self.read(tick, time.monotonic() - t0))
        return self.readings

    def close(self) -> None:
        self.session.close()


def _smi_number(text: str) -> float | None:
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        return None  # [N/A], [Not Supported], [Unknown Error]
    return value if math.isfinite(value) else None


def parse_smi_line(line: str, tick: int, t_s: float) -> Reading:
    """One line of ``nvidia-smi --query-gpu=index,power.draw,clocks.sm,clocks.mem,temperature.gpu,
    clocks_event_reasons.active --format=csv,noheader,nounits``."""
    row = next(csv.reader(io.StringIO(line)), [])
    if len(row) != len(SMI_FIELDS) + 1:
        raise ValueError(f"nvidia-smi line {line.strip()!r}: {len(row)} fields, expected {len(SMI_FIELDS) + 1}")
    index, power, sm, mem, temp, reasons = (c.strip() for c in row)
    mask: int | None
    try:
        mask = int(reasons, 16)
    except ValueError:
        mask = None

    def as_int(text: str) -> int | None:
        v = _smi_number(text)
        return None if v is None else int(v)

    return Reading(int(index), tick, t_s, _smi_number(power), as_int(sm), as_int(mem), as_int(temp), mask)


def parse_smi_stream(text: str, t_s: list[float] | None = None) -> list[Reading]:
    """Lines of a streaming query, grouped into rounds (a round ends when a GPU index repeats).
    ``t_s`` gives each line's receive time; without it, lines are numbered from 0 s at 0.1 s per round."""
    readings: list[Reading] = []
    tick, seen = 0, set()
    for n, line in enumerate(x for x in text.splitlines() if x.strip()):
        r = parse_smi_line(line, tick, 0.0)
        if r.gpu in seen:
            tick, seen = tick + 1, set()
            r.tick = tick
        seen.add(r.gpu)
        r.t_s = t_s[n] if t_s is not None else 0.1 * tick
        readings.append(r)
    return readings


class SmiBackend:
    """Streams ``nvidia-smi --query-gpu=... -lms INTERVAL`` and reads its lines in a thread."""

    name = "nvidia-smi"

    def __init__(self, smi: str | None = None) -> None:
        self.smi = smi or shutil.which("nvidia-smi")
        if not self.smi:
            raise SamplerError("nvidia-smi not found on PATH")
        env = {**os.environ, "LC_ALL": "C"}
        info = subprocess.run(
            [self.smi, "--query-gpu=index,name,uuid,serial,pci.bus_id,enforced.power.limit,driver_version",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=60, env=env, check=False,
        )  # fmt: skip
        if info.returncode != 0:
            raise SamplerError(f"nvidia-smi exited {info.returncode}: {(info.stderr or info.stdout).strip()}")
        self.devices, self.driver_version = [], None
        for row in csv.reader(io.StringIO(info.stdout)):
            if len(row) != 7:
                continue
            idx, name, uuid, serial, bus, limit, driver = (c.strip() for c in row)
            na = ("[N/A]", "N/A", "[Not Supported]")
            self.devices.append(Device(int(idx), name, uuid, None if serial in na else serial, bus, _smi_number(limit)))
            self.driver_version = driver
        if not self.devices:
            raise SamplerError(f"nvidia-smi lists no GPU: {info.stdout.strip()!r}")
        self.reason_field = None
        for fld in SMI_REASON_FIELDS:
            probe = subprocess.run(
                [self.smi, f"--query-gpu={fld}", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=60, env=env, check=False,
            )  # fmt: skip
            if probe.returncode == 0:
                self.reason_field = fld
                break
        self.env = env
        self.readings: list[Reading] = []
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None

    def energy_mj(self) -> list[float | None]:
        return [None for _ in self.devices]

    def start(self, t0: float, interval: float) -> None:
        fields = [*SMI_FIELDS, self.reason_field or "index"]
        self._proc = subprocess.Popen(
            [self.smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
             f"-lms={max(1, round(interval * 1000))}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=self.env,
        )  # fmt: skip

        def reader() -> None:
            tick, seen = 0, set()
            assert self._proc and self._proc.stdout
            for line in self._proc.stdout:
                if not line.strip():
                    continue
                try:
                    r = parse_smi_line(line, tick, time.monotonic() - t0)
                except ValueError:
                    continue
                if self.reason_field is None:
                    r.reasons = None
                if r.gpu in seen:
                    tick, seen = tick + 1, set()
                    r.tick = tick
                seen.add(r.gpu)
                self.readings.append(r)

        self._thread = threading.Thread(target=reader, name="gpuaccept-sample-smi", daemon=True)
        self._thread.start()

    def stop(self, t0: float) -> list[Reading]:
        if self._proc:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._thread:
            self._thread.join(timeout=10)
        return self.readings

    def close(self) -> None:
        pass


BACKENDS = ("auto", "nvml", "nvidia-smi")


def open_backend(which: str = "auto") -> tuple[NvmlBackend | SmiBackend, list[str]]:
    """NVML, else nvidia-smi (or only the one named); raises SamplerError naming why none works."""
    if which not in BACKENDS:
        raise ValueError(f"--backend {which!r}: one of {', '.join(BACKENDS)}")
    why = []
    for name, make in (("nvml", NvmlBackend), ("nvidia-smi", SmiBackend)):
        if which not in ("auto", name):
            continue
        try:
            return make(), why
        except Exception as err:  # NVML raises its own error types, or ImportError/OSError without a driver
            why.append(f"{name}: {err}")
    raise SamplerError("cannot read the GPUs (" + "; ".join(why) + ")")


# ------------------------------------------------------------------------------------------------
# Summary: pure functions over readings, tested on recorded series.


def _durations(times: list[float], end_s: float) -> list[float]:
    """How long each sample stands for: until the next sample, the last one until ``end_s``."""
    out = [b - a for a, b in itertools.pairwise(times)]
    if times:
        out.append(max(0.0, end_s - times[-1]))
    return out


def _integrate(times: list[float], watts: list[float]) -> float:
    """Trapezoid integral of power over the sample times (J)."""
    return sum((b - a) * (p + q) / 2.0 for a, b, p, q in zip(times, times[1:], watts, watts[1:], strict=False))


def summarize_gpu(
    readings: list[Reading], duration_s: float, energy_before_mj: float | None, energy_after_mj: float | None
) -> dict[str, Any]:
    """Per-GPU figures: samples, energy (counter or integrated), average and peak watts, clocks, throttling."""
    rs = sorted(readings, key=lambda r: r.t_s)
    powered = [r for r in rs if r.power_w is not None]
    integrated = _integrate([r.t_s for r in powered], [r.power_w for r in powered])  # type: ignore[misc]
    counter = None
    if energy_before_mj is not None and energy_after_mj is not None and energy_after_mj >= energy_before_mj:
        counter = (energy_after_mj - energy_before_mj) / 1000.0
    span = powered[-1].t_s - powered[0].t_s if len(powered) > 1 else 0.0
    if counter is not None:
        energy, source = counter, "nvml_total_energy_counter"
    elif span > 0:
        # The integral covers the sampled span; scale the mean power to the whole run.
        energy, source = integrated / span * duration_s, "integrated_samples"
    else:
        energy, source = None, None
    throttled: dict[str, float] = {}
    for r, d in zip(rs, _durations([r.t_s for r in rs], duration_s), strict=True):
        for name in reason_names(r.reasons):
            throttled[name] = throttled.get(name, 0.0) + d
    sm = [r.sm_mhz for r in rs if r.sm_mhz is not None]
    temps = [r.temp_c for r in rs if r.temp_c is not None]
    watts = [r.power_w for r in powered]
    return {
        "samples": len(rs),
        "energy_j": energy,
        "energy_source": source,
        "energy_counter_j": counter,
        "energy_integrated_j": integrated if span > 0 else None,
        "avg_w": energy / duration_s if energy is not None and duration_s > 0 else None,
        "peak_w": max(watts) if watts else None,
        "median_w": statistics.median(watts) if watts else None,
        "sm_mhz_min": min(sm) if sm else None,
        "sm_mhz_median": statistics.median(sm) if sm else None,
        "sm_mhz_max": max(sm) if sm else None,
        "temp_c_max": max(temps) if temps else None,
        "throttled_s": {k: round(v, 3) for k, v in sorted(throttled.items())},
    }


def node_peak_w(readings: list[Reading], gpus: int) -> float | None:
    """The largest sum over GPUs of one sampling round (rounds missing a GPU's power are skipped)."""
    rounds: dict[int, list[float]] = {}
    for r in readings:
        if r.power_w is not None:
            rounds.setdefault(r.tick, []).append(r.power_w)
    sums = [sum(v) for v in rounds.values() if len(v) == gpus]
    return max(sums) if sums else None


def series(readings: list[Reading], gpu: int) -> dict[str, Any]:
    rs = sorted((r for r in readings if r.gpu == gpu), key=lambda r: r.t_s)
    return {
        "gpu": gpu,
        "t_s": [round(r.t_s, 4) for r in rs],
        "power_w": [None if r.power_w is None else round(r.power_w, 3) for r in rs],
        "sm_mhz": [r.sm_mhz for r in rs],
        "mem_mhz": [r.mem_mhz for r in rs],
        "temp_c": [r.temp_c for r in rs],
        "throttle_reasons": [r.reasons for r in rs],
    }


def readings_from_series(samples: list[dict[str, Any]]) -> list[Reading]:
    """The readings back from a document's ``results.samples`` (to re-judge a recorded run)."""
    out = []
    for s in samples:
        cols = ("t_s", "power_w", "sm_mhz", "mem_mhz", "temp_c", "throttle_reasons")
        for tick, (t, p, sm, mem, temp, why) in enumerate(zip(*(s[c] for c in cols), strict=True)):
            out.append(Reading(s["gpu"], tick, t, p, sm, mem, temp, why))
    return out


def summarize(
    readings: list[Reading],
    gpus: list[int],
    duration_s: float,
    energy_before: list[float | None],
    energy_after: list[float | None],
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, str], list[str]]:
    """Per-GPU summaries, node metrics, waived metrics and verification failures."""
    per_gpu, failures = [], []
    for i, g in enumerate(gpus):
        mine = [r for r in readings if r.gpu == g]
        s = {"gpu": g, **summarize_gpu(mine, duration_s, energy_before[i], energy_after[i])}
        if not mine:
            failures.append(f"GPU {g}: no sample taken")
        elif all(r.power_w is None for r in mine):
            failures.append(f"GPU {g}: power could not be read ({len(mine)} samples, all N/A)")
        b, a = energy_before[i], energy_after[i]
        if b is not None and a is not None and a < b:
            failures.append(f"GPU {g}: NVML's total-energy counter went backwards ({b} mJ -> {a} mJ)")
        per_gpu.append(s)
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    energies = [s["energy_j"] for s in per_gpu]
    if per_gpu and all(e is not None for e in energies) and duration_s > 0:
        total = sum(energies)  # type: ignore[arg-type]
        sources = sorted({s["energy_source"] for s in per_gpu})
        how = (
            "NVML total-energy counter before and after"
            if sources == ["nvml_total_energy_counter"]
            else ("power samples integrated over time")
        )
        metrics["energy_j"] = {"value": total, "unit": "J", "better": "lower",
                               "description": f"energy of all GPUs over the run ({how})"}  # fmt: skip
        metrics["power_avg_w"] = {
            "value": total / duration_s,
            "unit": "W",
            "better": "lower",
            "description": "average power of all GPUs over the run (energy / duration)",
        }
    else:
        for m in ("energy_j", "power_avg_w"):
            waived[m] = "GPU energy could not be measured (no energy counter and too few power samples)"
    peak = node_peak_w(readings, len(gpus))
    if peak is not None:
        metrics["power_peak_w"] = {"value": peak, "unit": "W", "better": "lower",
                                   "description": "largest sum over GPUs of one sampling round's power"}  # fmt: skip
    else:
        waived["power_peak_w"] = "no sampling round read every GPU's power"
    return per_gpu, metrics, waived, failures


# ------------------------------------------------------------------------------------------------
# The document.


def _driver_release() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return None


def document(
    *,
    command_line: list[str],
    command: list[str],
    interval: float,
    started_utc: str,
    duration_s: float,
    backend: str | None,
    driver_version: str | None,
    devices: list[Device],
    readings: list[Reading],
    energy_before: list[float | None],
    energy_after: list[float | None],
    exit_status: int | None,
    errors: list[str],
) -> dict[str, Any]:
    gpus = [d.index for d in devices]
    per_gpu, metrics, waived, failures = summarize(readings, gpus, duration_s, energy_before, energy_after)
    for s, d in zip(per_gpu, devices, strict=True):
        s["power_limit_w"] = d.power_limit_w
    if not devices:
        for m in ("energy_j", "power_avg_w", "power_peak_w"):
            waived[m] = "no GPU could be read: " + ("; ".join(errors) or "none found")
        metrics = {}
    timing = (
        f"every GPU read every {interval:g} s ({backend or 'no back end'}) from the command's start to its end; "
        "energy from NVML's total-energy counter read just before and just after the command (else the "
        "time integral of the samples); average power = energy / duration; peak = largest per-round sum"
    )
    return {
        **bench_document.header(TOOL, command_line, started_utc, timing, duration_s),
        "cuda": {
            "driver_version": None,
            "runtime_version": None,
            "driver_release": driver_version or _driver_release(),
        },
        "devices": [
            {"index": d.index, "name": d.name, "pci_bus_id": d.pci_bus_id, "uuid": d.uuid, "serial": d.serial}
            for d in devices
        ],
        "parameters": {"interval_s": interval, "command": command, "backend": backend},
        "results": {
            "backend": backend,
            "exit_status": exit_status,
            "duration_s": duration_s,
            "throttle_reason_bits": {f"{bit:#x}": name for bit, name in REASON_BITS},
            "per_gpu": per_gpu,
            "samples": [series(readings, g) for g in gpus],
        },
        "metrics": metrics,
        "waived": waived,
        "verification": {"passed": not failures and bool(devices), "checked": len(readings), "failures": failures},
        "errors": errors,
    }


def run(
    command: list[str],
    output: str | os.PathLike[str],
    interval: float = 0.1,
    argv: list[str] | None = None,
    backend_name: str = "auto",
) -> int:
    """Run ``command`` under the sampler, write the document to ``output``; return the command's exit status
    (127 when it cannot be started, 128 + signal when it was killed by one)."""
    doc, status = measure(command, interval, argv, backend_name)
    write_text_atomic(output, bench_document.dumps(doc))
    print(summary_line(doc), file=sys.stderr)
    return status


def measure(
    command: list[str], interval: float = 0.1, argv: list[str] | None = None, backend_name: str = "auto"
) -> tuple[dict[str, Any], int]:
    """Run ``command`` under the sampler; the document and the command's exit status."""
    if not command:
        raise ValueError("no command to run: give it after '--'")
    if not (0.01 <= interval <= 60):
        raise ValueError(f"--interval {interval}: must be between 0.01 and 60 seconds")
    errors: list[str] = []
    try:
        backend, _why = open_backend(backend_name)
    except SamplerError as err:
        backend = None
        errors.append(str(err))
    started = bench_document.utc_iso()
    env = {**os.environ, "LC_ALL": "C"}
    energy_before = backend.energy_mj() if backend else []
    t0 = time.monotonic()
    if backend:
        backend.start(t0, interval)
    status: int | None
    forwarded: list[int] = []
    try:
        proc = subprocess.Popen(command, env=env)
    except OSError as err:
        errors.append(f"cannot start {command[0]!r}: {err.strerror or err}")
        proc, status = None, 127
    if proc is not None:

        def forward(signum, _frame):
            forwarded.append(signum)
            proc.send_signal(signum)

        old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            rc = proc.wait()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
        status = rc if rc >= 0 else 128 - rc
        if rc < 0:
            errors.append(f"{command[0]} was killed by signal {-rc}")
    duration = time.monotonic() - t0
    readings = backend.stop(t0) if backend else []
    energy_after = backend.energy_mj() if backend else []
    doc = document(
        command_line=argv or [TOOL, *command],
        command=command,
        interval=interval,
        started_utc=started,
        duration_s=duration,
        backend=backend.name if backend else None,
        driver_version=backend.driver_version if backend else None,
        devices=backend.devices if backend else [],
        readings=readings,
        energy_before=energy_before,
        energy_after=energy_after,
        exit_status=status,
        errors=errors,
    )
    if backend:
        backend.close()
    return doc, status if status is not None else 1


def summary_line(doc: dict[str, Any]) -> str:
    m = doc.get("metrics") or {}
    parts = [f"{TOOL}: {doc['elapsed_s']:.1f} s, {doc['verification']['checked']} readings"]
    for name, unit in (("energy_j", "J"), ("power_avg_w", "W avg"), ("power_peak_w", "W peak")):
        if name in m:
            parts.append(f"{m[name]['value']:.1f} {unit}")
    for g in doc["results"]["per_gpu"]:
        if g["throttled_s"]:
            why = ", ".join(f"{k} {v:.1f} s" for k, v in g["throttled_s"].items())
            parts.append(f"GPU {g['gpu']} throttled: {why}")
    for e in doc.get("errors") or []:
        parts.append(f"error: {e}")
    return "; ".join(parts)
