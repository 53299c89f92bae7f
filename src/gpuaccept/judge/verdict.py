"""The node's verdict: the benchmark documents (found through ReFrame's report, which only says what ran), the
node facts and the node type's references, turned into one row per check and metric (pass, fail, not run,
waived, or informational) and a verdict for the node (docs/judge.md).

This is the judge's third stage: ``judge`` reads what the load stage read (gpuaccept.judge.load) and what the
validate stage found in it (gpuaccept.judge.validate), and touches no file; ``build`` is the three in a row.

A check that did not run is 'not_run' with the reason, never 'pass'; a node passes only when every check its
node type has references for passed, and the GPU count matches what the inventory and the node type say.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tabulate

from gpuaccept import __version__, metric_table
from gpuaccept.checks import CHECKS, SUITES, in_suite
from gpuaccept.judge import completeness, deviation, load, pergpu, retry, validate
from gpuaccept.judge import coverage as sections

# ReFrame's report is read by the load stage; its reader is still found here, where its callers look for it.
from gpuaccept.judge.load import ReportError as ReportError  # noqa: PLC0414
from gpuaccept.judge.load import load_report as load_report  # noqa: PLC0414
from gpuaccept.judge.row import Row as Row  # noqa: PLC0414
from gpuaccept.judge.rules.finding import Finding
from gpuaccept.judge.status import FAIL, INFO, NOT_RUN, PASS, WAIVED
from gpuaccept.judge.status import Status as Status  # noqa: PLC0414
from gpuaccept.judge.validate import Findings
from gpuaccept.references import NodeType, bounds, wrong_gpus

SCHEMA = "gpuaccept.verdict/1"


@dataclass
class Verdict:
    node: str
    node_type: str
    suite: str
    accepted: bool
    rows: list[Row]
    started_unix: float | None = None
    finished_unix: float | None = None
    reframe_version: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    run_dir: str = ""

    @property
    def duration_s(self) -> float | None:
        if self.started_unix is None or self.finished_unix is None:
            return None
        return self.finished_unix - self.started_unix

    def failed_checks(self) -> list[str]:
        return sorted({r.check for r in self.rows if r.status in (FAIL, NOT_RUN) and r.expected})

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "gpuaccept_version": __version__,
            "node": self.node,
            "node_type": self.node_type,
            "suite": self.suite,
            "verdict": PASS if self.accepted else FAIL,
            "failed_checks": self.failed_checks(),
            "started_unix": self.started_unix,
            "finished_unix": self.finished_unix,
            "duration_s": self.duration_s,
            "reframe_version": self.reframe_version,
            "run_dir": self.run_dir,
            "facts": self.facts,
            # The checks of the suite, each of which has a row: a reader refuses a verdict that lacks one
            # (gpuaccept.judge.readback.incomplete).
            "suite_checks": [c.key for c in in_suite(self.suite)] if self.suite in SUITES else [],
            "rows": [r.to_json() for r in self.rows],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Verdict:
        """A recorded verdict, ACCEPTED or not by its rows (``decide``, the judge's rule), never by its ``verdict``
        field: gpuaccept.judge.readback says where the two disagree."""
        if not isinstance(doc, dict):
            raise ValueError(f"not a gpuaccept verdict (a JSON {type(doc).__name__}, expected an object)")
        if doc.get("schema") != SCHEMA:
            raise ValueError(f"not a gpuaccept verdict (schema {doc.get('schema')!r}, expected {SCHEMA!r})")
        try:
            return cls._from_json(doc)
        except (KeyError, TypeError) as err:
            raise ValueError(f"not a complete gpuaccept verdict ({type(err).__name__}: {err})") from None

    @classmethod
    def _from_json(cls, doc: dict[str, Any]) -> Verdict:
        rows = [Row(**r) for r in doc["rows"]]
        return cls(
            node=doc["node"],
            node_type=doc["node_type"],
            suite=doc["suite"],
            accepted=bool(doc["node_type"]) and decide(rows) and not incomplete(doc, rows),
            rows=rows,
            started_unix=doc.get("started_unix"),
            finished_unix=doc.get("finished_unix"),
            reframe_version=doc.get("reframe_version"),
            facts=doc.get("facts") or {},
            run_dir=doc.get("run_dir", ""),
        )


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _owner(check: str, metric: str) -> str:
    try:
        return metric_table.owner(check, metric)
    except metric_table.UnknownMetric:
        return ""


def _gated(check: str, metric: str) -> bool:
    """A metric the checks declare reported is shown without a reference; any other (gated, or unknown) fails."""
    try:
        return metric_table.gated(check, metric)
    except metric_table.UnknownMetric:
        return True


# gpuaccept sensitivity's hook: (check, metric, value) -> the value to judge instead.
Adjust = Callable[[str, str, float], float]


def _adjusted(check: str, name: str, metric: Any, adjust: Adjust) -> Any:
    value = _num(metric.get("value")) if isinstance(metric, dict) else None
    return metric if value is None else {**metric, "value": adjust(check, name, value)}


# Judged metrics that a tool may still waive without failing the node: (check, metric) -> why. The row is shown,
# not counted. Which kernels MKL runs on a CPU it maps to no code branch of its own (MKL_CBWR_AUTO: AMD CPUs)
# cannot be told, and a BLAS that does not say is no fault of the node; dgemm_peak_fraction still shows its rate.
WAIVABLE: dict[tuple[str, str], str] = {
    ("cpu_gemm", "blas_optimized_core"): "the BLAS does not say which kernels it runs: not judged on this CPU "
    "(the host GEMM's rates and peak fractions are still reported)",
}


def _metric_row(
    key: str, metric: str, m: Any, ref: Any, node_type: NodeType | None, why_no_refs: str
) -> Row:
    """One figure of a metric against its reference (``ref`` None: none), judged by MetricReference.assess."""
    value = _num(m.get("value")) if isinstance(m, dict) else None
    unit = str((m.get("unit") if isinstance(m, dict) else "") or "")
    owner = _owner(key, metric)
    if ref is None:
        missing = node_type.missing_reason(key, metric) if node_type else None
        if node_type is None:
            return Row(key, metric, INFO, value, unit, reason=f"not judged: {why_no_refs}", owner=owner)
        if missing:  # a node-level figure of a known GPU SKU at a GPU count with no node type file
            return Row(key, metric, NOT_RUN, value, unit, reason=missing, owner=owner)
        if not _gated(key, metric):
            return Row(key, metric, INFO, value, unit, owner=owner,
                       reason=f"reported: node type {node_type.name} has no reference for it (a reported "
                       "figure: shown, never failed for want of one)")  # fmt: skip
        return Row(key, metric, FAIL, value, unit, reason="no reference value for this metric", owner=owner)
    if ref.needs_link:  # NVML reported no PCIe link: the gate cannot be placed
        return Row(key, metric, NOT_RUN, value, unit, reason=ref.band, owner=owner, band=ref.band)
    status, reason, _bounds = ref.assess(value)
    if status != INFO and unit != ref.unit:
        status, reason = FAIL, f"measured in {unit!r}, the reference is in {ref.unit!r}"
    row = Row(key, metric, status, value, unit, ref.value, reason=reason, owner=ref.owner, band=ref.band)
    if ref.judged:
        row.lower_bound, row.upper_bound = ref.lower_bound, ref.upper_bound
    return row


def _metric_rows(
    key: str,
    metrics: dict[str, Any],
    waived: dict[str, str],
    node_type: NodeType | None,
    why_no_refs: str,
    per_gpu: pergpu.Figures | None = None,
) -> list[Row]:
    """One row per metric the document reports, waives or the node type references, each judged by
    MetricReference.assess; a per-GPU metric with each GPU's figure (``per_gpu``) has one row per GPU instead."""
    rows = []
    refs = node_type.checks.get(key, {}) if node_type else {}
    per_gpu = per_gpu or pergpu.Figures()
    for metric, m in metrics.items():
        ref = refs.get(metric)
        figures = per_gpu.by_metric.get(metric)
        if not figures:
            rows.append(_metric_row(key, metric, m, ref, node_type, why_no_refs))
            continue
        for gpu, figure in figures:
            row = _metric_row(key, metric, figure, ref, node_type, why_no_refs)
            row.gpu = gpu.index
            if row.status in (FAIL, NOT_RUN):
                row.reason = f"{gpu.label}: {row.reason}"
            rows.append(row)
        for gpu in per_gpu.missing.get(metric, []):
            judged = node_type is not None and (ref.judged if ref is not None else _gated(key, metric))
            rows.append(Row(key, metric, FAIL if judged else INFO, unit=ref.unit if ref else str(m.get("unit") or ""),
                            reference=ref.value if ref else None, owner=ref.owner if ref else _owner(key, metric),
                            reason=f"{gpu.label}: not measured: the document has no figure of this GPU",
                            gpu=gpu.index))  # fmt: skip
    for metric, why in waived.items():
        if metric in metrics:
            continue
        ref = refs.get(metric)
        owner = _owner(key, metric)
        if ref is None or not ref.judged:
            rows.append(Row(key, metric, WAIVED, unit=ref.unit if ref else "", reason=f"waived on this node: {why}",
                            owner=owner))  # fmt: skip
        elif (key, metric) in WAIVABLE:
            rows.append(Row(key, metric, WAIVED, unit=ref.unit, reference=ref.value, owner=owner,
                            reason=f"waived on this node: {why}; {WAIVABLE[key, metric]}"))  # fmt: skip
        else:
            reason = f"waived on this node: {why} (but node type {node_type.name} expects a value)"  # type: ignore[union-attr]
            rows.append(Row(key, metric, FAIL, unit=ref.unit, reference=ref.value, reason=reason, owner=owner))
    for metric, ref in refs.items():
        if metric not in metrics and metric not in waived:
            rows.append(
                Row(
                    key,
                    metric,
                    FAIL if ref.judged else INFO,
                    unit=ref.unit,
                    reference=ref.value,
                    reason="not measured: the check did not report this metric",
                    owner=ref.owner,
                )
            )
    return rows


def _not_run_reason(key: str, facts: dict[str, Any]) -> str:
    if CHECKS[key].needs_gpu and not facts.get("gpus"):
        return facts.get("gpu_error") or "no NVIDIA GPU found"
    return "ReFrame did not run this check (not selected, or filtered out: see reframe.log in the run directory)"


def _judge_case(
    key: str,
    found: Findings,
    node_type: NodeType | None,
    why_no_refs: str,
    limits: bounds.Limits,
    adjust: Adjust | None,
) -> tuple[Row, list[Row]]:
    """One test case of a check: its row and its metric rows, from what validation found in it."""
    if found.not_run:
        return Row(key, None, NOT_RUN, reason=found.not_run), []
    if found.failed:
        return Row(key, None, FAIL, reason=found.failed), []
    problems, metrics, not_run = [p.text() for p in found.problems], found.metrics, found.cannot_look
    per_gpu = found.per_gpu
    if adjust is not None:  # gpuaccept sensitivity: the same documents with figures made worse, in memory only
        metrics = {name: _adjusted(key, name, m, adjust) for name, m in metrics.items()}
        per_gpu = dataclasses.replace(per_gpu, by_metric={
            name: [(g, _adjusted(key, name, m, adjust)) for g, m in figures]
            for name, figures in per_gpu.by_metric.items()
        })  # fmt: skip
    rows = _metric_rows(key, metrics, found.waived, node_type, why_no_refs, per_gpu)
    # A figure out of its physical bounds (above the datasheet or the link, zero or negative) is a broken or forged
    # measurement: it fails the check whatever its reference says (gpuaccept.references.bounds). Each GPU's own figure
    # is held to the same bounds as the aggregate.
    impossible = bounds.problems(key, metrics, limits)
    problems += list(impossible.values())
    findings = [*found.problems, *(Finding("bounds", why, key=name) for name, why in impossible.items())]
    gpus = per_gpu.gpus()
    for r in rows:
        if r.gpu is None and r.metric in impossible:
            r.status, r.reason = FAIL, impossible[r.metric]
        elif r.gpu is not None and r.metric and (why := bounds.problem(key, r.metric, r.value, limits)):
            r.status, r.reason = FAIL, f"{gpus[r.gpu].label}: {why}"
            problems.append(r.reason)
            findings.append(Finding("bounds", r.reason, gpu=r.gpu, key=r.metric))
    failed_metrics = [_named(r, gpus) for r in rows if r.status == FAIL]
    if problems:
        row = Row(key, None, FAIL, reason="; ".join(problems), findings=[f.summary() for f in findings])
    elif not_run:
        row = Row(key, None, NOT_RUN, reason=not_run)
    elif node_type is None:
        row = Row(key, None, NOT_RUN, reason=f"ran, not judged: {why_no_refs}")
    elif failed_metrics:
        row = Row(key, None, FAIL, reason="a metric failed its reference: " + ", ".join(map(str, failed_metrics)))
        # Figures outside their bands alone (each with a value: not a missing metric or unit), each a performance
        # figure (a count, a residual is a fault: judge/retry.py): worth measuring again.
        row.out_of_band = all(
            r.value is not None and (r.lower_bound is not None or r.upper_bound is not None)
            and retry.retryable(key, r.metric)
            for r in rows if r.status == FAIL
        )
    else:
        row = Row(key, None, PASS)
    if not_run and problems:
        row.reason += f"; and {not_run}"
    return row, rows


def _unjudged(metric_rows: list[Row], node_type_name: str, check: str) -> None:
    """A check's metric rows shown, not judged: its node type has no references for it."""
    for m in metric_rows:
        m.expected = False
        if m.status in (PASS, FAIL):
            m.status = INFO
            m.reason = f"not judged: node type {node_type_name} has no references for {check}"


def _named(row: Row, gpus: dict[int, pergpu.Gpu]) -> str:
    """A metric row as a check's reason names it: the metric, and the GPU of a per-GPU figure."""
    if row.gpu is None:
        return str(row.metric)
    gpu = gpus.get(row.gpu)
    return f"{row.metric} on {gpu.label if gpu else f'GPU {row.gpu}'}"


def build(
    report: dict[str, Any] | None,
    facts: dict[str, Any],
    reference_dir: str | Path,
    node_type_name: str,
    suite: str,
    expected_gpus: int | None = None,
    report_error: str | None = None,
    run_dir: str | Path | None = None,
    input_errors: list[str] | None = None,
    adjust: Adjust | None = None,
) -> Verdict:
    """Judge one run: the benchmark documents (found through ReFrame's report under ``run_dir``), the node type's
    references and the node facts, loaded (gpuaccept.judge.load), validated (gpuaccept.judge.validate) and judged
    (:func:`judge`). ``report`` None means ReFrame left no report (``report_error`` says why); ``input_errors``
    are problems with the run's other inputs (the facts file), each a failed row."""
    given = load.Run(report, facts, node_type_name, suite, expected_gpus, report_error, list(input_errors or []))
    run = load.load_run(given, reference_dir, run_dir)
    return judge(run, validate.validate(run), adjust)


def _node_rows(run: load.Run) -> list[Row]:
    """The node's own rows: the GPU count the inventory and the node type promise, the GPUs' model, and (rows only
    where they fail) each GPU of the facts one GPU and the GPUs of the node in one configuration
    (gpuaccept.judge.completeness)."""
    facts, node_type, node_type_name = run.facts, run.node_type, run.node_type_name
    rows: list[Row] = []
    # The node itself: the GPUs the inventory and the node type promise are there.
    seen_gpus = len(facts.get("gpus") or [])
    for claim, source in (
        (run.expected_gpus, "the inventory"),
        (node_type.match["gpu_count"] if node_type else None, f"node type {node_type_name}"),
    ):
        if claim is None:
            continue
        ok = seen_gpus == claim
        reason = (
            ""
            if ok
            else (
                f"{source} says {claim} GPUs, {facts.get('gpu_source') or 'NVML/nvidia-smi'} "
                f"sees {seen_gpus} on {facts.get('hostname')}"
                + (f": {facts['gpu_error']}" if facts.get("gpu_error") else "")
                + "; check nvidia-smi, the seating and power of missing GPUs, or the inventory"
            )
        )
        count = float(claim)
        rows.append(Row("node", "gpu_count", PASS if ok else FAIL, float(seen_gpus), "", count, count, count, reason))
    # The GPUs are the model the node type names (its PCI device id and name), whatever their figures.
    if node_type is not None and node_type.gpu_count > 0 and seen_gpus:
        wrong = wrong_gpus(node_type, facts)
        rows.append(Row("node", "gpu_model", FAIL if wrong else PASS, reason=wrong))
    # Each GPU of the facts one GPU (no identity twice), and the GPUs of the node in one configuration
    # (gpuaccept.judge.completeness): rows only where they fail.
    for metric, found in (("gpu_identity", completeness.facts_problems(facts)),
                          ("gpu_agreement", completeness.disagreement(facts))):
        if found:
            rows.append(Row("node", metric, FAIL, reason="; ".join(found)))
    return rows


def judge(run: load.Run, findings: list[Findings], adjust: Adjust | None = None) -> Verdict:
    """The verdict of one loaded run (gpuaccept.judge.load) from the findings of its test cases
    (gpuaccept.judge.validate, one per ``run.cases``): a pure function, no file read or written."""
    facts, node_type, node_type_name, suite = run.facts, run.node_type, run.node_type_name, run.suite
    report_error = run.report_error
    rows: list[Row] = [Row("inputs", None, FAIL, reason=e) for e in run.input_errors]
    why_no_refs = ""
    if node_type is None:
        why_no_refs = f"no reference file for this node: {run.reference_error}"
        rows.append(Row("references", None, FAIL, reason=why_no_refs + BASELINE_HINT))
    if run.baseline_error:
        rows.append(Row("references", "node_baseline", FAIL, reason=run.baseline_error))
    if run.limits_error:
        rows.append(Row("references", "datasheet", FAIL, reason=f"cannot bound the figures: {run.limits_error}"))
    if node_type is not None and node_type.node_layer_missing:
        # A known GPU SKU with no node type file for this GPU count: per-GPU verdicts only; not accepted.
        rows.append(Row("references", "node_layer", NOT_RUN, reason=node_type.node_layer_missing))

    rows += _node_rows(run)
    if run.limits.unknown:  # no datasheet bounds the figures: they alone cannot accept the node
        rows.append(Row("references", "datasheet", NOT_RUN, reason=CANNOT_JUDGE + run.limits.unknown))

    session = (run.report or {}).get("session_info", {})
    missing = sections.missing_sections(node_type, suite) if node_type is not None else []
    for check in in_suite(suite):
        expected = node_type is None or check.key in node_type.checks
        mine = [found for case, found in zip(run.cases, findings, strict=True) if case.check == check.key]
        if not mine:
            reason = report_error or _not_run_reason(check.key, facts)
            if node_type is None:
                reason += f"; {why_no_refs}"
            elif not expected:
                reason += f" (not expected for node type {node_type_name})"
            elif check.optional:
                reason += f" ({OPTIONAL_NOT_RUN})"
                expected = False
            rows.append(Row(check.key, None, NOT_RUN, reason=reason, expected=expected))
            continue
        for found in mine:
            row, metric_rows = _judge_case(check.key, found, node_type, why_no_refs, run.limits, adjust)
            if row.status == NOT_RUN and expected and check.optional and not metric_rows:
                # An optional backend the site has not installed (HPL-CUDA without HPL's source, xhpl, NAMD): it could
                # not run, so it rejects nothing; once it runs, it is judged like any other check.
                row.reason += f" ({OPTIONAL_NOT_RUN})"
                row.expected = False
            elif not expected and (found.problems or found.failed) and check.key in missing:
                # A check the suite expects that ran, on a node type whose file lacks its section (which `gpuaccept
                # run` and `summarize` refuse): what its rules found fails it all the same; its figures are shown.
                row.reason += (f" (node type {node_type_name} has no section for {check.key}: judged by its rules "
                               "alone)")  # fmt: skip
                _unjudged(metric_rows, node_type_name, check.key)
            elif not expected:
                # Skipped, or run all the same (a run made before the checks skipped themselves), on a node type
                # that has no references for it: reported, not judged, and it does not count.
                row.reason = f"{row.reason} (not expected for node type {node_type_name})".lstrip()
                row.expected = False
                _unjudged(metric_rows, node_type_name, check.key)
            rows.append(row)
            rows.extend(metric_rows)

    rows.extend(_cpu_gpu_ratios(rows))
    accepted = node_type is not None and decide(rows)
    if not accepted and not any(r.status in (FAIL, NOT_RUN) and r.expected for r in rows):
        # A rejected node always names a check and why: here no check of the suite was expected or ran.
        why = report_error or "ReFrame selected none: see reframe.log in the run directory"
        rows.append(Row("suite", None, NOT_RUN, reason=f"no check of the {suite} suite ran and passed ({why})"))
    return Verdict(
        node=facts.get("hostname") or session.get("hostname") or "unknown",
        node_type=node_type_name,
        suite=suite,
        accepted=accepted,
        rows=rows,
        started_unix=_num(session.get("time_start_unix")),
        finished_unix=_num(session.get("time_end_unix")),
        reframe_version=session.get("version") if isinstance(session.get("version"), str) else None,
        facts=facts,
    )


OPTIONAL_NOT_RUN = "an optional check: judged when it runs, and its absence rejects nothing"


#: How a row that keeps a node from being judged at all begins (gpuaccept run exits 3 when it is all that stops it).
CANNOT_JUDGE = "cannot judge: "


def cannot_judge(v: Verdict) -> str:
    """Why a node that was not accepted cannot be judged (its reason), or "": rows saying ``CANNOT_JUDGE`` (no
    datasheet bounds its GPU model's figures) and nothing else that rejects it. A node with any failed check is
    rejected, not unjudgeable."""
    blocking = [r for r in v.rows if r.expected and r.status in (FAIL, NOT_RUN)]
    said = [r for r in blocking if r.reason.startswith(CANNOT_JUDGE)]
    return said[0].reason if said and len(said) == len(blocking) and not v.accepted else ""


EXPECTED, WHERE_INSTALLED, UNREFERENCED = "expected", "judged where installed", "no references"


def expectation(check: Any, node_type: NodeType) -> str:
    """What a node type asks of a check: ``expected`` (it must run and pass), ``judged where installed`` (an
    optional backend: judged when it runs, its absence rejects nothing) or ``no references`` (not run: the
    ReFrame check skips itself, and a run of it is shown unjudged)."""
    if check.key not in node_type.checks:
        return UNREFERENCED
    return WHERE_INSTALLED if check.optional else EXPECTED


def coverage(node_type: NodeType) -> dict[str, dict[str, list[str]]]:
    """Per suite of one node (every suite but multinode), the checks in each expectation (``gpuaccept
    references`` prints it): a node type expects exactly the checks it has references for."""
    out: dict[str, dict[str, list[str]]] = {}
    for suite in SUITES:
        if suite == "multinode":
            continue
        kinds: dict[str, list[str]] = {EXPECTED: [], WHERE_INSTALLED: [], UNREFERENCED: []}
        for check in in_suite(suite):
            kinds[expectation(check, node_type)].append(check.key)
        out[suite] = kinds
    return out


def incomplete(doc: dict[str, Any], rows: list[Row]) -> str:
    """Why a recorded verdict cannot be read as whole ("" when it can): it lists the checks of its suite
    (``suite_checks``, which every verdict since has) and a check of that list or of the suite as gpuaccept knows it
    has no row, or a check the node type must have a section for (coverage.SECTIONED_SUITES) is marked not
    expected while it failed. A verdict written before the list existed cannot be told whole: readers say so
    (docs/verdicts.md)."""
    listed = doc.get("suite_checks")
    if listed is None:
        return ""
    if not isinstance(listed, list):
        return f"its 'suite_checks' is {type(listed).__name__}, not a list: refused as incomplete"
    suite = doc.get("suite")
    known = [c.key for c in in_suite(suite)] if suite in SUITES else []
    have = {r.check for r in rows if r.metric is None}
    missing = [c for c in dict.fromkeys([*map(str, listed), *known]) if c not in have]
    if missing:
        return f"no row for {', '.join(missing)}, which its suite runs: refused as incomplete (rows deleted?)"
    if suite in sections.SECTIONED_SUITES:
        hidden = sorted({r.check for r in rows if r.metric is None and not r.expected and r.status == FAIL
                         and r.check in CHECKS and not CHECKS[r.check].optional})  # fmt: skip
        if hidden:
            return (f"{', '.join(hidden)} failed and is marked not expected, which no node type of its suite may "
                    "say: refused as incomplete (edited?)")  # fmt: skip
    return ""


def decide(rows: list[Row]) -> bool:
    """Whether the rows accept a node whose references loaded: at least one check ran and passed, and every
    expected check and metric passed (informational and waived rows do not count)."""
    judged = [r for r in rows if r.expected and r.status not in (INFO, WAIVED)]
    ran = any(r.metric is None and r.status == PASS for r in judged)
    return ran and all(r.status == PASS for r in judged)


def out_of_band_checks(v: Verdict) -> list[str]:
    """The checks that failed on figures outside their bands alone: the ones measured again before the node is
    rejected (gpuaccept run --retries)."""
    return sorted({r.check for r in v.rows if r.metric is None and r.status == FAIL and r.out_of_band and r.expected})


def merge_retry(first: Verdict, retry: Verdict, checks: list[str], attempt: int, source: str = "") -> Verdict:
    """``first`` with the rows of ``checks`` taken from ``retry`` (attempt number ``attempt``, its list of checks
    in ``source``): the last measurement is judged, and a check that passes only now carries a warning naming what
    the earlier attempts measured, so a flaky node stays visible (in the table and as gpuaccept_check_attempts in
    Prometheus). Only a check whose earlier attempt failed out of band is replaced, and only by an attempt that
    ran it: a fault is never measured again (judge/retry.py), and a retry that did not run the check leaves the
    earlier attempt standing, with the reason."""
    keep = [r for r in first.rows if r.check not in checks]
    earlier = {c: [r for r in first.rows if r.check == c] for c in checks}
    rows = list(keep)
    for c in checks:
        new = [r for r in retry.rows if r.check == c]
        stands = _earlier_stands(earlier[c], new, attempt, source or f"attempt {attempt}")
        if stands is not None:
            rows.extend(stands)
            continue
        was = [r for r in earlier[c] if r.metric and r.status == FAIL]
        said = "; ".join(f"{_shown(r)} {_fmt(r.value, r.unit)} ({r.reason})" for r in was)
        prior = next((r.warning for r in earlier[c] if r.metric is None and r.warning), "")
        for r in new:
            r.attempts = attempt
            if r.metric is None and r.status == PASS:
                r.warning = f"passed on attempt {attempt}; earlier: " + "; ".join(x for x in (prior, said) if x)
            elif r.metric is None and said:
                r.reason += f" (attempt {attempt}; earlier: {said})"
        rows.extend(new)
    order = {key: i for i, key in enumerate(dict.fromkeys(r.check for r in first.rows))}
    rows.sort(key=lambda r: order.get(r.check, len(order)))  # stable: each check's rows stay in order
    accepted = bool(first.node_type) and not any(r.check == "references" and r.status == FAIL for r in rows)
    return dataclasses.replace(first, rows=rows, accepted=accepted and decide(rows))


def _is_fault(r: Row) -> bool:
    """A check row that failed on anything but figures outside their bands, or did not run although expected."""
    return r.metric is None and r.expected and (r.status == NOT_RUN or (r.status == FAIL and not r.out_of_band))


def _earlier_stands(earlier: list[Row], new: list[Row], attempt: int, source: str) -> list[Row] | None:
    """The earlier attempt's rows of a check, with why a retry does not replace them; None when it does: the
    earlier attempt failed out of band alone and the retry ran the check, or the retry found a fault (a fault in
    any attempt counts)."""
    checks = [r for r in earlier if r.metric is None]
    faults = [r for r in checks if _is_fault(r)]
    ran = [r for r in new if r.metric is None and r.status in (PASS, FAIL)]
    if not faults and any(_is_fault(r) for r in ran):
        return None
    if not checks or (not any(r.status == FAIL for r in checks) and not faults):
        return list(earlier)  # it passed (judged against other references than the run was): nothing to replace
    if not faults and ran:
        return None
    if faults:
        why = f" ({source} measures it again, but a fault is never measured again: that attempt is not judged)"
    else:
        said = next((r.reason for r in new if r.metric is None and r.reason), "not in its report")
        why = f" (attempt {attempt} did not run it: {said})"
    out = [dataclasses.replace(r) for r in earlier]
    for r in out:
        if r.metric is None and r.status != PASS:
            r.reason += why
    return out


BASELINE_HINT = (
    "; to make one: run the suite on a known-good node of this type 5 times, then "
    "`gpuaccept baseline --node-type NAME --description ... --machine ... --evidence ... --source-id ... "
    "--facts results/<node>/<run>/node-facts.json --output proposal.yaml results/<node>/*` and review "
    "proposal.yaml into reference_values/NAME.yaml (docs/reference-values.md)"
)


# Rows the judge derives from other rows (reported, never judged): not metrics of any document.
DERIVED_METRICS = ("cpu_gpu_dgemm_ratio", "cpu_gpu_sgemm_ratio", "gpu_cpu_hpl_ratio")


def _cpu_gpu_ratios(rows: list[Row]) -> list[Row]:
    """The host's GEMM rate (all cores) over the slowest GPU's, as Kozin and Cable (2010) compare CPU and GPU:
    reported, not judged."""
    values: dict[tuple[str, str | None], float] = {}
    for r in rows:
        if r.metric and r.value is not None:
            key = (r.check, r.metric)
            # A per-GPU figure: the slowest GPU's, as the aggregate over the GPUs says it.
            values[key] = r.value if r.gpu is None or key not in values else min(values[key], r.value)
    out = []
    for cpu, gpu, name in (("dgemm_gflops", "fp64_tflops_min", "cpu_gpu_dgemm_ratio"),
                           ("sgemm_gflops", "fp32_tflops_min", "cpu_gpu_sgemm_ratio")):
        c, g = values.get(("cpu_gemm", cpu)), values.get(("gemm", gpu))
        if c and g:
            out.append(Row("cpu_gemm", name, INFO, c / (g * 1000.0), "ratio",
                           reason=f"informational: host {cpu} (all cores) / GPU {gpu}"))
    # HPL: the GPUs' HPL-style node rate over the host's HPL (Kozin and Cable (2010)'s GPU/CPU ratio), where both ran.
    host, gpus = values.get(("hpl_host", "gflops")), values.get(("hplstyle", "tflops_sum"))
    if host and gpus:
        out.append(Row("hpl_host", "gpu_cpu_hpl_ratio", INFO, gpus * 1000.0 / host, "ratio",
                       reason="informational: hplstyle tflops_sum (all GPUs) / hpl_host gflops (host)"))
    return out


def _shown(row: Row) -> str:
    """A metric row's name as a sentence shows it: with its GPU for a per-GPU figure ("fp64_tflops_min of GPU 1")."""
    return str(row.metric) if row.gpu is None else f"{row.metric} of GPU {row.gpu}"


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"
    return f"{text} {unit}".strip()


#: The widest a verdict table and its notes are printed: a 120-column terminal.
WIDTH = 120
_CELL = 28  # the widest a check or metric cell is (longer names are cut with "~")


def _cell(text: str, width: int = _CELL) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"


def table(verdict: Verdict, width: int = WIDTH) -> str:
    """The verdict as plain text for a terminal ``width`` columns wide: one row per check and metric (check,
    metric, value, reference, tolerance, verdict, note), each reason once below the table under its note number
    (rows that share a reason share its number; a passed row needs none), the warnings, and the headline. The
    whole reasons, bounds and documents are in verdict.json and the report."""
    # The deviation rules' figure rows (siblings, fleet, own baseline) go to a short section of their own.
    notes: dict[str, int] = {}
    body = []
    # A verdict with per-GPU rows has a gpu column (the node facts' index; the notes name bus id and serial).
    per_gpu = any(r.gpu is not None for r in verdict.rows)
    for r in (r for r in verdict.rows if not deviation.is_figure_row(r)):
        note = ""
        if r.reason and r.status != PASS:
            note = f"[{notes.setdefault(r.reason, len(notes) + 1)}]"
        gpu = ("-" if r.gpu is None else str(r.gpu),) if per_gpu else ()
        body.append((_cell(r.check), _cell(r.metric or "-"), *gpu, _fmt(r.value, r.unit), _fmt(r.reference, r.unit),
                     r.tolerance or "-", r.status.upper().replace("_", " "), note))  # fmt: skip
    head = ("check", "metric", *(("gpu",) if per_gpu else ()), "value", "reference", "tolerance", "verdict", "note")
    text = tabulate.tabulate(body, headers=head, tablefmt="simple", disable_numparse=True)
    lines = [line.rstrip() for line in text.splitlines()]
    if deviations := deviation.section(verdict.rows):
        lines += ["", *deviations]
    if notes:
        lines.append("")
        for reason, n in notes.items():
            lines += textwrap.wrap(" ".join(reason.split()), width, initial_indent=f"[{n}] ",
                                   subsequent_indent=" " * (len(str(n)) + 3), break_on_hyphens=False,
                                   break_long_words=True)  # fmt: skip
    warned = [f"warning: {r.check} {r.warning}" for r in verdict.rows if r.metric is None and r.warning]
    if warned:
        lines.append("")
        for w in warned:
            lines += textwrap.wrap(w, width, subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join([*lines, "", headline(verdict)])


def headline(verdict: Verdict) -> str:
    """The verdict in one line, as every command prints it: node, node type, suite, ACCEPTED or REJECTED and the
    checks that failed or did not run."""
    status = "ACCEPTED" if verdict.accepted else "REJECTED"
    line = f"{verdict.node} ({verdict.node_type or 'node type unknown'}, suite {verdict.suite}): {status}"
    failed = verdict.failed_checks()
    return line + (f"; failed or not run: {', '.join(failed)}" if failed else "")
