"""Judge one run directory: the one path from a run's files to ``verdict.json``, ``gpuaccept.prom`` (and
node_exporter's textfile) that ``gpuaccept summarize``, ``gpuaccept run``, the suite role and Slurm use.

Every input problem (ReFrame's report missing or malformed, the facts file unreadable, a benchmark document
missing or invalid) ends in a written REJECTED verdict that names the file and the problem, and refreshed
metrics; a run directory that does not exist is an error, never created. One writer at a time per run
directory (a lock file in it), stale temporary files of a killed writer removed first.

The stages in order (docs/judge.md, "From a run directory to a verdict"): load (gpuaccept.judge.load), validate
(gpuaccept.judge.validate), judge (gpuaccept.judge.verdict.judge, :func:`judge_run`), write
(:func:`judge_run_dir`).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from gpuaccept.atomic import OutputError, clean_stale_temps, locked, write_text_atomic
from gpuaccept.judge import exporter, load, validate, verdict
from gpuaccept.layout import FACTS_FILE, METRICS_FILE, REPORT_FILE, VERDICT_FILE

LOCK_FILE = ".gpuaccept.lock"


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
) -> verdict.Verdict:
    """The verdict of ``run_dir`` from its ReFrame ``report``, with the checks its retries measured again
    (``retry-<k>/``, load.retries) taken from the last attempt (verdict.merge_retry); writes nothing. The
    arguments are verdict.build's; a retry is judged with ``expected_gpus`` and ``adjust`` alone (its report is
    its own, the run's input problems are the run's). A retry that left no report is said on stderr and left out:
    the earlier attempt stands."""
    # Load: the run, then each retry with its own report.
    given = load.Run(report, facts, node_type, suite, expected_gpus, report_error, list(input_errors or []))
    first = load.load_run(given, reference_dir, run_dir)
    again: list[tuple[int, list[str], load.Run]] = []
    for attempt, retry_dir, checks in load.retries(run_dir):
        try:
            retry_report = load.load_report(retry_dir / REPORT_FILE)
        except load.ReportError as err:
            print(f"gpuaccept: attempt {attempt} of {', '.join(checks)} left no report: {err}", file=sys.stderr)
            continue
        retry = load.load_run(load.Run(retry_report, facts, node_type, suite, expected_gpus), reference_dir, retry_dir)
        again.append((attempt, checks, retry))
    # Validate and judge each attempt; the last attempt of a retried check is the one that counts.
    result = verdict.judge(first, validate.validate(first), adjust)
    for attempt, checks, retry in again:
        result = verdict.merge_retry(result, verdict.judge(retry, validate.validate(retry), adjust), checks, attempt)
    return result


def read_recorded(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(recorded verdict, facts, ReFrame's report) of a judged run directory, to judge it again: the facts from
    its node-facts.json, else those its verdict.json recorded. A missing or malformed verdict.json is the
    caller's error (OSError, ValueError); a report that cannot be read is load.ReportError."""
    recorded = json.loads((run_dir / VERDICT_FILE).read_text(encoding="utf-8"))
    facts_file = run_dir / FACTS_FILE
    facts = json.loads(facts_file.read_text(encoding="utf-8")) if facts_file.exists() else recorded.get("facts") or {}
    return recorded, facts, load.load_report(run_dir / REPORT_FILE)


def rejudge(
    run_dir: Path, reference_dir: str | Path, adjust: verdict.Adjust | None = None
) -> tuple[dict[str, Any], verdict.Verdict]:
    """(recorded verdict, verdict now): a judged run directory judged again (:func:`judge_run`) against
    ``reference_dir``, with the node type and suite it was judged with; writes nothing."""
    recorded, facts, report = read_recorded(run_dir)
    v = judge_run(run_dir, report, facts, reference_dir, recorded["node_type"], recorded["suite"], adjust=adjust)
    return recorded, v


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
) -> tuple[verdict.Verdict, list[Path]]:
    """Judge ``run_dir`` (:func:`judge_run`) and write its verdict and metrics; returns the verdict and the files
    written.
    ``facts`` None: read ``facts_file`` (default: the run's node-facts.json). ``node_type_error``: why no node
    type could be resolved (the verdict then says so for every check). ``report_error``: why checks are missing
    from ReFrame's report, or why there is none, as the caller knows it (ReFrame did not start, or was stopped at
    the time limit); ``nothing_selected``: ReFrame ran and selected no check for this node, so it wrote no report
    and each check's own reason (no GPU, not selected) is given instead of "the report is missing". ``node``: the
    node's name where its facts may not say it (a Slurm node whose facts were not gathered)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise OutputError(f"{run_dir}: no such run directory (a run directory is made by the run, never here)")
    with locked(run_dir / LOCK_FILE):
        for name in (VERDICT_FILE, METRICS_FILE):
            clean_stale_temps(run_dir, name)
        # Load (the facts and ReFrame's report here, the rest in judge_run), validate and judge: judge_run.
        input_errors: list[str] = []
        if facts is None:
            facts, input_errors = load.read_facts(facts_file or run_dir / FACTS_FILE)
        report, load_error = None, None
        try:
            report = load.load_report(run_dir / REPORT_FILE)
        except load.ReportError as err:
            load_error = None if nothing_selected else str(err)
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
