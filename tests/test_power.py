"""The power sampler (gpuaccept.power, `gpuaccept sample`): its arithmetic, and the command on this GPU-less
machine (exit status passed through, metrics waived with the reason, never invented)."""

import json
import subprocess
import sys

import pytest
from conftest import RECORDED

from gpuaccept.probe import power
from gpuaccept.probe.power import Reading

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]


def test_reason_names_decode_nvml_bits():
    assert power.reason_names(0) == []
    assert power.reason_names(None) == []
    assert power.reason_names(0x1) == ["gpu_idle"]
    assert power.reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert power.reason_names(0x1000) == ["unknown_0x1000"]


def test_summary_counts_throttled_time_by_reason_and_uses_the_energy_counter():
    # Two GPUs, 5 rounds 0.1 s apart over a 0.5 s run; GPU 1 power-capped in rounds 2-4, thermally in round 4.
    readings = []
    for tick in range(5):
        t = 0.1 * tick
        readings.append(Reading(0, tick, t, 100.0, 1980, 2619, 40, 0))
        readings.append(Reading(1, tick, t, 700.0 if tick >= 2 else 300.0, 1600, 2619, 60, 0x4 if tick >= 2 else 0))
    readings[-1].reasons = 0x4 | 0x20
    per_gpu, metrics, waived, failures = power.summarize(readings, [0, 1], 0.5, [1000.0, 5000.0], [51000.0, 255000.0])
    assert failures == [] and waived == {}
    g0, g1 = per_gpu
    assert g0["energy_j"] == pytest.approx(50.0) and g0["energy_source"] == "nvml_total_energy_counter"
    assert g1["energy_j"] == pytest.approx(250.0)
    assert g1["throttled_s"] == {"sw_power_cap": pytest.approx(0.3), "sw_thermal_slowdown": pytest.approx(0.1)}
    assert g0["throttled_s"] == {}
    assert g1["peak_w"] == 700.0 and g1["sm_mhz_min"] == 1600
    assert metrics["energy_j"]["value"] == pytest.approx(300.0) and metrics["energy_j"]["unit"] == "J"
    assert metrics["power_avg_w"]["value"] == pytest.approx(600.0)
    assert metrics["power_peak_w"]["value"] == pytest.approx(800.0)  # largest round sum, not a sum of maxima


def test_without_an_energy_counter_energy_is_the_integral_of_the_samples():
    readings = [Reading(0, k, 0.1 * k, 200.0 + 100.0 * k, None, None, None, None) for k in range(3)]
    per_gpu, metrics, _waived, failures = power.summarize(readings, [0], 0.2, [None], [None])
    assert failures == []
    assert per_gpu[0]["energy_source"] == "integrated_samples"
    assert per_gpu[0]["energy_j"] == pytest.approx(60.0)  # 0.1 * (250 + 350)
    assert metrics["power_avg_w"]["value"] == pytest.approx(300.0)


def test_a_gpu_without_samples_or_power_fails_verification_and_waives_energy():
    readings = [Reading(0, 0, 0.0, None, 345, 2619, 39, 1)]
    per_gpu, metrics, waived, failures = power.summarize(readings, [0, 1], 1.0, [None, None], [None, None])
    assert "GPU 0: power could not be read (1 samples, all N/A)" in failures
    assert "GPU 1: no sample taken" in failures
    assert metrics == {}
    assert set(waived) == {"energy_j", "power_avg_w", "power_peak_w"}
    assert per_gpu[1]["samples"] == 0


def test_an_energy_counter_that_goes_backwards_is_a_failure():
    readings = [Reading(0, k, 0.1 * k, 100.0, None, None, None, None) for k in range(3)]
    _per_gpu, _metrics, _waived, failures = power.summarize(readings, [0], 0.2, [5000.0], [1000.0])
    assert failures == ["GPU 0: NVML's total-energy counter went backwards (5000.0 mJ -> 1000.0 mJ)"]


def test_series_round_trip():
    readings = [Reading(0, k, 0.25 * k, 100.0 + k, 1000 + k, 2619, 40, 4) for k in range(4)]
    back = power.readings_from_series([power.series(readings, 0)])
    assert [(r.t_s, r.power_w, r.sm_mhz, r.reasons) for r in back] == [
        (r.t_s, r.power_w, r.sm_mhz, r.reasons) for r in readings
    ]


