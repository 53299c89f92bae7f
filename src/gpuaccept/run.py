"""``gpuaccept run``: the one way a suite runs on a node. It makes the run directory, records the node's
facts, resolves the node type once (its ``node-type.json``, which the checks and the judge read), runs ReFrame on
the suite's checks (its command line is built here and nowhere else) within a time limit, and judges the run
(:func:`gpuaccept.judge.summarize.judge_run_dir`).

The suite role, the nightly timer's runner and scripts/slurm-accept.sh (``--distribute``) all call it. A node
without a usable GPU or driver stops at once with one line saying so and what to do (exit 3, a verdict written
all the same), unless ``--host-only`` asks for the host checks alone or its node type expects no GPU. A node of
no known node type still runs what it can and gets a verdict that names what did not run and why; a node type
that does not exist (no reference file, and not ``<sku>_x<count>`` of a known GPU SKU) stops the run at once
(exit 4), listing the known ones.

Exit status (docs/exit-status.md): 0 accepted; 1 rejected (a check or the node failed); 3 cannot judge (no
usable GPU, ReFrame missing or stopped at the time limit, no report), with a verdict all the same; 4 bad input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept import helptext, layout, manifest, progress, redact, references, rfmconfig, textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.checks import SUITES
from gpuaccept.judge import coverage, summarize, verdict
from gpuaccept.layout import (
    CONFIG_FILE,
    FACTS_END_FILE,
    FACTS_FILE,
    NODE_TYPE_FILE,
    PROGRESS_FILE,
    PROJECT_ROOT,
    REFRAME_OUT,
    REPORT_FILE,
    RETRIED_FILE,
    RETRY_PREFIX,
    SLURM_DIR,
    VERDICT_FILE,
)
from gpuaccept.probe import burnin, dcgm, gpu_preflight
from gpuaccept.probe import facts as node_facts
from gpuaccept.references import resolve

EXIT_ACCEPTED, EXIT_REJECTED, EXIT_NOT_RUN, EXIT_INPUT = 0, 1, 3, 4
#: The run's exit status, beside its verdict (scripts/accept.sh reads it: "3 cannot judge" is not in verdict.json).
EXIT_STATUS_FILE = layout.EXIT_STATUS_FILE
EXIT_WORDS = {EXIT_ACCEPTED: "accepted", EXIT_REJECTED: "rejected", EXIT_NOT_RUN: "cannot judge",
              EXIT_INPUT: "bad input"}  # fmt: skip
CHECKS_DIR = PROJECT_ROOT / "reframe_checks"

#: A run's id, the name of its directory under results/<node>/: the UTC start time and the suite, and for a
#: Slurm run a ``-slurm`` suffix (``20261123T030000Z-nightly``, ``20261123T101500Z-commission-slurm``).
RUN_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")

#: ReFrame options each suite runs with unless told otherwise (``--no-suite-options``). The nightly suite runs
#: the checks' quick mode, with the gating figures measured as commissioning measures them, so that one band
#: judges both (docs/verdicts.md): the device-local copy's sweep to 1 GiB and the host<->GPU matrix at 256 MiB,
#: 7 trials of 5 ms (the quick mode's sweep of the host copies, which judges nothing, stops at 64 MiB: 4^k bytes,
#: the pinned one-way cases; docs/checks/bandwidth.md); GEMM over a 3 s sustained window (the quick mode's 1 s
#: read 3-5 % higher than the power cap holds), every GPU at once. The commission suite sweeps the host copies to
#: 1 GiB at 2^k bytes, the cases metrics come from alone (the pinned one-way cases and the device-local copy): the
#: pageable and round-trip sweeps, which judge nothing, and the 2^k +- 3 points made each GPU's host sweep last 24 s
#: instead of 1.9 s, one GPU after another (docs/checks/bandwidth.md). The evaluation suite keeps the whole sweep.
SUITE_OPTIONS: dict[str, list[str]] = {
    "nightly": [
        "-S", "mode=quick",
        "-S", "GpuBandwidth.bench_opts=--max-bytes,1GiB,--matrix-bytes,256MiB,--trials,7,--target-ms,5",
        "-S", "GpuGemm.bench_opts=--window-s,3",
    ],
    "commission": [
        "-S", "GpuBandwidth.bench_opts=--cases,metrics,--perturbation,0",
    ],
}  # fmt: skip
# DCGM's diagnostic level per suite (docs/checks/dcgm.md), from the one table that holds it.
for _suite, _level in dcgm.SUITE_LEVELS.items():
    SUITE_OPTIONS.setdefault(_suite, []).extend(["-S", f"DcgmDiag.level={_level}"])
#: How often a check that failed on figures outside their bands alone is measured again before the node is
#: rejected (docs/verdicts.md): a moment's dip is not a fault, and a pass that needed a retry stays visible.
RETRIES = 2
#: The time limit of the whole ReFrame run per suite, in seconds (the suite role's and timer's defaults).
TIMEOUT_S = {"nightly": 900}
DEFAULT_TIMEOUT_S = 3600
#: The burnin suite's time limit: the burn-in's length plus this (the health probe, ReFrame, the last turn).
BURNIN_MARGIN_S = 1800
#: After the time limit ReFrame gets SIGTERM (it cancels its jobs and exits), then SIGKILL this much later.
KILL_AFTER_S = 120


def burnin_minutes(args: argparse.Namespace) -> float | None:
    """The burn-in's length for the burnin suite: --burnin-minutes, else $GPUACCEPT_BURNIN_MINUTES, else 30; None
    for the other suites."""
    given = getattr(args, "burnin_minutes", None)
    if args.suite != "burnin":
        if given is not None:
            raise RunError(f"--burnin-minutes {given:g}: only the burnin suite has a length (--suite burnin)")
        return None
    try:
        if given is not None:
            return burnin.check_minutes(given, "--burnin-minutes")
        return burnin.check_minutes(burnin.default_minutes(), burnin.MINUTES_ENV)
    except ValueError as err:
        raise RunError(str(err)) from None


def suite_timeout_s(args: argparse.Namespace) -> float:
    """The ReFrame run's time limit: --timeout-s, else the suite's (the burnin suite's grows with its length)."""
    if args.timeout_s:
        return args.timeout_s
    minutes = burnin_minutes(args)
    if minutes is not None:
        return max(DEFAULT_TIMEOUT_S, minutes * 60 + BURNIN_MARGIN_S)
    return TIMEOUT_S.get(args.suite, DEFAULT_TIMEOUT_S)


def default_reframe() -> str:
    """The reframe beside this Python (the tool environment's), else the one on PATH."""
    beside = Path(sys.executable).parent / "reframe"
    return str(beside) if beside.exists() else (shutil.which("reframe") or str(beside))


class RunError(Exception):
    """Bad input to ``gpuaccept run`` (exit 4): the message names what was wrong."""


def new_run_id(suite: str, now: dt.datetime | None = None, suffix: str = "") -> str:
    now = now or dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{suite}{'-' + suffix if suffix else ''}"


def check_run_id(run_id: str) -> str:
    if not RUN_ID_RE.match(run_id):
        raise RunError(
            f"run id {run_id!r} is not of the form <UTC time>-<suite>, e.g. {new_run_id('nightly')} "
            f"(pattern {RUN_ID_RE.pattern})"
        )
    return run_id


def reframe_argv(
    reframe: str | Path,
    config: str | Path,
    suite: str,
    run_dir: str | Path,
    checks_dir: str | Path = CHECKS_DIR,
    repeat: int = 1,
    suite_options: bool = True,
    quick: bool = False,
    extra: list[str] | tuple[str, ...] = (),
    distribute: bool = False,
) -> list[str]:
    """ReFrame's command line for one suite. One test at a time (``--exec-policy serial``): ReFrame's default
    policy builds the next benchmarks while one runs, and a compiler on the cores slowed the host GEMM by a third
    (docs/evidence/2026-11-22-h100-integrated); a distributed run keeps ReFrame's asynchronous policy (one job
    per node at once)."""
    run_dir = Path(run_dir)
    # ReFrame runs in the run directory: a path given relative to where the operator typed it is made absolute
    # here, or ReFrame would look for it under the run directory.
    config, checks_dir = Path(config).resolve(), Path(checks_dir).resolve()
    argv = [str(reframe), "-C", str(config), "-c", str(checks_dir), "-R", "--tag", suite,
            "--prefix", str(run_dir / "reframe"), "--report-file", str(run_dir / REPORT_FILE),
            "--save-log-files", "--nocolor"]  # fmt: skip
    argv += ["--distribute=avail"] if distribute else ["--exec-policy", "serial"]
    if repeat > 1:
        argv += ["--repeat", str(repeat)]
    if suite_options:
        argv += SUITE_OPTIONS.get(suite, [])
    if quick and "mode=quick" not in argv:
        argv += ["-S", "mode=quick"]
    return [*argv, *extra, "-r"]


def check_node_type(requested: str, reference_dir: Path, suite: str = "") -> None:
    """A node type the operator names must exist (:func:`gpuaccept.references.node_type_exists`: a
    reference file, or ``<sku>_x<count>`` of a known GPU SKU) and have a section for every check ``suite`` expects
    (gpuaccept.judge.coverage.require_sections): else the run stops at once (exit 4)."""
    if requested in ("auto", ""):
        return
    if not references.node_type_exists(reference_dir, requested):
        raise RunError(f"{references.unknown_node_type(reference_dir, requested)} (or auto: detect it)")
    if suite:
        coverage.require_sections(reference_dir, requested, suite)


def expects_no_gpu(node_type: str, reference_dir: Path) -> bool:
    """Whether the node type's match rules say it has no GPU (a CPU-only node type, as CI's)."""
    if not node_type:
        return False
    try:
        return references.load_node_type(reference_dir, node_type).match.get("gpu_count") == 0
    except references.ReferenceError:
        return False


@dataclass
class ReframeOutcome:
    """How the ReFrame run ended: its exit status (None: it did not start), whether the time limit stopped it,
    and why there is no report when it left none."""

    returncode: int | None
    timed_out: bool = False
    report_error: str | None = None
    nothing_selected: bool = False


def run_reframe(
    argv: list[str],
    run_dir: Path,
    timeout_s: float,
    log: Path,
    expected: dict[str, float] | None = None,
    node_type_file: Path | None = None,
) -> ReframeOutcome:
    """Run ReFrame in ``run_dir`` (its reframe.log goes there) with its output in ``log``; SIGTERM at the
    time limit (ReFrame cancels its jobs), SIGKILL ``KILL_AFTER_S`` later. ``expected`` (seconds per test case):
    show each check's start and end as it runs (gpuaccept.progress), also in ``run_dir``/progress.log.
    ``node_type_file``: the run's node-type.json, which the checks read (``$GPUACCEPT_NODE_TYPE_FILE``) instead of
    resolving the node type again."""
    env = {**os.environ, "LC_ALL": "C.UTF-8", "RFM_REPORT_JUNIT": ""}
    env.pop(resolve.FILE_ENV, None)
    if node_type_file is not None:
        env[resolve.FILE_ENV] = str(Path(node_type_file).resolve())
    if expected is not None:
        with progress.Watcher(log, run_dir / PROGRESS_FILE, expected, lambda line: print(line, flush=True)):
            return run_reframe(argv, run_dir, timeout_s, log, node_type_file=node_type_file)
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ " + shlex.join(argv) + "\n")
        out.flush()
        try:
            proc = subprocess.Popen(argv, cwd=run_dir, stdout=out, stderr=subprocess.STDOUT, env=env)
        except OSError as err:
            out.write(f"cannot start ReFrame: {err}\n")
            return ReframeOutcome(None, report_error=f"ReFrame did not start ({argv[0]}: {err.strerror})")
        timed_out = False
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=KILL_AFTER_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
        out.write(f"reframe exit {rc}{' (stopped at the time limit)' if timed_out else ''}\n")
    outcome = ReframeOutcome(rc, timed_out)
    if timed_out:
        outcome.report_error = (
            f"the suite did not finish within its time limit ({timeout_s:g} s) and was stopped: look for the hung "
            f"check in {run_dir / 'reframe.log'}, or raise --timeout-s"
        )
    elif not (run_dir / REPORT_FILE).exists():
        text = log.read_text(encoding="utf-8", errors="replace")
        if rc == 0 or re.search(r"Running 0 check\(s\)", text):
            # ReFrame ran and selected nothing for this node: each check's own reason says why (no GPU...).
            outcome.nothing_selected = True
        else:
            tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:])
            outcome.report_error = f"ReFrame exited {rc} without a report (see {log}): {tail}"
    return outcome


