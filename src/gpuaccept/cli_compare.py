"""``gpuaccept compare`` and ``gpuaccept sensitivity``: judged runs set against their references, worst first,
and what the references catch when a healthy run's figures are made worse (docs/verdicts.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpuaccept.atomic import write_text_atomic
from gpuaccept.cli_common import (
    EXIT_REJECTED,
    InputError,
    add_reference_dir,
)
from gpuaccept.layout import VERDICT_FILE
from gpuaccept.results import compare, sensitivity


def cmd_sensitivity(args: argparse.Namespace) -> int:
    try:
        losses = [float(x) for x in args.loss.split(",")]
    except ValueError:
        raise InputError(f"--loss {args.loss!r}: fractions separated by commas, e.g. 0.05,0.10,0.20") from None
    if not losses or not all(0 < x < 1 for x in losses):
        raise InputError(f"--loss {args.loss!r}: each fraction between 0 and 1")
    run_dirs = [Path(p) for p in args.runs]
    for d in run_dirs:
        if not (d / VERDICT_FILE).is_file():
            raise InputError(f"{d}: no {VERDICT_FILE}: give run directories made by gpuaccept run")
    if args.references:
        return _sensitivity_references(run_dirs, Path(args.reference_dir), losses, args.json)
    figures, notes = sensitivity.measure(run_dirs, Path(args.reference_dir), losses)
    print(sensitivity.table(figures, losses))
    for note in notes:
        print(f"note: {note}")
    if args.json:
        write_text_atomic(args.json, json.dumps(sensitivity.to_json(figures, losses, notes), indent=2) + "\n")
    return 0 if figures else 1


def _sensitivity_references(runs: list[Path], reference_dir: Path, losses: list[float], out: str | None) -> int:
    """gpuaccept sensitivity --references: the band and the deviation rules together (results/sensitivity_refs)."""
    from gpuaccept.judge import deviation  # noqa: PLC0415
    from gpuaccept.results import deviation_noise, sensitivity_refs  # noqa: PLC0415

    thresholds = deviation.load(reference_dir)
    if thresholds.problem:
        raise InputError(thresholds.problem)
    healthy, notes = deviation_noise.healthy_runs(runs, reference_dir)
    rejected = sensitivity_refs.healthy_rejections(healthy, thresholds)
    cases = sensitivity_refs.measure(healthy, thresholds, losses)
    print(sensitivity_refs.table(cases, losses))
    print(f"{len(healthy)} healthy run(s); rejected by a deviation rule as recorded: {len(rejected)}")
    for line in [*rejected, *notes]:
        print(f"note: {line}")
    if out:
        doc = sensitivity_refs.to_json(cases, losses, [str(h.run) for h in healthy], rejected, notes)
        write_text_atomic(out, json.dumps(doc, indent=2) + "\n")
    return 0 if cases and not rejected else 1


def cmd_compare(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise InputError(f"--top {args.top}: give how many to list (0 lists them all)")
    found = compare.find_verdicts([Path(p) for p in args.results], every_run=args.every_run)
    devs = compare.deviations(found, args.reference_dir)
    if args.json:
        doc = {
            "schema": "gpuaccept.compare/1",
            "runs": [str(p) for p, _ in found],
            "deviations": [d.to_json() for d in devs],
        }
        write_text_atomic(args.json, json.dumps(doc, indent=2) + "\n")
    outside = [d for d in devs if d.outside]
    shown = devs if args.all else outside
    if args.top:
        shown = shown[: args.top]
    nodes = {(d.node, d.node_type) for d in devs}
    bad_nodes = {(d.node, d.node_type) for d in outside}
    if shown:
        print(compare.table(shown))
        print()
    print(
        f"{len(outside)} of {len(devs)} judged metrics outside their tolerance on {len(bad_nodes)} of "
        f"{len(nodes)} node(s) ({len(found)} run(s) against "
        f"{args.reference_dir or 'the references they were judged with'})"
    )
    inside = [d for d in devs if not d.outside]
    if inside and not args.all:
        d = inside[0]
        print(f"closest to its edge among the rest: {d.node} {d.check}.{d.metric} at {d.units:.2f} tolerances")
    return EXIT_REJECTED if outside else 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept compare` and `gpuaccept sensitivity`."""
    sp = sub.add_parser(
        "compare",
        help="compare the latest results of one node or a fleet with the references: outliers, worst first",
    )
    sp.add_argument(
        "--reference-dir",
        help="judge the runs again against the <node_type>.yaml files here (default: the verdicts as judged)",
    )
    sp.add_argument("results", nargs="+", help="verdict.json files, run directories or results trees")
    sp.add_argument("--every-run", action="store_true", help="every run, not only the newest per node")
    sp.add_argument("--all", action="store_true", help="list every judged metric, not only those outside")
    sp.add_argument("--top", type=int, default=0, help="list at most this many (default: all)")
    sp.add_argument("--json", help="also write every deviation to this file (atomically)")
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser(
        "sensitivity",
        help="what the references catch: healthy runs judged again with one gating figure at a time made worse",
    )
    add_reference_dir(sp)
    sp.add_argument("runs", nargs="+", help="run directories (each with verdict.json, reframe-report.json, facts)")
    sp.add_argument("--loss", default="0.05,0.10,0.20", help="fractions to make each figure worse (%(default)s)")
    sp.add_argument("--json", help="also write the table as JSON to this file (atomically)")
    sp.add_argument("--references", action="store_true",
                    help="the band and the siblings, fleet and own-baseline rules together, each loss on one GPU and "
                    "on the whole node (the runs given make the fleet; docs/verdicts.md)")  # fmt: skip
    sp.set_defaults(func=cmd_sensitivity)
