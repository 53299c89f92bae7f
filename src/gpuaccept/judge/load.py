"""The judge's first stage, load (docs/judge.md, "From a run directory to a verdict"): every file a verdict is
judged from, read once, into plain data the later stages read without touching the disk.

- ``read_facts``, ``load_report``, ``retries``: the run directory's node facts, ReFrame's report and its retries
  (each retry folder as ``gpuaccept run`` writes it, else a problem naming it).
- ``load_run``: one attempt's references (the node type bound to the node's PCIe link, the node's own baseline,
  the datasheet limits) and, for each test case of the suite that ReFrame ran, its benchmark document, the power
  sampler's document and, for a skipped one, why (from ReFrame's log).

Every JSON input is read strictly (gpuaccept.textinput: no key twice, no NaN or number out of range, no deep
nesting, a regular file never reached through a symbolic link) and, for a run directory, only from inside it
(:func:`roots`). A file that cannot be read is recorded with its problem (the file named), never raised: validation
(gpuaccept.judge.validate) and judging (gpuaccept.judge.verdict) decide what it means.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept.checks import CHECKS, in_suite
from gpuaccept.judge import rules
from gpuaccept.layout import FACTS_END_FILE, POWER_FILE, REFRAME_LOG, RETRIED_FILE, RETRY_PREFIX, SLURM_DIR
from gpuaccept.references import (
    NODE_BASELINE_FILE,
    NodeType,
    ReferenceError,
    bind_link,
    bounds,
    load_node_baseline,
    load_node_type,
    with_node_baseline,
)


class ReportError(Exception):
    """ReFrame's report is missing or not what ReFrame 4 writes."""


def roots(run_dir: str | Path) -> tuple[Path, Path]:
    """Where the files of a run directory may lie: in it, or, for a run judged from a Slurm run, in that run's
    work directory (``<results>/_slurm/<run id>``, beside ``<results>/<node>/<run id>``), where ReFrame wrote
    every node's documents."""
    run_dir = Path(run_dir)
    return run_dir, run_dir.parent.parent / SLURM_DIR / run_dir.name


def load_report(path: str | Path, within: Path | tuple[Path, ...] | None = None) -> dict[str, Any]:
    """ReFrame's JSON report, checked for the structure the judge reads (``session_info`` an object, ``runs`` a
    list of objects with ``testcases`` lists of objects); ReportError names the file and what is wrong.
    ``within``: the directories it must lie in (a run directory's :func:`roots`)."""
    path = Path(path)
    try:
        report = rules.load_json_input(path, "ReFrame's report", within=within)
    except rules.DocumentError as err:
        text = str(err)
        if text.endswith("is missing"):
            text += ": ReFrame did not run or did not finish"
        raise ReportError(text) from None
    if not isinstance(report.get("session_info"), dict):
        raise ReportError(f"{path}: not a ReFrame report: 'session_info' is not an object")
    runs = report.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise ReportError(f"{path}: not a ReFrame report: 'runs' is not a list of objects")
    for i, run in enumerate(runs):
        cases = run.get("testcases")
        if not isinstance(cases, list) or not all(isinstance(tc, dict) for tc in cases):
            raise ReportError(f"{path}: not a ReFrame report: runs[{i}].testcases is not a list of objects")
    return report


