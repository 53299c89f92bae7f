"""NAMD: read its logs (2.14 and 3.0), run APOA1/STMV in GPU-resident, GPU-offload and CPU-only mode, and write
one gpuaccept.bench/1 document per input set (docs/checks/md.md).

Lines read (as NAMD 3.0 prints them; tests/test_namd.py reads the fifteen real NAMD 3.0 APOA1 logs of
shared/data/namd3-apoa1-logs: multicore CPU, multicore-CUDA GPU-offload and GPU-resident):

    Info: NAMD 3.0 for Linux-x86_64-multicore-CUDA
    Info: TIMESTEP               1
    Info: Benchmark time: 4 CPUs 0.00389194 s/step 0.0450456 days/ns 0 MB memory        (CPU, GPU-offload)
    Info: Benchmark time: 1 CPUs 0.000781502 s/step 110.556 ns/day 0 MB memory           (GPU-resident)
    TIMING: 500  CPU: 0.491791, 0.00081895/step  Wall: 0.653657, 0.000797002/step, 108.406 ns/days, 0 hours
        remaining, 0.000000 MB of memory in use.                                         (one line)
    PERFORMANCE: 500  averaging 109.116 ns/day, 0.000791815 sec/step with standard deviation 4.3878e-05
    ETITLE:      TS           BOND ...        TOTAL ...
    ENERGY:     500     20974.9297 ...
    WallClock: 2.094404  CPUTime: 1.590841  Memory: 0.000000 MB
    FATAL ERROR: ...

Usage: ``python -m gpuaccept.probe.namd parse LOG...`` (prints what was read), ``python -m gpuaccept.probe.namd run
--namd-home DIR --system apoa1 --output namd_apoa1.json`` (what the ReFrame check runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept.atomic import write_text_atomic
from gpuaccept.probe import document
from gpuaccept.probe import facts as node_facts
from gpuaccept.probe.power import SamplerError, open_backend

TOOL = "gpuaccept-namd"
KJ_PER_KCAL = 4.184

# The input sets: the gpuaccept_namd role unpacks them under <namd_home>/inputs/ and links the classic
# configuration (GPU-offload and CPU runs) and the NAMD 3 GPU-resident one (by default the classic one, run
# with GPUresident on) as <namd_home>/configs/<system>_classic.namd and _resident.namd. ``total_energy_500`` is the
# TOTAL energy (kcal/mol) at step 500 of the classic configuration where a published NAMD log gives it.
SYSTEMS: dict[str, dict[str, Any]] = {
    "apoa1": {
        "atoms": 92224,
        "classic": "configs/apoa1_classic.namd",
        "resident": "configs/apoa1_resident.namd",
        "total_energy_500": -222495.2,
        "total_energy_source": "NAMD 3.0 apoa1.namd logs (shared/data/namd3-apoa1-logs; multicore: -222495.41, "
        "multicore-CUDA GPU-offload -222494.85 to -222494.94, GPU-resident -222494.84 to -222494.92 kcal/mol at "
        "step 500)",
    },
    "stmv": {
        "atoms": 1066628,
        "classic": "configs/stmv_classic.namd",
        "resident": "configs/stmv_resident.namd",
        "total_energy_500": None,
        "total_energy_source": "no published TOTAL energy for stmv.namd found: energy conservation is checked",
    },
}
# NAMD 3.0's own APOA1 figures on an NVIDIA A100 80GB PCIe (and its host's CPU), read from the fifteen real NAMD
# 3.0 logs in shared/data/namd3-apoa1-logs (each mode's best final "Benchmark time" line; tests/test_namd.py
# reads them again from the logs). Published figures, not measured by gpuaccept: the evaluation report shows them
# beside APOA1 through OpenMM on the node, labelled as such.
NAMD3_A100_APOA1: dict[str, dict[str, Any]] = {
    "gpu_resident": {"ns_per_day": 110.601, "log": "apoa1-GPU-Res-16.log", "cpus": 16},
    "gpu_offload": {"ns_per_day": 22.1997, "log": "apoa1-GPU-4.log", "cpus": 4},
    "cpu": {"ns_per_day": 2.96349, "log": "apoa1-16.log", "cpus": 16},
}
NAMD3_A100_SOURCE = (
    "NAMD 3.0 (multicore and multicore-CUDA builds), apoa1.namd, 500 steps, one NVIDIA A100 80GB PCIe: "
    "the best final 'Benchmark time' line of each mode's logs (public logs of kguerns/namd_hw)"
)
ENERGY_REF_RTOL = 0.002  # published TOTAL vs ours at step 500: two published runs differ by 2e-6
CONSERVATION_RTOL = 0.01  # |TOTAL(last) - TOTAL(first)| / |TOTAL(first)| within one constant-energy run
RUN_LABELS = ("gpu_resident_all", "gpu_resident_1", "gpu_offload_all", "gpu_offload_1", "cpu")


class NamdLogError(ValueError):
    """A NAMD log line that looks like one of ours but does not parse; the message names file and line."""


@dataclass
class NamdLog:
    path: str = ""
    version: str | None = None
    build: str | None = None
    timestep_fs: float | None = None
    benchmark: list[dict[str, float]] = field(default_factory=list)  # cpus, s_per_step, ns_per_day, memory_mb
    timing: list[dict[str, float]] = field(default_factory=list)  # step, cpu_s, wall_s, wall_s_per_step
    performance: list[dict[str, float]] = field(default_factory=list)  # step, ns_per_day, s_per_step, stddev
    energies: list[dict[str, float]] = field(default_factory=list)  # ETITLE column -> value, per ENERGY line
    wallclock_s: float | None = None
    cputime_s: float | None = None
    memory_mb: float | None = None
    fatal_errors: list[str] = field(default_factory=list)

    @property
    def completed(self) -> bool:
        return self.wallclock_s is not None and not self.fatal_errors

    def ns_per_day(self) -> float | None:
        """NAMD 3's PERFORMANCE average where present, else the last Benchmark line, else the last TIMING."""
        if self.performance:
            return self.performance[-1]["ns_per_day"]
        if self.benchmark:
            return self.benchmark[-1]["ns_per_day"]
        if self.timing and self.timestep_fs:
            return 86400.0 / self.timing[-1]["wall_s_per_step"] * self.timestep_fs * 1e-6
        return None

    def s_per_step(self) -> float | None:
        for rows, key in (
            (self.performance, "s_per_step"),
            (self.benchmark, "s_per_step"),
            (self.timing, "wall_s_per_step"),
        ):
            if rows:
                return rows[-1][key]
        return None

    def last_energy(self) -> dict[str, float] | None:
        return self.energies[-1] if self.energies else None


