"""GPU health: the probe of ``gpuaccept health`` (docs/checks/health.md), run first in every suite.

GPU count against the inventory, driver and CUDA versions in the node type's allowed set, PCIe link generation
and width under a copy load, ECC mode, uncorrectable ECC errors, row remapping and retired pages, XID lines in
the kernel log, persistence mode, NVLink links (and, from the node facts before and after the suite, their error
counters), the configuration the node type pins, and foreign compute processes. Each failure names the GPU
(index, bus id, serial) and the fix to try.
"""

import sys

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, variable

from gpuaccept.rfm import BenchCheck


@rfm.simple_test
class GpuHealth(BenchCheck):
    """Runs the health probe (``gpuaccept health``); the judge applies the node type's ``health:`` expectations
    to what it recorded (gpuaccept.judge.health_rules).

    Variables: ``xid_since`` (kernel-log window), ``exempt_pids``.
    Metrics: pcie_gen_min, pcie_width_min (under load, min over GPUs), xid_events, nvlink_links_up_min (min over
    GPUs; waived without NVLink); the judge adds health_findings, config_drift and nvlink_error_growth (from the
    node facts before and after the suite); each GPU's
    figures in ``gpu_metrics`` (judged per GPU, its findings those that name it).
    """

    #: XID lines of the kernel log since: ``boot``, a duration ago (``24h``), epoch seconds or ISO time.
    #:
    #: :type: :class:`str`
    xid_since = variable(str, value="24h")

    #: Compute processes that are not foreign (e.g. a monitoring agent that holds a context).
    #:
    #: :type: :class:`List[int]`
    exempt_pids = variable(typ.List[int], value=[])

    check_key = "health"
    valid_systems = ["+gpu"]
    time_limit = "5m"

    @run_after("setup")
    def set_probe(self):
        extras = self.current_partition.extras or {}
        self.executable = sys.executable
        opts = ["-m", "gpuaccept", "health", *self.executable_opts]
        if extras.get("gpu_count") is not None:
            opts += ["--expected-gpus", str(extras["gpu_count"])]
        opts += ["--xid-since", self.xid_since]
        for pid in self.exempt_pids:
            opts += ["--exempt-pid", str(pid)]
        self.executable_opts = opts
