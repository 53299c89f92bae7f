"""Start N ranks of ``gpuaccept-nccl --multi-process`` on this machine, each rank its own NCCL host: an emulation
of a multi-node run on one GPU machine (docs/checks/nccl.md, "Emulating hosts on one machine").

Each rank gets its own ``NCCL_HOSTID`` (``emuhost<h>``; with ``--hosts H`` the ranks are H emulated hosts of
ranks/H ranks each, local rank = rank mod ranks/H) and ``NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1
NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0``, so NCCL moves every byte through its socket transport over loopback; rank
r runs on GPU ``r % --gpus`` (``--device``). What this measures is loopback TCP and the CPU driving it, not a
network: it exercises the bootstrap, the layouts, the verification and the document end to end.

``--slow-rank R`` makes rank R really slower, not by a made-up number: its process is pinned to one CPU that
``--burners`` CPU-burning processes share with it (every other rank is kept off that CPU), so NCCL's socket
threads of that rank get a fraction of a CPU. It is how a node with a starved or throttled host looks to NCCL.

    python -m gpuaccept.nccl_emulate --ranks 4 --gpus 2 [--hosts 2] [--slow-rank 3] -- gpuaccept-nccl ARGS...

The tool's own arguments follow ``--``; ``--multi-process`` and ``--device`` are added. Exit status: the first
non-zero exit status of the ranks in rank order (0 when all succeeded), 3 for a bad command line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: What every emulated host's process gets: its own NCCL host, and NCCL's sockets over loopback as the only path.
EMULATION_ENV = {
    "NCCL_P2P_DISABLE": "1",
    "NCCL_SHM_DISABLE": "1",
    "NCCL_IB_DISABLE": "1",
    "NCCL_SOCKET_IFNAME": "lo",
    "NCCL_NVLS_ENABLE": "0",
}

#: The CPU burner started beside the slow rank (a busy loop, pinned to the slow rank's CPU).
BURNER = [sys.executable, "-c", "while True: pass"]


@dataclass(frozen=True)
class Plan:
    """Where each rank runs and what it is told."""

    ranks: int
    gpus: int
    hosts: int
    port: int
    slow_rank: int | None
    slow_cpu: int | None

    def local_rank(self, rank: int) -> int:
        return rank % (self.ranks // self.hosts)

    def host(self, rank: int) -> int:
        return rank // (self.ranks // self.hosts)

    def env(self, rank: int, base: dict[str, str]) -> dict[str, str]:
        """Rank ``rank``'s environment: ``base`` with gpuaccept's rank variables and the emulation's NCCL ones."""
        env = {k: v for k, v in base.items() if not k.startswith(("OMPI_COMM_WORLD_", "SLURM_", "PMI_"))}
        env.update(EMULATION_ENV)
        env.update({
            "GPUACCEPT_RANK": str(rank),
            "GPUACCEPT_SIZE": str(self.ranks),
            "GPUACCEPT_LOCAL_RANK": str(self.local_rank(rank)),
            "GPUACCEPT_BOOTSTRAP": f"127.0.0.1:{self.port}",
            "NCCL_HOSTID": f"emuhost{self.host(rank)}",
            # Recorded in the document's parameters.environment: these hosts are emulated.
            "GPUACCEPT_EMULATION": f"{self.ranks} ranks as {self.hosts} emulated hosts on one machine "
            f"({self.gpus} GPUs), NCCL sockets over loopback (gpuaccept.nccl_emulate)",
        })
        return env

    def argv(self, rank: int, tool: Sequence[str]) -> list[str]:
        return [*tool, "--multi-process", "--device", str(rank % self.gpus)]

    def cpus(self, rank: int, allowed: set[int]) -> set[int]:
        """The CPUs rank ``rank`` may use: the slow rank only its one CPU, the others every CPU but that one."""
        if self.slow_cpu is None:
            return allowed
        if rank == self.slow_rank:
            return {self.slow_cpu}
        return (allowed - {self.slow_cpu}) or allowed


