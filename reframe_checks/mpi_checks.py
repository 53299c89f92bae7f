"""Checks between nodes (after Agarwal and Becchi, 2014): MPI point-to-point latency and bandwidth between rank pairs on
different nodes, host buffers and, on a CUDA-aware MPI, GPU buffers. What it measures: docs/checks/mpi.md.

Runs on partitions with the ``mpi`` feature and an MPI launcher (``gpuaccept slurm-config --mpi``: srun), in
the ``multinode`` suite. Two ranks on two nodes by default; ``-S num_tasks=N`` pairs rank i with i + N/2, and
``-S num_tasks_per_node=2`` puts a pair on one node (CI, or a node's own loopback).
"""


import reframe as rfm
from reframe.core.builtins import fixture, run_after, variable

from gpuaccept.rfm import BenchBuild, BenchCheck


class MpiBenchBuild(BenchBuild):
    """Builds gpuaccept-mpi with the environment's MPI compiler wrapper (mpicxx)."""

    make_targets = ["mpi"]
    binaries = ["gpuaccept-mpi"]


@rfm.simple_test
class MpiPingPong(BenchCheck):
    """MPI latency and streaming bandwidth between rank pairs i <-> i + N/2.

    Variables: ``ranks`` (N, even), ``ranks_per_node`` (1: every pair spans two nodes).
    Metrics: host_latency_max (us), host_bw_min (GB/s), gpu_latency_max, gpu_bw_min (GPU buffers; waived
    without a CUDA-aware MPI).
    """

    #: MPI ranks (even; rank i is paired with rank i + ranks/2).
    #:
    #: :type: :class:`int`
    ranks = variable(int, value=2)

    #: Ranks per node: 1 puts the two ranks of a pair on different nodes.
    #:
    #: :type: :class:`int`
    ranks_per_node = variable(int, value=1)

    check_key = "mpi"
    binary = "gpuaccept-mpi"
    valid_systems = ["+mpi"]
    time_limit = "10m"
    build = fixture(MpiBenchBuild, scope="environment")
    env_vars = {"LC_ALL": "C"}

    @run_after("init")
    def set_tasks(self):
        if self.ranks < 2 or self.ranks % 2:
            raise ValueError(f"ranks must be even and at least 2, not {self.ranks}")
        self.num_tasks = self.ranks
        self.num_tasks_per_node = self.ranks_per_node
