"""Judge one run directory: the one path from a run's files to ``verdict.json``, ``gpuaccept.prom`` (and
node_exporter's textfile) that ``gpuaccept summarize``, ``gpuaccept run``, the suite role and Slurm use.

Every input problem (ReFrame's report missing or malformed, the facts file unreadable, a benchmark document
missing or invalid, a file changed since the run wrote its manifest, a retry folder gpuaccept run did not write)
ends in a written REJECTED verdict that names the file and the problem, and refreshed metrics; a run directory
that does not exist is an error, never created. One writer at a time per run
directory (a lock file in it), stale temporary files of a killed writer removed first.

The stages in order (docs/judge.md, "From a run directory to a verdict"): load (gpuaccept.judge.load), validate
(gpuaccept.judge.validate), judge (gpuaccept.judge.verdict.judge, :func:`judge_run`), write
(:func:`judge_run_dir`).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from gpuaccept import layout, manifest, textinput
from gpuaccept.atomic import OutputError, clean_stale_temps, locked, write_text_atomic
from gpuaccept.judge import exporter, load, own_baseline, validate, verdict
from gpuaccept.layout import FACTS_FILE, METRICS_FILE, REPORT_FILE, VERDICT_FILE
from gpuaccept.references import ReferenceError, resolve

LOCK_FILE = layout.LOCK_FILE


def judge_run(
    run_dir: Path,
    report: dict[str, Any] | None,
    facts: dict[str, Any],
    reference_dir: str | Path,
    node_type: str,
    suite: str,
    expected_gpus: int | None = None,
    report_error: str | None = None,
    input_errors: list[str] | None = None,
    adjust: verdict.Adjust | None = None,
    commission: Path | None = None,
) -> verdict.Verdict:
    """The verdict of ``run_dir`` from its ReFrame ``report``, with the checks its retries measured again
    (``retry-<k>/``, load.retries) taken from the last attempt (verdict.merge_retry); writes nothing. The
    arguments are verdict.build's; a retry is judged with ``expected_gpus`` and ``adjust`` alone (its report is
    its own, the run's input problems are the run's). Before anything is judged, the run directory is checked
    against its manifest (gpuaccept.manifest): a file changed, added or missing since the run, a retry folder
    gpuaccept run did not write, or a retry that left no report is a failed input naming it (the earlier attempt
    stands); a run without a manifest gets a row saying so. Last, the siblings and own-baseline rules
    (gpuaccept.judge.own_baseline; ``commission``: the commissioning run to compare with, else the newest
    accepted one beside ``run_dir``)."""
    run_dir = Path(run_dir)
    errors = list(input_errors or [])
    # Load: the manifest of the run (and of a Slurm run's work directory that holds its documents), the run, then
    # each retry with its own report.
    warnings = []
    for root in dict.fromkeys(load.roots(run_dir)):
        if root == run_dir or root.is_dir():
            problems, warning = manifest.verify(root)
            errors += problems
            warnings += [warning] if warning and root == run_dir else []
    found, retry_problems = load.retries(run_dir)
    errors += retry_problems
    given = load.Run(report, facts, node_type, suite, expected_gpus, report_error, errors)
    first = load.load_run(given, reference_dir, run_dir)
    again: list[tuple[int, list[str], load.Run, str]] = []
    for attempt, retry_dir, checks in found:
        try:
            retry_report = load.load_report(retry_dir / REPORT_FILE, within=run_dir)
        except load.ReportError as err:
            first.input_errors.append(f"attempt {attempt} of {', '.join(checks)} left no report: {err} (the earlier "
                                      "attempt stands)")  # fmt: skip
            break
        retry = load.load_run(load.Run(retry_report, facts, node_type, suite, expected_gpus), reference_dir, retry_dir)
        again.append((attempt, checks, retry, str(retry_dir.relative_to(run_dir) / layout.RETRIED_FILE)))
    # Validate and judge each attempt; the last attempt of a retried check is the one that counts.
    result = verdict.judge(first, validate.validate(first), adjust)
    for attempt, checks, retry, source in again:
        result = verdict.merge_retry(result, verdict.judge(retry, validate.validate(retry), adjust), checks, attempt,
                                     source)  # fmt: skip
    result.rows += [verdict.Row("inputs", "manifest", verdict.INFO, reason=w, expected=False) for w in warnings]
    return own_baseline.apply(result, run_dir, reference_dir, commission)


def read_recorded(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(recorded verdict, facts, ReFrame's report) of a judged run directory, to judge it again: the facts from
    its node-facts.json, else those its verdict.json recorded ({} where node-facts.json cannot be read:
    :func:`recorded_facts` says why). A missing or malformed verdict.json is the caller's error (ValueError naming
    it); a report that cannot be read is load.ReportError."""
    recorded = textinput.load_json(run_dir / VERDICT_FILE, "the recorded verdict", ValueError, within=run_dir)
    facts, _problems = recorded_facts(run_dir, recorded)
    return recorded, facts, load.load_report(run_dir / REPORT_FILE, within=load.roots(run_dir))


