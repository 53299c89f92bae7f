"""The checks gpuaccept knows and the suites that run them: one table, read by the ReFrame checks (their
tags) and by the verdict (which checks a suite expects, and why one did not run)."""

from __future__ import annotations

from dataclasses import dataclass

# multinode: checks between nodes (MPI), run through a scheduler across several nodes at once (docs/fleet.md).
SUITES = ("nightly", "commission", "evaluation", "multinode")


@dataclass(frozen=True)
class Check:
    key: str  # the key under 'checks:' in reference files, and the ReFrame test's check_key
    title: str
    suites: tuple[str, ...]
    needs_gpu: bool
    result_file: str  # the benchmark's JSON document, kept in ReFrame's output directory
    # An optional backend (a tool the site may not have, e.g. NVIDIA's xhpl): a node type may leave it out of
    # its reference file, and then it is not expected of the node (measured node types cover the others).
    optional: bool = False
    # The judge's rules beyond the generic ones (gpuaccept.judge.rules): "hpl" (HPL's residual rule), "throttle"
    # (clocks held back under load by a fault), "health" (gpuaccept.judge.health_rules).
    rules: tuple[str, ...] = ()
    # Run under the power sampler: its document (layout.POWER_FILE) joins the check's, with GFLOP/s per watt of this
    # metric ("" none).
    power_sampled: bool = False
    efficiency_metric: str = ""


