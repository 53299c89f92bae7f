"""gpuaccept-md-apoa1: NAMD's APOA1 benchmark (92,224 atoms) run on the GPU through OpenMM's CUDA platform, with
the benchmark's own CHARMM22 force field and settings, validated against NAMD 3.0's energies before it is timed
(docs/checks/md.md).

The system: apoa1.psf, apoa1.pdb and the two X-PLOR parameter files of NAMD's input set (converted to CHARMM
format by gpuaccept.probe.xplor_charmm, read by OpenMM's CharmmParameterSet), and apoa1.namd's settings: box
108.8612 x 108.8612 x 77.758 A, 12 A cutoff with the VdW switched from 10 A, PME on a 108 x 108 x 80 grid with
NAMD's Ewald coefficient (from its PME tolerance 1e-6: erfc(beta rc)/rc = 1e-6, beta = 0.257952/A), scaled 1-4
exclusions with 1-4 scaling 1.0 and CHARMM's 1-4 VdW parameters, no constraints (flexible water), 1 fs steps,
constant energy. NAMD's X-PLOR rule for dihedrals: a dihedral listed k times in the psf gets the first k terms
of its (MULTIPLE) parameter entry, one term per psf entry. ``--replicate 3,2,2`` tiles the unit cell into a
larger periodic box (3 x 2 x 2: 1,106,688 atoms, PME grid scaled with it): the same force field at the
STMV benchmark's scale; it is APOA1 replicated, not STMV.

Two integrators (``--integrator``): ``mts`` (default) is NAMD's setting fullElectFrequency 4: OpenMM's
MTSIntegrator evaluates PME's reciprocal-space part once per 4 fs outer step and everything else every 1 fs
(one integrator step = 4 fs); ``verlet`` evaluates every force every 1 fs step.

Verification, before timing: the step-0 energies of the PDB coordinates on the timed platform (bond, angle +
Urey-Bradley, dihedral, improper, electrostatic + VdW; times the number of cells for a replicated system) must
match NAMD 3.0's step-0 ENERGY line (kcal/mol) within ``--bonded-rtol`` (0.01 %) and ``--nonbonded-rtol``
(0.05 %); a term outside fails the run and no timing follows. Then velocities are drawn at 300 K (fixed seed),
and for each timed run: the total energy is conserved (drift over the run within ``--drift-tol`` of the
kinetic energy), every energy is finite, the temperature stays within 120-220 K
(NAMD 3.0's own run: 151-165 K once the velocities drawn at 300 K have equipartitioned).

Timing: ``--warmup-steps`` untimed fs, then ``--repeats`` segments of ``--steps`` fs, each ended by a state
read (which waits for the GPU); the median segment gives ns/day. All GPUs at once: one replica per GPU in its own
process, started together; the node's ns/day is their sum. CPU baseline: OpenMM's CPU platform (every core)
for ``--cpu-steps`` fs. Power: gpuaccept's power sampler (NVML, every 0.1 s, total-energy counter before/after)
over the one-GPU timed segments: energy to solution of the timed steps, ns/day per kW.

Writes one gpuaccept.bench/1 document with ``--output``. Exit status: 0 ran and verified, 1 a run failed
(``errors``), 2 verification failed, 3 bad command line.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import socket
import statistics
import sys
import tarfile
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept.atomic import write_text_atomic
from gpuaccept.manifest import file_sha256
from gpuaccept.probe import document, xplor_charmm
from gpuaccept.probe import facts as node_facts
from gpuaccept.probe.nvml import Nvml

TOOL = "gpuaccept-md-apoa1"
KJ_PER_KCAL = 4.184
TEMPERATURE_K = 300.0
TIMESTEP_FS = 1.0
PME_EVERY = 4
# Velocities are drawn at 300 K into a structure at rest near its potential minimum, with flexible bonds:
# equipartition halves the temperature within ~100 fs. NAMD 3.0's own run of apoa1.namd reads 151-165 K over
# steps 100-500 (apoa1-1.log); a run outside this band is not that system any more.
TEMPERATURE_BAND_K = (120.0, 220.0)
INPUT_FILES = ("apoa1.psf", "apoa1.pdb", "par_all22_prot_lipid.xplor", "par_all22_popc.xplor", "apoa1.namd")
# NAMD's published input set (NAMD's benchmark page; docs/checks/md.md): apoa1.tar.gz.
APOA1_TARBALL_SHA256 = "fe30322cc94d93dff6c4e517d28584c48d0d0a1a7b23e2cd74cdb36d03863b22"
# apoa1.namd
BOX_A = (108.8612, 108.8612, 77.758)
PME_GRID = (108, 108, 80)
CUTOFF_A = 12.0
SWITCH_A = 10.0
PME_TOLERANCE = 1e-6
# NAMD 3.0's step-0 energies of apoa1.namd (kcal/mol): the ENERGY line at step 0 of apoa1-1.log (NAMD 3.0
# multicore, CPU only, double precision; shared/data/namd3-apoa1-logs). The ten GPU logs (A100, GPU-offload and
# GPU-resident) agree to 7e-7 (bonded) and 1.5e-6 (ELECT + VDW). ``--namd-log`` reads them from another log.
NAMD3_STEP0 = {
    "source": "NAMD 3.0 multicore (CPU) apoa1-1.log, ENERGY line of step 0",
    "bond": 12352.4560,
    "angle": 14603.1480,
    "dihedral": 4549.0710,
    "improper": 48.1064,
    "elect": -362073.7645,
    "vdw": 24229.5349,
}
# Force groups of the validation context.
GROUP_OF = {
    "HarmonicBondForce": None,  # bonds (group 0) and Urey-Bradley (group 1): told apart by order below
    "HarmonicAngleForce": 1,
    "PeriodicTorsionForce": 2,
    "CustomTorsionForce": 3,
    "CMAPTorsionForce": 2,
    "NonbondedForce": 4,
    "CMMotionRemover": 6,
}
TERMS = (("bond", 0), ("angle_ub", 1), ("dihedral", 2), ("improper", 3), ("nonbonded", 4))
BONDED = ("bond", "angle_ub", "dihedral", "improper")


class BenchError(Exception):
    """A step of the benchmark failed; the message names the step."""


# ------------------------------------------------------------------------------------------------
# Inputs


def find_inputs(where: str | Path, workdir: Path) -> tuple[Path, dict[str, Any]]:
    """The directory holding the five APOA1 files: ``where`` itself, its ``apoa1/`` subdirectory, or
    apoa1.tar.gz (a path to it, or in ``where``) unpacked into ``workdir`` after its sha256 is checked."""
    where = Path(where)
    info: dict[str, Any] = {"given": str(where)}
    for d in (where, where / "apoa1"):
        if d.is_dir() and all((d / f).is_file() for f in INPUT_FILES):
            info["directory"] = str(d)
            return d, info
    tarball = where if where.is_file() else where / "apoa1.tar.gz"
    if not tarball.is_file():
        raise BenchError(
            f"APOA1 inputs not found at {where}: need a directory with {', '.join(INPUT_FILES)} or apoa1.tar.gz "
            "(the gpuaccept_md role installs it; tests use ../shared/data/apoa1/apoa1.tar.gz)"
        )
    digest = file_sha256(tarball)
    info.update({"tarball": str(tarball), "tarball_sha256": digest})
    if digest != APOA1_TARBALL_SHA256:
        raise BenchError(f"{tarball}: sha256 {digest} is not that of NAMD's APOA1 input set ({APOA1_TARBALL_SHA256})")
    with tarfile.open(tarball) as tf:
        tf.extractall(workdir, filter="data")
    d = workdir / "apoa1"
    missing = [f for f in INPUT_FILES if not (d / f).is_file()]
    if missing:
        raise BenchError(f"{tarball}: the archive lacks apoa1/{', apoa1/'.join(missing)}")
    info["directory"] = str(d)
    return d, info


def read_pdb_positions_nm(path: Path) -> list[tuple[float, float, float]]:
    """ATOM/HETATM coordinates (columns 31-54, A) in nm."""
    out = []
    with path.open() as f:
        for number, line in enumerate(f, 1):
            if line.startswith(("ATOM  ", "HETATM")):
                try:
                    out.append((float(line[30:38]) * 0.1, float(line[38:46]) * 0.1, float(line[46:54]) * 0.1))
                except ValueError:
                    raise BenchError(f"{path}:{number}: coordinates are not numbers: {line[30:54]!r}") from None
    return out


def namd_settings(path: Path) -> dict[str, str]:
    """apoa1.namd's keywords (lower case) and values."""
    out = {}
    for line in path.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2:
            out[words[0].lower()] = " ".join(words[1:])
    return out


