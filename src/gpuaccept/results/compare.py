"""One node's or a fleet's latest results against the references: every judged metric, how far it is off its
reference (percent, and in units of its tolerance: 1.0 is the edge, above 1 fails), worst first.

A per-GPU metric (a document with gpu_metrics) has one line per GPU, named ``check.metric[gpu N]``.

Runs are found by their verdict.json files (results/<node>/<run>/verdict.json); their rows are the judge's
result. Given a reference directory, each run is judged again by the one judge (gpuaccept.judge.verdict) against
those files, so a fleet can be checked against a new reference before it is adopted (a run fetched without its
documents keeps the rows it was given). Whether a metric is outside is the judge's row status, never a bound
derived here; how far off is measured from the reference and bounds on that row. A node type without a
reference file is an error for that node, never a silent skip. Metrics the references judge but the run did
not measure are listed first.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import tabulate

from gpuaccept import textinput
from gpuaccept.judge import load, summarize
from gpuaccept.layout import FACTS_FILE, REPORT_FILE, VERDICT_FILE
from gpuaccept.references import ReferenceError, load_node_type

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
    failed: bool = True  # the judge's row status (True: fail): what "outside" means
    gpu: int | None = None  # a per-GPU row's GPU (the node facts' index); None: the node's figure

    @property
    def name(self) -> str:
        """check.metric, and the GPU of a per-GPU figure: ``gemm.fp64_tflops_min[gpu 1]``."""
        return f"{self.check}.{self.metric}" + ("" if self.gpu is None else f"[gpu {self.gpu}]")

    @property
    def units(self) -> float:
        """How far off, in tolerances (1.0 = at the edge); infinite for a missing value or a load error."""
        if self.off is None or not self.tolerance:
            return math.inf
        return self.off / self.tolerance

    @property
    def outside(self) -> bool:
        """The judge failed this metric (its row status), not a bound computed here."""
        return self.failed

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
            files = sorted(path.rglob(VERDICT_FILE))
        else:
            raise ValueError(f"{path}: no such file or directory")
        if not files:
            raise ValueError(f"{path}: no {VERDICT_FILE} under it (run 'gpuaccept summarize' on its run directories)")
        for f in files:
            doc = textinput.load_json(f, "the verdict", ValueError)
            if doc.get("schema") != SCHEMA:
                raise ValueError(f"{f}: not a gpuaccept verdict (schema {SCHEMA!r} expected)")
            found.append((f, doc))
    if every_run:
        return sorted(found, key=lambda fd: (fd[1].get("started_unix") or 0, str(fd[0])))
    newest: dict[tuple[str, str], tuple[Path, dict[str, Any]]] = {}
    for f, doc in sorted(found, key=lambda fd: (fd[1].get("started_unix") or 0, str(fd[0]))):
        newest[(doc.get("node", "?"), doc.get("node_type", "?"))] = (f, doc)
    return list(newest.values())


def _rejudged_rows(run: Path, doc: dict[str, Any], reference_dir: str | Path | None) -> list[dict[str, Any]]:
    """The rows of a run judged now against ``reference_dir``, or its recorded rows (no ``reference_dir``, or
    its documents are not there: a verdict.json fetched alone)."""
    recorded = [r for r in doc.get("rows", []) if isinstance(r, dict)]
    if reference_dir is None:
        return recorded
    try:
        load_node_type(reference_dir, str(doc.get("node_type")))
    except ReferenceError as err:
        return [{"check": "references", "metric": None, "status": "fail", "reason": str(err)}]
    if not (run / REPORT_FILE).exists():
        return recorded
    facts_file = run / FACTS_FILE
    facts, problems = (load.read_facts(facts_file, within=run) if facts_file.exists()
                       else (doc.get("facts") or {}, []))  # fmt: skip
    try:
        report, report_error = load.load_report(run / REPORT_FILE, within=load.roots(run)), None
    except load.ReportError as err:
        report, report_error = None, str(err)
    # Judged as gpuaccept summarize judges it: its manifest checked, its retries merged.
    v = summarize.judge_run(run, report, facts, reference_dir, str(doc.get("node_type")), str(doc.get("suite")),
                            report_error=report_error, input_errors=problems)  # fmt: skip
    return [asdict(r) for r in v.rows]


def deviations(
    verdicts: list[tuple[Path, dict[str, Any]]], reference_dir: str | Path | None = None
) -> list[Deviation]:
    """Every judged metric of every run, worst first; a run whose node type has no references is one row."""
    out: list[Deviation] = []
    for path, doc in verdicts:
        node, type_name, run = doc.get("node", "?"), doc.get("node_type", "?"), str(path.parent)
        base = {"node": node, "node_type": type_name, "run": run, "started_unix": doc.get("started_unix")}
        rows = _rejudged_rows(path.parent, doc, reference_dir)
        worst: dict[tuple[str, str, int | None], Deviation] = {}
        for r in rows:
            if r.get("check") == "references" and r.get("status") == "fail":
                out.append(Deviation(**base, check="references", metric="-", value=None, unit="", reference=None,
                                     off=None, tolerance=None, reason=str(r.get("reason"))))  # fmt: skip
                continue
            if not r.get("metric") and r.get("status") in ("fail", "not_run") and r.get("expected", True):
                if r.get("check") != "references" and not any(
                    m.get("check") == r.get("check") and m.get("metric") and m.get("status") == "fail" for m in rows
                ):  # a check that failed or did not run with no failed metric to show for it
                    why = f"{r.get('status')}: {r.get('reason') or 'no reason given'}"
                    out.append(Deviation(**base, check=str(r.get("check")), metric="-", value=None, unit="",
                                         reference=None, off=None, tolerance=None, reason=why))  # fmt: skip
                continue
            if not r.get("metric") or r.get("status") not in ("pass", "fail") or r.get("check") == "node":
                continue
            d = _deviation(base, r)
            key = (d.check, d.metric, d.gpu)
            # A run that repeated the check (--repeat) counts with its worst repetition.
            if key not in worst or (d.outside, d.units) > (worst[key].outside, worst[key].units):
                worst[key] = d
        out.extend(worst.values())
    out.sort(key=lambda d: (not d.outside, -d.units, -(d.off or 0.0), d.node, d.check, d.metric, d.gpu or 0))
    return out


def _deviation(base: dict[str, Any], row: dict[str, Any]) -> Deviation:
    """How far a judged row is from its reference, from the reference and bounds the judge put on the row; a
    failed row without a value says why."""
    value, ref, unit = row.get("value"), row.get("reference"), row.get("unit") or ""
    failed = row.get("status") == "fail"
    base = {**base, "gpu": row.get("gpu")}
    if value is None or not ref:
        reason = f"no value ({row.get('reason') or 'no reason given'})" if failed else ""
        return Deviation(**base, check=row["check"], metric=row["metric"], value=value, unit=unit, reference=ref,
                         off=None, tolerance=None, reason=reason, failed=failed)  # fmt: skip
    sides = []
    if row.get("lower_bound") is not None:
        sides.append(((ref - value) / ref, 1 - row["lower_bound"] / ref))
    if row.get("upper_bound") is not None:
        sides.append(((value - ref) / ref, row["upper_bound"] / ref - 1))
    if not sides:
        return Deviation(**base, check=row["check"], metric=row["metric"], value=value, unit=unit, reference=ref,
                         off=None, tolerance=None, reason=row.get("reason") or "", failed=failed)  # fmt: skip
    off, tol = max(sides, key=lambda s: s[0] / s[1] if s[1] else math.inf)
    reason = row.get("reason") or "" if failed else ""
    return Deviation(**base, check=row["check"], metric=row["metric"], value=value, unit=unit, reference=ref, off=off,
                     tolerance=tol, reason=reason, failed=failed)  # fmt: skip


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
        rows.append((d.node, d.node_type, d.name, value, ref, off, units, mark))
    text = tabulate.tabulate(rows, headers=head, tablefmt="plain", disable_numparse=True)
    return "\n".join(line.rstrip() for line in text.splitlines())
