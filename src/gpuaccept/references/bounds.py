"""Physical bounds: what no GPU node can measure, healthy or broken, whatever a reference says.

A figure out of these bounds is a broken or forged measurement, and fails its check with a reason naming the
metric, the value and the bound (docs/judge.md, "Physical bounds"):

- **above what the hardware can do**: a GEMM or HPL rate above the GPU model's datasheet peak for its precision
  (``reference_values/datasheets/gpu_peaks.yaml``, times the node's GPUs for a node sum), a datasheet fraction
  above 1, a device-to-device copy or the memory test's rate above the GPU memory bandwidth, a share of the GPU's
  memory above 1, a host<->GPU copy above the rate of the PCIe link NVML reports (twice it for a bidirectional
  copy: gpuaccept.references.link), an average power above the maximum board power (plus NVML's reading accuracy);
- **zero or negative where that is impossible**: every rate, time, latency, power, energy and memory figure is
  above zero; a count or a ratio is not negative.

The same bounds refuse a reference value (gpuaccept.references), which in addition must be at least the
unit's ``REFERENCE_FLOOR``: a reference of 1e-9 TFLOP/s with a 10 % band accepts a node that measured nothing.

Instantaneous power samples (``power_peak_w``) overshoot the power cap for a moment (724.7 W recorded on a 700 W
H100), so only averages and medians are held to the board power.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept import metric_table
from gpuaccept.layout import REFERENCE_DIR
from gpuaccept.references import datasheets, link

# The shipped datasheets: the peaks of a GPU model are facts about the model, not site data, so a reference
# directory without its own datasheets/ (a test's, a site's copy of the node types) is bounded by these.
SHIPPED_PEAKS = REFERENCE_DIR / datasheets.DEFAULT_PATH

# NVML's power reading is accurate to about +/-5 % of the draw (nvmlDeviceGetPowerUsage): an average or median
# power up to 5 % over the board's maximum is a reading, not a forgery.
POWER_READING_ACCURACY = 0.05

# Units of figures that are above zero on every node that measured anything: rates, times, power, energy, memory.
POSITIVE_UNITS = ("TFLOP/s", "GFLOP/s", "GB/s", "Gb/s", "GFLOP/s/W", "ns/day", "ns/day/kW", "us", "s", "s/step", "W",
                  "J", "kJ", "GiB")  # fmt: skip
# 'count' and 'ratio' figures can be zero (no XID event, a residual of 0), never negative.

# The smallest reference value in each unit that still judges something: orders of magnitude below any figure of a
# GPU node (shipped references: 19.5 TFLOP/s, 116 GFLOP/s, 450 GB/s, 70 W, 14 J, 0.5 ns/day on a CPU,
# 5e-4 s/step, ...). A higher-is-better reference below it accepts a node that measured next to nothing; a
# lower-is-better one rejects every node. A ratio is held to it only where higher is better (a 'lower' band): a
# residual or an energy difference can truly be 1e-6.
REFERENCE_FLOOR = {
    "TFLOP/s": 0.01, "GFLOP/s": 0.1, "GB/s": 0.01, "Gb/s": 0.1, "GFLOP/s/W": 0.01, "ns/day": 1e-4, "ns/day/kW": 1e-3,
    "us": 0.01, "s": 1e-3, "s/step": 1e-6, "W": 1.0, "J": 1e-3, "kJ": 1e-6, "GiB": 1e-3, "count": 1.0,
    "ratio": 1e-3,
}  # fmt: skip

_GEMM_RATE = re.compile(r"^(?P<prec>[a-z0-9]+)_(?:concurrent_|xfer_)?tflops_min$")
# Average or median power of one GPU (GPU-owned rows) or of every GPU of the node (node rows, the sampler's).
_AVERAGE_POWER = ("idle_power_max_w", "load_power_min_w", "load_power_max_w", "power_avg_w", "gpu_power_avg_w",
                  "*_power_avg_w")  # fmt: skip


class BoundsError(Exception):
    """The datasheet file that bounds the figures cannot be read."""


@dataclass(frozen=True)
class Limits:
    """What bounds a node's figures: its GPU count, its GPU model's datasheet (None: the model is not in the peaks
    file, so only the signs are bounded) and its slowest PCIe link (None: NVML reported none)."""

    gpus: int = 1
    datasheet: datasheets.GpuPeaks | None = None
    link_gbps: float | None = None
    link: str = ""
    unknown: str = ""  # the node has GPUs and no datasheet bounds them: why (what to add), else ""


@dataclass(frozen=True)
class Bound:
    low: float | None = None  # None: no lower bound
    low_open: bool = True  # True: the value must be above ``low``; False: at least ``low``
    high: float | None = None  # None: no upper bound
    why_high: str = ""


def peaks_file(reference_dir: str | Path | None) -> Path:
    """The datasheet file for a reference directory: its own ``datasheets/gpu_peaks.yaml``, else the shipped one."""
    if reference_dir is not None:
        own = Path(reference_dir) / datasheets.DEFAULT_PATH
        if own.exists():
            return own
    return SHIPPED_PEAKS


def _datasheet(reference_dir: str | Path | None, models: list[tuple[str, str | None]]) -> datasheets.GpuPeaks | None:
    """The datasheet of the GPU model every one of ``models`` (name, PCI device id) is; None when any is unknown
    or they differ (:func:`_lookup` says why)."""
    return _lookup(reference_dir, models)[0]


def _lookup(
    reference_dir: str | Path | None, models: list[tuple[str, str | None]]
) -> tuple[datasheets.GpuPeaks | None, str]:
    """(the datasheet of the GPU model every one of ``models`` (name, PCI device id) is, "") or (None, why: a model
    the datasheet file does not know, or models that differ). The facts' device id '0x233010DE' (device << 16 |
    vendor) is the table's '0x2330'."""
    if not models:
        return None, ""
    path = peaks_file(reference_dir)
    try:
        table = datasheets.load(path)
    except datasheets.PeaksError as err:
        raise BoundsError(str(err)) from None
    found: dict[str, datasheets.GpuPeaks] = {}
    for name, device in models:
        short = device[:6] if isinstance(device, str) and len(device) == 10 else device
        entry = datasheets.find(table, name, short)
        if entry is None:
            model = f"{name or 'a GPU NVML did not name'}" + (f" (PCI device id {device})" if device else "")
            return None, (
                f"no datasheet for {model} in {path}: no figure of it can be held to what the GPU can do; add the "
                "model's datasheet figures (tflops per precision, memory_gbps, max_power_w) there "
                "(docs/reference-values.md)"
            )
        found[entry.key] = entry
    if len(found) > 1:
        return None, f"the node's GPUs are of several models ({', '.join(sorted(found))}): no one datasheet bounds them"
    return next(iter(found.values())), ""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def node_limits(facts: dict[str, Any], reference_dir: str | Path | None) -> Limits:
    """The bounds of one node's figures from its facts (GPU models, count, PCIe links); BoundsError when the
    datasheet file is broken."""
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    models = [(str(g.get("name") or ""), _text(g.get("pci_device_id"))) for g in gpus]
    rate, label = link.node_link(facts)
    sheet, unknown = _lookup(reference_dir, models)
    return Limits(max(1, len(gpus)), sheet, rate, label if rate else "", unknown)