_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RE = {
    "version": re.compile(r"^Info: NAMD (\S+) for (\S+)"),
    "timestep": re.compile(rf"^Info: TIMESTEP\s+({_NUM})\s*$"),
    "benchmark": re.compile(
        rf"^Info: Benchmark time: (\d+) CPUs ({_NUM}) s/step ({_NUM}) (days/ns|ns/day) ({_NUM}) MB memory"
    ),
    "timing": re.compile(
        rf"^TIMING: (\d+)\s+CPU: ({_NUM}), ({_NUM})/step\s+Wall: ({_NUM}), ({_NUM})/step"
        rf"(?:, ({_NUM}) ns/days)?(?:, ({_NUM}) hours remaining)?(?:, ({_NUM}) MB of memory in use)?"
    ),
    "performance": re.compile(
        rf"^PERFORMANCE: (\d+)\s+averaging ({_NUM}) ns/day, ({_NUM}) sec/step(?: with standard deviation ({_NUM}))?"
    ),
    "wallclock": re.compile(rf"^WallClock: ({_NUM})\s+CPUTime: ({_NUM})(?:\s+Memory: ({_NUM}) MB)?"),
}


def _optional(text: str | None) -> float | None:
    return float(text) if text else None


# The fields of a TIMING and a PERFORMANCE line, group by group of their patterns (_RE), and how each is read.
_TIMING = (
    ("step", int),
    ("cpu_s", float),
    ("cpu_s_per_step", float),
    ("wall_s", float),
    ("wall_s_per_step", float),
    ("ns_per_day", _optional),  # NAMD 3's GPU-resident TIMING line adds "108.406 ns/days" (sic: ns/day)
    ("hours_remaining", _optional),
    ("memory_mb", _optional),
)
_PERFORMANCE = (("step", int), ("ns_per_day", float), ("s_per_step", float), ("stddev_s_per_step", _optional))


def _fields(m: re.Match[str], fields: tuple[tuple[str, Callable[[str], Any]], ...]) -> dict[str, Any]:
    return {name: read(m.group(i)) for i, (name, read) in enumerate(fields, 1)}