def expected_times(run_dir: Path, args: argparse.Namespace) -> dict[str, float]:
    """What each check is expected to take (gpuaccept.progress): the node's newest earlier run of the suite, and the
    burn-in its asked length."""
    times = progress.earlier_times(run_dir, args.suite)
    minutes = burnin_minutes(args)
    if args.suite == "burnin" and minutes is not None:
        times["GpuBurnin"] = minutes * 60
    return times


def _load_facts(path: str | None) -> dict[str, Any]:
    if not path:
        return node_facts.gather()
    return textinput.load_json(Path(path), "the node facts", RunError)


def run_dir_for(args: argparse.Namespace, node: str) -> Path:
    if args.run_dir:
        run_dir = Path(args.run_dir)
        check_run_id(run_dir.name)
    else:
        run_id = check_run_id(args.run_id or new_run_id(args.suite))
        run_dir = Path(args.results or PROJECT_ROOT / "results") / node / run_id
    if run_dir.exists() and any(run_dir.iterdir()) and not (run_dir.is_dir() and _only_facts(run_dir)):
        raise RunError(f"{run_dir}: the run directory exists and is not empty: every run gets a new one")
    return run_dir


def _only_facts(run_dir: Path) -> bool:
    """A run directory that holds only the node's facts (gathered before, e.g. by srun on the node)."""
    return {p.name for p in run_dir.iterdir()} <= {FACTS_FILE}