def check_settings(conf: dict[str, str]) -> list[str]:
    """The settings of apoa1.namd this runner reproduces; what differs is named."""
    want = {
        "cutoff": "12",
        "switchdist": "10",
        "switching": "on",
        "pme": "on",
        "pmegridsizex": "108",
        "pmegridsizey": "108",
        "pmegridsizez": "80",
        "exclude": "scaled1-4",
        "1-4scaling": "1.0",
        "timestep": "1.0",
        "fullelectfrequency": "4",
        "cellbasisvector1": "108.8612 0.0 0.0",
        "cellbasisvector2": "0.0 108.8612 0.0",
        "cellbasisvector3": "0.0 0.0 77.758",
    }
    return [f"apoa1.namd: {k} is {conf.get(k)!r}, expected {v!r}" for k, v in want.items() if conf.get(k) != v]


def ewald_coefficient(cutoff_a: float = CUTOFF_A, tolerance: float = PME_TOLERANCE) -> float:
    """NAMD's Ewald coefficient (1/A): the beta with erfc(beta rc)/rc = tolerance, by bisection."""
    lo, hi = 0.0, 10.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if math.erfc(mid * cutoff_a) / cutoff_a >= tolerance:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _openmm():
    try:
        import openmm  # noqa: PLC0415 - optional engine (requirements/md.txt)
        from openmm import app, unit  # noqa: PLC0415
    except ImportError as err:
        raise BenchError(f"OpenMM is not installed ({err}): pip install -r requirements/md.txt") from None
    return openmm, app, unit


def dihedral_terms(psf, parameters) -> tuple[list[tuple[int, int, int, int, int, float, float]], dict[str, int]]:
    """NAMD's dihedrals of an X-PLOR psf: a dihedral listed k times gets the first k terms of its parameter
    entry. Returns (a1, a2, a3, a4, periodicity, phase_rad, k_kj_mol) terms and counts of what was seen."""
    from openmm.app.charmmpsffile import _match_with_wildcards  # noqa: PLC0415 - OpenMM's own type matcher

    listed: OrderedDict[tuple[Any, Any, Any, Any], int] = OrderedDict()
    for d in psf.dihedral_list:
        key = (d.atom1, d.atom2, d.atom3, d.atom4)
        listed[key] = listed.get(key, 0) + 1
    terms = []
    seen = {"psf_entries": len(psf.dihedral_list), "unique": len(listed), "listed_more_than_once": 0}
    for (a, b, c, d), k in listed.items():
        try:
            types = _match_with_wildcards([a.attype, b.attype, c.attype, d.attype], parameters.dihedral_types, 3)
        except KeyError:
            raise BenchError(
                f"no dihedral parameters for atoms {a.idx + 1}-{b.idx + 1}-{c.idx + 1}-{d.idx + 1}"
            ) from None
        if k > len(types):
            raise BenchError(
                f"dihedral {a.idx + 1}-{b.idx + 1}-{c.idx + 1}-{d.idx + 1} ({a.attype} {b.attype} {c.attype} "
                f"{d.attype}) is listed {k} times in the psf but its parameters have {len(types)} term(s)"
            )
        if k > 1:
            seen["listed_more_than_once"] += 1
        for t in types[:k]:
            terms.append((a.idx, b.idx, c.idx, d.idx, int(t.per), math.radians(t.phase), t.phi_k * KJ_PER_KCAL))
    seen["terms"] = len(terms)
    return terms, seen


