"""Generic ReFrame tests for gpuaccept's micro-benchmarks: no site data here.

The node type comes from the partition's ``extras`` (written by the gpuaccept_reframe role), the reference
values from ``reference_values/<node_type>.yaml``; the thin check files in ``reframe_checks/`` bind a
benchmark to a check key. ReFrame passes a test with no reference unless told not to, and only warns when a
performance function raises: so ``require_reference`` is on, and the sanity function itself demands that
every metric has a reference and every referenced metric was measured.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import performance_function, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from .checks import CHECKS
from .references import NodeType, ReferenceError, load_node_type

__all__ = ["BenchBuild", "BenchCheck", "performance_function"]


def _extras(test: rfm.RegressionTest) -> dict:
    return test.current_partition.extras or {}


class BenchBuild(rfm.CompileOnlyRegressionTest):
    """Compile-only fixture: builds micro-benchmarks with ``src/Makefile`` beside the check file.

    Variables: ``make_targets`` (Makefile targets), ``binaries`` (what must exist afterwards).
    Build settings come from the partition's extras: ``cuda_arch``, ``blas``, ``mklroot``, ``openblas_inc``,
    ``openblas_lib``, ``git_revision``.
    """

    #: Makefile targets to build (``gpu``, ``cpu``).
    #:
    #: :type: :class:`List[str]`
    make_targets = variable(typ.List[str], value=[])

    #: Executables the build must leave in the stage directory.
    #:
    #: :type: :class:`List[str]`
    binaries = variable(typ.List[str], value=[])

    build_system = "Make"
    sourcesdir = "src"
    build_locally = True

    @run_before("compile")
    def set_make_options(self):
        extras = _extras(self)
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
        missing = [b for b in self.binaries if not os.path.isfile(os.path.join(self.stagedir, b))]
        if missing:
            raise SanityError(f"{socket.gethostname()}: the build left no {', '.join(missing)}; see {self.stagedir}")
        return True


@sn.deferrable
def _combined_metric(test: BenchCheck, name: str) -> float:
    return float(test.combined_metrics()[0][name]["value"])


def _gflops(metric: dict) -> float | None:
    """A rate metric in GFLOP/s, or None when its unit is not a FLOP rate."""
    scale = {"TFLOP/s": 1000.0, "GFLOP/s": 1.0}.get(metric.get("unit", ""))
    return None if scale is None else float(metric["value"]) * scale


class BenchCheck(rfm.RunOnlyRegressionTest):
    """Runs one micro-benchmark and judges its JSON document (docs/benchmark-json.md).

    Variables: ``check_key`` (the key in reference files and gpuaccept.checks), ``mode`` (``full`` or
    ``quick``), ``bench_opts`` (extra options), ``sample_power`` (run under ``gpuaccept sample``),
    ``power_interval``, ``peak_fractions`` (add ``*_peak_fraction`` metrics), ``efficiency_metric``.
    Metrics: every entry of the document's ``metrics``, each judged against the node type's reference; with
    ``sample_power``, also ``energy_j``, ``power_avg_w``, ``power_peak_w`` (all GPUs of the node, over the
    benchmark's run) and, with ``efficiency_metric``, ``gflops_per_watt``.
    Fails when the benchmark exits non-zero, reports errors, fails its own verification, sees another GPU
    count than the node has, or when a metric lacks a reference or a referenced metric is missing or waived.
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

    #: Add each rate's fraction of the GPU's datasheet peak to the document after the run (``gpuaccept peaks``,
    #: the peaks file ``<reference_dir>/datasheets/gpu_peaks.yaml``): metrics ``<rate>_peak_fraction``.
    #:
    #: :type: :class:`bool`
    peak_fractions = variable(bool, value=False)

    #: A TFLOP/s (or GFLOP/s) metric of this check: its rate over ``power_avg_w`` is reported as
    #: ``gflops_per_watt``. Empty: no efficiency metric. Needs ``sample_power``.
    #:
    #: :type: :class:`str`
    efficiency_metric = variable(str, value="")

    valid_prog_environs = ["builtin"]
    require_reference = True
    power_file = "power.json"

    @property
    def result_file(self) -> str:
        return CHECKS[self.check_key].result_file

    @run_after("init")
    def check_mode(self):
        if self.mode not in ("full", "quick"):
            raise ValueError(f"mode must be 'full' or 'quick', not {self.mode!r}")
        if self.efficiency_metric and not self.sample_power:
            raise ValueError(f"efficiency_metric {self.efficiency_metric!r} needs sample_power = True")

    @run_after("setup")
    def bind_references(self):
        extras = _extras(self)
        node_type = extras.get("node_type")
        if not node_type or node_type == "auto":
            raise ReferenceError(
                f"partition {self.current_partition.fullname} has no extras.node_type: generate the ReFrame "
                "configuration with the gpuaccept_reframe role (it resolves the node type)"
            )
        self._node_type: NodeType = load_node_type(extras.get("reference_dir", "reference_values"), node_type)
        self.reference = self._node_type.reframe_reference(self.check_key)
        self.keep_files = [self.result_file]
        self.executable_opts = [
            "--output",
            self.result_file,
            *(["--quick"] if self.mode == "quick" else []),
            *self.bench_opts,
        ]

    @run_before("run")
    def add_peak_fractions(self):
        """With ``peak_fractions``: after the benchmark, ``gpuaccept peaks`` adds the ``*_peak_fraction`` metrics
        to its document; the job still exits with the benchmark's status (or 4 when only the annotation failed)."""
        if not self.peak_fractions:
            return
        refdir = str(_extras(self).get("reference_dir", "reference_values"))
        args = [sys.executable, "-m", "gpuaccept", "peaks", self.result_file, "--reference-dir", refdir]
        if self.sample_power:
            args += ["--power", self.power_file]
        peaks = " ".join(shlex.quote(a) for a in args)
        self.postrun_cmds = [
            *self.postrun_cmds,
            "_gpuaccept_rc=$?",
            f"if [ -f {shlex.quote(self.result_file)} ]; then {peaks} || "
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
        host = socket.gethostname()
        name = name or self.result_file
        path = os.path.join(self.stagedir, name)
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, json.JSONDecodeError) as err:
            tail = ""
            try:
                with open(os.path.join(self.stagedir, str(self.stderr)), encoding="utf-8", errors="replace") as h:
                    tail = h.read()[-600:].strip()
            except OSError:
                pass
            raise SanityError(
                f"{host}: {self.executable} left no readable {name} "
                f"(exit code {self.job.exitcode}): {err}; stderr: {tail or '(empty)'}"
            ) from None

    def combined_metrics(self) -> tuple[dict, dict, list[str]]:
        """The benchmark's metrics and waived metrics, with the power sampler's and ``gflops_per_watt`` added
        when ``sample_power`` is on, and the problems found in the sampler's document."""
        doc = self._document()
        metrics, waived = dict(doc.get("metrics") or {}), dict(doc.get("waived") or {})
        problems: list[str] = []
        if not self.sample_power:
            return metrics, waived, problems
        pdoc = self._document(self.power_file)
        problems += [f"power sampler: {e}" for e in pdoc.get("errors") or []]
        pver = pdoc.get("verification") or {}
        if not pver.get("passed", False):
            problems.append("power sampler: " + ("; ".join((pver.get("failures") or [])[:5]) or "verification failed"))
        metrics.update(pdoc.get("metrics") or {})
        waived.update(pdoc.get("waived") or {})
        if self.efficiency_metric:
            rate = metrics.get(self.efficiency_metric)
            watts = (metrics.get("power_avg_w") or {}).get("value")
            gflops = _gflops(rate) if rate else None
            if rate is None:
                why = waived.get(self.efficiency_metric, "not reported")
                waived["gflops_per_watt"] = f"efficiency_metric {self.efficiency_metric!r}: {why}"
            elif gflops is None:
                problems.append(
                    f"efficiency_metric {self.efficiency_metric!r} is in {rate.get('unit')!r}, not TFLOP/s or GFLOP/s"
                )
            elif not watts:
                waived["gflops_per_watt"] = "no average power: " + waived.get("power_avg_w", "not measured")
            else:
                metrics["gflops_per_watt"] = {
                    "value": gflops / watts,
                    "unit": "GFLOP/s/W",
                    "better": "higher",
                    "description": f"{self.efficiency_metric} in GFLOP/s per watt of average GPU power over the run",
                }
        return metrics, waived, problems

    @sanity_function
    def validate(self):
        host = socket.gethostname()
        doc = self._document()
        problems = list(doc.get("errors") or [])
        failures = (doc.get("verification") or {}).get("failures") or []
        if not (doc.get("verification") or {}).get("passed", False):
            problems.append("verification failed: " + ("; ".join(failures[:5]) or "no details"))
        # None: the scheduler cannot tell (Slurm without accounting, ReFrame's squeue backend); the document
        # still has to be there, complete and verified.
        if self.job.exitcode not in (0, None) and not problems:
            problems.append(f"exit code {self.job.exitcode}")
        if CHECKS[self.check_key].needs_gpu:
            expected = _extras(self).get("gpu_count")
            seen = len(doc.get("devices") or [])
            if expected is not None and seen != expected:
                problems.append(f"the benchmark saw {seen} GPUs, the node has {expected}")
        refs = self._node_type.check(self.check_key)
        metrics, waived, power_problems = self.combined_metrics()
        problems += power_problems
        for name in sorted(set(metrics) - set(refs)):
            problems.append(f"{self._node_type.path} has no reference for metric {name!r} of check {self.check_key!r}")
        for name, ref in sorted(refs.items()):
            if ref.judged and name not in metrics:
                why = f"waived: {waived[name]}" if name in waived else "not reported"
                problems.append(f"metric {name!r} is referenced for node type {self._node_type.name} but was {why}")
        if problems:
            raise SanityError(f"{host}: " + "; ".join(problems))
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