def node_name(args: argparse.Namespace, facts: dict[str, Any]) -> str:
    """The node's name in results/<node>/ and in its verdict (the same): --node, else the short hostname."""
    return args.node or (facts.get("hostname") or "localhost").split(".")[0]


def _check_args(args: argparse.Namespace) -> Path:
    """The options of ``gpuaccept run`` checked before anything is made (RunError, exit 4); the reference directory."""
    if args.expected_gpus is not None and args.expected_gpus < 0:
        raise RunError(f"--expected-gpus {args.expected_gpus}: a GPU count is 0 or more")
    if args.repeat < 1:
        raise RunError(f"--repeat {args.repeat}: run the suite at least once")
    if args.retries < 0:
        raise RunError(f"--retries {args.retries}: 0 or more")
    reference_dir = Path(args.reference_dir)
    if not reference_dir.is_dir():
        raise RunError(f"--reference-dir {reference_dir}: not a directory")
    try:
        check_node_type(args.node_type, reference_dir, args.suite)
    except references.ReferenceError as err:
        raise RunError(f"--node-type: {err}") from None
    if args.reframe_config and not Path(args.reframe_config).is_file():
        raise RunError(f"--reframe-config {args.reframe_config}: no such file")
    return reference_dir


def _node_facts(args: argparse.Namespace) -> tuple[dict[str, Any], str, Path, bool]:
    """(facts, node, run directory, whether the facts were gathered here): the run directory made, the facts in it."""
    facts = _load_facts(args.facts)
    node = node_name(args, facts)
    run_dir = run_dir_for(args, node)
    run_dir.mkdir(parents=True, exist_ok=True)
    facts_file = run_dir / FACTS_FILE
    # Facts gathered here, on the node, now: gathered again after the suite (NVLink counters' growth). Facts given
    # with --facts, or gathered through srun before, may be another machine's view: none after the suite then.
    gathered_here = not args.facts and not facts_file.exists()
    if facts_file.exists() and not args.facts:
        facts = _load_facts(str(facts_file))  # gathered on the node before the run (e.g. through srun)
    else:
        write_text_atomic(facts_file, json.dumps(facts, indent=2, sort_keys=True) + "\n")
    return facts, node, run_dir, gathered_here


