"""When an FFT pays for its trip to the GPU: ``gpuaccept-fft``'s host and cuFFT times per size (after the remote
BLAS/FFT offload thesis, docs/bibliography.md).

``gpuaccept-fft`` times complex-to-complex FFTs (batched 1-D and 3-D, FP32 and FP64) on the host's FFT (FFTW3 or
MKL, all threads) and on the GPU three ways (cuFFT alone on device-resident data; the whole offload, H2D, cuFFT,
D2H, from pinned and from pageable host memory), all in one document. Speed-up = host seconds / GPU seconds.

Crossover, per case (shape and precision) and offload mode: the smallest size, in complex points transformed, from
which the GPU with its transfers beats the host at every larger size of the sweep, found as in
:func:`gpuaccept.probe.offload.crossover` (``ln(host / gpu)`` interpolated linearly in ``ln points``).

:func:`annotate` writes ``results.crossover`` into the document and the informational metrics
``fft<shape>_<precision>_crossover_points_<mode>`` (or waives them with the reason). docs/checks/fft-offload.md
says what each figure means.
"""

from __future__ import annotations

import math
from typing import Any

from gpuaccept.probe.offload import (
    OffloadError,
    _cases,
    _fmt,
    crossover,
    crossover_lines,
    record_crossovers,
)

#: The offload modes a crossover is computed for; ``kernel`` (no transfers) is reported beside them.
MODES = ("pinned", "pageable")
GPU_MODES = ("kernel", *MODES)


def _seconds(case: dict[str, Any], mode: str, name: str) -> float:
    try:
        v = case[mode]["seconds"]
    except (KeyError, TypeError) as err:
        raise OffloadError(f"{name}: case {case.get('shape')} {case.get('precision')} points={case.get('points')} "
                           f"lacks {mode}.seconds") from err
    return float(v) if isinstance(v, (int, float)) and v > 0 else math.nan


def analyse(doc: dict[str, Any], name: str = "fft document") -> dict[str, Any]:
    """Per case ``fft<shape>_<precision>``: the rows (points, host and GPU seconds, speed-ups) and the crossover per
    offload mode (and for the kernel alone)."""
    out: dict[str, Any] = {}
    for c in _cases(doc, name, "gpuaccept-fft"):
        key = f"fft{c.get('shape')}_{c.get('precision')}"
        res = out.setdefault(key, {"rows": [], "notes": []})
        try:
            points = int(c["points"])
        except (KeyError, TypeError, ValueError) as err:
            raise OffloadError(f"{name}: a {key} case lacks points") from err
        if not c.get("run"):
            res["notes"].append(f"points={points} not run: {c.get('not_run', 'no reason given')}")
            continue
        if not c.get("verified"):
            res["notes"].append(f"points={points} left out: the GPU's result failed verification")
            continue
        row: dict[str, Any] = {"points": points, "size": c.get("size"), "host_s": _seconds(c, "host", name)}
        for m in GPU_MODES:
            row[f"{m}_s"] = _seconds(c, m, name)
            row[f"speedup_{m}"] = row["host_s"] / row[f"{m}_s"]
        res["rows"].append(row)
    for res in out.values():
        for m in GPU_MODES:
            pts = [(r["points"], 1.0 / r[f"{m}_s"], 1.0 / r["host_s"]) for r in res["rows"]
                   if math.isfinite(r[f"{m}_s"]) and math.isfinite(r["host_s"])]
            res[m] = crossover(pts, size="points")
    return out


def annotate(doc: dict[str, Any], name: str = "fft document") -> dict[str, Any]:
    """The document with ``results.crossover`` and the informational metrics
    ``fft<shape>_<precision>_crossover_points_<mode>`` added (waived, with the reason, where there is none)."""
    analysis = analyse(doc, name)
    doc.setdefault("results", {})["crossover"] = {
        "method": "smallest size (complex points) from which the GPU's time (with transfers for pinned and pageable) "
        "is below the host FFT's at every larger size of the sweep; ln(host/gpu) interpolated linearly in ln points "
        "between the two sweep sizes around the sign change",
        "per_case": analysis,
    }
    record_crossovers(doc, analysis, "points", "smallest {case} size (complex points) from which cuFFT offloaded "
                      "from {mode} host memory (H2D, FFT, D2H) beats the host's FFT, interpolated in log points "
                      "between {lo} and {hi} (informational)")
    return doc


def summary(doc: dict[str, Any]) -> str:
    """A table per case and size, then the crossovers."""
    cx = doc["results"]["crossover"]["per_case"]
    if not cx:
        errors = "; ".join(str(e) for e in doc.get("errors") or []) or "none recorded"
        return f"the fft document has no case to compare (its errors: {errors})"
    lines = ["milliseconds (median); speed-up = host / GPU",
             f"{'case':11} {'points':>10} {'host':>9} {'kernel':>9} {'pinned':>9} {'pageable':>9} "
             f"{'x kernel':>8} {'x pinned':>8} {'x pageab':>8}"]
    for case, res in cx.items():
        for r in res["rows"]:
            lines.append(
                f"{case:11} {r['points']:>10} {_fmt(r['host_s'] * 1e3, '.3f'):>9} "
                f"{_fmt(r['kernel_s'] * 1e3, '.3f'):>9} "
                f"{_fmt(r['pinned_s'] * 1e3, '.3f'):>9} {_fmt(r['pageable_s'] * 1e3, '.3f'):>9} "
                f"{_fmt(r['speedup_kernel'], '.2f'):>8} {_fmt(r['speedup_pinned'], '.2f'):>8} "
                f"{_fmt(r['speedup_pageable'], '.2f'):>8}")
    lines += crossover_lines("crossover (the GPU beats the host FFT from):", cx, lambda case, res: case,
                             (("pinned", "pinned"), ("pageable", "pageable"), ("kernel alone", "kernel")))
    return "\n".join(lines)
