"""The noise of the three deviation rules (gpuaccept.judge.deviation), measured over recorded healthy runs, and the
thresholds derived from it (``scripts/derive_deviation_thresholds.py`` writes them to
``reference_values/deviation/thresholds.yaml``; a test derives them again and requires the shipped file).

A healthy run is one ACCEPTED by today's references (gpuaccept.judge.summarize.rejudge, band rules alone). Each
rule's noise of a figure is the largest deviation to the worse side (a rate below, a latency above its
reference) that any healthy run showed:

- siblings: each GPU against the median of the other GPUs of its run (runs of 2 GPUs or more);
- fleet: each run against the median of the other runs of its node type and suite (each run a node: the
  recorded runs of several machine starts, on several boards, make the fleet);
- baseline: each run against the accepted commissioning run before it beside it, GPUs matched by serial.

Each figure's threshold is pooled over every node type, and a node type whose recorded runs span two machine
starts or more has its own too (a 4-GPU board's host copies are steadier than a 2-GPU VM's). The threshold is the
noise plus ``MARGIN``, rounded up to ``STEP`` and at least ``FLOOR``: every recorded healthy run passes, and a
loss larger than the threshold plus the figure's spread to the better side fails (``catches``: the smallest loss
caught on every healthy run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept.judge import deviation, own_baseline, summarize, verdict
from gpuaccept.judge.verdict import Row
from gpuaccept.layout import VERDICT_FILE as VERDICT

MARGIN = 0.005  # half a point of headroom above the largest healthy deviation
STEP = 0.005  # thresholds are given in half points
# No threshold below 3 %: the recorded healthy runs are few (59 over eight machine starts, on VMs), and a
# real fleet's spread is wider than theirs; 3 % still lets a 5 % loss fail.
FLOOR = 0.03
MIN_STARTS = 2  # a node type's own threshold needs its runs on two machine starts (boards) or more
MIN_FLEET_NODES = 5  # the median of 4 others is a healthy figure with one faulty node among them
RATIO_ONLY = 1.0  # a threshold no figure reaches: the rules give their ratios and never fail


@dataclass
class Healthy:
    """A recorded run ACCEPTED by today's references: its verdict (band rules) and its commissioning run."""

    run: Path
    verdict: verdict.Verdict
    commission: own_baseline.Commission

    @property
    def group(self) -> tuple[str, str]:
        return self.verdict.node_type, self.verdict.suite


def healthy_runs(runs: list[Path], reference_dir: Path) -> tuple[list[Healthy], list[str]]:
    """(healthy runs, notes naming the runs left out and why)."""
    out, notes = [], []
    for run in runs:
        _, v = summarize.rejudge(run, reference_dir)
        band_rows = [r for r in v.rows if r.check not in deviation.RULES]
        if not (v.node_type and verdict.decide(band_rows)):
            notes.append(f"{run}: not accepted by today's references ({verdict.headline(v)}): left out")
            continue
        out.append(Healthy(run, _band_only(v), own_baseline.find(run)))
    return out, notes


def _band_only(v: verdict.Verdict) -> verdict.Verdict:
    rows = [r for r in v.rows if r.check not in deviation.RULES]
    return verdict.Verdict(v.node, v.node_type, v.suite, True, rows, facts=v.facts, run_dir=str(v.run_dir))


def measuring(min_fleet: int = MIN_FLEET_NODES) -> deviation.Thresholds:
    """Thresholds that let every figure through, so that the rules give each figure's ratio."""

    class Every(dict):
        def get(self, key: Any, default: Any = None) -> Any:
            return RATIO_ONLY

    class EverySuite(dict):
        def get(self, key: Any, default: Any = None) -> Any:
            return Every()

    return deviation.Thresholds({rule: EverySuite() for rule in deviation.RULES}, min_fleet, "measuring")


def rule_rows(rule: str, h: Healthy, rows: list[Row], fleet_rows: list[list[Row]],
              thresholds: deviation.Thresholds) -> list[Row]:  # fmt: skip
    """One rule's rows of one run whose judged rows are ``rows`` (a healthy run's, or the same made worse)."""
    facts, suite = h.verdict.facts, h.verdict.suite
    thresholds = thresholds.for_type(h.verdict.node_type)
    if rule == deviation.SIBLINGS:
        return deviation.siblings(rows, facts, suite, thresholds)
    if rule == deviation.FLEET:
        return deviation.fleet(rows, facts, suite, fleet_rows, thresholds)
    c = h.commission
    return deviation.baseline(rows, facts, suite, c.rows, c.facts, c.where, thresholds)


def fleets(healthy: list[Healthy]) -> dict[tuple[str, str], list[Healthy]]:
    out: dict[tuple[str, str], list[Healthy]] = {}
    for h in healthy:
        out.setdefault(h.group, []).append(h)
    return out


def others(h: Healthy, fleet: dict[tuple[str, str], list[Healthy]]) -> list[list[Row]]:
    return [o.verdict.rows for o in fleet[h.group] if o is not h]


def start(h: Healthy) -> frozenset[str]:
    """The machine start (the board) a run was measured on: its GPUs' serial numbers."""
    return frozenset(str(g.get("serial")) for g in h.verdict.facts.get("gpus") or [] if isinstance(g, dict))


