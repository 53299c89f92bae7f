"""The checks gpuaccept knows and the suites that run them: one table, read by the ReFrame checks (their
tags) and by the verdict (which checks a suite expects, and why one did not run)."""

from __future__ import annotations

from dataclasses import dataclass

SUITES = ("nightly", "commission", "evaluation")


@dataclass(frozen=True)
class Check:
    key: str  # the key under 'checks:' in reference files, and the ReFrame test's check_key
    title: str
    suites: tuple[str, ...]
    needs_gpu: bool
    result_file: str  # the benchmark's JSON document, kept in ReFrame's output directory


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
        Check("health", "GPU health: count, driver, PCIe under load, ECC, XID, processes", SUITES, True, "health.json"),
        Check(
            "power",
            "idle power, power under a sustained GEMM, GFLOP/s per watt, throttling",
            SUITES,
            True,
            "power_check.json",
        ),
        # Application checks (docs/checks/md.md): vendor evaluation only, so that commissioning does not need
        # OpenMM and a licensed NAMD on every node.
        Check(
            "md_openmm",
            "molecular dynamics through OpenMM: TIP3P water box, ns/day, energy (gpuaccept-openmm)",
            ("evaluation",),
            True,
            "md_openmm.json",
        ),
        Check(
            "namd_apoa1",
            "NAMD APOA1 (92,224 atoms): ns/day, speedup over CPU, energy to solution (gpuaccept-namd)",
            ("evaluation",),
            True,
            "namd_apoa1.json",
        ),
        Check(
            "namd_stmv",
            "NAMD STMV (1,066,628 atoms): ns/day, speedup over CPU, energy to solution (gpuaccept-namd)",
            ("evaluation",),
            True,
            "namd_stmv.json",
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