def _match(kind: str, label: str, line: str, where: str) -> re.Match[str]:
    """The line matched by its pattern; NamdLogError naming the file, the line and its kind when it does not."""
    m = _RE[kind].match(line)
    if not m:
        raise NamdLogError(f"{where}: unreadable {label} line: {line!r}")
    return m


def parse_log(text: str, path: str = "<log>") -> NamdLog:
    """Everything gpuaccept reads from one NAMD log. Lines that start like a timing or energy line but do not
    parse raise NamdLogError naming the file and line: a changed format is never silently skipped."""
    log = NamdLog(path=path)
    titles: list[str] | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        where = f"{path}:{lineno}"
        if line.startswith("FATAL ERROR") or "FATAL ERROR:" in line:
            log.fatal_errors.append(line[line.index("FATAL ERROR") :].strip())
            continue
        if m := _RE["version"].match(line):
            log.version, log.build = m.group(1), m.group(2)
        elif m := _RE["timestep"].match(line):
            log.timestep_fs = float(m.group(1))
        elif line.startswith("Info: Benchmark time:"):
            m = _match("benchmark", "Benchmark", line, where)
            rate = float(m.group(3))
            per_day = (1.0 / rate if rate else math.inf) if m.group(4) == "days/ns" else rate
            log.benchmark.append(
                {
                    "cpus": int(m.group(1)),
                    "s_per_step": float(m.group(2)),
                    "ns_per_day": per_day,
                    "days_per_ns": rate if m.group(4) == "days/ns" else (1.0 / rate if rate else math.inf),
                    "unit_printed": m.group(4),
                    "memory_mb": float(m.group(5)),
                }
            )
        elif line.startswith("TIMING:"):
            m = _match("timing", "TIMING", line, where)
            log.timing.append(_fields(m, _TIMING))
        elif line.startswith("PERFORMANCE:"):
            m = _match("performance", "PERFORMANCE", line, where)
            log.performance.append(_fields(m, _PERFORMANCE))
        elif line.startswith("ETITLE:"):
            titles = line.split()[1:]
        elif line.startswith("ENERGY:"):
            if titles is None:
                raise NamdLogError(f"{where}: ENERGY line before any ETITLE line")
            values = line.split()[1:]
            if len(values) != len(titles):
                raise NamdLogError(f"{where}: ENERGY line has {len(values)} columns, ETITLE has {len(titles)}")
            try:
                log.energies.append({t: float(v) for t, v in zip(titles, values, strict=True)})
            except ValueError as err:
                raise NamdLogError(f"{where}: ENERGY line: {err}") from None
        elif line.startswith("WallClock:"):
            m = _match("wallclock", "WallClock", line, where)
            log.wallclock_s, log.cputime_s = float(m.group(1)), float(m.group(2))
            log.memory_mb = float(m.group(3)) if m.group(3) else None
    return log


# ----------------------------------------------------------------------------------------------------------
# Install layout (what the gpuaccept_namd role writes) and what is missing from it
# ----------------------------------------------------------------------------------------------------------


def binaries(home: str | Path) -> dict[str, Path]:
    home = Path(home)
    return {"gpu": home / "gpu" / "namd3", "cpu": home / "cpu" / "namd3"}


def missing(home: str | Path, system: str, modes: list[str]) -> str:
    """'' when everything the runs need is installed, else what is missing (for the check's skip reason)."""
    if system not in SYSTEMS:
        return f"unknown input set {system!r} (known: {', '.join(SYSTEMS)})"
    home = Path(home)
    need: list[Path] = []
    bins = binaries(home)
    if any(m.startswith("gpu") for m in modes):
        need.append(bins["gpu"])
    if "cpu" in modes:
        need.append(bins["cpu"])
    if "gpu_offload" in modes or "cpu" in modes:
        need.append(home / SYSTEMS[system]["classic"])
    if "gpu_resident" in modes:
        need.append(home / SYSTEMS[system]["resident"])
    absent = [str(p) for p in need if not (p.is_file() and (p.suffix == ".namd" or os.access(p, os.X_OK)))]
    return f"missing {', '.join(absent)}" if absent else ""


# ----------------------------------------------------------------------------------------------------------
# Running NAMD
# ----------------------------------------------------------------------------------------------------------

_OVERRIDDEN = {
    "numsteps",
    "run",
    "minimize",
    "outputname",
    "outputenergies",
    "outputtiming",
    "outputpressure",
    "gpuresident",
    "cudasoaintegrate",
    "restartfreq",
    "dcdfreq",
    "xstfreq",
    "restartname",
    "dcdfile",
    "xstfile",
    "binaryoutput",
    "binaryrestart",
}


