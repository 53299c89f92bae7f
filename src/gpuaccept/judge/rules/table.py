"""The rule table: each rule a check names in ``Check.rules`` (gpuaccept.checks), registered by its name
(gpuaccept.judge.rules.registry) with one signature, ``rule(RuleInput) -> Outcome``. The validate stage
(gpuaccept.judge.validate) applies a check's rules in the order the check names them, after the rules every check
has (the document's own word, the power sampler's document, the GPUs' identities)."""

from __future__ import annotations

from typing import Any

from gpuaccept.judge import burnin_rules, completeness, dcgm_rules, fabric_judge, health_rules
from gpuaccept.judge.rules import document
from gpuaccept.judge.rules.finding import of_document
from gpuaccept.judge.rules.registry import RULES, Outcome, RuleInput, complete, register
from gpuaccept.references import ReferenceError

__all__ = ["RULES"]  # the table, every rule registered


@register("hpl")
def hpl(case: RuleInput) -> Outcome:
    return Outcome(of_document("hpl", document.hpl_problems(case.doc, case.path), case.path))


@register("throttle")
def throttle(case: RuleInput) -> Outcome:
    return Outcome(document.throttle_findings(case.doc, case.path))


@register("memtest")
def memtest(case: RuleInput) -> Outcome:
    return Outcome(document.memtest_findings(case.doc, case.path))


@register("dcgm")
def dcgm(case: RuleInput) -> Outcome:
    return Outcome(dcgm_rules.findings(case.doc, case.path))


def _gpu_counts(doc: dict[str, Any], findings: list) -> dict[int, dict[str, Any]]:
    """A probe that reports per GPU (``gpu_metrics``): each GPU's count of the findings that name it."""
    if "gpu_metrics" not in doc:
        return {}
    return {
        d["index"]: {"health_findings": {"value": sum(f.gpu == d["index"] for f in findings), "unit": "count"}}
        for d in doc.get("devices") or [] if isinstance(d, dict) and isinstance(d.get("index"), int)
    }  # fmt: skip


@register("health")
def health(case: RuleInput) -> Outcome:
    """The health rules (gpuaccept.judge.health_rules) with the figures they judge; nothing without a node type."""
    if case.node_type is None:
        return Outcome()
    try:
        findings, _notes, not_run = health_rules.assess(case.doc, case.node_type, case.expected_gpus, case.facts,
                                                        case.facts_end)  # fmt: skip
        judged, waived = health_rules.judged_metrics(case.doc, findings, health_rules.expectations(case.node_type),
                                                     case.facts, case.facts_end)  # fmt: skip
    except ReferenceError as err:
        findings, not_run, judged, waived = [], f"cannot judge health: {err}", {}, {}
    metrics = {"health_findings": {"value": len(findings), "unit": "count"}, **judged}
    return Outcome(findings, metrics, waived, _gpu_counts(case.doc, findings), cannot_look=not_run or "")


@register("fabric")
def fabric(case: RuleInput) -> Outcome:
    """The fabric's rules (gpuaccept.judge.fabric_judge); nothing without a node type."""
    if case.node_type is None:
        return Outcome()
    try:
        fab = fabric_judge.assess(case.doc, case.node_type, case.facts, case.facts_end)
    except ReferenceError as err:
        fab = fabric_judge.Judged(cannot_look=f"cannot judge the fabric: {err}")
    if fab.not_run:
        return Outcome(not_run=fab.not_run)
    return Outcome(list(fab.findings), fab.metrics, fab.waived, cannot_look=fab.cannot_look)


@register("burnin")
def burnin(case: RuleInput) -> Outcome:
    """The burn-in's rules (gpuaccept.judge.burnin_rules), and every GPU recorded once."""
    findings, cannot_look = burnin_rules.assess(case.doc)
    records = (case.doc.get("results") or {}).get("per_gpu")
    if isinstance(records, list):
        findings += of_document("burnin", completeness.records_problems(records, "results.per_gpu", case.path,
                                                                        case.doc), case.path)  # fmt: skip
    return Outcome(findings, cannot_look=cannot_look or "")


complete()
