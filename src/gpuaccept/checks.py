"""The checks gpuaccept knows, the suites that run them and the metrics each reports: one declaration per check,
from which follow the ReFrame class's identity (``check_key``, ``descr``, ``tags``: ``tags_for``), the verdict's
list of expected checks (``in_suite``), the judge's rules (``Check.rules``), the metric table
(gpuaccept.metric_table: units, layers, owners), the Prometheus series and the check list in
docs/running.md (``python -m gpuaccept.judge.checkdoc``).

A metric's **layer** says where its reference lives (``gpu``: ``reference_values/gpus/<sku>.yaml``; ``node``:
``reference_values/<node_type>.yaml``); its **owner** what it may be judged against (``gpu``, ``link``, ``host``,
``node``; gpuaccept.metric_table's docstring, docs/verdicts.md). A metric names a ``fnmatch`` pattern;
within a check the first that matches a metric name wins."""

from __future__ import annotations

from dataclasses import dataclass

#: Each rule a check may name, with what it judges (docs/judge.md, "The rules").
RULE_NAMES: dict[str, str] = {
    "hpl": "HPL's residual rule on every run the document lists (gpuaccept.judge.rules.document.hpl_problems)",
    "throttle": "clocks held back under load by a fault (gpuaccept.judge.rules.document.throttle_findings)",
    "memtest": "every word of every GPU's memory held what was written, over the memory and time asked "
    "(gpuaccept.judge.rules.document.memtest_findings)",
    "dcgm": "every failed DCGM diagnostic result (gpuaccept.judge.dcgm_rules)",
    "health": "the GPUs' health, NVLink, PCIe and the pinned configuration (gpuaccept.judge.health_rules)",
    "fabric": "the InfiniBand or RoCE ports, GPUDirect RDMA, loopback bandwidth and counters "
    "(gpuaccept.judge.fabric_judge)",
    "burnin": "the burn-in's timelines, turns and events, GPU by GPU (gpuaccept.judge.burnin_rules)",
}


class UnknownRuleError(ValueError):
    """A check names a rule that is not declared (a misspelt key)."""


def check_names(owner: str, names: tuple[str, ...]) -> None:
    """Raise UnknownRuleError where ``names`` (``owner``'s rules) holds a name RULE_NAMES does not declare."""
    unknown = [n for n in names if n not in RULE_NAMES]
    if unknown:
        raise UnknownRuleError(f"{owner}: unknown rule(s) {', '.join(map(repr, unknown))}; the rules are "
                               f"{', '.join(RULE_NAMES)} (gpuaccept.checks.RULE_NAMES)")  # fmt: skip


# multinode: checks between nodes (MPI, NCCL), run through a scheduler across several nodes at once (docs/fleet.md).
# burnin: every GPU under sustained load for a duration, after the health probe (docs/checks/burnin.md).
SUITES = ("nightly", "commission", "evaluation", "multinode", "burnin")
# The suites of the short checks that run everywhere (bandwidth, GEMM, power); health runs in every suite.
_EVERY = ("nightly", "commission", "evaluation", "multinode")

# Layers and owners (gpuaccept.metric_table's docstring).
GPU, NODE = "gpu", "node"
LAYERS = (GPU, NODE)
LINK, HOST = "link", "host"
OWNERS = (GPU, LINK, HOST, NODE)


