"""gpuaccept-md-apoa1 on OpenMM's CPU platform: NAMD's APOA1 system (the third-party input apoa1,
tests/inputs.toml) built from its X-PLOR parameters gives NAMD 3.0's step-0 energies (the check's validation), a
term that differs fails the run naming the term, and the pieces that the GPU run uses (NAMD's Ewald coefficient,
NAMD's dihedral rule, the replication, the timed segments and the conservation check) on small systems."""

import argparse
import json
import math
import subprocess
import sys

import pytest
from conftest import needs_input

from gpuaccept.probe import md_apoa1

openmm = pytest.importorskip("openmm")
unit = pytest.importorskip("openmm.unit")


def tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuaccept.probe.md_apoa1", *args], capture_output=True, text=True,
                          check=False, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})  # fmt: skip


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    out = tmp_path_factory.mktemp("md_apoa1") / "md_apoa1.json"
    proc = tool("--inputs", str(needs_input("apoa1")), "--platform", "CPU", "--validate-only", "--output", str(out))
    return proc, json.loads(out.read_text())


def test_step_0_energies_match_namd_3_0(validated):
    proc, doc = validated
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert doc["schema"] == "gpuaccept.bench/1" and doc["tool"] == "gpuaccept-md-apoa1"
    assert doc["verification"] == {"passed": True, "checked": 1, "failures": []}
    ev = doc["results"]["energy_validation"]
    assert ev["reference"].startswith("NAMD 3.0 multicore (CPU) apoa1-1.log")
    terms = ev["terms"]
    assert set(terms) == {"bond", "angle_ub", "dihedral", "improper", "nonbonded"}
    for term in ("bond", "angle_ub", "dihedral", "improper"):
        assert terms[term]["rel_diff"] < 1e-5, term  # within 0.001 %: 10x inside the check's 0.01 %
    assert terms["nonbonded"]["rel_diff"] < 1e-4  # within 0.01 %: 5x inside the check's 0.05 %
    assert terms["nonbonded"]["namd_kcal_mol"] == pytest.approx(-362073.7645 + 24229.5349)
    system = doc["results"]["system"]
    assert system["atoms"] == 92224 and system["pme_grid"] == [108, 108, 80]
    # 75,708 psf entries, 1,568 dihedrals listed more than once: NAMD's one term per entry
    assert system["dihedrals"]["psf_entries"] == 75708 and system["dihedrals"]["listed_more_than_once"] == 1568
    assert system["dihedrals"]["terms"] == 75708 and system["dihedrals"]["unique"] == 74130
    assert doc["results"]["inputs"]["tarball_sha256"] == md_apoa1.APOA1_TARBALL_SHA256
    assert "dihedral   openmm        4549.07" in proc.stdout


def test_a_term_that_differs_fails_and_is_named():
    ours = {"bond": 12352.4462 * 4.184, "angle_ub": 14603.1674 * 4.184, "dihedral": 4611.1016 * 4.184,
            "improper": 48.1064 * 4.184, "nonbonded": -337834.8044 * 4.184}  # fmt: skip
    # 4611.10: every term of a dihedral listed twice applied twice (OpenMM's reading of the psf, not NAMD's)
    table, failures = md_apoa1.compare_energies(ours, md_apoa1.NAMD3_STEP0, 1, 1e-4, 5e-4)
    assert [t for t, row in table.items() if not row["ok"]] == ["dihedral"]
    assert failures == ["step-0 dihedral energy 4611.1016 kcal/mol differs from NAMD's 4549.0710 by 1.36e-02 "
                        "(tolerance 0.0001)"]  # fmt: skip
    # 12 cells: NAMD's values times 12
    twelve = {k: v * 12 for k, v in ours.items()} | {"dihedral": 4549.0711 * 4.184 * 12}
    assert md_apoa1.compare_energies(twelve, md_apoa1.NAMD3_STEP0, 12, 1e-4, 5e-4)[1] == []


def test_reference_energies_from_a_namd_log():
    ref = md_apoa1.reference_energies(str(needs_input("namd3-apoa1-logs", "apoa1-GPU-Res-1.log")))
    assert ref["bond"] == 12352.4479 and ref["dihedral"] == 4549.0720 and ref["elect"] == -362073.8127
    assert "apoa1-GPU-Res-1.log, ENERGY line of step 0 (3.0)" in ref["source"]


def test_ewald_coefficient_is_namds():
    # NAMD 3.0 prints "Info: PME EWALD COEFFICIENT       0.257952" for cutoff 12, PME tolerance 1e-6
    assert md_apoa1.ewald_coefficient(12.0, 1e-6) == pytest.approx(0.257952, abs=5e-7)
    beta = md_apoa1.ewald_coefficient(10.0, 1e-5)
    assert math.erfc(beta * 10.0) / 10.0 == pytest.approx(1e-5)