def build_apoa1(inputs: Path) -> tuple[Any, list[Any], dict[str, Any]]:
    """(system, positions in nm, description) of the APOA1 unit cell."""
    openmm, app, unit = _openmm()
    t0 = time.perf_counter()
    conf = namd_settings(inputs / "apoa1.namd")
    differs = check_settings(conf)
    if differs:
        raise BenchError("; ".join(differs))
    prm = xplor_charmm.convert([inputs / "par_all22_prot_lipid.xplor", inputs / "par_all22_popc.xplor"])
    with tempfile.NamedTemporaryFile("w", suffix=".prm", delete=False) as f:
        f.write(prm)
    try:
        # permissive: the X-PLOR files carry no MASS section; masses come from the psf
        params = app.CharmmParameterSet(f.name, permissive=True)
    finally:
        os.unlink(f.name)
    psf = app.CharmmPsfFile(str(inputs / "apoa1.psf"))
    positions = read_pdb_positions_nm(inputs / "apoa1.pdb")
    if len(positions) != len(psf.atom_list):
        raise BenchError(f"apoa1.pdb has {len(positions)} atoms, apoa1.psf {len(psf.atom_list)}")
    psf.setBox(*(b * 0.1 * unit.nanometer for b in BOX_A))
    system = psf.createSystem(
        params,
        nonbondedMethod=app.PME,
        nonbondedCutoff=CUTOFF_A * 0.1 * unit.nanometer,
        switchDistance=SWITCH_A * 0.1 * unit.nanometer,
        constraints=None,
        rigidWater=False,
        removeCMMotion=False,
    )
    terms, seen = dihedral_terms(psf, params)
    beta = ewald_coefficient()
    for i in reversed(range(system.getNumForces())):
        force = system.getForce(i)
        name = type(force).__name__
        if name == "PeriodicTorsionForce":
            system.removeForce(i)
        elif name == "NonbondedForce":
            force.setPMEParameters(beta * 10.0, *PME_GRID)
            force.setUseDispersionCorrection(False)  # NAMD adds no long-range VdW correction here
        elif name == "CMAPTorsionForce" and force.getNumTorsions() == 0:
            system.removeForce(i)
        elif name == "CustomNonbondedForce":
            raise BenchError("OpenMM made a CustomNonbondedForce (NBFIX types in use?): not the benchmark's model")
    torsions = openmm.PeriodicTorsionForce()
    for a, b, c, d, per, phase, k in terms:
        torsions.addTorsion(a, b, c, d, per, phase, k)
    system.addForce(torsions)
    # force groups of the validation: bonds 0, angles + Urey-Bradley 1, dihedrals 2, impropers 3, nonbonded 4
    forces = [system.getForce(i) for i in range(system.getNumForces())]
    bonds = [i for i, f in enumerate(forces) if type(f).__name__ == "HarmonicBondForce"]
    if len(bonds) != 2:
        raise BenchError(f"expected two HarmonicBondForces (bonds, Urey-Bradley), OpenMM made {len(bonds)}")
    # the bonds are the force with one term per psf bond; the other holds the Urey-Bradley 1-3 terms
    bond_index = next((i for i in bonds if forces[i].getNumBonds() == len(psf.bond_list)), bonds[0])
    for i, force in enumerate(forces):
        name = type(force).__name__
        if name == "HarmonicBondForce":
            force.setForceGroup(0 if i == bond_index else 1)
        elif name in GROUP_OF and GROUP_OF[name] is not None:
            force.setForceGroup(GROUP_OF[name])
        else:
            raise BenchError(f"unexpected force in the APOA1 system: {name}")
    describe = {
        "name": "apoa1",
        "description": "NAMD's APOA1 benchmark (apoa1.psf/pdb, CHARMM22 par_all22_prot_lipid + par_all22_popc "
        "converted from X-PLOR), apoa1.namd's settings",
        "atoms": system.getNumParticles(),
        "cells": 1,
        "box_a": list(BOX_A),
        "pme_grid": list(PME_GRID),
        "ewald_coefficient_per_a": beta,
        "cutoff_a": CUTOFF_A,
        "switch_a": SWITCH_A,
        "vdw_switching": "OpenMM's NonbondedForce switching function from 10 A (NAMD: CHARMM's, on r^2)",
        "pme_order": "OpenMM: 5 (NAMD: 4)",
        "exclusions": "scaled1-4, 1-4 scaling 1.0, CHARMM 1-4 VdW parameters",
        "constraints": "none (flexible water, as apoa1.namd)",
        "dihedrals": seen,
        "xplor_converted": {"bonds": len(params.bond_types), "dihedral_types": len(params.dihedral_types)},
        "build_s": time.perf_counter() - t0,
    }
    return system, positions, describe


def _v(x: Any) -> Any:
    """A Quantity's number in OpenMM's base units (nm, kJ/mol, radians, amu, e), or ``x``."""
    return x._value if hasattr(x, "_value") else x


def _plain(values: Any) -> tuple:
    """OpenMM's parameter lists as plain numbers: adding 13 M terms with units costs a minute, without 10 s."""
    return tuple(_v(x) for x in values)


