"""Halving a slow set of nodes down to the bad node(s), after Azure's NCCL diagnosis guide (ai-infrastructure-on-
azure): split the set in halves, measure each, recurse on the slow half (or halves) down to groups of 2-3 nodes,
then pair each suspect with a different known-good node. The judge says which group is slow
(gpuaccept.judge.across_rules.slow); this module only decides what to measure next.

``measure(groups)`` runs disjoint groups at once (one round: the NCCL tool's ``groups:`` layout) and returns one
GroupFigure per group in order; ``one_at_a_time`` turns a ``measure(group)`` of one group into that. So halving runs
over real runs (gpuaccept.across_run) or over a simulation (the tests) alike.

Two bad nodes in different halves make both halves slow alike, so neither is slower than the other: a slow group
whose halves are all "not slow" against what was measured so far is an unexplained slowness, and both halves are
split again. Every level's groups are judged again against the reference as it stands after each round (the best
pair measured so far), so a half that looked fine beside an equally slow sibling is taken up once a fast pair shows
what the network can do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpuaccept.judge.across_rules import Floor, GroupFigure, slow
from gpuaccept.results.across_schedule import every_pair, halves

Group = tuple[str, ...]
Measure = Callable[[list[Group]], list[GroupFigure]]
LEAF = 3  # groups of at most this many nodes are not split again: their members are paired with known-good nodes


def one_at_a_time(measure_one: Callable[[Group], GroupFigure]) -> Measure:
    """A round measure from a measure of one group: the groups one after another."""
    return lambda groups: [measure_one(g) for g in groups]


@dataclass
class Halving:
    figures: list[GroupFigure] = field(default_factory=list)
    rounds: list[list[Group]] = field(default_factory=list)  # what each round measured
    suspects: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)  # suspects no known-good node was left to pair with

    def log(self) -> list[str]:
        return [f"round {i + 1}: " + ", ".join("+".join(g) for g in r) for i, r in enumerate(self.rounds)]


def _measure(measure: Measure, groups: list[Group], mode: str, out: Halving) -> None:
    if not groups:
        return
    got = measure(groups)
    if len(got) != len(groups):
        raise ValueError(f"measure returned {len(got)} figures for {len(groups)} groups")
    for g, f in zip(groups, got, strict=True):
        if tuple(f.nodes) != g:
            raise ValueError(f"measure returned a figure of {'+'.join(f.nodes)} for the group {'+'.join(g)}")
    out.figures += [GroupFigure(f.nodes, f.busbw_gbps, f.latency_us, f.error, mode, f.rail, f.source) for f in got]
    out.rounds.append(groups)


def _splits(out: Halving, split: set[Group], floor: Floor | None) -> list[Group]:
    """The halves to measure next: of every slow group larger than LEAF not split yet, and of every split slow
    group none of whose halves is slow (an unexplained slowness: look in both)."""
    by_group = {f.nodes: f for f in out.figures}
    is_slow = {g: bool(slow(f, out.figures, floor)) for g, f in by_group.items()}
    todo: list[Group] = []
    for g, f in by_group.items():
        if g in split or len(g) <= LEAF or not (is_slow[g] or f.mode == "halving-root"):
            continue
        todo.append(g)
    for g in split:
        kids = [tuple(h) for h in halves(g)]
        if (is_slow.get(g) or by_group[g].mode == "halving-root") and not any(is_slow.get(k) for k in kids):
            todo += [k for k in kids if len(k) > LEAF and k not in split and k not in todo]
    return todo


def _leaves(out: Halving, floor: Floor | None) -> list[str]:
    """Suspects: members of slow groups of at most LEAF nodes, and of the halves of an unexplained slow group,
    that took part in no group that passed."""
    fine = {m for f in out.figures if not slow(f, out.figures, floor) for m in f.nodes}
    slow_small = [f.nodes for f in out.figures if len(f.nodes) <= LEAF and slow(f, out.figures, floor)]
    for f in out.figures:
        kids = [tuple(h) for h in halves(f.nodes)]
        if len(f.nodes) > LEAF and slow(f, out.figures, floor) and not any(
            slow(k, out.figures, floor) for k in out.figures if k.nodes in kids
        ):
            slow_small += [k for k in kids if len(k) <= LEAF]
    seen: list[str] = []
    for g in slow_small:
        seen += [m for m in g if m not in fine and m not in seen]
    return seen


def confirm_rounds(suspects: Sequence[str], known_good: Sequence[str]) -> tuple[list[list[Group]], list[str]]:
    """Each suspect paired with a different known-good node, in as few rounds of disjoint pairs as the known-good
    nodes allow; the suspects left without one (none known good)."""
    if not known_good:
        return [], list(suspects)
    rounds: list[list[Group]] = []
    left = list(suspects)
    while left:
        batch, left = left[: len(known_good)], left[len(known_good) :]
        rounds.append([(s, k) for s, k in zip(batch, known_good, strict=False)])
    return rounds, []


def halve(
    nodes: Sequence[str], measure: Measure, whole: GroupFigure | None = None, floor: Floor | None = None
) -> Halving:
    """Halving from a slow whole set (``whole``: its figure, measured now when None) to the suspects, each then
    measured in a pair with a known-good node. The figures, every round and the suspects come back; the judge
    (across_rules.judge) names the bad nodes from them."""
    out = Halving()
    root = tuple(nodes)
    if len(root) < 2:
        return out
    if len(root) <= LEAF:  # nothing to halve: every pair (two nodes: the one pair, which cannot be confirmed)
        for r in every_pair(root):
            _measure(measure, [tuple(p) for p in r], "halving", out)
        out.unconfirmed = list(root) if len(root) == 2 else []
        return out
    if whole is None:
        _measure(measure, [root], "halving-root", out)
    else:
        out.figures.append(GroupFigure(root, whole.busbw_gbps, whole.latency_us, whole.error, "halving-root",
                                       None, whole.source))  # fmt: skip
    split: set[Group] = set()
    while True:
        todo = _splits(out, split, floor)
        if not todo:
            break
        split.update(todo)
        _measure(measure, [tuple(h) for g in todo for h in halves(g) if h], "halving", out)
    out.suspects = _leaves(out, floor)
    fine = [m for f in out.figures if not slow(f, out.figures, floor) and f.mode != "halving-root" for m in f.nodes]
    known_good = [m for m in dict.fromkeys(fine) if m not in out.suspects]
    rounds, out.unconfirmed = confirm_rounds(out.suspects, known_good)
    for r in rounds:
        _measure(measure, r, "confirm", out)
    return out