def resolve_once(
    args: argparse.Namespace, reference_dir: Path, facts: dict[str, Any], run_dir: Path
) -> resolve.Resolved:
    """The run's node type, resolved once (gpuaccept.references.resolve) and written to its node-type.json, which the
    checks and the judge read; a detected node type must cover the suite too (RunError, exit 4)."""
    node_type = resolve.resolve(args.node_type, reference_dir, facts)
    if node_type.warning:
        print(f"gpuaccept run: warning: {node_type.warning}", file=sys.stderr)
    resolve.write(run_dir, node_type)
    if node_type.name and args.node_type in ("auto", ""):  # detected: its file must cover the suite too
        try:
            coverage.require_sections(reference_dir, node_type.name, args.suite)
        except references.ReferenceError as err:
            raise RunError(f"--node-type auto: {err}") from None
    return node_type


def cmd_run(args: argparse.Namespace) -> int:
    reference_dir = _check_args(args)
    minutes = burnin_minutes(args)
    extra = [*(["-S", f"GpuBurnin.minutes={minutes:g}"] if minutes is not None else []), *args.reframe_options]
    if args.slurm_inventory:
        return run_slurm(args, extra)
    if args.distribute or args.drain:
        raise RunError("--distribute and --drain belong to a Slurm run: give --slurm-inventory")

    facts, node, run_dir, gathered_here = _node_facts(args)
    print(f"== {args.suite} suite on {node}, run {run_dir}")
    node_type = resolve_once(args, reference_dir, facts, run_dir)
    no_gpu = gpu_preflight.from_facts(facts)
    if no_gpu and not args.host_only and not expects_no_gpu(node_type.name, reference_dir):
        return stop_without_gpu(args, run_dir, facts, node, node_type, no_gpu)
    if no_gpu:
        print(f"   no NVIDIA GPU: {no_gpu} (host checks only: the GPU checks will not run)")
    print(f"   node type: {node_type.name or 'unknown (the checks that can run still run, unjudged)'}")

    config = Path(args.reframe_config) if args.reframe_config else run_dir / CONFIG_FILE
    reframe = args.reframe or default_reframe()
    type_file = run_dir / NODE_TYPE_FILE
    outcome: ReframeOutcome
    try:
        if not args.reframe_config:
            rfmconfig.write(config, facts, node_type.name, reference_dir, run_dir / FACTS_FILE, args.bench_dir,
                            source="gpuaccept run")  # fmt: skip
        argv = reframe_argv(reframe, config, args.suite, run_dir, args.checks_dir, args.repeat,
                            not args.no_suite_options, args.quick, extra)  # fmt: skip
        timeout_s = suite_timeout_s(args)
        print(f"   reframe (time limit {timeout_s:g} s), output in {run_dir / 'reframe.out'}")
        outcome = run_reframe(argv, run_dir, timeout_s, run_dir / REFRAME_OUT, expected_times(run_dir, args),
                              type_file)  # fmt: skip
        if gathered_here:
            record_end_facts(run_dir)
    except rfmconfig.ConfigError as err:
        outcome = ReframeOutcome(None, report_error=f"no ReFrame configuration: {err}")
    print(f"   reframe exit {outcome.returncode}" + (" (stopped at the time limit)" if outcome.timed_out else ""))
    print()

    manifest.write(run_dir)  # what the run wrote, before it is judged (re-judging checks it)
    result, written = summarize.judge_run_dir(
        run_dir,
        facts,
        reference_dir,
        node_type.name,
        args.suite,
        expected_gpus=args.expected_gpus,
        textfile_dir=args.textfile_dir,
        node_type_error=node_type.error,
        report_error=outcome.report_error,
        nothing_selected=outcome.nothing_selected,
        node=node,
    )
    result, written = retry_out_of_band(args, result, written, run_dir, facts, node_type, outcome,
                                        lambda d, more: reframe_argv(reframe, config, args.suite, d, args.checks_dir, 1,
                                                                     not args.no_suite_options, args.quick,
                                                                     [*extra, *more]),
                                        end_facts=gathered_here)  # fmt: skip
    return _show_verdict(args, result, written, run_dir, node, outcome)


