"""gpuaccept-nccl's multi-process document read into the judge's figures (docs/benchmark-json.md, "Multi-process
mode"): the one place that knows its fields, so that a renamed field is one edit here.

Each ``results.groups[]`` entry becomes one GroupFigure: its nodes (the distinct ``hosts`` of its ranks, in rank
order: ``NCCL_HOSTID`` where the ranks were emulated), ``metrics.allreduce_busbw_gbps_max`` and
``metrics.allreduce_latency_us`` (each ``value``), ``rail``, and as its error the errors of its ranks and the
document's verification failures that name it. A run that left no readable document fails every group it was to
measure, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.judge.across_rules import GroupFigure

BUSBW = "allreduce_busbw_gbps_max"
LATENCY = "allreduce_latency_us"


class DocumentError(ValueError):
    """A document that is not gpuaccept-nccl's multi-process one; the message names the file and the field."""


def _value(metrics: Any, name: str) -> float | None:
    m = metrics.get(name) if isinstance(metrics, dict) else None
    v = m.get("value") if isinstance(m, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _nodes(hosts: list[Any], where: str) -> tuple[str, ...]:
    if not hosts or not all(isinstance(h, str) and h for h in hosts):
        raise DocumentError(f"{where}: 'hosts' must be a list of host names, not {hosts!r}")
    return tuple(dict.fromkeys(hosts))


def figures(
    doc: Any, path: str | Path = "", mode: str = "", aliases: Mapping[str, str] | None = None
) -> list[GroupFigure]:
    """Every group of one document as the judge's figures; ``aliases``: the node each host name stands for (an
    emulated host's ``emuhost<i>``)."""
    where = str(path) or "the document"
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise DocumentError(f"{where}: not a gpuaccept-nccl document (no 'results' object)")
    if (doc.get("parameters") or {}).get("mode") != "multi_process":
        raise DocumentError(f"{where}: parameters.mode is not 'multi_process': a single-process run of one node")
    groups = doc["results"].get("groups")
    if not isinstance(groups, list) or not groups:
        errors = [str(e) for e in doc.get("errors") or []][:3]
        raise DocumentError(f"{where}: no group measured" + (f": {'; '.join(errors)}" if errors else ""))
    ranks = {r.get("rank"): r for r in doc["results"].get("ranks") or [] if isinstance(r, dict)}
    failures = (doc.get("verification") or {}).get("failures") or []
    out = []
    for i, g in enumerate(groups):
        if not isinstance(g, dict):
            raise DocumentError(f"{where}: results.groups[{i}] is not an object")
        nodes = _nodes(g.get("hosts"), f"{where}: results.groups[{i}]")
        nodes = tuple((aliases or {}).get(n, n) for n in nodes)
        errors = [f"rank {r} ({(ranks.get(r) or {}).get('hostname', '?')}): {e}"
                  for r in g.get("ranks") or [] for e in (ranks.get(r) or {}).get("errors") or []]  # fmt: skip
        label = g.get("label")
        errors += [str(f) for f in failures if label and label in str(f)]
        waived = (g.get("waived") or {}).get(BUSBW)
        if waived and not errors:
            errors.append(f"bus bandwidth waived: {waived}")
        rail = g.get("rail") if isinstance(g.get("rail"), int) else None
        metrics = g.get("metrics")
        out.append(GroupFigure(nodes, _value(metrics, BUSBW), _value(metrics, LATENCY), "; ".join(errors), mode, rail,
                               str(path)))  # fmt: skip
    return out


def read(
    path: Path, groups: Sequence[Sequence[str]], mode: str, rail: bool = False, aliases: Mapping[str, str] | None = None
) -> list[GroupFigure]:
    """The figures of the run that was to measure ``groups`` (rail: one group per rail over them), from its
    document at ``path``; a missing or unreadable document fails each group with the reason."""
    try:
        doc = textinput.load_json(path, "gpuaccept-nccl's document", DocumentError)
        got = figures(doc, path, mode, aliases)
    except DocumentError as err:
        return [GroupFigure(tuple(g), None, None, str(err), mode, None, str(path)) for g in groups]
    if rail:
        return got
    by_nodes = {f.nodes: f for f in got}
    return [by_nodes.get(tuple(g)) or GroupFigure(tuple(g), None, None, f"{path}: no group of "
                                                  f"{'+'.join(g)} in the document", mode, None, str(path))
            for g in groups]  # fmt: skip
