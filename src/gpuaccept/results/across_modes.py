"""The isolation modes between nodes over a ``measure(groups)`` callable (docs/checks/across-nodes.md): the whole
set in one communicator, every pair, the quick pairing, halving, and the confirmation round that pairs each node
the judge could not place with a known-good node. What is slow and which node is to blame is the judge's
(gpuaccept.judge.across_rules); the schedules are gpuaccept.results.across_schedule's.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuaccept.judge import across_rules
from gpuaccept.judge.across_rules import Floor, GroupFigure
from gpuaccept.results import across_halving, across_schedule
from gpuaccept.results.across_halving import Measure

NODE_MODES = ("world", "pairwise", "quick", "halving")


def _run(measure: Measure, groups: list[tuple[str, ...]], mode: str) -> list[GroupFigure]:
    got = measure(groups)
    if len(got) != len(groups):
        raise ValueError(f"measure returned {len(got)} figures for {len(groups)} groups")
    return [GroupFigure(tuple(g), f.busbw_gbps, f.latency_us, f.error, mode, f.rail, f.source)
            for g, f in zip(groups, got, strict=True)]  # fmt: skip


def world(nodes: Sequence[str], measure: Measure) -> list[GroupFigure]:
    return _run(measure, [tuple(nodes)], "world")


def pairwise(nodes: Sequence[str], measure: Measure) -> list[GroupFigure]:
    return [f for r in across_schedule.every_pair(nodes) for f in _run(measure, [tuple(p) for p in r], "pairwise")]


def quick(nodes: Sequence[str], measure: Measure) -> list[GroupFigure]:
    return [f for r in across_schedule.quick_pairs(nodes) for f in _run(measure, [tuple(p) for p in r], "quick")]


def confirm(
    nodes: Sequence[str], figures: list[GroupFigure], measure: Measure, floor: Floor | None = None, node_type: str = ""
) -> list[GroupFigure]:
    """One more round for the nodes the judge could not place (every pair failed, no partner known good): each
    paired with a different node that passed, as Azure's NCCL diagnosis guide confirms a suspect."""
    verdict = across_rules.judge(nodes, figures, floor, node_type)
    good = [r.subject for r in verdict.nodes if r.status == across_rules.PASS]
    rounds, _left = across_halving.confirm_rounds(verdict.unplaced(), good)
    return [f for r in rounds for f in _run(measure, r, "confirm")]


def run(
    mode: str,
    nodes: Sequence[str],
    measure: Measure,
    floor: Floor | None = None,
    node_type: str = "",
    whole: GroupFigure | None = None,
) -> list[GroupFigure]:
    """The figures of one mode, with its confirmation round; ``whole``: the whole set's figure already measured
    (halving starts from it)."""
    if mode == "world":
        return world(nodes, measure)
    if mode == "halving":
        found = across_halving.halve(nodes, measure, whole, floor)
        return [f for f in found.figures if f.mode != "halving-root"]
    if mode not in ("pairwise", "quick"):
        raise ValueError(f"unknown mode {mode!r}: one of {', '.join(NODE_MODES)}")
    figures = pairwise(nodes, measure) if mode == "pairwise" else quick(nodes, measure)
    return figures + confirm(nodes, figures, measure, floor, node_type)
