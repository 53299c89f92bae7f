"""Datasheet peak rates per GPU model (``reference_values/datasheets/gpu_peaks.yaml``) and how close a
benchmark document's rates come to them.

``annotate`` adds, for every rate metric of a gpuaccept-gemm or gpuaccept-hplstyle document whose precision
has a datasheet figure, a metric ``<metric>_peak_fraction`` (unit ``ratio``: the measured rate over the
peak of the GPUs it combines) and a ``peak`` block saying which GPU model, which figure and which source; a
rate whose GPU model or precision has no figure is waived with the reason. The fractions are plain ratios,
informational: how a GPU held at its power cap compares with the vendor's boost-clock figure
(docs/checks/gemm.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept import textinput

SCHEMA = "gpuaccept.gpu_peaks/1"
PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8")
DEFAULT_PATH = Path("datasheets") / "gpu_peaks.yaml"  # under the reference directory

#: Why a datasheet fraction is reported and not judged: the reference files' reason, and what `gpuaccept baseline`
#: proposes for every ``*_peak_fraction`` this module adds.
NOT_JUDGED = (
    "the rate over the datasheet peak of its precision (reference_values/datasheets/gpu_peaks.yaml): how close a GPU "
    "at its power cap comes to the vendor's boost-clock figure; reported, not judged"
)
#: The checks whose ``*_peak_fraction`` metrics this module adds (cpu_gemm's are its own tool's, and judged).
CHECKS_ANNOTATED = ("gemm", "hplstyle")

# gpuaccept-gemm's precisions -> the datasheet figure they run on (cuBLAS's DGEMM uses the FP64 tensor cores
# on GPUs that have them; FP32 is pedantic, no TF32).
GEMM_PRECISION = {"fp64": "fp64_tensor", "fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}


class PeaksError(Exception):
    """The peaks file is missing or malformed; the message names the file and the key."""


@dataclass(frozen=True)
class GpuPeaks:
    key: str
    names: tuple[str, ...]
    pci_device_ids: tuple[str, ...]
    tflops: dict[str, float]
    source: str
    reference: str
    memory_gbps: float | None = None  # the GPU memory bandwidth (GB/s): the judge's bound on a device copy
    max_power_w: float | None = None  # the maximum board power (W): the judge's bound on an average power
    nvlink_gbps: float | None = None  # NVLink per GPU, both directions together (GB/s): what the report sets
    # GPU-to-GPU copies and NCCL's bus bandwidth against (half of it per direction)


def load(path: str | Path) -> list[GpuPeaks]:
    path = Path(path)
    data = textinput.load(path, "peaks file", textinput.YAML, PeaksError)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise PeaksError(f"{path}: 'schema' must be {SCHEMA!r}")
    sources = data.get("sources")
    gpus = data.get("gpus")
    if not isinstance(sources, dict) or not isinstance(gpus, dict) or not gpus:
        raise PeaksError(f"{path}: needs the mappings 'sources' and 'gpus'")
    out = []
    for key, g in gpus.items():
        where = f"{path}: gpus.{key}"
        if not isinstance(g, dict):
            raise PeaksError(f"{where}: must be a mapping")
        names, ids, tflops = g.get("names"), g.get("pci_device_ids", []), g.get("tflops")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise PeaksError(f"{where}.names: a non-empty list of device names")
        if not isinstance(ids, list) or not all(isinstance(i, str) and i.lower().startswith("0x") for i in ids):
            raise PeaksError(f"{where}.pci_device_ids: a list of strings such as '0x2330'")
        if not isinstance(tflops, dict) or not tflops:
            raise PeaksError(f"{where}.tflops: a mapping of precision to TFLOP/s")
        for prec, value in tflops.items():
            if prec not in PRECISIONS:
                raise PeaksError(f"{where}.tflops.{prec}: unknown precision (known: {', '.join(PRECISIONS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise PeaksError(f"{where}.tflops.{prec}: {value!r} is not a positive number")
        limits = {}
        for lim in ("memory_gbps", "max_power_w", "nvlink_gbps"):
            value = g.get(lim)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
                raise PeaksError(f"{where}.{lim}: {value!r} is not a positive number")
            limits[lim] = None if value is None else float(value)
        source = g.get("source")
        if source not in sources:
            raise PeaksError(f"{where}.source: {source!r} is not under 'sources'")
        reference = (sources[source] or {}).get("reference") if isinstance(sources[source], dict) else None
        if not isinstance(reference, str) or not reference:
            raise PeaksError(f"{path}: sources.{source}.reference: the datasheet it comes from")
        out.append(GpuPeaks(str(key), tuple(names), tuple(i.lower() for i in ids),
                            {p: float(v) for p, v in tflops.items()}, source, reference, **limits))
    return out


def find(peaks: list[GpuPeaks], name: str, pci_device_id: str | None = None) -> GpuPeaks | None:
    """The entry for a GPU: by PCI device id first, then by exact device name."""
    if pci_device_id:
        for p in peaks:
            if pci_device_id.lower() in p.pci_device_ids:
                return p
    for p in peaks:
        if name in p.names:
            return p
    return None


def _gpu_ids(doc: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(name, pci device id) of each GPU the document measured; the id from its nvml block where present."""
    ids = {}
    for g in ((doc.get("nvml") or {}).get("gpus") or []):
        if g.get("pci_bus_id"):
            ids[str(g["pci_bus_id"]).lower()] = g.get("pci_device_id")
    return [(str(d.get("name", "")), ids.get(str(d.get("pci_bus_id", "")).lower())) for d in doc.get("devices") or []]


