"""Recognising a node from its facts (gpuaccept.probe.facts): which node type they match, why a node type does not
fit them, and which GPU SKU the node's GPUs are."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpuaccept.references.model import GPU_DIR, GpuSku, NodeType, ReferenceError
from gpuaccept.references.node_types import load_all, load_gpus, sku_only


def _gpu_label(gpu: dict[str, Any]) -> str:
    device = gpu.get("pci_device_id")
    return f"{gpu.get('name')}" + (f" (PCI device id {device})" if device else "")


def mismatches(node_type: NodeType, facts: dict[str, Any]) -> list[str]:
    """Why ``facts`` do not describe a node of ``node_type``; empty when they do."""
    m = node_type.match
    gpus = facts.get("gpus") or []
    reasons = []
    if len(gpus) != m["gpu_count"]:
        reasons.append(f"{len(gpus)} GPUs found, {node_type.name} has {m['gpu_count']}")
    if node_type.sku is not None:
        others = sorted({_gpu_label(g) for g in gpus if not node_type.sku.fits(g)})
        if others:
            reasons.append(f"GPU {', '.join(others)} is not a {node_type.sku.name} ({node_type.sku.path})")
    elif m.get("gpu_model"):
        names = sorted({str(g.get("name")) for g in gpus})
        if names and names != [m["gpu_model"]]:
            reasons.append(f"GPU model {', '.join(names)}, {node_type.name} has {m['gpu_model']}")
    for key, fact in (("pcie_gen", "pcie_gen_max"), ("pcie_width", "pcie_width_max")):
        if key in m:
            seen = sorted({g.get(fact) for g in gpus if g.get(fact) is not None})
            if seen and seen != [m[key]]:
                reasons.append(f"{key} {', '.join(map(str, seen))}, {node_type.name} has {m[key]}")
    if "cpu_model" in m and not re.search(m["cpu_model"], facts.get("cpu_model") or ""):
        reasons.append(f"CPU {facts.get('cpu_model')!r} does not match {m['cpu_model']!r}")
    return reasons


def wrong_gpus(node_type: NodeType, facts: dict[str, Any]) -> str:
    """What is wrong with the node's GPUs for its node type ("" when each is of the GPU model the node type names):
    a GPU whose PCI device id is not the model's (where both say one) or whose name is not among the model's
    names, or that has neither to tell it by. The reason says what was expected and what was found."""
    if node_type.sku is not None:
        names, ids, where = list(node_type.sku.names), list(node_type.sku.pci_device_ids), node_type.sku.path
    else:  # a self-contained gpuaccept.references/1 file names the model by NVML's name alone
        names, ids, where = [str(node_type.match.get("gpu_model"))], [], node_type.path
    wanted = {i.upper() for i in ids}
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    wrong = []
    for g in gpus:
        name, device = g.get("name"), g.get("pci_device_id")
        by_id = bool(device) and bool(wanted)
        if (by_id and str(device).upper() not in wanted) or (name is not None and name not in names) or (
            name is None and not by_id
        ):
            wrong.append(g)
    if not wrong:
        return ""
    ordered = f"{names[0]} (" + (f"PCI device id {', '.join(ids)}; " if ids else "") + f"{where})"
    found: dict[str, list[str]] = {}
    for g in wrong:
        found.setdefault(_gpu_label(g), []).append(str(g.get("index")))
    seen = "; ".join(f"GPU {', '.join(idx)}: {label}" for label, idx in sorted(found.items()))
    return (
        f"node type {node_type.name} is {node_type.gpu_count} x {ordered}; the node has {seen}: it was "
        "built with other GPUs than its node type names. Judge it as the node type of its GPUs (gpuaccept detect), "
        "or have it built as ordered"
    )


def detect_sku(reference_dir: str | Path, facts: dict[str, Any]) -> GpuSku:
    """The GPU SKU of every GPU of the node, from NVML's PCI device id (or name); an error when the GPUs are
    of no known SKU or of several."""
    gpus = facts.get("gpus") or []
    if not gpus:
        raise ReferenceError(f"no GPU SKU: no GPU found ({facts.get('gpu_error') or 'none found'})")
    skus = load_gpus(reference_dir)
    found: dict[str, GpuSku] = {}
    for gpu in gpus:
        fits = [s for s in skus if s.fits(gpu)]
        if len(fits) != 1:
            listed = ", ".join(s.name for s in (fits or skus)) or "none"
            raise ReferenceError(
                f"GPU {gpu.get('index')}: {_gpu_label(gpu)} is "
                + ("of several SKUs: " if fits else "of no known GPU SKU (known: ")
                + listed
                + ("" if fits else f"); add {Path(reference_dir) / GPU_DIR}/<sku>.yaml (docs/reference-values.md)")
            )
        found[fits[0].name] = fits[0]
    if len(found) > 1:
        raise ReferenceError(
            f"the node's GPUs are of several SKUs ({', '.join(sorted(found))}): no node type mixes them"
        )
    return next(iter(found.values()))


def detect(reference_dir: str | Path, facts: dict[str, Any]) -> NodeType:
    """The node type of this node: the one node type file whose SKU, GPU count and match fit the facts. A
    known SKU with no node type file for its GPU count gives ``<sku>_x<count>`` (per-GPU layer only)."""
    types = load_all(reference_dir)
    fits = [t for t in types if not mismatches(t, facts)]
    if len(fits) == 1:
        return fits[0]
    gpus = facts.get("gpus") or []
    seen = f"{len(gpus)} x {_gpu_label(gpus[0])}" if gpus else f"no GPU ({facts.get('gpu_error') or 'none found'})"
    if fits:
        raise ReferenceError(
            f"several node types match this node ({seen}): {', '.join(t.name for t in fits)}; "
            "make their match rules exclusive or set gpuaccept_node_type"
        )
    if gpus and (Path(reference_dir) / GPU_DIR).is_dir():
        sku = detect_sku(reference_dir, facts)
        same = [t for t in types if t.sku is not None and t.sku.name == sku.name and t.gpu_count == len(gpus)]
        if not same:
            return sku_only(sku, len(gpus))
        types = same  # files for this SKU and count exist but do not fit: say why, do not guess
    detail = "; ".join(f"{t.name}: {', '.join(mismatches(t, facts))}" for t in types)
    raise ReferenceError(
        f"no reference file in {reference_dir} matches this node ({seen}, CPU {facts.get('cpu_model')!r}): "
        f"{detail}. Add reference_values/<node_type>.yaml (docs/reference-values.md) or set "
        "gpuaccept_node_type"
    )
