"""gpuaccept-openmm: a molecular-dynamics benchmark through OpenMM, the engine gpuaccept runs on real hardware
behind the same check interface as NAMD (docs/checks/md.md).

The system is built here, without downloads: a cubic box of TIP3P water filled by OpenMM's Modeller from the
pre-equilibrated water box shipped in OpenMM's wheel (default edge 9.7 nm: about 92,000 atoms, the size of
NAMD's APOA1, but it is not APOA1), PME with a 1.0 nm cutoff, rigid water, 2 fs steps, constant energy
(velocity Verlet), mixed precision on the GPU. Steps: minimise, draw velocities at 300 K (fixed seed),
thermalise with a Langevin thermostat (``--equil-steps``), then from that state, on each platform: warm up,
then ``--repeats`` timed segments of ``--steps`` steps on one GPU (and on all GPUs at once where there are
several), each ended by reading the state back (which waits for the GPU); the median segment is reported.
The CPU baseline runs the same system on OpenMM's CPU platform (every core) for ``--cpu-steps`` steps.

Verification: the initial potential energy from the GPU agrees with the CPU platform's within
``--energy-rtol``; the total energy is conserved over the timed steps (drift within ``--drift-tol`` of the
kinetic energy); the temperature stays within 250-350 K; the potential energy per water molecule is that of
liquid TIP3P (-45 to -36 kJ/mol); every energy is finite.
Power: NVML's total-energy counter of the GPUs in use, read before and after the timed segments.

Writes one gpuaccept.bench/1 document (docs/benchmark-json.md) with ``--output``. Exit status: 0 ran and
verified, 1 a run failed (``errors``), 2 verification failed, 3 bad command line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import socket
import statistics
import sys
import time
from typing import Any

from gpuaccept import __version__
from gpuaccept.atomic import write_text_atomic
from gpuaccept.probe import facts as node_facts

TOOL = "gpuaccept-openmm"
TEMPERATURE_K = 300.0
TIMESTEP_FS = 2.0
KJ_PER_KCAL = 4.184


class BenchError(Exception):
    """A step of the benchmark failed; the message names the step."""


def ns_per_day(steps: int, seconds: float, timestep_fs: float = TIMESTEP_FS) -> float:
    return steps * timestep_fs * 1e-6 / seconds * 86400.0


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=TOOL, description=__doc__.split("\n\n")[0])
    p.add_argument("--output", required=True, help="the JSON document to write")
    p.add_argument("--quick", action="store_true", help="fewer steps (nightly)")
    p.add_argument("--box-nm", type=float, default=9.7, help="edge of the water box, nm (default 9.7: ~92k atoms)")
    p.add_argument("--steps", type=int, default=None, help="steps per timed GPU segment (default 10000, quick 2000)")
    p.add_argument("--repeats", type=int, default=3, help="timed GPU segments; the median is reported (default 3)")
    p.add_argument(
        "--cpu-steps", type=int, default=None, help="timed CPU baseline steps (default 200, quick 50; 0 skips)"
    )
    p.add_argument("--warmup-steps", type=int, default=500, help="untimed steps before timing (default 500)")
    p.add_argument(
        "--equil-steps", type=int, default=None, help="Langevin steps after minimising (default 2000, quick 1000)"
    )
    p.add_argument("--timestep-fs", type=float, default=TIMESTEP_FS, help="time step, fs (default 2)")
    p.add_argument(
        "--platform", default="CUDA", help="GPU platform (default CUDA; CPU runs the whole benchmark on the CPU)"
    )
    p.add_argument("--precision", default="mixed", choices=("single", "mixed", "double"))
    p.add_argument("--energy-rtol", type=float, default=2e-4, help="GPU vs CPU initial potential energy (default 2e-4)")
    p.add_argument(
        "--drift-tol",
        type=float,
        default=0.02,
        help="|total energy change| over the timed steps / kinetic energy (default 0.02)",
    )
    p.add_argument("--seed", type=int, default=2026)
    args = p.parse_args(argv)
    if args.steps is None:
        args.steps = 2000 if args.quick else 10000
    if args.equil_steps is None:
        args.equil_steps = 1000 if args.quick else 2000
    if args.cpu_steps is None:
        args.cpu_steps = 50 if args.quick else 200
    for name in ("steps", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if min(args.cpu_steps, args.warmup_steps, args.equil_steps) < 0:
        p.error("--cpu-steps, --warmup-steps and --equil-steps must not be negative")
    if not 2.0 <= args.box_nm <= 30.0:
        p.error("--box-nm must be between 2 and 30 (nm)")
    if not 0.1 <= args.timestep_fs <= 10.0:
        p.error("--timestep-fs must be between 0.1 and 10")
    return args


def _openmm():
    try:
        import openmm  # noqa: PLC0415 - optional engine (requirements/md.txt)
        from openmm import app, unit  # noqa: PLC0415
    except ImportError as err:
        raise BenchError(f"OpenMM is not installed ({err}): pip install -r requirements/md.txt") from None
    return openmm, app, unit


def build_water_box(box_nm: float):
    """(topology, system, positions) of the TIP3P water box."""
    openmm, app, unit = _openmm()
    forcefield = app.ForceField("tip3p.xml")
    modeller = app.Modeller(app.Topology(), [])
    modeller.addSolvent(forcefield, model="tip3p", boxSize=openmm.Vec3(box_nm, box_nm, box_nm) * unit.nanometer)
    system = forcefield.createSystem(
        modeller.topology,
        nonbondedMethod=app.PME,
        nonbondedCutoff=1.0 * unit.nanometer,
        constraints=app.HBonds,
        rigidWater=True,
        ewaldErrorTolerance=5e-4,
    )
    return modeller.topology, system, modeller.positions


class Energy:
    """NVML's total-energy counters (mJ) of some GPUs: read before and after a run."""

    def __init__(self, indices: list[int]):
        self.handles: list[Any] = []
        self.error = ""
        try:
            import pynvml  # noqa: PLC0415 - nodes without a driver still run the CPU baseline

            pynvml.nvmlInit()
            self._nvml = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
            self.read()
        except Exception as err:
            self.handles, self.error = [], f"NVML energy counter unavailable: {err}"

    def read(self) -> float | None:
        """Joules since driver load, summed over the GPUs; None without NVML."""
        if not self.handles:
            return None
        return sum(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in self.handles) / 1000.0