def _rate_metrics(doc: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(metric, datasheet precision, GPUs it adds up) of each rate metric the document's tool reports."""
    tool = doc.get("tool")
    metrics = {**(doc.get("metrics") or {}), **{k: None for k in doc.get("waived") or {}}}
    n_gpus = max(1, len(doc.get("devices") or []))
    out = []
    if tool == "gpuaccept-gemm":
        for name in metrics:
            for prec, figure in GEMM_PRECISION.items():
                if name in (f"{prec}_tflops_min", f"{prec}_concurrent_tflops_min"):
                    out.append((name, figure, 1))
    elif tool == "gpuaccept-hplstyle":
        for name in metrics:
            if name == "tflops_min":
                out.append((name, "fp64_tensor", 1))
            elif name == "tflops_sum":
                out.append((name, "fp64_tensor", n_gpus))
    return out


def _gemm_clocks(doc: dict[str, Any], metric: str) -> list[dict[str, Any]]:
    """The clocks of the window rows behind a gpuaccept-gemm rate metric, one per GPU."""
    prec, _, rest = metric.partition("_")
    # Every GPU at once throughout (the default with several GPUs): the per-GPU rate's windows are concurrent too.
    together = (doc.get("parameters") or {}).get("schedule") == "together"
    mode = "concurrent" if rest.startswith("concurrent") or together else "solo"
    rows = ((doc.get("results") or {}).get("gemm")) or []
    return [
        {"gpu": r.get("gpu"), **(r.get("clocks") or {})}
        for r in rows
        if r.get("precision") == prec and r.get("mode") == mode and r.get("phase") == "window" and r.get("clocks")
    ]


def _power_clocks(power_doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per GPU, the power sampler's clocks and power over the whole run (docs/checks/power.md)."""
    keys = ("gpu", "sm_mhz_median", "sm_mhz_min", "sm_mhz_max", "median_w", "avg_w", "peak_w", "power_limit_w",
            "throttled_s")  # fmt: skip
    return [{k: g.get(k) for k in keys} for g in ((power_doc.get("results") or {}).get("per_gpu") or [])]


def annotate(
    doc: dict[str, Any], peaks: list[GpuPeaks], peaks_path: str | Path, power_doc: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The document with ``peak`` and the ``*_peak_fraction`` metrics (or their waivers) added. Each fraction in
    the ``peak`` block carries the clock and power state its rate was measured at: the GEMM window rows' NVML
    readings, or (``power_doc``, the power sampler's document of the same run) the sampler's per-GPU figures."""
    rates = _rate_metrics(doc)
    gpus = _gpu_ids(doc)
    entries = [find(peaks, name, dev_id) for name, dev_id in gpus]
    metrics = doc.setdefault("metrics", {})
    waived = doc.setdefault("waived", {})
    block: dict[str, Any] = {"file": str(peaks_path), "gpu_model": None, "source": None, "tflops": {}, "fractions": {}}
    why = ""
    if not gpus:
        why = "no GPU in the document"
    elif any(e is None for e in entries):
        pairs = zip(gpus, entries, strict=True)
        unknown = sorted({f"{n!r} ({i or 'no PCI device id'})" for (n, i), e in pairs if e is None})
        why = f"no datasheet peak for GPU {', '.join(unknown)} in {peaks_path}"
    elif len({e.key for e in entries if e}) > 1:
        why = "the GPUs are of different models: " + ", ".join(sorted({e.key for e in entries if e}))
    entry = entries[0] if entries and not why else None
    if entry:
        block.update(gpu_model=entry.key, source=entry.reference, tflops=dict(entry.tflops))
    for name, figure, gpus_added in rates:
        frac_name = f"{name}_peak_fraction"
        if name not in metrics:
            waived[frac_name] = f"{name} was not measured: {waived.get(name, 'not reported')}"
            continue
        if entry is None:
            waived[frac_name] = why
            continue
        peak = entry.tflops.get(figure)
        if peak is None:
            waived[frac_name] = f"{entry.key}: no datasheet figure for {figure}"
            continue
        value = float(metrics[name]["value"]) / (peak * gpus_added)
        if not math.isfinite(value):
            waived[frac_name] = f"{name} is not a finite number"
            continue
        metrics[frac_name] = {
            "value": value,
            "unit": "ratio",
            "better": "higher",
            "description": f"{name} over the datasheet's {figure} peak of {entry.key} "
            f"({peak:g} TFLOP/s{f' x {gpus_added} GPUs' if gpus_added > 1 else ''}; {entry.source})",
        }
        for own in doc.get("gpu_metrics") or []:  # each GPU's own rate (docs/benchmark-json.md): its own fraction
            rate = (own.get("metrics") or {}).get(name)
            if gpus_added == 1 and isinstance(rate, dict) and isinstance(rate.get("value"), (int, float)):
                own["metrics"][frac_name] = {"value": float(rate["value"]) / peak, "unit": "ratio", "better": "higher"}
        state = _gemm_clocks(doc, name) if doc.get("tool") == "gpuaccept-gemm" else []
        if not state and power_doc:
            state = _power_clocks(power_doc)
        block["fractions"][name] = {"figure": figure, "peak_tflops": peak * gpus_added, "fraction": value,
                                    "clocks": state or None}  # fmt: skip
    doc["peak"] = block
    return doc