def _show_verdict(args: argparse.Namespace, result: verdict.Verdict, written: list[Path], run_dir: Path, node: str,
                  outcome: ReframeOutcome) -> int:  # fmt: skip
    """The verdict's table and where it went (pushed to the Pushgateway where asked); the run's exit status,
    recorded beside it."""
    print(verdict.table(result))
    print(f"\nreport:  {run_dir / VERDICT_FILE}")
    report = run_dir / REPORT_FILE
    print(f"reframe: {report}" + ("" if report.exists() else " (none)"))
    for path in written[1:]:
        print(f"prom:    {path}")
    if args.pushgateway:  # after the table: a failed push (an error) leaves the verdict shown and written
        from gpuaccept.judge import pushgateway  # noqa: PLC0415

        grouping = pushgateway.push(result, args.pushgateway, args.pushgateway_instance or node)
        print(f"pushed:  {redact.url(args.pushgateway)} (job {pushgateway.JOB}, {grouping})")
    status = exit_status(result, outcome)
    if status == EXIT_NOT_RUN and verdict.cannot_judge(result):
        print(f"cannot judge {node}: {verdict.cannot_judge(result).removeprefix(verdict.CANNOT_JUDGE)}")
    return record_exit(run_dir, status)


def record_end_facts(run_dir: Path) -> None:
    """The node's facts again, after the suite (``node-facts-end.json``): the judge compares each NVLink link's
    state and error counters, and each GPU's PCIe replay and AER counters, with those before it
    (gpuaccept.judge.nvlink_rules, pcie_rules)."""
    write_text_atomic(run_dir / FACTS_END_FILE, json.dumps(node_facts.gather(), indent=2, sort_keys=True) + "\n")


def record_exit(run_dir: Path, status: int) -> int:
    """Write the run's exit status beside its verdict ("3 cannot judge") and return it."""
    write_text_atomic(run_dir / EXIT_STATUS_FILE, f"{status} {EXIT_WORDS.get(status, '')}\n")
    return status