def _state(context, unit) -> dict[str, float]:
    st = context.getState(getEnergy=True)
    pot = st.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    kin = st.getKineticEnergy().value_in_unit(unit.kilojoule_per_mole)
    return {"potential": pot, "kinetic": kin, "total": pot + kin}


def _temperature(kinetic_kj_mol: float, dof: int) -> float:
    return 2.0 * kinetic_kj_mol * 1000.0 / (dof * 8.314462618)


def _dof(system) -> int:
    n = sum(1 for i in range(system.getNumParticles()) if system.getParticleMass(i)._value > 0)
    return 3 * n - system.getNumConstraints() - 3


def run_segments(context, integrator, steps: int, repeats: int, unit, energy: Energy | None) -> dict[str, Any]:
    """``repeats`` timed segments of ``steps``; each ends with a state read (a GPU sync)."""
    segments, states = [], [_state(context, unit)]
    e0 = energy.read() if energy else None
    t_all = time.perf_counter()
    for _ in range(repeats):
        t0 = time.perf_counter()
        integrator.step(steps)
        states.append(_state(context, unit))
        segments.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t_all
    e1 = energy.read() if energy else None
    out: dict[str, Any] = {
        "steps": steps,
        "repeats": repeats,
        "segment_s": segments,
        "wall_s": wall,
        "median_s": statistics.median(segments),
        "energies_kj_mol": states,
    }
    if e0 is not None and e1 is not None:
        out["gpu_energy_j"] = e1 - e0
        out["gpu_power_avg_w"] = (e1 - e0) / wall if wall > 0 else None
    return out


def _context(system, start, platform_name: str, props: dict[str, str], args):
    """A constant-energy (Verlet) context at ``start``: positions, or an equilibrated State."""
    openmm, _app, unit = _openmm()
    integrator = openmm.VerletIntegrator(args.timestep_fs * unit.femtosecond)
    platform = openmm.Platform.getPlatformByName(platform_name)
    context = openmm.Context(system, integrator, platform, props)
    if isinstance(start, openmm.State):
        context.setState(start)
    else:
        context.setPositions(start)
    return context, integrator


