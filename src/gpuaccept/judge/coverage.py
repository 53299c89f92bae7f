"""Whether a node type's references cover what its checks gate: every gated metric (gpuaccept.judge.checks.Metric)
of every check the node type expects, name by name, has a reference entry (judged, or informational with its
reason). ``gpuaccept references`` and CI fail on a gap, so that a healthy node is never rejected for a reference
nobody wrote (docs/reference-values.md).

A node type expects the checks it has references for; a check of the nightly or commission suite that is not
optional must be among them (a check of those suites a node type forgot would vanish from its verdicts). For a
``<sku>_x<count>`` type derived from a GPU model alone, only the per-GPU layer is walked: its node layer is missing
by construction, and such a node is never accepted (NodeType.node_layer_missing).
"""

from __future__ import annotations

from gpuaccept.judge import metric_table
from gpuaccept.judge.checks import CHECKS, in_suite
from gpuaccept.judge.references import NodeType

# Suites whose every non-optional check each node type must expect.
REQUIRED_SUITES = ("nightly", "commission")


def gaps(node_type: NodeType) -> list[str]:
    """One line per gated metric the node type lacks, and per required check it has no references for; empty
    when the node type covers what its checks gate."""
    out = []
    derived = node_type.node_layer_missing is not None
    for suite in REQUIRED_SUITES:
        for check in in_suite(suite):
            if check.optional or check.key in node_type.checks or derived:
                continue
            line = (
                f"{node_type.name}: no references for check {check.key!r} (suite {suite}): add a "
                f"'checks: {check.key}:' section to {node_type.path}"
            )
            if line not in out:
                out.append(line)
    for key, refs in node_type.checks.items():
        check = CHECKS.get(key)
        if check is None:
            continue
        names = dict.fromkeys(n for m in check.metrics if m.gated for n in m.metric_names())
        for name in names:
            # The check's first declaration matching the name owns it (metric_table): it says whether it is gated.
            if name in refs or not metric_table.gated(key, name):
                continue
            layer = metric_table.layer(key, name)
            if derived and layer != metric_table.GPU:
                continue
            where = node_type.sku.path if layer == metric_table.GPU and node_type.sku is not None else node_type.path
            out.append(
                f"{node_type.name}: check {key!r} gates metric {name!r} ({layer} layer) but has no reference for it: "
                f"add one to {where}, judged or 'informational: <why>'"
            )
    return out
