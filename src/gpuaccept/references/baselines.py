"""A node's own baseline (``results/<node>/node-baseline.yaml``, schema ``gpuaccept.node_baseline/1``): its host
figures from its own accepted runs, judged in place of the node type's informational host entries."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from gpuaccept import metric_table
from gpuaccept.references.model import (
    NODE_BASELINE_SCHEMA,
    MetricReference,
    NodeType,
    ReferenceError,
    _merge,
    check_name,
)
from gpuaccept.references.parse import _fail, _load_doc, _parse_checks


@dataclass
class NodeBaseline:
    """A parsed ``results/<node>/node-baseline.yaml``: one node's host figures from its own accepted runs."""

    node: str
    node_type: str
    path: Path
    checks: dict[str, dict[str, MetricReference]]


def load_node_baseline(path: str | Path) -> NodeBaseline:
    """Parse and validate a node baseline (host figures only, each judged); ReferenceError names file and line."""
    path = Path(path)
    doc = _load_doc(path, (NODE_BASELINE_SCHEMA,))
    for key, what in (("node", "node"), ("node_type", "node type")):
        try:
            check_name(doc[key], what)
        except ReferenceError as err:
            raise _fail(path, doc, key, str(err)) from None
    sources = {k: dict(v) for k, v in doc["sources"].items()}
    checks = _parse_checks(path, doc, sources, metric_table.LAYERS, host_baseline=True)
    for check, refs in checks.items():
        for name, ref in refs.items():
            if not ref.judged:
                raise _fail(path, doc["checks"][check], name, f"checks.{check}.{name}: a node baseline judges what "
                            "it holds; leave a figure out rather than make it informational")  # fmt: skip
    return NodeBaseline(doc["node"], doc["node_type"], path, checks)


def with_node_baseline(node_type: NodeType, baseline: NodeBaseline) -> NodeType:
    """The node type's references with the node's own host figures judged (they replace the informational host
    entries); an error when the baseline was recorded for another node type."""
    if baseline.node_type != node_type.name:
        raise ReferenceError(
            f"{baseline.path}: node baseline of node type {baseline.node_type!r}, this node is judged as "
            f"{node_type.name!r}: record it again (gpuaccept baseline --node-baseline) or remove it"
        )
    return dataclasses.replace(node_type, checks=_merge(node_type.checks, baseline.checks))
