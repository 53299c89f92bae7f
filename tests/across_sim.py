"""A simulated fleet for the tests between nodes: each node's network path has a bandwidth factor and a latency
factor (1.0 healthy), and a group's figures follow from its members, seeded noise added. Built by the tests from
the model below; no recorded output.

The model: NCCL's ring all-reduce moves at the pace of its slowest link (the bus bandwidth of a group is the base
figure times the lowest bandwidth factor among its members), and every ring step waits for the slowest hop (the
latency is the base per-step latency times the steps, 2 (n-1) for n nodes, times the highest latency factor).
Noise: a Gaussian of 1 % of the figure per measurement (the run-to-run spread assumed of a healthy pair)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuaccept.judge.across_rules import GroupFigure

BASE_BUSBW = 370.0  # GB/s: an all-reduce bus bandwidth of the order of two 8-GPU H100 nodes over 8 x 400 Gb/s
BASE_STEP_US = 6.0  # us per ring step at 8 bytes


@dataclass
class Fleet:
    nodes: list[str]
    bw: dict[str, float] = field(default_factory=dict)
    lat: dict[str, float] = field(default_factory=dict)
    noise: float = 0.01
    seed: int = 1
    runs: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def measure_one(self, group: Sequence[str], mode: str = "") -> GroupFigure:
        self.runs += 1
        n = len(group)
        bw = BASE_BUSBW * min(self.bw.get(m, 1.0) for m in group) * self.rng.gauss(1.0, self.noise)
        lat = BASE_STEP_US * 2 * (n - 1) * max(self.lat.get(m, 1.0) for m in group) * self.rng.gauss(1.0, self.noise)
        return GroupFigure(tuple(group), round(bw, 2), round(lat, 2), mode=mode)

    def measure(self, groups: list[tuple[str, ...]]) -> list[GroupFigure]:
        return [self.measure_one(g) for g in groups]


def fleet(n: int, bad_bw: Sequence[int] = (), bad_lat: Sequence[int] = (), seed: int = 1, factor: float = 0.6) -> Fleet:
    """``n`` nodes node-01..., the ones at the indexes ``bad_bw`` at ``factor`` of the bandwidth, those at
    ``bad_lat`` at 3 x the latency."""
    names = [f"node-{i + 1:02d}" for i in range(n)]
    return Fleet(names, {names[i]: factor for i in bad_bw}, {names[i]: 3.0 for i in bad_lat}, seed=seed)