def replicate(system, positions: list[Any], cells: tuple[int, int, int]) -> tuple[Any, list[Any]]:
    """The system tiled nx x ny x nz times in a box as many times larger (PME grid scaled with it)."""
    openmm, _app, _unit = _openmm()
    nx, ny, nz = cells
    n = system.getNumParticles()
    a, b, c = system.getDefaultPeriodicBoxVectors()
    shifts = [(i, j, k) for i in range(nx) for j in range(ny) for k in range(nz)]
    out = openmm.System()
    masses = [_v(system.getParticleMass(p)) for p in range(n)]
    for _ in shifts:
        for m in masses:
            out.addParticle(m)
    out.setDefaultPeriodicBoxVectors(a * nx, b * ny, c * nz)
    new_pos = []
    box = (_v(a[0]), _v(b[1]), _v(c[2]))
    for i, j, k in shifts:
        for x, y, z in positions:
            new_pos.append((x + i * box[0], y + j * box[1], z + k * box[2]))
    for force in system.getForces():
        name = type(force).__name__
        if name == "HarmonicBondForce":
            f = openmm.HarmonicBondForce()
            terms = [_plain(force.getBondParameters(t)) for t in range(force.getNumBonds())]
            for s in range(len(shifts)):
                o = s * n
                for p1, p2, r0, k in terms:
                    f.addBond(p1 + o, p2 + o, r0, k)
        elif name == "HarmonicAngleForce":
            f = openmm.HarmonicAngleForce()
            terms = [_plain(force.getAngleParameters(t)) for t in range(force.getNumAngles())]
            for s in range(len(shifts)):
                o = s * n
                for p1, p2, p3, th, k in terms:
                    f.addAngle(p1 + o, p2 + o, p3 + o, th, k)
        elif name == "PeriodicTorsionForce":
            f = openmm.PeriodicTorsionForce()
            terms = [_plain(force.getTorsionParameters(t)) for t in range(force.getNumTorsions())]
            for s in range(len(shifts)):
                o = s * n
                for p1, p2, p3, p4, per, ph, k in terms:
                    f.addTorsion(p1 + o, p2 + o, p3 + o, p4 + o, per, ph, k)
        elif name == "CustomTorsionForce":
            f = openmm.CustomTorsionForce(force.getEnergyFunction())
            for g in range(force.getNumGlobalParameters()):
                f.addGlobalParameter(force.getGlobalParameterName(g), force.getGlobalParameterDefaultValue(g))
            for p in range(force.getNumPerTorsionParameters()):
                f.addPerTorsionParameter(force.getPerTorsionParameterName(p))
            f.setUsesPeriodicBoundaryConditions(force.usesPeriodicBoundaryConditions())
            terms = [force.getTorsionParameters(t) for t in range(force.getNumTorsions())]
            for s in range(len(shifts)):
                o = s * n
                for p1, p2, p3, p4, prm in terms:
                    f.addTorsion(p1 + o, p2 + o, p3 + o, p4 + o, prm)
        elif name == "NonbondedForce":
            f = openmm.NonbondedForce()
            f.setNonbondedMethod(force.getNonbondedMethod())
            f.setCutoffDistance(force.getCutoffDistance())
            f.setUseSwitchingFunction(force.getUseSwitchingFunction())
            f.setSwitchingDistance(force.getSwitchingDistance())
            f.setUseDispersionCorrection(force.getUseDispersionCorrection())
            alpha, gx, gy, gz = force.getPMEParameters()
            f.setPMEParameters(alpha, gx * nx, gy * ny, gz * nz)
            f.setReciprocalSpaceForceGroup(force.getReciprocalSpaceForceGroup())
            particles = [_plain(force.getParticleParameters(p)) for p in range(n)]
            exceptions = [_plain(force.getExceptionParameters(e)) for e in range(force.getNumExceptions())]
            for _ in shifts:
                for q, sig, eps in particles:
                    f.addParticle(q, sig, eps)
            for s in range(len(shifts)):
                o = s * n
                for p1, p2, qq, sig, eps in exceptions:
                    f.addException(p1 + o, p2 + o, qq, sig, eps)
        elif name == "CMMotionRemover":
            f = openmm.CMMotionRemover(force.getFrequency())
        else:
            raise BenchError(f"cannot replicate a {name}")
        f.setForceGroup(force.getForceGroup())
        out.addForce(f)
    return out, [openmm.Vec3(*p) for p in new_pos]


# ------------------------------------------------------------------------------------------------
# Validation and timing


def reference_energies(namd_log: str | None) -> dict[str, Any]:
    """NAMD's step-0 energies (kcal/mol): the built-in NAMD 3.0 values, or those of ``namd_log``."""
    if not namd_log:
        return dict(NAMD3_STEP0)
    from gpuaccept.probe import namd as nl  # noqa: PLC0415 - NAMD's log reader

    log = nl.parse_log(Path(namd_log).read_text(errors="replace"), namd_log)
    step0 = next((e for e in log.energies if e.get("TS") == 0), None)
    if step0 is None:
        raise BenchError(f"{namd_log}: no ENERGY line of step 0")
    return {
        "source": f"{namd_log}, ENERGY line of step 0 ({log.version or 'NAMD'})",
        "bond": step0["BOND"],
        "angle": step0["ANGLE"],
        "dihedral": step0["DIHED"],
        "improper": step0["IMPRP"],
        "elect": step0["ELECT"],
        "vdw": step0["VDW"],
    }


def compare_energies(
    ours_kj: dict[str, float], namd: dict[str, Any], cells: int, bonded_rtol: float, nonbonded_rtol: float
) -> tuple[dict[str, Any], list[str]]:
    """Each term of ours (kJ/mol) against NAMD's (kcal/mol, times ``cells``): table and failures."""
    want = {
        "bond": namd["bond"],
        "angle_ub": namd["angle"],
        "dihedral": namd["dihedral"],
        "improper": namd["improper"],
        "nonbonded": namd["elect"] + namd["vdw"],
    }
    table, failures = {}, []
    for term, per_cell in want.items():
        ref = per_cell * cells
        got = ours_kj[term] / KJ_PER_KCAL
        rel = abs(got - ref) / abs(ref) if ref else math.inf
        tol = bonded_rtol if term in BONDED else nonbonded_rtol
        ok = math.isfinite(rel) and rel <= tol
        table[term] = {"openmm_kcal_mol": got, "namd_kcal_mol": ref, "rel_diff": rel, "tolerance": tol, "ok": ok}
        if not ok:
            failures.append(
                f"step-0 {term} energy {got:.4f} kcal/mol differs from NAMD's {ref:.4f} by {rel:.2e} "
                f"(tolerance {tol:g})"
            )
    return table, failures


def group_energies(context, unit) -> dict[str, float]:
    return {
        term: context.getState(getEnergy=True, groups={g}).getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
        for term, g in TERMS
    }


def _state(context, unit) -> dict[str, float]:
    st = context.getState(getEnergy=True)
    pot = st.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    kin = st.getKineticEnergy().value_in_unit(unit.kilojoule_per_mole)
    return {"potential": pot, "kinetic": kin, "total": pot + kin}


def temperature_k(kinetic_kj_mol: float, atoms: int) -> float:
    return 2.0 * kinetic_kj_mol * 1000.0 / ((3 * atoms - 3) * 8.314462618)


def ns_per_day(fs: float, seconds: float) -> float:
    return fs * 1e-6 / seconds * 86400.0


def make_integrator(kind: str):
    """(integrator, fs per integrator step): ``mts`` = PME reciprocal space every 4 fs, the rest every 1 fs."""
    openmm, _app, unit = _openmm()
    if kind == "mts":
        outer = TIMESTEP_FS * PME_EVERY
        return openmm.MTSIntegrator(outer * unit.femtosecond, [(5, 1), (0, PME_EVERY)]), outer
    return openmm.VerletIntegrator(TIMESTEP_FS * unit.femtosecond), TIMESTEP_FS


def timing_groups(system) -> None:
    """Force groups of the timed run: everything 0, PME's reciprocal space 5 (the MTS outer group)."""
    for force in system.getForces():
        force.setForceGroup(0)
        if type(force).__name__ == "NonbondedForce":
            force.setReciprocalSpaceForceGroup(5)