def free_port() -> int:
    """A TCP port free on loopback now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Parser(argparse.ArgumentParser):
    """argparse, exiting 3 on a bad command line (2 is a rank's failed verification)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(3)


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    args = list(argv)
    if "--" not in args:
        args.append("--")
    split = args.index("--")
    p = _Parser(prog="python -m gpuaccept.nccl_emulate", description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, required=True, help="ranks (processes) to start")
    p.add_argument("--gpus", type=int, required=True, help="GPUs to spread them over (rank r on GPU r %% gpus)")
    p.add_argument("--hosts", type=int, default=0, help="emulated hosts (default: one per rank); must divide --ranks")
    p.add_argument("--slow-rank", type=int, default=None, help="rank to starve of CPU (pinned beside --burners)")
    p.add_argument("--burners", type=int, default=2, help="CPU-burning processes beside the slow rank (default 2)")
    p.add_argument("--port", type=int, default=0, help="rank 0's bootstrap port (default: a free one)")
    p.add_argument("--timeout-s", type=float, default=600.0, help="stop every rank after this long (default 600)")
    p.add_argument("--log-dir", default="", help="write rank R's stdout and stderr to DIR/rankR.log")
    ns = p.parse_args(args[:split])
    tool = args[split + 1 :]
    problems = []
    if not tool:
        problems.append("no tool after --")
    if ns.ranks < 1 or ns.gpus < 1:
        problems.append("--ranks and --gpus must be at least 1")
    hosts = ns.hosts or ns.ranks
    if hosts < 1 or ns.ranks % hosts:
        problems.append(f"--hosts {hosts} does not divide --ranks {ns.ranks}")
    if ns.slow_rank is not None and not 0 <= ns.slow_rank < ns.ranks:
        problems.append(f"--slow-rank {ns.slow_rank} is not a rank (0..{ns.ranks - 1})")
    if ns.burners < 0:
        problems.append("--burners must be 0 or more")
    if problems:
        p.error("; ".join(problems))
    ns.hosts = hosts
    return ns, tool


def make_plan(ns: argparse.Namespace, allowed: set[int]) -> Plan:
    slow_cpu = max(allowed) if ns.slow_rank is not None else None
    return Plan(ns.ranks, ns.gpus, ns.hosts, ns.port or free_port(), ns.slow_rank, slow_cpu)


def pinned(cpus: set[int]) -> Callable[[], None]:
    """A preexec function that pins the child to ``cpus``."""
    return lambda: os.sched_setaffinity(0, cpus)


def stop(procs: Sequence[subprocess.Popen]) -> None:
    """Ends the processes this module started, each by its own id."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(plan: Plan, tool: Sequence[str], burners: int, timeout_s: float, log_dir: str) -> int:
    """Starts the burners (where a rank is slow) and the ranks; waits for the ranks; the exit status."""
    allowed = os.sched_getaffinity(0)
    helpers: list[subprocess.Popen] = []
    ranks: list[subprocess.Popen] = []
    logs = []
    try:
        if plan.slow_cpu is not None:
            helpers = [subprocess.Popen(BURNER, preexec_fn=pinned({plan.slow_cpu})) for _ in range(burners)]  # noqa: PLW1509
            print(f"nccl_emulate: rank {plan.slow_rank} pinned to CPU {plan.slow_cpu} with {burners} CPU burner(s)",
                  file=sys.stderr)
        for r in range(plan.ranks):
            out = None
            if log_dir:
                os.makedirs(log_dir, exist_ok=True)
                out = open(os.path.join(log_dir, f"rank{r}.log"), "w")
                logs.append(out)
            ranks.append(subprocess.Popen(plan.argv(r, tool), env=plan.env(r, dict(os.environ)), stdout=out,
                                          stderr=subprocess.STDOUT if out else None,
                                          preexec_fn=pinned(plan.cpus(r, allowed))))  # noqa: PLW1509
        deadline = time.monotonic() + timeout_s
        while any(p.poll() is None for p in ranks):
            if time.monotonic() > deadline:
                print(f"nccl_emulate: ranks still running after --timeout-s {timeout_s:g}: stopped", file=sys.stderr)
                stop(ranks)
                return 1
            time.sleep(0.2)
    finally:
        stop(ranks)
        stop(helpers)
        for f in logs:
            f.close()
    codes = [p.returncode for p in ranks]
    print("nccl_emulate: exit status by rank: " + " ".join(f"{r}:{c}" for r, c in enumerate(codes)), file=sys.stderr)
    return next((c for c in codes if c != 0), 0)


def main(argv: Sequence[str] | None = None) -> int:
    ns, tool = parse(sys.argv[1:] if argv is None else argv)
    plan = make_plan(ns, os.sched_getaffinity(0))
    return run(plan, tool, ns.burners, ns.timeout_s, ns.log_dir)


if __name__ == "__main__":
    sys.exit(main())
