"""``gpuaccept health`` and ``gpuaccept powercheck``: probes of the node that say by their exit status whether it
passed (docs/checks/health.md, docs/exit-status.md)."""

from __future__ import annotations

import argparse
import sys

from gpuaccept import references
from gpuaccept.cli_common import (
    add_bench_output,
    add_reference_dir,
    add_sample_interval,
)
from gpuaccept.judge import (
    health_rules,
)
from gpuaccept.probe import health, powercheck


def cmd_health(args: argparse.Namespace) -> int:
    """Probe (gpuaccept.probe.health), then, with --node-type, the judge's health rules on what it recorded:
    exit 0 healthy, 2 unhealthy, 3 could not look (kernel log unreadable), 1 GPUs unreadable."""
    # The node type first: a bad reference directory or name is a bad command line, before anything runs.
    node_type = references.load_node_type(args.reference_dir, args.node_type) if args.node_type else None
    doc, status = health.run(args, ["gpuaccept", *sys.argv[1:]])
    if status != 0 or node_type is None:
        return status
    findings, notes, not_run = health_rules.assess(doc, node_type, args.expected_gpus)
    for f in findings:
        print(f"UNHEALTHY: {f.message}\n  fix: {f.fix}")
    for note in notes:
        print(f"note: {note}")
    if findings:
        return 2
    if not_run:
        print(f"NOT RUN: {not_run}")
        return 3
    return 0


def cmd_powercheck(args: argparse.Namespace) -> int:
    return powercheck.run(args, ["gpuaccept", *sys.argv[1:]])


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept health` and `gpuaccept powercheck`."""
    sp = sub.add_parser(
        "health",
        help="probe the GPUs' health (count, driver, PCIe under load, ECC, row remapping, XID, processes); "
        "exit 0 healthy, 2 unhealthy, 3 could not look, 1 GPUs unreadable",
    )
    add_reference_dir(sp)
    sp.add_argument(
        "--node-type", help="also judge what was recorded against this node type's health expectations and print it"
    )
    add_bench_output(sp)
    sp.add_argument("--expected-gpus", type=int, help="GPUs the inventory says this node has")
    sp.add_argument(
        "--xid-since", default="24h", help="XID lines since: boot, 24h/30m/2d ago, epoch seconds or ISO time"
    )
    sp.add_argument("--load-s", type=float, help="seconds of copy load while the PCIe link is read (default 1)")
    sp.add_argument("--quick", action="store_true", help="nightly: a 0.5 s load")
    sp.add_argument(
        "--exempt-pid", type=int, action="append", help="a compute process that is not foreign (repeatable)"
    )
    sp.set_defaults(func=cmd_health)

    sp = sub.add_parser(
        "powercheck",
        help="idle power, power under a sustained GEMM on every GPU, GFLOP/s per watt, throttling; "
        "exit 0 pass, 2 a rule failed, 1 could not measure",
    )
    sp.add_argument("--gemm", required=True, help="the gpuaccept-gemm executable")
    add_bench_output(sp)
    sp.add_argument("--precision", default="fp64", help="GEMM precision of the load (default %(default)s)")
    sp.add_argument("--idle-s", type=float, help="seconds of idle sampling (default 5, --quick 3)")
    sp.add_argument("--load-s", type=float, help="seconds of the sustained GEMM window (default 10, --quick 5)")
    add_sample_interval(sp)
    sp.add_argument("--quick", action="store_true", help="nightly: shorter idle and load phases")
    sp.set_defaults(func=cmd_powercheck)
