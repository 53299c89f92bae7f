"""Host checks: SGEMM/DGEMM through Intel MKL (OpenBLAS as fallback) over 1, 2, 4 ... all cores.

Runs on every partition; the CPU figures are the baseline the GPU figures are compared with (the CPU/GPU
ratio in the verdict). What it measures: docs/checks/gemm.md.
"""

import reframe as rfm
from reframe.core.builtins import fixture

from gpuaccept.rfm import HOST_BLAS_ENV, BenchBuild, BenchCheck


class CpuBenchBuild(BenchBuild):
    """Builds gpuaccept-cpugemm against the BLAS the node has."""

    make_targets = ["cpu"]
    binaries = ["gpuaccept-cpugemm"]


@rfm.simple_test
class CpuGemm(BenchCheck):
    """Host SGEMM and DGEMM thread scaling, threads pinned to cores.

    Metrics: dgemm_gflops, sgemm_gflops (all cores), dgemm_scaling_efficiency.
    """

    check_key = "cpu_gemm"
    binary = "gpuaccept-cpugemm"
    valid_systems = ["*"]
    time_limit = "20m"
    build = fixture(CpuBenchBuild, scope="environment")
    env_vars = dict(HOST_BLAS_ENV)