def stop_without_gpu(
    args, run_dir: Path, facts: dict[str, Any], node: str, node_type: resolve.Resolved, why: str
) -> int:
    """No usable GPU or driver: one line saying what is missing and what to do, and a verdict that says the same
    (for the metrics: a node that lost its GPUs shows as not accepted), without running anything; exit 3."""
    line = gpu_preflight.no_gpu_line(node, why)
    print(line)
    manifest.write(run_dir)
    _, written = summarize.judge_run_dir(
        run_dir, facts, Path(args.reference_dir), node_type.name, args.suite, expected_gpus=args.expected_gpus,
        textfile_dir=args.textfile_dir, node_type_error=node_type.error, node=node,
        report_error=f"{line} (the host checks run only with --host-only)",
    )  # fmt: skip
    print(f"cannot judge {node}: verdict {written[0]} (gpuaccept show {run_dir})")
    return record_exit(run_dir, EXIT_NOT_RUN)


def _test_names(run_dir: Path, checks: list[str]) -> list[str]:
    """The ReFrame test names (display names' first word) that ran ``checks`` in a run's report."""
    try:
        report = verdict.load_report(run_dir / REPORT_FILE)
    except verdict.ReportError:
        return []
    names = {
        str(tc.get("display_name") or tc.get("name") or "").split(" ")[0]
        for run in report["runs"]
        for tc in run["testcases"]
        if tc.get("check_key") in checks and not tc.get("fixture")
    }
    return sorted(n for n in names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n))


def retry_out_of_band(args, result, written, run_dir, facts, node_type, outcome, argv_for, end_facts=False):
    """A figure outside its band is measured again before the node is rejected: each check that failed on
    figures alone (verdict.out_of_band_checks) runs again, alone, up to ``--retries`` times, each attempt in
    ``<run>/retry-<k>/``; the judge takes the last attempt and marks a pass that needed one (a warning in the
    table, ``gpuaccept_check_attempts`` in Prometheus). A check that failed for any other reason is not retried.
    ``end_facts``: gather the node's facts after each attempt (the NVLink counters' growth covers the retries)."""
    timeout_s = suite_timeout_s(args)
    for k in range(1, args.retries + 1):
        checks = verdict.out_of_band_checks(result)
        if not checks or outcome.timed_out or outcome.returncode is None:
            break
        names = _test_names(run_dir if k == 1 else run_dir / f"{RETRY_PREFIX}{k - 1}", checks)
        if not names:
            break
        retry_dir = run_dir / f"{RETRY_PREFIX}{k}"
        retry_dir.mkdir()
        write_text_atomic(retry_dir / RETRIED_FILE, json.dumps(checks) + "\n")
        print(f"   {', '.join(checks)}: a figure outside its band; measuring again (attempt {k + 1} of "
              f"{args.retries + 1}, {retry_dir})")  # fmt: skip
        pattern = f"^({'|'.join(names)})( |$)"
        run_reframe(argv_for(retry_dir, ["-n", pattern]), retry_dir, timeout_s, retry_dir / REFRAME_OUT,
                    expected_times(run_dir, args), run_dir / NODE_TYPE_FILE)  # fmt: skip
        if end_facts:
            record_end_facts(run_dir)
        manifest.write(run_dir)  # the run's files with this retry's
        result, written = summarize.judge_run_dir(
            run_dir, facts, args.reference_dir, node_type.name, args.suite, expected_gpus=args.expected_gpus,
            textfile_dir=args.textfile_dir, node_type_error=node_type.error, report_error=outcome.report_error,
            nothing_selected=outcome.nothing_selected, node=node_name(args, facts),
        )  # fmt: skip
    return result, written


def run_slurm(args: argparse.Namespace, extra: list[str]) -> int:
    """A Slurm run from a login node (scripts/slurm-accept.sh): ReFrame with the fleet's configuration
    (``gpuaccept slurm-config``), one job per node with ``--distribute``, in the work directory
    ``<results>/_slurm/<run id>``; then one verdict per inventory node in ``<results>/<node>/<run id>/``, whose
    ``node-facts.json`` was gathered on the node before (srun)."""
    from gpuaccept.results import slurm  # noqa: PLC0415

    if not args.run_dir or not args.reframe_config:
        raise RunError("a Slurm run needs --run-dir <results>/_slurm/<run id> and --reframe-config (slurm-config's)")
    work = Path(args.run_dir)
    run_id = check_run_id(work.name)
    if work.parent.name != SLURM_DIR:
        raise RunError(f"--run-dir {work}: a Slurm run's work directory is <results>/_slurm/<run id>")
    results = work.parent.parent
    try:
        parts = slurm.partitions(slurm.load_inventory(args.slurm_inventory))
    except slurm.SlurmError as err:
        raise RunError(str(err)) from None
    work.mkdir(parents=True, exist_ok=True)
    reframe = args.reframe or default_reframe()
    argv = reframe_argv(reframe, args.reframe_config, args.suite, work, args.checks_dir, args.repeat,
                        not args.no_suite_options, args.quick, extra, distribute=args.distribute)  # fmt: skip
    timeout_s = suite_timeout_s(args)
    print(f"== {args.suite} suite through Slurm{', one job per node' if args.distribute else ''}, run {run_id}")
    outcome = run_reframe(argv, work, timeout_s, work / REFRAME_OUT)
    print(f"   reframe exit {outcome.returncode}" + (" (stopped at the time limit)" if outcome.timed_out else ""))
    manifest.write(work)  # every node's documents, as ReFrame left them (each node's run directory gets its own)
    try:
        report = verdict.load_report(work / REPORT_FILE)
    except verdict.ReportError as err:
        print(f"gpuaccept run: no verdicts: {outcome.report_error or err}", file=sys.stderr)
        return EXIT_NOT_RUN
    try:
        judged = slurm.judge(report, parts, results, run_id, args.suite, args.reference_dir)
    except slurm.SlurmError as err:
        raise RunError(str(err)) from None
    slurm.announce(judged, run_id, args.pushgateway, args.drain)
    if judged and all(r.accepted for r in judged):
        return EXIT_ACCEPTED
    return EXIT_NOT_RUN if outcome.timed_out else EXIT_REJECTED


