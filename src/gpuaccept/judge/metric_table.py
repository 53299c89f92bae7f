"""Every metric gpuaccept judges: its unit and its layer, in one table.

The unit is the one the tool writes in its benchmark document (docs/benchmark-json.md) and the one a reference
file must give; the layer says where its reference lives (docs/reference-values.md):

- ``gpu``: a figure of one GPU, the same for every GPU of a SKU whatever the node (copies to and from the host,
  GEMM, HPL per GPU, power and health per GPU, an application on one GPU). Kept in
  ``reference_values/gpus/<sku>.yaml``.
- ``node``: a figure of the node as built (GPU count, peer-to-peer, NUMA x GPU, collectives, host GEMM and
  host HPL, node sums, applications on all GPUs or on the host). Kept in ``reference_values/<node_type>.yaml``.

Each metric also has an **owner**, what the figure is a property of, and so what it may be judged against
(docs/verdicts.md):

- ``gpu``: the GPU model guarantees it (GEMM per precision, device memory bandwidth, power and efficiency under
  load, HPL and MD on the GPU, the link's trained width and generation): judged against the GPU model's figures,
  with a band that catches a 10 % loss.
- ``link``: the PCIe link carries it (pinned host<->GPU copies): judged as a fraction of the rate of the link
  NVML reports (``link_fraction``, gpuaccept.judge.link), whatever machine the GPU sits in.
- ``host``: the host, the VM and the moment give it (pageable copies, latencies, the PCIe model's fixed cost,
  host BLAS and host HPL, CPU-only baselines, copies inside a transfer-inclusive rate): never judged against
  another machine's figures; informational in shipped reference files, judged only against the node's own
  baseline (``gpuaccept baseline --node-baseline``).
- ``node``: the node as built (GPU count, peers, collectives, every GPU at once, node sums): judged against
  the node type's figures.

Patterns are ``fnmatch`` patterns; the first that matches a metric name wins. This is data: add a metric here
when a tool learns it, and the references and the judge follow.
"""

from __future__ import annotations

import fnmatch

GPU, NODE = "gpu", "node"
LAYERS = (GPU, NODE)
LINK, HOST = "link", "host"
OWNERS = (GPU, LINK, HOST, NODE)