CHECKS: dict[str, Check] = {
    c.key: c
    for c in (
        Check("bandwidth", "host<->GPU and GPU<->GPU bandwidth (gpuaccept-bw)", SUITES, True, "bandwidth.json"),
        Check("gemm", "cuBLAS/cuBLASLt GEMM throughput (gpuaccept-gemm)", SUITES, True, "gemm.json"),
        Check(
            "cpu_gemm",
            "host SGEMM/DGEMM thread scaling (gpuaccept-cpugemm)",
            ("commission", "evaluation"),
            False,
            "cpu_gemm.json",
        ),
        Check(
            "mpi",
            "MPI latency and bandwidth between nodes, host and GPU buffers (gpuaccept-mpi)",
            ("multinode",),
            False,
            "mpi.json",
        ),
        Check(
            "nccl",
            "NCCL all-reduce, all-gather, reduce-scatter, broadcast between the node's GPUs (gpuaccept-nccl)",
            ("commission", "evaluation"),
            True,
            "nccl.json",
        ),
        Check(
            "hplstyle",
            "HPL-style LU through cuSOLVER, every GPU at once (gpuaccept-hplstyle)",
            ("commission", "evaluation"),
            True,
            "hplstyle.json",
            rules=("hpl",),
            power_sampled=True,
            efficiency_metric="tflops_sum",
        ),
        Check(
            "hpl_nvidia",
            "NVIDIA HPC-Benchmarks HPL (xhpl), one rank per GPU",
            ("commission", "evaluation"),
            True,
            "hpl_nvidia.json",
            optional=True,
            rules=("hpl",),
            power_sampled=True,
            efficiency_metric="tflops",
        ),
        Check(
            "hpl_cuda",
            "HPL-CUDA: HPL 2.3's driver with gpuaccept's GPU-resident solver (matrix in GPU memory, cuSOLVER, cuBLAS)",
            ("commission", "evaluation"),
            True,
            "hpl_cuda.json",
            optional=True,
            rules=("hpl",),
            power_sampled=True,
        ),
        Check(
            "hpl_host",
            "host HPL: netlib HPL 2.3 against MKL (gpuaccept_hpl role), else Debian's hpcc (OpenBLAS)",
            ("commission", "evaluation"),
            False,
            "hpl_host.json",
            optional=True,
            rules=("hpl",),
        ),
        Check(
            "health",
            "GPU health: count, driver, PCIe under load, ECC, XID, processes",
            SUITES,
            True,
            "health.json",
            rules=("health",),
        ),
        Check(
            "power",
            "idle power, power under a sustained GEMM, GFLOP/s per watt, throttling",
            SUITES,
            True,
            "power_check.json",
            rules=("throttle",),
        ),
        # Seed 002's compute/transfer overlap (docs/checks/overlap.md): evaluation only, and optional until a node type
        # has measured it (its figures are the host's and the link's: reported, not judged).
        Check(
            "overlap",
            "compute/transfer overlap: sync copies, 1-16 streams, mapped and managed memory, measured and predicted "
            "by seed 002's PCIe model (gpuaccept-overlap)",
            ("evaluation",),
            True,
            "overlap.json",
            optional=True,
        ),
        # Seed 000's transfer-inclusive GEMM and its crossover against the host's BLAS (issue 27 item 1,
        # docs/checks/offload-gemm.md): evaluation only and optional, like overlap (its figures are the host's and the
        # link's: reported, not judged).
        Check(
            "offload_gemm",
            "GEMM offload: cuBLAS DGEMM/SGEMM/TF32/BF16 kernel-only and with the copies from pinned and pageable "
            "memory, and the size from which it beats the host's BLAS (gpuaccept-xgemm, gpuaccept-cpugemm)",
            ("evaluation",),
            True,
            "offload_gemm.json",
            optional=True,
        ),
        # Seed 001's FFT offload (docs/checks/fft-offload.md): cuFFT against the host's FFT, with and without the
        # copies. Evaluation only and optional: it needs a host FFT (MKL or FFTW), and its figures are the host's and
        # the link's as much as the GPU's (reported, not judged).
        Check(
            "fft_offload",
            "FFT offload: cuFFT against the host's FFT (MKL or FFTW, all cores), 1-D batched and 3-D, fp32 and fp64, "
            "with and without the copies; speed-up and crossover size (gpuaccept-fft)",
            ("evaluation",),
            True,
            "fft_offload.json",
            optional=True,
        ),
        # Application checks (docs/checks/md.md): vendor evaluation only, so that commissioning does not need
        # OpenMM and a licensed NAMD on every node. NAMD is the operator's (its licence forbids carrying it), so its
        # checks are optional like xhpl: expected of a node type only once the site measured it (gpuaccept baseline).
        Check(
            "md_apoa1",
            "NAMD's APOA1 benchmark (92,224 atoms) through OpenMM, energies matched to NAMD 3.0: ns/day, "
            "speedup over CPU, energy to solution (gpuaccept-md-apoa1)",
            ("evaluation",),
            True,
            "md_apoa1.json",
        ),
        Check(
            "md_apoa1_x12",
            "APOA1 replicated 3x2x2 (1,106,688 atoms, STMV's scale; not STMV) through OpenMM: ns/day, memory "
            "(gpuaccept-md-apoa1 --replicate 3,2,2)",
            ("evaluation",),
            True,
            "md_apoa1_x12.json",
        ),
        Check(
            "namd_apoa1",
            "NAMD APOA1 (92,224 atoms): ns/day, speedup over CPU, energy to solution (gpuaccept-namd)",
            ("evaluation",),
            True,
            "namd_apoa1.json",
            optional=True,
        ),
        Check(
            "namd_stmv",
            "NAMD STMV (1,066,628 atoms): ns/day, speedup over CPU, energy to solution (gpuaccept-namd)",
            ("evaluation",),
            True,
            "namd_stmv.json",
            optional=True,
        ),
    )
}


def tags_for(key: str) -> set[str]:
    """ReFrame tags of a check: its suites, plus 'gpu' or 'cpu'."""
    check = CHECKS[key]
    return {*check.suites, "gpu" if check.needs_gpu else "cpu"}


def in_suite(suite: str) -> list[Check]:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}: one of {', '.join(SUITES)}")
    return [c for c in CHECKS.values() if suite in c.suites]


def node_checks() -> dict[str, Check]:
    """The checks that run on one node (every suite but multinode): what a node type measured on one machine
    covers; the checks between nodes need several nodes to measure."""
    return {k: c for k, c in CHECKS.items() if set(c.suites) != {"multinode"}}
