"""``gpuaccept fleet``'s fleet rule: each node's newest verdict against the median of the other nodes of its node
type and suite (gpuaccept.judge.deviation.fleet: median and MAD, a minimum fleet size below which it says it
cannot judge). A node the rule fails is not accepted as part of the fleet, whatever its own verdict says; the
summary names the node, the GPU and the figure, and shows each node's worst deviation from the fleet median.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tabulate

from gpuaccept.judge import deviation, own_baseline, readback
from gpuaccept.judge.verdict import FAIL, INFO, PASS, Row
from gpuaccept.layout import VERDICT_FILE


@dataclass
class NodeDeviation:
    """One node's rows of the fleet rule, and its worst figure against the fleet median."""

    node: str
    node_type: str
    suite: str
    status: str  # pass, fail, info (cannot judge)
    rows: list[Row] = field(default_factory=list)

    @property
    def worst(self) -> Row | None:
        judged = [r for r in self.rows if r.metric and r.value is not None]
        return max(judged, key=_off) if judged else None

    @property
    def reason(self) -> str:
        return next((r.reason for r in self.rows if r.metric is None), "")


def _off(r: Row) -> float:
    """How far a rule's row stands on the worse side of its reference (negative: better)."""
    assert r.value is not None
    return (1.0 - r.value) if r.lower_bound is not None else (r.value - 1.0)


def judge(results: str | Path, entries: list[Any], reference_dir: str | Path) -> list[NodeDeviation]:
    """The fleet rule for every node with a readable newest verdict (``entries``: gpuaccept.results.fleet.Entry)."""
    thresholds = deviation.load(reference_dir)
    verdicts: list[tuple[Any, list[Row], dict[str, Any]]] = []
    for e in entries:
        if not e.run or not e.node_type:
            continue
        try:
            doc = readback.read(Path(results) / e.node / e.run / VERDICT_FILE, ValueError)
        except ValueError:
            continue
        verdicts.append((e, own_baseline.rows_of(doc), doc.get("facts") or {}))
    out = []
    for e, rows, facts in verdicts:
        others = [r for o, r, _ in verdicts if o is not e and (o.node_type, o.suite) == (e.node_type, e.suite)]
        got = deviation.fleet(rows, facts, e.suite, others, thresholds.for_type(e.node_type))
        out.append(NodeDeviation(e.node, e.node_type, e.suite, got[0].status, got))
    return out


def failed(nodes: list[NodeDeviation]) -> list[str]:
    return sorted({n.node for n in nodes if n.status == FAIL})


def table(nodes: list[NodeDeviation]) -> str:
    """Per node, worst first: its worst figure against the fleet median, and the rule's verdict."""
    if not nodes:
        return "fleet median: no node's verdict to compare"
    shown = sorted(nodes, key=lambda n: -_off(n.worst) if n.worst else 1.0)
    lines = []
    for n in shown:
        w = n.worst
        where = "-" if w is None else (w.metric or "-") + ("" if w.gpu is None else f" (GPU {w.gpu})")
        off = "-" if w is None else f"{w.value - 1:+.1%}"  # type: ignore[operator]
        status = {PASS: "within", FAIL: "OUTLIER", INFO: "cannot judge"}.get(n.status, n.status)
        lines.append((n.node, n.node_type, n.suite, where, off, status))
    head = ("node", "node type", "suite", "worst figure vs fleet median", "deviation", "fleet rule")
    text = tabulate.tabulate(lines, headers=head, tablefmt="simple", disable_numparse=True)
    out = ["deviation from the fleet median (robust: median and MAD of the other nodes of each node type and suite)",
           "", *("  " + line.rstrip() for line in text.splitlines())]  # fmt: skip
    for n in shown:
        if n.status != PASS and n.reason:
            out.append(f"  {n.node}: {n.reason}")
    return "\n".join(out)


def to_json(nodes: list[NodeDeviation]) -> list[dict[str, Any]]:
    return [{"node": n.node, "node_type": n.node_type, "suite": n.suite, "status": n.status,
             "rows": [asdict(r) for r in n.rows]} for n in nodes]  # fmt: skip
