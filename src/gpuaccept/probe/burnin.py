"""The burn-in (docs/checks/burnin.md): every GPU of the node under sustained load for a duration, every GPU read
through NVML about once a second, all of it in one gpuaccept.bench/1 document with each GPU's timeline.

``gpuaccept burnin --gemm PATH [--memtest PATH] --minutes N --output burnin.json``: turns of a sustained GEMM window
(gpuaccept-gemm, one process per GPU, every GPU at once) alternating with a turn of the memory test
(gpuaccept-memtest, where that binary is given and exists; GEMM alone otherwise, and the document says so), until
the duration is spent. Meanwhile the sampler (gpuaccept.probe.burnin_sampler) reads every GPU. XID events come from
NVML's event set where the driver raises them there, else from the kernel log after the run (the health probe's
reader), and the document says which. Beside the document, one CSV per GPU holds its timeline
(``burnin_gpu<index>.csv``).

The document records; the judge's rules (gpuaccept.judge.burnin_rules) decide. Read-only: no GPU setting is
changed.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.layout import BENCH_SCHEMA
from gpuaccept.probe import burnin_timeline as tl
from gpuaccept.probe import document, health
from gpuaccept.probe.burnin_sampler import Sampler
from gpuaccept.probe.nvml import Nvml

TOOL = "gpuaccept-burnin"
EXIT_OK, EXIT_ERROR, EXIT_FAILED, EXIT_NOT_RUN = 0, 1, 2, 3

#: The burn-in's length when none is given: operators burn nodes in for 20-30 minutes, long enough for a GPU that
#: slows down after ten minutes of heat to show it. One minute is the shortest (a demonstration of the same path).
DEFAULT_MINUTES = 30.0
MIN_MINUTES, MAX_MINUTES = 1.0, 24 * 60.0
#: The environment variable that gives the duration where no option does (make accept, the suite role).
MINUTES_ENV = "GPUACCEPT_BURNIN_MINUTES"
#: A GEMM window: a sixth of the duration, between 10 and 60 s (30 minutes: 60 s windows, about 20 of them). The
#: memory test's turn is half a window.
WINDOW_S_MIN, WINDOW_S_MAX = 10.0, 60.0
#: The shortest turn worth starting (the process starts, chooses its algorithm and warms up first).
TURN_S_MIN = 5.0
#: Seconds a turn's processes get beyond their length before they are stopped (start, set-up, verification).
TURN_GRACE_S = 180.0
SAMPLE_INTERVAL_S = 1.0


def default_minutes() -> float:
    """``GPUACCEPT_BURNIN_MINUTES`` when set, else DEFAULT_MINUTES; ValueError naming the variable otherwise."""
    text = os.environ.get(MINUTES_ENV, "").strip()
    if not text:
        return DEFAULT_MINUTES
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{MINUTES_ENV}={text!r}: give the burn-in's length in minutes (e.g. 30)") from None


def check_minutes(minutes: float, where: str = "--minutes") -> float:
    if not MIN_MINUTES <= minutes <= MAX_MINUTES:
        raise ValueError(
            f"{where} {minutes:g}: the burn-in lasts {MIN_MINUTES:g} to {MAX_MINUTES:g} minutes "
            f"(default {DEFAULT_MINUTES:g})"
        )
    return minutes


@dataclass(frozen=True)
class Schedule:
    """How long the burn-in lasts, its GEMM windows and its memory-test turns (0: GEMM alone)."""

    duration_s: float
    window_s: float
    memtest_s: float
    turn_min_s: float = TURN_S_MIN

    @classmethod
    def for_minutes(cls, minutes: float, memtest: bool) -> Schedule:
        duration = check_minutes(minutes) * 60.0
        window = min(WINDOW_S_MAX, max(WINDOW_S_MIN, duration / 6.0))
        return cls(duration, window, window / 2.0 if memtest else 0.0)

    def next_turn(self, left_s: float, last: str | None, overhead_s: float) -> tuple[str, float] | None:
        """The next turn, (kind, seconds), with ``left_s`` of the burn-in left and ``overhead_s`` the time a turn's
        processes take beyond their length; None when no turn fits. A memory-test turn follows a GEMM window only
        where a GEMM window still fits after it, and a GEMM window that would leave too little for another turn
        takes the rest, so that the burn-in ends on a GEMM window at its length."""
        room = left_s - overhead_s
        if last is None:
            return "gemm", self.window_s
        if room < self.turn_min_s:
            return None
        if (
            last == "gemm"
            and self.memtest_s > 0
            and room - self.memtest_s - overhead_s >= max(self.turn_min_s, self.window_s / 2.0)
        ):
            return "memtest", self.memtest_s
        rest = room - self.window_s - overhead_s
        return "gemm", self.window_s if rest >= self.turn_min_s else room


# ------------------------------------------------------------------------------------------------
# One turn: a process per GPU, all at once.


def gemm_argv(gemm: str, gpu: int, seconds: float, precision: str, size: int, output: Path) -> list[str]:
    """One GPU's sustained GEMM window: the metric size alone, no size series, one precision."""
    return [
        gemm,
        "--precisions",
        precision,
        "--series",
        "none",
        "--large",
        "none",
        "--metric-size",
        str(size),
        "--window-s",
        f"{seconds:.1f}",
        "--gpus",
        str(gpu),
        "--output",
        str(output),
    ]


