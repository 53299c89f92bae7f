"""GPU checks: host<->GPU bandwidth matrix (gpuaccept-bw), cuBLASLt GEMM (gpuaccept-gemm), NCCL collectives
(gpuaccept-nccl, within the node and, in the multinode suite, across nodes), the GPU memory test
(gpuaccept-memtest), compute/transfer overlap (gpuaccept-overlap), GEMM offload against the host (gpuaccept-xgemm),
FFT offload against the host (gpuaccept-fft).

They run on partitions with the ``gpu`` feature; the benchmarks are built once per environment by a
compile-only fixture from ``src/``. What they measure: docs/checks/bandwidth.md, docs/checks/gemm.md,
docs/checks/nccl.md, docs/checks/across-nodes.md, docs/checks/memtest.md, docs/checks/overlap.md,
docs/checks/offload-gemm.md, docs/checks/fft-offload.md.
"""

import os
import shlex
import sys

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, run_before, variable

from gpuaccept.rfm import HOST_BLAS_ENV, BenchBuild, BenchCheck


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
    NCCL: the partition's ``extras.nccl_home`` (where ``reframe_checks/src/find-nccl.sh`` found it when the
    configuration was written). Where the configuration says the node has none (``nccl_home`` ''), nothing is
    built and ``not_run_reason`` says why (the check is then NOT RUN, not failed); a configuration without the key
    leaves the search to the Makefile."""

    make_targets = ["nccl"]
    binaries = ["gpuaccept-nccl"]

    @run_before("compile", always_last=True)
    def set_nccl_home(self):
        if self.prebuilt():  # linked from bench_dir, nothing compiled
            return
        extras = self.current_partition.extras or {}
        nccl_home = extras.get("nccl_home")
        if nccl_home:
            self.build_system.options = [f"NCCL_HOME={shlex.quote(str(nccl_home))}", *self.build_system.options]
        elif "nccl_home" in extras:
            self.not_run_reason = (
                "no NCCL on this node: reframe_checks/src/find-nccl.sh found include/nccl.h and libnccl.so.2 neither "
                "in CUDA_HOME, /usr nor a Python nvidia.nccl package (install NCCL, or set NCCL_HOME, then rewrite the "
                "ReFrame configuration: the gpuaccept_reframe role or gpuaccept reframe-config)"
            )
            self.build_system = "CustomBuild"
            self.build_system.commands = ["true"]


class OverlapBuild(BenchBuild):
    """Builds gpuaccept-overlap with nvcc (prebuilt by the gpuaccept_bench role's ``gpu`` target)."""

    make_targets = ["overlap"]
    binaries = ["gpuaccept-overlap"]


class XgemmBuild(BenchBuild):
    """Builds gpuaccept-xgemm with nvcc (prebuilt by the gpuaccept_bench role's ``gpu`` target)."""

    make_targets = ["xgemm"]
    binaries = ["gpuaccept-xgemm"]


class MemtestBuild(BenchBuild):
    """Builds gpuaccept-memtest with nvcc (prebuilt by the gpuaccept_bench role's ``gpu`` target)."""

    make_targets = ["memtest"]
    binaries = ["gpuaccept-memtest"]


class FftBuild(BenchBuild):
    """Builds gpuaccept-fft with nvcc against the host's FFT: MKL's FFTW3 interface where the partition's
    ``extras.blas`` is ``mkl`` or ``mkl-static`` (with ``extras.mklroot``), else FFTW3 where ``extras.fftw_inc`` or
    /usr/include holds fftw3.h (``extras.fftw_lib``, default the Debian multiarch directory). Neither: nothing is
    built and ``not_run_reason`` says why (the check is then NOT RUN, not failed)."""

    make_targets = ["fft"]
    binaries = ["gpuaccept-fft"]

    @run_before("compile", always_last=True)
    def set_host_fft(self):
        if self.prebuilt():
            return
        extras = self.current_partition.extras or {}
        blas = str(extras.get("blas") or "none")
        fftw_inc = str(extras.get("fftw_inc") or "/usr/include")
        if blas in ("mkl", "mkl-static"):
            opts = [f"FFT={blas}"]
            if extras.get("mklroot"):
                opts.append(f"MKLROOT={shlex.quote(str(extras['mklroot']))}")
        elif os.path.isfile(os.path.join(fftw_inc, "fftw3.h")):
            opts = ["FFT=fftw", f"FFTW_INC={shlex.quote(fftw_inc)}"]
            if extras.get("fftw_lib"):
                opts.append(f"FFTW_LIB={shlex.quote(str(extras['fftw_lib']))}")
        else:
            self.not_run_reason = (
                f"no host FFT to compare cuFFT with: the partition's BLAS is {blas!r} (not MKL) and {fftw_inc} has no "
                "fftw3.h (install libfftw3-dev, or Intel MKL with gpuaccept_toolenv_mkl: true)"
            )
            self.build_system = "CustomBuild"
            self.build_system.commands = ["true"]
            return
        self.build_system.options = [*opts, *self.build_system.options]


@rfm.simple_test
class GpuBandwidth(GpuBenchCheck):
    """Host<->GPU bandwidth: NetPIPE-style size sweep, NUMA node x GPU matrix, GPU x GPU peers, PCIe model.

    Metrics (docs/benchmark-json.md): h2d/d2h pinned and pageable (min over GPUs, local NUMA node),
    bidir_pinned_min, d2d_min, p2p_*_min (waived without peers), latency_*_max, affinity_far_near_min
    (waived with one NUMA node), h2d/d2h_fit_lo_max; each GPU's own figures in ``gpu_metrics`` (judged per GPU).
    Host copies are measured one GPU at a time, the device-local copy on every GPU at once
    (docs/checks/bandwidth.md).
    """

    check_key = "bandwidth"
    binary = "gpuaccept-bw"
    time_limit = "20m"


@rfm.simple_test
class GpuGemm(GpuBenchCheck):
    """cuBLASLt GEMM in FP64, FP32, TF32, BF16, FP16 and FP8 (waived below compute capability 8.9), each with the
    fastest of the heuristic's algorithms.

    Metrics: <precision>_tflops_min (median of a sustained window, min over GPUs; with several GPUs every GPU
    busy at once, docs/checks/gemm.md), <precision>_concurrent_tflops_min (all GPUs at once; waived with one
    GPU), <precision>_xfer_tflops_min (including host<->device transfers, one GPU at a time), and
    <rate>_peak_fraction for the first two (the rate over the datasheet peak of its precision; informational);
    each GPU's own rates in ``gpu_metrics`` (judged per GPU).
    """

    check_key = "gemm"
    binary = "gpuaccept-gemm"
    time_limit = "20m"
    peak_fractions = True


@rfm.simple_test
class GpuNccl(GpuBenchCheck):
    """NCCL all-reduce, all-gather, reduce-scatter and broadcast between the node's GPUs, one thread per GPU,
    every result verified; NVLink SHARP (NVLS) off unless ``nccl_nvls`` (docs/checks/nccl.md).

    Variables: ``nccl_nvls`` (let NCCL use NVLS: ``--allow-nvls`` and NCCL_NVLS_ENABLE=1; default off,
    NCCL_NVLS_ENABLE=0), plus BenchCheck's. The document's ``parameters.nvls`` and its environment record the value.
    Metrics: allreduce_busbw_gbps_max, allgather_busbw_gbps_max, reducescatter_busbw_gbps_max,
    broadcast_busbw_gbps_max (largest bus bandwidth over the size sweep, nccl-tests' definition, all GPUs in
    one communicator), allreduce_latency_us (median time at the smallest size). With one GPU all are waived
    ("one GPU: no peers") and a one-rank self-test runs every collective instead.
    """

    #: Let NCCL use NVLink SHARP (multicast): only for a site that has verified it on nodes nobody else shares.
    #:
    #: :type: :class:`bool`
    nccl_nvls = variable(bool, value=False)

    check_key = "nccl"
    binary = "gpuaccept-nccl"
    time_limit = "10m"
    build = fixture(NcclBuild, scope="environment")

    @run_after("setup")
    def need_nccl(self):
        if self.build.not_run_reason:
            self.skip(self.build.not_run_reason)

    @run_after("setup")
    def set_nvls(self):
        self.env_vars = {**self.env_vars, "NCCL_NVLS_ENABLE": "1" if self.nccl_nvls else "0"}
        if self.nccl_nvls:
            self.executable_opts = [*self.executable_opts, "--allow-nvls"]


@rfm.simple_test
class NcclAcrossNodes(BenchCheck):
    """gpuaccept-nccl --multi-process over ``num_nodes`` nodes, one rank per GPU, started by the partition's
    launcher (srun in a Slurm allocation, which passes the job's environment to every task), the ring algorithm and
    NVLink SHARP off (docs/checks/across-nodes.md, docs/checks/nccl.md). Rank 0 listens at GPUACCEPT_BOOTSTRAP,
    which ``src/nccl/bootstrap-address.sh`` sets in the job script: the allocation's first host. Runs on partitions
    with the ``gpu`` and ``mpi`` features, in the ``multinode`` suite, where the node type lists ``nccl_across``.

    Variables: ``num_nodes``, ``gpus_per_node`` (0: the partition's ``extras.gpu_count``), ``comm`` (``world``: one
    communicator of every rank; ``rail``: one per local GPU index, so that only the network between the nodes
    carries the traffic), ``bootstrap_port``.
    Metrics: allreduce/allgather/reducescatter/broadcast/alltoall_busbw_gbps_max (each the minimum over the
    communicator's groups of the group's largest bus bandwidth), allreduce_latency_us (the slowest group's).
    """

    #: Nodes of the allocation (one job; rank 0 on the first).
    #:
    #: :type: :class:`int`
    num_nodes = variable(int, value=2)

    #: Ranks (one per GPU) per node; 0: the partition's ``extras.gpu_count``.
    #:
    #: :type: :class:`int`
    gpus_per_node = variable(int, value=0)

    #: The tool's communicator layout: ``world`` or ``rail`` (``--comm``).
    #:
    #: :type: :class:`str`
    comm = variable(str, value="world")

    #: TCP port rank 0 listens on for the other ranks (reachable from every node of the allocation).
    #:
    #: :type: :class:`int`
    bootstrap_port = variable(int, value=29500)

    check_key = "nccl_across"
    binary = "gpuaccept-nccl"
    valid_systems = ["+gpu +mpi"]
    time_limit = "20m"
    build = fixture(NcclBuild, scope="environment")
    env_vars = {"LC_ALL": "C", "NCCL_NVLS_ENABLE": "0"}

    @run_after("init")
    def check_layout(self):
        if self.comm not in ("world", "rail"):
            raise ValueError(f"comm must be 'world' or 'rail', not {self.comm!r}")
        if self.num_nodes < 1 or self.gpus_per_node < 0:
            raise ValueError(f"num_nodes ({self.num_nodes}) must be at least 1, gpus_per_node ({self.gpus_per_node}) "
                             "at least 0")  # fmt: skip

    @run_after("setup")
    def need_nccl(self):
        if self.build.not_run_reason:
            self.skip(self.build.not_run_reason)

    @run_after("setup")
    def set_ranks(self):
        gpus = self.gpus_per_node or int((self.current_partition.extras or {}).get("gpu_count") or 0)
        if gpus < 1:
            self.skip(f"partition {self.current_partition.fullname} gives no GPU count (extras.gpu_count): set "
                      "-S NcclAcrossNodes.gpus_per_node=N")  # fmt: skip
        self.num_tasks = self.num_nodes * gpus
        self.num_tasks_per_node = gpus
        self.num_gpus_per_node = gpus
        self.executable_opts = ["--multi-process", "--comm", self.comm, "--ring", *self.executable_opts]
        port = shlex.quote(str(self.bootstrap_port))
        self.prerun_cmds = [
            f"GPUACCEPT_BOOTSTRAP=$(sh {shlex.quote(os.path.join('nccl', 'bootstrap-address.sh'))} {port}) || exit 3",
            "export GPUACCEPT_BOOTSTRAP",
        ]


@rfm.simple_test
class GpuPower(GpuBenchCheck):
    """Power (after Kozin and Cable, 2010) through ``gpuaccept powercheck``: the idle node, then a sustained GEMM on
    every GPU at once under the power sampler (docs/checks/power.md).

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
class GpuMemtest(GpuBenchCheck):
    """GPU memory test: moving inversions (zeros and ones, a walking pattern), each word's own address and a
    counter-based random pattern, every word checked on the GPU, over nearly all free memory of every GPU at once
    (docs/checks/memtest.md).

    Variables: ``seconds`` (passes until one more would end after it, at least one; quick mode: the tool's
    ``--quick``, 5 s).
    Metrics: errors_total (bad 64-bit words over every GPU, pattern and pass: any fails the check by the memtest
    rule), tested_fraction_min (the share of each GPU's memory tested, gated by a floor), bytes_tested_min and
    throughput_gbps_min (reported); each GPU's own in the document's ``gpu_metrics``.
    """

    #: Seconds of passes per GPU in full mode (commissioning, evaluation); a burn-in passes a longer one.
    #:
    #: :type: :class:`float`
    seconds = variable(float, value=20.0)

    check_key = "memtest"
    binary = "gpuaccept-memtest"
    time_limit = "10m"
    build = fixture(MemtestBuild, scope="environment")

    @run_after("setup")
    def set_budget(self):
        """Full mode passes ``seconds`` (quick mode the tool's ``--quick``); a budget longer than the time limit's
        10 minutes allow (a burn-in's) gets 5 minutes beside it for the allocation and the last pass."""
        if self.mode == "full":
            self.executable_opts = [*self.executable_opts, "--seconds", f"{self.seconds:g}"]
            if self.seconds + 300 > 600:
                self.time_limit = int(self.seconds) + 300


@rfm.simple_test
class GpuOverlap(GpuBenchCheck):
    """Compute/transfer overlap (after van Werkhoven et al., 2014): a kernel of tunable arithmetic intensity over data
    that starts and ends in pinned host memory, moved by synchronous copies, asynchronous copies in 1-16 streams, mapped
    (zero-copy) host memory and managed memory with prefetch, each verified; then ``gpuaccept annotate overlap``
    predicts each method from the same run's PCIe model (L+o, G, g per direction) and copy-engine count
    (docs/checks/overlap.md).

    Metrics (informational: the host's and the link's): duplex_overlap_min (H2D and D2H at once, 1 full duplex),
    stream_speedup_min (sync over the best streamed time), model_rel_error_max, model_rank_tau_min.
    """

    check_key = "overlap"
    binary = "gpuaccept-overlap"
    time_limit = "30m"
    build = fixture(OverlapBuild, scope="environment")

    @run_before("run")
    def add_model(self):
        """After the benchmark, ``gpuaccept annotate overlap`` adds the predictions and the model's metrics to its
        document; the job still exits with the benchmark's status (or 4 when only the model failed)."""
        args = (sys.executable, "-m", "gpuaccept", "annotate", "overlap", self.result_file)
        self.after_benchmark(" ".join(shlex.quote(a) for a in args))


@rfm.simple_test
class GpuOffloadGemm(GpuBenchCheck):
    """Transfer-inclusive GEMM (after Allada et al., 2009): cuBLAS DGEMM, SGEMM, TF32 and BF16 over n = 256-16384 on one
    GPU, the kernel alone and with the copies of A, B and C from pinned and from pageable memory, every result verified;
    then the host's DGEMM and SGEMM (``gpuaccept-cpugemm`` from ``extras.bench_dir``, all physical cores) at
    ``host_sizes`` and ``gpuaccept annotate offload``: the size from which the offload beats the host
    (docs/checks/offload-gemm.md). Without the host tool the crossovers are waived with the reason and the rest
    still reports.

    Variables: ``gpu`` (the device), ``host_sizes``, ``host_window_s``. Quick mode (gpuaccept-xgemm has no
    ``--quick``): the GPU at ``QUICK_SIZES`` within 20 s, the host up to the largest of them.
    Metrics (informational: the host's and the link's): <precision>_pinned_over_kernel_ratio and
    _pageable_over_kernel_ratio (at the largest n measured), <precision>_crossover_n_pinned and _pageable.
    """

    #: The GPU to measure (``--gpu``): one GPU stands for the node's, as in Allada et al. (2009).
    #:
    #: :type: :class:`int`
    gpu = variable(int, value=0)

    #: Sizes n at which the host's GEMM is timed (one ``gpuaccept-cpugemm --size n`` each); the crossover is
    #: sought over the sizes both sides measured. At 16384 one host DGEMM call takes seconds, and the tool makes
    #: at least four per precision.
    #:
    #: :type: :class:`List[int]`
    host_sizes = variable(typ.List[int], value=[256, 512, 1024, 2048, 4096, 8192])

    #: Seconds of back-to-back host calls per size (``gpuaccept-cpugemm --window-s``).
    #:
    #: :type: :class:`float`
    host_window_s = variable(float, value=0.5)

    #: The GPU's sizes in quick mode; the host's stop at the largest.
    QUICK_SIZES = (256, 512, 1024, 2048, 4096)

    check_key = "offload_gemm"
    binary = "gpuaccept-xgemm"
    time_limit = "30m"
    build = fixture(XgemmBuild, scope="environment")

    def host_tool(self) -> tuple[str | None, str]:
        """(path of gpuaccept-cpugemm, "") when the prebuilt tools' directory holds it, else (None, why not)."""
        bench_dir = str((self.current_partition.extras or {}).get("bench_dir") or "")
        path = os.path.join(bench_dir, "gpuaccept-cpugemm")
        if bench_dir and os.access(path, os.X_OK):
            return path, ""
        where = f"in {bench_dir}" if bench_dir else "prebuilt (the partition has no extras.bench_dir)"
        return None, (f"no host GEMM tool: no gpuaccept-cpugemm {where}; the gpuaccept_bench role builds it where the "
                      "node has a BLAS (Intel MKL or OpenBLAS)")  # fmt: skip

    @run_before("run")
    def add_host_and_crossover(self):
        """After the benchmark: the host's GEMM at each of ``host_sizes`` (a size it fails at is left out, its log
        kept), then the crossover analysis, which rewrites the document in place. The job still exits with the
        benchmark's status, or 4 when only the analysis failed."""
        quick = [] if self.mode == "full" else ["--sizes", ",".join(map(str, self.QUICK_SIZES)), "--time-limit-s", "20"]
        opts = [o for o in self.executable_opts if o != "--quick"]
        self.executable_opts = ["--gpu", str(self.gpu), *quick, *opts]
        host_sizes = [int(n) for n in self.host_sizes if self.mode == "full" or n <= max(self.QUICK_SIZES)]
        q = shlex.quote
        offload = f"{q(sys.executable)} -m gpuaccept annotate offload {q(self.result_file)}"
        tool, why = self.host_tool()
        if tool is None:
            self.after_benchmark(f"{offload} --no-host {q(why)}")
            return
        env = " ".join(q(f"{k}={v}") for k, v in HOST_BLAS_ENV.items())
        sizes = " ".join(map(str, host_sizes))
        host = (
            "_gpuaccept_cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l); "
            "[ \"$_gpuaccept_cores\" -gt 0 ] || _gpuaccept_cores=$(nproc); _gpuaccept_host=(); "
            f"for n in {sizes}; do env {env} {q(tool)} --size $n --threads $_gpuaccept_cores "
            f"--window-s {self.host_window_s:g} --output cpugemm-n$n.json > cpugemm-n$n.log 2>&1; "
            "[ -s cpugemm-n$n.json ] && _gpuaccept_host+=(cpugemm-n$n.json); done; "
            f"if [ ${{#_gpuaccept_host[@]}} -gt 0 ]; then {offload} --host \"${{_gpuaccept_host[@]}}\"; "
            f"else {offload} --no-host {q('gpuaccept-cpugemm left no document at any size (cpugemm-n*.log)')}; fi"
        )
        self.after_benchmark(host)
        self.keep_files = [*self.keep_files, "cpugemm-n*.log"]


@rfm.simple_test
class GpuFftOffload(GpuBenchCheck):
    """FFT offload (as in the remote BLAS/FFT offload thesis): complex-to-complex FFTs, batched 1-D (4096 points each)
    and 3-D, fp32 and fp64, over sizes of 2^12 to 2^27 points, on the host's FFT (MKL or FFTW, every CPU) and on one GPU
    with cuFFT alone and as a whole offload (H2D, cuFFT, D2H) from pinned and from pageable memory, each GPU output
    verified against the host's; then ``gpuaccept annotate fft`` adds the crossover sizes
    (docs/checks/fft-offload.md).

    Not run where the node has no host FFT (``FftBuild.not_run_reason``). Quick mode: sizes up to 2^22 points, 3
    repetitions. Metrics (informational: the host's): fft<shape>_<precision>_speedup_{kernel,pinned,pageable} at the
    largest size, fft<shape>_<precision>_crossover_points_{pinned,pageable} (waived where there is none in the sweep).
    """

    check_key = "fft_offload"
    binary = "gpuaccept-fft"
    time_limit = "20m"
    build = fixture(FftBuild, scope="environment")
    env_vars = {"LC_ALL": "C"}

    #: The sweep in quick mode (gpuaccept-fft has no --quick of its own).
    #:
    #: :type: :class:`List[str]`
    quick_opts = variable(typ.List[str], value=[
        "--points", ",".join(str(1 << k) for k in range(12, 23, 2)), "--cubes", "16,32,64,128", "--reps", "3",
    ])  # fmt: skip

    @run_after("setup")
    def need_a_host_fft(self):
        if self.build.not_run_reason:
            self.skip(self.build.not_run_reason)
        if "--quick" in self.executable_opts:
            self.executable_opts = [o for o in self.executable_opts if o != "--quick"] + list(self.quick_opts)

    @run_before("run")
    def add_crossover(self):
        """After the benchmark, ``gpuaccept annotate fft`` adds the crossovers to its document; the job
        still exits with the benchmark's status (or 4 when only the analysis failed)."""
        args = (sys.executable, "-m", "gpuaccept", "annotate", "fft", self.result_file)
        self.after_benchmark(" ".join(shlex.quote(a) for a in args))