def run_config(original: Path, out_prefix: Path, steps: int, resident: bool) -> str:
    """The configuration NAMD runs: the input set's own, minus what gpuaccept sets, plus those settings. The
    runner starts NAMD in the input set's folder, so that its relative paths (structure, coordinates) resolve."""
    kept = []
    for line in original.read_text(encoding="utf-8", errors="replace").splitlines():
        word = line.split("#", 1)[0].strip().split(None, 1)
        if word and word[0].lower() in _OVERRIDDEN:
            kept.append(f"# gpuaccept: replaced: {line}")
        else:
            kept.append(line)
    kept += [
        "# gpuaccept: run settings",
        f"outputName          {out_prefix}",
        "binaryOutput        yes",
        "restartfreq         0",
        "dcdfreq             0",
        "xstFreq             0",
        "outputEnergies      100",
        "outputTiming        100",
        *(["GPUresident         on"] if resident else []),
        f"numsteps            {steps}",
    ]
    return "\n".join(kept) + "\n"


def _runs(modes: list[str], gpus: list[int]) -> list[tuple[str, str, list[int]]]:
    runs = []
    for mode in ("gpu_resident", "gpu_offload"):
        if mode in modes and gpus:
            if len(gpus) > 1:
                runs.append((f"{mode}_all", mode, gpus))
            runs.append((f"{mode}_1", mode, gpus[:1]))
    if "cpu" in modes:
        runs.append(("cpu", "cpu", []))
    return runs


class GpuEnergy:
    """NVML's total-energy counters of some GPUs (through the power sampler's NVML back end): read before and
    after a run; ``error`` says why there is none."""

    def __init__(self, indices: list[int]):
        self.indices, self.error, self.backend = indices, "", None
        try:
            self.backend, _why = open_backend("nvml")
        except (SamplerError, ValueError) as err:
            self.error = f"NVML energy counter unavailable: {err}"

    def read(self) -> float | None:
        """Joules since the driver loaded, summed over the GPUs; None without NVML or a counter."""
        if self.backend is None:
            return None
        counters = self.backend.energy_mj()
        values = [counters[i] for i in self.indices if i < len(counters)]
        if len(values) != len(self.indices) or any(v is None for v in values):
            self.error = self.error or "NVML has no total-energy counter for every GPU of the run"
            return None
        return sum(values) / 1000.0  # type: ignore[arg-type]


def _run_one(args, label: str, mode: str, devices: list[int], workdir: Path) -> dict[str, Any]:
    system = SYSTEMS[args.system]
    home = Path(args.namd_home)
    # The role links the configurations; NAMD reads the input set's files relative to the real folder.
    config = (home / system["resident" if mode == "gpu_resident" else "classic"]).resolve()
    conf = workdir / f"{args.system}_{label}.namd"
    write_text_atomic(conf, run_config(config, workdir / f"{args.system}_{label}", args.steps, mode == "gpu_resident"))
    cores = os.cpu_count() or 1
    binary = binaries(home)["cpu" if mode == "cpu" else "gpu"]
    cmd = [str(binary)]
    if mode == "gpu_resident":
        cmd += [f"+p{len(devices)}"]
    else:
        cmd += [f"+p{cores}"]
    cmd += ["+setcpuaffinity"]
    if devices:
        cmd += ["+devices", ",".join(map(str, devices))]
    cmd += [str(conf)]
    log_path = workdir / f"{args.system}_{label}.log"
    energy = GpuEnergy(devices) if devices else None
    e0 = energy.read() if energy else None
    t0 = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as out:
        proc = subprocess.run(
            cmd, cwd=config.parent, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "LC_ALL": "C"}, check=False
        )
    wall = time.perf_counter() - t0
    e1 = energy.read() if energy else None
    result: dict[str, Any] = {
        "label": label,
        "mode": mode,
        "devices": devices,
        "command": shlex.join(cmd),
        "exit_code": proc.returncode,
        "log": str(log_path),
        "process_wall_s": wall,
    }
    if e0 is not None and e1 is not None:
        result["gpu_energy_j"], result["gpu_power_avg_w"] = e1 - e0, (e1 - e0) / wall if wall > 0 else None
    elif energy is not None:
        result["power_note"] = energy.error
    result["parsed"] = asdict(parse_log(log_path.read_text(encoding="utf-8", errors="replace"), str(log_path)))
    return result


