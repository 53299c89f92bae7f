"""``gpuaccept sensitivity --references``: what the band and the three deviation rules (siblings, fleet, own
baseline: gpuaccept.judge.deviation) catch together, over healthy recorded runs.

Each healthy run (ACCEPTED by today's references, the band rules alone: gpuaccept.results.deviation_noise) has
each judged figure made worse by a loss, in its verdict's rows (in memory only), on one GPU at a time (a per-GPU
figure of a node of 2 GPUs or more) and on the whole node; then the band (the row's own bounds), the siblings
rule, the fleet rule (the run against the other healthy runs of its node type and suite, each a node) and the
own-baseline rule (against the accepted commissioning run beside it) judge it again. A case is caught when any of
them fails it. A node-level figure that a per-GPU loss would also lower (a node's sum) is left as measured: the
count is a lower bound.

Before the losses, every healthy run is judged by the three rules as recorded: a rule that rejects a healthy run
is a threshold too tight, and the result says which.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from gpuaccept.judge import deviation
from gpuaccept.judge.verdict import FAIL, Row
from gpuaccept.results import deviation_noise as noise

BAND = "band"
CATCHERS = (BAND, *deviation.RULES)
NODE = "node"
ONE_GPU = "one GPU"


@dataclass
class Case:
    """One figure and scope (``one GPU`` or ``node``): cases, and per loss how many each rule and any rule caught."""

    figure: str
    scope: str
    owner: str = ""  # gpu, link, node (gpuaccept.metric_table)
    cases: int = 0
    caught: dict[float, int] = field(default_factory=dict)
    by: dict[float, dict[str, int]] = field(default_factory=dict)

    def rate(self, loss: float) -> float:
        return self.caught.get(loss, 0) / self.cases if self.cases else 0.0


def _worse(rows: list[Row], target: str, gpu: int | None, loss: float) -> list[Row]:
    """The rows with ``target``'s figure made worse by ``loss`` (on ``gpu``, or on every GPU where None)."""
    out = []
    for r in rows:
        if r.metric and f"{r.check}.{r.metric}" == target and r.value is not None and (gpu is None or r.gpu == gpu):
            factor = 1.0 - loss if deviation.higher_is_better(r) else 1.0 + loss
            out.append(dataclasses.replace(r, value=r.value * factor))
        else:
            out.append(r)
    return out


def _band_fails(rows: list[Row], target: str) -> bool:
    for r in deviation.judged(rows):
        if f"{r.check}.{r.metric}" == target:
            if (r.lower_bound is not None and r.value < r.lower_bound) or (  # type: ignore[operator]
                r.upper_bound is not None and r.value > r.upper_bound  # type: ignore[operator]
            ):
                return True
    return False


def _caught(h: noise.Healthy, rows: list[Row], target: str, fleet: list[list[Row]],
            thresholds: deviation.Thresholds) -> set[str]:  # fmt: skip
    """The rules that fail the run whose rows are ``rows``."""
    out = {BAND} if _band_fails(rows, target) else set()
    for rule in deviation.RULES:
        if any(r.status == FAIL and r.expected for r in noise.rule_rows(rule, h, rows, fleet, thresholds)):
            out.add(rule)
    return out


def healthy_rejections(healthy: list[noise.Healthy], thresholds: deviation.Thresholds) -> list[str]:
    """Each healthy run a deviation rule rejects as recorded, with the rule's reason (none is the goal)."""
    fleet = noise.fleets(healthy)
    out = []
    for h in healthy:
        for rule in deviation.RULES:
            rows = noise.rule_rows(rule, h, h.verdict.rows, noise.others(h, fleet), thresholds)
            out += [f"{h.run}: {rule}: {r.reason}" for r in rows if r.metric is None and r.status == FAIL]
    return out


