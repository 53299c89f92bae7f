"""One summary of a fleet: the newest verdict of every node (and suite) in a results tree on the controller,
as the playbooks fetch it (``results/<node>/<run id>/verdict.json``) or ``gpuaccept slurm-judge`` writes it.

A node the caller expects (``--nodes``, or the inventory) that has no verdict is listed as missing and counts
as not accepted: a node that never reported is not a pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tabulate

from gpuaccept.judge import readback
from gpuaccept.judge.verdict import FAIL, NOT_RUN, PASS, SCHEMA
from gpuaccept.layout import VERDICT_FILE

MISSING = "missing"
UNREADABLE = "unreadable"  # a verdict.json whose rows or failed checks are not what the judge writes
SUMMARY_SCHEMA = "gpuaccept.fleet/1"


@dataclass
class Entry:
    node: str
    node_type: str
    suite: str
    verdict: str  # pass, fail, missing, unreadable
    failed_checks: list[str] = field(default_factory=list)
    not_run_checks: list[str] = field(default_factory=list)
    run: str = ""
    finished_unix: float | None = None
    reason: str = ""


class FleetError(ValueError):
    """A results tree that cannot be read; the message names the file."""


def _entry(path: Path) -> Entry:
    try:
        doc = readback.read(path, FleetError)
    except FleetError as err:
        raise FleetError(f"{path}: cannot read the verdict: {str(err).removeprefix(f'{path}: ')}") from None
    if doc.get("schema") != SCHEMA:
        raise FleetError(f"{path}: not a gpuaccept verdict (schema {doc.get('schema')!r})")
    rows, failed = doc.get("rows") or [], doc.get("failed_checks") or []
    broken = _unreadable(rows, failed)
    if broken:  # counted as not accepted, and the summary goes on for the other nodes
        return Entry(path.parent.parent.name, str(doc.get("node_type") or ""), str(doc.get("suite") or ""), UNREADABLE,
                     run=path.parent.name, reason=f"{path}: verdict unreadable: {broken}")  # fmt: skip
    # The verdict by its rows (the judge's rule), whatever its 'verdict' and 'failed_checks' fields say.
    failed = readback.failed_checks(doc)
    not_run_rows = {r.get("check") for r in rows if r.get("metric") is None and r.get("status") == NOT_RUN}
    not_run = sorted(not_run_rows & set(failed))
    edited = readback.disagreement(doc)
    return Entry(
        node=path.parent.parent.name,  # the directory the playbook fetched to: the inventory name
        node_type=str(doc.get("node_type") or ""),
        suite=str(doc.get("suite") or ""),
        verdict=PASS if readback.accepted(doc) else FAIL,
        failed_checks=failed,
        not_run_checks=not_run,
        run=path.parent.name,
        finished_unix=doc.get("finished_unix"),
        reason=f"{path}: {edited}" if edited else "",
    )


def _unreadable(rows: Any, failed: Any) -> str:
    """What makes a verdict's rows or failed checks unreadable ("" when they read as the judge writes them)."""
    if not isinstance(rows, list):
        return f"'rows' is a JSON {type(rows).__name__}, not a list"
    if not all(isinstance(r, dict) for r in rows):
        return "'rows' holds something other than objects"
    if not isinstance(failed, list) or not all(isinstance(c, str) for c in failed):
        return "'failed_checks' is not a list of check names"
    return ""


def collect(results: str | Path, suite: str | None = None, nodes: list[str] | None = None) -> list[Entry]:
    """The newest run per node and suite (by the run id, which starts with its UTC start time)."""
    results = Path(results)
    if not results.is_dir():
        raise FleetError(f"{results}: not a directory (the results tree the playbooks fetch to)")
    newest: dict[tuple[str, str], Entry] = {}
    for path in sorted(results.glob(f"*/*/{VERDICT_FILE}")):
        entry = _entry(path)
        if suite and entry.suite != suite:
            continue
        key = (entry.node, entry.suite)
        if key not in newest or entry.run > newest[key].run:
            newest[key] = entry
    entries = sorted(newest.values(), key=lambda e: (e.node, e.suite))
    for node in sorted(set(nodes or []) - {e.node for e in entries}):
        entries.append(Entry(node, "", suite or "", MISSING, reason=f"no verdict under {results / node}"))
    return entries


def all_accepted(entries: list[Entry]) -> bool:
    return bool(entries) and all(e.verdict == PASS for e in entries)


def table(entries: list[Entry]) -> str:
    header = ("node", "node type", "suite", "verdict", "failed checks", "run")
    lines = [
        (
            e.node,
            e.node_type or "-",
            e.suite or "-",
            {PASS: "ACCEPTED", FAIL: "REJECTED", UNREADABLE: "UNREADABLE"}.get(e.verdict, "MISSING"),
            "; ".join(
                x
                for x in (
                    ", ".join(
                        [
                            *[c for c in e.failed_checks if c not in e.not_run_checks],
                            *[f"{c} (not run)" for c in e.not_run_checks],
                        ]
                    ),
                    e.reason,
                )
                if x
            )
            or "-",
            e.run or "-",
        )
        for e in entries
    ]
    text = tabulate.tabulate(lines, headers=header, tablefmt="simple", disable_numparse=True)
    out = [line.rstrip() for line in text.splitlines()]
    counts = {v: sum(e.verdict == v for e in entries) for v in (PASS, FAIL, MISSING, UNREADABLE)}
    out.append("")
    line = f"{len(entries)} node(s): {counts[PASS]} accepted, {counts[FAIL]} rejected, {counts[MISSING]} missing"
    out.append(line + (f", {counts[UNREADABLE]} unreadable" if counts[UNREADABLE] else ""))
    return "\n".join(out)


def to_json(entries: list[Entry]) -> dict[str, Any]:
    return {
        "schema": SUMMARY_SCHEMA,
        "accepted": all_accepted(entries),
        "nodes": [asdict(e) for e in entries],
    }
