"""One node's or a fleet's latest results against the references: every judged metric, how far it is off its
reference (percent, and in units of its tolerance: 1.0 is the edge, above 1 fails), worst first.

Results are read from verdict.json files (results/<node>/<run>/verdict.json) and judged again against the
reference files as they are now, so a fleet can be checked against a new reference before it is adopted.
A run's node type comes from its verdict; a node type without a reference file is an error for that node,
never a silent skip. Metrics the references judge but the run did not measure are listed first.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .references import NodeType, ReferenceError, load_node_type

SCHEMA = "gpuaccept.verdict/1"


@dataclass
class Deviation:
    node: str
    node_type: str
    run: str  # the run directory
    started_unix: float | None
    check: str
    metric: str
    value: float | None
    unit: str
    reference: float | None
    off: float | None  # fraction worse than the reference (negative: better); None: no value
    tolerance: float | None  # the reference's tolerance on the side that matters
    reason: str = ""

    @property
    def units(self) -> float:
        """How far off, in tolerances (1.0 = at the edge); infinite for a missing value or a load error."""
        if self.off is None or not self.tolerance:
            return math.inf
        return self.off / self.tolerance

    @property
    def outside(self) -> bool:
        return self.units > 1.0 + 1e-12

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["tolerance_units"] = None if math.isinf(self.units) else self.units
        doc["outside"] = self.outside
        return doc


def find_verdicts(paths: list[Path], every_run: bool = False) -> list[tuple[Path, dict[str, Any]]]:
    """verdict.json files under the paths (files, run directories or results trees): the newest run of each
    (node, node type) by its own start time, or every run with ``every_run``."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for path in paths:
        if path.is_file():
            files = [path]
        elif path.is_dir():
            files = sorted(path.rglob("verdict.json"))
        else:
            raise ValueError(f"{path}: no such file or directory")
        if not files:
            raise ValueError(f"{path}: no verdict.json under it (run 'gpuaccept summarize' on its run directories)")
        for f in files:
            try:
                doc = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:  # ValueError: bad JSON or not UTF-8
                raise ValueError(f"{f}: cannot read the verdict: {err}") from None
            if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
                raise ValueError(f"{f}: not a gpuaccept verdict (schema {SCHEMA!r} expected)")
            found.append((f, doc))
    if every_run:
        return sorted(found, key=lambda fd: (fd[1].get("started_unix") or 0, str(fd[0])))
    newest: dict[tuple[str, str], tuple[Path, dict[str, Any]]] = {}
    for f, doc in sorted(found, key=lambda fd: (fd[1].get("started_unix") or 0, str(fd[0]))):
        newest[(doc.get("node", "?"), doc.get("node_type", "?"))] = (f, doc)
    return list(newest.values())


def deviations(verdicts: list[tuple[Path, dict[str, Any]]], reference_dir: str | Path) -> list[Deviation]:
    """Every judged metric of every run, worst first."""
    out: list[Deviation] = []
    types: dict[str, NodeType | ReferenceError] = {}
    for path, doc in verdicts:
        node, type_name, run = doc.get("node", "?"), doc.get("node_type", "?"), str(path.parent)
        base = {"node": node, "node_type": type_name, "run": run, "started_unix": doc.get("started_unix")}
        if type_name not in types:
            try:
                types[type_name] = load_node_type(reference_dir, type_name)
            except ReferenceError as err:
                types[type_name] = err
        node_type = types[type_name]
        if isinstance(node_type, ReferenceError):
            out.append(
                Deviation(
                    **base,
                    check="references",
                    metric="-",
                    value=None,
                    unit="",
                    reference=None,
                    off=None,
                    tolerance=None,
                    reason=str(node_type),
                )
            )
            continue
        measured: dict[tuple[str, str], list[dict[str, Any]]] = {}
        check_rows: dict[str, dict[str, Any]] = {}
        for r in doc.get("rows", []):
            if r.get("metric"):
                measured.setdefault((r["check"], r["metric"]), []).append(r)
            else:
                check_rows.setdefault(r["check"], r)
        for check, refs in sorted(node_type.checks.items()):
            if check not in check_rows and not any(c == check for c, _m in measured):
                # The verdict has no row for this check at all: it predates the check, or its suite does not run
                # it (a verdict lists every check of its suite, not run or not).
                continue
            for metric, ref in sorted(refs.items()):
                if not ref.judged or ref.value is None:
                    continue
                values = [
                    float(r["value"])
                    for r in measured.get((check, metric), [])
                    if isinstance(r.get("value"), (int, float))
                    and not isinstance(r["value"], bool)
                    and math.isfinite(r["value"])
                ]
                if not values:
                    row = (measured.get((check, metric)) or [None])[0] or check_rows.get(check)
                    why = (
                        f"{row['status']}: {row.get('reason') or 'no reason given'}"
                        if row
                        else "the check is not in this run's verdict"
                    )
                    out.append(
                        Deviation(
                            **base,
                            check=check,
                            metric=metric,
                            value=None,
                            unit=ref.unit,
                            reference=ref.value,
                            off=None,
                            tolerance=None,
                            reason=f"no value ({why})",
                        )
                    )
                    continue
                # A run that repeated the check (--repeat) counts with its worst repetition.
                out.append(max((_deviation(base, check, metric, v, ref) for v in values), key=lambda d: d.units))
    out.sort(key=lambda d: (-d.units, -(d.off or 0.0), d.node, d.check, d.metric))
    return out


def _deviation(base: dict[str, Any], check: str, metric: str, value: float, ref: Any) -> Deviation:
    sides = []
    if ref.lower is not None:
        sides.append(((ref.value - value) / ref.value, ref.lower))
    if ref.upper is not None:
        sides.append(((value - ref.value) / ref.value, ref.upper))
    off, tol = max(sides, key=lambda s: s[0] / s[1] if s[1] else math.inf)
    return Deviation(
        **base, check=check, metric=metric, value=value, unit=ref.unit, reference=ref.value, off=off, tolerance=tol
    )


def table(devs: list[Deviation]) -> str:
    head = ("node", "node type", "check.metric", "value", "reference", "off", "tolerances", "")
    rows = []
    for d in devs:
        value = "-" if d.value is None else f"{d.value:.4g} {d.unit}"
        ref = "-" if d.reference is None else f"{d.reference:.4g}"
        off = "-" if d.value is None or not d.reference else f"{d.value / d.reference - 1:+.1%}"
        units = "-" if math.isinf(d.units) else f"{d.units:.2f}"
        mark = "OUTSIDE" if d.outside else ""
        if d.reason:
            mark = f"{mark} {d.reason}".strip()
        rows.append((d.node, d.node_type, f"{d.check}.{d.metric}", value, ref, off, units, mark))
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head) - 1)]
    lines = []
    for r in [head, *rows]:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1])
    return "\n".join(line.rstrip() for line in lines)
