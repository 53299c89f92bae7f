"""The judge's rules by name: what ``Check.rules`` (gpuaccept.judge.checks) may name, and the table of the rule
functions (gpuaccept.judge.rules.table registers them), one signature for all: ``rule(RuleInput) -> Outcome``.

The names are declared here, low, so that the checks table can refuse a misspelt name when it loads (a check that
named an unknown rule would otherwise skip it silently); the table's module refuses, when it loads, a name
registered twice, a name not declared here and a declared name with no function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept.judge.rules.finding import Finding

#: Each rule a check may name, with what it judges (docs/judge.md, "The rules").
NAMES: dict[str, str] = {
    "hpl": "HPL's residual rule on every run the document lists (gpuaccept.judge.rules.document.hpl_problems)",
    "throttle": "clocks held back under load by a fault (gpuaccept.judge.rules.document.throttle_findings)",
    "memtest": "every word of every GPU's memory held what was written, over the memory and time asked "
    "(gpuaccept.judge.rules.document.memtest_findings)",
    "dcgm": "every failed DCGM diagnostic result (gpuaccept.judge.dcgm_rules)",
    "health": "the GPUs' health, NVLink, PCIe and the pinned configuration (gpuaccept.judge.health_rules)",
    "fabric": "the InfiniBand or RoCE ports, GPUDirect RDMA, loopback bandwidth and counters "
    "(gpuaccept.judge.fabric_judge)",
    "burnin": "the burn-in's timelines, turns and events, GPU by GPU (gpuaccept.judge.burnin_rules)",
}


class UnknownRuleError(ValueError):
    """A check names a rule that is not declared (a misspelt key)."""


def check_names(owner: str, names: tuple[str, ...]) -> None:
    """Raise UnknownRuleError where ``names`` (``owner``'s rules) holds a name NAMES does not declare."""
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise UnknownRuleError(f"{owner}: unknown rule(s) {', '.join(map(repr, unknown))}; the rules are "
                               f"{', '.join(NAMES)} (gpuaccept.judge.rules.registry.NAMES)")  # fmt: skip


@dataclass(frozen=True)
class RuleInput:
    """What a rule reads: one test case's benchmark document (schema-checked, its file ``path``), the node facts
    before and after the suite (``facts_end`` None: not gathered), the node type (None: none resolved; rules that
    need its references then judge nothing) and the GPU count the inventory gives (None: none)."""

    doc: dict[str, Any]
    path: Path
    facts: dict[str, Any]
    facts_end: dict[str, Any] | None
    node_type: Any  # gpuaccept.references.NodeType | None
    expected_gpus: int | None


@dataclass
class Outcome:
    """What a rule found: its findings, the figures it adds to the document's (``metrics``, and ``waived`` with the
    reason), each GPU's figures it derives (``per_gpu``: index -> metrics), ``cannot_look`` (why the check could
    not look although it ran: NOT RUN unless something failed) and ``not_run`` (nothing to look at here: the case is
    NOT RUN and nothing else counts)."""

    findings: list[Finding] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    waived: dict[str, str] = field(default_factory=dict)
    per_gpu: dict[int, dict[str, Any]] = field(default_factory=dict)
    cannot_look: str = ""
    not_run: str = ""


Rule = Callable[[RuleInput], Outcome]
#: The rule functions by name (filled by gpuaccept.judge.rules.table).
RULES: dict[str, Rule] = {}


def register(name: str) -> Callable[[Rule], Rule]:
    """Register the decorated function as rule ``name`` (declared in NAMES, registered once)."""

    def add(func: Rule) -> Rule:
        check_names(f"rule function {func.__qualname__}", (name,))
        if name in RULES:
            raise ValueError(f"rule {name!r} registered twice ({RULES[name].__qualname__}, {func.__qualname__})")
        RULES[name] = func
        return func

    return add


def complete() -> None:
    """Raise where a declared rule has no function (called when the table's module has registered them all)."""
    missing = [n for n in NAMES if n not in RULES]
    if missing:
        raise ValueError(f"rule(s) declared with no function: {', '.join(missing)}")
