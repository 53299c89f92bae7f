"""The command lines that start one round of gpuaccept-nccl across nodes (docs/checks/across-nodes.md): pure
functions of the round's groups, the launcher and the tool, so that they are tested without running anything.

A round's groups run at once in one launch: its hosts are listed group after group, ``ranks_per_node`` ranks each
(block placement), so each group is a contiguous range of world ranks and the tool's ``--comm groups:A-B,C-D``
names them. Launchers:

- ``mpirun``: Open MPI with a hostfile of the round (``HOST slots=R``), ranks by slot in the file's order.
- ``srun``: inside a Slurm allocation; ``--distribution=arbitrary`` with ``SLURM_HOSTFILE`` (one line per task)
  fixes which node each rank lands on.
- ``emulate``: every rank on this machine, each node's ranks given their own ``NCCL_HOSTID`` (NCCL then treats
  them as separate hosts and connects them through its network transport, not shared memory or P2P): Open MPI's
  colon-separated application contexts, one per emulated node.
"""

from __future__ import annotations

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
TOOL_BOOTSTRAP = "--bootstrap"
BOOTSTRAP_PORT = 29517


class LaunchError(ValueError):
    """A round that cannot be launched as asked (an unknown launcher, a group of one node)."""


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the launcher's environment
    files: dict[str, str] = field(default_factory=dict)  # path -> text to write before launching (hostfiles)
    hosts: list[str] = field(default_factory=list)  # the round's hosts in rank order


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


def tool_argv(tool: str, comm: str, output: str | Path, bootstrap_host: str, ring: bool = True) -> list[str]:
    argv = [tool, TOOL_MULTI_PROCESS, TOOL_COMM, comm, TOOL_OUTPUT, str(output),
            TOOL_BOOTSTRAP, f"tcp://{bootstrap_host}:{BOOTSTRAP_PORT}"]  # fmt: skip
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
) -> Launch:
    """The launch of one round: ``groups`` (disjoint, 2 or more nodes each; ``layout`` world or rail: one group)
    through ``launcher``, the tool writing ``output``; hostfiles go under ``work_dir``."""
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
    # Rank 0 listens for the others: on its own host, or this machine when every rank is here.
    boot = "127.0.0.1" if launcher == "emulate" else hosts[0]
    tool_cmd = tool_argv(tool, comm_spec(groups, ranks_per_node, layout), output, boot, ring)
    tag = Path(output).stem
    if launcher == "mpirun":
        hostfile = str(Path(work_dir) / f"{tag}.hosts")
        text = "".join(f"{h} slots={ranks_per_node}\n" for h in hosts)
        argv = ["mpirun", "--hostfile", hostfile, "-np", str(total), "--map-by", "slot", *launcher_args, *tool_cmd]
        return Launch(argv, {}, {hostfile: text}, hosts)
    if launcher == "srun":
        hostfile = str(Path(work_dir) / f"{tag}.tasks")
        text = "".join(f"{h}\n" for h in hosts for _ in range(ranks_per_node))
        argv = ["srun", f"--nodes={len(hosts)}", f"--ntasks={total}", "--distribution=arbitrary",
                f"--nodelist={','.join(hosts)}", *launcher_args, *tool_cmd]  # fmt: skip
        return Launch(argv, {"SLURM_HOSTFILE": hostfile}, {hostfile: text}, hosts)
    argv = ["mpirun", "--host", f"localhost:{total}", *launcher_args]
    for i, h in enumerate(hosts):
        argv += [*([":"] if i else []), "-np", str(ranks_per_node), "-x", f"NCCL_HOSTID={h}", *tool_cmd]
    return Launch(argv, {}, {}, hosts)
