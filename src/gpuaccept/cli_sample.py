"""``gpuaccept sample``: a command run while gpuaccept.probe.power samples every GPU."""

from __future__ import annotations

import argparse
import sys

from gpuaccept import run
from gpuaccept.cli_common import (
    add_bench_output,
    add_sample_interval,
)
from gpuaccept.probe import power


def cmd_sample(args: argparse.Namespace) -> int:
    return power.run(args.cmd, args.output, args.interval, argv=["gpuaccept", *sys.argv[1:]], backend_name=args.backend)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept sample`."""
    sp = sub.add_parser(
        "sample",
        help="run a command while sampling every GPU's power, clocks, temperature and throttle reasons; "
        "exits with the command's exit status",
    )
    add_sample_interval(sp)
    add_bench_output(sp)
    sp.add_argument(
        "--backend", choices=power.BACKENDS, default="auto", help="how GPUs are read (default: NVML, else nvidia-smi)"
    )
    run.add_command_tail(
        sp, "cmd", "-- COMMAND [ARGS...]", "the command to sample (exit status 127 when it cannot be started)"
    )
    sp.set_defaults(func=cmd_sample)
