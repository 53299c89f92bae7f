"""Generic ReFrame tests for gpuaccept's micro-benchmarks: no site data here.

The node type is the one ``gpuaccept run`` resolved (the run's ``node-type.json``), else the partition's ``extras``
(written by the gpuaccept_reframe role); the reference values come from ``reference_values/<node_type>.yaml``; the
thin check files in ``reframe_checks/`` bind a benchmark to a check key. ReFrame runs the tools and records: its
sanity step only asks for the documents the judge reads, and its reference tuples carry the reference value with
no thresholds, so it never fails a test on a figure. Pass or fail is decided once, by gpuaccept.judge.verdict, from
the documents.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import performance_function, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from gpuaccept.checks import CHECKS, tags_for
from gpuaccept.judge import rules
from gpuaccept.layout import POWER_FILE
from gpuaccept.references import ReferenceError, resolve

__all__ = ["HOST_BLAS_ENV", "BenchBuild", "BenchCheck", "performance_function"]

#: The environment of a host BLAS run (gpuaccept-cpugemm), threads pinned to cores: Intel OpenMP (MKL wheels) and
#: GNU OpenMP read different variables; OpenBLAS-pthread pins itself.
HOST_BLAS_ENV = {
    "KMP_AFFINITY": "granularity=fine,compact,1,0",
    "OMP_PROC_BIND": "close",
    "OMP_PLACES": "cores",
    "LC_ALL": "C",
}


def _extras(test: rfm.RegressionTest) -> dict:
    return test.current_partition.extras or {}


class BenchBuild(rfm.CompileOnlyRegressionTest):
    """Compile-only fixture: the micro-benchmarks, prebuilt or built with ``src/Makefile`` beside the check file.

    When the partition's extras name a ``bench_dir`` that holds every one of ``binaries`` (the gpuaccept_bench
    role builds them there once, before a suite runs), the fixture links those into its stage directory and
    compiles nothing, so that no compiler shares the node with a measurement. Otherwise (no ``bench_dir``, or a
    binary missing there: the checks run outside Ansible) it builds them.

    Variables: ``make_targets`` (Makefile targets), ``binaries`` (what must exist afterwards).
    Build settings come from the partition's extras: ``bench_dir``, ``cuda_arch``, ``blas``, ``mklroot``,
    ``openblas_inc``, ``openblas_lib``, ``git_revision``.
    """

    #: Makefile targets to build (``gpu``, ``cpu``).
    #:
    #: :type: :class:`List[str]`
    make_targets = variable(typ.List[str], value=[])

    #: Executables the build must leave in the stage directory.
    #:
    #: :type: :class:`List[str]`
    binaries = variable(typ.List[str], value=[])

    #: Why the fixture built nothing because the node lacks what the tool needs ("" when it built or linked them);
    #: the check that uses it then skips with this reason (NOT RUN), e.g. gpu_checks.FftBuild without a host FFT.
    #:
    #: :type: :class:`str`
    not_run_reason = variable(str, value="")

    build_system = "Make"
    sourcesdir = "src"
    build_locally = True

    def prebuilt(self) -> str | None:
        """The directory of the prebuilt binaries (the partition's ``extras.bench_dir``) when it holds them all."""
        bench_dir = str(_extras(self).get("bench_dir") or "")
        if bench_dir and all(os.access(os.path.join(bench_dir, b), os.X_OK) for b in self.binaries):
            return bench_dir
        return None

    @run_before("compile")
    def set_make_options(self):
        extras = _extras(self)
        bench_dir = self.prebuilt()
        if bench_dir:
            self.build_system = "CustomBuild"
            self.build_system.commands = [
                f"ln -sf {shlex.quote(os.path.join(bench_dir, b))} {shlex.quote(b)}" for b in self.binaries
            ]
            return
        opts = [f"GIT_REV={shlex.quote(str(extras.get('git_revision', 'unknown')))}"]
        if extras.get("cuda_arch"):
            opts.append(f"CUDA_ARCH={shlex.quote(extras['cuda_arch'])}")
        if "cpu" in self.make_targets:
            blas = extras.get("blas", "none")
            if blas == "none":
                raise ReferenceError(
                    f"{socket.gethostname()}: no BLAS for the host GEMM: install Intel MKL "
                    "(gpuaccept_toolenv_mkl: true) or OpenBLAS (libopenblas-dev), then rerun the gpuaccept_reframe role"
                )
            opts.append(f"BLAS={blas}")
            paths = (("mklroot", "MKLROOT"), ("openblas_inc", "OPENBLAS_INC"), ("openblas_lib", "OPENBLAS_LIB"))
            for key, var in paths:
                if extras.get(key):
                    opts.append(f"{var}={shlex.quote(str(extras[key]))}")
        self.build_system.flags_from_environ = False
        self.build_system.max_concurrency = max(1, min(8, os.cpu_count() or 1))
        self.build_system.options = opts + list(self.make_targets)

    @sanity_function
    def binaries_exist(self):
        if self.not_run_reason:
            return True
        missing = [b for b in self.binaries if not os.path.isfile(os.path.join(self.stagedir, b))]
        if missing:
            raise SanityError(f"{socket.gethostname()}: the build left no {', '.join(missing)}; see {self.stagedir}")
        return True


@sn.deferrable
def _combined_metric(test: BenchCheck, name: str) -> float:
    return float(test.combined_metrics()[0][name]["value"])


class BenchCheck(rfm.RunOnlyRegressionTest):
    """Runs one micro-benchmark and judges its JSON document (docs/benchmark-json.md).

    Variables: ``check_key`` (the key in reference files and gpuaccept.checks), ``mode`` (``full`` or
    ``quick``), ``bench_opts`` (extra options), ``sample_power`` (run under ``gpuaccept sample``),
    ``power_interval``, ``peak_fractions`` (add ``*_peak_fraction`` metrics), ``efficiency_metric``.
    Metrics: every entry of the document's ``metrics``, each judged against the node type's reference; with
    ``sample_power``, also ``energy_j``, ``power_avg_w``, ``power_peak_w`` (all GPUs of the node, over the
    benchmark's run) and, with ``efficiency_metric``, ``gflops_per_watt``.
    Fails (in ReFrame's record) when the benchmark exits non-zero or leaves no readable, schema-valid document;
    everything else, its own verification and the figures against the references included, is the judge's.
    """

    #: The check's key in reference files and in :data:`gpuaccept.checks.CHECKS`.
    #:
    #: :type: :class:`str`
    check_key = variable(str)

    #: ``full`` (commissioning, evaluation) or ``quick`` (nightly); set with ``-S mode=quick``.
    #:
    #: :type: :class:`str`
    mode = variable(str, value="full")

    #: Extra options for the benchmark.
    #:
    #: :type: :class:`List[str]`
    bench_opts = variable(typ.List[str], value=[])

    #: Run the benchmark under the power sampler (``gpuaccept sample``, docs/checks/power.md): its document
    #: ``power.json`` is kept with the outputs and its metrics join the check's.
    #:
    #: :type: :class:`bool`
    sample_power = variable(bool, value=False)

    #: Seconds between power samples.
    #:
    #: :type: :class:`float`
    power_interval = variable(float, value=0.1)

    #: Add each rate's fraction of the GPU's datasheet peak to the document after the run (``gpuaccept annotate peaks``,
    #: the peaks file ``<reference_dir>/datasheets/gpu_peaks.yaml``): metrics ``<rate>_peak_fraction``.
    #:
    #: :type: :class:`bool`
    peak_fractions = variable(bool, value=False)

    #: A TFLOP/s (or GFLOP/s) metric of this check: its rate over ``power_avg_w`` is reported as
    #: ``gflops_per_watt``. Empty: no efficiency metric. Needs ``sample_power``.
    #:
    #: :type: :class:`str`
    efficiency_metric = variable(str, value="")

    #: The executable the check's build fixture (``build``) made; '' where the check sets ``executable`` itself.
    binary = ""

    valid_prog_environs = ["builtin"]
    require_reference = False  # the judge fails a metric without a reference, ReFrame only records
    power_file = POWER_FILE

    @property
    def result_file(self) -> str:
        return CHECKS[self.check_key].result_file

    @run_after("init")
    def take_declaration(self):
        """The test's identity from its check's declaration (gpuaccept.checks): ``descr`` its title (unless the
        class gives one), ``tags`` its suites and ``gpu`` or ``cpu``."""
        if self.check_key not in CHECKS:
            raise ValueError(f"check_key {self.check_key!r} is not declared in src/gpuaccept/checks.py")
        self.descr = self.descr or CHECKS[self.check_key].title
        self.tags |= tags_for(self.check_key)

    @run_after("init")
    def check_mode(self):
        if self.mode not in ("full", "quick"):
            raise ValueError(f"mode must be 'full' or 'quick', not {self.mode!r}")
        if self.efficiency_metric and not self.sample_power:
            raise ValueError(f"efficiency_metric {self.efficiency_metric!r} needs sample_power = True")

    @run_after("setup")
    def bind_references(self):
        # The node type gpuaccept run resolved (node-type.json), else the partition's (gpuaccept.references.resolve).
        try:
            self._resolved = resolve.for_check(_extras(self))
        except ReferenceError as err:
            raise ReferenceError(f"partition {self.current_partition.fullname}: {err}") from None
        self.reference = {}
        if not self._resolved.error:
            self._node_type = self._resolved.load()
            if self.check_key not in self._node_type.checks:
                # A node type expects exactly the checks it has references for (gpuaccept references lists them).
                self.skip(f"node type {self._node_type.name} has no references for check {self.check_key!r}: not "
                          "expected (gpuaccept references)")  # fmt: skip
            # ReFrame records the reference values it has (no thresholds); a known GPU SKU with no node type file
            # for this GPU count has its per-GPU ones only, and the verdict says NOT RUN for the node-level ones.
            refs = self._node_type.checks.get(self.check_key, {})
            self.reference = {"*": {name: ref.reframe_tuple() for name, ref in refs.items()}}
        self.keep_files = [self.result_file]
        self.executable_opts = [
            "--output",
            self.result_file,
            *(["--quick"] if self.mode == "quick" else []),
            *self.bench_opts,
        ]

    @run_after("setup")
    def set_executable(self):
        if self.binary:
            self.executable = os.path.join(self.build.stagedir, self.binary)

    @run_before("run")
    def add_peak_fractions(self):
        """With ``peak_fractions``: after the benchmark, ``gpuaccept annotate peaks`` adds the ``*_peak_fraction``
        metrics to its document; the job still exits with the benchmark's status (or 4 when only the annotation
        failed)."""
        if not self.peak_fractions:
            return
        refdir = str(_extras(self).get("reference_dir", "reference_values"))
        args = [sys.executable, "-m", "gpuaccept", "annotate", "peaks", self.result_file, "--reference-dir", refdir]
        if self.sample_power:
            args += ["--power", self.power_file]
        self.after_benchmark(" ".join(shlex.quote(a) for a in args))

    def after_benchmark(self, command: str) -> None:
        """Appends ``command`` (shell) to the job, run after the benchmark when its document exists; the job still
        exits with the benchmark's status, or 4 when only ``command`` failed (its last command's status)."""
        self.postrun_cmds = [
            *self.postrun_cmds,
            "_gpuaccept_rc=$?",
            f"if [ -f {shlex.quote(self.result_file)} ]; then {command} || "
            "{ [ $_gpuaccept_rc -eq 0 ] && _gpuaccept_rc=4; }; fi",
            "exit $_gpuaccept_rc",
        ]

    @run_before("run")
    def wrap_in_sampler(self):
        """With ``sample_power``: ``python -m gpuaccept sample --output power.json -- BENCHMARK OPTIONS``; the
        sampler exits with the benchmark's exit status."""
        if not self.sample_power:
            return
        self.executable_opts = [
            "-m",
            "gpuaccept",
            "sample",
            "--interval",
            str(self.power_interval),
            "--output",
            self.power_file,
            "--",
            self.executable,
            *self.executable_opts,
        ]
        self.executable = sys.executable
        self.keep_files = [*self.keep_files, self.power_file]

    def _document(self, name: str | None = None) -> dict:
        """A document this test's tool wrote, as the judge reads it (gpuaccept.judge.rules.load_document)."""
        host = socket.gethostname()
        path = os.path.join(self.stagedir, name or self.result_file)
        try:
            return rules.load_document(Path(path))
        except rules.DocumentError as err:
            tail = ""
            try:
                with open(os.path.join(self.stagedir, str(self.stderr)), encoding="utf-8", errors="replace") as h:
                    tail = h.read()[-600:].strip()
            except OSError:
                pass
            raise SanityError(
                f"{host}: {self.executable} (exit code {self.job.exitcode}): {err}; stderr: {tail or '(empty)'}"
            ) from None

    def combined_metrics(self) -> tuple[dict, dict, list[str]]:
        """The benchmark's metrics and waived metrics, with the power sampler's joined when ``sample_power`` is
        on (gpuaccept.judge.rules.combine, as the judge joins them)."""
        power = self._document(self.power_file) if self.sample_power else None
        return rules.combine(self._document(), power, self.efficiency_metric)

    @sanity_function
    def validate(self):
        """ReFrame records; the judge decides (gpuaccept.judge.verdict). Sanity only says whether the run left
        what the judge reads: a readable, schema-valid document (and the sampler's), and exit code 0."""
        self.combined_metrics()
        if self.job.exitcode not in (0, None):
            raise SanityError(f"{socket.gethostname()}: {self.executable} exited {self.job.exitcode}")
        return True

    @run_before("performance")
    def set_perf_variables(self):
        try:
            metrics = self.combined_metrics()[0]
        except SanityError:
            metrics = {}
        self.perf_variables = {
            name: sn.make_performance_function(_combined_metric(self, name), m.get("unit", ""))
            for name, m in metrics.items()
        }
        if self._resolved.error:
            # No node type for this node: the tool ran and its document is kept (gpuaccept baseline reads it, the
            # verdict shows its figures unjudged); the test fails here, saying why, never judged.
            raise ReferenceError(f"{socket.gethostname()}: no node type for this node: {self._resolved.error}")
        for name, m in metrics.items():
            if self._node_type.missing_reason(self.check_key, name):
                # Recorded, not judged (no bounds): the verdict reports it NOT RUN, no node-level reference.
                self.reference.setdefault("*", {})[name] = (0.0, None, None, m.get("unit", ""))
