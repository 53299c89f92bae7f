"""The judge between nodes (docs/checks/across-nodes.md): which pairs and groups of nodes are slow, which node is
to blame, and whether the whole set meets its floor. The one place that decides pass or fail for a measurement
between nodes; the modes that measure (gpuaccept.results.across_schedule, across_halving) ask it.

Every rule is data with its source (``RULES``): a pair is bad under 93 % of the best pair's bus bandwidth or over
2.1 x the best pair's latency (NVIDIA ClusterKit, HPC-X documentation); the failing pairs are explained by as few
nodes as the evidence separates from their partners (gpuaccept.judge.across_blame, after the halving and confirmation
of Azure's NCCL diagnosis guide, ai-infrastructure-on-azure), and the nodes of failing pairs no node explains are
not judged (a pattern of links or the fabric, never a node convicted by partners that are themselves suspects); the
whole set against its node type's floor where it has one, else against the best pair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuaccept.judge import across_blame
from gpuaccept.judge.status import FAIL, NOT_RUN, PASS


@dataclass(frozen=True)
class Rule:
    key: str
    value: float
    text: str
    source: str


CLUSTERKIT = "NVIDIA ClusterKit, HPC-X Software Toolkit documentation (NVIDIA, 2024)"
AZURE_GUIDE = "Azure's NCCL performance diagnosis guide, ai-infrastructure-on-azure (Microsoft, 2025)"
NCCL_TESTS = "nccl-tests, doc/PERFORMANCE.md (NVIDIA): bus bandwidth does not depend on the number of ranks"

RULES: dict[str, Rule] = {
    r.key: r
    for r in (
        Rule("pair_bandwidth", 0.93, "a pair under 93 % of the best pair's bus bandwidth is bad", CLUSTERKIT),
        Rule("pair_latency", 2.1, "a pair over 2.1 x the best pair's latency is bad", CLUSTERKIT),
        Rule("group_bandwidth", 0.93, "a group of nodes under 93 % of the reference bus bandwidth (the best pair's, "
             "else the best group's) is slow: ClusterKit's pair rule, as bus bandwidth is comparable across "
             "rank counts", f"{CLUSTERKIT}; {NCCL_TESTS}"),
        Rule("node", 2, "the failing pairs are explained by as few nodes as the evidence separates from their "
             "partners: a node is bad when it failed with the most partners and with 2 or more that did not, one "
             "of them known good, or when every pair it took part in failed and one of its partners is known good; "
             "failing pairs no node explains point at links or the fabric, and their nodes are not judged",
             AZURE_GUIDE),
        Rule("whole_set", 0.93, "the whole set's bus bandwidth at least its node type's floor, else 93 % of the "
             "best pair's", f"{CLUSTERKIT}; {NCCL_TESTS}"),
    )
}


@dataclass(frozen=True)
class GroupFigure:
    """One communicator's measurement: its nodes (2: a pair), its all-reduce bus bandwidth at the largest size and
    latency at the smallest; ``error``: the run failed (a slow or broken group, with the tool's reason)."""

    nodes: tuple[str, ...]
    busbw_gbps: float | None
    latency_us: float | None = None
    error: str = ""
    mode: str = ""  # world, rail, pairwise, quick, halving, confirm
    rail: int | None = None  # a rail group: the GPU index every node contributes
    source: str = ""  # the raw document it was read from

    @property
    def label(self) -> str:
        if self.rail is not None:
            return f"rail {self.rail}"
        return "pair " + "+".join(self.nodes) if len(self.nodes) == 2 else f"group of {len(self.nodes)} " + (
            "+".join(self.nodes) if len(self.nodes) <= 4 else f"{self.nodes[0]}..{self.nodes[-1]}")


@dataclass(frozen=True)
class Floor:
    """A node type's whole-set floor: the least all-reduce bus bandwidth across its nodes, with its source."""

    value: float
    source: str
    unit: str = "GB/s"


@dataclass
class Row:
    subject: str  # a node, a pair or group's label, "whole set" or a rail
    status: str
    reason: str
    value: float | None = None
    rule: str = ""


@dataclass
class Judgement:
    nodes: list[Row] = field(default_factory=list)
    groups: list[Row] = field(default_factory=list)  # each pair's and group's row (shown, decided through nodes)
    rails: list[Row] = field(default_factory=list)  # each rail's: a slow rail fails the set, naming the GPU index
    whole_set: Row | None = None
    best_pair_gbps: float | None = None
    best_pair_latency_us: float | None = None

    @property
    def failed(self) -> bool:
        return any(r.status == FAIL for r in self.all_rows())

    @property
    def accepted(self) -> bool:
        return all(r.status == PASS for r in self.all_rows()) and bool(self.nodes)

    def all_rows(self) -> list[Row]:
        return [*self.nodes, *self.rails, *([self.whole_set] if self.whole_set else [])]

    def named(self) -> list[str]:
        return [r.subject for r in self.nodes if r.status == FAIL]

    def unplaced(self) -> list[str]:
        """The nodes every pair of which failed with no known-good partner to place them: the confirm round's."""
        return [r.subject for r in self.nodes if r.status == NOT_RUN and r.reason.endswith(CONFIRM)]

    def to_json(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "named": self.named(),
            "best_pair_busbw_gbps": self.best_pair_gbps,
            "best_pair_latency_us": self.best_pair_latency_us,
            "whole_set": asdict(self.whole_set) if self.whole_set else None,
            "nodes": [asdict(r) for r in self.nodes],
            "groups": [asdict(r) for r in self.groups],
            "rails": [asdict(r) for r in self.rails],
            "rules": {k: asdict(r) for k, r in RULES.items()},
        }


def _finite(value: float | None) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


# With this many pairs or more the best pair is the 95th percentile, not the single highest: among thousands of
# healthy pairs (64 nodes: 2016) the highest is a lucky run some 3.5 standard deviations up, and 93 % of it would
# fail healthy pairs in the low tail. gpuaccept's choice, not ClusterKit's.
ROBUST_FROM = 20
ROBUST_QUANTILE = 0.95


def _best(values: list[float], higher: bool) -> float | None:
    if not values:
        return None
    ordered = sorted(values, reverse=higher)
    if len(ordered) < ROBUST_FROM:
        return ordered[0]
    return ordered[int((1.0 - ROBUST_QUANTILE) * len(ordered))]


def best_pair(figures: Iterable[GroupFigure]) -> tuple[float | None, float | None]:
    """The best pair's bus bandwidth and latency among the pairs that ran (rails left out): the highest bandwidth
    and lowest latency, or with ROBUST_FROM pairs or more the 95th percentile of each."""
    pairs = [f for f in figures if len(f.nodes) == 2 and f.rail is None and not f.error]
    bws = [f.busbw_gbps for f in pairs if _finite(f.busbw_gbps)]
    lats = [f.latency_us for f in pairs if _finite(f.latency_us)]
    return _best(bws, True), _best(lats, False)  # type: ignore[arg-type]


def _pct(value: float, of: float, limit: float | None = None) -> str:
    """``value`` as a percentage of ``of``; to a tenth where a whole number would round onto ``limit`` (a figure
    just under 93 % is never shown as 93 %)."""
    pct = value / of * 100
    near = limit is not None and abs(pct - limit * 100) < 0.5
    return f"{pct:.1f} %" if near else f"{pct:.0f} %"


def steps(f: GroupFigure) -> int:
    """The ring's steps between nodes a group's latency is divided by to compare it with a pair's: n - 1 for n
    nodes (NCCL's ring all-reduce, ``--ring``, waits at every step for its slowest hop; a pair has one)."""
    return max(1, len(f.nodes) - 1)


def figure_problem(
    f: GroupFigure,
    ref_bw: float | None,
    ref_lat: float | None,
    floor: Floor | None = None,
    node_type: str = "",
    ref_what: str = "pair",
) -> str:
    """Why a pair or group is slow or broken ("" when it is not): the tool's error, its bus bandwidth under
    ``RULES`` x ``ref_bw`` or under the node type's floor, or its latency per ring step (``steps``) over 2.1 x
    ``ref_lat`` (the best pair's, else the best group's per step)."""
    what = "pair" if len(f.nodes) == 2 else "group"
    if f.error:
        return f"{f.label}: the run failed: {f.error}"
    if not _finite(f.busbw_gbps):
        return f"{f.label}: no all-reduce bus bandwidth measured"
    assert f.busbw_gbps is not None
    bw_rule = RULES["pair_bandwidth" if what == "pair" else "group_bandwidth"]
    if ref_bw and f.busbw_gbps < bw_rule.value * ref_bw:
        pct = _pct(f.busbw_gbps, ref_bw, bw_rule.value)
        return (f"{f.label} all-reduce bus bandwidth {f.busbw_gbps:.1f} GB/s, {pct} of the "
                f"best {ref_what} {ref_bw:.1f} GB/s (under {bw_rule.value:.0%})")  # fmt: skip
    if floor is not None and f.busbw_gbps < floor.value:
        return (f"{f.label} all-reduce bus bandwidth {f.busbw_gbps:.1f} GB/s, under {node_type or 'the node type'}'s "
                f"floor {floor.value:.1f} GB/s ({floor.source})")  # fmt: skip
    lat_rule = RULES["pair_latency"]
    if ref_lat and _finite(f.latency_us) and f.latency_us / steps(f) > lat_rule.value * ref_lat:  # type: ignore[operator]
        per = "" if what == "pair" else f" over {steps(f)} ring steps"
        best = f"the best pair's {ref_lat:.1f} us" + (" per step" if per else "")
        return (f"{f.label} all-reduce latency {f.latency_us:.1f} us{per}, {f.latency_us / steps(f) / ref_lat:.1f} x "
                f"{best} (over {lat_rule.value:g} x)")  # fmt: skip
    return ""


def group_references(figures: Sequence[GroupFigure]) -> tuple[float | None, float | None, str]:
    """The bus bandwidth and the latency per ring step every pair and group is held to: the best pair's, or a
    group's where one measured more (halving measures few pairs, and those are the slow ones; bus bandwidth does
    not depend on the node count); the latency likewise, per ring step."""
    bw, lat = best_pair(figures)
    groups = [f for f in figures if not f.error and f.rail is None and len(f.nodes) > 2]
    bws = [f.busbw_gbps for f in groups if _finite(f.busbw_gbps)]
    what = "pair"
    if bws and max(bws) > (bw or 0.0):  # type: ignore[type-var]
        bw, what = max(bws), "group"  # type: ignore[type-var]
    lats = [f.latency_us / steps(f) for f in groups if _finite(f.latency_us)]  # type: ignore[operator]
    if lats and min(lats) < (lat or math.inf):
        lat = min(lats)
    return bw, lat, what


def slow(f: GroupFigure, figures: Sequence[GroupFigure], floor: Floor | None = None) -> str:
    """Why a group measured among ``figures`` is slow ("" when it is not): what halving asks of the judge."""
    bw, lat, what = group_references(figures)
    return figure_problem(f, bw, lat, floor, ref_what=what)


CONFIRM = "pair it with a node that passed (confirm)"  # ends every row of a node the confirm round is for


@dataclass(frozen=True)
class _Evidence:
    """What every node's row is judged from: each figure's problem by id, the nodes that passed some pair or group,
    and which nodes explain the failing pairs (gpuaccept.judge.across_blame)."""

    problems: dict[int, str]
    known_good: set[str]
    blame: across_blame.Explanation

    def unexplained(self, f: GroupFigure) -> bool:
        return frozenset(f.nodes) in self.blame.unexplained


def _others(node: str, figs: Iterable[GroupFigure]) -> list[str]:
    return sorted({m for f in figs for m in f.nodes if m != node})


def _and(names: Sequence[str]) -> str:
    return ", ".join(names) + (", which is named" if len(names) == 1 else ", which are named")


def _pattern(node: str, pairs: list[GroupFigure], ev: _Evidence) -> str:
    """Why the unexplained failing pairs ``node`` is in point at no one node: its connected set of such pairs, each
    member's count of partners failed with out of those it had."""
    unexplained = ev.blame.unexplained
    members, todo = {node}, [node]
    while todo:
        here = todo.pop()
        for p in unexplained:
            if here in p and not p <= members:
                todo += list(p - members)
                members |= p
    failed = across_blame.failed_with(p for p in unexplained if p <= members)
    had = across_blame.failed_with(frozenset(f.nodes) for f in pairs)
    counts = {m: f"{len(failed[m])} of {len(had[m])}" for m in sorted(members)}
    if len(members) == 2:
        return (f"pair {'+'.join(sorted(members))} failed while each node passed elsewhere: the link between them or "
                f"a one-off rather than a node; run the pair again and confirm each against a known-good node")
    if len(set(counts.values())) == 1:
        who = f"each of {', '.join(counts)} failed with {next(iter(counts.values()))} partners"
    else:
        who = ", ".join(f"{m} failed with {c} partners" for m, c in counts.items())
    return (f"{who}: the pattern does not point at one node but at links or the fabric; confirm each against a "
            "known-good node")


def _failing_row(node: str, pairs: list[GroupFigure], failing: list[GroupFigure], ev: _Evidence) -> Row:
    """The row of a node with failing pairs: named (the rule and the pairs that convict it), passed (its failing
    pairs all with named nodes), not placed, or in a pattern that points at no one node."""
    rule, problems = "node", ev.problems
    worst = min(failing, key=lambda f: f.busbw_gbps or 0.0).busbw_gbps
    blame = ev.blame.named.get(node)
    if blame is not None:
        convicting = [f for f in failing if set(f.nodes) & set(blame.partners)]
        good = [m for m in blame.partners if m in ev.known_good]
        which = "all" if len(good) == len(blame.partners) else ", ".join(good)
        why = (f"it failed with {len(blame.partners)} partners that are not suspects themselves "
               f"({', '.join(blame.partners)}), {which} known good" if blame.rule == across_blame.BY_PARTNERS else
               f"every pair it took part in failed, with known-good partner(s) {', '.join(blame.partners)}")
        return Row(node, FAIL, f"{node}: " + "; ".join(problems[id(f)] for f in convicting) + f"; {why}", worst,
                   rule)  # fmt: skip
    left = [f for f in failing if ev.unexplained(f)]
    named = _others(node, [f for f in failing if not ev.unexplained(f)])
    if node not in ev.known_good:  # every pair it took part in failed: only a known-good partner can place it
        if not left:
            return Row(node, NOT_RUN, f"{node}: every pair it took part in failed, all with {_and(named)}, so it "
                       f"is not placed: {CONFIRM}", worst, rule)  # fmt: skip
        return Row(node, NOT_RUN, f"{node}: every pair it took part in failed ({problems[id(left[0])]}) but no "
                   f"partner is known good, so the fault cannot be placed: {CONFIRM}", worst, rule)  # fmt: skip
    if not left:
        return Row(node, PASS, f"passed with other nodes; failed only with {_and(named)}", rule=rule)
    also = f"; it failed too with {_and(named)}" if named else ""
    return Row(node, NOT_RUN, f"{node}: " + "; ".join(problems[id(f)] for f in left) + "; "
               + _pattern(node, pairs, ev) + also, worst, rule)  # fmt: skip


def _node_row(node: str, figs: list[GroupFigure], all_pairs: list[GroupFigure], ev: _Evidence) -> Row:
    """One node's row from the pairs and groups it took part in (``all_pairs``: every pair measured)."""
    pairs = [f for f in figs if len(f.nodes) == 2]
    groups = [f for f in figs if len(f.nodes) > 2]
    failing = [f for f in pairs if ev.problems[id(f)]]
    rule = "node"
    if not pairs:
        passing = [g for g in groups if not ev.problems[id(g)]]
        if passing:
            return Row(node, PASS, f"in a group that passed ({passing[0].label}, {passing[0].busbw_gbps:.1f} GB/s)",
                       rule=rule)  # fmt: skip
        if groups:
            return Row(node, NOT_RUN, f"{node}: only in slow groups ({ev.problems[id(groups[-1])]}), never in a "
                       "pair: not isolated; run the pairwise or halving mode", rule=rule)  # fmt: skip
        return Row(node, NOT_RUN, f"{node}: not measured in any pair or group", rule=rule)
    if not failing:
        low = min(pairs, key=lambda f: f.busbw_gbps or 0.0)
        return Row(node, PASS, f"{len(pairs)} pair(s) passed, the lowest {low.label} {low.busbw_gbps:.1f} GB/s",
                   low.busbw_gbps, rule)  # fmt: skip
    return _failing_row(node, all_pairs, failing, ev)


def _whole_set(world: GroupFigure, best_bw: float | None, floor: Floor | None, node_type: str) -> Row:
    rule = RULES["whole_set"]
    if world.error:
        return Row("whole set", FAIL, f"the whole set's run failed: {world.error}", rule="whole_set")
    value = world.busbw_gbps
    if not _finite(value):
        return Row("whole set", FAIL, "no all-reduce bus bandwidth for the whole set", rule="whole_set")
    assert value is not None
    what = f"{len(world.nodes)} nodes all-reduce bus bandwidth {value:.1f} GB/s"
    if floor is not None:
        status = PASS if value >= floor.value else FAIL
        return Row("whole set", status, f"{what}, {'at least' if status == PASS else 'under'} {node_type}'s floor "
                   f"{floor.value:.1f} GB/s ({floor.source})", value, "whole_set")  # fmt: skip
    if best_bw is None:
        return Row("whole set", NOT_RUN, f"{what}: node type {node_type or '(none)'} has no floor between nodes and "
                   "no pair was measured to hold it to", value, "whole_set")  # fmt: skip
    status = PASS if value >= rule.value * best_bw else FAIL
    pct = _pct(value, best_bw, rule.value)
    return Row("whole set", status, f"{what}, {pct} of the best pair {best_bw:.1f} GB/s "
               f"({'at least' if status == PASS else 'under'} {rule.value:.0%}; "
               + (f"no floor for {node_type})" if node_type else "no node type given, so no floor)"),
               value, "whole_set")  # fmt: skip


def _pairs_and_groups(nodes: list[str], plain: list[GroupFigure]) -> list[GroupFigure]:
    """The figures a node is judged by: every one but the whole set's, which is the one pair of a 2-node set."""
    return [f for f in plain if f.mode != "world" or len(nodes) == 2]


def judge(
    nodes: Sequence[str], figures: Sequence[GroupFigure], floor: Floor | None = None, node_type: str = ""
) -> Judgement:
    """Every node's row (pass, fail naming the pair(s) and figures, or not run with the reason), each pair's and
    group's, each rail's, and the whole set's (the ``world`` figure) against the floor or the best pair."""
    nodes = list(nodes)
    out = Judgement()
    if len(nodes) < 2:
        out.nodes = [Row(n, NOT_RUN, f"{n}: fewer than 2 nodes: nothing between nodes to measure", rule="node")
                     for n in nodes]  # fmt: skip
        return out
    strangers = sorted({m for f in figures for m in f.nodes} - set(nodes))
    if strangers:
        raise ValueError(f"figures name nodes outside the set: {', '.join(strangers)}")
    plain = [f for f in figures if f.rail is None]
    judged = _pairs_and_groups(nodes, plain)
    out.best_pair_gbps, out.best_pair_latency_us = best_pair(judged)
    ref_bw, ref_lat, ref_what = group_references(judged)
    problems = {id(f): figure_problem(f, ref_bw, ref_lat, floor, node_type, ref_what) for f in judged}
    out.rails = _rail_rows([f for f in figures if f.rail is not None])
    out.groups = [Row(f.label, FAIL if problems[id(f)] else PASS, problems[id(f)], f.busbw_gbps,
                       "pair_bandwidth" if len(f.nodes) == 2 else "group_bandwidth") for f in judged]  # fmt: skip
    worlds = [f for f in plain if f.mode == "world"]
    world = worlds[-1] if worlds else None
    out.whole_set = None if world is None else _whole_set(world, out.best_pair_gbps, floor, node_type)
    pairs = {f.nodes for f in judged if len(f.nodes) == 2}
    if floor is None and len(nodes) == 2:
        # One pair and nothing to hold it to: the best pair is itself.
        why = (f"one pair measured ({', '.join('+'.join(p) for p in pairs) or 'none'}) and node type "
               f"{node_type or '(none)'} has no floor between nodes: nothing to compare it with")  # fmt: skip
        out.nodes = [Row(n, NOT_RUN, f"{n}: {why}", rule="node") for n in nodes]
        if world is not None and out.whole_set is not None and not world.error:  # a failed run stays failed
            out.whole_set = Row("whole set", NOT_RUN, why, out.whole_set.value, "whole_set")
        return out
    known_good = {m for f in judged if not problems[id(f)] for m in f.nodes}
    all_pairs = [f for f in judged if len(f.nodes) == 2]
    failing = {frozenset(f.nodes) for f in all_pairs if problems[id(f)]}
    ev = _Evidence(problems, known_good, across_blame.explain(failing, known_good, int(RULES["node"].value)))
    for node in nodes:
        mine = [f for f in judged if node in f.nodes]
        if not mine and out.whole_set is not None and out.whole_set.status == PASS:
            out.nodes.append(Row(node, PASS, f"in the whole set, which passed ({out.whole_set.reason})", rule="node"))
            continue
        out.nodes.append(_node_row(node, mine, all_pairs, ev))
    return out


def _rail_rows(rails: list[GroupFigure]) -> list[Row]:
    """Each rail (one GPU index of every node, one communicator) against the best rail: a slow rail names the GPU
    index and its network path, not a node."""
    best = max((f.busbw_gbps for f in rails if not f.error and _finite(f.busbw_gbps)), default=None)
    rows = []
    for f in rails:
        problem = figure_problem(f, best, None, ref_what="rail")
        rows.append(Row(f.label, FAIL if problem else PASS, problem, f.busbw_gbps, "group_bandwidth"))
    return rows
