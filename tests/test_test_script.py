"""scripts/test.sh (`make test`, CI): every stage runs even when one fails, and a per-stage summary closes the
output. Run on a copy of the script with stand-ins for the stages (each exits as tmp_path/rc/<stage> says)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

STAGES = ("deps", "venv", "ruff", "pytest", "ansible")


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    log = tmp_path / "ran"

    def stand_in(path: Path, stage: str, extra: str = "") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        rc = f"$(cat {tmp_path}/rc/{stage} 2>/dev/null || echo 0)"
        path.write_text(f"#!/bin/sh\necho {stage} >> {log}\n{extra}\nexit {rc}\n")
        path.chmod(0o755)

    stand_in(tmp_path / "scripts" / "deps.sh", "deps")
    stand_in(tmp_path / "scripts" / "venv.sh", "venv")
    stand_in(tmp_path / ".venv" / "bin" / "ruff", "ruff")
    junit = ('<testsuites><testsuite tests="10" failures="1" errors="0" skipped="2"/></testsuites>')
    stand_in(tmp_path / ".venv" / "bin" / "pytest", "pytest", f"echo '{junit}' > build/pytest.xml")
    stand_in(tmp_path / "tests" / "ansible" / "run_checks.sh", "ansible")
    for name in ("inputs.py", "inputs.toml"):
        shutil.copy(ROOT / "tests" / name, tmp_path / "tests" / name)
    (tmp_path / "rc").mkdir()
    return tmp_path


def run(tree: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VENV", "WHEELHOUSE", "GPUACCEPT_MKL")}
    return subprocess.run([str(tree / "scripts" / "test.sh")], capture_output=True, text=True, env=env, check=False)


def test_every_stage_runs_after_a_failure_and_the_summary_names_it(tree):
    (tree / "rc" / "ruff").write_text("1")
    (tree / "rc" / "pytest").write_text("1")
    res = run(tree)
    assert res.returncode == 1, res.stdout + res.stderr
    assert (tree / "ran").read_text().split() == list(STAGES)
    summary = res.stdout.split("== make test: summary")[1]
    assert "ruff               FAILED (exit 1" in summary
    assert "pytest             FAILED (exit 1" in summary and "7 passed, 1 failed, 2 skipped" in summary
    assert "ansible            ok" in summary and "system packages    ok" in summary
    assert "make test: FAILED in " in summary


def test_all_stages_passing_exits_zero(tree):
    res = run(tree)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(" ok (") == len(STAGES) and "make test: passed in " in res.stdout


def test_without_a_tool_environment_the_stages_that_need_it_are_listed_not_run(tree):
    (tree / "rc" / "venv").write_text("2")
    res = run(tree)
    assert res.returncode == 1
    assert (tree / "ran").read_text().split() == ["deps", "venv"]
    for stage in ("ruff", "pytest", "ansible"):
        assert f"{stage:<18} not run (no tool environment" in res.stdout


def test_the_summary_says_what_each_absent_third_party_input_skipped(tree, tmp_path):
    """pytest's JUnit file, made here as the stand-in's output: two tests skipped for want of the NAMD logs, one
    for another reason."""
    reason = "third-party input namd3-apoa1-logs absent: x not found"
    cases = "".join(f'<testcase classname="tests.test_namd" name="t{n}"><skipped message="{reason}"/></testcase>'
                    for n in range(2))  # fmt: skip
    cases += '<testcase classname="tests.test_slurm" name="t"><skipped message="not root"/></testcase>'
    junit = f'<testsuites><testsuite tests="5" failures="0" errors="0" skipped="3">{cases}</testsuite></testsuites>'
    pytest_bin = tree / ".venv" / "bin" / "pytest"
    pytest_bin.write_text(f"#!/bin/sh\necho pytest >> {tree}/ran\necho '{junit}' > build/pytest.xml\n")
    inputs = tmp_path / "inputs"
    res = subprocess.run([str(tree / "scripts" / "test.sh")], capture_output=True, text=True, check=False,
                         env={**os.environ, "GPUACCEPT_INPUTS": str(inputs)})  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    summary = res.stdout.split("== make test: summary")[1].splitlines()
    pytest_line = next(i for i, line in enumerate(summary) if line.startswith("  pytest "))
    assert summary[pytest_line].endswith(": 2 passed, 0 failed, 3 skipped")
    line = summary[pytest_line + 1]
    assert line.startswith("    input namd3-apoa1-logs absent: 2 tests skipped (test_namd.py 2); put it at ")
    assert str(inputs / "data" / "namd3-apoa1-logs") in line and "github.com/kguerns/namd_hw" in line
    assert summary[pytest_line + 2].startswith("  ansible ")
