"""The report's section of the deviation rules (gpuaccept.judge.deviation): per run, how far each GPU and the node
stand from their siblings, their fleet's median and their own commissioning run, worst first, read from the rows of
each run's verdict (the judge's own figures: value = figure / reference, with the rule's limit)."""

from __future__ import annotations

import html
from typing import Any

from gpuaccept.judge.deviation import RULES
from gpuaccept.judge.status import FAIL

SHOWN = 5  # per run: every failed figure and the worst others up to this many


def _off(row: dict[str, Any]) -> float:
    """How far a rule's row stands to its worse side (a rate with a floor: below 1 is worse)."""
    value = float(row["value"])
    return (1.0 - value) if row.get("lower_bound") is not None else (value - 1.0)


def rows_of(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """The deviation rules' figure rows of one verdict, worst first."""
    figures = [r for r in verdict.get("rows") or [] if isinstance(r, dict) and r.get("check") in RULES
               and r.get("metric") and isinstance(r.get("value"), int | float)]  # fmt: skip
    return sorted(figures, key=_off, reverse=True)


def section(groups: list[Any]) -> str:
    """An HTML table per report: for each run judged with the deviation rules, its failed figures and the worst
    others; a sentence where no run was (verdicts written before the rules)."""
    lines = []
    for g in groups:
        for v in g.verdicts:
            figures = rows_of(v)
            shown = [r for r in figures if r.get("status") == FAIL]
            shown += [r for r in figures if r.get("status") != FAIL][: max(0, SHOWN - len(shown))]
            for r in shown:
                bound = r.get("lower_bound") if r.get("lower_bound") is not None else r.get("upper_bound")
                lines.append([g.label, v.get("node"), v.get("suite"), r["check"], r["metric"],
                              "-" if r.get("gpu") is None else r["gpu"], f"{float(r['value']) - 1:+.1%}",
                              "-" if bound is None else f"{float(bound) - 1:+.1%}",
                              str(r.get("status", "")).upper()])  # fmt: skip
    if not lines:
        return ("<p>No run here was judged with the deviation rules (siblings, fleet median, own commissioning run): "
                "verdicts written before them, or single runs without siblings or baseline.</p>")
    head = ["group", "node", "suite", "rule", "figure", "GPU", "deviation", "limit", "verdict"]
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in lines)
    return ("<p>Each GPU against the median of its node's other GPUs, each node against its fleet's median and "
            "against its own commissioning run (docs/verdicts.md): per run every failed figure and the worst others, "
            "worst first (figure / reference - 1).</p><table class='deviation'><thead><tr>"
            + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{body}</tbody></table>")
