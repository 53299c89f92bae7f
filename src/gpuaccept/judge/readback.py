"""A recorded verdict read back: ``gpuaccept show``, ``gpuaccept fleet``, ``gpuaccept report`` and the exporter take
a node's verdict from its rows, by the judge's own rule (gpuaccept.judge.verdict.decide), never from the ``verdict``
or ``failed_checks`` fields written beside them; where those disagree with the rows (the file was edited or
damaged), the reader says so (:func:`disagreement`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.judge.row import Row
from gpuaccept.judge.status import FAIL, NOT_RUN, PASS
from gpuaccept.judge.verdict import decide, incomplete


def read(path: Path, error: type[Exception]) -> dict[str, Any]:
    """A verdict.json, read strictly (gpuaccept.textinput); ``error`` names the file and what is wrong."""
    return textinput.load_json(Path(path), "the verdict", error)


def rows(doc: dict[str, Any]) -> list[Row]:
    """The rows of a recorded verdict as the judge's rule reads them: check, metric, status and whether it is
    expected (a row that does not say counts), with the figure, its unit, reference and bounds and its GPU, which the
    report reads. ValueError when ``rows`` is not a list of objects."""
    recorded = doc.get("rows")
    if not isinstance(recorded, list) or not all(isinstance(r, dict) for r in recorded):
        raise ValueError("'rows' is not a list of objects")
    return [
        Row(str(r.get("check")), r.get("metric") if r.get("metric") is None else str(r.get("metric")),
            str(r.get("status")), value=_number(r.get("value")), unit=str(r.get("unit") or ""),
            reference=_number(r.get("reference")), lower_bound=_number(r.get("lower_bound")),
            upper_bound=_number(r.get("upper_bound")), reason=str(r.get("reason") or ""),
            expected=r.get("expected", True) is not False, gpu=_gpu(r.get("gpu")))
        for r in recorded
    ]  # fmt: skip


def _number(value: Any) -> float | None:
    """A row's figure: a finite number, else None (a row without one, or a damaged file)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _gpu(value: Any) -> int | None:
    """A per-GPU row's GPU index; None for the node's or the check's row."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def accepted(doc: dict[str, Any]) -> bool:
    """Whether a recorded verdict's rows accept the node (a node type named, ``verdict.decide``, and a row for every
    check of its suite: ``verdict.incomplete``)."""
    read = rows(doc)
    return bool(doc.get("node_type")) and decide(read) and not incomplete(doc, read)


def failed_checks(doc: dict[str, Any]) -> list[str]:
    """The checks a recorded verdict's rows name as failed or not run (expected ones)."""
    return sorted({r.check for r in rows(doc) if r.status in (FAIL, NOT_RUN) and r.expected})


def disagreement(doc: dict[str, Any]) -> str:
    """What a recorded verdict's own fields say that its rows do not ("" when they agree)."""
    derived = PASS if accepted(doc) else FAIL
    stored = doc.get("verdict")
    said = [why] if (why := incomplete(doc, rows(doc))) else []
    if stored != derived:
        said.append(f"its 'verdict' field says {stored}, its rows say {derived} by the judge's rule")
    listed = doc.get("failed_checks")
    if listed is not None and (not isinstance(listed, list) or sorted(map(str, listed)) != failed_checks(doc)):
        said.append(f"its 'failed_checks' field lists {listed!r}, its rows {failed_checks(doc)}")
    if not said:
        return ""
    return "; ".join(said) + (": the file was edited or damaged after the judge wrote it (judge the run again: "
                              "gpuaccept summarize)")
