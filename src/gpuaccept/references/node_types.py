"""The node types of a reference directory: which exist (a file, or ``<sku>_x<count>`` of a known GPU SKU), one
loaded by its name, and all of them."""

from __future__ import annotations

import re
from pathlib import Path

from gpuaccept.references.model import GPU_DIR, GpuSku, NodeType, ReferenceError, _merge, check_name
from gpuaccept.references.parse import load_file, load_gpu

_SYNTHETIC_RE = re.compile(r"^(?P<sku>.+)_x(?P<count>[1-9][0-9]{0,3})$")


def reference_file(reference_dir: str | Path, node_type: str) -> Path:
    return Path(reference_dir) / f"{check_name(node_type)}.yaml"


def load_gpus(reference_dir: str | Path) -> list[GpuSku]:
    """Every GPU SKU file of a reference directory."""
    return [load_gpu(p) for p in sorted((Path(reference_dir) / GPU_DIR).glob("*.yaml"))]


def sku_only(sku: GpuSku, count: int) -> NodeType:
    """The node type of ``count`` GPUs of a known SKU that has no node type file: per-GPU references only; the
    node layer is missing, so the node is not accepted until a node type file is added."""
    name = f"{sku.name}_x{count}"
    why = (
        f"no node-level reference: run gpuaccept baseline on this node's runs and add reference_values/{name}.yaml "
        f"(gpu: {sku.name}, gpu_count: {count}; docs/reference-values.md)"
    )
    desc = f"{count} x {sku.description} (per-GPU references only: no node type file for {count} GPUs)"
    match = {"gpu_model": sku.names[0], "gpu_count": count}
    extra = {"health": sku.health} if sku.health is not None else {}
    return NodeType(name, sku.path, desc, match, dict(sku.sources), _merge(sku.checks), extra, sku, why)


def _sku_only(reference_dir: str | Path, node_type: str) -> tuple[Path, int] | None:
    """The GPU SKU file and GPU count of a node type named ``<sku>_x<count>`` (count 1 to 9999) of a known SKU;
    None for any other name."""
    synthetic = _SYNTHETIC_RE.match(node_type)
    if not synthetic:
        return None
    sku_path = Path(reference_dir) / GPU_DIR / f"{synthetic['sku']}.yaml"
    return (sku_path, int(synthetic["count"])) if sku_path.exists() else None


def node_type_exists(reference_dir: str | Path, node_type: str) -> bool:
    """Whether a node type can be loaded (:func:`load_node_type`): its file ``<reference_dir>/<node_type>.yaml``
    exists, or it is ``<sku>_x<count>`` of a known GPU SKU (``gpus/<sku>.yaml``) with a count of 1 or more. The
    one answer to "is there such a node type"; scripts/accept.sh and playbooks/tasks/preflight.yml apply the same
    rule, and tests/test_node_types.py holds them to it. An invalid name is a ReferenceError."""
    return reference_file(reference_dir, node_type).exists() or _sku_only(reference_dir, node_type) is not None


def unknown_node_type(reference_dir: str | Path, node_type: str) -> str:
    """What to say of a node type that does not exist (:func:`node_type_exists`): its name, and what exists."""
    known = ", ".join(sorted(p.stem for p in Path(reference_dir).glob("*.yaml"))) or "none"
    skus = ", ".join(sorted(p.stem for p in (Path(reference_dir) / GPU_DIR).glob("*.yaml"))) or "none"
    return (
        f"unknown node type {node_type!r}: no such reference file (known node types: {known}; <sku>_x<count> for "
        f"the known GPU SKUs: {skus})"
    )


def load_node_type(reference_dir: str | Path, node_type: str) -> NodeType:
    """The references of one node type; ``<sku>_x<count>`` of a known SKU without a file of its own gives the
    per-GPU layer alone (:func:`sku_only`); an unknown node type is an error listing the known ones."""
    if not node_type or node_type == "auto":
        raise ReferenceError("no node type given: set gpuaccept_node_type or let 'gpuaccept detect' find one")
    path = reference_file(reference_dir, node_type)
    if not node_type_exists(reference_dir, node_type):
        raise ReferenceError(
            f"{path}: {unknown_node_type(reference_dir, node_type)}; add one as docs/reference-values.md describes"
        )
    synthetic = None if path.exists() else _sku_only(reference_dir, node_type)
    return load_file(path) if synthetic is None else sku_only(load_gpu(synthetic[0]), synthetic[1])


def load_all(reference_dir: str | Path) -> list[NodeType]:
    """Every node type file of a directory (and so every GPU SKU file they name); the first bad one raises.
    GPU SKU files no node type names are validated too."""
    files = sorted(Path(reference_dir).glob("*.yaml"))
    if not files:
        raise ReferenceError(f"{reference_dir}: no reference files (*.yaml) found")
    load_gpus(reference_dir)
    return [load_file(p) for p in files]
