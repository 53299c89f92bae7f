"""The fabric check judged (docs/checks/fabric.md): the entry point gpuaccept.judge.validate calls for a case of the
``fabric`` check. It reads the node type's expectations (gpuaccept.judge.fabric_expect), applies the port, GPUDirect
and bandwidth rules (gpuaccept.judge.fabric_rules) and the counters' rules over the suite
(gpuaccept.judge.fabric_growth), and says why the check could not look where it could not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuaccept.judge import fabric_expect, fabric_growth, fabric_rules
from gpuaccept.judge.fabric_rules import finding
from gpuaccept.judge.rules.finding import Finding
from gpuaccept.references import NodeType


@dataclass
class Judged:
    """What the fabric rules found in one document. ``not_run``: there is no fabric to look at and the node type
    does not expect one (the case is NOT RUN, with no figures); ``cannot_look``: a part the node type asks for
    could not be measured (NOT RUN unless something failed)."""

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    not_run: str = ""
    cannot_look: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    waived: dict[str, str] = field(default_factory=dict)


def assess(
    doc: dict[str, Any], node_type: NodeType, facts: dict[str, Any] | None, facts_end: dict[str, Any] | None
) -> Judged:
    """A fabric document against ``node_type`` (ReferenceError where its ``fabric:`` section is not valid)."""
    expect = fabric_expect.expectations(node_type) or {"carrier_changes_max": fabric_expect.CARRIER_CHANGES_MAX}
    results = doc.get("results") if isinstance(doc.get("results"), dict) else {}
    after = results.get("after") if isinstance(results.get("after"), dict) else {}
    bw = results.get("ib_write_bw") if isinstance(results.get("ib_write_bw"), dict) else {}
    out = Judged()
    before, end, which = fabric_growth.window(doc, facts, facts_end)
    if not after.get("hcas") and not (isinstance(before, dict) and before.get("hcas")):
        why = after.get("why") or "no InfiniBand or RoCE HCA read"
        if expect.get("ports"):
            out.findings.append(finding("no_fabric", "", f"{why}; the node type expects {expect['ports']} ports"))
            out.metrics["fabric_findings"] = {"value": len(out.findings), "unit": "count"}
            return out
        out.not_run = f"no fabric to look at: {why}"
        return out
    out.findings += fabric_rules.port_findings(after, expect, out.notes)
    out.findings += fabric_rules.gpudirect_findings(after, bw, expect)
    bw_findings, why_bw = fabric_rules.bandwidth_findings(bw, expect)
    out.findings += bw_findings
    if isinstance(before, dict) and isinstance(end, dict):
        grown, total = fabric_growth.growth(before, end, expect, out.notes)
        out.findings += grown
        out.notes.append(f"counters judged over {which}")
        out.metrics["fabric_error_growth"] = {"value": total, "unit": "count"}
    else:
        out.waived["fabric_error_growth"] = "no fabric reading before and after"
    out.cannot_look = why_bw or ""
    out.metrics["fabric_findings"] = {"value": len(out.findings), "unit": "count"}
    return out