def timed_run(context, integrator, fs_per_step: float, steps_fs: int, repeats: int, unit, sampler=None):
    """``repeats`` segments of ``steps_fs`` fs; each ends with a state read (a GPU sync)."""
    n = max(1, round(steps_fs / fs_per_step))
    states = [_state(context, unit)]
    segments = []
    energy0 = sampler.energy_mj() if sampler else None
    t_start = time.monotonic()
    if sampler:
        sampler.start(t_start, 0.1)
    t_all = time.perf_counter()
    for _ in range(repeats):
        t0 = time.perf_counter()
        integrator.step(n)
        states.append(_state(context, unit))
        segments.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t_all
    out: dict[str, Any] = {
        "integrator_steps": n,
        "fs_per_segment": n * fs_per_step,
        "repeats": repeats,
        "segment_s": segments,
        "wall_s": wall,
        "median_s": statistics.median(segments),
        "energies_kj_mol": states,
    }
    out["ns_per_day"] = ns_per_day(out["fs_per_segment"], out["median_s"])
    out["s_per_fs"] = out["median_s"] / out["fs_per_segment"]
    if sampler:
        from gpuaccept.probe import power  # noqa: PLC0415

        readings = sampler.stop(t_start)
        energy1 = sampler.energy_mj()
        out["power"] = power.summarize_gpu(
            [r for r in readings if r.gpu == 0], wall, energy0[0] if energy0 else None, energy1[0] if energy1 else None
        )
    return out


def conservation(seg: dict[str, Any], atoms: int, label: str, drift_tol: float) -> list[str]:
    states = seg["energies_kj_mol"]
    first, last = states[0], states[-1]
    drift = abs(last["total"] - first["total"]) / first["kinetic"] if first["kinetic"] > 0 else math.inf
    temps = [temperature_k(s["kinetic"], atoms) for s in states]
    seg["energy_drift_over_kinetic"], seg["temperatures_k"] = drift, temps
    if not all(math.isfinite(s["total"]) for s in states):
        return [f"{label}: a total energy is not finite: {[s['total'] for s in states]}"]
    failures = []
    if drift > drift_tol:
        failures.append(
            f"{label}: total energy moved by {drift:.3g} of the kinetic energy over "
            f"{seg['fs_per_segment'] * seg['repeats']:g} fs "
            f"(tolerance {drift_tol:g}): {first['total']:.6g} -> {last['total']:.6g} kJ/mol"
        )
    low, high = TEMPERATURE_BAND_K
    if not all(low <= t <= high for t in temps):
        failures.append(f"{label}: temperature left {low:g}-{high:g} K: {', '.join(f'{t:.0f}' for t in temps)}")
    return failures


def _replica(args_json: str, system_xml: str, state_xml: str, device: str, barrier, queue) -> None:
    """One replica of the all-GPU run (a child process): wait at the barrier, run the timed segments."""
    try:
        openmm, _app, unit = _openmm()
        args = argparse.Namespace(**json.loads(args_json))
        system = openmm.XmlSerializer.deserialize(system_xml)
        integrator, fs = make_integrator(args.integrator)
        platform = openmm.Platform.getPlatformByName(args.platform)
        gpu = args.platform not in ("CPU", "Reference")
        props = {"Precision": args.precision, "DeviceIndex": device} if gpu else {}
        ctx = openmm.Context(system, integrator, platform, props)
        ctx.setState(openmm.XmlSerializer.deserialize(state_xml))
        integrator.step(max(1, round(args.warmup_steps / fs)))
        ctx.getState(getEnergy=True)
        barrier.wait()
        seg = timed_run(ctx, integrator, fs, args.steps, args.repeats, unit)
        queue.put((device, seg, None))
    except Exception as err:  # reported to the parent, which names the GPU
        queue.put((device, None, f"{type(err).__name__}: {err}"))


def all_gpus(args, system, state, devices: list[str]) -> dict[str, Any]:
    openmm, _app, _unit = _openmm()
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(len(devices)), ctx.Queue()
    sx, stx = openmm.XmlSerializer.serialize(system), openmm.XmlSerializer.serialize(state)
    aj = json.dumps({k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, type(None)))})
    procs = [ctx.Process(target=_replica, args=(aj, sx, stx, d, barrier, queue)) for d in devices]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    errs = [f"GPU {d}: {e}" for d, _s, e in results if e]
    if errs:
        raise BenchError("all-GPU run: " + "; ".join(errs))
    segs = {d: s for d, s, _e in results}
    return {
        "replicas": segs,
        "ns_per_day": sum(s["ns_per_day"] for s in segs.values()),
        "per_gpu_ns_per_day": {d: s["ns_per_day"] for d, s in segs.items()},
    }


@dataclass
class _Setup:
    """What each step of the benchmark runs: OpenMM, the system and its positions, the platform timed."""

    openmm: Any
    unit: Any
    system: Any
    positions: list[Any]
    cells: int  # unit cells of the replicated system (1: APOA1 itself)
    platform: Any
    props: dict[str, str]
    gpu_run: bool  # a GPU platform (not OpenMM's CPU platform)


def _check_platform(openmm: Any, name: str, results: dict[str, Any]) -> None:
    """The platforms OpenMM offers into ``results``; BenchError unless ``name`` is among them."""
    names = [openmm.Platform.getPlatform(i).getName() for i in range(openmm.Platform.getNumPlatforms())]
    results["platforms"], results["plugin_load_failures"] = names, list(openmm.Platform.getPluginLoadFailures())
    if name not in names:
        raise BenchError(
            f"OpenMM platform {name!r} is not available (platforms: {', '.join(names)}; plugin load "
            f"failures: {'; '.join(results['plugin_load_failures']) or 'none'}): install openmm-cuda-13 "
            "(requirements/md.txt) and check that the CUDA libraries (nvrtc, cufft) can be loaded"
        )