def equilibrate(system, positions, platform_name: str, props: dict[str, str], args) -> tuple[Any, dict[str, Any]]:
    """Minimise, draw velocities at 300 K, and thermalise with a Langevin thermostat (10/ps) for
    ``--equil-steps``: the timed constant-energy runs all start from this state. (The box is tiled from a small
    pre-equilibrated one: unminimised, its seams heat it to ~400 K; minimised without a thermostat,
    equipartition cools it to ~150 K.)"""
    openmm, _app, unit = _openmm()
    t0 = time.perf_counter()
    integrator = openmm.LangevinMiddleIntegrator(
        TEMPERATURE_K * unit.kelvin, 10.0 / unit.picosecond, args.timestep_fs * unit.femtosecond
    )
    integrator.setRandomNumberSeed(args.seed)
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform_name), props)
    context.setPositions(positions)
    openmm.LocalEnergyMinimizer.minimize(context, 10.0, 500)
    minimized = _state(context, unit)
    context.setVelocitiesToTemperature(TEMPERATURE_K * unit.kelvin, args.seed)
    integrator.step(args.equil_steps)
    state = context.getState(getPositions=True, getVelocities=True, getEnergy=True, enforcePeriodicBox=True)
    info = {
        "platform": platform_name,
        "minimized_potential_kj_mol": minimized["potential"],
        "langevin_steps": args.equil_steps,
        "friction_per_ps": 10.0,
        "seconds": time.perf_counter() - t0,
        "end": _state(context, unit),
    }
    del context
    return state, info


def _platforms(openmm) -> tuple[list[str], list[str]]:
    names = [openmm.Platform.getPlatform(i).getName() for i in range(openmm.Platform.getNumPlatforms())]
    return names, list(openmm.Platform.getPluginLoadFailures())


