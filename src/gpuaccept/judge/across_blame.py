"""Which nodes explain the failing pairs between nodes: the node rule of the judge between nodes
(gpuaccept.judge.across_rules, docs/checks/across-nodes.md), as set logic over pairs of node names.

A node is named only where the evidence separates it from its partners, after Azure's NCCL performance diagnosis
guide (ai-infrastructure-on-azure: a suspect is confirmed against a known-good node), and the failing pairs are
explained by as few nodes as that evidence allows:

1. By its partners. Among the failing pairs not yet explained, m is the most distinct partners any node failed
   with; below ``need`` (2) nothing stands out. The candidates are the nodes that failed with m partners; one is
   named when it failed with ``need`` or more distinct partners that are not candidates, one of them known good
   (it passed some pair or group). Partners that are themselves candidates never convict: a bipartite pattern
   (every node failing with the same number of partners) names nobody.
2. By every pair. A node that passed nothing (every pair it took part in failed) is named when one of the
   failing pairs left has a known-good partner: the guide's confirmation. The two nodes' evidence differs (one
   passed elsewhere, the other never did), so this is not circular; it runs when rule 1 named nobody.

The named nodes' pairs are then explained and the rules run again over the rest, until neither names anyone.
What is left is unexplained: pairs no node stands out in (links, the fabric, or a one-off), for the judge to
report as such, never as a node's fault.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass, field

Pair = frozenset[str]
BY_PARTNERS, BY_EVERY_PAIR = "partners", "every pair"


@dataclass(frozen=True)
class Blame:
    """Why a node is named: the rule (``BY_PARTNERS`` or ``BY_EVERY_PAIR``) and the partners that convict it."""

    rule: str
    partners: tuple[str, ...]


@dataclass
class Explanation:
    named: dict[str, Blame] = field(default_factory=dict)
    unexplained: set[Pair] = field(default_factory=set)  # failing pairs no named node is in


def failed_with(pairs: Iterable[Pair]) -> dict[str, set[str]]:
    """Each node's distinct partners in ``pairs``."""
    out: dict[str, set[str]] = {}
    for pair in pairs:
        for node in pair:
            out.setdefault(node, set()).update(pair - {node})
    return out


def _by_partners(left: set[Pair], known_good: Set[str], need: int) -> dict[str, Blame]:
    partners = failed_with(left)
    most = max((len(p) for p in partners.values()), default=0)
    if most < need:
        return {}
    candidates = {n for n, p in partners.items() if len(p) == most}
    named = {}
    for node in sorted(candidates):
        others = partners[node] - candidates
        if len(others) >= need and others & known_good:
            named[node] = Blame(BY_PARTNERS, tuple(sorted(others)))
    return named


def _by_every_pair(left: set[Pair], known_good: Set[str]) -> dict[str, Blame]:
    named = {}
    for node, partners in sorted(failed_with(left).items()):
        good = partners & known_good
        if node not in known_good and good:
            named[node] = Blame(BY_EVERY_PAIR, tuple(sorted(good)))
    return named


def explain(failing: Iterable[Pair], known_good: Set[str], need: int = 2) -> Explanation:
    """The nodes that explain the ``failing`` pairs, and the pairs left unexplained; ``known_good``: the nodes
    that passed some pair or group."""
    out = Explanation(unexplained=set(failing))
    while True:
        new = _by_partners(out.unexplained, known_good, need) or _by_every_pair(out.unexplained, known_good)
        if not new:
            return out
        out.named.update(new)
        out.unexplained = {p for p in out.unexplained if not p & new.keys()}