@dataclass(frozen=True)
class Metric:
    pattern: str  # the metric's name in the benchmark document, or an fnmatch pattern of names
    unit: str  # the unit the tool writes (docs/benchmark-json.md) and a reference file must give
    layer: str  # GPU or NODE: where its reference lives
    owner: str = ""  # GPU, LINK, HOST or NODE; "" the check's owner, else the layer
    # Gated: every shipped node type that expects the check holds a reference for it (judged, or informational with
    # its reason), and a node type without one fails the metric. Reported (False): shown with its value; judged where
    # a reference or the node's own baseline has one, never failed for want of one.
    gated: bool = True
    # A gated pattern's metric names (what the tool writes), so that the references can be walked name by name.
    names: tuple[str, ...] = ()

    def metric_names(self) -> tuple[str, ...]:
        """The names this declaration stands for: the pattern itself, or a wildcard pattern's ``names``."""
        return self.names if self.names else (self.pattern,)


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
    # The judge's rules beyond the ones every check has, by name (RULE_NAMES above: "hpl",
    # "throttle", "memtest", "dcgm", "health", "fabric", "burnin"), applied in this order; a name not declared there
    # raises when the table loads.
    rules: tuple[str, ...] = ()
    # Run under the power sampler: its document (layout.POWER_FILE) joins the check's, with GFLOP/s per watt of this
    # metric ("" none).
    power_sampled: bool = False
    efficiency_metric: str = ""
    # Its metrics, first match wins (the power sampler's, SAMPLER, follow every check's own).
    metrics: tuple[Metric, ...] = ()
    # The owner of every metric of the check that names none ("" the metric's layer).
    owner: str = ""
    # Its page under docs/checks/ (the check list of docs/running.md links it).
    doc: str = ""
    # Measures one GPU by design (the host's BLAS or FFT against one GPU with its copies): its document must name
    # exactly one GPU, a GPU of the node; the others are not expected in it. Every other GPU check names them all.
    one_gpu: bool = False

    def __post_init__(self) -> None:
        check_names(f"check {self.key!r}", self.rules)

    def owner_of(self, metric: Metric) -> str:
        return metric.owner or self.owner or metric.layer


# The power sampler's metrics (gpuaccept sample, docs/checks/power.md), added to any check run under it: all GPUs of
# the node over the benchmark's run. A check's own metrics come first. Reported: a check run under the sampler is
# never failed for want of a reference for them (hplstyle gates its own GFLOP/s per watt).
SAMPLER = (
    Metric("energy_j", "J", NODE, gated=False),
    Metric("power_avg_w", "W", NODE, gated=False),
    Metric("power_peak_w", "W", NODE, gated=False),
    Metric("gflops_per_watt", "GFLOP/s/W", NODE, gated=False),
)

# The GEMM tool's precisions (gpuaccept-gemm), the NCCL tool's collectives (gpuaccept-nccl) and the bandwidth tool's
# peer figures (gpuaccept-bw): the names their wildcard metrics stand for.
GEMM_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
NCCL_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast")
# --multi-process adds all-to-all (docs/checks/nccl.md, "Across processes and hosts").
NCCL_ACROSS = (*NCCL_COLLECTIVES, "alltoall")
P2P_METRICS = ("p2p_write_min", "p2p_read_min", "p2p_bidir_min")

# HPL's document (gpuaccept.probe.hpl) from NVIDIA's xhpl and from HPL-CUDA (HPL 2.3's driver with gpuaccept's
# GPU-resident solver: the matrix generated, factored and solved in GPU memory, so its rate per GPU is the GPU
# model's).
_HPL_PER_GPU = (
    Metric("tflops_per_gpu", "TFLOP/s", GPU),
    Metric("tflops", "TFLOP/s", NODE),
    Metric("residual_max", "ratio", NODE),
    Metric("energy_j", "J", NODE, gated=False),
    Metric("power_avg_w", "W", NODE, gated=False),
    Metric("power_peak_w", "W", NODE, gated=False),
)

# APOA1 through OpenMM (docs/checks/md.md): one GPU's figures are the GPU's; all GPUs at once and the host's CPU
# platform are the node's (the CPU platform's figures owned by the host). The 3 x 2 x 2 replicated system
# (md_apoa1_x12) reports the same metrics.
_MD_APOA1 = (
    Metric("all_gpus_ns_per_day", "ns/day", NODE),
    Metric("cpu_ns_per_day", "ns/day", NODE, owner=HOST, gated=False),
    Metric("speedup_vs_cpu", "ratio", NODE, owner=HOST, gated=False),
    Metric("ns_per_day", "ns/day", GPU),
    Metric("ns_per_day_per_kw", "ns/day/kW", GPU),
    Metric("s_per_step", "s/step", GPU),
    Metric("wall_s", "s", GPU),
    Metric("gpu_power_avg_w", "W", GPU),
    Metric("gpu_energy_kj", "kJ", GPU),
    Metric("gpu_memory_used_gib", "GiB", GPU, gated=False),
    # How far the energies stray from NAMD 3.0's (the tool verifies them itself): reported.
    Metric("energy_bonded_max_rel_diff", "ratio", GPU, gated=False),
    Metric("energy_nonbonded_rel_diff", "ratio", GPU, gated=False),
    Metric("energy_drift_ratio", "ratio", GPU, gated=False),
)


