"""One column of the evaluation report: the runs of one node type, vendor or machine, read by
gpuaccept.results.report.load_group; the report's sections (report, report_headline, report_pergpu) read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Group:
    """The runs of one node type, vendor or machine: what a column of the report shows."""

    label: str
    paths: list[Path]
    docs: list[dict[str, Any]] = field(default_factory=list)  # verified benchmark documents, oldest first
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (path, why) of documents left out
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)  # `gpuaccept facts` outputs found beside the runs
    # The documents of no judged run (no verdict.json in a folder above them): the only documents the first page
    # reads; a judged run's figures come from its verdict's rows (report_headline.measure).
    unjudged: list[dict[str, Any]] = field(default_factory=list)
    node_name: str = ""  # the node's name as the operator gives it (gpuaccept report --node-name); "" from the runs
    archives: list[str] = field(default_factory=list)  # the run archives unpacked to read the paths, by name
    unvouched: dict[int, str] = field(default_factory=dict)  # a verdict's index -> what its run cannot vouch for

    def by_tool(self, tool: str) -> list[dict[str, Any]]:
        return [d for d in self.docs if d.get("tool") == tool]

    def newest(self, tool: str) -> dict[str, Any] | None:
        docs = self.by_tool(tool)
        return docs[-1] if docs else None
