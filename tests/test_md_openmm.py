"""gpuaccept-openmm on OpenMM's CPU platform (a small water box, few steps): the document, its verification,
and the failures it must report. The GPU runs are in docs/evidence/2026-11-22-h100-openmm."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("openmm", reason="OpenMM is installed by requirements/test.txt")

from gpuaccept.probe import md_openmm

SMALL = ["--platform", "CPU", "--box-nm", "2.5", "--equil-steps", "100", "--warmup-steps", "10", "--cpu-steps", "40"]


def bench(tmp_path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "md_openmm.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gpuaccept.probe.md_openmm", "--output", str(out), *SMALL, *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    return proc, json.loads(out.read_text())


def test_cpu_platform_run_is_verified_and_reported(tmp_path):
    proc, doc = bench(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert doc["schema"] == "gpuaccept.bench/1" and doc["tool"] == "gpuaccept-openmm"
    assert doc["verification"] == {"passed": True, "checked": 1, "failures": []}
    system = doc["results"]["system"]
    assert system["atoms"] == 3 * system["waters"] > 1000
    run = doc["results"]["runs"]["cpu"]
    assert run["steps"] == 40 and len(run["energies_kj_mol"]) == 2
    # Liquid TIP3P after the Langevin equilibration: about 300 K and -41 kJ/mol per molecule.
    assert all(250 < t < 350 for t in run["temperatures_k"])
    assert -45 < run["energies_kj_mol"][-1]["potential"] / system["waters"] < -36
    m = doc["metrics"]["cpu_ns_per_day"]
    assert m["unit"] == "ns/day" and m["value"] == pytest.approx(md_openmm.ns_per_day(40, run["median_s"]))
    assert "timing" in doc and doc["devices"] == []


def test_energy_that_is_not_conserved_fails_verification(tmp_path):
    proc, doc = bench(tmp_path, "--drift-tol", "1e-9")
    assert proc.returncode == 2
    assert doc["verification"]["passed"] is False
    assert "total energy moved by" in doc["verification"]["failures"][0]
    assert "verification: CPU" in proc.stderr


def test_a_blown_up_simulation_fails(tmp_path):
    """10 fs steps: the water flies apart. OpenMM either stops (NaN coordinates: an error, exit 1) or the
    energy check catches it (exit 2), depending on the threads' timing; never a number that passes."""
    proc, doc = bench(tmp_path, "--timestep-fs", "10")
    assert proc.returncode in (1, 2), proc.stderr
    if proc.returncode == 1:
        assert doc["metrics"] == {} and "NaN" in doc["errors"][0]
    else:
        assert not doc["verification"]["passed"]
        assert "total energy moved by" in doc["verification"]["failures"][0]


def test_missing_gpu_platform_is_named(tmp_path):
    out = tmp_path / "md_openmm.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gpuaccept.probe.md_openmm", "--output", str(out), "--platform", "NoSuch"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert (
        "OpenMM platform 'NoSuch' is not available (platforms: Reference, CPU"
        in json.loads(out.read_text())["errors"][0]
    )


@pytest.mark.parametrize("args", [["--steps", "0"], ["--box-nm", "1"], ["--timestep-fs", "20"], ["--cpu-steps", "-1"]])
def test_bad_command_line_exits_2_naming_the_option(tmp_path, args):
    proc = subprocess.run(
        [sys.executable, "-m", "gpuaccept.probe.md_openmm", "--output", str(tmp_path / "x.json"), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and args[0] in proc.stderr
    assert not (tmp_path / "x.json").exists()
