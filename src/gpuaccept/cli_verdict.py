"""``gpuaccept summarize`` and ``gpuaccept show``: judge a run directory, and print the verdict of a run, of
the newest runs under a results tree or of the runs kept in run archives (docs/verdicts.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpuaccept import manifest, redact, references, run
from gpuaccept.checks import SUITES
from gpuaccept.cli_common import (
    EXIT_REJECTED,
    InputError,
    add_reference_dir,
)
from gpuaccept.judge import (
    coverage,
    readback,
    summarize,
    verdict,
)
from gpuaccept.layout import METRICS_FILE, REPORT_FILE, VERDICT_FILE
from gpuaccept.probe import facts


def cmd_summarize(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    # A node type whose file lacks a check of the suite: refused before anything is judged (one that does not
    # exist, or cannot be read, is the verdict's to say).
    try:
        why = coverage.sections_error(references.load_node_type(args.reference_dir, args.node_type), args.suite)
    except references.ReferenceError:
        why = ""
    if why:
        raise references.ReferenceError(why)
    node_facts = None if args.facts else facts.gather()
    result, written = summarize.judge_run_dir(
        run_dir,
        node_facts,
        args.reference_dir,
        args.node_type,
        args.suite,
        expected_gpus=args.expected_gpus,
        textfile_dir=args.textfile_dir,
        facts_file=Path(args.facts) if args.facts else None,
        commission=Path(args.commission_run) if args.commission_run else None,
    )
    print(verdict.table(result))
    if args.pushgateway:
        from gpuaccept.judge import pushgateway  # noqa: PLC0415

        grouping = pushgateway.push(result, args.pushgateway, args.pushgateway_instance)
        print(f"\npushed:  {redact.url(args.pushgateway)} (job {pushgateway.JOB}, {grouping})")
    print(f"\nreport:  {run_dir / VERDICT_FILE}")
    print(f"reframe: {run_dir / REPORT_FILE}")
    for path in written[1:]:
        print(f"prom:    {path}")
    if result.accepted:
        return 0
    cannot = verdict.cannot_judge(result)
    if cannot:
        print(f"\n{result.node}: {cannot}")
        return run.EXIT_NOT_RUN
    return EXIT_REJECTED


def _newest_verdicts(results: Path, newer_than: float | None) -> list[Path]:
    """verdict.json files under a results tree, newest run per node first."""
    found = [p for p in results.rglob(VERDICT_FILE) if newer_than is None or p.stat().st_mtime > newer_than]
    newest: dict[Path, Path] = {}
    for p in sorted(found, key=lambda p: p.stat().st_mtime):
        newest[p.parent.parent] = p  # results/<node>/<run>/verdict.json: the last one per node wins
    return list(newest.values())


def _show_archives(path: Path) -> int:
    """gpuaccept show over a run archive or a folder of them: every verdict found in them, then what was found."""
    from gpuaccept.results import archive  # noqa: PLC0415

    try:
        folders, unpacked = archive.expand(path)
    except archive.ArchiveError as err:
        raise InputError(str(err)) from None
    found: dict[tuple[str, str], list[Path]] = {}  # (node, run) -> its verdicts: one run kept in two archives
    for p in sorted((p for f in folders for p in f.rglob(VERDICT_FILE)), key=lambda p: (p.parent.name, str(p))):
        found.setdefault((p.parent.parent.name, p.parent.name), []).append(p)
    what = f"{len(unpacked)} archive{'s' if len(unpacked) != 1 else ''} ({', '.join(unpacked)})"
    if not found:
        raise InputError(f"{path}: no {VERDICT_FILE} in it or in the {what} it holds: no judged run to show")
    top = folders[-1]  # the temporary folder the archives were unpacked into (removed at exit)
    status = max(cmd_show(argparse.Namespace(run_dir=str(ps[0]), newer_than=None,
                                             inside=(path, top) if ps[0].is_relative_to(top) else None))
                 for ps in found.values())  # fmt: skip
    twice = sum(1 for ps in found.values() if len(ps) > 1)
    again = f"; {twice} of them kept in more than one archive, shown once" if twice else ""
    print(f"\n{path}: {len(found)} judged run{'s' if len(found) != 1 else ''} found in {what}{again}")
    return status


def cmd_show(args: argparse.Namespace) -> int:
    path = Path(args.run_dir)
    if (path.is_file() and path.name.endswith((".tar", ".tar.gz", ".tgz"))) or (
        path.is_dir() and not args.newer_than and not any(path.rglob(VERDICT_FILE))
        and any(path.glob("*.tar*"))):  # fmt: skip
        return _show_archives(path)
    if path.is_dir() and not (path / VERDICT_FILE).exists():
        since = None
        if args.newer_than:
            try:
                since = Path(args.newer_than).stat().st_mtime
            except OSError as err:
                raise InputError(f"--newer-than {args.newer_than}: {err.strerror}") from None
        paths = _newest_verdicts(path, since)
        if not paths:
            newer = f" newer than {args.newer_than}" if args.newer_than else ""
            raise InputError(f"{path}: no {VERDICT_FILE}{newer} under it: no run there was judged (gpuaccept run "
                             "writes one when it judges a node)")  # fmt: skip
        return max(cmd_show(argparse.Namespace(run_dir=str(p), newer_than=None)) for p in paths)
    path = path / VERDICT_FILE if path.is_dir() else path
    doc = readback.read(path, InputError)
    try:  # accepted or not by its rows (verdict.decide), whatever its 'verdict' field says
        result = verdict.Verdict.from_json(doc)
    except ValueError as err:
        raise InputError(f"{path}: {err}") from None
    print(verdict.table(result))
    edited = "; ".join(x for x in (readback.disagreement(doc), manifest.unvouched(path.parent)) if x)
    if edited:
        print(f"\nwarning: {path}: {edited}")
        print(f"gpuaccept show: warning: {path}: {edited}", file=sys.stderr)
    inside = getattr(args, "inside", None)  # (archive or folder, unpacked top): the run as the archive holds it
    if inside:
        print(f"\nrun:     {inside[0]}: {path.parent.relative_to(inside[1])}")
        return 0 if result.accepted else EXIT_REJECTED
    print(f"\nreport:  {path}")
    if (path.parent / REPORT_FILE).exists():
        print(f"reframe: {path.parent / REPORT_FILE}")
    prom = path.parent / METRICS_FILE
    if prom.exists():
        print(f"prom:    {prom}")
    return 0 if result.accepted else EXIT_REJECTED


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept summarize` and `gpuaccept show`."""
    sp = sub.add_parser("summarize", help="judge a run directory: verdict.json, gpuaccept.prom, verdict table")
    add_reference_dir(sp)
    sp.add_argument("--run-dir", required=True, help="holds reframe-report.json; results are written here")
    sp.add_argument("--node-type", required=True, help="judge against reference_values/<NODE_TYPE>.yaml")
    sp.add_argument("--suite", required=True, choices=SUITES, help="the suite that ran (which checks it expects)")
    sp.add_argument("--commission-run", help="the node's accepted commissioning run to compare the run with (the "
                    "own-baseline rule; default: the newest accepted one beside --run-dir)")  # fmt: skip
    sp.add_argument("--facts", help="facts JSON (default: gather them now)")
    run.add_verdict_outputs(sp, "the node's hostname")
    sp.set_defaults(func=cmd_summarize)

    sp = sub.add_parser(
        "show",
        help="print the verdict table of a run directory, a verdict.json, or the newest runs under a results directory",
    )
    sp.add_argument("run_dir", help="a run directory, its verdict.json, or a results tree (newest run per node)")
    sp.add_argument("--newer-than", help="with a results directory: only runs newer than this file")
    sp.set_defaults(func=cmd_show)
