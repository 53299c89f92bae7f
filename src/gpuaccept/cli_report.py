"""``gpuaccept report``: one self-contained HTML evaluation report from run directories (docs/reports.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuaccept.atomic import write_text_atomic
from gpuaccept.cli_common import (
    InputError,
    add_reference_dir,
)


def _archives(names: list[str]) -> str:
    """', from N archive(s): a, b' where a report column's paths were run archives; '' otherwise."""
    return f", from {len(names)} archive{'s' if len(names) != 1 else ''}: {', '.join(names)}" if names else ""


def _name_nodes(groups: list, names: list[str]) -> None:
    """gpuaccept report --node-name [LABEL=]NAME: the node of column LABEL (of every column without LABEL=) as the
    operator names it."""
    for given in names:
        label, sep, name = given.rpartition("=")
        if not name.strip():
            raise InputError(f"--node-name {given!r}: no name given ([LABEL=]NAME)")
        named = [g for g in groups if not sep or g.label == label]
        if not named:
            raise InputError(f"--node-name {given!r}: no input is labelled {label!r} "
                             f"(the labels: {', '.join(g.label for g in groups)})")  # fmt: skip
        for g in named:
            g.node_name = name.strip()


def cmd_report(args: argparse.Namespace) -> int:
    try:
        from gpuaccept.results import report  # noqa: PLC0415 (matplotlib is optional: requirements/report.txt)

        report._pyplot()
    except ImportError as err:
        raise InputError(f"the report needs matplotlib ({err}): pip install -r requirements/report.txt") from None
    if args.pdf and not report.chromium():
        raise InputError("--pdf prints with headless Chromium, and none is on PATH: apt-get install chromium (Debian's "
                         "package; or name a Chromium with GPUACCEPT_CHROMIUM)")  # fmt: skip
    groups = [report.load_group(spec) for spec in args.inputs]
    _name_nodes(groups, args.node_name)
    from gpuaccept.results import across_heatmap  # noqa: PLC0415 (matplotlib, as above)

    across = [(path, across_heatmap.load(Path(path))) for path in args.across or []]
    text = report.build(groups, args.title, args.baseline, args.generated, Path(args.reference_dir), across)
    write_text_atomic(args.output, text)
    if args.pdf:
        report.print_pdf(Path(args.output), Path(args.pdf))
        print(f"wrote {args.pdf} (printed by headless Chromium)")
    inputs = ", ".join(f"{g.label} ({len(g.docs)} documents, {len(g.verdicts)} verdicts{_archives(g.archives)})"
                       for g in groups)  # fmt: skip
    print(f"wrote {args.output} ({len(text) // 1024} KiB): {inputs}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept report`."""
    sp = sub.add_parser("report", help="one self-contained HTML evaluation report from run directories")
    sp.add_argument(
        "inputs",
        nargs="+",
        metavar="[LABEL=]PATH[,PATH...]",
        help="runs of one node type or vendor per argument: run directories, results trees, document folders, "
        "run archives (.tar, .tar.gz) or folders of them",
    )
    sp.add_argument("--output", required=True, help="the HTML file to write (atomically)")
    sp.add_argument("--node-name", action="append", default=[], metavar="[LABEL=]NAME",
                    help="the node's name as the report prints it, for the column LABEL (every column without "
                    "LABEL=); default: the inventory's name, or the host name in the runs' facts where that is "
                    "localhost")  # fmt: skip
    sp.add_argument("--title", default="GPU node evaluation", help="the report's title (default: %(default)s)")
    sp.add_argument("--baseline", help="the label ratios are taken against (default: the first input)")
    sp.add_argument("--generated", help="the date printed as when the report was made (default: now)")
    sp.add_argument("--pdf", help="also print the report to this PDF with headless Chromium (Debian: chromium)")
    sp.add_argument("--across", action="append", help="a gpuaccept across summary (across.json) to show, its pair "
                    "heat map and each node's verdict (repeatable)")  # fmt: skip
    add_reference_dir(sp)
    sp.set_defaults(func=cmd_report)