def small_system():
    """Four atoms in a 3 nm box with a bond, an angle, a torsion, an improper and PME."""
    box = 3.0
    system = openmm.System()
    for _ in range(4):
        system.addParticle(12.0)
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box, 0, 0), openmm.Vec3(0, box, 0), openmm.Vec3(0, 0, box))
    bond = openmm.HarmonicBondForce()
    bond.addBond(0, 1, 0.15, 1000.0)
    angle = openmm.HarmonicAngleForce()
    angle.addAngle(0, 1, 2, 1.9, 100.0)
    torsion = openmm.PeriodicTorsionForce()
    torsion.addTorsion(0, 1, 2, 3, 3, 0.0, 2.0)
    improper = openmm.CustomTorsionForce("0.5*k*(theta-theta0)^2")
    improper.addPerTorsionParameter("k")
    improper.addPerTorsionParameter("theta0")
    improper.addTorsion(0, 1, 2, 3, [50.0, 0.3])
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.PME)
    nb.setCutoffDistance(1.2)
    nb.setUseSwitchingFunction(True)
    nb.setSwitchingDistance(1.0)
    nb.setPMEParameters(2.58, 30, 30, 30)
    for q in (0.5, -0.5, 0.3, -0.3):
        nb.addParticle(q, 0.3, 0.4)
    nb.addException(0, 1, 0.0, 0.1, 0.0)
    for g, f in enumerate((bond, angle, torsion, improper, nb)):
        f.setForceGroup(g)
        system.addForce(f)
    positions = [(1.0, 1.0, 1.0), (1.15, 1.0, 1.0), (1.2, 1.14, 1.0), (1.35, 1.16, 1.1)]
    return system, positions


def energies(system, positions):
    ctx = openmm.Context(system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("Reference"))
    ctx.setPositions([openmm.Vec3(*p) for p in positions])
    return [ctx.getState(getEnergy=True, groups={g}).getPotentialEnergy()._value for g in range(5)]


def test_replicated_system_has_n_times_each_energy():
    system, positions = small_system()
    one = energies(system, positions)
    big, big_positions = md_apoa1.replicate(system, positions, (2, 1, 3))
    assert big.getNumParticles() == 24
    assert big.getForce(4).getPMEParameters()[1:] == [60, 30, 90]
    assert big.getDefaultPeriodicBoxVectors()[2][2]._value == pytest.approx(9.0)
    six = energies(big, [tuple(p) for p in big_positions])
    for g in range(4):
        assert six[g] == pytest.approx(6 * one[g], rel=1e-9), g
    assert six[4] == pytest.approx(6 * one[4], rel=1e-4)  # PME: the same periodic system, grid scaled with it


def test_timed_segments_and_the_conservation_check():
    system, positions = small_system()
    integrator, fs = md_apoa1.make_integrator("verlet")
    ctx = openmm.Context(system, integrator, openmm.Platform.getPlatformByName("Reference"))
    ctx.setPositions([openmm.Vec3(*p) for p in positions])
    ctx.setVelocitiesToTemperature(150.0, 1)
    seg = md_apoa1.timed_run(ctx, integrator, fs, 20, 3, unit)
    assert seg["integrator_steps"] == 20 and seg["fs_per_segment"] == 20 and len(seg["segment_s"]) == 3
    assert seg["ns_per_day"] == pytest.approx(20e-6 / seg["median_s"] * 86400)
    assert len(seg["energies_kj_mol"]) == 4
    failures = md_apoa1.conservation(seg, 4, "tiny", drift_tol=1e-12)
    assert failures and failures[0].startswith("tiny: total energy moved by")
    mts, outer = md_apoa1.make_integrator("mts")
    assert outer == 4.0 and isinstance(mts, openmm.MTSIntegrator)


def test_all_gpu_run_starts_one_replica_per_device_and_sums_them():
    """The all-GPU path (one process per GPU, started together) with two replicas on the Reference platform."""
    system, positions = small_system()
    ctx = openmm.Context(system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("Reference"))
    ctx.setPositions([openmm.Vec3(*p) for p in positions])
    ctx.setVelocitiesToTemperature(150.0, 1)
    state = ctx.getState(getPositions=True, getVelocities=True)
    args = argparse.Namespace(integrator="verlet", platform="Reference", precision="mixed", warmup_steps=4, steps=8,
                              repeats=2, replicate=[1, 1, 1])  # fmt: skip
    out = md_apoa1.all_gpus(args, system, state, ["0", "1"])
    assert set(out["replicas"]) == {"0", "1"}
    assert out["ns_per_day"] == pytest.approx(sum(out["per_gpu_ns_per_day"].values()))
    assert all(r["integrator_steps"] == 8 and r["repeats"] == 2 for r in out["replicas"].values())


def test_bad_command_lines_and_inputs(tmp_path):
    assert tool("--inputs", "x", "--output", str(tmp_path / "a.json"), "--replicate", "3,2").returncode == 3
    proc = tool("--inputs", str(tmp_path / "nowhere"), "--platform", "CPU", "--output", str(tmp_path / "b.json"))
    assert proc.returncode == 1 and "APOA1 inputs not found at" in proc.stderr
    fake = tmp_path / "apoa1.tar.gz"
    fake.write_bytes(b"not the input set")
    proc = tool("--inputs", str(fake), "--platform", "CPU", "--output", str(tmp_path / "c.json"))
    doc = json.loads((tmp_path / "c.json").read_text())
    assert proc.returncode == 1 and "is not that of NAMD's APOA1 input set" in doc["errors"][0]
    assert doc["verification"]["passed"] is False
