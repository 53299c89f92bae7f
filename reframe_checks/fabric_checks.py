"""The InfiniBand / RoCE fabric of the node: ``python -m gpuaccept.probe.fabric_doc probe`` (docs/checks/fabric.md).

Ports (state, physical state, rate, width, link layer, partition keys) and their counters read from sysfs, GPUDirect
RDMA from /proc/modules, and each HCA's ib_write_bw loopback (perftest), in the commissioning and multinode suites.
A node type expects it where it lists ``checks: fabric:``; others skip it as not expected. A node without an HCA is
NOT RUN with that reason, or fails where its node type's ``fabric: ports:`` expects one (gpuaccept.judge.fabric_judge).
"""

import sys

import reframe as rfm
from reframe.core.builtins import run_after, variable

from gpuaccept.rfm import BenchCheck


@rfm.simple_test
class FabricHealth(BenchCheck):
    """Runs the fabric probe; the judge applies the node type's ``fabric:`` expectations and the counters'
    thresholds to what it recorded (gpuaccept.judge.fabric_judge).

    Variables: ``ib_write_bw`` (run the loopback per HCA), ``message_bytes``.
    Metrics: ports_active, ib_write_bw_min_gbps (the slowest HCA); the judge adds fabric_findings and
    fabric_error_growth (the error counters' growth over the suite).
    """

    #: Run ib_write_bw as a loopback on each HCA (Azure's HPC health checks' command); off: sysfs only.
    #:
    #: :type: :class:`bool`
    ib_write_bw = variable(bool, value=True)

    #: ib_write_bw's message size in bytes (Azure's: 8 MiB).
    #:
    #: :type: :class:`int`
    message_bytes = variable(int, value=8388608)

    check_key = "fabric"
    valid_systems = ["*"]
    time_limit = "15m"

    @run_after("setup")
    def set_probe(self):
        extras = self.current_partition.extras or {}
        self.executable = sys.executable
        opts = ["-m", "gpuaccept.probe.fabric_doc", "probe", *self.executable_opts, "--size", str(self.message_bytes)]
        if extras.get("gpu_count") is not None:
            opts += ["--gpus", str(extras["gpu_count"])]
        if not self.ib_write_bw:
            opts.append("--no-ib-write-bw")
        self.executable_opts = opts
