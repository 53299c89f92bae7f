"""NVIDIA's own diagnostic: ``dcgmi diag`` at the suite's level through ``gpuaccept dcgm-diag`` (docs/checks/dcgm.md).

Optional: where the site has not installed DCGM (no ``dcgmi`` on PATH) or nv-hostengine cannot be reached, the
document says why and the check is NOT RUN with the fix; a node type that only reports it is then not rejected.
"""

import sys

import reframe as rfm
from reframe.core.builtins import run_after, variable

from gpuaccept.probe import dcgm
from gpuaccept.rfm import BenchCheck


@rfm.simple_test
class DcgmDiag(BenchCheck):
    """Runs ``gpuaccept dcgm-diag --level LEVEL``; the judge fails the check on any test DCGM reports failed
    (gpuaccept.judge.dcgm_rules) and shows the skipped ones waived.

    Variables: ``level`` (dcgmi diag -r; ``gpuaccept run`` sets it per suite from
    gpuaccept.probe.dcgm.SUITE_LEVELS: commission 3, evaluation 2, burn-in 3).
    Metrics: dcgm_passed, dcgm_failed, dcgm_warned, dcgm_skipped (results, test x GPU; per GPU in gpu_metrics).
    """

    #: DCGM's diagnostic level, 1-4 (``-S DcgmDiag.level=N``).
    #:
    #: :type: :class:`int`
    level = variable(int, value=dcgm.DEFAULT_LEVEL)

    check_key = "dcgm_diag"
    valid_systems = ["+gpu"]

    @run_after("init")
    def set_time_limit(self):
        if self.level not in dcgm.TIMEOUT_S:
            raise ValueError(f"level {self.level}: DCGM's diagnostic levels are 1, 2, 3 and 4")
        # The probe stops dcgmi at its own limit and still writes the document; ReFrame's comes later.
        self.time_limit = f"{dcgm.TIMEOUT_S[self.level] + 300}s"

    @run_after("setup")
    def set_probe(self):
        self.executable = sys.executable
        self.executable_opts = ["-m", "gpuaccept", "dcgm-diag", "--level", str(self.level), *self.executable_opts]
