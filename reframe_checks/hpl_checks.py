"""HPL checks: one family, one parser (gpuaccept.hpl), one set of metrics.

- ``GpuHplStyle`` (key ``hplstyle``): gpuaccept-hplstyle, our HPL-style LU through cuSOLVER on every GPU at
  once; always available where the CUDA toolkit is. Not HPL: named for what it is.
- ``GpuHplNvidia`` (key ``hpl_nvidia``): NVIDIA HPC-Benchmarks' ``xhpl``, installed from a site artifact by
  the gpuaccept_hpl role; reported as not run ("artifact not configured") where the role has not installed it.
- ``GpuHplCuda`` (key ``hpl_cuda``): HPL 2.3's driver with gpuaccept's GPU-resident HPL_pdmatgen/HPL_pdgesv
  (the matrix in GPU memory, cuSOLVER and cuBLAS), one MPI rank per GPU on a 1 x GPUs grid (``grid``: or P x Q),
  NB and look-ahead from a short sweep, built by the gpuaccept_hpl role from the source tarball; reported as not
  run where the role has not built it.
- ``HostHpl`` (key ``hpl_host``): netlib's HPL 2.3 against MKL on the host (gpuaccept_hpl role), one rank per
  core; Debian's ``hpcc`` (OpenBLAS) where it is not built; not run where neither is there.

Every output becomes a document (gpuaccept.probe.hpl.to_document), and the judge's HPL rule
(gpuaccept.judge.rules.hpl_problems) decides: a residual at or above the threshold, a threshold of 0 or below or
above 16, a missing residual line, or a crashed, killed or timed-out run fails the check with the reason. What
they measure: docs/checks/hpl.md.
"""

import os
import shlex
import shutil
import socket
import sys
from pathlib import Path

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, run_before, variable
from reframe.core.exceptions import SanityError

from gpuaccept import textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.judge import load
from gpuaccept.layout import PROJECT_ROOT
from gpuaccept.probe import document, hpl, hpl_dat
from gpuaccept.probe.document import utc_iso
from gpuaccept.rfm import BenchBuild, BenchCheck

#: Where the gpuaccept_hpl role describes the xhpl it installed: gpuaccept_hpl_prefix/gpuaccept-hpl.json, by
#: default <project root>/hpl, the project root being where these checks live (GPUACCEPT_HPL_DESCRIPTOR overrides).
_HPL_PREFIX = str(PROJECT_ROOT / "hpl")
NVIDIA_HPL_DESCRIPTOR = os.environ.get("GPUACCEPT_HPL_DESCRIPTOR", os.path.join(_HPL_PREFIX, "gpuaccept-hpl.json"))
#: The netlib HPL 2.3 builds of the same role: gpuaccept_hpl_prefix/gpuaccept-hpl-{host,cuda}.json.
HOST_HPL_DESCRIPTOR = os.environ.get(
    "GPUACCEPT_HPL_HOST_DESCRIPTOR", os.path.join(_HPL_PREFIX, "gpuaccept-hpl-host.json")
)
CUDA_HPL_DESCRIPTOR = os.environ.get(
    "GPUACCEPT_HPL_CUDA_DESCRIPTOR", os.path.join(_HPL_PREFIX, "gpuaccept-hpl-cuda.json")
)


def _load_descriptor(path: str) -> dict:
    """The role's descriptor: ``command`` (with ``{ranks}``), ``env``, ``binary``, ``blas``; read strictly
    (gpuaccept.textinput), a SanityError naming the node and the file otherwise."""
    try:
        desc = textinput.load_json(Path(path), "the HPL descriptor", ValueError)
    except ValueError as err:
        raise SanityError(f"{socket.gethostname()}: {err}") from None
    if not isinstance(desc.get("command"), list) or not desc["command"]:
        raise SanityError(f"{socket.gethostname()}: {path}: no 'command' list (rerun the gpuaccept_hpl role)")
    return desc


