"""The command lines that start one round of gpuaccept-nccl across nodes (docs/checks/across-nodes.md): pure
functions of the round's groups, the launcher and the tool, so that they are tested without running anything.

A round's groups run at once in one launch: its hosts are listed group after group, ``ranks_per_node`` ranks each
(block placement), so each group is a contiguous range of world ranks and the tool's ``--comm groups:A-B,C-D``
names them. Launchers:

- ``mpirun``: Open MPI with a hostfile of the round (``HOST slots=R``), ranks by slot in the file's order.
- ``srun``: inside a Slurm allocation; ``--distribution=arbitrary`` with ``SLURM_HOSTFILE`` (one line per task)
  fixes which node each rank lands on.
- ``emulate``: every rank on this machine, each node's ranks an emulated host of their own (gpuaccept.nccl_emulate:
  its own ``NCCL_HOSTID``, NCCL's sockets over loopback as the only path, rank r on GPU r mod ``gpus``). The document
  names the hosts ``emuhost<i>``, the round's i-th node (``Launch.aliases``). What it measures is loopback TCP and
  the CPU driving it, not a network.

Rank 0 listens for the others at ``GPUACCEPT_BOOTSTRAP`` (HOST:PORT), set in every rank's environment.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

LAUNCHERS = ("mpirun", "srun", "emulate")

# gpuaccept-nccl's options for a run across processes (docs/benchmark-json.md, "Multi-process mode"): kept here
# only, so that a renamed option is one edit.
TOOL_MULTI_PROCESS = "--multi-process"
TOOL_COMM = "--comm"
TOOL_RING = "--ring"
TOOL_OUTPUT = "--output"
BOOTSTRAP_ENV = "GPUACCEPT_BOOTSTRAP"
BOOTSTRAP_PORT = 29517
EMULATOR = "gpuaccept.nccl_emulate"  # python -m: N ranks on this machine, each its own NCCL host


class LaunchError(ValueError):
    """A round that cannot be launched as asked (an unknown launcher, a group of one node)."""


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the launcher's environment
    files: dict[str, str] = field(default_factory=dict)  # path -> text to write before launching (hostfiles)
    hosts: list[str] = field(default_factory=list)  # the round's hosts in rank order
    aliases: dict[str, str] = field(default_factory=dict)  # the document's host name -> the node it stands for


def comm_spec(groups: Sequence[Sequence[str]], ranks_per_node: int, layout: str = "groups") -> str:
    """``world``, ``rail`` or ``groups:A-B,C-D``: each group's contiguous world ranks, the groups in order."""
    if layout in ("world", "rail"):
        return layout
    spans, start = [], 0
    for g in groups:
        count = len(g) * ranks_per_node
        spans.append(f"{start}-{start + count - 1}")
        start += count
    return "groups:" + ",".join(spans)


def tool_argv(
    tool: str, comm: str, output: str | Path, ring: bool = True, multi: bool = True, extra: Sequence[str] = ()
) -> list[str]:
    """The tool's own arguments (``multi``: with --multi-process, which the emulator adds itself; ``extra``: more of
    the tool's options, e.g. its size sweep)."""
    argv = [tool, *([TOOL_MULTI_PROCESS] if multi else []), *extra, TOOL_COMM, comm, TOOL_OUTPUT, str(output)]
    return argv + ([TOOL_RING] if ring else [])


def build(
    launcher: str,
    groups: Sequence[Sequence[str]],
    tool: str,
    output: str | Path,
    work_dir: str | Path,
    ranks_per_node: int = 1,
    layout: str = "groups",
    ring: bool = True,
    launcher_args: Sequence[str] = (),
    gpus: int = 0,
    python: str = sys.executable,
    tool_args: Sequence[str] = (),
    slow_node: str = "",
) -> Launch:
    """The launch of one round: ``groups`` (disjoint, 2 or more nodes each; ``layout`` world or rail: one group)
    through ``launcher``, the tool writing ``output``; hostfiles go under ``work_dir``. ``gpus``: emulate's GPUs on
    this machine (0: one per rank); ``slow_node``: emulate only, the node whose first rank the emulator starves of
    CPU (``--slow-rank``), wherever the round places it."""
    if launcher not in LAUNCHERS:
        raise LaunchError(f"launcher {launcher!r}: one of {', '.join(LAUNCHERS)}")
    if ranks_per_node < 1:
        raise LaunchError(f"ranks per node {ranks_per_node}: at least 1")
    hosts = [h for g in groups for h in g]
    if len(hosts) != len(set(hosts)):
        raise LaunchError(f"the groups of one round share a node: {groups}")
    if any(len(g) < 2 for g in groups):
        raise LaunchError(f"a group of fewer than 2 nodes measures nothing between nodes: {groups}")
    total = len(hosts) * ranks_per_node
    comm = comm_spec(groups, ranks_per_node, layout)
    tag = Path(output).stem
    if slow_node and launcher != "emulate":
        raise LaunchError(f"a slow node ({slow_node}) is emulated only: --launcher emulate")
    if launcher == "emulate":
        slow = ["--slow-rank", str(hosts.index(slow_node) * ranks_per_node)] if slow_node in hosts else []
        argv = [python, "-m", EMULATOR, "--ranks", str(total), "--gpus", str(gpus or total), "--hosts",
                str(len(hosts)), *slow, *launcher_args, "--",
                *tool_argv(tool, comm, output, ring, False, tool_args)]  # fmt: skip
        return Launch(argv, {}, {}, hosts, {f"emuhost{i}": h for i, h in enumerate(hosts)})
    # Rank 0 listens for the others on its own host.
    boot = {BOOTSTRAP_ENV: f"{hosts[0]}:{BOOTSTRAP_PORT}"}
    tool_cmd = tool_argv(tool, comm, output, ring, True, tool_args)
    if launcher == "mpirun":
        hostfile = str(Path(work_dir) / f"{tag}.hosts")
        text = "".join(f"{h} slots={ranks_per_node}\n" for h in hosts)
        argv = ["mpirun", "--hostfile", hostfile, "-np", str(total), "--map-by", "slot", "-x", BOOTSTRAP_ENV,
                *launcher_args, *tool_cmd]  # fmt: skip
        return Launch(argv, boot, {hostfile: text}, hosts)
    hostfile = str(Path(work_dir) / f"{tag}.tasks")
    text = "".join(f"{h}\n" for h in hosts for _ in range(ranks_per_node))
    argv = ["srun", f"--nodes={len(hosts)}", f"--ntasks={total}", "--distribution=arbitrary",
            f"--nodelist={','.join(hosts)}", *launcher_args, *tool_cmd]  # fmt: skip
    return Launch(argv, {"SLURM_HOSTFILE": hostfile, **boot}, {hostfile: text}, hosts)
