"""A burn-in's timeline: what the 1 Hz NVML sampler (gpuaccept.probe.burnin_sampler) read from one GPU, as columns,
and the pure functions that read it: how long each clock-event reason held, the first sample at or above a
threshold, the first rise of a counter, the peak of a series, the GEMM windows' rates.

The burn-in's document carries every GPU's timeline (gpuaccept.probe.burnin); the judge's rules
(gpuaccept.judge.burnin_rules), the document's own summary and the report's plot (gpuaccept.results.burnin_plot)
read it through these functions, so all three see the same thing. Nothing here touches a GPU.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass
from typing import Any

from gpuaccept.probe.power import reason_names

#: The columns of one GPU's timeline, one value per sample (None where NVML could not say):
#: seconds since the burn-in started; SM and memory clocks (MHz); GPU and memory (HBM) temperature (C); power (W);
#: the clock-event (throttle) reason mask; the volatile ECC counts (corrected, uncorrected); the remapped rows
#: (pending and failure flags as 0/1, the count remapped for uncorrectable errors); and the NVLink error counts
#: summed over the GPU's links (flow-control and data CRC, replay, recovery).
COLUMNS = (
    "t_s",
    "sm_mhz",
    "mem_mhz",
    "gpu_temp_c",
    "mem_temp_c",
    "power_w",
    "reasons",
    "ecc_corrected",
    "ecc_uncorrected",
    "remap_pending",
    "remap_failure",
    "remap_uncorrectable",
    "nvlink_crc",
    "nvlink_replay",
    "nvlink_recovery",
)
#: The columns that tell whether the GPU answered at all: a sample with none of them is a GPU NVML lost.
ALIVE_COLUMNS = ("sm_mhz", "gpu_temp_c", "power_w")
#: The clock-event reasons a burn-in's load runs into on a healthy GPU: the power cap (what a sustained GEMM reaches)
#: and idle (between a window and the next turn).
POWER_CAP_OR_IDLE = ("sw_power_cap", "gpu_idle")


def empty() -> dict[str, list[Any]]:
    return {c: [] for c in COLUMNS}


def append(timeline: dict[str, list[Any]], sample: dict[str, Any]) -> None:
    """One sample (a value per column; a missing column is None) added at the end."""
    for c in COLUMNS:
        timeline[c].append(sample.get(c))


def length(timeline: dict[str, Any]) -> int:
    return len(timeline.get("t_s") or [])


class TimelineError(ValueError):
    """A timeline whose columns are missing or of different lengths (a damaged or forged document)."""


def check(timeline: Any) -> dict[str, list[Any]]:
    """The timeline when every column is a list as long as ``t_s`` and ``t_s`` rises; TimelineError otherwise."""
    if not isinstance(timeline, dict):
        raise TimelineError(f"the timeline is a {type(timeline).__name__}, not an object of columns")
    n = None
    for c in COLUMNS:
        col = timeline.get(c)
        if not isinstance(col, list):
            raise TimelineError(f"the timeline has no column {c!r}")
        if n is not None and len(col) != n:
            raise TimelineError(f"the timeline's column {c!r} has {len(col)} values, t_s has {n}")
        n = len(col)
    times = timeline["t_s"]
    if any(not isinstance(t, (int, float)) or isinstance(t, bool) for t in times):
        raise TimelineError("the timeline's t_s holds a value that is not a number")
    if any(b < a for a, b in itertools.pairwise(times)):
        raise TimelineError("the timeline's t_s goes backwards")
    return timeline


@dataclass(frozen=True)
class Episode:
    """A clock-event reason held from ``start_s`` to ``end_s`` (each sample stands until the next one), over
    ``samples`` samples."""

    reason: str
    start_s: float
    end_s: float
    samples: int

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "start_s": round(self.start_s, 3),
            "end_s": round(self.end_s, 3),
            "seconds": round(self.seconds, 3),
            "samples": self.samples,
        }


def episodes(timeline: dict[str, list[Any]], end_s: float | None = None) -> list[Episode]:
    """Every stretch of consecutive samples in which a reason bit was set, in order of start. A sample stands for
    the time until the next one; the last until ``end_s`` (default: its own time plus the median interval)."""
    times, masks = timeline["t_s"], timeline["reasons"]
    if not times:
        return []
    steps = [b - a for a, b in itertools.pairwise(times)]
    step = statistics.median(steps) if steps else 1.0
    ends = [*times[1:], max(times[-1], end_s if end_s is not None else times[-1] + step)]
    open_: dict[str, tuple[float, int]] = {}
    out: list[Episode] = []
    for t, end, mask in zip(times, ends, masks, strict=True):
        names = set(reason_names(mask))
        for name in [n for n in open_ if n not in names]:
            start, count = open_.pop(name)
            out.append(Episode(name, start, t, count))
        for name in names:
            start, count = open_.get(name, (t, 0))
            open_[name] = (start, count + 1)
        last_end = end
    for name, (start, count) in open_.items():
        out.append(Episode(name, start, last_end, count))
    return sorted(out, key=lambda e: (e.start_s, e.reason))


def first_at_or_above(timeline: dict[str, list[Any]], column: str, threshold: float) -> tuple[float, float] | None:
    """(time, value) of the first sample of ``column`` at or above ``threshold``; None when none is."""
    for t, v in zip(timeline["t_s"], timeline[column], strict=True):
        if v is not None and v >= threshold:
            return t, v
    return None


def peak(timeline: dict[str, list[Any]], column: str) -> tuple[float, float] | None:
    """(value, time) of the largest value of ``column`` (the first such sample); None when none was read."""
    best: tuple[float, float] | None = None
    for t, v in zip(timeline["t_s"], timeline[column], strict=True):
        if v is not None and (best is None or v > best[0]):
            best = (v, t)
    return best


def median(timeline: dict[str, list[Any]], column: str) -> float | None:
    values = [v for v in timeline[column] if v is not None]
    return statistics.median(values) if values else None


def first_rise(timeline: dict[str, list[Any]], column: str) -> tuple[float, float, float] | None:
    """(time, value before, value then) of the first sample where a counter is above its first reading; None when
    it never rose (or was never read)."""
    first = None
    for t, v in zip(timeline["t_s"], timeline[column], strict=True):
        if v is None:
            continue
        if first is None:
            first = v
        elif v > first:
            return t, first, v
    return None


def rise(timeline: dict[str, list[Any]], column: str) -> float | None:
    """How much a counter rose from its first reading to its last; None when it was never read."""
    values = [v for v in timeline[column] if v is not None]
    return values[-1] - values[0] if values else None


def first_lost(timeline: dict[str, list[Any]]) -> float | None:
    """The time of the first sample in which the GPU answered none of ``ALIVE_COLUMNS`` after having answered
    before (NVML lost it: fallen off the bus, or the driver stopped talking to it); None when it never was lost."""
    answered = False
    for i, t in enumerate(timeline["t_s"]):
        alive = any(timeline[c][i] is not None for c in ALIVE_COLUMNS)
        if alive:
            answered = True
        elif answered:
            return t
    return None


def largest_gap(timeline: dict[str, list[Any]], end_s: float) -> tuple[float, float]:
    """(gap, start) of the longest time without a sample, the start and end of the burn-in included."""
    times = [0.0, *timeline["t_s"], end_s]
    gap, start = 0.0, 0.0
    for a, b in itertools.pairwise(times):
        if b - a > gap:
            gap, start = b - a, a
    return gap, start


def gemm_windows(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GEMM windows that measured a rate, in order of start."""
    rated = [w for w in windows if w.get("kind") == "gemm" and isinstance(w.get("tflops_median"), (int, float))]
    return sorted(rated, key=lambda w: w.get("start_s", 0.0))


def windows_ratio(windows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], float] | None:
    """(first window, last window, last's median rate over the first's) of the GEMM windows; None with fewer than
    two (or a first that measured nothing)."""
    rated = gemm_windows(windows)
    if len(rated) < 2 or not rated[0]["tflops_median"] > 0:
        return None
    return rated[0], rated[-1], rated[-1]["tflops_median"] / rated[0]["tflops_median"]


def other_reasons(mask: int | None) -> list[str]:
    """The reasons of a clock-event mask other than the power cap and idle."""
    return [r for r in reason_names(mask) if r not in POWER_CAP_OR_IDLE]


def other_reason_samples(timeline: dict[str, list[Any]]) -> int:
    """How many samples held a clock-event reason other than the power cap or idle."""
    return sum(1 for mask in timeline["reasons"] if other_reasons(mask))
