"""Whether a node type's references cover what its checks gate: every gated metric (gpuaccept.checks.Metric)
of every check the node type expects, name by name, has a reference entry (judged, or informational with its
reason). ``gpuaccept references`` and CI fail on a gap, so that a healthy node is never rejected for a reference
nobody wrote (docs/reference-values.md).

A node type expects the checks it has references for; a check of the nightly or commission suite that is not
optional must be among them (a check of those suites a node type forgot would vanish from its verdicts). For a
``<sku>_x<count>`` type derived from a GPU model alone, only the per-GPU layer is walked: its node layer is missing
by construction, and such a node is never accepted (NodeType.node_layer_missing).
"""

from __future__ import annotations

from pathlib import Path

from gpuaccept import metric_table
from gpuaccept.checks import CHECKS, in_suite
from gpuaccept.references import NodeType, ReferenceError, load_node_type

# Suites whose every non-optional check each node type must expect.
REQUIRED_SUITES = ("nightly", "commission")
# Suites a node type must have every non-optional check's section for before one runs or is judged: the required
# ones and the burn-in. (The evaluation suite's applications and the multinode suite's MPI check are judged where a
# node type has their section: a node type is made for the suites it is run with.)
SECTIONED_SUITES = (*REQUIRED_SUITES, "burnin")


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


def missing_sections(node_type: NodeType, suite: str) -> list[str]:
    """The checks of ``suite`` (one of SECTIONED_SUITES) that are not optional and that the node type has no
    ``checks:`` section for (a
    ``<sku>_x<count>`` type derived from a GPU model alone has none by construction: its node is never accepted
    anyway; a node type of no GPU needs no GPU check's). A check so left out would be "not expected" in every
    verdict, whatever it found."""
    if node_type.node_layer_missing is not None or suite not in SECTIONED_SUITES:
        return []
    no_gpu = node_type.match.get("gpu_count") == 0  # a CPU-only node type: its GPU checks skip themselves
    return [c.key for c in in_suite(suite)
            if not c.optional and c.key not in node_type.checks and not (no_gpu and c.needs_gpu)]  # fmt: skip


def require_sections(reference_dir: str | Path, name: str, suite: str) -> None:
    """ReferenceError naming the file and the checks of ``suite`` it lacks (:func:`missing_sections`): what
    ``gpuaccept run`` and ``gpuaccept summarize`` refuse before anything runs or is judged (exit 4)."""
    why = sections_error(load_node_type(reference_dir, name), suite)
    if why:
        raise ReferenceError(why)


def sections_error(node_type: NodeType, suite: str) -> str:
    """What :func:`missing_sections` finds, as an error naming the file ("" when nothing is missing)."""
    missing = missing_sections(node_type, suite)
    if not missing:
        return ""
    return (f"{node_type.path}: node type {node_type.name} has no 'checks:' section for {', '.join(missing)}, which "
            f"the {suite} suite runs and judges: add one (its references, docs/reference-values.md); without it the "
            "check would never count in the verdict")  # fmt: skip
