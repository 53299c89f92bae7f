"""NAMD: the log parser on reconstructed NAMD 2.14 and 3.0 logs (tests/fixtures/namd/README.md), the judging of
runs, the runner with NAMD absent, and the configuration it writes."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from gpuaccept.probe import namd

FIXTURES = ROOT / "tests" / "fixtures" / "namd"


def log(name: str) -> namd.NamdLog:
    path = FIXTURES / name
    return namd.parse_log(path.read_text(), str(path))


def test_namd_2_14_days_per_ns_benchmark_timing_energy_wallclock():
    parsed = log("namd2.14_apoa1_cuda.log")
    assert parsed.version == "2.14" and parsed.build == "Linux-x86_64-multicore-CUDA"
    assert parsed.timestep_fs == 1.0
    assert len(parsed.benchmark) == 2
    # 2.x prints days/ns: 0.0232164 days/ns is 43.07 ns/day.
    assert parsed.ns_per_day() == pytest.approx(1 / 0.0232164)
    assert parsed.s_per_step() == pytest.approx(0.00200589)
    assert parsed.timing[-1] == {
        "step": 500,
        "cpu_s": 1.12529,
        "cpu_s_per_step": 0.00197155,
        "wall_s": 1.13206,
        "wall_s_per_step": 0.00197171,
    }
    assert parsed.last_energy()["TOTAL"] == pytest.approx(-222494.9229)
    assert parsed.last_energy()["TS"] == 500
    assert parsed.wallclock_s == pytest.approx(2.406431) and parsed.memory_mb == pytest.approx(1024.828125)
    assert parsed.completed and not parsed.fatal_errors


def test_namd_3_0_ns_per_day_and_performance_line_win():
    parsed = log("namd3.0_stmv_gpuresident.log")
    assert parsed.version == "3.0"
    assert parsed.benchmark[-1]["ns_per_day"] == pytest.approx(8.21911)  # 3.x Benchmark line: ns/day as printed
    # The PERFORMANCE average (3.x) is preferred over the Benchmark line.
    assert parsed.performance == [
        {"step": 500, "ns_per_day": 8.23218, "s_per_step": 0.0104954, "stddev_s_per_step": 0.000152941}
    ]
    assert parsed.ns_per_day() == pytest.approx(8.23218)
    # The 3.x TIMING line carries an extra 'ns/days' field; it still parses.
    assert parsed.timing[-1]["wall_s_per_step"] == pytest.approx(0.0104489)
    assert parsed.completed


def test_timing_only_falls_back_to_the_timestep():
    text = (
        "Info: TIMESTEP               2\nTIMING: 100  CPU: 1.0, 0.01/step  Wall: 1.2, 0.012/step, 0 hours remaining\n"
    )
    parsed = namd.parse_log(text)
    assert parsed.ns_per_day() == pytest.approx(86400 / 0.012 * 2e-6)
    assert not parsed.completed  # no WallClock: the run did not finish


def test_fatal_error_is_reported_and_the_run_is_incomplete():
    parsed = log("namd3.0_fatal.log")
    assert parsed.fatal_errors == ["FATAL ERROR: Unable to open text file apoa1.psf: No such file or directory"]
    assert not parsed.completed
    assert parsed.ns_per_day() is None


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("Info: Benchmark time: 16 CPUs fast s/step 0.1 days/ns 3 MB memory\n", "Benchmark line"),
        ("TIMING: 500 CPU: x\n", "TIMING line"),
        ("PERFORMANCE: 500 averaging lots ns/day\n", "PERFORMANCE line"),
        ("ENERGY:     0  1.0\n", "before any ETITLE"),
        ("ETITLE: TS BOND\nENERGY: 0 1.0 2.0\n", "has 3 columns, ETITLE has 2"),
        ("ETITLE: TS BOND\nENERGY: 0 nan?\n", "ENERGY line"),
        ("WallClock: soon\n", "WallClock line"),
    ],
)
def test_changed_formats_fail_loudly_with_file_and_line(text, what):
    with pytest.raises(namd.NamdLogError, match=rf"^x\.log:\d+: .*{what}"):
        namd.parse_log("Info: NAMD 3.0 for Linux-x86_64-multicore\n" + text, "x.log")


def run(label: str, name: str, mode: str, devices: list[int], **extra) -> dict:
    path = FIXTURES / name
    return {
        "label": label,
        "mode": mode,
        "devices": devices,
        "command": f"namd3 {name}",
        "exit_code": 0,
        "log": str(path),
        "parsed": namd.asdict(namd.parse_log(path.read_text(), str(path))),
        **extra,
    }


def test_judge_metrics_speedup_power_and_published_energy():
    runs = [
        run("gpu_offload_1", "namd2.14_apoa1_cuda.log", "gpu_offload", [0], gpu_energy_j=1200.0, gpu_power_avg_w=500.0),
        run("cpu", "namd3.0_apoa1_cpu.log", "cpu", []),
    ]
    metrics, waived, failures, checked = namd.judge("apoa1", 500, runs)
    assert failures == [] and checked == 6
    assert metrics["gpu_offload_1_ns_per_day"]["value"] == pytest.approx(43.073, rel=1e-4)
    assert metrics["cpu_ns_per_day"]["value"] == pytest.approx(0.904039)
    assert metrics["speedup_vs_cpu"]["value"] == pytest.approx(43.073 / 0.904039, rel=1e-4)
    assert metrics["gpu_offload_1_energy_kj"]["value"] == pytest.approx(1.2)
    assert metrics["gpu_offload_1_ns_per_day_per_kw"]["value"] == pytest.approx(43.073 / 0.5, rel=1e-4)
    assert metrics["cpu_wall_s"]["value"] == pytest.approx(49.630421)
    assert "gpu_offload_1_power_avg_w" in metrics and "cpu_power_avg_w" not in metrics
    assert waived["gpu_offload_all_ns_per_day"].startswith("one GPU")


def test_judge_fails_a_run_whose_energy_is_not_conserved_or_not_published():
    metrics, _waived, failures, _ = namd.judge("apoa1", 500, [run("cpu", "namd2.14_apoa1_blowup.log", "cpu", [])])
    assert any("TOTAL energy moved from -222168.2646 to -172495.4082" in f for f in failures), failures
    assert any("differs from the published -222495.2" in f for f in failures), failures
    assert metrics["cpu_ns_per_day"]["value"] == pytest.approx(1 / 1.10173)  # measured, but the check fails


def test_judge_fails_a_fatal_error_and_a_nonzero_exit():
    failures = namd.judge("apoa1", 500, [run("gpu_resident_1", "namd3.0_fatal.log", "gpu_resident", [0])])[2]
    assert failures and "NAMD did not complete (FATAL ERROR: Unable to open text file apoa1.psf" in failures[0]
    bad = run("cpu", "namd3.0_apoa1_cpu.log", "cpu", [])
    bad["exit_code"] = 137
    assert "exit code 137" in namd.judge("apoa1", 500, [bad])[2][0]


def test_missing_names_what_is_absent(tmp_path):
    why = namd.missing(tmp_path, "apoa1", ["gpu_resident", "gpu_offload", "cpu"])
    assert str(tmp_path / "gpu" / "namd3") in why and str(tmp_path / "cpu" / "namd3") in why
    assert "configs/apoa1_classic.namd" in why and "configs/apoa1_resident.namd" in why
    for sub in ("gpu", "cpu"):
        (tmp_path / sub).mkdir()
        exe = tmp_path / sub / "namd3"
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    (tmp_path / "inputs" / "apoa1").mkdir(parents=True)
    (tmp_path / "inputs" / "apoa1" / "apoa1.namd").write_text("numsteps 500\n")
    (tmp_path / "configs").mkdir()
    for kind in ("classic", "resident"):  # as the gpuaccept_namd role links them
        (tmp_path / "configs" / f"apoa1_{kind}.namd").symlink_to(tmp_path / "inputs" / "apoa1" / "apoa1.namd")
    assert namd.missing(tmp_path, "apoa1", ["gpu_resident", "gpu_offload", "cpu"]) == ""


def test_run_config_replaces_what_gpuaccept_sets(tmp_path):
    original = tmp_path / "apoa1.namd"
    original.write_text(
        "structure apoa1.psf\nnumsteps 500  # steps\noutputname /usr/tmp/apoa1-out\noutputEnergies 20\ntimestep 1\n"
    )
    text = namd.run_config(original, tmp_path / "out" / "apoa1_cpu", 200, resident=True)
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert "structure apoa1.psf" in lines and "timestep 1" in lines
    assert sum(line.lower().startswith("numsteps") for line in lines) == 1 and lines[-1].split() == ["numsteps", "200"]
    assert "outputEnergies      100" in lines and "GPUresident         on" in lines
    assert not any("/usr/tmp" in line for line in lines)


def test_runner_without_namd_writes_a_document_that_says_so(tmp_path):
    out = tmp_path / "namd_apoa1.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuaccept.probe.namd",
            "run",
            "--namd-home",
            str(tmp_path / "none"),
            "--system",
            "apoa1",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    doc = json.loads(out.read_text())
    assert doc["schema"] == "gpuaccept.bench/1" and doc["verification"]["passed"] is False
    assert doc["errors"][0].startswith("NAMD not installed (see README.md, section 'NAMD'): missing ")
    assert "NAMD not installed" in proc.stderr


def test_parse_command_prints_each_log_and_names_a_bad_one(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text("TIMING: 1 broken\n")
    proc = subprocess.run(
        [sys.executable, "-m", "gpuaccept.probe.namd", "parse", str(FIXTURES / "namd3.0_apoa1_cpu.log"), str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 4
    assert json.loads(proc.stdout.splitlines()[0])["ns_per_day"] == pytest.approx(0.904039)
    assert f"{bad}:1: unreadable TIMING line" in proc.stderr


def test_fixture_readme_says_the_logs_are_reconstructed():
    text = (FIXTURES / "README.md").read_text()
    assert "reconstructed" in text and "not recorded" in text
    for path in FIXTURES.glob("*.log"):
        assert path.name in text, f"{path.name} is not described in {FIXTURES / 'README.md'}"
