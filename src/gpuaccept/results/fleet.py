"""One summary of a fleet: the newest verdict of every node (and suite) in a results tree on the controller,
as the playbooks fetch it (``results/<node>/<run id>/verdict.json``) or ``gpuaccept slurm-judge`` writes it.

A node the caller expects (``--nodes``, or the inventory) that has no verdict is listed as missing and counts
as not accepted: a node that never reported is not a pass.

Configuration drift (:func:`drift`): the node facts of each node's newest run (driver, CUDA, and each GPU's
VBIOS, InfoROM, ECC, persistence, power limits, MIG mode: gpuaccept.probe.gpuconfig) against the fleet's
majority, per field (a GPU's fields among the GPUs of its model, the driver and CUDA among the nodes), and
against what each node's node type pins (gpuaccept.judge.config_drift). A fleet whose GPUs differ is not
accepted as a whole, and the summary names each node, GPU and field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tabulate

from gpuaccept import manifest, references, textinput
from gpuaccept.judge import config_drift, health_rules, readback
from gpuaccept.judge.verdict import FAIL, NOT_RUN, PASS, SCHEMA
from gpuaccept.layout import FACTS_FILE, VERDICT_FILE
from gpuaccept.probe import gpuconfig

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
    edited = "; ".join(x for x in (readback.disagreement(doc), manifest.unvouched(path.parent)) if x)
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


def all_accepted(entries: list[Entry], drifted: list[Drift] | None = None) -> bool:
    return bool(entries) and all(e.verdict == PASS for e in entries) and not drifted


@dataclass
class Drift:
    """One field of one node's GPU (``gpu`` None: of the node) that differs from the fleet's majority
    (``why`` "majority"), has no majority to compare with ("split"), or is not what the node type pins ("pin")."""

    node: str
    node_type: str
    gpu: int | None
    serial: str | None
    field: str
    value: Any
    expected: str
    why: str


def _node_facts(results: Path, entries: list[Entry]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each node's (node type, facts) from its newest run among ``entries`` that has readable facts."""
    out: dict[str, tuple[str, dict[str, Any], str]] = {}
    for e in entries:
        if not e.run:
            continue
        try:
            facts = textinput.load_json(results / e.node / e.run / FACTS_FILE, "the node facts", ValueError)
        except ValueError:
            continue
        if isinstance(facts, dict) and (e.node not in out or e.run > out[e.node][2]):
            out[e.node] = (e.node_type, facts, e.run)
    return {node: (node_type, facts) for node, (node_type, facts, _run) in out.items()}


def _gpus(facts: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for g in facts.get("gpus") or [] if isinstance(g, dict)]


def drift(
    results: str | Path, entries: list[Entry], reference_dir: str | Path | None = None
) -> tuple[list[Drift], list[str]]:
    """The fleet's configuration drift (see the module) and notes (nodes whose facts record no configuration, node
    types whose pins could not be read)."""
    nodes = _node_facts(Path(results), entries)
    rows: list[Drift] = []
    notes: list[str] = []
    for field_name in config_drift.NODE_FIELDS:
        readings = [((node, nt), facts.get(field_name)) for node, (nt, facts) in sorted(nodes.items())]
        for (node, nt), d in config_drift.majority_differences(readings):
            rows.append(Drift(node, nt, None, None, field_name, d.value, d.expected, d.rule))
    models: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for node, (nt, facts) in sorted(nodes.items()):
        gpus = _gpus(facts)
        if gpus and not all(isinstance(g.get("config"), dict) for g in gpus):
            notes.append(f"{node}: its facts record no GPU configuration (gathered by an older gpuaccept or through "
                         "nvidia-smi without -q): not compared")  # fmt: skip
            continue
        for g in gpus:
            models.setdefault(str(g.get("name")), []).append((node, nt, g))
    for _model, gpus in sorted(models.items()):
        for field_name in gpuconfig.FIELDS:
            readings = [((node, nt, g), g["config"].get(field_name)) for node, nt, g in gpus]
            for (node, nt, g), d in config_drift.majority_differences(readings):
                rows.append(Drift(node, nt, g.get("index"), g.get("serial"), field_name, d.value, d.expected, d.rule))
    if reference_dir is not None:
        rows += _pinned(nodes, Path(reference_dir), notes)
    return rows, notes


def _pinned(nodes: dict[str, tuple[str, dict[str, Any]]], reference_dir: Path, notes: list[str]) -> list[Drift]:
    """Each node's driver, CUDA and GPU configuration against its node type's health: pins."""
    rows = []
    for node, (nt, facts) in sorted(nodes.items()):
        if not nt:
            continue
        try:
            expect = health_rules.expectations(references.load_node_type(reference_dir, nt))
        except references.ReferenceError as err:
            notes.append(f"{node}: node type {nt}: its pins could not be read ({err})")
            continue
        for key, field_name in (("driver_versions", "driver_version"), ("cuda_versions", "cuda_driver_version")):
            value = facts.get(field_name)
            if not health_rules.version_allowed(value, expect[key]):
                rows.append(Drift(node, nt, None, None, field_name, value, "one of " + ", ".join(expect[key]), "pin"))
        for g in _gpus(facts):
            if isinstance(g.get("config"), dict):
                for d in config_drift.pin_differences(g["config"], expect):
                    rows.append(Drift(node, nt, g.get("index"), g.get("serial"), d.key, d.value, d.expected, "pin"))
    return rows


def drift_table(rows: list[Drift], notes: list[str]) -> str:
    """The drift section of the summary: one line per field that differs, and the nodes it names."""
    if not rows:
        return "configuration: the same on every node and GPU compared" + "".join(f"\nnote: {n}" for n in notes)
    lines = [(r.node, "-" if r.gpu is None else str(r.gpu), r.field, "unreadable" if r.value is None else str(r.value),
              r.expected, r.why) for r in rows]  # fmt: skip
    text = tabulate.tabulate(lines, headers=("node", "GPU", "field", "value", "expected", "against"),
                             tablefmt="simple", disable_numparse=True)  # fmt: skip
    names = sorted({r.node for r in rows})
    out = [f"configuration drift: {len(rows)} field(s) on {len(names)} node(s) ({', '.join(names)}) differ from the "
           "fleet's majority or the node type's pins", "", *(line.rstrip() for line in text.splitlines())]  # fmt: skip
    return "\n".join(out + [f"note: {n}" for n in notes])


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


def to_json(entries: list[Entry], drifted: list[Drift] | None = None, notes: list[str] | None = None) -> dict[str, Any]:
    return {
        "schema": SUMMARY_SCHEMA,
        "accepted": all_accepted(entries, drifted),
        "nodes": [asdict(e) for e in entries],
        "config_drift": [asdict(d) for d in drifted or []],
        "config_drift_nodes": sorted({d.node for d in drifted or []}),
        "config_notes": list(notes or []),
    }