def _node_gpus(extras: dict) -> tuple[int, int, int]:
    """(ranks, the smallest GPU's memory in bytes, the GPUs in the node facts) of an HPL of one rank per GPU: the
    partition's ``gpu_count`` and the node facts it names (``facts_file``), both written by gpuaccept.rfmconfig,
    read as the judge reads them (gpuaccept.judge.load.read_facts). A SanityError naming the node and the file when
    the facts cannot be read, or there is no GPU or no memory."""
    facts_file = extras.get("facts_file")
    if not facts_file:
        raise SanityError(f"{socket.gethostname()}: the partition's extras name no facts_file: regenerate the ReFrame "
                          "configuration with the gpuaccept_reframe role")  # fmt: skip
    facts, problems = load.read_facts(Path(str(facts_file)))
    if problems:
        raise SanityError(f"{socket.gethostname()}: {problems[0]}")
    gpus = facts.get("gpus") or []
    try:
        memory = min((int(g.get("memory_bytes") or 0) for g in gpus), default=0)
    except (TypeError, ValueError) as err:
        why = f"a GPU's memory_bytes is not a number ({err})"
        raise SanityError(f"{socket.gethostname()}: {facts_file}: {why}") from None
    ranks = int(extras.get("gpu_count") or 0)
    if ranks < 1 or memory < 1:
        raise SanityError(
            f"{socket.gethostname()}: gpu_count={ranks} (partition extras), GPU memory {memory} bytes "
            f"({facts_file}): regenerate the ReFrame configuration with the gpuaccept_reframe role"
        )
    return ranks, memory, len(gpus)


def _host_memory_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


class HplStyleBuild(BenchBuild):
    """Builds gpuaccept-hplstyle with nvcc (cuSOLVER, cuBLAS)."""

    make_targets = ["hpl"]
    binaries = ["gpuaccept-hplstyle"]


@rfm.simple_test
class GpuHplStyle(BenchCheck):
    """HPL-style LU (cuSOLVER getrf + getrs, FP64, partial pivoting) on every GPU at once, one process each,
    judged by HPL's scaled residual (threshold 16).

    Variables: ``n`` (matrix order; 0: from 85% of GPU memory), plus BenchCheck's.
    Metrics: ``tflops_min`` (slowest GPU), ``tflops_sum`` (node), ``residual_max``, ``tflops_min_peak_fraction``
    and ``tflops_sum_peak_fraction`` (of the GPUs' FP64 tensor core datasheet peak; informational); with the power
    sampler, energy_j, power_avg_w, power_peak_w and gflops_per_watt (of tflops_sum).
    """

    #: Matrix order; 0 sizes it from the GPUs' memory (``--mem-fraction`` 0.85, 0.25 in quick mode).
    #:
    #: :type: :class:`int`
    n = variable(int, value=0)

    check_key = "hplstyle"
    binary = "gpuaccept-hplstyle"
    valid_systems = ["+gpu"]
    time_limit = "20m"
    build = fixture(HplStyleBuild, scope="environment")
    # The power sampler's contract (gpuaccept.rfm.BenchCheck): sampled during the run, efficiency of the sum.
    sample_power = True
    efficiency_metric = "tflops_sum"
    peak_fractions = True

    @run_after("setup")
    def set_order(self):
        if self.n > 0:
            self.executable_opts += ["--n", str(self.n)]


