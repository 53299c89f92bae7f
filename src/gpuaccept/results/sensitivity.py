"""``gpuaccept sensitivity``: what the references catch. Healthy recorded runs are judged again with one gating
figure at a time made worse by a fraction (a rate lower, a latency or power higher), in memory only, and the
table says for each figure and fraction on how many runs the node was rejected (docs/verdicts.md).

A band that lets a 10 % loss of GEMM through is a defect; this is how to see it before a fleet does. Each run
must first be ACCEPTED as recorded (a run that is not says so and is left out): detection is measured on
healthy nodes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept import references
from gpuaccept.judge import summarize, verdict


@dataclass
class Figure:
    """One gating figure: on how many healthy runs each loss was caught, and by which row."""

    check: str
    metric: str
    owner: str
    better: str  # higher or lower
    caught: dict[float, int] = field(default_factory=dict)
    runs: int = 0


def _better(ref: references.MetricReference) -> str:
    return "higher" if ref.lower is not None or ref.link_fraction is not None else "lower"


def _gating(v: verdict.Verdict) -> list[verdict.Row]:
    """The judged metric rows of an accepted verdict: the figures that decide it."""
    return [r for r in v.rows if r.metric and r.expected and r.status == verdict.PASS and r.value is not None
            and (r.lower_bound is not None or r.upper_bound is not None)]  # fmt: skip


def measure(runs: list[Path], reference_dir: Path, losses: list[float]) -> tuple[list[Figure], list[str]]:
    """(figures, notes): for each gating figure of the accepted runs, on how many runs each loss rejected the
    node; notes name the runs left out and why."""
    figures: dict[tuple[str, str], Figure] = {}
    notes: list[str] = []
    for run in runs:
        _, base = summarize.rejudge(run, reference_dir)  # with its retries, as gpuaccept run judged it
        if not base.accepted:
            notes.append(f"{run}: not accepted as recorded ({verdict.headline(base)}): left out")
            continue
        node_type = references.bind_link(references.load_node_type(reference_dir, base.node_type), base.facts)
        seen: set[tuple[str, str | None]] = set()
        for row in _gating(base):
            ref = node_type.checks.get(row.check, {}).get(row.metric)
            if ref is None or (row.check, row.metric) in seen:  # the node's own rows (GPU count): not a figure
                continue
            # A per-GPU metric has a row per GPU: one figure all the same, made worse on every GPU at once.
            seen.add((row.check, row.metric))
            fig = figures.setdefault((row.check, row.metric), Figure(row.check, row.metric, row.owner, _better(ref)))
            fig.runs += 1
            for loss in losses:
                factor = 1.0 - loss if fig.better == "higher" else 1.0 + loss
                target = (row.check, row.metric)

                def worse(check: str, metric: str, value: float, target=target, factor=factor) -> float:
                    return value * factor if (check, metric) == target else value

                _, worse_verdict = summarize.rejudge(run, reference_dir, worse)
                fig.caught[loss] = fig.caught.get(loss, 0) + (0 if worse_verdict.accepted else 1)
    order = {"gpu": 0, "link": 1, "node": 2, "host": 3}
    return sorted(figures.values(), key=lambda f: (order.get(f.owner, 9), f.check, f.metric)), notes


def table(figures: list[Figure], losses: list[float]) -> str:
    head = f"{'check.metric':42} {'owner':5} " + " ".join(f"{loss:.0%} worse".rjust(11) for loss in losses)
    lines = [head, "-" * len(head)]
    for f in figures:
        cells = " ".join(f"{f.caught.get(loss, 0)}/{f.runs}".rjust(11) for loss in losses)
        lines.append(f"{f.check + '.' + f.metric:42} {f.owner:5} {cells}")
    return "\n".join(lines)


def to_json(figures: list[Figure], losses: list[float], notes: list[str]) -> dict[str, Any]:
    return {
        "losses": losses,
        "notes": notes,
        "figures": [
            {"check": f.check, "metric": f.metric, "owner": f.owner, "better": f.better, "runs": f.runs,
             "caught": {f"{loss:g}": f.caught.get(loss, 0) for loss in losses}}
            for f in figures
        ],
    }  # fmt: skip