def exit_status(result: verdict.Verdict, outcome: ReframeOutcome) -> int:
    """0 accepted; 3 cannot judge (the suite did not run to its end, or nothing but a missing datasheet keeps the
    node from being judged: verdict.cannot_judge); 1 rejected."""
    if result.accepted:
        return EXIT_ACCEPTED
    if outcome.returncode is None or outcome.timed_out or verdict.cannot_judge(result):
        return EXIT_NOT_RUN
    return EXIT_REJECTED


class _AfterDashes(argparse.Action):
    """Stores the rest of the command line without the ``--`` that set it apart."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        values = list(values)
        setattr(namespace, self.dest, values[1:] if values[:1] == ["--"] else values)


def add_command_tail(sp: argparse.ArgumentParser, dest: str, metavar: str, help: str) -> None:
    """The positional ``dest``: every argument after ``--`` (a command to run, more options to pass on), as a
    list without the ``--``."""
    sp.add_argument(dest, nargs=argparse.REMAINDER, action=_AfterDashes, metavar=metavar, help=help)


def add_verdict_outputs(sp: argparse.ArgumentParser, instance_default: str) -> None:
    """The options ``run`` and ``summarize`` share: the GPU count expected and where the metrics go besides the run
    directory; ``instance_default`` says what the push's instance label is without ``--pushgateway-instance``."""
    sp.add_argument("--expected-gpus", type=int, help="GPUs the inventory says this node has")
    sp.add_argument("--textfile-dir", help="also write gpuaccept_<suite>.prom here (node_exporter's directory)")
    sp.add_argument(
        "--pushgateway",
        default=os.environ.get("GPUACCEPT_PUSHGATEWAY") or None,
        help="also push the metrics to this Pushgateway URL (nodes without node_exporter); default "
        "$GPUACCEPT_PUSHGATEWAY, which keeps a URL with credentials off the command line",
    )
    sp.add_argument("--pushgateway-instance", help=f"the instance label of the push (default: {instance_default})")


