"""The judge's rules by name: the table of the rule functions (gpuaccept.judge.rules.table registers them), one
signature for all: ``rule(RuleInput) -> Outcome``, under the names the checks table declares (gpuaccept.checks'
RULE_NAMES, with the table, so that it refuses a misspelt name when it loads: a check that named an unknown rule
would otherwise skip it silently). The table's module refuses, when it loads, a name registered twice, a name not
declared and a declared name with no function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept.checks import RULE_NAMES as NAMES
from gpuaccept.checks import UnknownRuleError, check_names
from gpuaccept.judge.rules.finding import Finding

__all__ = ["NAMES", "RULES", "Outcome", "RuleInput", "UnknownRuleError", "check_names", "complete", "register"]

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