def memtest_argv(memtest: str, gpu: int, seconds: float, output: Path) -> list[str]:
    """One GPU's memory-test turn of about ``seconds``."""
    return [memtest, "--gpus", str(gpu), "--seconds", f"{seconds:.1f}", "--output", str(output)]


@dataclass
class Child:
    gpu: int
    argv: list[str]
    output: Path
    log: Path
    proc: subprocess.Popen | None = None
    start_s: float = 0.0
    end_s: float | None = None
    exit_status: int | None = None
    error: str = ""


class Load:
    """Starts and waits for the turns' processes; remembers every process it started (their compute contexts are
    the burn-in's own) and stops them all when the burn-in is stopped (SIGTERM: ReFrame's time limit)."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.pids: set[int] = set()
        self.running: list[Child] = []
        self.stopped: int | None = None  # the signal that stopped the burn-in
        self.env = {**os.environ, "LC_ALL": "C", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

    def now(self) -> float:
        return time.monotonic() - self.t0

    def stop(self, signum: int) -> None:
        self.stopped = signum
        for c in self.running:
            if c.proc and c.proc.poll() is None:
                c.proc.terminate()

    def run(self, children: list[Child], timeout_s: float) -> list[Child]:
        """Start every child at once, wait for them (each until ``timeout_s``, then killed), and return them."""
        self.running = children
        for c in children:
            c.start_s = self.now()
            try:
                with open(c.log, "w", encoding="utf-8") as log:
                    c.proc = subprocess.Popen(c.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env)
                self.pids.add(c.proc.pid)
            except OSError as err:
                c.error = f"cannot start {c.argv[0]}: {err.strerror or err}"
                c.end_s = c.start_s
        while any(c.proc and c.exit_status is None for c in children):
            for c in children:
                if c.proc is None or c.exit_status is not None:
                    continue
                rc = c.proc.poll()
                if rc is None and self.now() - c.start_s > timeout_s:
                    c.proc.kill()
                    rc = c.proc.wait()
                    c.error = f"still running after {timeout_s:g} s: stopped"
                if rc is not None:
                    c.exit_status, c.end_s = rc, self.now()
            time.sleep(0.2)
        self.running = []
        return children


def _load_doc(path: Path) -> tuple[dict[str, Any] | None, str]:
    if not os.path.lexists(path):
        return None, "left no document"
    try:
        doc = textinput.load_json(path, "its document", ValueError)
    except ValueError as err:
        return None, f"left an unreadable document ({err})"
    if doc.get("schema") != BENCH_SCHEMA:
        return None, f"left no {BENCH_SCHEMA} document"
    return doc, ""


def _doc_failures(doc: dict[str, Any]) -> list[str]:
    verification = doc.get("verification") or {}
    failures = [str(f) for f in (verification.get("failures") or [])[:3]]
    if not verification.get("passed", False) and not failures:
        failures = ["verification failed"]
    return [*failures, *(f"error: {e}" for e in (doc.get("errors") or [])[:3])]


def turn_record(kind: str, index: int, child: Child, precision: str) -> dict[str, Any]:
    """What one GPU's turn measured: when it ran, how its process ended, and (GEMM) the window's rates and clocks
    from gpuaccept-gemm's document or (memory test) gpuaccept-memtest's verdict on the memory it tested."""
    rec: dict[str, Any] = {
        "kind": kind,
        "index": index,
        "start_s": round(child.start_s, 3),
        "end_s": None if child.end_s is None else round(child.end_s, 3),
        "exit_status": child.exit_status,
        "document": child.output.name,
        "passed": False,
        "problems": [],
    }
    problems: list[str] = [child.error] if child.error else []
    doc, why = _load_doc(child.output)
    if doc is None:
        problems.append(why)
    else:
        problems += _doc_failures(doc)
    if kind == "gemm" and doc is not None:
        row = next(
            (
                r
                for r in (doc.get("results") or {}).get("gemm") or []
                if r.get("phase") == "window" and r.get("mode") == "solo" and r.get("precision") == precision
            ),
            None,
        )
        if row is None or row.get("skipped"):
            problems.append(f"no {precision} window row" + (f": {row['skipped']}" if row else ""))
        else:
            clocks = row.get("clocks") or {}
            algo = row.get("algorithm") or {}
            rec.update(
                {
                    "tflops_median": row.get("tflops_median"),
                    "tflops_min": row.get("tflops_min"),
                    "tflops_max": row.get("tflops_max"),
                    "calls": row.get("samples"),
                    "seconds_timed": row.get("seconds_total"),
                    "verified": row.get("verified"),
                    "rel_error": row.get("rel_error"),
                    "sm_mhz_median": clocks.get("sm_clock_mhz_median"),
                    "power_w_median": clocks.get("power_w_median"),
                    "algorithm": f"{algo.get('api')} heuristic rank {algo.get('heuristic_rank')}",
                }
            )
    if kind == "memtest" and doc is not None:
        rec["metrics"] = {k: m.get("value") for k, m in (doc.get("metrics") or {}).items() if isinstance(m, dict)}
    if child.exit_status not in (0, None) and not child.error:
        problems.insert(0, f"exit status {child.exit_status}")
    rec["problems"] = problems
    rec["passed"] = not problems and child.exit_status == 0
    return rec


# ------------------------------------------------------------------------------------------------
# XID events from the kernel log, where NVML raises none to an event set.


def short_bus(bus: str | None) -> str | None:
    """NVML's ``00000000:18:00.0`` as the kernel's XID line spells it, ``0000:18:00``."""
    if not bus:
        return None
    parts = bus.lower().split(":")
    if len(parts) < 3:
        return None
    return f"{parts[0][-4:]}:{parts[1]}:{parts[2].split('.')[0]}"


def kernel_log_xids(since_unix: float, started_unix: float, buses: dict[int, str | None]) -> tuple[list, str, str]:
    """(events, how the log was read, why not) of XID lines since ``since_unix``, each with its GPU (by bus id; None
    for a GPU this node's NVML does not list) and its time in seconds into the burn-in."""
    text, how, why = health.read_kernel_log(since_unix)
    if text is None:
        return [], "", "; ".join(why) or "no way to read it"
    by_bus = {short_bus(b): g for g, b in buses.items()}
    events = []
    for e in health.parse_xids(text, since_unix, health.boot_time()):
        t = e["time_unix"]
        events.append(
            {
                "gpu": by_bus.get(e["pci"]),
                "xid": e["xid"],
                "t_s": None if t is None else round(t - started_unix, 3),
                "source": "kernel_log",
                "text": e["text"],
            }
        )
    return events, how, ""


# ------------------------------------------------------------------------------------------------
# Figures: per GPU, then min, max or sum over the GPUs.

# metric -> (unit, better, how GPUs combine, what it is)
FIGURES: dict[str, tuple[str, str, str, str]] = {
    "tflops_first_window_min": ("TFLOP/s", "higher", "min", "median GEMM rate of the first window"),
    "tflops_last_window_min": ("TFLOP/s", "higher", "min", "median GEMM rate of the last window"),
    "tflops_last_over_first_min": ("ratio", "higher", "min", "last window's median GEMM rate over the first's"),
    "gpu_temp_max_c": ("C", "lower", "max", "hottest GPU temperature sampled"),
    "memory_temp_max_c": ("C", "lower", "max", "hottest memory (HBM) temperature sampled"),
    "power_median_max_w": ("W", "lower", "max", "median power over the burn-in"),
    "throttle_other_samples": (
        "count",
        "lower",
        "max",
        "samples with a clock-event reason other than the power cap or idle",
    ),
    "xid_events": ("count", "lower", "sum", "XID events during the burn-in"),
    "ecc_uncorrectable_new": ("count", "lower", "sum", "uncorrectable ECC errors counted during the burn-in"),
    "remapped_rows_pending": ("count", "lower", "sum", "GPUs with a row remapping pending during the burn-in"),
    "nvlink_errors_new": ("count", "lower", "sum", "NVLink CRC, replay and recovery errors counted during the burn-in"),
    "gemm_windows_min": ("count", "higher", "min", "GEMM windows that measured a rate"),
}


def gpu_figures(g: dict[str, Any]) -> dict[str, float | int | None]:
    """One GPU's figures (FIGURES' names) from its timeline, windows and events; None where it has none."""
    timeline, windows = g["timeline"], g["windows"]
    rated = tl.gemm_windows(windows)
    ratio = tl.windows_ratio(windows)
    hot, hbm = tl.peak(timeline, "gpu_temp_c"), tl.peak(timeline, "mem_temp_c")
    ecc = tl.rise(timeline, "ecc_uncorrected")
    pending = [v for v in timeline["remap_pending"] if v is not None]
    nvlink = None
    if g.get("nvlink", {}).get("links"):
        rises = [tl.rise(timeline, c) for c in ("nvlink_crc", "nvlink_replay", "nvlink_recovery")]
        nvlink = None if None in rises else sum(rises)  # type: ignore[arg-type]
    return {
        "tflops_first_window_min": rated[0]["tflops_median"] if rated else None,
        "tflops_last_window_min": rated[-1]["tflops_median"] if len(rated) > 1 else None,
        "tflops_last_over_first_min": ratio[2] if ratio else None,
        "gpu_temp_max_c": hot[0] if hot else None,
        "memory_temp_max_c": hbm[0] if hbm else None,
        "power_median_max_w": tl.median(timeline, "power_w"),
        "throttle_other_samples": tl.other_reason_samples(timeline) if tl.length(timeline) else None,
        "xid_events": len(g["xid_events"]) if g.get("xid_source") else None,
        "ecc_uncorrectable_new": ecc,
        "remapped_rows_pending": int(any(pending)) if pending else None,
        "nvlink_errors_new": nvlink,
        "gemm_windows_min": len(rated),
    }


def _why_none(name: str, per_gpu: list[dict[str, Any]]) -> str:
    if name == "nvlink_errors_new" and not any(g.get("nvlink", {}).get("links") for g in per_gpu):
        return "no NVLink link up on any GPU"
    if name.startswith("tflops_"):
        return "fewer than two GEMM windows measured a rate on some GPU"
    if name == "xid_events":
        return "XID events could not be watched (no NVML event set, kernel log unreadable)"
    return "NVML did not report it on some GPU"


def figures(per_gpu: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    """The document's metrics (over every GPU), waived metrics and ``gpu_metrics`` (each GPU's own)."""
    each = [(g["gpu"], gpu_figures(g)) for g in per_gpu]
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    gpu_metrics = [{"gpu": gpu, "metrics": {}} for gpu, _ in each]
    for name, (unit, better, how, what) in FIGURES.items():
        values = [f[name] for _, f in each]
        for entry, v in zip(gpu_metrics, values, strict=True):
            if v is not None:
                entry["metrics"][name] = {"value": v, "unit": unit, "better": better}
        if not values or any(v is None for v in values):
            waived[name] = _why_none(name, per_gpu)
            continue
        value = {"min": min, "max": max, "sum": sum}[how](values)  # type: ignore[type-var]
        over = {"min": "min over GPUs of the", "max": "max over GPUs of the", "sum": "sum over GPUs of the"}[how]
        metrics[name] = {"value": value, "unit": unit, "better": better, "description": f"{over} {what}"}
    return metrics, waived, gpu_metrics


# ------------------------------------------------------------------------------------------------
# The document.


def timeline_csv(timeline: dict[str, list[Any]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(tl.COLUMNS)
    for row in zip(*(timeline[c] for c in tl.COLUMNS), strict=True):
        w.writerow("" if v is None else v for v in row)
    return out.getvalue()


def not_run_document(argv: list[str], started: str, reason: str, fix: str) -> dict[str, Any]:
    return {
        **document.header(TOOL, argv, started, "nothing ran"),
        "devices": [],
        "parameters": {},
        "results": {},
        "metrics": {},
        "waived": {},
        "verification": {"passed": False, "checked": 0, "failures": []},
        "errors": [reason],
        "not_run": {"reason": reason, "fix": fix},
    }


@dataclass
class Outcome:
    """What ran: per GPU its turns; the sampler; the burn-in's start (Unix time) and actual length; errors."""

    sampler: Sampler
    started_unix: float
    elapsed_s: float
    turns: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def build_document(
    args: argparse.Namespace, argv: list[str], sched: Schedule, memtest: dict[str, Any], out: Outcome
) -> dict[str, Any]:
    s = out.sampler
    per_gpu = []
    for g in s.gpus:
        xids = [e for e in s.xid_events if e.get("gpu") == g.index]
        per_gpu.append(
            {
                "gpu": g.index,
                **{k: g.facts.get(k) for k in ("name", "pci_bus_id", "serial", "power_limit_w", "thresholds_c")},
                "samples": tl.length(g.timeline),
                "timeline": g.timeline,
                "windows": out.turns.get(g.index, []),
                "reason_episodes": [e.to_json() for e in tl.episodes(g.timeline, out.elapsed_s)],
                "xid_source": s.xid_source,
                "xid_events": xids,
                "foreign_processes": s.foreign_of(g.index),
                "nvlink": {"links": g.links, "errors_start": g.link_errors_start, "errors_end": g.link_errors_end},
            }
        )
    metrics, waived, gpu_metrics = figures(per_gpu)
    unplaced = [e for e in s.xid_events if e.get("gpu") is None]
    failures = [
        f"GPU {gpu} {rec['kind']} turn {rec['index']} ({rec['start_s']:.0f}-{rec['end_s'] or 0:.0f} s): "
        + "; ".join(rec["problems"])
        for gpu, recs in sorted(out.turns.items())
        for rec in recs
        if not rec["passed"]
    ]
    timing = (
        f"GEMM windows of {sched.window_s:g} s ({args.precision}, n={args.size}: gpuaccept-gemm's median of "
        f"back-to-back calls after its warm-up) on every GPU at once"
        + (
            f", each followed by a {sched.memtest_s:g} s memory-test turn (gpuaccept-memtest)"
            if sched.memtest_s
            else ""
        )
        + f", for {sched.duration_s:g} s; every GPU read through NVML every {SAMPLE_INTERVAL_S:g} s throughout; "
        "times in seconds since the burn-in started (results.started_unix)"
    )
    return {
        **document.header(TOOL, argv, document.utc_iso(out.started_unix), timing, out.elapsed_s),
        "cuda": {"driver_version": None, "runtime_version": None, "driver_release": s.session.versions()[0]},
        "devices": [{k: g.facts.get(k) for k in ("index", "name", "pci_bus_id", "uuid", "serial")} for g in s.gpus],
        "parameters": {
            "minutes": args.minutes,
            "duration_s": sched.duration_s,
            "window_s": sched.window_s,
            "memtest_s": sched.memtest_s,
            "precision": args.precision,
            "metric_size": args.size,
            "gemm": args.gemm,
            "memtest": args.memtest or None,
            "sample_interval_s": SAMPLE_INTERVAL_S,
            "exempt_pids": sorted(args.exempt_pid or []),
        },
        "results": {
            "started_unix": round(out.started_unix, 3),
            "elapsed_s": round(out.elapsed_s, 3),
            "memtest": memtest,
            "xid": {"source": s.xid_source, "why_not_nvml": s.xid_why_not or None, "unplaced_events": unplaced},
            "timeline_columns": list(tl.COLUMNS),
            "timeline_files": [f"burnin_gpu{g.index}.csv" for g in s.gpus],
            "per_gpu": per_gpu,
        },
        "metrics": metrics,
        "waived": waived,
        "gpu_metrics": gpu_metrics,
        "verification": {
            "passed": not failures,
            "checked": sum(len(v) for v in out.turns.values()),
            "failures": failures,
        },
        "errors": [*out.errors, *s.errors],
    }


# ------------------------------------------------------------------------------------------------
# The run.


def memtest_state(path: str | None) -> dict[str, Any]:
    """Whether the memory test takes turns: its binary given and executable, else why not."""
    if not path:
        return {
            "available": False,
            "binary": None,
            "why": "no gpuaccept-memtest given: GEMM windows alone (build it: make -C reframe_checks/src memtest)",
        }
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return {"available": False, "binary": path, "why": f"{path} is not an executable file: GEMM windows alone"}
    return {"available": True, "binary": path, "why": None}


def drive(args: argparse.Namespace, sched: Schedule, sampler: Sampler, workdir: Path) -> Outcome:
    """Run the turns until the duration is spent (or a signal stops the burn-in) while ``sampler`` reads."""
    t0 = time.monotonic()
    load = Load(t0)
    sampler.ours = lambda: set(load.pids)
    out = Outcome(sampler, time.time(), 0.0)
    handlers = {sig: signal.signal(sig, lambda s, _f: load.stop(s)) for sig in (signal.SIGTERM, signal.SIGINT)}
    sampler.start(t0)
    last, overhead, index = None, 5.0, {"gemm": 0, "memtest": 0}
    try:
        while load.stopped is None:
            turn = sched.next_turn(sched.duration_s - load.now(), last, overhead)
            if turn is None:
                break
            kind, seconds = turn
            index[kind] += 1
            k = index[kind]
            children = []
            for g in sampler.gpus:
                output = workdir / f"{kind}-gpu{g.index}-{k}.json"
                argv = (
                    gemm_argv(args.gemm, g.index, seconds, args.precision, args.size, output)
                    if kind == "gemm"
                    else memtest_argv(args.memtest, g.index, seconds, output)
                )
                children.append(Child(g.index, argv, output, output.with_suffix(".log")))
            began = load.now()
            load.run(children, seconds + TURN_GRACE_S)
            overhead = max(overhead if last else 0.0, load.now() - began - seconds)
            for c in children:
                out.turns.setdefault(c.gpu, []).append(turn_record(kind, k, c, args.precision))
            last = kind
            print(
                f"{TOOL}: {kind} turn {k} ({seconds:.0f} s) ended at {load.now():.0f} s of {sched.duration_s:g}",
                file=sys.stderr,
            )
    finally:
        out.elapsed_s = load.now()
        sampler.stop()
        for sig, old in handlers.items():
            signal.signal(sig, old)
    if load.stopped is not None:
        out.errors.append(
            f"stopped by signal {load.stopped} after {out.elapsed_s:.0f} s of {sched.duration_s:g}: "
            "the burn-in did not run its whole length"
        )
    return out


def run(args: argparse.Namespace, argv: list[str]) -> int:
    minutes = check_minutes(
        args.minutes if args.minutes is not None else default_minutes(),
        "--minutes" if args.minutes is not None else MINUTES_ENV,
    )
    args.minutes = minutes
    if not (os.path.isfile(args.gemm) and os.access(args.gemm, os.X_OK)):
        raise ValueError(f"--gemm {args.gemm}: not an executable file (build gpuaccept-gemm first)")
    memtest = memtest_state(args.memtest)
    if not memtest["available"]:
        args.memtest = None
    sched = Schedule.for_minutes(minutes, bool(memtest["available"]))
    output = Path(args.output)
    workdir = output.resolve().parent / "burnin-turns"
    workdir.mkdir(parents=True, exist_ok=True)
    started = document.utc_iso()
    try:
        session = Nvml()
    except Exception as err:  # ImportError/OSError without a driver, or NVML's own error
        doc = not_run_document(
            argv,
            started,
            f"NVML cannot be opened: {err}",
            "install the NVIDIA driver and nvidia-ml-py (the tool environment has it), then rerun",
        )
        write_text_atomic(output, document.dumps(doc))
        print(f"{TOOL}: NOT RUN: {doc['not_run']['reason']}", file=sys.stderr)
        return EXIT_NOT_RUN
    try:
        sampler = Sampler(session, SAMPLE_INTERVAL_S, set(args.exempt_pid or []))
        if not sampler.gpus:
            doc = not_run_document(argv, started, "NVML sees no GPU", "check nvidia-smi and the driver, then rerun")
            write_text_atomic(output, document.dumps(doc))
            return EXIT_NOT_RUN
        print(
            f"{TOOL}: {len(sampler.gpus)} GPUs for {sched.duration_s:g} s: GEMM windows of {sched.window_s:g} s"
            + (f", memory-test turns of {sched.memtest_s:g} s" if sched.memtest_s else f" ({memtest['why']})"),
            file=sys.stderr,
        )
        out = drive(args, sched, sampler, workdir)
        if sampler.xid_source is None:
            buses = {g.index: g.facts.get("pci_bus_id") for g in sampler.gpus}
            events, how, why = kernel_log_xids(out.started_unix - 1.0, out.started_unix, buses)
            if how:
                sampler.xid_source = f"kernel_log ({how})"
                sampler.xid_events = events
            else:
                sampler.xid_why_not += f"; kernel log: {why}"
        doc = build_document(args, argv, sched, memtest, out)
    finally:
        session.close()
    write_text_atomic(output, document.dumps(doc))
    for g in doc["results"]["per_gpu"]:
        write_text_atomic(output.parent / f"burnin_gpu{g['gpu']}.csv", timeline_csv(g["timeline"]))
    print(summary_line(doc), file=sys.stderr)
    if doc["errors"]:
        return EXIT_ERROR
    return EXIT_OK if doc["verification"]["passed"] else EXIT_FAILED


def summary_line(doc: dict[str, Any]) -> str:
    parts = [f"{TOOL}: {doc['elapsed_s']:.0f} s"]
    for g in doc["results"]["per_gpu"]:
        f = gpu_figures(g)
        ratio = f["tflops_last_over_first_min"]
        parts.append(
            f"GPU {g['gpu']}: {f['gemm_windows_min']} GEMM windows, last/first "
            f"{'-' if ratio is None else f'{ratio:.3f}'}, max {f['gpu_temp_max_c']} C"
        )
    parts += [f"error: {e}" for e in doc["errors"]]
    return "; ".join(parts)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept burnin` (gpuaccept.cli_common says how subcommands are added)."""
    sp = sub.add_parser(
        "burnin",
        help="burn-in: sustained GEMM (and the memory test, where given) on every GPU at once for a duration, "
        "every GPU read through NVML once a second; exit 0 ran, 2 a turn failed, 1 error, 3 could not look",
    )
    sp.add_argument("--gemm", required=True, help="the gpuaccept-gemm executable")
    sp.add_argument("--memtest", default="", help="the gpuaccept-memtest executable ('' or missing: GEMM alone)")
    sp.add_argument(
        "--minutes",
        type=float,
        help=f"the burn-in's length ({MIN_MINUTES:g}-{MAX_MINUTES:g}; default "
        f"${MINUTES_ENV}, else {DEFAULT_MINUTES:g})",
    )
    sp.add_argument("--precision", default="fp64", help="GEMM precision (default %(default)s)")
    sp.add_argument("--size", type=int, default=8192, help="GEMM matrix order (default %(default)s)")
    sp.add_argument("--exempt-pid", type=int, action="append", help="a compute process that is not foreign")
    sp.add_argument("--output", required=True, help=f"the {BENCH_SCHEMA} document to write (atomically)")
    sp.set_defaults(func=lambda a: run(a, ["gpuaccept", *sys.argv[1:]]))