def _load_system(args: argparse.Namespace, workdir: Path, openmm: Any,
                 results: dict[str, Any]) -> tuple[Any, list[Any], int]:
    """The APOA1 system from its inputs, replicated as --replicate asks: (system, positions, unit cells)."""
    inputs, results["inputs"] = find_inputs(args.inputs, workdir)
    results["inputs"]["sha256"] = {f: file_sha256(inputs / f) for f in INPUT_FILES}
    system, positions, describe = build_apoa1(inputs)
    cells = args.replicate[0] * args.replicate[1] * args.replicate[2]
    if cells > 1:
        t0 = time.perf_counter()
        system, positions = replicate(system, positions, tuple(args.replicate))
        describe.update(
            {
                "name": "apoa1_" + "x".join(map(str, args.replicate)),
                "description": f"APOA1 replicated {'x'.join(map(str, args.replicate))} (a periodic tiling of the "
                "unit cell: the same force field and settings at STMV's scale; not STMV)",
                "atoms": system.getNumParticles(),
                "cells": cells,
                "box_a": [b * n for b, n in zip(BOX_A, args.replicate, strict=True)],
                "pme_grid": [g * n for g, n in zip(PME_GRID, args.replicate, strict=True)],
                "replicate_s": time.perf_counter() - t0,
            }
        )
    else:
        positions = [openmm.Vec3(*p) for p in positions]
    results["system"] = describe
    return system, positions, cells


def _validate_energies(args: argparse.Namespace, setup: _Setup, results: dict[str, Any], metric: Any) -> list[str]:
    """Step 1: the step-0 energies on the timed platform against NAMD 3.0's; the failures."""
    openmm, unit, system, positions, cells = setup.openmm, setup.unit, setup.system, setup.positions, setup.cells
    platform, props, gpu_run = setup.platform, setup.props, setup.gpu_run
    namd = reference_energies(args.namd_log)
    t0 = time.perf_counter()
    ctx = openmm.Context(system, openmm.VerletIntegrator(0.001), platform, props)
    ctx.setPositions(positions)
    ours = group_energies(ctx, unit)
    results["gpu_memory"] = gpu_memory(0) if gpu_run else None
    del ctx
    table, efail = compare_energies(ours, namd, cells, args.bonded_rtol, args.nonbonded_rtol)
    results["energy_validation"] = {
        "platform": args.platform,
        "precision": props.get("Precision"),
        "reference": namd["source"],
        "cells": cells,
        "terms": table,
        "seconds": time.perf_counter() - t0,
    }
    worst_b = max(table[t]["rel_diff"] for t in BONDED)
    metric(
        "energy_bonded_max_rel_diff",
        worst_b,
        "ratio",
        "lower",
        "largest relative difference of the step-0 bonded terms from NAMD 3.0's",
    )
    metric(
        "energy_nonbonded_rel_diff",
        table["nonbonded"]["rel_diff"],
        "ratio",
        "lower",
        "relative difference of step-0 ELECT+VDW from NAMD 3.0's",
    )
    return efail


def _timed_runs(args: argparse.Namespace, setup: _Setup, gpus: list[dict[str, Any]], results: dict[str, Any],
                failures: list[str]) -> tuple[dict[str, Any], int]:
    """Step 2: velocities at 300 K, then the timed runs (one GPU, every GPU at once, the CPU platform); the runs
    and how many were checked (the energy validation counted), their failures added to ``failures``."""
    openmm, unit, system, positions = setup.openmm, setup.unit, setup.system, setup.positions
    platform, props, gpu_run = setup.platform, setup.props, setup.gpu_run
    atoms = system.getNumParticles()
    timing_groups(system)
    integrator, fs = make_integrator(args.integrator)
    ctx = openmm.Context(system, integrator, platform, props)
    ctx.setPositions(positions)
    ctx.setVelocitiesToTemperature(TEMPERATURE_K * unit.kelvin, args.seed)
    t0 = time.perf_counter()
    integrator.step(max(1, round(args.warmup_steps / fs)))
    _state(ctx, unit)
    results["warmup"] = {"fs": args.warmup_steps, "seconds": time.perf_counter() - t0}
    results["gpu_memory_timed"] = gpu_memory(0) if gpu_run else None
    start = ctx.getState(getPositions=True, getVelocities=True)
    runs: dict[str, Any] = {}
    checked = 1
    sampler = None
    if gpu_run:
        from gpuaccept.probe import power  # noqa: PLC0415

        try:
            sampler, _why = power.open_backend("nvml")
        except Exception as err:
            results["power_note"] = f"power sampler unavailable: {err}"
    runs["gpu_1"] = seg = timed_run(ctx, integrator, fs, args.steps, args.repeats, unit, sampler)
    if sampler is not None:
        sampler.close()
    del ctx
    label = "GPU 0" if gpu_run else "CPU platform"
    failures += conservation(seg, atoms, label, args.drift_tol)
    checked += 1
    devices = [str(g.get("index", i)) for i, g in enumerate(gpus)]
    if args.replica_devices:
        devices = args.replica_devices.split(",")
    results["all_gpus_devices"] = devices
    if gpu_run and len(devices) > 1:
        runs["gpu_all"] = all_gpus(args, system, start, devices)
        for d, s in runs["gpu_all"]["replicas"].items():
            failures += conservation(s, atoms, f"all-GPU run, GPU {d}", args.drift_tol)
            checked += 1
    if gpu_run and args.cpu_steps:
        threads = str(os.cpu_count() or 1)
        cpu_integ, cfs = make_integrator(args.integrator)
        cctx = openmm.Context(system, cpu_integ, openmm.Platform.getPlatformByName("CPU"), {"Threads": threads})
        cctx.setState(start)
        cpu_integ.step(1)
        runs["cpu"] = cseg = timed_run(cctx, cpu_integ, cfs, args.cpu_steps, 1, unit)
        cseg["threads"] = threads
        del cctx
        if not all(math.isfinite(s["total"]) for s in cseg["energies_kj_mol"]):
            failures.append("CPU platform: a total energy is not finite")
        checked += 1
    results["runs"] = runs
    results["integrator"] = {
        "kind": args.integrator,
        "fs_per_integrator_step": fs,
        "pme_every_fs": PME_EVERY * TIMESTEP_FS if args.integrator == "mts" else TIMESTEP_FS,
        "description": "OpenMM MTSIntegrator: PME reciprocal space every 4 fs, all other forces every 1 fs "
        "(NAMD: timestep 1, fullElectFrequency 4)"
        if args.integrator == "mts"
        else "OpenMM VerletIntegrator, every force every 1 fs",
    }
    return runs, checked