def judge(system: str, steps: int, runs: list[dict[str, Any]]) -> tuple[dict, dict, list[str], int]:
    """(metrics, waived, verification failures, checks made) from the runs (each with its parsed log)."""
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    failures: list[str] = []
    checked = 0
    ref = SYSTEMS[system]
    rates: dict[str, float] = {}
    for run in runs:
        label, log = run["label"], NamdLog(**run["parsed"])
        checked += 1
        if run["exit_code"] != 0 or not log.completed:
            why = "; ".join(log.fatal_errors) or f"exit code {run['exit_code']}, no WallClock line"
            failures.append(f"{label}: NAMD did not complete ({why}); log {run['log']}")
            continue
        rate, per_step = log.ns_per_day(), log.s_per_step()
        if rate is None or per_step is None:
            failures.append(f"{label}: no Benchmark, PERFORMANCE or TIMING line in {run['log']}")
            continue
        rates[label] = rate
        desc = f"{label.replace('_', ' ')} ({run['command']})"
        metrics[f"{label}_ns_per_day"] = {"value": rate, "unit": "ns/day", "better": "higher", "description": desc}
        metrics[f"{label}_s_per_step"] = {"value": per_step, "unit": "s/step", "better": "lower", "description": desc}
        metrics[f"{label}_wall_s"] = {
            "value": log.wallclock_s,
            "unit": "s",
            "better": "lower",
            "description": f"{label}: NAMD's WallClock for {steps} steps",
        }
        if run["devices"]:
            if run.get("gpu_power_avg_w"):
                kw = run["gpu_power_avg_w"] / 1000.0
                metrics[f"{label}_power_avg_w"] = {
                    "value": run["gpu_power_avg_w"],
                    "unit": "W",
                    "better": "lower",
                    "description": f"{label}: GPUs' average power over the NAMD run",
                }
                metrics[f"{label}_energy_kj"] = {
                    "value": run["gpu_energy_j"] / 1000.0,
                    "unit": "kJ",
                    "better": "lower",
                    "description": f"{label}: GPU energy to solution ({steps} steps)",
                }
                metrics[f"{label}_ns_per_day_per_kw"] = {
                    "value": rate / kw,
                    "unit": "ns/day/kW",
                    "better": "higher",
                    "description": f"{label}: ns/day per kW of GPU power",
                }
            else:
                for name in ("power_avg_w", "energy_kj", "ns_per_day_per_kw"):
                    waived[f"{label}_{name}"] = run.get("power_note") or "no NVML energy counter"
        # Energy: conserved within the run, and equal to the published value where there is one.
        energies = [e["TOTAL"] for e in log.energies if "TOTAL" in e]
        checked += 1
        if len(energies) < 2:
            failures.append(f"{label}: fewer than two ENERGY lines with TOTAL in {run['log']}")
            continue
        first, last = energies[0], energies[-1]
        if not all(math.isfinite(e) for e in energies) or abs(last - first) > CONSERVATION_RTOL * abs(first):
            failures.append(
                f"{label}: TOTAL energy moved from {first} to {last} kcal/mol (tolerance "
                f"{CONSERVATION_RTOL:.0%} of the first)"
            )
        published = ref.get("total_energy_500")
        step = log.energies[-1].get("TS")
        if published is not None and run["mode"] != "gpu_resident" and step == 500:
            checked += 1
            if abs(last - published) > ENERGY_REF_RTOL * abs(published):
                failures.append(
                    f"{label}: TOTAL energy {last} kcal/mol at step 500 differs from the published "
                    f"{published} by more than {ENERGY_REF_RTOL:.1%} ({ref['total_energy_source']})"
                )
    labels = [r["label"] for r in runs]
    for label in RUN_LABELS:
        if label.endswith("_all") and label not in labels and label.replace("_all", "_1") in labels:
            for name in ("ns_per_day", "s_per_step", "wall_s", "power_avg_w", "energy_kj", "ns_per_day_per_kw"):
                waived[f"{label}_{name}"] = "one GPU: the all-GPU run is the one-GPU run"
    best = max((v for k, v in rates.items() if k != "cpu"), default=None)
    if best is not None and "cpu" in rates:
        metrics["speedup_vs_cpu"] = {
            "value": best / rates["cpu"],
            "unit": "ratio",
            "better": "higher",
            "description": "fastest GPU run's ns/day over the CPU-only run's",
        }
    return metrics, waived, failures, checked