def recorded_facts(run_dir: Path, recorded: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(facts, problems) of a judged run directory: its node-facts.json read strictly from inside it, else the
    facts its verdict.json recorded."""
    facts_file = run_dir / FACTS_FILE
    if facts_file.exists():
        return load.read_facts(facts_file, within=run_dir)
    return recorded.get("facts") or {}, []


def rejudge(
    run_dir: Path, reference_dir: str | Path, adjust: verdict.Adjust | None = None
) -> tuple[dict[str, Any], verdict.Verdict]:
    """(recorded verdict, verdict now): a judged run directory judged again (:func:`judge_run`) against
    ``reference_dir``, with the node type and suite it was judged with; writes nothing."""
    recorded = textinput.load_json(run_dir / VERDICT_FILE, "the recorded verdict", ValueError, within=run_dir)
    facts, problems = recorded_facts(run_dir, recorded)
    report = load.load_report(run_dir / REPORT_FILE, within=load.roots(run_dir))
    v = judge_run(run_dir, report, facts, reference_dir, str(recorded.get("node_type")), str(recorded.get("suite")),
                  input_errors=problems, adjust=adjust)  # fmt: skip
    return recorded, v


def run_node_type(run_dir: Path, node_type: str, node_type_error: str | None) -> tuple[str, str | None]:
    """(node type, why there is none) to judge a run against: what the run resolved once (its node-type.json,
    gpuaccept.references.resolve) where it wrote one and the caller names the same node type (or '': none); else the
    caller's (a run recorded before node-type.json existed, or one judged again as another node type on purpose). A
    node-type.json that cannot be read is a failed input naming it."""
    try:
        resolved = resolve.of_run(run_dir)
    except ReferenceError as err:
        return node_type, "; ".join(e for e in (node_type_error, str(err)) if e)
    if resolved is None or node_type not in ("", resolved.name):
        return node_type, node_type_error
    return resolved.name, node_type_error or resolved.error


def judge_run_dir(
    run_dir: Path,
    facts: dict[str, Any] | None,
    reference_dir: str | Path,
    node_type: str,
    suite: str,
    expected_gpus: int | None = None,
    textfile_dir: str | Path | None = None,
    facts_file: Path | None = None,
    node_type_error: str | None = None,
    report_error: str | None = None,
    nothing_selected: bool = False,
    node: str | None = None,
    commission: Path | None = None,
) -> tuple[verdict.Verdict, list[Path]]:
    """Judge ``run_dir`` (:func:`judge_run`) and write its verdict and metrics; returns the verdict and the files
    written.
    ``facts`` None: read ``facts_file`` (default: the run's node-facts.json). ``node_type_error``: why no node
    type could be resolved (the verdict then says so for every check); the run's node-type.json, where it wrote one,
    says both (:func:`run_node_type`). ``report_error``: why checks are missing
    from ReFrame's report, or why there is none, as the caller knows it (ReFrame did not start, or was stopped at
    the time limit); ``nothing_selected``: ReFrame ran and selected no check for this node, so it wrote no report
    and each check's own reason (no GPU, not selected) is given instead of "the report is missing". ``node``: the
    node's name where its facts may not say it (a Slurm node whose facts were not gathered). ``commission``: the
    commissioning run the own-baseline rule compares with (gpuaccept.judge.own_baseline; None: found beside)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise OutputError(f"{run_dir}: no such run directory (a run directory is made by the run, never here)")
    with locked(run_dir / LOCK_FILE):
        for name in (VERDICT_FILE, METRICS_FILE):
            clean_stale_temps(run_dir, name)
        # Load (the facts and ReFrame's report here, the rest in judge_run), validate and judge: judge_run.
        input_errors: list[str] = []
        if facts is None:
            facts, input_errors = load.read_facts(facts_file or run_dir / FACTS_FILE,
                                                  within=None if facts_file else run_dir)  # fmt: skip
        else:
            problem = load.facts_problem(facts)
            facts, input_errors = ({}, [f"the node facts: {problem}"]) if problem else (facts, [])
        report, load_error = None, None
        try:
            report = load.load_report(run_dir / REPORT_FILE, within=load.roots(run_dir))
        except load.ReportError as err:
            load_error = None if nothing_selected else str(err)
        node_type, node_type_error = run_node_type(run_dir, node_type, node_type_error)
        if node_type_error:
            input_errors.append(node_type_error)
        result = judge_run(
            run_dir,
            report,
            facts,
            reference_dir,
            node_type,
            suite,
            expected_gpus=expected_gpus,
            report_error=report_error or load_error,
            input_errors=input_errors,
            commission=commission,
        )
        result.run_dir = str(run_dir.resolve())
        if node:
            result.node = node
        if result.started_unix is None:
            result.finished_unix = dt.datetime.now(dt.UTC).timestamp()
        # Write: the verdict, then the metrics.
        written = [write_text_atomic(run_dir / VERDICT_FILE, json.dumps(result.to_json(), indent=2) + "\n")]
        written += exporter.write(result, run_dir, textfile_dir)
    return result, written