def _run_metrics(setup: _Setup, runs: dict[str, Any], results: dict[str, Any], metric: Any,
                 waived: dict[str, str]) -> None:
    """The timed runs' metrics, and why those that could not be measured were waived."""
    seg, gpu_run, cells = runs["gpu_1"], setup.gpu_run, setup.cells
    metric("ns_per_day", seg["ns_per_day"], "ns/day", "higher", "one GPU: median of the timed segments")
    metric("s_per_step", seg["s_per_fs"] * TIMESTEP_FS, "s/step", "lower", "one GPU: seconds per 1 fs step")
    metric(
        "wall_s", seg["wall_s"], "s", "lower", f"one GPU: wall time of {seg['repeats']} x {seg['fs_per_segment']:g} fs"
    )
    metric(
        "energy_drift_ratio",
        seg["energy_drift_over_kinetic"],
        "ratio",
        "lower",
        "one GPU: |total energy change| over the timed run / kinetic energy",
    )
    mem = results.get("gpu_memory_timed") or {}
    if mem.get("used_bytes") is not None:
        metric(
            "gpu_memory_used_gib",
            mem["used_bytes"] / 2**30,
            "GiB",
            "lower",
            "GPU 0 memory in use with the timed context (NVML: the whole GPU, this process included)",
        )
    pw = seg.get("power")
    if pw and pw.get("energy_j"):
        metric("gpu_power_avg_w", pw["avg_w"], "W", "lower", "one GPU: power sampler, energy / wall time")
        metric(
            "gpu_energy_kj",
            pw["energy_j"] / 1000.0,
            "kJ",
            "lower",
            f"one GPU: energy to solution of {seg['repeats']} x {seg['fs_per_segment']:g} fs (power sampler)",
        )
        metric(
            "ns_per_day_per_kw",
            seg["ns_per_day"] / (pw["avg_w"] / 1000.0),
            "ns/day/kW",
            "higher",
            "one GPU: ns/day over the GPU's average power in kW",
        )
    elif gpu_run:
        for name in ("gpu_power_avg_w", "gpu_energy_kj", "ns_per_day_per_kw"):
            waived[name] = results.get("power_note") or "the power sampler read no energy"
    if "gpu_all" in runs:
        metric(
            "all_gpus_ns_per_day",
            runs["gpu_all"]["ns_per_day"],
            "ns/day",
            "higher",
            "every GPU at once, one replica each: sum of the replicas' ns/day",
        )
    elif gpu_run:
        waived["all_gpus_ns_per_day"] = "one GPU: the all-GPU run is the one-GPU run"
    if "cpu" in runs:
        metric(
            "cpu_ns_per_day",
            runs["cpu"]["ns_per_day"],
            "ns/day",
            "higher",
            f"OpenMM CPU platform, {runs['cpu']['threads']} threads",
        )
        metric(
            "speedup_vs_cpu",
            seg["ns_per_day"] / runs["cpu"]["ns_per_day"],
            "ratio",
            "higher",
            "one GPU's ns/day over the CPU platform's",
        )
    elif gpu_run:
        waived["cpu_ns_per_day"] = waived["speedup_vs_cpu"] = (
            "CPU baseline skipped (--cpu-steps 0; the default for a replicated system: the unit cell's CPU figure "
            "is the baseline)"
            if cells > 1
            else "CPU baseline skipped (--cpu-steps 0)"
        )


