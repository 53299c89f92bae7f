"""What the subcommands of ``gpuaccept`` share: the exit codes, the bad-input error, the options several of them
take, and a strict JSON reader.

Every subcommand comes from one module's ``add_parser(sub)``: it adds its parser (or its few parsers) to ``sub``,
the command's subparsers, and sets its handler with ``set_defaults(func=...)``; gpuaccept.cli calls each in the
order ``gpuaccept --help`` lists them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gpuaccept import textinput
from gpuaccept.layout import BENCH_SCHEMA, REFERENCE_DIR

EXIT_REJECTED = 1
EXIT_INPUT = 4


class InputError(Exception):
    """Bad input: gpuaccept.cli.main prints the message on one line and exits EXIT_INPUT."""


def default_reference_dir() -> Path:
    return Path(os.environ.get("GPUACCEPT_REFERENCE_DIR") or REFERENCE_DIR)


def load_json(path: str, what: str) -> dict:
    """A JSON object from a file, read strictly (gpuaccept.textinput.load_json); InputError naming the file and what
    is wrong with it otherwise."""
    return textinput.load_json(Path(path), f"the {what}", InputError)


def add_reference_dir(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--reference-dir",
        default=default_reference_dir(),
        help="directory of <node_type>.yaml files (default: %(default)s)",
    )


def add_bench_output(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--output", required=True, help=f"the {BENCH_SCHEMA} document to write (atomically)")


def add_sample_interval(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--interval", type=float, default=0.1, help="seconds between samples (default %(default)s)")
