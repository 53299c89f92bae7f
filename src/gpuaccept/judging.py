"""Judge one run directory: the verdict, verdict.json, the metrics (gpuaccept.prom, node_exporter's textfile
directory, a Pushgateway) and the verdict table. ``gpuaccept summarize`` and ``gpuaccept run`` both judge through
:func:`judge_run_dir`, so that there is one judging step whichever way a suite ran.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import exporter, verdict
from .atomic import write_text_atomic

#: The reason a check row gets when the run had no node type to judge against (see :func:`judge_run_dir`).
NO_NODE_TYPE = "no node type to judge against"


def _explain_node_type(result: verdict.Verdict, node_type_error: str) -> None:
    """Without a node type there are no references: say so on every row that failed or did not run for that
    reason, instead of the judge's generic one (no reference file named '', a metric without reference)."""
    for row in result.rows:
        if row.check == "references":
            row.check, row.metric, row.reason = "node", "node_type", node_type_error
        elif row.metric is None and row.status == verdict.FAIL and row.reason == "a metric failed its reference":
            # It ran and passed its own checks (ReFrame's sanity); its metrics had nothing to be judged against.
            row.status, row.reason = verdict.INFO, f"ran and verified its results; not judged: {NO_NODE_TYPE}"
        elif row.metric is None and row.status == verdict.NOT_RUN:
            row.reason = f"{row.reason}; {NO_NODE_TYPE}"
        elif (
            row.metric is not None and row.status == verdict.FAIL and row.reason == "no reference value for this metric"
        ):
            row.status, row.reason = verdict.INFO, f"measured, not judged: {NO_NODE_TYPE}"
    # Measured but not judged: a node without a node type is never accepted (the node_type row fails).
    result.accepted = False
    result.node_type = result.node_type or "unknown"


def _name_nothing_judged(result: verdict.Verdict) -> None:
    """A node rejected with no failed check: nothing of the suite was judged (every check of the suite is one
    its node type does not expect, or none ran). Say so, and name the checks that did not run."""
    if result.accepted or result.failed_checks():
        return
    not_run = sorted({r.check for r in result.rows if r.metric is None and r.status == verdict.NOT_RUN})
    result.rows.append(
        verdict.Row(
            "suite",
            None,
            verdict.NOT_RUN,
            reason=f"nothing judged: no check of the {result.suite} suite ran for node type {result.node_type} "
            f"(not run: {', '.join(not_run) or 'none'}; each row says why)",
        )
    )


def judge_run_dir(
    run_dir: str | Path,
    facts: dict[str, Any],
    reference_dir: str | Path,
    node_type: str,
    suite: str,
    expected_gpus: int | None = None,
    textfile_dir: str | Path | None = None,
    pushgateway: str | None = None,
    pushgateway_instance: str | None = None,
    node_type_error: str | None = None,
    report_error: str | None = None,
    nothing_selected: bool = False,
    node: str | None = None,
    node_problems: list[str] | tuple[str, ...] = (),
    echo: Callable[[str], None] | None = print,
) -> verdict.Verdict:
    """Judge the run in ``run_dir`` (its ``reframe-report.json``) for ``node_type``, write ``verdict.json`` and
    the metrics, print the verdict table and where the files are (through ``echo``; None prints nothing), and
    return the verdict.

    ``node_type_error`` says why the run has no node type (detection failed, no reference file): the verdict
    then names it on the node's row and on the checks that could not be judged, and the node is not accepted.
    ``report_error`` says why checks are missing from the report, or why there is none (ReFrame could not be
    started, or was stopped at the time limit);
    ``nothing_selected`` says that ReFrame ran and selected no check for this node (it then writes no report),
    so that each check's own reason (no GPU, not selected) is given instead. ``node`` names the node (default:
    the facts' hostname); each of ``node_problems`` (e.g. no facts from the node) fails the node with that reason.
    """
    run_dir = Path(run_dir)
    report_file = run_dir / "reframe-report.json"
    report, load_error = None, None
    try:
        report = verdict.load_report(report_file)
    except verdict.ReportError as err:
        load_error = None if nothing_selected else str(err)
    result = verdict.build(
        report,
        facts,
        reference_dir,
        node_type,
        suite,
        expected_gpus=expected_gpus,
        report_error=report_error or load_error,
        run_dir=run_dir,
    )
    if node:
        result.node = node
    for why in reversed(node_problems):
        result.rows.insert(0, verdict.Row("node", "facts", verdict.FAIL, reason=why))
        result.accepted = False
    if node_type_error:
        _explain_node_type(result, node_type_error)
    _name_nothing_judged(result)
    result.run_dir = str(run_dir.resolve())
    if result.started_unix is None:
        result.finished_unix = dt.datetime.now(dt.UTC).timestamp()
    verdict_file = write_text_atomic(run_dir / "verdict.json", json.dumps(result.to_json(), indent=2) + "\n")
    written = exporter.write(result, run_dir, textfile_dir)
    lines = [verdict.table(result), "", f"report:  {verdict_file}"]
    lines.append(f"reframe: {report_file}" + ("" if report is not None else " (none)"))
    lines += [f"prom:    {path}" for path in written]
    if echo is not None:
        echo("\n".join(lines))
    if pushgateway:  # after the table: a failed push (an error) still leaves the verdict shown and written
        from . import pushgateway as pgw  # noqa: PLC0415

        grouping = pgw.push(result, pushgateway, pushgateway_instance)
        if echo is not None:
            echo(f"pushed:  {pushgateway} (job {pgw.JOB}, {grouping})")
    return result
