"""Molecular-dynamics application checks: APOA1 through OpenMM (the engine run on real hardware; the unit cell
and the cell replicated to 1.1 M atoms) and NAMD APOA1/STMV (operator-supplied NAMD).

Both engines write the same gpuaccept.bench/1 document through a Python runner in gpuaccept
(``gpuaccept.probe.md_apoa1``, ``gpuaccept.probe.namd``) and are judged like every other check. An engine that is not
installed makes its check NOT RUN with the reason (ReFrame's skip), never a pass. What they measure and how:
docs/checks/md.md.
"""

import importlib.util
import os
import shlex
import sys

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, variable

from gpuaccept.probe import namd
from gpuaccept.rfm import BenchCheck

README_NAMD = "README.md, section 'NAMD'"


def _extras(test: rfm.RegressionTest) -> dict:
    return test.current_partition.extras or {}


def _installed(test: rfm.RegressionTest, value: str, extras_key: str, env: str, default: str) -> str:
    """Where the site installed an application or its inputs: the check's variable (``value``), else the
    partition's extras, else the environment, else where the role installs it."""
    return value or str(_extras(test).get(extras_key) or "") or os.environ.get(env, "") or default


class SystemCheck(BenchCheck):
    """A check per input system: its key is ``<key_prefix>_<system>`` (``system`` is the subclass's parameter)."""

    key_prefix = ""

    @run_after("init")
    def take_declaration(self):  # BenchCheck's, for this system's check
        self.check_key = f"{self.key_prefix}_{self.system}"
        super().take_declaration()


@rfm.simple_test
class MdApoa1(SystemCheck):
    """NAMD's APOA1 benchmark through OpenMM's CUDA platform, its energies matched to NAMD 3.0's before it is
    timed: the unit cell (92,224 atoms, ``md_apoa1``) and the cell replicated 3x2x2 (1,106,688 atoms, STMV's
    scale but not STMV, ``md_apoa1_x12``).

    Parameters: ``system`` (``apoa1``, ``apoa1_x12``). Variables: ``apoa1_inputs`` (the APOA1 input set: a
    directory or apoa1.tar.gz; default: the partition's ``extras.apoa1_inputs``, else ``$GPUACCEPT_APOA1``, else
    ``/opt/gpuaccept/md/apoa1``), ``mode`` (``quick``: fewer steps), ``bench_opts`` (options of
    gpuaccept-md-apoa1). Metrics: ns_per_day, s_per_step, wall_s, energy_drift_ratio, gpu_memory_used_gib,
    energy_bonded_max_rel_diff, energy_nonbonded_rel_diff (one GPU), all_gpus_ns_per_day (one replica per GPU;
    waived with one GPU), cpu_ns_per_day and speedup_vs_cpu (unit cell only), gpu_power_avg_w, gpu_energy_kj,
    ns_per_day_per_kw.
    Not run where OpenMM or the input set is not installed (docs/checks/md.md).
    """

    system = parameter(["apoa1", "apoa1_x12"])

    #: The APOA1 input set (directory or apoa1.tar.gz); '' = from the partition's extras, the environment or
    #: /opt/gpuaccept/md/apoa1 (where the gpuaccept_md role unpacks it).
    #:
    #: :type: :class:`str`
    apoa1_inputs = variable(str, value="")

    key_prefix = "md"
    valid_systems = ["+gpu"]
    time_limit = "20m"

    @run_after("setup")
    def bind_references(self):
        self.skip_if(
            importlib.util.find_spec("openmm") is None,
            f"OpenMM not installed in {sys.prefix} (pip install -r requirements/md.txt; see docs/checks/md.md)",
        )
        inputs = _installed(self, self.apoa1_inputs, "apoa1_inputs", "GPUACCEPT_APOA1", "/opt/gpuaccept/md/apoa1")
        self.skip_if(
            not os.path.exists(inputs),
            f"APOA1 input set not installed at {inputs} (the gpuaccept_md role installs it; docs/checks/md.md)",
        )
        super().bind_references()
        self.executable = f"{shlex.quote(sys.executable)} -m gpuaccept.probe.md_apoa1"
        self.executable_opts += ["--inputs", inputs]
        if self.system == "apoa1_x12":
            self.executable_opts += ["--replicate", "3,2,2"]
        self.env_vars["GPUACCEPT_GIT_REVISION"] = str(_extras(self).get("git_revision", "unknown"))
        self.env_vars["LC_ALL"] = "C"


@rfm.simple_test
class Namd(SystemCheck):
    """NAMD 3.0.x APOA1 and STMV: GPU-resident, GPU-offload and CPU-only, on all GPUs and on one.

    Parameters: ``system`` (apoa1, stmv). Variables: ``namd_home`` (where the gpuaccept_namd role installed
    NAMD; default: the partition's ``extras.namd_home``, else ``$GPUACCEPT_NAMD_HOME``, else
    ``/opt/gpuaccept/namd``), ``steps`` (default 500, energies every 100th step as Kozin and Cable (2010) did; quick:
    200), ``modes``. Metrics per run (``gpu_resident_all``, ``gpu_resident_1``, ``gpu_offload_all``,
    ``gpu_offload_1``, ``cpu``): ``<run>_ns_per_day``, ``<run>_s_per_step``, ``<run>_wall_s``, and for GPU
    runs ``<run>_power_avg_w``, ``<run>_energy_kj``, ``<run>_ns_per_day_per_kw``; ``speedup_vs_cpu``.
    Not run where NAMD or the input set is not installed (README, section 'NAMD').
    """

    system = parameter(["apoa1", "stmv"])

    #: Where the gpuaccept_namd role installed NAMD (``bin/``, ``inputs/``); '' = from the partition's extras.
    #:
    #: :type: :class:`str`
    namd_home = variable(str, value="")

    #: Steps per run (NAMD's ``numsteps``).
    #:
    #: :type: :class:`int`
    steps = variable(int, value=500)

    #: Which runs: ``gpu_resident``, ``gpu_offload``, ``cpu`` (each GPU mode on all GPUs and on one).
    #:
    #: :type: :class:`List[str]`
    modes = variable(typ.List[str], value=["gpu_resident", "gpu_offload", "cpu"])

    key_prefix = "namd"
    valid_systems = ["*"]
    time_limit = "60m"

    @run_after("setup")
    def bind_references(self):
        home = _installed(self, self.namd_home, "namd_home", "GPUACCEPT_NAMD_HOME", "/opt/gpuaccept/namd")
        missing = namd.missing(home, self.system, self.modes)
        self.skip_if(bool(missing), f"NAMD not installed (see {README_NAMD}): {missing}")
        self.skip_if(
            any(m.startswith("gpu") for m in self.modes) and not _extras(self).get("gpu_count"),
            "no NVIDIA GPU on this partition for NAMD's GPU runs",
        )
        super().bind_references()
        self.executable = f"{shlex.quote(sys.executable)} -m gpuaccept.probe.namd run"
        # ReFrame writes executable_opts into the job script as they are: an operator's path is quoted, so a
        # `$(...)` in it is a name, never a command.
        self.executable_opts += [
            "--namd-home",
            shlex.quote(home),
            "--system",
            shlex.quote(self.system),
            "--steps",
            str(self.steps),
            "--modes",
            ",".join(self.modes),
        ]
        self.env_vars["LC_ALL"] = "C"
        self.keep_files += [f"namd_{self.system}_logs"]