def benchmark(args: argparse.Namespace, gpus: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    openmm, _app, unit = _openmm()
    results: dict[str, Any] = {"openmm_version": openmm.__version__}
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    failures: list[str] = []
    _check_platform(openmm, args.platform, results)
    system, positions, cells = _load_system(args, workdir, openmm, results)
    gpu_run = args.platform != "CPU"
    props = {"Precision": args.precision, "DeviceIndex": "0"} if gpu_run else {}
    platform = openmm.Platform.getPlatformByName(args.platform)
    setup = _Setup(openmm, unit, system, positions, cells, platform, props, gpu_run)
    metric = _metric_adder(metrics)

    # 1. Step-0 energies on the timed platform against NAMD 3.0's.
    efail = _validate_energies(args, setup, results, metric)
    if efail:
        failures += efail
        return _finish(results, metrics, waived, failures, checked=1)

    # 2. Velocities at 300 K, then the timed runs.
    runs, checked = _timed_runs(args, setup, gpus, results, failures)
    _run_metrics(setup, runs, results, metric, waived)
    return _finish(results, metrics, waived, failures, checked)


def _metric_adder(metrics: dict[str, Any]):
    def metric(name: str, value: float | None, unit_: str, better: str, description: str) -> None:
        if value is not None and math.isfinite(value):
            metrics[name] = {"value": value, "unit": unit_, "better": better, "description": description}

    return metric


def _finish(results, metrics, waived, failures, checked) -> dict[str, Any]:
    return {
        "results": results,
        "metrics": metrics,
        "waived": waived,
        "verification": {"passed": not failures and checked > 0, "checked": checked, "failures": failures},
        "errors": [],
    }


def gpu_memory(index: int) -> dict[str, Any] | None:
    """NVML's memory figures of one GPU (whole GPU), or None without NVML."""
    try:
        with Nvml() as nv:
            info = nv.lib.nvmlDeviceGetMemoryInfo(nv.lib.nvmlDeviceGetHandleByIndex(index))
    except Exception:
        return None
    return {"used_bytes": int(info.used), "total_bytes": int(info.total)}


# ------------------------------------------------------------------------------------------------
# Command line


def _cells(text: str) -> list[int]:
    try:
        cells = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NX,NY,NZ") from None
    if len(cells) != 3 or min(cells) < 1 or cells[0] * cells[1] * cells[2] > 64:
        raise argparse.ArgumentTypeError(f"{text!r}: expected three counts >= 1, at most 64 cells")
    return cells


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=TOOL, description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--output", required=True, help="the JSON document to write")
    p.add_argument("--inputs", required=True, help="directory with the APOA1 input set, or apoa1.tar.gz")
    p.add_argument("--quick", action="store_true", help="fewer steps: 3 x 500 fs, CPU baseline 8 fs")
    p.add_argument("--replicate", type=_cells, default=[1, 1, 1], help="NX,NY,NZ unit cells (default 1,1,1)")
    p.add_argument(
        "--integrator",
        choices=("mts", "verlet"),
        default="mts",
        help="mts: PME every 4 fs like NAMD's fullElectFrequency 4 (default); verlet: every 1 fs step",
    )
    p.add_argument("--steps", type=int, default=None, help="fs per timed segment (default 2000; replicated 500)")
    p.add_argument("--repeats", type=int, default=3, help="timed segments; the median is reported (default 3)")
    p.add_argument("--warmup-steps", type=int, default=200, help="untimed fs before timing (default 200)")
    p.add_argument("--cpu-steps", type=int, default=None, help="fs of the CPU baseline (default 40; 0 skips)")
    p.add_argument("--platform", default="CUDA", help="GPU platform (default CUDA; CPU runs everything on the CPU)")
    p.add_argument("--precision", default="mixed", choices=("single", "mixed", "double"))
    p.add_argument("--namd-log", default=None, help="a NAMD log whose step-0 energies to match (default: NAMD 3.0's)")
    p.add_argument("--bonded-rtol", type=float, default=1e-4, help="bonded terms vs NAMD (default 1e-4 = 0.01 %%)")
    p.add_argument("--nonbonded-rtol", type=float, default=5e-4, help="ELECT+VDW vs NAMD (default 5e-4)")
    p.add_argument("--drift-tol", type=float, default=0.02, help="|total energy change| / kinetic (default 0.02)")
    p.add_argument("--seed", type=int, default=74269, help="velocity seed (default apoa1.namd's 74269)")
    p.add_argument(
        "--replica-devices",
        default="",
        help="GPUs of the all-GPU run, one replica each (default: every GPU of the node; e.g. 0,0 runs two "
        "replicas on GPU 0, which exercises the all-GPU path on a one-GPU node)",
    )
    p.add_argument("--validate-only", action="store_true", help="compare the step-0 energies, time nothing")
    args = p.parse_args(argv)
    cells = args.replicate[0] * args.replicate[1] * args.replicate[2]
    if args.steps is None:
        args.steps = 500 if args.quick or cells > 1 else 2000
    if args.cpu_steps is None:
        args.cpu_steps = 0 if cells > 1 else 8 if args.quick else 40
    if args.steps < PME_EVERY or args.repeats < 1:
        p.error("--steps must be at least 4 and --repeats at least 1")
    if min(args.cpu_steps, args.warmup_steps) < 0:
        p.error("--cpu-steps and --warmup-steps must not be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parse(argv)
    except SystemExit as e:
        return 3 if e.code else 0
    started = document.utc_iso()
    t0 = time.perf_counter()
    f = node_facts.gather()
    gpus = (f.get("gpus") or []) if args.platform != "CPU" else []

    timing = (
            f"wall clock (time.perf_counter) of {args.repeats} segments of {args.steps} fs after {args.warmup_steps} "
            "fs of warm-up, each ended by a state read that waits for the GPU; median segment reported; ns/day = "
            "fs simulated / median segment seconds; all GPUs: one replica per GPU started together, ns/day summed; "
            f"CPU baseline: one segment of {args.cpu_steps} fs"
        )
    doc: dict[str, Any] = {
        **document.header(TOOL, [TOOL, *(sys.argv[1:] if argv is None else argv)], started, timing),
        "devices": [
            {
                k: g.get(k)
                for k in ("index", "name", "pci_bus_id", "uuid", "memory_bytes", "compute_capability")
                if k in g
            }
            for g in gpus
        ],
        "cuda": {"driver_release": f.get("driver_version"), "cuda_driver_version": f.get("cuda_driver_version")},
        "parameters": {k: v for k, v in vars(args).items() if k != "output"},
    }
    code = 0
    with tempfile.TemporaryDirectory(prefix="gpuaccept-apoa1-") as tmp:
        try:
            if args.validate_only:
                args.steps, args.cpu_steps = PME_EVERY, 0
            doc.update(benchmark_or_validate(args, gpus, Path(tmp)))
            if not doc["verification"]["passed"]:
                code = 2
        except (BenchError, xplor_charmm.XplorError) as err:
            doc.update(_failed(str(err)))
            code = 1
        except Exception as err:
            doc.update(_failed(f"{type(err).__name__}: {err}"))
            code = 1
    doc["elapsed_s"] = time.perf_counter() - t0
    write_text_atomic(args.output, document.dumps(doc, indent=1))
    for e in doc["errors"]:
        print(f"{TOOL}: {socket.gethostname()}: {e}", file=sys.stderr)
    for e in doc["verification"]["failures"]:
        print(f"{TOOL}: {socket.gethostname()}: verification: {e}", file=sys.stderr)
    ev = (doc.get("results") or {}).get("energy_validation") or {}
    for term, row in (ev.get("terms") or {}).items():
        print(
            f"{term:10s} openmm {row['openmm_kcal_mol']:16.4f} namd {row['namd_kcal_mol']:16.4f} "
            f"rel {row['rel_diff']:.2e} {'ok' if row['ok'] else 'DIFFERS'}"
        )
    for name, m in doc["metrics"].items():
        print(f"{name:28s} {m['value']:14.6g} {m['unit']}")
    return code


def benchmark_or_validate(args: argparse.Namespace, gpus: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    if not args.validate_only:
        return benchmark(args, gpus, workdir)
    openmm, _app, unit = _openmm()
    inputs, info = find_inputs(args.inputs, workdir)
    system, positions, describe = build_apoa1(inputs)
    cells = args.replicate[0] * args.replicate[1] * args.replicate[2]
    if cells > 1:
        system, positions = replicate(system, positions, tuple(args.replicate))
    else:
        positions = [openmm.Vec3(*p) for p in positions]
    props = {"Precision": args.precision} if args.platform != "CPU" else {}
    ctx = openmm.Context(
        system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName(args.platform), props
    )
    ctx.setPositions(positions)
    namd = reference_energies(args.namd_log)
    table, failures = compare_energies(group_energies(ctx, unit), namd, cells, args.bonded_rtol, args.nonbonded_rtol)
    results = {
        "openmm_version": openmm.__version__,
        "inputs": info,
        "system": describe,
        "energy_validation": {"platform": args.platform, "reference": namd["source"], "cells": cells, "terms": table},
    }
    return _finish(results, {}, {}, failures, checked=1)


def _failed(message: str) -> dict[str, Any]:
    return {
        "results": {},
        "metrics": {},
        "waived": {},
        "verification": {"passed": False, "checked": 0, "failures": []},
        "errors": [message],
    }


if __name__ == "__main__":
    sys.exit(main())