def _namd_figures(prefix: str, layer: str, owner: str = "") -> tuple[Metric, ...]:
    """NAMD's figures of one run: '<mode>_<gpus>_<figure>' (gpuaccept.probe.namd), ns/day per kW first. Reported:
    the modes and GPU counts that run depend on the site's NAMD build, so a node type references those it measured."""
    return tuple(
        Metric(f"{prefix}_{figure}", unit, layer, owner, gated=False)
        for figure, unit in (
            ("ns_per_day_per_kw", "ns/day/kW"),
            ("ns_per_day", "ns/day"),
            ("s_per_step", "s/step"),
            ("wall_s", "s"),
            ("power_avg_w", "W"),
            ("energy_kj", "kJ"),
        )
    )


# NAMD: one GPU is a GPU figure, more GPUs are the node's, the CPU-only run ('cpu_...') is the host's.
_NAMD = (
    *_namd_figures("gpu_*_1", GPU),
    *_namd_figures("cpu", NODE, HOST),
    *_namd_figures("*", NODE),
    Metric("speedup_vs_cpu", "ratio", NODE, owner=HOST, gated=False),
)

_COMMISSION = ("commission", "evaluation")
# DCGM's diagnostic runs in commissioning, evaluation and, where the suite exists, the burn-in
# (gpuaccept.probe.dcgm.SUITE_LEVELS gives each its level).
_DCGM_SUITES = tuple(s for s in ("commission", "evaluation", "burnin") if s in SUITES)