# check -> ((metric pattern, unit, layer), ...)
METRICS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "bandwidth": (
        ("h2d_pinned_min", "GB/s", GPU),
        ("d2h_pinned_min", "GB/s", GPU),
        ("bidir_pinned_min", "GB/s", GPU),
        ("h2d_pageable_min", "GB/s", GPU),
        ("d2h_pageable_min", "GB/s", GPU),
        ("d2d_min", "GB/s", GPU),
        ("latency_h2d_max", "us", GPU),
        ("latency_d2h_max", "us", GPU),
        ("h2d_fit_lo_max", "us", GPU),
        ("d2h_fit_lo_max", "us", GPU),
        ("p2p_*", "GB/s", NODE),
        ("affinity_far_near_min", "ratio", NODE),
    ),
    "gemm": (
        # The rate over the datasheet peak of its precision (gpuaccept peaks, reference_values/datasheets).
        ("*_concurrent_tflops_min_peak_fraction", "ratio", NODE),
        ("*_tflops_min_peak_fraction", "ratio", GPU),
        ("*_concurrent_tflops_min", "TFLOP/s", NODE),  # every GPU at once: the node's power and cooling
        ("*_xfer_tflops_min", "TFLOP/s", GPU),
        ("*_tflops_min", "TFLOP/s", GPU),
    ),
    "cpu_gemm": (
        ("dgemm_gflops", "GFLOP/s", NODE),
        ("sgemm_gflops", "GFLOP/s", NODE),
        ("dgemm_scaling_efficiency", "ratio", NODE),
        ("dgemm_peak_fraction", "ratio", NODE),  # of the host CPU's nominal peak (cores x clock x FLOPs per cycle)
        ("sgemm_peak_fraction", "ratio", NODE),
        ("blas_optimized_core", "count", NODE),  # 0: generic kernels on a CPU with AVX2/AVX-512 (misconfigured BLAS)
    ),
    "mpi": (
        ("host_latency_max", "us", NODE),
        ("gpu_latency_max", "us", NODE),
        ("host_bw_min", "GB/s", NODE),
        ("gpu_bw_min", "GB/s", NODE),
    ),
    "hplstyle": (
        ("tflops_min_peak_fraction", "ratio", GPU),
        ("tflops_sum_peak_fraction", "ratio", NODE),
        ("tflops_min", "TFLOP/s", GPU),
        ("residual_max", "ratio", GPU),
        ("tflops_sum", "TFLOP/s", NODE),
        ("gflops_per_watt", "GFLOP/s/W", NODE),  # tflops_sum per watt of every GPU
        ("energy_j", "J", NODE),
        ("power_avg_w", "W", NODE),
        ("power_peak_w", "W", NODE),
    ),
    "hpl_nvidia": (
        ("tflops_per_gpu", "TFLOP/s", GPU),
        ("tflops", "TFLOP/s", NODE),
        ("residual_max", "ratio", NODE),
    ),
    "hpl_host": (
        ("gflops", "GFLOP/s", NODE),
        ("residual_max", "ratio", NODE),
    ),
    # HPL 2.3's driver with gpuaccept's GPU-resident solver: the matrix generated, factored and solved in GPU
    # memory (cuSOLVER panels, cuBLAS updates), so its rate per GPU is the GPU model's.
    "hpl_cuda": (
        ("tflops_per_gpu", "TFLOP/s", GPU),
        ("tflops", "TFLOP/s", NODE),
        ("residual_max", "ratio", NODE),
    ),
    "health": (
        ("pcie_gen_min", "count", GPU),
        ("pcie_width_min", "count", GPU),
        ("health_findings", "count", GPU),
        ("xid_events", "count", GPU),
    ),
    "power": (
        ("host_power_load_w", "W", NODE),
        ("idle_power_max_w", "W", GPU),
        ("load_power_min_w", "W", GPU),
        ("load_power_max_w", "W", GPU),
        ("gflops_per_watt", "GFLOP/s/W", GPU),
        ("gemm_energy_j", "J", GPU),
        ("load_energy_j", "J", GPU),
    ),
    # APOA1 through OpenMM (docs/checks/md.md): one GPU's figures are the GPU's; all GPUs at once and the host's
    # CPU platform are the node's. The 3 x 2 x 2 replicated system (md_apoa1_x12) reports the same metrics.
    **{
        check: (
            ("all_gpus_ns_per_day", "ns/day", NODE),
            ("cpu_ns_per_day", "ns/day", NODE),
            ("speedup_vs_cpu", "ratio", NODE),
            ("ns_per_day", "ns/day", GPU),
            ("ns_per_day_per_kw", "ns/day/kW", GPU),
            ("s_per_step", "s/step", GPU),
            ("wall_s", "s", GPU),
            ("gpu_power_avg_w", "W", GPU),
            ("gpu_energy_kj", "kJ", GPU),
            ("gpu_memory_used_gib", "GiB", GPU),
            ("energy_bonded_max_rel_diff", "ratio", GPU),
            ("energy_nonbonded_rel_diff", "ratio", GPU),
            ("energy_drift_ratio", "ratio", GPU),
        )
        for check in ("md_apoa1", "md_apoa1_x12")
    },
    # NAMD: '<mode>_<gpus>_<figure>'; one GPU is a GPU figure, more GPUs and the host are the node's.
    **{
        check: (
            ("gpu_*_1_ns_per_day_per_kw", "ns/day/kW", GPU),
            ("gpu_*_1_ns_per_day", "ns/day", GPU),
            ("gpu_*_1_s_per_step", "s/step", GPU),
            ("gpu_*_1_wall_s", "s", GPU),
            ("gpu_*_1_power_avg_w", "W", GPU),
            ("gpu_*_1_energy_kj", "kJ", GPU),
            ("*_ns_per_day_per_kw", "ns/day/kW", NODE),
            ("*_ns_per_day", "ns/day", NODE),
            ("*_s_per_step", "s/step", NODE),
            ("*_wall_s", "s", NODE),
            ("*_power_avg_w", "W", NODE),
            ("*_energy_kj", "kJ", NODE),
            ("speedup_vs_cpu", "ratio", NODE),
        )
        for check in ("namd_apoa1", "namd_stmv")
    },
    # Compute/transfer overlap (gpuaccept-overlap, seed 002; docs/checks/overlap.md): min/max over the node's GPUs,
    # each measured alone.
    "overlap": (
        ("duplex_overlap_min", "ratio", GPU),  # H2D and D2H at once: 1 full duplex, 0 serialised
        ("stream_speedup_min", "ratio", GPU),  # sync over the best streamed time
        ("model_rel_error_max", "ratio", GPU),  # seed 002's predictions against the measured times
        ("model_rank_tau_min", "ratio", GPU),  # Kendall's tau of the predicted against the measured order
    ),
    # Transfer-inclusive GEMM on one GPU (gpuaccept-xgemm, seed 000; docs/checks/offload-gemm.md): the whole offload
    # over the kernel alone at the largest n, and the n from which it beats the host's BLAS (gpuaccept.probe.offload).
    "offload_gemm": (
        ("*_pinned_over_kernel_ratio", "ratio", GPU),
        ("*_pageable_over_kernel_ratio", "ratio", GPU),
        ("*_crossover_n_pinned", "n", GPU),
        ("*_crossover_n_pageable", "n", GPU),
    ),
    # FFT offload (gpuaccept-fft, seed 001; docs/checks/fft-offload.md): one GPU against the host's FFT on all cores,
    # per shape and precision (fft1d_fp32 ... fft3d_fp64) at the largest size, and the crossover size in points.
    "fft_offload": (
        ("fft*_speedup_*", "ratio", GPU),  # host FFT time over cuFFT time (kernel alone, pinned, pageable offload)
        ("fft*_crossover_points_*", "points", GPU),  # from the sweep (python -m gpuaccept.probe.fft)
    ),
    # NCCL collectives over every GPU of the node (nccl-tests' bus bandwidth, the best message size).
    "nccl": (
        ("*_busbw_gbps_*", "GB/s", NODE),
        ("*_algbw_gbps_*", "GB/s", NODE),
        ("allreduce_latency_us", "us", NODE),  # the median all-reduce time at the smallest size
    ),
}

