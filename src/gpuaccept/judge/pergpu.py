"""Each GPU's own figures: a benchmark document's ``gpu_metrics`` (docs/benchmark-json.md), read against its
``devices`` and the node facts, so that the judge gives each GPU's figure of a per-GPU metric a row of its own
that names the GPU (index, PCI bus id, serial) instead of one row for the minimum or maximum over the GPUs.

Only metrics whose declared layer is ``gpu`` (src/gpuaccept/checks.py) and that the document reports in
``metrics`` are judged per GPU; the figures of other metrics in ``gpu_metrics`` are not read. A document
without ``gpu_metrics`` has no per-GPU figures: its metrics are judged as the aggregates they are, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept import metric_table


@dataclass(frozen=True)
class Gpu:
    """One GPU as a verdict names it: the node facts' index (NVML's; the document's own where the facts do not
    list the GPU), its PCI bus id and its serial number."""

    index: int
    pci_bus_id: str | None = None
    serial: str | None = None

    @property
    def label(self) -> str:
        return f"GPU {self.index} (bus {self.pci_bus_id or 'unknown'}, serial {self.serial or 'unknown'})"


@dataclass
class Figures:
    """A document's per-GPU figures: for each per-GPU metric, (GPU, figure) in the order of the document's GPUs,
    the GPUs of the document with no figure of it, and what is wrong with its ``gpu_metrics``."""

    by_metric: dict[str, list[tuple[Gpu, dict[str, Any]]]] = field(default_factory=dict)
    missing: dict[str, list[Gpu]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def gpus(self) -> dict[int, Gpu]:
        """Every GPU named by a figure or a missing one, by its index."""
        out = {g.index: g for figures in self.by_metric.values() for g, _ in figures}
        out.update({g.index: g for gpus in self.missing.values() for g in gpus})
        return out


def bus_key(bus_id: Any) -> str:
    """One spelling of a PCI bus id: NVML's "00000000:2A:00.0" and CUDA's "0000:2a:00.0" are "0000:2a:00.0"."""
    if not isinstance(bus_id, str) or ":" not in bus_id:
        return ""
    domain, _, rest = bus_id.strip().partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:
        return bus_id.strip().lower()


def identify(devices: list[Any], facts: dict[str, Any]) -> dict[int, Gpu]:
    """The document's device index -> the GPU as the node facts name it, matched by PCI bus id (CUDA's device order
    may differ from NVML's); a device the facts do not list keeps the document's index and bus id."""
    known = {bus_key(g.get("pci_bus_id")): g for g in facts.get("gpus") or [] if isinstance(g, dict)}
    out: dict[int, Gpu] = {}
    for d in devices:
        if not isinstance(d, dict) or isinstance(d.get("index"), bool) or not isinstance(d.get("index"), int):
            continue
        g = known.get(bus_key(d.get("pci_bus_id")))
        if g is not None and isinstance(g.get("index"), int):
            out[d["index"]] = Gpu(g["index"], g.get("pci_bus_id"), g.get("serial") or d.get("serial"))
        else:
            out[d["index"]] = Gpu(d["index"], d.get("pci_bus_id"), d.get("serial"))
    return out


def read(
    check: str,
    doc: dict[str, Any],
    path: Path,
    facts: dict[str, Any],
    metrics: dict[str, Any],
    extra: dict[int, dict[str, Any]] | None = None,
) -> Figures:
    """The per-GPU figures of ``doc`` (its ``gpu_metrics``, and ``extra``: figures the judge derives per GPU,
    by the document's device index) for the per-GPU metrics among ``metrics`` (the document's, joined with the
    power sampler's). An entry for a GPU the document does not list, or a GPU listed twice, is a problem naming
    the file."""
    entries = doc.get("gpu_metrics")
    if entries is None:
        return Figures()
    gpus = identify(doc.get("devices") or [], facts)
    per_gpu: dict[int, dict[str, Any]] = {}
    problems: list[str] = []
    for entry in entries:
        index = entry["gpu"]
        if index not in gpus:
            problems.append(f"{path.name}: gpu_metrics has figures of GPU {index}, which is not among its devices")
        elif index in per_gpu:
            problems.append(f"{path.name}: gpu_metrics lists GPU {index} twice")
        else:
            per_gpu[index] = dict(entry["metrics"])
    for index, figures in (extra or {}).items():
        if index in gpus:
            per_gpu.setdefault(index, {}).update(figures)
    out = Figures(problems=problems)
    for name in metrics:
        try:
            if metric_table.layer(check, name) != metric_table.GPU:
                continue
        except metric_table.UnknownMetric:
            continue
        have = [(gpus[i], per_gpu[i][name]) for i in gpus if name in per_gpu.get(i, {})]
        if not have:
            continue
        out.by_metric[name] = have
        lacking = [gpus[i] for i in gpus if name not in per_gpu.get(i, {})]
        if lacking:
            out.missing[name] = lacking
    return out