def model_limits(reference_dir: str | Path | None, names: list[str], pci_device_ids: list[str], gpus: int) -> Limits:
    """The bounds of a reference file's figures: its GPU model (names, PCI device ids) and GPU count; no link."""
    models = [(n, None) for n in names] if not pci_device_ids else [(names[0] if names else "", pci_device_ids[0])]
    return Limits(max(1, gpus), _datasheet(reference_dir, models))


def _peak(limits: Limits, precision: str, gpus: int) -> tuple[float | None, str]:
    sheet = limits.datasheet
    if sheet is None or precision not in sheet.tflops:
        return None, ""
    each = sheet.tflops[precision]
    times = f"{gpus} x " if gpus > 1 else ""
    return gpus * each, f"{times}the {sheet.names[0]} datasheet peak for {precision} ({each:g} TFLOP/s, {sheet.source})"


def bound(check: str, metric: str, limits: Limits) -> Bound | None:
    """The physical bound of one metric on a node with ``limits``; None for a metric the table does not know."""
    try:
        unit, layer = metric_table.lookup(check, metric)
    except metric_table.UnknownMetric:
        return None
    low, low_open = (0.0, True) if unit in POSITIVE_UNITS else (0.0, False)
    gpus = limits.gpus if layer == metric_table.NODE else 1
    high, why = _high(check, metric, limits, gpus)
    return Bound(low, low_open, high, why)


