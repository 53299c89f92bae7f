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
from pathlib import Path
from typing import Any

# The datasheet table is the references' (gpuaccept.references.datasheets): read here to annotate a document.
from gpuaccept.references.datasheets import (
    CHECKS_ANNOTATED,
    DEFAULT_PATH,
    GEMM_PRECISION,
    NOT_JUDGED,
    PRECISIONS,
    SCHEMA,
    GpuPeaks,
    PeaksError,
    find,
    load,
)

__all__ = ["CHECKS_ANNOTATED", "DEFAULT_PATH", "GEMM_PRECISION", "NOT_JUDGED", "PRECISIONS", "SCHEMA", "GpuPeaks",
           "PeaksError", "annotate", "find", "load"]



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