def read_facts(path: Path, within: Path | tuple[Path, ...] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The node facts of a run, or {} and the problem naming the file (``within``: as :func:`load_report`). A
    list of GPUs that is not a list of objects is a problem too: every rule reads the GPUs from it."""
    try:
        facts = rules.load_json_input(path, "the node facts", within=within)
    except rules.DocumentError as err:
        hint = "; `gpuaccept facts` did not run on the node, or its output was lost" if not path.exists() else ""
        return {}, [f"{err}{hint}"]
    problem = facts_problem(facts)
    if problem:
        return {}, [f"{path}: the node facts are not what `gpuaccept facts` writes: {problem}"]
    return facts, []


def facts_problem(facts: Any) -> str:
    """What makes node facts unreadable to the judge ("" when nothing): not an object, or ``gpus`` not a list of
    objects."""
    if not isinstance(facts, dict):
        return f"a JSON {type(facts).__name__}, expected an object"
    gpus = facts.get("gpus")
    if gpus is not None and (not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus)):
        return "'gpus' is not a list of objects"
    return ""


_RETRY_NAME = re.compile(rf"^{re.escape(RETRY_PREFIX)}[1-9][0-9]{{0,2}}$")


def retries(run_dir: Path) -> tuple[list[tuple[int, Path, list[str]]], list[str]]:
    """The retries a run made, in order: (attempt number, directory, the checks it measured again), from each
    ``retry-<k>/retried.json`` that ``gpuaccept run`` writes before it runs ReFrame there; and the problems of
    what is not such a retry (a folder or file named ``retry-*`` that gpuaccept run does not write, a link, a list
    of checks missing or not a list of distinct known checks, an attempt without the one before it), each naming
    it. The retries from the first such problem on are left out: the earlier attempt stands."""
    found: dict[int, Path] = {}
    problems = []
    for d in sorted(run_dir.glob(f"{RETRY_PREFIX}*")):
        if d.is_symlink():
            problems.append(f"{d}: a symbolic link (to {os.readlink(d)}): gpuaccept run writes its retry folders in "
                            "the run directory itself")  # fmt: skip
        elif not _RETRY_NAME.match(d.name):
            problems.append(f"{d}: not a retry gpuaccept run writes ({RETRY_PREFIX}<k>, k = 1, 2, ...)")
        elif not d.is_dir():
            problems.append(f"{d}: not a directory (gpuaccept run makes {RETRY_PREFIX}<k>/ for a retry)")
        else:
            found[int(d.name.removeprefix(RETRY_PREFIX))] = d
    out = []
    for k in sorted(found):
        d = found[k]
        if k != len(out) + 1:
            problems.append(f"{d}: attempt {k + 1} without attempt {k} ({RETRY_PREFIX}{k - 1}): gpuaccept run numbers "
                            "its retries 1, 2, ...")  # fmt: skip
            break
        try:
            checks = rules.load_json_input(d / RETRIED_FILE, "the list of retried checks", list, within=run_dir)
        except rules.DocumentError as err:
            problems.append(f"{err} (gpuaccept run writes it before it measures anything again)")
            break
        why = _retried_problem(checks)
        if why:
            problems.append(f"{d / RETRIED_FILE}: {why}")
            break
        out.append((k + 1, d, list(checks)))
    return out, problems


def _retried_problem(checks: list[Any]) -> str:
    if not checks:
        return "names no check: gpuaccept run measures again only the checks that failed out of band"
    unknown = [c for c in checks if not isinstance(c, str) or c not in CHECKS]
    if unknown:
        return f"{unknown[0]!r} is not a check gpuaccept knows"
    if len(set(checks)) != len(checks):
        return "names a check twice"
    return ""


@dataclass
class Document:
    """A document a test case left, as read: ``doc`` None and ``error`` (naming the file) when it could not be."""

    path: Path
    doc: dict[str, Any] | None = None
    error: str = ""


@dataclass
class Case:
    """One test case ReFrame ran of a check of the suite, with what it left."""

    check: str  # the check's key
    tc: dict[str, Any]  # ReFrame's record of it (result, fail_phase, fail_reason, variables...)
    skip_reason: str = ""  # a skipped test case: why (ReFrame's report, else its log)
    document: Document | None = None  # the check's document; None: ReFrame recorded it skipped or no result
    power: Document | None = None  # the power sampler's; None: not sampled, and none was written


@dataclass
class Run:
    """One attempt of a suite on a node: the inputs of its verdict. The caller gives the first fields;
    :func:`load_run` loads the others."""

    report: dict[str, Any] | None  # None: ReFrame left no report (report_error says why)
    facts: dict[str, Any]
    node_type_name: str
    suite: str
    expected_gpus: int | None = None  # the inventory's GPU count
    report_error: str | None = None
    input_errors: list[str] = field(default_factory=list)  # problems of the run's other inputs (the facts file)
    node_type: NodeType | None = None  # bound to the node's link, with its own baseline; None: no reference file
    reference_error: str = ""  # why there is no node type
    baseline_error: str = ""  # why the node's baseline (results/<node>/node-baseline.yaml) was not applied
    limits: bounds.Limits = field(default_factory=bounds.Limits)  # what no figure of this node can exceed
    limits_error: str = ""  # why only the signs bound the figures
    cases: list[Case] = field(default_factory=list)  # the suite's test cases, in the report's order
    facts_end: dict[str, Any] | None = None  # the node facts gathered after the suite; None: not gathered


def load_run(given: Run, reference_dir: str | Path, run_dir: str | Path | None = None) -> Run:
    """One attempt, loaded: ``given`` (its report, facts, node type name and suite, and what the caller knows of
    them) with the references of its node type under ``reference_dir`` and the documents the report's test cases
    of its suite left (under ``run_dir`` where the run directory was moved)."""
    run = dataclasses.replace(given, input_errors=list(given.input_errors))
    facts = run.facts
    try:
        run.node_type = load_node_type(reference_dir, run.node_type_name)
    except ReferenceError as err:
        run.reference_error = str(err)
    if run.node_type is not None:
        run.node_type = bind_link(run.node_type, facts)
        # results/<node>/node-baseline.yaml, beside the node's runs (a retry's directory is one level deeper).
        node_dir = Path(run_dir).parent if run_dir is not None else None
        if node_dir is not None and Path(run_dir).name.startswith(RETRY_PREFIX):
            node_dir = node_dir.parent
        baseline_path = node_dir / NODE_BASELINE_FILE if node_dir is not None else None
        if baseline_path is not None and baseline_path.exists():
            # The node's own host figures, recorded from its accepted runs (gpuaccept baseline --node-baseline).
            try:
                run.node_type = with_node_baseline(run.node_type, load_node_baseline(baseline_path))
            except ReferenceError as err:
                run.baseline_error = str(err)
    try:  # what no figure of this node can exceed: its GPU model's datasheet, its PCIe link (references/bounds.py)
        run.limits = bounds.node_limits(facts, reference_dir)
    except bounds.BoundsError as err:
        run.limits_error = str(err)  # the signs alone
    run.cases = _cases(run.report, run.suite, run_dir)
    if run_dir is not None:
        run.facts_end = _facts_end(Path(run_dir), run.input_errors)
    return run


def _facts_end(run_dir: Path, input_errors: list[str]) -> dict[str, Any] | None:
    """The node facts ``gpuaccept run`` gathered after the suite (in the run directory, not a retry's), or None
    where it gathered none; a file that is there but unreadable is an input error naming it."""
    if run_dir.name.startswith(RETRY_PREFIX):
        run_dir = run_dir.parent
    path = run_dir / FACTS_END_FILE
    if not os.path.lexists(path):  # a link is found, and refused when read
        return None
    facts, problems = read_facts(path, within=run_dir)
    input_errors.extend(problems)
    return facts if not problems else None


def _testcases(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every test case of every run the report records, each judged: ReFrame runs a test case again
    (``--max-retries``) only after it failed, and the checks fail in ReFrame only on a fault (a crash, a tool that
    said its answer was wrong), so an earlier failure is never replaced by a later pass (docs/judge.md, "Retries")."""
    cases = []
    for run in report.get("runs", []):
        cases.extend(tc for tc in run.get("testcases", []) if not tc.get("fixture"))
    return cases


def _cases(report: dict[str, Any] | None, suite: str, run_dir: str | Path | None) -> list[Case]:
    """The test cases of the suite's checks in the report, each with the files it left."""
    keys = {check.key for check in in_suite(suite)}
    moved: list[tuple[Path, Path]] = []
    session = (report or {}).get("session_info", {})
    for key, sub in (("prefix_output", "output"), ("prefix_stage", "stage")):
        prefix = session.get(key)
        if run_dir is not None and isinstance(prefix, str) and prefix:
            moved.append((Path(prefix), Path(run_dir) / "reframe" / sub))
    log: list[str] | None = None  # ReFrame's log, read at the first skipped test case that needs it
    cases = []
    for tc in _testcases(report) if report else []:
        key = tc.get("check_key")
        if not isinstance(key, str) or key not in keys:
            continue
        case = Case(key, tc)
        result = tc.get("result")
        if result == "skip":
            case.skip_reason = tc.get("fail_reason") or tc.get("not_run_reason") or ""
            if not case.skip_reason:
                log = _log_lines(run_dir) if log is None else log
                case.skip_reason = _skip_reason(tc, log)
        elif result in ("pass", "fail"):
            check = CHECKS[case.check]
            dirs = _output_dirs(tc, moved)
            within = roots(run_dir) if run_dir is not None else None
            case.document = _document(_find(dirs, check.result_file), within)
            # The power sampler's document: required of a check the table says is sampled, read wherever one was
            # written (any check can run under the sampler: -S sample_power=true).
            power_path = _find(dirs, POWER_FILE)
            if check.power_sampled or os.path.lexists(power_path):
                case.power = _document(power_path, within)
        cases.append(case)
    return cases


def _document(path: Path, within: tuple[Path, ...] | None) -> Document:
    try:
        return Document(path, rules.load_document(path, within))
    except rules.DocumentError as err:
        return Document(path, error=str(err))


def _output_dirs(tc: dict[str, Any], moved: list[tuple[Path, Path]]) -> list[Path]:
    """Where a test case's files are: where ReFrame kept them or, for a run directory that was moved (fetched to
    the controller, recorded as a test fixture), at the same place relative to it (tried first)."""
    out: list[Path] = []
    dirs = [d for d in (tc.get("outputdir"), tc.get("stagedir")) if isinstance(d, str) and d]
    for d in dirs:
        for old, new in moved:
            if d.startswith(str(old) + "/"):
                out.append(new / Path(d).relative_to(old))
    return out + [Path(d) for d in dirs]


def _find(dirs: list[Path], name: str) -> Path:
    """The first existing ``name`` among ``dirs``, else where it should have been (the first directory)."""
    for d in dirs:
        if os.path.lexists(d / name):  # a link is found, and refused when read
            return d / name
    return (dirs[0] if dirs else Path(".")) / name


# ReFrame's log line for a skipped test: "[ SKIP ] (1/2) <display name> /<hash> @<partition>+<env> [<reason>]"
_SKIP_LINE = re.compile(
    r"\bSKIP\s*(?:\x1b\[[0-9;]*m)?\s*\] \(\d+/\d+\) (?P<name>.+?) /(?P<hash>[0-9a-f]+) @\S+ \[(?P<why>.*)\]$"
)


def _log_lines(run_dir: str | Path | None) -> list[str]:
    """ReFrame's log (run_dir/reframe.log), as lines; none where there is no run directory or it is unreadable."""
    if run_dir is None:
        return []
    try:
        text = rules.read_text_input(Path(run_dir) / REFRAME_LOG, "ReFrame's log", within=roots(run_dir))
        return text.splitlines()
    except rules.DocumentError:
        return []


def _skip_reason(tc: dict[str, Any], log: list[str]) -> str:
    """Why ReFrame skipped a test: its JSON report (4.10) drops the reason, its log has it."""
    for line in log:
        m = _SKIP_LINE.search(line.rstrip())
        if m and m.group("hash") == tc.get("hashcode") and m.group("name") == tc.get("display_name"):
            return m.group("why")
    return ""