def sample(tmp_path, *command, extra=()):
    out = tmp_path / "power.json"
    proc = subprocess.run(
        [*GPUACCEPT, "sample", "--interval", "0.05", "--output", str(out), *extra, "--", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc, out


def test_sample_without_gpus_passes_the_exit_status_through_and_waives_power(tmp_path):
    proc, out = sample(tmp_path, "sh", "-c", "echo hello; exit 3")
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "hello\n"
    doc = json.loads(out.read_text())
    assert doc["schema"] == "gpuaccept.bench/1" and doc["tool"] == "gpuaccept-sample"
    assert doc["results"]["exit_status"] == 3
    assert doc["parameters"]["command"] == ["sh", "-c", "echo hello; exit 3"]
    assert doc["metrics"] == {}
    assert set(doc["waived"]) == {"energy_j", "power_avg_w", "power_peak_w"}
    assert doc["verification"]["passed"] is False  # nothing was measured: never a pass
    assert "cannot read the GPUs" in doc["errors"][0]
    assert "cannot read the GPUs" in proc.stderr


def test_sample_of_a_command_that_does_not_exist_exits_127(tmp_path):
    proc, out = sample(tmp_path, "/nonexistent/benchmark")
    assert proc.returncode == 127
    doc = json.loads(out.read_text())
    assert any("cannot start '/nonexistent/benchmark'" in e for e in doc["errors"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--interval", "0", "--output", "x.json", "--", "true"], "--interval 0.0: must be between"),
        (["--output", "x.json", "--"], "no command to run"),
    ],
)
def test_sample_bad_command_lines_exit_4_naming_the_problem(tmp_path, args, message):
    proc = subprocess.run([*GPUACCEPT, "sample", *args], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 4
    assert message in proc.stderr
    assert not (tmp_path / "x.json").exists()


# Recorded on the H100 (docs/evidence/2026-11-22-h100-power/README.md).
POWER = RECORDED / "2026-11-22-h100-power"


def test_recorded_nvml_run_re_summarizes_to_its_own_figures():
    doc = json.loads((POWER / "gemm-nvml.json").read_text())
    g = doc["results"]["per_gpu"][0]
    readings = power.readings_from_series(doc["results"]["samples"])
    per_gpu, metrics, waived, failures = power.summarize(
        readings, [0], doc["results"]["duration_s"], [0.0], [g["energy_counter_j"] * 1000.0]
    )
    assert failures == [] and waived == {}
    assert per_gpu[0]["throttled_s"] == g["throttled_s"]
    assert per_gpu[0]["throttled_s"]["sw_power_cap"] > 5.0  # FP64 GEMM sits at the 700 W cap
    for name in ("energy_j", "power_avg_w", "power_peak_w"):
        assert metrics[name]["value"] == pytest.approx(doc["metrics"][name]["value"])
    # The energy counter and the integral of the 0.1 s samples agree within 5 %.
    assert g["energy_integrated_j"] == pytest.approx(g["energy_counter_j"], rel=0.05)
    assert doc["verification"]["passed"] is True and doc["results"]["exit_status"] == 0


def test_recorded_idle_run_is_idle():
    doc = json.loads((POWER / "idle-nvml.json").read_text())
    g = doc["results"]["per_gpu"][0]
    assert g["avg_w"] < 100.0 and set(g["throttled_s"]) == {"gpu_idle"}
    assert doc["devices"][0]["serial"] and doc["devices"][0]["pci_bus_id"]


def test_recorded_nvidia_smi_stream_parses():
    text = (POWER / "smi-stream.csv").read_text()
    readings = power.parse_smi_stream(text)
    assert len(readings) == len([x for x in text.splitlines() if x.strip()])
    assert {r.gpu for r in readings} == {0}
    assert [r.tick for r in readings] == list(range(len(readings)))
    loaded = [r for r in readings if r.power_w and r.power_w > 600]
    assert loaded and all(power.reason_names(r.reasons) == ["sw_power_cap"] for r in loaded if r.reasons)
    assert all(r.sm_mhz and r.mem_mhz == 2619 for r in readings)


def test_an_smi_line_with_the_wrong_field_count_is_rejected():
    with pytest.raises(ValueError, match="5 fields, expected 6"):
        power.parse_smi_line("0, 70.35, 345, 2619, 39", 0, 0.0)
