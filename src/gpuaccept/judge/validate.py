"""The judge's second stage, validate (docs/judge.md, "From a run directory to a verdict"): each loaded test case
(gpuaccept.judge.load) through the rules of its check, with no file read. What ReFrame recorded (skipped, no
result, failed before sanity) and the rules every check has (gpuaccept.judge.rules.document: errors,
verification, the GPUs it saw; the power sampler's document joined; the GPUs' identities), then the check's own
rules by name (``Check.rules``, each a function of gpuaccept.judge.rules.table: HPL's residuals, throttling, the
memory test, DCGM's results, the health rules with NVLink and the pinned configuration, the fabric's, the
burn-in's) give the findings of the case (each a gpuaccept.judge.rules.finding.Finding), and the metrics and waived
metrics it reports. Judging them against references is the next stage (gpuaccept.judge.verdict.judge).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuaccept.checks import CHECKS
from gpuaccept.judge import completeness, consistency, pergpu
from gpuaccept.judge.load import Case, Run
from gpuaccept.judge.rules import document as document_rules
from gpuaccept.judge.rules.finding import Finding, of_document
from gpuaccept.judge.rules.registry import RuleInput
from gpuaccept.judge.rules.table import RULES
from gpuaccept.references import NodeType


@dataclass
class Findings:
    """What the rules found in one test case. ``not_run`` or ``failed`` set: the case ends there (skipped or the
    tool could not look; no result or no readable document), with nothing else found."""

    not_run: str = ""
    failed: str = ""
    problems: list[Finding] = field(default_factory=list)  # what failed, each as data (its ``text`` the line shown)
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
    problems: list[Finding] = []
    if result == "fail" and phase not in ("sanity", "performance"):
        problems.append(Finding("reframe", f"{phase or 'run'}: {tc.get('fail_reason') or 'failed'}"))
    document = case.document
    assert document is not None  # loaded for every case with a result
    path, doc = document.path, document.doc
    if doc is None:
        if result == "fail" and phase in ("sanity", "performance"):
            said = " ".join(str(tc.get("fail_reason")).split())
            problems.append(Finding("reframe", f"ReFrame recorded {phase}: {said}"))
        return Findings(failed="; ".join([document.error, *(p.text() for p in problems)]))
    if doc.get("not_run"):
        nr = doc["not_run"]
        return Findings(not_run=nr["reason"] + (f"; fix: {nr['fix']}" if nr.get("fix") else ""))
    gpus = (1 if check.one_gpu else len(facts.get("gpus") or [])) if check.needs_gpu else None
    problems += of_document("document", document_rules.document_problems(doc, path, gpus, check.one_gpu), path)
    if check.needs_gpu:  # every GPU of the node (or the one a one-GPU check measures), each once, by its identities
        devices = completeness.document_problems(check.key, doc, path, facts, every=not check.one_gpu)
        problems += of_document("devices", devices, path)
    power_doc = None
    if case.power is not None:
        power_doc = case.power.doc
        if power_doc is None:
            problems.append(Finding("power", case.power.error, scope="power sampler", file=case.power.path.name))
            power_doc = {"metrics": {}, "waived": {}, "verification": {"passed": True}}
    efficiency = check.efficiency_metric or _variable(tc, "efficiency_metric")
    metrics, waived, power_problems = document_rules.combine(doc, power_doc, efficiency)
    problems += [Finding("power", p) for p in power_problems]
    cannot_look = ""  # why the check could not look although it ran (health: the kernel log)
    extra: dict[int, dict[str, Any]] = {}  # per-GPU figures the rules derive (health: each GPU's findings)
    given = RuleInput(doc, path, facts, facts_end, node_type, expected_gpus)
    for name in check.rules:  # the check's own rules, by name (gpuaccept.judge.rules.table)
        outcome = RULES[name](given)
        if outcome.not_run:
            return Findings(not_run=outcome.not_run)
        problems += outcome.findings
        metrics.update(outcome.metrics)
        waived.update(outcome.waived)
        extra.update(outcome.per_gpu)
        cannot_look = outcome.cannot_look or cannot_look
    per_gpu = pergpu.read(check.key, doc, path, facts, metrics, extra)
    problems += of_document("per_gpu", per_gpu.problems, path)
    problems += of_document("consistency", consistency.problems(check.key, doc, path, facts, metrics, per_gpu), path)
    return Findings(problems=problems, metrics=metrics, waived=waived, cannot_look=cannot_look, per_gpu=per_gpu)