def _high(check: str, metric: str, limits: Limits, gpus: int) -> tuple[float | None, str]:
    sheet = limits.datasheet
    if check in datasheets.CHECKS_ANNOTATED and metric.endswith("_peak_fraction"):
        return 1.0, "the datasheet peak itself (a fraction of it is at most 1)"
    if check == "gemm" and (m := _GEMM_RATE.match(metric)) and m["prec"] in datasheets.GEMM_PRECISION:
        return _peak(limits, datasheets.GEMM_PRECISION[m["prec"]], 1)
    if check in ("hplstyle", "hpl_nvidia", "hpl_cuda") and metric in ("tflops_min", "tflops_per_gpu"):
        return _peak(limits, "fp64_tensor", 1)
    if check in ("hplstyle", "hpl_nvidia", "hpl_cuda") and metric in ("tflops_sum", "tflops"):
        return _peak(limits, "fp64_tensor", limits.gpus)
    if check == "bandwidth":
        if metric == "d2d_min" and sheet is not None and sheet.memory_gbps:
            return sheet.memory_gbps, f"the {sheet.names[0]} memory bandwidth ({sheet.source})"
        if limits.link_gbps and metric.startswith(("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable")):
            return limits.link_gbps, f"the rate of the PCIe link NVML reports ({limits.link})"
        if limits.link_gbps and metric.startswith("bidir_"):
            return 2 * limits.link_gbps, f"twice the rate of the PCIe link NVML reports ({limits.link})"
    if check == "memtest" and metric == "tested_fraction_min":
        return 1.0, "the GPU's whole memory (a fraction of it is at most 1)"
    if check == "memtest" and metric == "throughput_gbps_min" and sheet is not None and sheet.memory_gbps:
        return sheet.memory_gbps, f"the {sheet.names[0]} memory bandwidth, reads and writes together ({sheet.source})"
    if sheet is not None and sheet.max_power_w and any(fnmatch.fnmatchcase(metric, p) for p in _AVERAGE_POWER):
        each = sheet.max_power_w * (1 + POWER_READING_ACCURACY)
        times = f"{gpus} x " if gpus > 1 else ""
        return gpus * each, (
            f"{times}the {sheet.names[0]} maximum board power {sheet.max_power_w:g} W + {POWER_READING_ACCURACY:.0%} "
            f"NVML reading accuracy ({sheet.source})"
        )
    return None, ""


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def problem(check: str, metric: str, value: Any, limits: Limits) -> str | None:
    """Why ``value`` of a metric is physically impossible on this node, naming the metric, the value and the
    bound; None when it is possible (or not a number: the reference's rule says so)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    b = bound(check, metric, limits)
    if b is None:
        return None
    unit = metric_table.unit(check, metric)
    shown = f"{metric} {_fmt(value)} {unit}".rstrip()
    if b.low is not None and (value <= b.low if b.low_open else value < b.low):
        what = "zero or negative" if b.low_open else "negative"
        return f"{shown} is impossible: {what} (a broken or forged measurement)"
    if b.high is not None and value > b.high:
        return f"{shown} is impossible: above {_fmt(b.high)} {unit}, {b.why_high} (a broken or forged measurement)"
    return None


def problems(check: str, metrics: dict[str, Any], limits: Limits) -> dict[str, str]:
    """metric -> why its value is impossible, for every metric of a check's document (joined with the power
    sampler's) that is out of its physical bounds."""
    out = {}
    for name, m in metrics.items():
        why = problem(check, name, m.get("value") if isinstance(m, dict) else None, limits)
        if why:
            out[name] = why
    return out


def reference_problem(check: str, metric: str, value: float, higher_is_better: bool, limits: Limits) -> str | None:
    """Why a reference value cannot judge anything: out of the metric's physical bounds, or below the unit's
    ``REFERENCE_FLOOR`` (a ratio only where higher is better); None when it can."""
    why = problem(check, metric, value, limits)
    if why:
        return why
    try:
        unit = metric_table.unit(check, metric)
    except metric_table.UnknownMetric:
        return None
    floor = REFERENCE_FLOOR.get(unit)
    if floor is not None and value < floor and (unit != "ratio" or higher_is_better):
        return (
            f"{_fmt(value)} {unit} is below {floor:g} {unit}, the smallest reference that judges anything: a band "
            "around it accepts a node that measured next to nothing (or rejects every node)"
        )
    return None