CHECKS: dict[str, Check] = {
    c.key: c
    for c in (
        Check(
            "bandwidth",
            "host<->GPU and GPU<->GPU bandwidth (gpuaccept-bw)",
            _EVERY,
            True,
            "bandwidth.json",
            doc="bandwidth.md",
            metrics=(
                # Pinned copies: a fraction of the link's rate; pageable ones through the host's staging buffer.
                Metric("h2d_pinned_min", "GB/s", GPU, owner=LINK),
                Metric("d2h_pinned_min", "GB/s", GPU, owner=LINK),
                Metric("bidir_pinned_min", "GB/s", GPU, owner=LINK),
                Metric("h2d_pageable_min", "GB/s", GPU, owner=HOST, gated=False),
                Metric("d2h_pageable_min", "GB/s", GPU, owner=HOST, gated=False),
                Metric("d2d_min", "GB/s", GPU),
                # The driver's and the VM's per-call cost, and the PCIe model's fixed cost (L + o): the host's.
                Metric("latency_h2d_max", "us", GPU, owner=HOST, gated=False),
                Metric("latency_d2h_max", "us", GPU, owner=HOST, gated=False),
                Metric("h2d_fit_lo_max", "us", GPU, owner=HOST, gated=False),
                Metric("d2h_fit_lo_max", "us", GPU, owner=HOST, gated=False),
                Metric("p2p_*", "GB/s", NODE, names=P2P_METRICS),
                Metric("affinity_far_near_min", "ratio", NODE, owner=HOST, gated=False),  # the host's NUMA topology
            ),
        ),
        Check(
            "gemm",
            "cuBLAS/cuBLASLt GEMM throughput (gpuaccept-gemm)",
            _EVERY,
            True,
            "gemm.json",
            doc="gemm.md",
            metrics=(
                # The rate over the datasheet peak of its precision (gpuaccept annotate peaks,
                # reference_values/datasheets).
                Metric("*_concurrent_tflops_min_peak_fraction", "ratio", NODE, gated=False),
                Metric("*_tflops_min_peak_fraction", "ratio", GPU, gated=False),
                # every GPU at once: the node's power, cooling
                Metric("*_concurrent_tflops_min", "TFLOP/s", NODE,
                       names=tuple(f"{p}_concurrent_tflops_min" for p in GEMM_PRECISIONS)),
                # the copies from host memory inside
                Metric("*_xfer_tflops_min", "TFLOP/s", GPU, owner=HOST, gated=False),
                Metric("*_tflops_min", "TFLOP/s", GPU, names=tuple(f"{p}_tflops_min" for p in GEMM_PRECISIONS)),
            ),
        ),
        Check(
            "cpu_gemm",
            "host SGEMM/DGEMM thread scaling (gpuaccept-cpugemm)",
            _COMMISSION,
            False,
            "cpu_gemm.json",
            doc="gemm.md",
            # The rates are the host's. Whether the BLAS runs generic kernels on a CPU that has AVX2/AVX-512 is the
            # node's configuration, judged by a rule (value 1), not against another machine's figure.
            owner=HOST,
            metrics=(
                Metric("dgemm_gflops", "GFLOP/s", NODE, gated=False),
                Metric("sgemm_gflops", "GFLOP/s", NODE, gated=False),
                Metric("dgemm_scaling_efficiency", "ratio", NODE, gated=False),
                # of the CPU's nominal peak (cores x clock x FLOPs)
                Metric("dgemm_peak_fraction", "ratio", NODE, gated=False),
                Metric("sgemm_peak_fraction", "ratio", NODE, gated=False),
                Metric("blas_optimized_core", "count", NODE, owner=NODE),  # 0: generic kernels (misconfigured)
            ),
        ),
        Check(
            "mpi",
            "MPI latency and bandwidth between nodes, host and GPU buffers (gpuaccept-mpi)",
            ("multinode",),
            False,
            "mpi.json",
            doc="mpi.md",
            metrics=(
                Metric("host_latency_max", "us", NODE),
                Metric("gpu_latency_max", "us", NODE),
                Metric("host_bw_min", "GB/s", NODE),
                Metric("gpu_bw_min", "GB/s", NODE),
            ),
        ),
        # gpuaccept-nccl --multi-process over several nodes, one rank per GPU (docs/checks/across-nodes.md): the
        # node-level figures are the worst over the communicator's groups. Optional: a node type expects it where it
        # lists 'checks: nccl_across:' (measured on its own fabric); the isolation of a bad node is gpuaccept across.
        Check(
            "nccl_across",
            "NCCL collectives across nodes, one rank per GPU, ring algorithm (gpuaccept-nccl --multi-process)",
            ("multinode",),
            True,
            "nccl_across.json",
            optional=True,
            doc="across-nodes.md",
            metrics=(
                Metric("*_busbw_gbps_max", "GB/s", NODE, names=tuple(f"{c}_busbw_gbps_max" for c in NCCL_ACROSS)),
                # the slowest group's median all-reduce time at --latency-bytes
                Metric("allreduce_latency_us", "us", NODE, gated=False),
            ),
        ),
        Check(
            "nccl",
            "NCCL all-reduce, all-gather, reduce-scatter, broadcast between the node's GPUs (gpuaccept-nccl)",
            _COMMISSION,
            True,
            "nccl.json",
            doc="nccl.md",
            # nccl-tests' bus bandwidth over every GPU of the node, the best message size.
            metrics=(
                Metric("*_busbw_gbps_*", "GB/s", NODE, names=tuple(f"{c}_busbw_gbps_max" for c in NCCL_COLLECTIVES)),
                Metric("*_algbw_gbps_*", "GB/s", NODE, gated=False),
                # the median all-reduce time at the smallest size
                Metric("allreduce_latency_us", "us", NODE, gated=False),
            ),
        ),
        Check(
            "hplstyle",
            "HPL-style LU through cuSOLVER, every GPU at once (gpuaccept-hplstyle)",
            _COMMISSION,
            True,
            "hplstyle.json",
            rules=("hpl",),
            power_sampled=True,
            efficiency_metric="tflops_sum",
            doc="hpl.md",
            metrics=(
                Metric("tflops_min_peak_fraction", "ratio", GPU, gated=False),
                Metric("tflops_sum_peak_fraction", "ratio", NODE, gated=False),
                Metric("tflops_min", "TFLOP/s", GPU),
                Metric("residual_max", "ratio", GPU),
                Metric("tflops_sum", "TFLOP/s", NODE),
                Metric("gflops_per_watt", "GFLOP/s/W", NODE),  # tflops_sum per watt of every GPU
                Metric("energy_j", "J", NODE, gated=False),
                Metric("power_avg_w", "W", NODE, gated=False),
                Metric("power_peak_w", "W", NODE, gated=False),
            ),
        ),
        Check(
            "hpl_nvidia",
            "NVIDIA HPC-Benchmarks HPL (xhpl), one rank per GPU",
            _COMMISSION,
            True,
            "hpl_nvidia.json",
            optional=True,
            rules=("hpl",),
            power_sampled=True,
            efficiency_metric="tflops",
            doc="hpl.md",
            metrics=_HPL_PER_GPU,
        ),
        Check(
            "hpl_cuda",
            "HPL-CUDA: HPL 2.3's driver with gpuaccept's GPU-resident solver (matrix in GPU memory, cuSOLVER, cuBLAS)",
            _COMMISSION,
            True,
            "hpl_cuda.json",
            optional=True,
            rules=("hpl",),
            power_sampled=True,
            doc="hpl.md",
            metrics=_HPL_PER_GPU,
        ),
        Check(
            "hpl_host",
            "host HPL: netlib HPL 2.3 against MKL (gpuaccept_hpl role), else Debian's hpcc (OpenBLAS)",
            _COMMISSION,
            False,
            "hpl_host.json",
            optional=True,
            rules=("hpl",),
            doc="hpl.md",
            owner=HOST,
            metrics=(
                Metric("gflops", "GFLOP/s", NODE, gated=False),  # the host's: judged against its own baseline
                Metric("residual_max", "ratio", NODE),
            ),
        ),
        Check(
            "health",
            "GPU health: count, driver, PCIe under load, ECC, XID, processes, NVLink links and error counters, "
            "configuration against the node type's pins",
            SUITES,
            True,
            "health.json",
            rules=("health",),
            doc="health.md",
            metrics=(
                Metric("pcie_gen_min", "count", GPU),
                Metric("pcie_width_min", "count", GPU),
                Metric("health_findings", "count", GPU),
                Metric("xid_events", "count", GPU),
                # The rules judge these (the node type's health: section); the figures are reported.
                Metric("nvlink_links_up_min", "count", GPU, gated=False),
                Metric("nvlink_error_growth", "count", GPU, gated=False),  # the judge's, from the facts
                Metric("pcie_replay_growth", "count", GPU, gated=False),  # the judge's, from the facts (pcie_rules)
                Metric("pcie_aer_growth", "count", GPU, gated=False),
                Metric("config_drift", "count", GPU, gated=False),  # the judge's: fields off the pins
            ),
        ),
        # The InfiniBand / RoCE fabric of the node (docs/checks/fabric.md): ports, partition keys, GPUDirect RDMA, each
        # HCA's ib_write_bw loopback and the port counters over the suite, judged by gpuaccept.judge.fabric_judge.
        # Optional: a node type expects it where it lists 'checks: fabric:' (most nodes under test have no HCA).
        Check(
            "fabric",
            "InfiniBand/RoCE fabric: ports ACTIVE and LinkUp at the expected rate, partition keys, GPUDirect RDMA, "
            "ib_write_bw loopback per HCA, port error counters and link flaps over the suite",
            ("commission", "multinode"),
            False,
            "fabric.json",
            optional=True,
            rules=("fabric",),
            doc="fabric.md",
            owner=NODE,
            metrics=(
                Metric("ib_write_bw_min_gbps", "Gb/s", NODE, gated=False),  # the slowest HCA's loopback
                Metric("ports_active", "count", NODE, gated=False),
                Metric("fabric_findings", "count", NODE, gated=False),  # the judge's: the rules that failed
                Metric("fabric_error_growth", "count", NODE, gated=False),  # the judge's: error counters' growth
            ),
        ),
        # NVIDIA's own diagnostic (docs/checks/dcgm.md): optional, as a site may not install DCGM; every result it
        # reports as failed fails the check (gpuaccept.judge.dcgm_rules).
        Check(
            "dcgm_diag",
            "DCGM diagnostic: dcgmi diag at the suite's level, every test per GPU (gpuaccept dcgm-diag)",
            _DCGM_SUITES,
            True,
            "dcgm_diag.json",
            optional=True,
            rules=("dcgm",),
            doc="dcgm.md",
            metrics=(
                Metric("dcgm_passed", "count", GPU, gated=False),
                Metric("dcgm_failed", "count", GPU, gated=False),
                Metric("dcgm_warned", "count", GPU, gated=False),
                Metric("dcgm_skipped", "count", GPU, gated=False),
                Metric("dcgm_*", "count", GPU, gated=False),  # a skipped test, waived: dcgm_<test>_gpu<N>
            ),
        ),
        Check(
            "power",
            "idle power, power under a sustained GEMM, GFLOP/s per watt, throttling",
            _EVERY,
            True,
            "power_check.json",
            rules=("throttle",),
            doc="power.md",
            metrics=(
                Metric("host_power_load_w", "W", NODE, owner=HOST, gated=False),
                Metric("idle_power_max_w", "W", GPU),
                Metric("load_power_min_w", "W", GPU),
                Metric("load_power_max_w", "W", GPU),
                Metric("gflops_per_watt", "GFLOP/s/W", GPU),
                Metric("gemm_energy_j", "J", GPU, gated=False),
                Metric("load_energy_j", "J", GPU, gated=False),
            ),
        ),
        # The GPU memory test (docs/checks/memtest.md): every GPU at once, nearly all of its free memory. A bad word
        # fails the check by its rule (a count has no band); the share of the memory tested is gated by a floor; the
        # memory tested and the rate it was swept at are reported.
        Check(
            "memtest",
            "GPU memory test: moving inversions, address in address and random patterns over nearly all free memory "
            "of every GPU at once (gpuaccept-memtest)",
            _COMMISSION,
            True,
            "memtest.json",
            rules=("memtest",),
            doc="memtest.md",
            metrics=(
                Metric("errors_total", "count", GPU),  # 64-bit words that did not hold what was written
                Metric("tested_fraction_min", "ratio", GPU),  # the memory tested over the GPU's total
                Metric("bytes_tested_min", "GiB", GPU, gated=False),
                Metric("throughput_gbps_min", "GB/s", GPU, gated=False),  # bytes written + read per second
            ),
        ),
        # The burn-in (docs/checks/burnin.md): sustained GEMM windows alternating with the memory test on every GPU at
        # once, every GPU read through NVML each second. The rules decide (gpuaccept.judge.burnin_rules): its figures
        # are reported (min, max or sum over the GPUs in the document, and each GPU's own in gpu_metrics).
        Check(
            "burnin",
            "burn-in: sustained GEMM and the memory test on every GPU at once for a duration (default 30 minutes), "
            "clocks, temperatures, power, throttling, XID, ECC, row remapping and NVLink errors read every second",
            ("burnin",),
            True,
            "burnin.json",
            rules=("burnin",),
            doc="burnin.md",
            metrics=(
                Metric("tflops_first_window_min", "TFLOP/s", GPU, gated=False),
                Metric("tflops_last_window_min", "TFLOP/s", GPU, gated=False),
                Metric("tflops_last_over_first_min", "ratio", GPU, gated=False),  # judged by the rule (at least 0.9)
                Metric("gpu_temp_max_c", "C", GPU, gated=False),
                Metric("memory_temp_max_c", "C", GPU, gated=False),
                Metric("power_median_max_w", "W", GPU, gated=False),
                Metric("throttle_other_samples", "count", GPU, gated=False),  # reasons other than the power cap or idle
                Metric("xid_events", "count", GPU, gated=False),
                Metric("ecc_uncorrectable_new", "count", GPU, gated=False),
                Metric("remapped_rows_pending", "count", GPU, gated=False),
                Metric("nvlink_errors_new", "count", GPU, gated=False),
                Metric("gemm_windows_min", "count", GPU, gated=False),
            ),
        ),
        # Compute/transfer overlap and van Werkhoven et al. (2014)'s model of it (docs/checks/overlap.md): evaluation
        # only, and optional until a node type has measured it. How copies overlap and how well the PCIe model
        # predicts them are the host's and the link's (host memory, the IOMMU, the driver, the VM), not the GPU
        # model's: reported, not judged. Min/max over the node's GPUs, each measured alone.
        Check(
            "overlap",
            "compute/transfer overlap: sync copies, 1-16 streams, mapped and managed memory, measured and predicted "
            "by van Werkhoven et al. (2014)'s PCIe model (gpuaccept-overlap)",
            ("evaluation",),
            True,
            "overlap.json",
            optional=True,
            doc="overlap.md",
            owner=HOST,
            metrics=(
                # H2D and D2H at once: 1 full duplex, 0 serialised
                Metric("duplex_overlap_min", "ratio", GPU, gated=False),
                Metric("stream_speedup_min", "ratio", GPU, gated=False),  # sync over the best streamed time
                # the PCIe model's predictions against the measured times
                Metric("model_rel_error_max", "ratio", GPU, gated=False),
                # Kendall's tau of the predicted against measured order
                Metric("model_rank_tau_min", "ratio", GPU, gated=False),
            ),
        ),
        # Transfer-inclusive GEMM after Allada et al. (2009) and its crossover against the host's BLAS
        # (docs/checks/offload-gemm.md): evaluation only and optional, like overlap (its figures are the host's and the
        # link's: reported, not judged).
        Check(
            "offload_gemm",
            "GEMM offload: cuBLAS DGEMM/SGEMM/TF32/BF16 kernel-only and with the copies from pinned and pageable "
            "memory, and the size from which it beats the host's BLAS (gpuaccept-xgemm, gpuaccept-cpugemm)",
            ("evaluation",),
            True,
            "offload_gemm.json",
            optional=True,
            one_gpu=True,
            doc="offload-gemm.md",
            # Copies from host memory inside a transfer-inclusive rate (as gemm's *_xfer_tflops_min), and the host's
            # BLAS on the other side of the crossover: the whole offload over the kernel alone at the largest n, and
            # the n from which it beats the host's BLAS (gpuaccept.probe.offload).
            owner=HOST,
            metrics=(
                Metric("*_pinned_over_kernel_ratio", "ratio", GPU, gated=False),
                Metric("*_pageable_over_kernel_ratio", "ratio", GPU, gated=False),
                Metric("*_crossover_n_pinned", "n", GPU, gated=False),
                Metric("*_crossover_n_pageable", "n", GPU, gated=False),
            ),
        ),
        # FFT offload, as the remote BLAS/FFT offload thesis measured it (docs/checks/fft-offload.md): cuFFT against
        # the host's FFT, with and without the copies. Evaluation only and optional: it needs a host FFT (MKL or
        # FFTW), and its figures are the host's and the link's as much as the GPU's (reported, not judged).
        Check(
            "fft_offload",
            "FFT offload: cuFFT against the host's FFT (MKL or FFTW, all cores), 1-D batched and 3-D, fp32 and fp64, "
            "with and without the copies; speed-up and crossover size (gpuaccept-fft)",
            ("evaluation",),
            True,
            "fft_offload.json",
            optional=True,
            one_gpu=True,
            doc="fft-offload.md",
            # An FFT offload's speed-up is the host's FFT over the GPU's time with the host's copies: the host's figure.
            # Per shape and precision (fft1d_fp32 ... fft3d_fp64) at the largest size, and the crossover size in points.
            owner=HOST,
            metrics=(
                # host FFT time over cuFFT time (kernel, pinned, pageable)
                Metric("fft*_speedup_*", "ratio", GPU, gated=False),
                # from the sweep (gpuaccept annotate fft)
                Metric("fft*_crossover_points_*", "points", GPU, gated=False),
            ),
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
            doc="md.md",
            metrics=_MD_APOA1,
        ),
        Check(
            "md_apoa1_x12",
            "APOA1 replicated 3x2x2 (1,106,688 atoms, STMV's scale; not STMV) through OpenMM: ns/day, memory "
            "(gpuaccept-md-apoa1 --replicate 3,2,2)",
            ("evaluation",),
            True,
            "md_apoa1_x12.json",
            doc="md.md",
            metrics=_MD_APOA1,
        ),
        Check(
            "namd_apoa1",
            "NAMD APOA1 (92,224 atoms): ns/day, speedup over CPU, energy to solution (gpuaccept-namd)",
            ("evaluation",),
            True,
            "namd_apoa1.json",
            optional=True,
            doc="md.md",
            metrics=_NAMD,
        ),
        Check(
            "namd_stmv",
            "NAMD STMV (1,066,628 atoms): ns/day, speedup over CPU, energy to solution (gpuaccept-namd)",
            ("evaluation",),
            True,
            "namd_stmv.json",
            optional=True,
            doc="md.md",
            metrics=_NAMD,
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
