"""The power check's rules (gpuaccept.powercheck) on the sampler documents recorded on the H100: idle, an FP64
GEMM at the 700 W cap, GFLOP/s per watt; a throttle reason other than the power cap is derived from the recorded
load by changing one field."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RECORDED

from gpuaccept.judge import rules
from gpuaccept.probe import powercheck

POWER = RECORDED / "2026-11-22-h100-power"
GPUACCEPT = [sys.executable, "-m", "gpuaccept"]
NO_HOST = {"how": "not available: ipmitool not installed"}


def load(name):
    return json.loads((POWER / name).read_text())


@pytest.fixture(scope="module")
def recorded():
    return load("idle-nvml.json"), load("gemm-nvml.json"), {0: load("gemm-nvml-bench.json")}


def test_recorded_idle_and_gemm_give_the_power_metrics(recorded):
    idle, gemm_load, gemm = recorded
    metrics, waived, failures, rows = powercheck.measure(idle, gemm_load, gemm, "fp64", NO_HOST)
    assert failures == []
    assert waived == {"host_power_load_w": "not available: ipmitool not installed"}
    assert 60 < metrics["idle_power_max_w"]["value"] < 80
    assert 680 < metrics["load_power_min_w"]["value"] <= 700 == rows[0]["power_limit_w"]
    assert metrics["load_power_max_w"]["value"] == metrics["load_power_min_w"]["value"]  # one GPU
    assert metrics["gflops_per_watt"]["value"] == pytest.approx(54.2950389e3 / 696.858)
    assert metrics["gemm_energy_j"]["value"] == pytest.approx(696.858 * 0.0202506886)
    assert metrics["load_energy_j"]["value"] == pytest.approx(6704.015)
    assert rows[0]["throttled_s"]["sw_power_cap"] > 5  # the power cap is the goal of the load, not a fault


@pytest.mark.parametrize("reason", ["hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"])
def test_throttling_other_than_the_power_cap_fails(recorded, reason):
    idle, gemm_load, gemm = recorded
    hot = copy.deepcopy(gemm_load)
    hot["results"]["per_gpu"][0]["throttled_s"][reason] = 1.2
    _metrics, _waived, failures, rows = powercheck.measure(idle, hot, gemm, "fp64", NO_HOST)
    assert failures == []  # the probe records; the judge decides
    doc = {"devices": hot["devices"], "results": {"per_gpu": rows}}
    (f,) = rules.throttle_problems(doc, Path("power_check.json"))
    assert f.startswith(f"GPU 0 (bus 00000000:00:06.0, serial 1752824029119): clocks held back by {reason} for 1.2 s")
    assert "->" in f  # with the fix to try


def test_a_gemm_without_a_document_waives_the_efficiency(recorded):
    idle, gemm_load, _ = recorded
    metrics, waived, _f, _r = powercheck.measure(idle, gemm_load, {}, "fp64", NO_HOST)
    assert "gflops_per_watt" not in metrics and waived["gflops_per_watt"] == "the GEMM left no document"
    assert "load_power_min_w" in metrics


def test_dcmi_reading():
    text = (
        "\n    Instantaneous power reading:                   412 Watts\n"
        "    Minimum during sampling period:                 98 Watts\n"
    )
    assert powercheck.parse_dcmi(text) == 412.0
    assert powercheck.parse_dcmi("Error: no response from the BMC") is None


def test_the_load_runs_one_gemm_per_gpu_at_once():
    argv = powercheck.gemm_command("/opt/b/gpuaccept-gemm", "fp64", 5, ["/r/g0.json", "/r/g1.json"])
    assert argv[:2] == ["sh", "-c"]
    script = argv[2]
    assert "export CUDA_DEVICE_ORDER=PCI_BUS_ID" in script
    assert "--gpus 0 --output /r/g0.json &" in script and "--gpus 1 --output /r/g1.json &" in script
    # The script exits with a failing GEMM's status.
    failing = script.replace("/opt/b/gpuaccept-gemm --precisions", "sh -c 'exit 2' --precisions")
    assert subprocess.run(["sh", "-c", failing], check=False).returncode == 2


def test_powercheck_without_gpus_exits_1_and_measures_nothing(tmp_path):
    out = tmp_path / "power_check.json"
    res = subprocess.run(
        [*GPUACCEPT, "powercheck", "--gemm", "/bin/true", "--output", str(out), "--idle-s", "0.5", "--load-s", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    assert doc["tool"] == "gpuaccept-powercheck" and doc["verification"]["passed"] is False
    assert any("cannot read the GPUs" in e for e in doc["errors"])
    assert doc["metrics"] == {}
    assert {"idle_power_max_w", "load_power_min_w", "gflops_per_watt"} <= set(doc["waived"])


def test_powercheck_bad_command_lines(tmp_path):
    def run(*args):
        return subprocess.run([*GPUACCEPT, "powercheck", *args], capture_output=True, text=True, check=False)

    res = run("--gemm", str(tmp_path / "missing"), "--output", str(tmp_path / "p.json"))
    assert res.returncode == 4 and "not an executable file" in res.stderr
    res = run("--gemm", "/bin/true", "--output", str(tmp_path / "p.json"), "--load-s", "0.1")
    assert res.returncode == 4 and "--load-s 0.1" in res.stderr
