"""One row of a verdict: a check, or one of its metrics (of the node or of one GPU), with its status
(gpuaccept.judge.status), its value against its reference and why. verdict.json holds each as its fields."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Row:
    check: str
    metric: str | None  # None: the row of the check itself
    status: str  # a Status (a plain str where read back from verdict.json, equal to its member)
    value: float | None = None
    unit: str = ""
    reference: float | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None
    reason: str = ""
    expected: bool = True  # False: the node type has no references for this check, so it does not count
    owner: str = ""  # a metric's owner: gpu, link, host or node (gpuaccept.metric_table.owner)
    band: str = ""  # why its band is what it is (the reference's 'band')
    attempts: int = 1  # a retried check: how many times it was measured (the last one is judged)
    warning: str = ""  # a pass that needed a retry: what the earlier attempts measured
    out_of_band: bool = False  # a check row that failed on figures outside their bands alone: measured again
    gpu: int | None = None  # a per-GPU figure's GPU (the node facts' index); None: the node's or the check's row
    # A failed check's row: each finding of its rules as data (gpuaccept.judge.rules.finding.Finding.summary: rule,
    # GPU, fix, file, field, the line), so that the exporter and the report read the GPU and the fix apart.
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The row as verdict.json holds it: every field, ``findings`` only where there are some."""
        out = asdict(self)
        if not out["findings"]:
            del out["findings"]
        return out

    @property
    def tolerance(self) -> str:
        parts = []
        if self.reference:
            if self.lower_bound is not None:
                parts.append(f"-{(1 - self.lower_bound / self.reference) * 100:.0f}%")
            if self.upper_bound is not None:
                parts.append(f"+{(self.upper_bound / self.reference - 1) * 100:.0f}%")
        return "/".join(parts)