def add_subparser(sub: argparse._SubParsersAction, reference_dir: Path) -> None:
    sp = sub.add_parser(
        "run",
        help="run a suite on this node: run directory, node facts, node type, ReFrame (time-limited), verdict; "
        "exit 0 accepted, 1 rejected, 3 could not run, 4 bad input",
        description=helptext.summary(__doc__),
    )
    sp.add_argument("--suite", required=True, choices=SUITES, help="the suite to run (its checks, tags and options)")
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--run-dir", help="the run directory to make (its name is the run id)")
    where.add_argument("--results", help="make the run in RESULTS/<node>/<run id> (default: results/ of the project)")
    sp.add_argument("--run-id", help=f"the run's id with --results (default: <UTC time>-<suite>; {RUN_ID_RE.pattern})")
    sp.add_argument("--node", help="the node's name in the results tree (default: its short hostname)")
    sp.add_argument("--node-type", default="auto", help="the node type to judge against, or auto (default); a "
                    "name without a reference file stops the run at once (exit 4)")  # fmt: skip
    sp.add_argument("--reference-dir", default=reference_dir, help="directory of <node_type>.yaml (%(default)s)")
    sp.add_argument("--facts", help="the node's facts JSON (default: gather them now)")
    sp.add_argument("--host-only", action="store_true", help="run without a usable GPU: only the host checks can "
                    "run then (default: a node without one stops at once, exit 3, unless its node type expects none)")
    add_verdict_outputs(sp, "the node's name")
    sp.add_argument(
        "--reframe-config",
        help="the ReFrame configuration (the gpuaccept_reframe role's); default: written into the run directory "
        "by gpuaccept.rfmconfig (gpuaccept reframe-config)",
    )
    sp.add_argument("--bench-dir", help=f"prebuilt benchmarks, for a generated configuration ({rfmconfig.BENCH_DIR})")
    sp.add_argument("--checks-dir", default=CHECKS_DIR, help="the ReFrame checks (%(default)s)")
    sp.add_argument("--reframe", help="the reframe command (default: the one beside this Python, else on PATH)")
    sp.add_argument("--timeout-s", type=float, help=f"time limit of ReFrame's run (nightly {TIMEOUT_S['nightly']}, "
                    f"burnin its length + {BURNIN_MARGIN_S}, else {DEFAULT_TIMEOUT_S})")  # fmt: skip
    sp.add_argument("--burnin-minutes", type=float, help=f"the burnin suite's length in minutes "
                    f"({burnin.MIN_MINUTES:g}-{burnin.MAX_MINUTES:g}; default ${burnin.MINUTES_ENV}, else "
                    f"{burnin.DEFAULT_MINUTES:g}): -S GpuBurnin.minutes")  # fmt: skip
    sp.add_argument("--repeat", type=int, default=1, help="run the suite this many times (ReFrame --repeat)")
    sp.add_argument("--retries", type=int, default=RETRIES, help="measure a check whose figures fell outside their "
                    "bands again, alone, up to this many times before rejecting the node (default %(default)s; "
                    "0: never)")  # fmt: skip
    sp.add_argument("--quick", action="store_true", help="the checks' quick mode (-S mode=quick; nightly's default)")
    sp.add_argument("--no-suite-options", action="store_true", help="leave out the suite's own ReFrame options "
                    f"({', '.join(f'{k}: {shlex.join(v)}' for k, v in SUITE_OPTIONS.items())})")  # fmt: skip
    slurm = sp.add_argument_group("a Slurm run from a login node (scripts/slurm-accept.sh, docs/fleet.md)")
    slurm.add_argument("--slurm-inventory", help="judge each node of this inventory (ansible-inventory --list JSON)")
    slurm.add_argument("--distribute", action="store_true", help="one job per node (reframe --distribute=avail)")
    slurm.add_argument("--drain", action="store_true",
                       help="drain the nodes that failed (reason: gpuaccept: ...), resume the accepted ones gpuaccept "
                       "had drained")
    add_command_tail(sp, "reframe_options", "-- REFRAME OPTIONS",
                     "more ReFrame options after --, added to the suite's (e.g. -- -n '^GpuGemm$')")
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser(
        "reframe-config",
        help="write this node's ReFrame configuration as the gpuaccept_reframe role does (no Ansible)",
    )
    sp.add_argument("--output", required=True, help="the ReFrame configuration file to write (atomically)")
    sp.add_argument("--node-type", default="auto", help="the node type, or auto (default: detect it)")
    sp.add_argument("--reference-dir", default=reference_dir, help="directory of <node_type>.yaml (%(default)s)")
    sp.add_argument("--facts", help="the node's facts JSON (default: gather them now, and write them beside)")
    sp.add_argument("--bench-dir", default=rfmconfig.BENCH_DIR, help="prebuilt benchmarks (%(default)s)")
    sp.add_argument("--nvcc", help=f"the CUDA compiler (default: {rfmconfig.CUDA_NVCC} if present, else nvcc)")
    sp.set_defaults(func=cmd_reframe_config)


def cmd_reframe_config(args: argparse.Namespace) -> int:
    facts = _load_facts(args.facts)
    out = Path(args.output)
    facts_file = Path(args.facts) if args.facts else out.with_name(FACTS_FILE)
    if not args.facts:
        write_text_atomic(facts_file, json.dumps(facts, indent=2, sort_keys=True) + "\n")
    node_type = resolve.resolve(args.node_type, Path(args.reference_dir), facts)
    if node_type.warning:
        print(f"gpuaccept reframe-config: warning: {node_type.warning}", file=sys.stderr)
    if node_type.error:
        print(f"gpuaccept reframe-config: warning: {node_type.error}", file=sys.stderr)
    try:
        rfmconfig.write(out, facts, node_type.name, args.reference_dir, facts_file, args.bench_dir, args.nvcc)
    except rfmconfig.ConfigError as err:
        raise RunError(str(err)) from None
    print(f"wrote {out} (node type {node_type.name or 'unknown'}, {len(facts.get('gpus') or [])} GPUs)")
    return 0