class HplOutputCheck(BenchCheck):
    """Runs an HPL that gpuaccept did not write and turns its output into a gpuaccept.bench/1 document
    (gpuaccept.hpl.to_document) before sanity, so that BenchCheck judges it like every other benchmark.

    Variables: ``hpl_output`` (the file HPL writes its results to: stdout or hpcc's hpccoutf.txt),
    ``memory_fraction``, ``nb``, ``threshold``.
    """

    #: Share of memory for the matrix when N is derived from it.
    #:
    #: :type: :class:`float`
    memory_fraction = variable(float, value=0.85)

    #: Block size NB in HPL.dat.
    #:
    #: :type: :class:`int`
    nb = variable(int, value=1024)

    #: Residual threshold written to HPL.dat (HPL's 16.0); 0 or below makes the check fail.
    #:
    #: :type: :class:`float`
    threshold = variable(float, value=16.0)

    #: Why the check did not run (set before ``skip()``; ReFrame's report keeps variables, the verdict reads it).
    #:
    #: :type: :class:`str`
    not_run_reason = variable(str, value="")

    ranks = 1
    hpcc_output = False
    metric_unit = "TFLOP/s"
    per_gpu = True
    #: What ran (descriptor, BLAS, ranks, threads), recorded in the document's parameters.backend.
    backend: dict = {}

    def hpl_output_path(self) -> str:
        return os.path.join(self.stagedir, str(self.stdout))

    def not_installed(self, what: str, fix: str) -> None:
        """Skip the check, the reason in ``not_run_reason``: ``what`` is missing (its ``descriptor`` absent), ``fix``
        says how to install it. Before setup, so that ReFrame reports it as skipped with the reason."""
        self.not_run_reason = f"not run: {what} ({self.descriptor} absent: {fix})"
        self.skip(self.not_run_reason)

    def run_backend(self, out: hpl.HplOutput) -> dict:
        """What only the run can tell of its backend (``out``: its output, parsed), merged into ``backend`` for
        the document."""
        return {}

    @run_after("setup")
    def plain_options(self):
        # BenchCheck passes --output/--quick to gpuaccept's own tools; HPL takes HPL.dat instead.
        self.executable_opts = []

    @run_before("sanity")
    def write_document(self):
        errors = []
        if self.job.exitcode not in (0, None):
            errors.append(f"{self.executable} exited with status {self.job.exitcode}")
        try:
            out = hpl.parse_file(self.hpl_output_path(), hpcc=self.hpcc_output)
        except OSError as err:
            out = hpl.HplOutput(source=self.hpl_output_path())
            errors.append(f"no HPL output {self.hpl_output_path()}: {err.strerror}")
        command = [str(self.executable), *map(str, self.executable_opts)]
        started, ended = self.job.submit_time, self.job.completion_time
        doc = hpl.to_document(
            out,
            self.check_key,
            self.ranks,
            unit=self.metric_unit,
            per_gpu=self.per_gpu,
            errors=errors,
            backend={**self.backend, **self.run_backend(out), "command": command},
            started_utc=utc_iso(started) if started else "",
            elapsed_s=(ended - started) if started and ended else None,
            command_line=command,
        )
        write_text_atomic(os.path.join(self.stagedir, self.result_file), document.dumps(doc, indent=1))


@rfm.simple_test
class GpuHplNvidia(HplOutputCheck):
    """NVIDIA HPC-Benchmarks xhpl, one rank per GPU, HPL.dat from gpuaccept.hpl_dat (N from
    ``memory_fraction`` of the GPUs' memory, NB 1024, P x Q from the GPU count).

    Not run ("artifact not configured") unless the gpuaccept_hpl role installed it and wrote its descriptor.
    NVLink SHARP off (NCCL_NVLS_ENABLE=0, and the descriptor's environment).
    Metrics: ``tflops`` (node), ``tflops_per_gpu``, ``residual_max``; power as for GpuHplStyle.
    """

    #: The descriptor the gpuaccept_hpl role writes: ``{"command": [...], "kind": ...}``.
    #:
    #: :type: :class:`str`
    descriptor = variable(str, value=NVIDIA_HPL_DESCRIPTOR)

    check_key = "hpl_nvidia"
    valid_systems = ["+gpu"]
    time_limit = "60m"
    sample_power = True
    efficiency_metric = "tflops"

    # Before setup (and BenchCheck's reference binding), so that ReFrame reports it as skipped with the reason.
    @run_before("setup")
    def need_artifact(self):
        if not os.path.isfile(self.descriptor):
            self.not_installed(
                "artifact not configured",
                "set gpuaccept_hpl_artifact_path or gpuaccept_hpl_artifact_url with its sha256 and run the "
                "gpuaccept_hpl role",
            )

    @run_after("setup")
    def write_hpl_dat(self):
        extras = self.current_partition.extras or {}
        desc = _load_descriptor(self.descriptor)
        self.ranks, memory, _ = _node_gpus(extras)
        p, q = hpl_dat.grid(self.ranks)
        n = hpl_dat.problem_size(memory, self.ranks, self.memory_fraction, self.nb, p, q)
        dat = hpl_dat.HplDat(n=n, nb=self.nb, p=p, q=q, threshold=self.threshold)
        write_text_atomic(os.path.join(self.stagedir, "HPL.dat"), hpl_dat.render(dat))
        self.keep_files = [*self.keep_files, "HPL.dat"]
        command = [str(c).replace("{ranks}", str(self.ranks)).replace("{dat}", "HPL.dat") for c in desc["command"]]
        self.executable, self.executable_opts = command[0], command[1:]
        # NVIDIA's xhpl uses NCCL: NVLink SHARP off as in every NCCL communicator gpuaccept starts (the role's
        # descriptor says otherwise only with gpuaccept_hpl_nccl_nvls)
        self.env_vars = {**self.env_vars, "NCCL_NVLS_ENABLE": "0",
                         **{str(k): str(v) for k, v in (desc.get("env") or {}).items()}}  # fmt: skip