@dataclass
class Noise:
    """One rule's deviations of one figure over the healthy runs: worst to the worse and to the better side, and
    the same per node type (``by_type``)."""

    worse: float = 0.0
    better: float = 0.0
    samples: int = 0
    runs: set[str] = field(default_factory=set)
    starts: set[frozenset[str]] = field(default_factory=set)
    by_type: dict[str, Noise] = field(default_factory=dict)

    def add(self, row: Row, h: Healthy, nested: bool = True) -> None:
        off = deviation.off(row)
        self.worse, self.better = max(self.worse, off), max(self.better, -off)
        self.samples += 1
        self.runs.add(str(h.run))
        self.starts.add(start(h))
        if nested:
            self.by_type.setdefault(h.verdict.node_type, Noise()).add(row, h, nested=False)

    @property
    def threshold(self) -> float:
        return max(FLOOR, round(math.ceil((self.worse + MARGIN) / STEP - 1e-9) * STEP, 4))

    @property
    def catches(self) -> float:
        """The smallest loss that fails on every healthy run: below the threshold even from the better side."""
        return round(1.0 - (1.0 - self.threshold) / (1.0 + self.better), 4)

    def entry(self) -> dict[str, Any]:
        """The figure's entry in the thresholds file: pooled over the node types, and each node type's own where
        its runs span ``MIN_STARTS`` machine starts or more."""
        out: dict[str, Any] = {"threshold": self.threshold, "noise": round(self.worse, 4),
                               "better": round(self.better, 4), "catches": self.catches, "samples": self.samples,
                               "runs": len(self.runs), "machine_starts": len(self.starts)}  # fmt: skip
        own = {t: n.entry() for t, n in sorted(self.by_type.items()) if len(n.starts) >= MIN_STARTS}
        if own:
            out["node_types"] = own
        return out


Measured = dict[str, dict[str, dict[str, Noise]]]  # rule -> suite -> figure -> Noise


def measure(healthy: list[Healthy]) -> Measured:
    """rule -> suite -> figure -> Noise over the healthy runs."""
    fleet = fleets(healthy)
    thresholds = measuring()
    out: Measured = {rule: {} for rule in deviation.RULES}
    for h in healthy:
        for rule in deviation.RULES:
            for r in rule_rows(rule, h, h.verdict.rows, others(h, fleet), thresholds):
                if r.metric and r.value is not None and r.status != verdict.INFO:
                    out[rule].setdefault(h.verdict.suite, {}).setdefault(r.metric, Noise()).add(r, h)
    return out


def _own(pooled: Noise) -> list[tuple[str, Noise]]:
    """("", the pooled noise) and (node type, its own) for each node type with a threshold of its own."""
    return [("", pooled), *((t, n) for t, n in sorted(pooled.by_type.items()) if len(n.starts) >= MIN_STARTS)]


def thresholds_doc(noise: Measured, runs: list[str], command: str) -> dict[str, Any]:
    """The thresholds file (reference_values/deviation/thresholds.yaml) from the measured noise."""
    # A figure measured on fewer than MIN_STARTS machine starts has no threshold (one board's runs say nothing of
    # the next board's noise): the rule then cannot judge it, and says so.
    noise = {rule: {suite: kept for suite, figures in suites.items()
                    if (kept := {name: n for name, n in figures.items() if len(n.starts) >= MIN_STARTS})}
             for rule, suites in noise.items()}  # fmt: skip
    rules: dict[str, Any] = {}
    for rule, suites in noise.items():
        rules[rule] = {suite: {name: n.entry() for name, n in sorted(figures.items())}
                       for suite, figures in sorted(suites.items())}  # fmt: skip
    above = sorted(f"{rule} {suite} {name}{f' ({t})' if t else ''}: catches {n.catches:.1%}"
                   for rule, suites in noise.items() for suite, figures in suites.items()
                   for name, pooled in figures.items() for t, n in _own(pooled) if n.catches > 0.05)  # fmt: skip
    return {
        "schema": deviation.SCHEMA,
        "source": {
            "command": command,
            "rule": f"threshold = the largest worse-side deviation of a recorded healthy run + {MARGIN:g}, rounded "
            f"up to {STEP:g}, at least {FLOOR:g}; catches = the smallest loss that fails on every recorded healthy run",
            "runs": runs,
        },
        "min_fleet_nodes": MIN_FLEET_NODES,
        "noise_above_5_percent": above,
        "rules": rules,
    }


def recorded(fixtures: Path, into: Path) -> list[tuple[Path, str]]:
    """Every recorded run directory of the test fixtures (``tests/fixtures``), each with the name the thresholds
    file gives it: the run directories under ``recorded/`` as they are, and those of the multi-GPU machines'
    ``*.tar.gz`` archives unpacked into ``into`` (``<fixture>/<archive>:<path in it>``)."""
    import tarfile  # noqa: PLC0415

    out = [(p.parent, str(p.parent.relative_to(fixtures))) for p in sorted((fixtures / "recorded").rglob(VERDICT))
           if (p.parent / "reframe-report.json").is_file()]  # fmt: skip
    for archive in sorted(fixtures.glob("multigpu_*/*.tar.gz")):
        dest = into / archive.parent.name / archive.name.removesuffix(".tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
        for p in sorted(dest.rglob(VERDICT)):
            out.append((p.parent, f"{archive.relative_to(fixtures)}:{p.parent.relative_to(dest)}"))
    return out
