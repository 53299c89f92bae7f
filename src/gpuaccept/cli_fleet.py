"""``gpuaccept fleet``, ``gpuaccept slurm-config`` and ``gpuaccept slurm-judge``: the fleet side of the command
(docs/fleet.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from gpuaccept.atomic import write_text_atomic
from gpuaccept.checks import SUITES
from gpuaccept.cli_common import default_reference_dir
from gpuaccept.layout import PROJECT_ROOT, VERDICT_FILE
from gpuaccept.probe import document
from gpuaccept.results import fleet, fleet_deviation, slurm

EXIT_REJECTED = 1


def cmd_fleet(args: argparse.Namespace) -> int:
    nodes = list(args.nodes or [])
    if args.inventory:
        inv = slurm.load_inventory(args.inventory)
        hosts = sorted((inv.get("_meta") or {}).get("hostvars") or {})
        if not hosts:
            raise fleet.FleetError(f"--inventory {args.inventory}: no hosts in the inventory")
        nodes += hosts
    entries = fleet.collect(args.results, args.suite, nodes)
    if not entries:
        raise fleet.FleetError(f"{args.results}: no {VERDICT_FILE} under <node>/<run>/ and no nodes expected")
    drifted, notes = fleet.drift(args.results, entries, args.reference_dir)
    medians = fleet_deviation.judge(args.results, entries, args.reference_dir)
    print(fleet.table(entries))
    print()
    print(fleet.drift_table(drifted, notes))
    print()
    print(fleet_deviation.table(medians))
    outliers = fleet_deviation.failed(medians)
    if args.output:
        doc = {**fleet.to_json(entries, drifted, notes), "fleet_rule": fleet_deviation.to_json(medians),
               "fleet_rule_nodes": outliers}  # fmt: skip
        doc["accepted"] = doc["accepted"] and not outliers
        write_text_atomic(args.output, json.dumps(doc, indent=2) + "\n")
        print(f"\nsummary: {args.output}")
    return 0 if fleet.all_accepted(entries, drifted) and not outliers else EXIT_REJECTED


def _partitions(args: argparse.Namespace) -> list[slurm.Partition]:
    try:
        return slurm.partitions(slurm.load_inventory(args.inventory), args.limit.split(",") if args.limit else None)
    except slurm.SlurmError as err:
        text = str(err)
        raise slurm.SlurmError(text if text.startswith(str(args.inventory)) else f"{args.inventory}: {text}") from None


def cmd_slurm_config(args: argparse.Namespace) -> int:
    parts = _partitions(args)
    venv = Path(sys.prefix)
    mkl = (venv / "lib" / "libmkl_rt.so.3").exists() and (venv / "include" / "mkl.h").exists()
    # The MKL subset of scripts/mkl-blas-subset.sh, where MKL's wheels cannot go.
    mkl_subset = (venv / "lib" / "libgpuaccept-mklblas.so").exists() and (venv / "include" / "mkl.h").exists()
    openblas = Path(args.openblas_inc, "cblas.h").exists() and Path(args.openblas_lib, "libopenblas.so").exists()
    build = {
        "cuda_arch": args.cuda_arch,
        "blas": "mkl" if mkl else ("mkl-subset" if mkl_subset else ("openblas" if openblas else "none")),
        "mklroot": str(venv),
        "openblas_inc": args.openblas_inc,
        "openblas_lib": args.openblas_lib,
        "git_revision": document.git_revision(PROJECT_ROOT),
    }
    config = slurm.site_config(
        parts, Path(args.reference_dir).resolve(), build, args.scheduler, args.launcher, args.nvcc, mpi=args.mpi
    )
    slurm.write_config(config, args.output, str(args.inventory))
    for p in parts:
        print(
            f"partition gpuaccept:{p.node_type}: sbatch {' '.join(p.access_options)}; {len(p.hosts)} node(s): "
            f"{', '.join(p.hosts)}"
        )
    print(f"wrote {args.output}")
    return 0


def cmd_slurm_judge(args: argparse.Namespace) -> int:
    from gpuaccept.judge.verdict import ReportError, load_report  # noqa: PLC0415

    parts = _partitions(args)
    try:
        report = load_report(args.report)
    except ReportError as err:
        raise slurm.SlurmError(str(err)) from None
    results = slurm.judge(report, parts, args.results, args.run_id, args.suite, args.reference_dir)
    slurm.announce(results, args.run_id, args.pushgateway, args.drain)
    return 0 if results and all(r.accepted for r in results) else EXIT_REJECTED


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept fleet`, `gpuaccept slurm-config` and `gpuaccept slurm-judge` (gpuaccept.cli_common says how
    subcommands are added)."""
    reference_dir_default = default_reference_dir()
    sp = sub.add_parser("fleet", help="one summary of the newest verdict of every node under a results directory")
    sp.add_argument("results", help="the results tree on the controller: <node>/<run>/verdict.json")
    sp.add_argument("--suite", choices=SUITES, help="only this suite")
    sp.add_argument("--nodes", nargs="*", help="nodes that must have a verdict (missing ones are not accepted)")
    sp.add_argument(
        "--inventory", help="expect every host of this inventory (a path, or ansible-inventory --list JSON)"
    )
    sp.add_argument("--output", help="also write the summary as JSON here (atomically)")
    sp.add_argument("--reference-dir", default=reference_dir_default,
                    help="the node types' pins (health: sections) come from here (default: %(default)s)")  # fmt: skip
    sp.set_defaults(func=cmd_fleet)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--inventory", required=True, help="an Ansible inventory, or its ansible-inventory --list JSON")
        sp.add_argument("--limit", help="only these hosts (comma-separated)")
        sp.add_argument("--reference-dir", default=reference_dir_default, help="default: %(default)s")

    sp = sub.add_parser("slurm-config", help="write the ReFrame configuration of a Slurm fleet from the inventory")
    common(sp)
    sp.add_argument("--output", required=True, help="the ReFrame configuration file to write")
    sp.add_argument(
        "--scheduler",
        default="squeue",
        choices=slurm.SCHEDULERS,
        help="ReFrame's Slurm backend: squeue (no accounting needed) or slurm (sacct)",
    )
    sp.add_argument("--launcher", default="local", choices=slurm.LAUNCHERS, help="srun for the multinode suite")
    sp.add_argument("--mpi", action="store_true", help="the partitions can run MPI checks (the multinode suite)")
    sp.add_argument(
        "--nvcc", default=os.environ.get("NVCC", "nvcc"), help="the CUDA compiler on the nodes (default: $NVCC or nvcc)"
    )
    sp.add_argument("--cuda-arch", default="", help="nvcc -gencode flags ('' = the Makefile's fat binary)")
    sp.add_argument(
        "--openblas-inc",
        default="/usr/include/x86_64-linux-gnu/openblas-pthread",
        help="OpenBLAS's cblas.h on the nodes, where MKL is not in the tool environment (default: %(default)s)",
    )
    sp.add_argument(
        "--openblas-lib",
        default="/usr/lib/x86_64-linux-gnu/openblas-pthread",
        help="OpenBLAS's libopenblas.so on the nodes (default: %(default)s)",
    )
    sp.set_defaults(func=cmd_slurm_config)

    sp = sub.add_parser("slurm-judge", help="one verdict per node from a reframe --distribute run; drain opt-in")
    common(sp)
    sp.add_argument("--report", required=True, help="ReFrame's JSON report of the distributed run")
    sp.add_argument("--results", required=True, help="results tree: writes <node>/<run id>/verdict.json")
    sp.add_argument("--run-id", required=True, help="the run's directory name under each node")
    sp.add_argument("--suite", required=True, choices=SUITES, help="the suite that ran")
    sp.add_argument("--drain", action="store_true",
                    help="drain every rejected node in Slurm (reason: gpuaccept: ...), resume the accepted ones "
                    "gpuaccept had drained, leave other drains")
    sp.add_argument("--pushgateway", help="also push each node's metrics to this Pushgateway URL")
    sp.set_defaults(func=cmd_slurm_judge)