@rfm.simple_test
class GpuHplCuda(HplOutputCheck):
    """HPL-CUDA: HPL 2.3's driver, HPL.dat, timer, output and residual check with gpuaccept's GPU-resident
    HPL_pdmatgen and HPL_pdgesv (reframe_checks/src/hpl/gpuaccept_hpl_gpu.cu): the matrix generated and kept in
    GPU memory, panels by cuSOLVER, updates by cuBLAS, the next panel factored while the rest of the update runs.
    One MPI rank per GPU (``gpu_count`` of the partition), on the grid ``grid`` chooses: 1 x ranks by default
    (every rank holds all rows of its columns, the panel's owner broadcasts it), or P x Q as square as possible.
    The panel, the moved rows and U go GPU to GPU by NCCL where the role built it with NCCL (else through host
    memory by MPI); NVLink SHARP stays off (NCCL_NVLS_ENABLE=0) unless ``nccl_nvls``.

    Sizing, written into the document's ``parameters.backend``: N from ``memory_fraction`` of the GPUs' memory
    (the smallest GPU's, times the ranks; ``pxq_memory_fraction`` at most on a grid of several process rows, whose
    row exchange, U and gathered-panel buffers take more of each GPU). HPL's host array is reserved but never
    filled (the residual check reads the matrix on the GPUs), so it only has to pass the kernel's overcommit check:
    one rank's share stays below ``host_memory_fraction`` of what that policy grants (no limit with
    vm.overcommit_memory = 1). NB and the look-ahead depth come from a short sweep before the run (``sweep_n``,
    every ``sweep_nbs`` with every ``sweep_depths``, on the same grid, timed without residual checks,
    gpuaccept.probe.hpl_dat.render_sweep), the fastest taken. Only the full run's result row, with its PASSED
    residual, is the figure. The backend also records the grid, how the data went between GPUs (``panel_broadcast``:
    nccl or mpi, as xhpl's rank 0 reports it) and the NCCL_NVLS_ENABLE value in effect.

    Variables: ``grid``, ``hpl_n``, ``pxq_memory_fraction``, ``host_memory_fraction``, ``sweep_n``, ``sweep_nbs``,
    ``sweep_depths``, ``nccl_nvls``, ``descriptor``, plus HplOutputCheck's.
    Not run unless the gpuaccept_hpl role built it (gpuaccept_hpl_source_path/url, nvcc) and wrote its descriptor.
    Metrics: ``tflops`` (node), ``tflops_per_gpu``, ``residual_max``; energy and power of all of xhpl (the solve
    is a fraction of it: docs/checks/hpl.md), so no GFLOP/s per watt.
    """

    #: The process grid: ``auto`` (1 x ranks: on the GPUs of one node the faster, docs/checks/hpl.md), ``1xQ``,
    #: or ``PxQ`` (as square as possible with P <= Q, e.g. 2 x 2 on four GPUs).
    #:
    #: :type: :class:`str`
    grid = variable(str, value="auto")

    #: Matrix order; 0 derives it from the GPU's memory.
    #:
    #: :type: :class:`int`
    hpl_n = variable(int, value=0)

    #: The largest ``memory_fraction`` on a grid of several process rows (P > 1): its row-exchange and U buffers
    #: (NB x the rank's columns, twice) and the gathered panel take about that much more of each GPU.
    #:
    #: :type: :class:`float`
    pxq_memory_fraction = variable(float, value=0.88)

    #: The largest share of what the kernel lets one rank reserve (gpuaccept.probe.hpl_dat.reservable_bytes)
    #: that its host array for the matrix may take (HPL allocates it; the GPU HPL leaves it untouched).
    #:
    #: :type: :class:`float`
    host_memory_fraction = variable(float, value=0.95)

    #: The sweep's matrix order (0: no sweep, ``nb`` and depth 1).
    #:
    #: :type: :class:`int`
    sweep_n = variable(int, value=32768)

    #: The sweep's NBs.
    #:
    #: :type: :class:`list[int]`
    sweep_nbs = variable(typ.List[int], value=[768, 1024, 1280])

    #: The sweep's look-ahead depths (0: none; 1: the next panel while the update runs).
    #:
    #: :type: :class:`list[int]`
    sweep_depths = variable(typ.List[int], value=[0, 1])

    #: Let NCCL use NVLink SHARP (multicast; NCCL_NVLS_ENABLE=1, GPUACCEPT_HPL_NVLS=1): only for a site that has
    #: verified it on nodes nobody else shares. Off (NCCL_NVLS_ENABLE=0) unless this or the role's
    #: gpuaccept_hpl_nccl_nvls asks.
    #:
    #: :type: :class:`bool`
    nccl_nvls = variable(bool, value=False)

    #: The descriptor the gpuaccept_hpl role writes.
    #:
    #: :type: :class:`str`
    descriptor = variable(str, value=CUDA_HPL_DESCRIPTOR)

    check_key = "hpl_cuda"
    valid_systems = ["+gpu"]
    time_limit = "30m"
    sample_power = True
    memory_fraction = 0.92

    @run_before("setup")
    def need_build(self):
        if not os.path.isfile(self.descriptor):
            self.not_installed(
                "HPL-CUDA not built",
                "set gpuaccept_hpl_source_path or gpuaccept_hpl_source_url and run the gpuaccept_hpl role on a node "
                "with CUDA's nvcc",
            )

    @run_after("init")
    def check_grid(self):
        if self.grid not in hpl_dat.GPU_GRIDS:
            raise ValueError(f"GpuHplCuda.grid must be one of {', '.join(hpl_dat.GPU_GRIDS)}, not {self.grid!r}")

    @run_after("setup")
    def write_hpl_dat(self):
        desc = _load_descriptor(self.descriptor)
        ranks, gpu_memory, gpus_on_node = _node_gpus(self.current_partition.extras or {})
        host_memory = _host_memory_bytes()
        p, q = hpl_dat.gpu_grid(ranks, self.grid)
        fraction = self.memory_fraction if p == 1 else min(self.memory_fraction, self.pxq_memory_fraction)
        # Each rank holds N x N / ranks doubles on its GPU and reserves as much in HPL's (untouched) host array,
        # which the kernel's overcommit policy must grant.
        try:
            reservable = hpl_dat.host_reservable_bytes(ranks)
        except (OSError, ValueError) as err:
            raise SanityError(f"{socket.gethostname()}: cannot tell what HPL's host array may reserve: {err}") from None
        memory = gpu_memory
        if reservable is not None:
            memory = min(gpu_memory, int(reservable * self.host_memory_fraction / fraction))
        self.ranks = ranks
        python = sys.executable
        command = [str(c).replace("{ranks}", str(ranks)) for c in desc["command"]]
        nvls = self.nccl_nvls or bool(desc.get("nccl_nvls"))
        self.env_vars = {
            **self.env_vars,
            **{str(k): str(v) for k, v in (desc.get("env") or {}).items()},
            "OMP_NUM_THREADS": str(max(1, len(os.sched_getaffinity(0)) // ranks)),
            "MKL_NUM_THREADS": str(max(1, len(os.sched_getaffinity(0)) // ranks)),
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            # NVLink SHARP: off unless asked (xhpl and gpuaccept-hpl-rank.sh apply the same rule in every rank)
            "NCCL_NVLS_ENABLE": "1" if nvls else "0",
            **({"GPUACCEPT_HPL_NVLS": "1"} if nvls else {}),
        }
        layout = ["--ranks", str(ranks), "--grid", "columns" if p == 1 else "square"]
        sizing = [*layout, "--memory-bytes", str(memory), "--fraction", str(fraction)]
        if self.hpl_n:
            sizing = [*layout, "--n", str(self.hpl_n)]
        if self.sweep_n > 0:
            os.makedirs(os.path.join(self.stagedir, "sweep"), exist_ok=True)
            write_text_atomic(
                os.path.join(self.stagedir, "sweep", "HPL.dat"),
                hpl_dat.render_sweep(self.sweep_n, self.sweep_nbs, self.sweep_depths, p=p, q=q),
            )
            launch = " ".join(shlex.quote(c) for c in command)
            self.prerun_cmds = [
                f"(cd sweep && {launch} > HPL.out 2> stderr.txt) || echo 'gpuaccept: the sweep failed' >&2",
                # kept under names of their own: ReFrame keeps files by their base name
                "cp sweep/HPL.dat HPL.sweep.dat; cp sweep/HPL.out HPL.sweep.out; cp sweep/stderr.txt HPL.sweep.err",
                shlex.join([python, "-m", "gpuaccept.probe.hpl_dat", *sizing, "--threshold", str(self.threshold),
                            "--sweep", "sweep/HPL.out", "--output", "HPL.dat"]),
            ]  # fmt: skip
            self.keep_files = [*self.keep_files, "HPL.sweep.dat", "HPL.sweep.out", "HPL.sweep.err"]
        else:
            n = self.hpl_n or hpl_dat.problem_size(memory, ranks, fraction, self.nb, p, q)
            write_text_atomic(
                os.path.join(self.stagedir, "HPL.dat"),
                hpl_dat.render(hpl_dat.HplDat(n=n, nb=self.nb, p=p, q=q, threshold=self.threshold)),
            )
        self.backend = {
            "hpl": desc.get("hpl", "netlib HPL 2.3 driver + gpuaccept GPU-resident HPL_pdmatgen/HPL_pdgesv"),
            "descriptor": self.descriptor,
            "blas": desc.get("blas"),
            "ranks": ranks,
            "grid": f"{p} x {q}",
            "grid_choice": self.grid,
            # how the panel, the moved rows and U reach the other ranks: GPU to GPU (nccl) or through host memory
            # (mpi); the build's here, what xhpl reported once it ran (run_backend)
            "panel_broadcast": desc.get("panel_broadcast"),
            "nccl_home": desc.get("nccl_home"),
            "nccl_nvls_enable": self.env_vars["NCCL_NVLS_ENABLE"],
            "gpus_used": ranks,
            "gpus_on_node": gpus_on_node,
            "gpu_memory_bytes": gpu_memory,
            "host_memory_bytes": host_memory,
            "host_reservable_bytes": reservable,
            "memory_fraction": fraction,
            "host_memory_fraction": self.host_memory_fraction,
        }
        self.keep_files = [*self.keep_files, "HPL.dat"]
        self.executable, self.executable_opts = command[0], command[1:]

    def run_backend(self, out: hpl.HplOutput) -> dict:
        """What the sweep measured and what the run used (``sizing`` in the document's backend), and what xhpl's rank 0
        said carried the data between GPUs and with which NCCL_NVLS_ENABLE (``transport``)."""
        sweep = {"n": self.sweep_n, "nbs": list(self.sweep_nbs), "depths": list(self.sweep_depths)}
        if self.sweep_n > 0:
            path = os.path.join(self.stagedir, "sweep", "HPL.out")
            try:
                with open(path, encoding="utf-8") as handle:
                    nb, depth, rows = hpl_dat.choose(handle.read(), path)
                sweep.update(rows=rows, chosen={"nb": nb, "depth": depth})
            except (OSError, ValueError) as err:
                sweep["error"] = str(err)
        if out.runs:
            run = out.runs[0]
            sweep["run"] = {"n": run.n, "nb": run.nb, "depth": int(run.tv[2]) if run.tv[2:3].isdigit() else None}
        found = {"sizing": sweep}
        try:
            with open(os.path.join(self.stagedir, str(self.stderr)), encoding="utf-8", errors="replace") as handle:
                said = hpl.gpu_transport(handle.read())
        except OSError:
            said = []
        if said:
            found.update(panel_broadcast=said[-1]["panel_broadcast"], panel_broadcast_why=said[-1]["why"],
                         nccl_nvls_enable=said[-1]["nccl_nvls_enable"], transport="reported by xhpl")  # fmt: skip
        else:
            found["transport"] = "not reported by xhpl: the build's panel_broadcast, the environment's NCCL_NVLS_ENABLE"
        return found


@rfm.simple_test
class HostHpl(HplOutputCheck):
    """HPL on the host, the CPU baseline for the GPU/CPU ratio: netlib's HPL 2.3 against MKL built by the
    gpuaccept_hpl role (one rank per core, one BLAS thread each, N from host memory and ``run_seconds`` at
    ``gflops_per_core``); where the role has not built it, Debian's hpcc (OpenBLAS, one rank, ``hpl_n``,
    only its HPL section judged).

    Variables: ``hpl_n`` (0: derived for HPL 2.3; hpcc: 20000), ``nb`` (256), ``run_seconds``,
    ``gflops_per_core``, ``ranks_per_node`` (0: the usable CPUs).
    Metrics: ``gflops`` (GFLOP/s), ``residual_max``.
    """

    #: Matrix order of the host run; 0: derived (HPL 2.3) or 20000 (hpcc).
    #:
    #: :type: :class:`int`
    hpl_n = variable(int, value=0)

    #: Target run time in seconds when N is derived.
    #:
    #: :type: :class:`float`
    run_seconds = variable(float, value=30.0)

    #: Expected HPL rate per core (GFLOP/s, MKL on AVX-512) for sizing N.
    #:
    #: :type: :class:`float`
    gflops_per_core = variable(float, value=40.0)

    #: MPI ranks (one BLAS thread each); 0: the CPUs this process may use.
    #:
    #: :type: :class:`int`
    ranks_per_node = variable(int, value=0)

    #: The descriptor the gpuaccept_hpl role writes for the host build.
    #:
    #: :type: :class:`str`
    descriptor = variable(str, value=HOST_HPL_DESCRIPTOR)

    check_key = "hpl_host"
    valid_systems = ["*"]
    time_limit = "30m"
    metric_unit = "GFLOP/s"
    per_gpu = False
    nb = 256
    memory_fraction = 0.5

    @run_before("setup")
    def need_hpl(self):
        if os.path.isfile(self.descriptor):
            self.hpcc_output = False
            return
        self.hpcc_output = True
        self.executable = shutil.which("hpcc") or ""
        if not self.executable:
            self.not_installed(
                "no host HPL",
                "set gpuaccept_hpl_source_path or gpuaccept_hpl_source_url and run the gpuaccept_hpl role; or "
                "Debian: apt install hpcc",
            )

    @run_after("setup")
    def write_input(self):
        self.env_vars = {**self.env_vars, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
        if self.hpcc_output:
            n = self.hpl_n or 20000
            nb = 192
            dat = hpl_dat.HplDat(n=n, nb=nb, p=1, q=1, threshold=self.threshold, device_out=8)
            write_text_atomic(os.path.join(self.stagedir, "hpccinf.txt"), hpl_dat.render_hpccinf(dat))
            self.keep_files = [*self.keep_files, "hpccinf.txt", "hpccoutf.txt"]
            self.backend = {"hpl": "hpcc (Debian)", "binary": self.executable, "n": n, "nb": nb, "ranks": 1}
            return
        desc = _load_descriptor(self.descriptor)
        self.ranks = self.ranks_per_node or len(os.sched_getaffinity(0))
        p, q = hpl_dat.grid(self.ranks)
        n = self.hpl_n or hpl_dat.timed_problem_size(
            _host_memory_bytes(),
            self.memory_fraction,
            self.gflops_per_core * self.ranks,
            self.run_seconds,
            self.nb,
            p,
            q,
        )
        write_text_atomic(
            os.path.join(self.stagedir, "HPL.dat"),
            hpl_dat.render(hpl_dat.HplDat(n=n, nb=self.nb, p=p, q=q, threshold=self.threshold)),
        )
        self.env_vars = {
            **self.env_vars,
            **{str(k): str(v) for k, v in (desc.get("env") or {}).items()},
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        self.backend = {
            "hpl": "netlib HPL 2.3",
            "descriptor": self.descriptor,
            "blas": desc.get("blas"),
            "cpu_blas": desc.get("cpu_blas"),
            "ranks": self.ranks,
            "threads_per_rank": 1,
            "n": n,
            "nb": self.nb,
            "p": p,
            "q": q,
        }
        self.keep_files = [*self.keep_files, "HPL.dat"]
        command = [str(c).replace("{ranks}", str(self.ranks)) for c in desc["command"]]
        self.executable, self.executable_opts = command[0], command[1:]

    def hpl_output_path(self) -> str:
        if self.hpcc_output:
            return os.path.join(self.stagedir, "hpccoutf.txt")
        return super().hpl_output_path()