def benchmark(args: argparse.Namespace, gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs everything; returns the document's parameters/results/metrics/waived/verification/errors."""
    openmm, _app, unit = _openmm()
    results: dict[str, Any] = {"openmm_version": openmm.__version__}
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    failures: list[str] = []
    errors: list[str] = []
    checked = 0
    names, load_failures = _platforms(openmm)
    results["platforms"], results["plugin_load_failures"] = names, load_failures
    if args.platform not in names:
        raise BenchError(
            f"OpenMM platform {args.platform!r} is not available (platforms: {', '.join(names)}; plugin load "
            f"failures: {'; '.join(load_failures) or 'none'}): install openmm-cuda-13 (requirements/md.txt) and "
            "check that the CUDA libraries (nvrtc, cufft) can be loaded"
        )

    t0 = time.perf_counter()
    topology, system, positions = build_water_box(args.box_nm)
    dof = _dof(system)
    waters = topology.getNumResidues()
    results["system"] = {
        "description": f"TIP3P water box, {args.box_nm} nm cube, filled by OpenMM Modeller.addSolvent from "
        "OpenMM's bundled pre-equilibrated TIP3P box (tip3p.xml force field)",
        "atoms": system.getNumParticles(),
        "waters": topology.getNumResidues(),
        "constraints": system.getNumConstraints(),
        "degrees_of_freedom": dof,
        "nonbonded": "PME, cutoff 1.0 nm, ewaldErrorTolerance 5e-4",
        "ensemble": "NVE (VerletIntegrator)",
        "timestep_fs": args.timestep_fs,
        "build_s": time.perf_counter() - t0,
    }
    gpu_run = args.platform != "CPU"
    gpu_props = {"Precision": args.precision} if gpu_run else {}

    # Verification 1: the GPU's potential energy of the starting positions agrees with the CPU platform's.
    ref_ctx, _ = _context(system, positions, "CPU", {}, args)
    e_cpu = _state(ref_ctx, unit)["potential"]
    del ref_ctx
    if gpu_run:
        props = {**gpu_props, "DeviceIndex": "0"}
        ctx, _ = _context(system, positions, args.platform, props, args)
        e_gpu = _state(ctx, unit)["potential"]
        del ctx
        rel = abs(e_gpu - e_cpu) / abs(e_cpu)
        results["initial_energy_check"] = {
            "cpu_kj_mol": e_cpu,
            "gpu_kj_mol": e_gpu,
            "rel_diff": rel,
            "tolerance": args.energy_rtol,
        }
        checked += 1
        if not (math.isfinite(rel) and rel <= args.energy_rtol):
            failures.append(
                f"GPU 0: initial potential energy {e_gpu:.6g} kJ/mol differs from the CPU platform's "
                f"{e_cpu:.6g} by {rel:.2e} (tolerance {args.energy_rtol:g})"
            )

    start, results["equilibration"] = equilibrate(
        system, positions, args.platform, {**gpu_props, "DeviceIndex": "0"} if gpu_run else {}, args
    )

    def measured(label: str, platform: str, props: dict[str, str], steps: int, repeats: int, energy: Energy | None):
        nonlocal checked
        ctx, integ = _context(system, start, platform, props, args)
        warmup = args.warmup_steps if platform != "CPU" or not gpu_run else min(args.warmup_steps, 20)
        if warmup:
            integ.step(warmup)
        seg = run_segments(ctx, integ, steps, repeats, unit, energy)
        del ctx
        seg["platform"], seg["properties"] = platform, props
        seg["ns_per_day"] = ns_per_day(steps, seg["median_s"], args.timestep_fs)
        seg["s_per_step"] = seg["median_s"] / steps
        states = seg["energies_kj_mol"]
        first, last = states[0], states[-1]
        drift = abs(last["total"] - first["total"]) / first["kinetic"] if first["kinetic"] > 0 else math.inf
        temps = [_temperature(s["kinetic"], dof) for s in states]
        seg["energy_drift_over_kinetic"], seg["temperatures_k"] = drift, temps
        checked += 1
        if not all(math.isfinite(s["total"]) for s in states):
            failures.append(f"{label}: a total energy is not finite: {[s['total'] for s in states]}")
        elif drift > args.drift_tol:
            failures.append(
                f"{label}: total energy moved by {drift:.3g} of the kinetic energy over "
                f"{steps * repeats} steps (tolerance {args.drift_tol:g}): {first['total']:.6g} -> "
                f"{last['total']:.6g} kJ/mol"
            )
        per_water = last["potential"] / waters
        if not -45.0 <= per_water <= -36.0:
            failures.append(
                f"{label}: potential energy per water {per_water:.2f} kJ/mol is not liquid TIP3P's (-45 to -36)"
            )
        if not all(250.0 <= t <= 350.0 for t in temps):
            failures.append(f"{label}: temperature left 250-350 K: {', '.join(f'{t:.0f}' for t in temps)}")
        return seg

    runs: dict[str, Any] = {}
    if gpu_run:
        energy = Energy([0])
        if energy.error:
            results["power_note"] = energy.error
        runs["gpu_1"] = measured(
            "GPU 0", args.platform, {**gpu_props, "DeviceIndex": "0"}, args.steps, args.repeats, energy
        )
        if len(gpus) > 1:
            index = ",".join(str(g.get("index", i)) for i, g in enumerate(gpus))
            energy_all = Energy([int(i) for i in index.split(",")])
            runs["gpu_all"] = measured(
                f"GPUs {index}",
                args.platform,
                {**gpu_props, "DeviceIndex": index},
                args.steps,
                args.repeats,
                energy_all,
            )
    else:
        runs["gpu_1"] = None
    if args.cpu_steps:
        threads = str(os.cpu_count() or 1)
        runs["cpu"] = measured(f"CPU ({threads} threads)", "CPU", {"Threads": threads}, args.cpu_steps, 1, None)
    results["runs"] = {k: v for k, v in runs.items() if v is not None}

    def metric(name: str, value: float | None, unit_: str, better: str, description: str) -> None:
        if value is not None and math.isfinite(value):
            metrics[name] = {"value": value, "unit": unit_, "better": better, "description": description}

    one = runs.get("gpu_1")
    if one:
        metric("ns_per_day", one["ns_per_day"], "ns/day", "higher", "one GPU: median of the timed segments")
        metric("s_per_step", one["s_per_step"], "s/step", "lower", "one GPU: median segment time / steps")
        metric("wall_s", one["wall_s"], "s", "lower", f"one GPU: wall time of {one['repeats']} x {one['steps']} steps")
        if one.get("gpu_power_avg_w"):
            metric(
                "gpu_power_avg_w",
                one["gpu_power_avg_w"],
                "W",
                "lower",
                "one GPU: NVML energy counter delta / wall time of the timed segments",
            )
            metric(
                "gpu_energy_kj",
                one["gpu_energy_j"] / 1000.0,
                "kJ",
                "lower",
                f"one GPU: energy to solution of {one['repeats']} x {one['steps']} steps (NVML counter)",
            )
            metric(
                "ns_per_day_per_kw",
                one["ns_per_day"] / (one["gpu_power_avg_w"] / 1000.0),
                "ns/day/kW",
                "higher",
                "one GPU: ns/day over the GPU's average power in kW (seed 003, table 7)",
            )
        else:
            for name in ("gpu_power_avg_w", "gpu_energy_kj", "ns_per_day_per_kw"):
                waived[name] = results.get("power_note") or "no NVML energy counter"
    if "gpu_all" in runs:
        metric(
            "all_gpus_ns_per_day",
            runs["gpu_all"]["ns_per_day"],
            "ns/day",
            "higher",
            "every GPU of the node in one simulation: median of the timed segments",
        )
    elif gpu_run:
        waived["all_gpus_ns_per_day"] = "one GPU: the all-GPU run is the one-GPU run"
    cpu = runs.get("cpu")
    if cpu:
        metric(
            "cpu_ns_per_day",
            cpu["ns_per_day"],
            "ns/day",
            "higher",
            f"CPU platform, {cpu['properties']['Threads']} threads",
        )
        if one:
            metric(
                "speedup_vs_cpu",
                one["ns_per_day"] / cpu["ns_per_day"],
                "ratio",
                "higher",
                "one GPU's ns/day over the CPU platform's",
            )
    elif gpu_run:
        waived["cpu_ns_per_day"] = waived["speedup_vs_cpu"] = "CPU baseline skipped (--cpu-steps 0)"
    return {
        "results": results,
        "metrics": metrics,
        "waived": waived,
        "verification": {
            "passed": not failures and not errors and checked > 0,
            "checked": checked,
            "failures": failures,
        },
        "errors": errors,
    }


def _host(f: dict[str, Any]) -> dict[str, Any]:
    return {k: f.get(k) for k in ("hostname", "cpu_model", "logical_cpus", "numa_nodes")}


def _devices(f: dict[str, Any]) -> list[dict[str, Any]]:
    keys = ("index", "name", "pci_bus_id", "uuid", "numa_node", "memory_bytes", "compute_capability")
    return [{k: g.get(k) for k in keys if k in g} for g in f.get("gpus") or []]


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    t0 = time.perf_counter()
    f = node_facts.gather()
    gpus = (f.get("gpus") or []) if args.platform != "CPU" else []
    doc: dict[str, Any] = {
        "schema": "gpuaccept.bench/1",
        "tool": TOOL,
        "tool_version": __version__,
        "git_revision": os.environ.get("GPUACCEPT_GIT_REVISION", "unknown"),
        "command_line": [TOOL, *(sys.argv[1:] if argv is None else argv)],
        "started_utc": started,
        "timing": (
            f"wall clock (time.perf_counter) of {args.repeats} segments of {args.steps} steps after "
            f"{args.warmup_steps} warm-up steps, each ended by a state read that waits for the GPU; "
            "median segment reported; CPU baseline: one segment after at most 20 warm-up steps"
        ),
        "host": _host(f),
        "devices": _devices({"gpus": gpus}),
        "cuda": {"driver_release": f.get("driver_version"), "cuda_driver_version": f.get("cuda_driver_version")},
        "parameters": {k: v for k, v in vars(args).items() if k != "output"},
    }
    code = 0
    try:
        doc.update(benchmark(args, gpus))
        if not doc["verification"]["passed"]:
            code = 2
    except BenchError as err:
        doc.update(
            {
                "results": {},
                "metrics": {},
                "waived": {},
                "verification": {"passed": False, "checked": 0, "failures": []},
                "errors": [str(err)],
            }
        )
        code = 1
    except Exception as err:
        doc.update(
            {
                "results": {},
                "metrics": {},
                "waived": {},
                "verification": {"passed": False, "checked": 0, "failures": []},
                "errors": [f"{type(err).__name__}: {err}"],
            }
        )
        code = 1
    doc["elapsed_s"] = time.perf_counter() - t0
    write_text_atomic(args.output, json.dumps(doc, indent=1) + "\n")
    for e in doc["errors"]:
        print(f"{TOOL}: {socket.gethostname()}: {e}", file=sys.stderr)
    for e in doc["verification"]["failures"]:
        print(f"{TOOL}: {socket.gethostname()}: verification: {e}", file=sys.stderr)
    for name, m in doc["metrics"].items():
        print(f"{name:22s} {m['value']:12.4g} {m['unit']}")
    return code


if __name__ == "__main__":
    sys.exit(main())
