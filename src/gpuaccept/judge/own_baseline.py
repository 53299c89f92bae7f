"""Which commissioning run a node's run is compared with (gpuaccept.judge.deviation, rule ``baseline``), and the
rules of one run: siblings and own baseline, added to its verdict (the fleet rule needs the other nodes:
gpuaccept.results.fleet_deviation).

The commissioning run is either given (``gpuaccept summarize --commission-run DIR``) or found: the newest run
directory beside the judged one (``results/<node>/<run id>/``, the run ids starting with their UTC start time)
whose recorded verdict is of the commission suite, is ACCEPTED by its rows (gpuaccept.judge.readback), and
started before the judged run. A given one that is not an accepted commissioning run is not used; the row says
why. The commissioning run's own figures are read from its verdict.json as recorded (its measured values), never
judged again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.judge import deviation, readback
from gpuaccept.judge.row import Row
from gpuaccept.judge.status import FAIL
from gpuaccept.judge.verdict import Verdict
from gpuaccept.layout import FACTS_FILE, VERDICT_FILE

COMMISSION = "commission"


@dataclasses.dataclass(frozen=True)
class Commission:
    """The commissioning run found: its rows and facts (None where there is none), and where it is or why not."""

    rows: list[Row] | None
    facts: dict[str, Any]
    where: str


def _read(run_dir: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        doc = readback.read(run_dir / VERDICT_FILE, ValueError)
    except ValueError as err:
        return None, str(err)
    if doc.get("suite") != COMMISSION:
        return None, f"{run_dir} is a {doc.get('suite')} run, not a commissioning run"
    try:
        if not readback.accepted(doc):
            return None, f"{run_dir} was not ACCEPTED"
    except ValueError as err:
        return None, f"{run_dir / VERDICT_FILE}: {err}"
    return doc, ""


def rows_of(doc: dict[str, Any]) -> list[Row]:
    """A recorded verdict's rows with every field it recorded (its measured values, bounds and GPUs)."""
    fields = {f.name for f in dataclasses.fields(Row)}
    return [Row(**{k: v for k, v in r.items() if k in fields}) for r in doc.get("rows") or [] if isinstance(r, dict)]


def _facts(run_dir: Path, doc: dict[str, Any]) -> dict[str, Any]:
    try:
        facts = textinput.load_json(run_dir / FACTS_FILE, "the node facts", ValueError, within=run_dir)
    except ValueError:
        facts = doc.get("facts") or {}
    return facts if isinstance(facts, dict) else {}


def find(run_dir: Path, given: Path | None = None) -> Commission:
    """The commissioning run of ``run_dir`` (the module says how it is found)."""
    if given is not None:
        doc, why = _read(Path(given))
        if doc is None:
            return Commission(None, {}, f"--commission-run: {why}")
        return Commission(rows_of(doc), _facts(Path(given), doc), str(given))
    run_dir = Path(run_dir)
    candidates = sorted((p.parent for p in run_dir.parent.glob(f"*/{VERDICT_FILE}")
                         if p.parent.name < run_dir.name), key=lambda p: p.name, reverse=True)  # fmt: skip
    for cand in candidates:
        doc, _why = _read(cand)
        if doc is not None:
            return Commission(rows_of(doc), _facts(cand, doc), cand.name)
    return Commission(None, {}, f"no accepted commission run before {run_dir.name} in {run_dir.parent}")


def apply(v: Verdict, run_dir: Path | None, reference_dir: str | Path, given: Path | None = None) -> Verdict:
    """``v`` with the rows of the siblings rule and (a run of another suite than commission) the own-baseline
    rule; a failed row of either rejects the node."""
    thresholds = deviation.load(reference_dir).for_type(v.node_type)
    rows = deviation.siblings(v.rows, v.facts, v.suite, thresholds)
    if v.suite != COMMISSION and run_dir is not None:
        found = find(run_dir, given)
        rows += deviation.baseline(v.rows, v.facts, v.suite, found.rows, found.facts, found.where, thresholds)
    failed = any(r.status == FAIL and r.expected for r in rows)
    return dataclasses.replace(v, rows=[*v.rows, *rows], accepted=v.accepted and not failed)
