"""The docs' lists of checks and metrics, written from the checks' declarations (gpuaccept.checks).

Each list stands in a Markdown file between two marker lines, ``<!-- BEGIN <block>: ... -->`` and
``<!-- END <block> -->``; ``python -m gpuaccept.judge.checkdoc`` rewrites what stands between them, and
``--check`` only says which file differs from what the declarations give (exit 1), as the tests do:

- ``checks`` in docs/running.md: every check, what it measures, its suites, where it runs, its page;
- ``metrics`` in docs/metrics.md: every check's metrics, their units and Prometheus series, layers and owners.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from gpuaccept.checks import CHECKS, SAMPLER, Check
from gpuaccept.judge.exporter import UNITS
from gpuaccept.layout import PROJECT_ROOT


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _where(check: Check) -> str:
    runs_on = "GPU" if check.needs_gpu else "host"
    return f"{runs_on}, optional" if check.optional else runs_on


def checks_table() -> list[str]:
    """docs/running.md's list of checks."""
    return _table(
        ("check", "what it measures", "suites", "runs on", "docs"),
        [
            (f"`{c.key}`", c.title, ", ".join(c.suites), _where(c), f"docs/checks/{c.doc}" if c.doc else "")
            for c in CHECKS.values()
        ],
    )


def metrics_table() -> list[str]:
    """docs/metrics.md's list of every check's metrics."""
    rows = []
    for check in CHECKS.values():
        own = {m.pattern for m in check.metrics}
        sampled = tuple(m for m in SAMPLER if m.pattern not in own) if check.power_sampled else ()
        for metric in (*check.metrics, *sampled):
            suffix = UNITS.get(metric.unit, ("number", 1.0))[0]
            rows.append(
                (
                    f"`{check.key}`",
                    f"`{metric.pattern}`",
                    metric.unit,
                    f"`gpuaccept_result_{suffix}`",
                    metric.layer,
                    check.owner_of(metric),
                    "gated" if metric.gated else "reported",
                )
            )
    return _table(("check", "metric", "unit", "series", "layer", "owner", "gate"), rows)


#: block name -> (the file it stands in, relative to the project root; what writes it)
BLOCKS: dict[str, tuple[str, Callable[[], list[str]]]] = {
    "checks": ("docs/running.md", checks_table),
    "metrics": ("docs/metrics.md", metrics_table),
}


class BlockError(ValueError):
    """A file without its block's marker lines, or with them out of order."""


def rewrite(text: str, block: str, lines: list[str], where: str = "") -> str:
    """``text`` with what stands between ``block``'s marker lines replaced by ``lines``."""
    pattern = re.compile(
        rf"^(<!-- BEGIN {re.escape(block)}\b[^\n]*-->\n)(.*?)^(<!-- END {re.escape(block)} -->)$", re.M | re.S
    )
    found = pattern.search(text)
    if found is None:
        raise BlockError(f"{where or 'text'}: no '<!-- BEGIN {block}: ... -->' ... '<!-- END {block} -->' lines")
    return text[: found.start(2)] + "".join(f"{line}\n" for line in lines) + text[found.start(3) :]


def stale(root: Path = PROJECT_ROOT, write: bool = False) -> list[str]:
    """The files whose blocks differ from what the declarations give (rewritten when ``write``)."""
    differ = []
    for block, (name, render) in BLOCKS.items():
        path = root / name
        text = path.read_text()
        new = rewrite(text, block, render(), where=name)
        if new != text:
            differ.append(f"{name} (block {block!r})")
            if write:
                path.write_text(new)
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpuaccept.judge.checkdoc", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when a file differs")
    args = parser.parse_args(argv)
    differ = stale(write=not args.check)
    for name in differ:
        print(f"{'differs from the declarations' if args.check else 'rewritten'}: {name}")
    return 1 if differ and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