def cmd_run(args: argparse.Namespace) -> int:
    started = document.utc_iso()
    t0 = time.perf_counter()
    f = node_facts.gather()
    gpus = [int(g.get("index", i)) for i, g in enumerate(f.get("gpus") or [])]
    modes = [m for m in args.modes.split(",") if m]
    if args.quick and args.steps == 500:
        args.steps = 200
    timing = (
        "NAMD's own figures: the last PERFORMANCE average (3.x) or Benchmark line (2.x), else the last TIMING wall "
        "time per step; wall time from NAMD's WallClock; GPU energy from NVML's counter"
    )
    doc: dict[str, Any] = {
        **document.header(TOOL, [TOOL, *sys.argv[1:]], started, timing),
        "devices": [
            {k: g.get(k) for k in ("index", "name", "pci_bus_id", "uuid") if k in g} for g in f.get("gpus") or []
        ],
        "parameters": {
            "system": args.system,
            "steps": args.steps,
            "modes": modes,
            "namd_home": args.namd_home,
            "atoms": SYSTEMS[args.system]["atoms"],
        },
    }
    errors: list[str] = []
    runs: list[dict[str, Any]] = []
    why = missing(args.namd_home, args.system, modes)
    if why:
        errors.append(f"NAMD not installed (see README.md, section 'NAMD'): {why}")
    else:
        # NAMD's logs and the configurations it ran, kept beside the document (ReFrame keeps this folder).
        workdir = Path(args.output).resolve().parent / f"namd_{args.system}_logs"
        workdir.mkdir(parents=True, exist_ok=True)
        for label, mode, devices in _runs(modes, gpus):
            try:
                runs.append(_run_one(args, label, mode, devices, workdir))
            except (OSError, NamdLogError) as err:
                errors.append(f"{label}: {err}")
    metrics, waived, failures, checked = judge(args.system, args.steps, runs)
    doc.update(
        {
            "results": {
                "runs": runs,
                "energy_reference": {k: SYSTEMS[args.system][k] for k in ("total_energy_500", "total_energy_source")},
            },
            "metrics": metrics,
            "waived": waived,
            "verification": {
                "passed": not failures and not errors and checked > 0,
                "checked": checked,
                "failures": failures,
            },
            "errors": errors,
            "elapsed_s": time.perf_counter() - t0,
        }
    )
    write_text_atomic(args.output, document.dumps(doc, indent=1))
    for e in errors + failures:
        print(f"{TOOL}: {socket.gethostname()}: {e}", file=sys.stderr)
    return 1 if errors else (2 if failures else 0)


def cmd_parse(args: argparse.Namespace) -> int:
    code = 0
    for path in args.logs:
        try:
            log = parse_log(Path(path).read_text(encoding="utf-8", errors="replace"), path)
        except (OSError, NamdLogError) as err:
            print(f"{TOOL}: {err}", file=sys.stderr)
            code = 4
            continue
        summary = {
            "path": path,
            "version": log.version,
            "completed": log.completed,
            "ns_per_day": log.ns_per_day(),
            "s_per_step": log.s_per_step(),
            "wallclock_s": log.wallclock_s,
            "last_energy": log.last_energy(),
            "fatal_errors": log.fatal_errors,
        }
        print(json.dumps(summary))
    return code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=TOOL, description="NAMD runs and logs for gpuaccept")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run one input set in every mode and write the JSON document")
    r.add_argument("--output", required=True)
    r.add_argument("--namd-home", required=True, help="where gpuaccept_namd installed NAMD (gpu/, cpu/, inputs/)")
    r.add_argument("--system", required=True, choices=sorted(SYSTEMS))
    r.add_argument("--steps", type=int, default=500)
    r.add_argument("--modes", default="gpu_resident,gpu_offload,cpu")
    r.add_argument("--quick", action="store_true", help="200 steps unless --steps says otherwise")
    r.set_defaults(func=cmd_run)
    q = sub.add_parser("parse", help="print what gpuaccept reads from NAMD logs")
    q.add_argument("logs", nargs="+")
    q.set_defaults(func=cmd_parse)
    args = p.parse_args(argv)
    if getattr(args, "steps", 1) < 1:
        p.error("--steps must be at least 1")
    if getattr(args, "modes", None) is not None:
        bad = [m for m in args.modes.split(",") if m not in ("gpu_resident", "gpu_offload", "cpu")]
        if bad:
            p.error(f"--modes: unknown {', '.join(bad)} (gpu_resident, gpu_offload, cpu)")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
