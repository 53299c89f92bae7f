"""The ``gpuaccept`` command: node facts, node type detection, reference checks, verdicts, baselines.

Exit codes: 0 success (or node accepted), 1 node rejected, 2 usage error (an unknown option or a missing
argument), 3 cannot judge (``gpuaccept run``: no usable GPU, or the suite could not run to the end; a verdict
is written all the same), 4 bad input (one line on stderr names the path or value and what is wrong with it);
docs/exit-status.md. ``health`` says 2 for an unhealthy node and 3 when it could not look, ``powercheck`` 2 for a
failed verification, and ``sample`` exits with its command's status.
"""

from __future__ import annotations

import argparse
import sys

from gpuaccept import (
    __version__,
    across_run,
    annotate,
    cli_annotators,
    cli_baseline,
    cli_compare,
    cli_fleet,
    cli_node,
    cli_probes,
    cli_report,
    cli_sample,
    cli_verdict,
    healthcheck,
    helptext,
    references,
    run,
)
from gpuaccept.atomic import OutputError
from gpuaccept.cli_common import EXIT_INPUT, EXIT_REJECTED, InputError, default_reference_dir
from gpuaccept.probe import burnin, crosscheck, dcgm, peaks
from gpuaccept.results import health_expect

__all__ = ["EXIT_INPUT", "EXIT_REJECTED", "InputError", "main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command line: each line below is one module's ``add_parser(sub)``, which adds its subcommands' parsers
    and sets their handlers (gpuaccept.cli_common); the order is the order of ``gpuaccept --help``."""
    p = argparse.ArgumentParser(prog="gpuaccept", description=helptext.summary(__doc__))
    p.add_argument("--version", action="version", version=f"gpuaccept {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    cli_node.add_parser(sub)  # facts, detect, references
    cli_verdict.add_parser(sub)  # summarize, show
    cli_baseline.add_parser(sub)
    cli_sample.add_parser(sub)
    cli_compare.add_parser(sub)  # compare, sensitivity
    cli_report.add_parser(sub)
    cli_fleet.add_parser(sub)  # fleet, slurm-config, slurm-judge
    across_run.add_parser(sub)
    run.add_subparser(sub, default_reference_dir())
    crosscheck.add_parser(sub)
    dcgm.add_parser(sub)
    health_expect.add_parser(sub)
    cli_probes.add_parser(sub)  # health, powercheck
    burnin.add_parser(sub)
    healthcheck.add_parser(sub)
    cli_annotators.add_parser(sub)  # overlap-model, peaks
    annotate.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (InputError, run.RunError, references.ReferenceError, peaks.PeaksError, OutputError, ValueError) as err:
        print(f"gpuaccept {args.command}: {err}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:  # a path the modules did not check themselves: name it, no traceback
        where = f"{err.filename}: " if err.filename else ""
        print(f"gpuaccept {args.command}: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