def measure(healthy: list[noise.Healthy], thresholds: deviation.Thresholds, losses: list[float]) -> list[Case]:
    """Every figure and scope over the healthy runs, for each loss."""
    fleet = noise.fleets(healthy)
    cases: dict[tuple[str, str], Case] = {}
    for h in healthy:
        rows, others = h.verdict.rows, noise.others(h, fleet)
        gpus = len(h.verdict.facts.get("gpus") or [])
        per_gpu: dict[str, list[int | None]] = {}
        owners: dict[str, str] = {}
        for r in deviation.judged(rows):
            per_gpu.setdefault(deviation.figure(r), []).append(r.gpu)
            owners[deviation.figure(r)] = r.owner
        for target, where in sorted(per_gpu.items()):
            scopes: list[tuple[str, int | None]] = [(NODE, None)]
            if gpus >= 2 and None not in where:
                scopes += [(ONE_GPU, g) for g in where]
            for scope, gpu in scopes:
                case = cases.setdefault((target, scope), Case(target, scope, owners[target]))
                case.cases += 1
                for loss in losses:
                    got = _caught(h, _worse(rows, target, gpu, loss), target, others, thresholds)
                    case.caught[loss] = case.caught.get(loss, 0) + bool(got)
                    for rule in got:
                        by = case.by.setdefault(loss, {})
                        by[rule] = by.get(rule, 0) + 1
    return sorted(cases.values(), key=lambda c: (c.figure, c.scope))


#: The host-side copies (pinned host<->GPU: the PCIe link and the host give them) move by more than 5 % between
#: healthy runs of one node, of one board's GPUs and of a fleet's nodes (reference_values/deviation/thresholds.yaml,
#: noise_above_5_percent): the result is also given without them.
NOISY_OWNERS = ("link",)


def overall(cases: list[Case], loss: float, without: tuple[str, ...] = ()) -> tuple[int, int]:
    """(caught, cases) over every figure and scope (``without``: leaving out the figures of these owners)."""
    kept = [c for c in cases if c.owner not in without]
    return sum(c.caught.get(loss, 0) for c in kept), sum(c.cases for c in kept)


def table(cases: list[Case], losses: list[float], goal: float = 0.90) -> str:
    """One line per figure and scope: cases and, per loss, caught by any rule and by each."""
    head = f"{'figure':38} {'scope':8} {'cases':>5} " + " ".join(
        f"{loss:.0%}: any {'/'.join(CATCHERS)}".rjust(40) for loss in losses
    )
    lines = [head, "-" * len(head)]
    for c in cases:
        cells = []
        for loss in losses:
            by = c.by.get(loss, {})
            each = "/".join(str(by.get(k, 0)) for k in CATCHERS)
            cells.append(f"{c.caught.get(loss, 0)}/{c.cases} {each}".rjust(40))
        mark = "" if c.rate(losses[0]) >= goal else "  < goal"
        lines.append(f"{c.figure:38} {c.scope:8} {c.cases:5} " + " ".join(cells) + mark)
    for loss in losses:
        got, n = overall(cases, loss)
        kept, m = overall(cases, loss, NOISY_OWNERS)
        lines.append(f"{loss:.0%} loss: caught in {got} of {n} cases ({got / n if n else 0:.1%}); without the "
                     f"host-side copies (owner {', '.join(NOISY_OWNERS)}): {kept} of {m} ({kept / m if m else 0:.1%})")
    return "\n".join(lines)


def _count(cases: list[Case], loss: float, without: tuple[str, ...] = ()) -> dict[str, int]:
    caught, n = overall(cases, loss, without)
    return {"caught": caught, "cases": n}


def to_json(cases: list[Case], losses: list[float], runs: list[str], rejected: list[str], notes: list[str],
            goal: float = 0.90) -> dict[str, Any]:  # fmt: skip
    return {
        "schema": "gpuaccept.sensitivity-references/1",
        "losses": losses,
        "catchers": list(CATCHERS),
        "runs": runs,
        "healthy_runs_rejected": rejected,
        "notes": notes,
        "overall": {f"{loss:g}": _count(cases, loss) for loss in losses},
        "overall_without_host_copies": {f"{loss:g}": _count(cases, loss, NOISY_OWNERS) for loss in losses},
        "below_goal": [
            {"figure": c.figure, "scope": c.scope, "cases": c.cases,
             "caught": {f"{loss:g}": c.caught.get(loss, 0) for loss in losses}}
            for c in cases if c.rate(losses[0]) < goal
        ],
        "figures": [
            {"figure": c.figure, "scope": c.scope, "owner": c.owner, "cases": c.cases,
             "caught": {f"{loss:g}": c.caught.get(loss, 0) for loss in losses},
             "by": {f"{loss:g}": c.by.get(loss, {}) for loss in losses}}
            for c in cases
        ],
    }  # fmt: skip