# The power sampler's metrics (gpuaccept sample, docs/checks/power.md), added to any check run under it: all GPUs
# of the node over the benchmark's run. A check's own rows above come first.
SAMPLER = (
    ("energy_j", "J", NODE),
    ("power_avg_w", "W", NODE),
    ("power_peak_w", "W", NODE),
    ("gflops_per_watt", "GFLOP/s/W", NODE),
)
METRICS = {check: (*rows, *SAMPLER) for check, rows in METRICS.items()}

UNITS = tuple(sorted({unit for rows in METRICS.values() for _, unit, _ in rows}))

# Owners that are not the layer's: check -> ((metric pattern, owner), ...), first match wins. A metric no row
# names here is owned by its layer (a per-GPU figure by the GPU model, a node-level one by the node).
_OWNER_ROWS: dict[str, tuple[tuple[str, str], ...]] = {
    "bandwidth": (
        ("h2d_pinned_min", LINK),
        ("d2h_pinned_min", LINK),
        ("bidir_pinned_min", LINK),
        ("*_pageable_min", HOST),  # the host's memory system copies through a staging buffer
        ("latency_*", HOST),  # the driver's and the VM's per-call cost
        ("*_fit_lo_max", HOST),  # the PCIe model's fixed cost (L + o): the same
        ("affinity_far_near_min", HOST),  # the host's NUMA topology
    ),
    "gemm": (("*_xfer_tflops_min", HOST),),  # the copies from host memory inside the rate
    # Whether the BLAS runs generic kernels on a CPU that has AVX2/AVX-512 is the node's configuration, judged by
    # a rule (value 1), not against another machine's figure; the rates are the host's.
    "cpu_gemm": (("blas_optimized_core", NODE), ("*", HOST)),
    "hpl_host": (("*", HOST),),
    # How copies overlap and how well the PCIe model predicts them are the host's and the link's (host memory, the
    # IOMMU, the driver, the VM), not the GPU model's.
    "overlap": (("*", HOST),),
    # Copies from host memory inside a transfer-inclusive rate (as gemm's *_xfer_tflops_min), and the host's BLAS
    # on the other side of the crossover.
    "offload_gemm": (("*", HOST),),
    # An FFT offload's speed-up is the host's FFT over the GPU's time with the host's copies: the host's figure.
    "fft_offload": (("*", HOST),),
    "power": (("host_power_load_w", HOST),),
    **{check: (("cpu_ns_per_day", HOST), ("speedup_vs_cpu", HOST)) for check in ("md_apoa1", "md_apoa1_x12")},
    **{check: (("cpu_*", HOST), ("speedup_vs_cpu", HOST)) for check in ("namd_apoa1", "namd_stmv")},
}


class UnknownMetric(KeyError):
    """A check or metric the table does not know."""

    def __str__(self) -> str:
        return str(self.args[0])


def lookup(check: str, metric: str) -> tuple[str, str]:
    """(unit, layer) of one metric; UnknownMetric when the table has no row for it."""
    rows = METRICS.get(check)
    if rows is None:
        raise UnknownMetric(f"unknown check {check!r} (known: {', '.join(sorted(METRICS))})")
    for pattern, unit, layer in rows:
        if fnmatch.fnmatchcase(metric, pattern):
            return unit, layer
    raise UnknownMetric(
        f"check {check!r} has no metric {metric!r} (src/gpuaccept/metric_table.py lists the metrics of each check)"
    )


def unit(check: str, metric: str) -> str:
    return lookup(check, metric)[0]


def layer(check: str, metric: str) -> str:
    return lookup(check, metric)[1]


def owner(check: str, metric: str) -> str:
    """What owns the figure: ``gpu``, ``link``, ``host`` or ``node`` (module docstring); UnknownMetric when the
    table does not know the metric."""
    _unit, where = lookup(check, metric)
    for pattern, who in _OWNER_ROWS.get(check, ()):
        if fnmatch.fnmatchcase(metric, pattern):
            return who
    return where


def document_problems(check: str, doc: dict) -> list[str]:
    """What in a benchmark document (docs/benchmark-json.md) disagrees with this table: a metric it does not know,
    or a unit other than the metric's. Empty when the document and the table agree."""
    problems = []
    for name, metric in (doc.get("metrics") or {}).items():
        try:
            want = unit(check, name)
        except UnknownMetric as err:
            problems.append(str(err))
            continue
        got = metric.get("unit") if isinstance(metric, dict) else None
        if got != want:
            problems.append(f"{check}.{name}: unit {got!r}, the metric's unit is {want!r}")
    for name in doc.get("waived") or {}:
        try:
            lookup(check, name)
        except UnknownMetric as err:
            problems.append(str(err))
    return problems
