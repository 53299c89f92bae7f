"""The judge's second stage, validate (docs/judge.md, "From a run directory to a verdict"): each loaded test case
(gpuaccept.judge.load) through the rules of its check, with no file read. What ReFrame recorded (skipped, no
result, failed before sanity), the document's own word (gpuaccept.judge.rules: errors, verification, the GPUs
it saw), the power sampler's document joined, HPL's residuals, throttling, the health rules (with NVLink and the
pinned configuration), DCGM's results, the fabric's rules and the burn-in's rules give the problems of the case,
and the metrics and waived metrics it reports. Judging them against references is the next stage
(gpuaccept.judge.verdict.judge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuaccept.judge import (
    burnin_rules,
    completeness,
    consistency,
    dcgm_rules,
    fabric_judge,
    health_rules,
    pergpu,
    rules,
)
from gpuaccept.judge.checks import CHECKS
from gpuaccept.judge.load import Case, Run
from gpuaccept.references import NodeType, ReferenceError


@dataclass
class Findings:
    """What the rules found in one test case. ``not_run`` or ``failed`` set: the case ends there (skipped or the
    tool could not look; no result or no readable document), with nothing else found."""

    not_run: str = ""
    failed: str = ""
    problems: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)  # the document's, the power sampler's joined
    waived: dict[str, str] = field(default_factory=dict)
    cannot_look: str = ""  # why the check could not look although it ran (health: the kernel log)
    per_gpu: pergpu.Figures = field(default_factory=pergpu.Figures)  # each GPU's figures of the per-GPU metrics


def validate(run: Run) -> list[Findings]:
    """The findings of each test case of ``run``, in its order."""
    return [_validated(case, run) for case in run.cases]


# What a rule raises on a schema-valid document whose other parts are not what its tool writes (a list where an
# object belongs, a string where a number does): the check fails naming the file, nothing raises past the judge.
MALFORMED = (AttributeError, KeyError, IndexError, TypeError, ValueError)


def _validated(case: Case, run: Run) -> Findings:
    try:
        return validate_case(case, run.facts, run.node_type, run.expected_gpus, run.facts_end)
    except MALFORMED as err:
        where = ", ".join(str(d.path) for d in (case.document, case.power) if d is not None) or case.check
        return Findings(failed=f"{where}: not what the check's tool writes, the judge's rules cannot read it "
                               f"({type(err).__name__}: {str(err)[:200]})")  # fmt: skip


def _variable(tc: dict[str, Any], name: str) -> str:
    """A ReFrame variable of a test case as its report recorded it ("" when absent)."""
    value = (tc.get("variables") or {}).get(name) if isinstance(tc.get("variables"), dict) else None
    return value if isinstance(value, str) else ""


def validate_case(
    case: Case,
    facts: dict[str, Any],
    node_type: NodeType | None,
    expected_gpus: int | None,
    facts_end: dict[str, Any] | None = None,
) -> Findings:
    """One test case: ReFrame's record says whether the run completed; the document says what it measured.
    ``facts_end``: the node facts gathered after the suite (the NVLink counters' growth), None where none was."""
    check = CHECKS[case.check]
    tc = case.tc
    result = tc.get("result")
    if result == "skip":
        return Findings(not_run=case.skip_reason or "skipped")
    phase = tc.get("fail_phase")
    if result not in ("pass", "fail"):
        return Findings(failed=f"ReFrame recorded no result ({result!r})")
    problems: list[str] = []
    if result == "fail" and phase not in ("sanity", "performance"):
        problems.append(f"{phase or 'run'}: {tc.get('fail_reason') or 'failed'}")
    document = case.document
    assert document is not None  # loaded for every case with a result
    path, doc = document.path, document.doc
    if doc is None:
        if result == "fail" and phase in ("sanity", "performance"):
            problems.append(f"ReFrame recorded {phase}: {' '.join(str(tc.get('fail_reason')).split())}")
        return Findings(failed="; ".join([document.error, *problems]))
    if doc.get("not_run"):
        nr = doc["not_run"]
        return Findings(not_run=nr["reason"] + (f"; fix: {nr['fix']}" if nr.get("fix") else ""))
    gpus = (1 if check.one_gpu else len(facts.get("gpus") or [])) if check.needs_gpu else None
    problems += rules.document_problems(doc, path, gpus, check.one_gpu)
    if check.needs_gpu:  # every GPU of the node (or the one a one-GPU check measures), each once, by its identities
        problems += completeness.document_problems(check.key, doc, path, facts, every=not check.one_gpu)
    power_doc = None
    if case.power is not None:
        power_doc = case.power.doc
        if power_doc is None:
            problems.append(f"power sampler: {case.power.error}")
            power_doc = {"metrics": {}, "waived": {}, "verification": {"passed": True}}
    efficiency = check.efficiency_metric or _variable(tc, "efficiency_metric")
    metrics, waived, power_problems = rules.combine(doc, power_doc, efficiency)
    problems += power_problems
    not_run: str | None = None  # why the check could not look (health: the kernel log)
    extra: dict[int, dict[str, Any]] = {}  # per-GPU figures the rules derive (health: each GPU's findings)
    if "hpl" in check.rules:
        problems += rules.hpl_problems(doc, path)
    if "throttle" in check.rules:
        problems += rules.throttle_problems(doc, path)
    if "memtest" in check.rules:
        problems += rules.memtest_problems(doc, path)
    if "dcgm" in check.rules:
        problems += dcgm_rules.problems(doc, path)
    if "health" in check.rules and node_type is not None:
        try:
            findings, _notes, not_run = health_rules.assess(doc, node_type, expected_gpus, facts, facts_end)
            judged, judged_waived = health_rules.judged_metrics(
                doc, findings, health_rules.expectations(node_type), facts, facts_end
            )
        except ReferenceError as err:
            findings, not_run, judged, judged_waived = [], f"cannot judge health: {err}", {}, {}
        problems += [f"{f['message']} -> {f['fix']}" for f in findings]
        metrics["health_findings"] = {"value": len(findings), "unit": "count"}
        metrics.update(judged)
        waived.update(judged_waived)
        if "gpu_metrics" in doc:  # a probe that reports per GPU: each GPU's findings, those naming it
            extra = {
                d["index"]: {"health_findings": {"value": sum(f.get("gpu") == d["index"] for f in findings),
                                                 "unit": "count"}}
                for d in doc.get("devices") or [] if isinstance(d, dict) and isinstance(d.get("index"), int)
            }  # fmt: skip
    if "fabric" in check.rules and node_type is not None:
        try:
            fab = fabric_judge.assess(doc, node_type, facts, facts_end)
        except ReferenceError as err:
            fab = fabric_judge.Judged(cannot_look=f"cannot judge the fabric: {err}")
        if fab.not_run:
            return Findings(not_run=fab.not_run)
        problems += [f.text() for f in fab.findings]
        metrics.update(fab.metrics)
        waived.update(fab.waived)
        not_run = fab.cannot_look or None
    if "burnin" in check.rules:
        burnin_findings, not_run = burnin_rules.assess(doc)
        problems += [f.text() for f in burnin_findings]
        per_gpu_records = (doc.get("results") or {}).get("per_gpu")
        if isinstance(per_gpu_records, list):
            problems += completeness.records_problems(per_gpu_records, "results.per_gpu", path, doc)
    per_gpu = pergpu.read(check.key, doc, path, facts, metrics, extra)
    problems += per_gpu.problems
    problems += consistency.problems(check.key, doc, path, facts, metrics, per_gpu)
    return Findings(problems=problems, metrics=metrics, waived=waived, cannot_look=not_run or "", per_gpu=per_gpu)
