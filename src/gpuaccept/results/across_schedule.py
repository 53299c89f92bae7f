"""Which nodes measure together between nodes (docs/checks/across-nodes.md): every pair in rounds of disjoint pairs,
the quick pairing that takes each node at least once, the halves of a set, and what each mode costs in rounds.

Pure functions of the node list: no measurement, no judgement. A round is a list of disjoint groups that run at
once (the NCCL tool's ``groups:`` layout), so a round costs about one group's run time.

- every pair (Meta GCM's ``check-nccl --pairwise``; NVIDIA ClusterKit's pairwise test): a round-robin tournament
  by the circle method, N-1 rounds of N/2 disjoint pairs for even N; odd N adds a bye, so N rounds of (N-1)/2
  pairs, each node sitting out once.
- quick (``check-nccl --pairwise-quick``: each node once, even-odd): round 1 pairs (0,1), (2,3), ...; round 2 the
  same list shifted by one, (1,2), (3,4), ..., so that every node meets a second, different partner and the node
  left out of round 1 at odd N is paired in round 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Pair = tuple[str, str]
Round = list[Pair]

MODES = ("world", "rail", "pairwise", "quick", "halving")


class ScheduleError(ValueError):
    """A node list no schedule can be made of (a node named twice, an empty name)."""


def check_nodes(nodes: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    for node in nodes:
        if not node:
            raise ScheduleError("an empty node name in the node list")
        if node in seen:
            raise ScheduleError(f"node {node!r} is listed twice")
        seen.add(node)
    return list(nodes)


def every_pair(nodes: Sequence[str]) -> list[Round]:
    """Every pair of nodes exactly once, in rounds of disjoint pairs (circle method: node 0 stays, the others turn
    one place per round). Fewer than 2 nodes: no round."""
    ring: list[str | None] = list(check_nodes(nodes))
    if len(ring) < 2:
        return []
    if len(ring) % 2:
        ring.append(None)  # the bye: the node drawn against it sits the round out
    n = len(ring)
    rounds: list[Round] = []
    for _ in range(n - 1):
        pairs = [(ring[i], ring[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def quick_pairs(nodes: Sequence[str]) -> list[Round]:
    """Each node in at least one pair, most in two with different partners: (0,1), (2,3), ... then (1,2), (3,4),
    ..., with (N-1, 0) closing the second round at even N. Two nodes: one round of one pair (a second would repeat
    it); three: every pair; fewer: none."""
    nodes = check_nodes(nodes)
    n = len(nodes)
    if n < 2:
        return []
    first = [(nodes[i], nodes[i + 1]) for i in range(0, n - 1, 2)]
    if n == 2:
        return [first]
    if n == 3:
        return every_pair(nodes)  # two pairs would leave the third pair unmeasured, and with it the only fast one
    second = [(nodes[i], nodes[i + 1]) for i in range(1, n - 1, 2)]
    if n % 2 == 0:
        second.append((nodes[-1], nodes[0]))
    return [first, second]


def halves(group: Sequence[str]) -> tuple[list[str], list[str]]:
    """A group split in two, the first half the larger at odd size."""
    mid = (len(group) + 1) // 2
    return list(group[:mid]), list(group[mid:])


def rounds(mode: str, n: int, suspects: int = 1) -> int:
    """Rounds (each about one run's time) a mode takes on ``n`` nodes. Halving: one round per level of halves
    (both halves of every slow group at once) down to groups of 2-3 nodes, plus one round pairing each suspect
    with a known-good node; ``suspects``: the slow groups followed at each level (one per bad node, at most)."""
    if mode not in MODES:
        raise ScheduleError(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    if n < 2:
        return 0
    if mode in ("world", "rail"):
        return 1
    if mode == "pairwise":
        return n - 1 if n % 2 == 0 else n
    if mode == "quick":
        return {2: 1, 3: 3}.get(n, 2)
    if n <= 3:  # nothing to halve: every pair
        return rounds("pairwise", n)
    levels, size = 0, n
    while size > 3:  # the larger half of a group of `size` nodes
        size, levels = math.ceil(size / 2), levels + 1
    confirm = max(1, suspects)  # one round when the suspects can each have their own known-good partner
    return levels + confirm


def pair_count(mode: str, n: int) -> int:
    """Pair runs a mode makes on ``n`` nodes (pairwise: every pair; quick: each node once or twice)."""
    if mode == "pairwise":
        return n * (n - 1) // 2
    if mode == "quick":
        return sum(len(r) for r in quick_pairs([str(i) for i in range(n)]))
    raise ScheduleError(f"pair_count: mode {mode!r} does not run pairs")
