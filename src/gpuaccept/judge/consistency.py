"""Documents agree with themselves (docs/judge.md, "Every GPU, once"): a node figure the tool derives from its
GPUs' figures is what those figures give, and the GPUs a check says it used are the node's. A contradiction
fails the check, naming both numbers.

- A node figure named ``*_min`` (``*_max``) of a metric the document also reports per GPU is the smallest
  (largest) of the GPUs' figures, every tool of gpuaccept derives it so (docs/benchmark-json.md); ``errors_total``
  is their sum. Within ``RELATIVE_TOLERANCE``: the documents print nine significant digits.
- HPL-CUDA (``parameters.backend``): the ranks, the GPUs it used and saw, and each run's process grid (P x Q)
  are the node's GPU count: a run over fewer GPUs than the node has never measured the others.

Rates and residuals out of their physical bounds are gpuaccept.references.bounds' (the datasheet, the link).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from gpuaccept.judge import pergpu

RELATIVE_TOLERANCE = 1e-6
#: Node figures that are the sum of the GPUs' figures.
SUMS = frozenset({"errors_total"})


def _value(m: Any) -> float | None:
    v = m.get("value") if isinstance(m, dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _derived(metric: str, values: list[float]) -> tuple[str, float] | None:
    if metric in SUMS:
        return "the sum", sum(values)
    if metric.endswith("_min") or "_min_" in metric:
        return "the smallest", min(values)
    if metric.endswith("_max") or "_max_" in metric:
        return "the largest", max(values)
    return None


def aggregate_problems(path: Path, metrics: dict[str, Any], per_gpu: pergpu.Figures) -> list[str]:
    """Node figures that are not what the GPUs' own figures give (only where every GPU has one)."""
    out = []
    for metric, figures in per_gpu.by_metric.items():
        node = _value(metrics.get(metric))
        values = [_value(m) for _, m in figures]
        if node is None or per_gpu.missing.get(metric) or any(v is None for v in values) or not values:
            continue
        derived = _derived(metric, [v for v in values if v is not None])
        if derived is None:
            continue
        what, expected = derived
        if abs(node - expected) > RELATIVE_TOLERANCE * max(abs(node), abs(expected), 1e-12):
            shown = ", ".join(f"{g.label}: {v:.6g}" for (g, _), v in zip(figures, values, strict=True))
            out.append(f"{path.name}: node figure {metric} {node:.6g} is not {what} of its GPUs' figures "
                       f"({expected:.6g}; {shown}): the document contradicts itself")  # fmt: skip
    return out


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def hpl_cuda_problems(doc: dict[str, Any], path: Path, gpus: int) -> list[str]:
    """HPL-CUDA's ranks, GPUs and process grids against the node's ``gpus``."""
    backend = (doc.get("parameters") or {}).get("backend")
    backend = backend if isinstance(backend, dict) else {}
    out = []
    for key in ("ranks", "gpus_used", "gpus_on_node"):
        n = _whole(backend.get(key))
        if n is not None and n != gpus:
            out.append(f"{path.name}: HPL-CUDA's {key} is {n}, the node has {gpus} GPUs: it did not run over "
                       "every GPU of the node")  # fmt: skip
    for run in (doc.get("results") or {}).get("runs") or []:
        p, q = _whole(run.get("p")) if isinstance(run, dict) else None, _whole(run.get("q")) if isinstance(
            run, dict) else None  # fmt: skip
        if p is not None and q is not None and p * q != gpus:
            out.append(f"{path.name}: line {run.get('line')}: HPL ran on a {p} x {q} grid ({p * q} processes, one "
                       f"per GPU), the node has {gpus} GPUs")  # fmt: skip
    return out


def problems(
    check: str, doc: dict[str, Any], path: Path, facts: dict[str, Any], metrics: dict[str, Any],
    per_gpu: pergpu.Figures,
) -> list[str]:
    """Every contradiction of one document with itself, or with the node's GPU count."""
    out = aggregate_problems(path, metrics, per_gpu)
    gpus = len([g for g in facts.get("gpus") or [] if isinstance(g, dict)])
    if check == "hpl_cuda" and gpus:
        out += hpl_cuda_problems(doc, path, gpus)
    return out
