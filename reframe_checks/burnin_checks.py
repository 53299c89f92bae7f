"""The burn-in (docs/checks/burnin.md): ``gpuaccept burnin`` loads every GPU at once for ``minutes`` (GEMM windows
of gpuaccept-gemm, alternating with turns of gpuaccept-memtest where the node has it) while it reads every GPU
through NVML each second. The judge's burn-in rules (gpuaccept.judge.burnin_rules) decide.
"""

import os
import sys

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, variable

from gpuaccept.probe import burnin
from gpuaccept.rfm import BenchBuild, BenchCheck


class BurninBuild(BenchBuild):
    """gpuaccept-gemm and gpuaccept-memtest, the burn-in's load (prebuilt by the gpuaccept_bench role's ``gpu``
    target)."""

    make_targets = ["gemm", "memtest"]
    binaries = ["gpuaccept-gemm", "gpuaccept-memtest"]


@rfm.simple_test
class GpuBurnin(BenchCheck):
    """Every GPU under sustained load for ``minutes``, sampled every second (``gpuaccept burnin``).

    Variables: ``minutes`` (the burn-in's length; ``gpuaccept run --suite burnin --burnin-minutes N`` sets it),
    ``precision`` (of the GEMM), ``exempt_pids``.
    Metrics (informational: the rules decide): tflops_first_window_min, tflops_last_window_min,
    tflops_last_over_first_min, gpu_temp_max_c, memory_temp_max_c, power_median_max_w, throttle_other_samples,
    xid_events, ecc_uncorrectable_new, remapped_rows_pending, nvlink_errors_new, gemm_windows_min; each GPU's own
    in the document's gpu_metrics. The memory test takes turns where ``gpuaccept-memtest`` is in the prebuilt
    benchmarks' directory (``extras.bench_dir``) or the build's (the fixture builds it beside gpuaccept-gemm); the
    burn-in runs GEMM alone otherwise, and its document says so.
    """

    #: The burn-in's length in minutes (1 to 1440).
    #:
    #: :type: :class:`float`
    minutes = variable(float, value=burnin.DEFAULT_MINUTES)

    #: GEMM precision of the load.
    #:
    #: :type: :class:`str`
    precision = variable(str, value="fp64")

    #: Compute processes that are not foreign (e.g. a monitoring agent that holds a context).
    #:
    #: :type: :class:`List[int]`
    exempt_pids = variable(typ.List[int], value=[])

    check_key = "burnin"
    valid_systems = ["+gpu"]
    binary = "gpuaccept-gemm"
    build = fixture(BurninBuild, scope="environment")

    @run_after("init")
    def set_time_limit(self):
        """The burn-in, plus ten minutes for the last turn, the build and the document."""
        burnin.check_minutes(self.minutes, "GpuBurnin.minutes")
        self.time_limit = f"{int(self.minutes * 60 + 600)}s"

    def memtest_binary(self) -> str:
        """gpuaccept-memtest from the prebuilt benchmarks or the build's stage directory, '' where neither has it."""
        dirs = [str((self.current_partition.extras or {}).get("bench_dir") or ""), self.build.stagedir]
        for d in dirs:
            path = os.path.join(d, "gpuaccept-memtest") if d else ""
            if path and os.access(path, os.X_OK):
                return path
        return ""

    @run_after("setup")
    def set_burnin(self):
        gemm, memtest = self.executable, self.memtest_binary()
        opts = [o for o in self.executable_opts if o != "--quick"]
        self.executable = sys.executable
        self.executable_opts = [
            "-m",
            "gpuaccept",
            "burnin",
            "--gemm",
            gemm,
            *(["--memtest", memtest] if memtest else []),
            "--minutes",
            f"{self.minutes:g}",
            "--precision",
            self.precision,
            *opts,
        ]
        for pid in self.exempt_pids:
            self.executable_opts += ["--exempt-pid", str(pid)]
        self.keep_files = [*self.keep_files, "burnin_gpu*.csv"]
