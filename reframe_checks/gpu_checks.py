"""GPU checks: host<->GPU bandwidth matrix (gpuaccept-bw), cuBLASLt GEMM (gpuaccept-gemm), NCCL collectives
(gpuaccept-nccl), compute/transfer overlap (gpuaccept-overlap).

They run on partitions with the ``gpu`` feature; the benchmarks are built once per environment by a
compile-only fixture from ``src/``. What they measure: docs/checks/bandwidth.md, docs/checks/gemm.md,
docs/checks/nccl.md, docs/checks/overlap.md.
"""

import shlex
import sys

import reframe as rfm
from reframe.core.builtins import fixture, run_after, run_before, variable

from gpuaccept.rfm import BenchBuild, BenchCheck


class GpuBenchBuild(BenchBuild):
    """Builds gpuaccept-bw and gpuaccept-gemm with nvcc."""

    make_targets = ["gpu"]
    binaries = ["gpuaccept-bw", "gpuaccept-gemm"]


class GpuBenchCheck(BenchCheck):
    """A GPU micro-benchmark on a partition with GPUs, built by GpuBenchBuild unless it names its own fixture."""

    valid_systems = ["+gpu"]
    build = fixture(GpuBenchBuild, scope="environment")


class NcclBuild(BenchBuild):
    """gpuaccept-nccl: prebuilt in ``extras.bench_dir`` (the gpuaccept_bench role), or built with nvcc against
    NCCL: the partition's ``extras.nccl_home`` when set, else the Makefile's default (the CUDA installation's
    NCCL, else /usr)."""

    make_targets = ["nccl"]
    binaries = ["gpuaccept-nccl"]

    @run_before("compile")
    def set_nccl_home(self):
        nccl_home = (self.current_partition.extras or {}).get("nccl_home")
        if nccl_home and not self.prebuilt():  # prebuilt: linked from bench_dir, nothing compiled
            self.build_system.options = [f"NCCL_HOME={shlex.quote(str(nccl_home))}", *self.build_system.options]


class OverlapBuild(BenchBuild):
    """Builds gpuaccept-overlap with nvcc (prebuilt by the gpuaccept_bench role's ``gpu`` target)."""

    make_targets = ["overlap"]
    binaries = ["gpuaccept-overlap"]


@rfm.simple_test
class GpuBandwidth(GpuBenchCheck):
    """Host<->GPU bandwidth: NetPIPE-style size sweep, NUMA node x GPU matrix, GPU x GPU peers, PCIe model.

    Metrics (docs/benchmark-json.md): h2d/d2h pinned and pageable (min over GPUs, local NUMA node),
    bidir_pinned_min, d2d_min, p2p_*_min (waived without peers), latency_*_max, affinity_far_near_min
    (waived with one NUMA node), h2d/d2h_fit_lo_max.
    """

    check_key = "bandwidth"
    binary = "gpuaccept-bw"
    time_limit = "20m"


@rfm.simple_test
class GpuGemm(GpuBenchCheck):
    """cuBLASLt GEMM in FP64, FP32, TF32, BF16, FP16 and FP8 (waived below compute capability 8.9), each with the
    fastest of the heuristic's algorithms.

    Metrics: <precision>_tflops_min (solo, median of a sustained window, min over GPUs),
    <precision>_concurrent_tflops_min (all GPUs at once; waived with one GPU),
    <precision>_xfer_tflops_min (including host<->device transfers), and <rate>_peak_fraction for the first
    two (the rate over the datasheet peak of its precision; informational).
    """

    check_key = "gemm"
    binary = "gpuaccept-gemm"
    time_limit = "20m"
    peak_fractions = True


@rfm.simple_test
class GpuNccl(GpuBenchCheck):
    """NCCL all-reduce, all-gather, reduce-scatter and broadcast between the node's GPUs, one thread per GPU,
    every result verified; NVLink SHARP (NVLS) off (docs/checks/nccl.md).

    Metrics: allreduce_busbw_gbps_max, allgather_busbw_gbps_max, reducescatter_busbw_gbps_max,
    broadcast_busbw_gbps_max (largest bus bandwidth over the size sweep, nccl-tests' definition, all GPUs in
    one communicator), allreduce_latency_us (median time at the smallest size). With one GPU all are waived
    ("one GPU: no peers") and a one-rank self-test runs every collective instead.
    """

    check_key = "nccl"
    binary = "gpuaccept-nccl"
    time_limit = "10m"
    build = fixture(NcclBuild, scope="environment")
    env_vars = {"NCCL_NVLS_ENABLE": "0"}


@rfm.simple_test
class GpuPower(GpuBenchCheck):
    """Power (seed 003) through ``gpuaccept powercheck``: the idle node, then a sustained GEMM on every GPU at
    once under the power sampler (docs/checks/power.md).

    Variables: ``precision`` (of the GEMM load).
    Metrics: idle_power_max_w, load_power_min_w, load_power_max_w (median under load, against the cap),
    load_energy_j, gflops_per_watt, gemm_energy_j (energy of one GEMM call), host_power_load_w (IPMI DCMI;
    waived "not available" without it). Throttling other than the power cap under load fails the check.
    """

    #: GEMM precision of the load.
    #:
    #: :type: :class:`str`
    precision = variable(str, value="fp64")

    check_key = "power"
    binary = "gpuaccept-gemm"
    time_limit = "10m"

    @run_after("setup")
    def set_powercheck(self):
        gemm = self.executable
        self.executable = sys.executable
        self.executable_opts = ["-m", "gpuaccept", "powercheck", "--gemm", gemm, "--precision", self.precision,
                                *self.executable_opts]  # fmt: skip
        self.keep_files = [*self.keep_files, "power_gemm_*.json"]


@rfm.simple_test
class GpuOverlap(GpuBenchCheck):
    """Compute/transfer overlap (seed 002): a kernel of tunable arithmetic intensity over data that starts and ends in
    pinned host memory, moved by synchronous copies, asynchronous copies in 1-16 streams, mapped (zero-copy) host
    memory and managed memory with prefetch, each verified; then ``gpuaccept overlap-model`` predicts each method
    from the same run's PCIe model (L+o, G, g per direction) and copy-engine count (docs/checks/overlap.md).

    Metrics (informational: the host's and the link's): duplex_overlap_min (H2D and D2H at once, 1 full duplex),
    stream_speedup_min (sync over the best streamed time), model_rel_error_max, model_rank_tau_min.
    """

    check_key = "overlap"
    binary = "gpuaccept-overlap"
    time_limit = "30m"
    build = fixture(OverlapBuild, scope="environment")

    @run_before("run")
    def add_model(self):
        """After the benchmark, ``gpuaccept overlap-model`` adds the predictions and the model's metrics to its
        document; the job still exits with the benchmark's status (or 4 when only the model failed)."""
        model = " ".join(
            shlex.quote(a) for a in (sys.executable, "-m", "gpuaccept", "overlap-model", self.result_file)
        )
        self.postrun_cmds = [
            *self.postrun_cmds,
            "_gpuaccept_rc=$?",
            f"if [ -f {shlex.quote(self.result_file)} ]; then {model} || "
            "{ [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi",
            "exit $_gpuaccept_rc",
        ]
