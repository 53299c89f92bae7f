"""NAMD: the log parser and the judging on the fifteen real NAMD 3.0 APOA1 logs (tests/inputs.toml: namd3-apoa1-logs,
multicore CPU on 1-16 cores, multicore-CUDA GPU-offload and GPU-resident on an A100 80GB PCIe), the runner with
NAMD absent, and the configuration it writes. NAMD itself is operator-supplied and never runs here."""

import json
import math
import subprocess
import sys

import pytest
from conftest import NAMD3_LOGS, needs_input

from gpuaccept.probe import md_apoa1, namd

CORES = (1, 2, 4, 8, 16)
LOGS = [f"apoa1-{n}.log" for n in CORES] + [f"apoa1-GPU-{n}.log" for n in CORES]
LOGS += [f"apoa1-GPU-Res-{n}.log" for n in CORES]


def log(name: str) -> namd.NamdLog:
    path = needs_input("namd3-apoa1-logs", name)
    return namd.parse_log(path.read_text(), str(path))


def log_text(name: str) -> str:
    return needs_input("namd3-apoa1-logs", name).read_text()


@pytest.mark.parametrize("name", LOGS)
def test_every_real_namd_3_0_log_parses_completely(name):
    parsed = log(name)
    cores = int(name.rsplit("-", 1)[1].removesuffix(".log"))
    assert parsed.version == "3.0" and parsed.timestep_fs == 1.0
    assert parsed.build == ("Linux-x86_64-multicore" if "GPU" not in name else "Linux-x86_64-multicore-CUDA")
    assert parsed.completed and not parsed.fatal_errors
    # Two Benchmark lines, a TIMING and a PERFORMANCE line every 20 steps, WallClock.
    assert len(parsed.benchmark) == 2 and {b["cpus"] for b in parsed.benchmark} == {cores}
    assert [t["step"] for t in parsed.timing] == list(range(20, 501, 20))
    assert [p["step"] for p in parsed.performance] == list(range(20, 501, 20))
    # Energies every step on the CPU and GPU-offload runs, every 100th GPU-resident (NAMD 3's default there).
    steps = [e["TS"] for e in parsed.energies]
    assert steps == (list(range(0, 501, 100)) if "Res" in name else list(range(501)))
    assert parsed.wallclock_s > 0 and parsed.cputime_s > 0
    for b in parsed.benchmark:  # ns/day and days/ns are one figure, whichever NAMD printed
        assert b["ns_per_day"] * b["days_per_ns"] == pytest.approx(1.0)
        assert b["unit_printed"] == ("ns/day" if "Res" in name else "days/ns")
        assert 86400e-6 / b["s_per_step"] == pytest.approx(b["ns_per_day"], rel=2e-3)  # 1 fs steps


def test_cpu_log_days_per_ns_timing_performance_wallclock_energy():
    parsed = log("apoa1-16.log")
    assert parsed.benchmark[-1] == {
        "cpus": 16,
        "s_per_step": 0.0291549,
        "ns_per_day": pytest.approx(1 / 0.33744),
        "days_per_ns": 0.33744,
        "unit_printed": "days/ns",
        "memory_mb": 533.923,
    }
    assert parsed.timing[-1] == {
        "step": 500,
        "cpu_s": 15.6839,
        "cpu_s_per_step": 0.0287462,
        "wall_s": 15.9157,
        "wall_s_per_step": 0.0289266,
        "ns_per_day": None,
        "hours_remaining": 0.0,
        "memory_mb": 533.922655,
    }
    assert parsed.performance[-1] == {
        "step": 500, "ns_per_day": 2.77006, "s_per_step": 0.0311906, "stddev_s_per_step": 0.00258793
    }  # fmt: skip
    # The PERFORMANCE average over the run is preferred over the Benchmark line.
    assert parsed.ns_per_day() == pytest.approx(2.77006) and parsed.s_per_step() == pytest.approx(0.0311906)
    assert (parsed.wallclock_s, parsed.cputime_s, parsed.memory_mb) == (17.175581, 16.639423, 533.922655)
    last = parsed.last_energy()
    assert last["TS"] == 500 and last["BOND"] == pytest.approx(20974.8940)
    assert last["TOTAL"] == pytest.approx(-222495.4087)


def test_gpu_resident_log_ns_per_day_and_the_timing_lines_ns_days_field():
    parsed = log("apoa1-GPU-Res-1.log")
    assert parsed.benchmark[0]["ns_per_day"] == 110.556 and parsed.benchmark[0]["s_per_step"] == 0.000781502
    assert parsed.benchmark[-1]["ns_per_day"] == 110.057 and parsed.benchmark[-1]["unit_printed"] == "ns/day"
    assert parsed.timing[-1]["ns_per_day"] == 108.406  # NAMD 3 prints "108.406 ns/days"
    assert parsed.timing[-1]["wall_s_per_step"] == 0.000797002
    assert parsed.ns_per_day() == pytest.approx(109.116)
    assert parsed.wallclock_s == pytest.approx(2.094404) and parsed.memory_mb == 0.0


def test_step_0_energies_are_those_md_apoa1_matches():
    """The step-0 ENERGY line of every log: what gpuaccept-md-apoa1 compares OpenMM's energies with."""
    ref = md_apoa1.NAMD3_STEP0
    for name in LOGS:
        e0 = log(name).energies[0]
        assert e0["TS"] == 0
        for term, col, rtol in (("bond", "BOND", 1e-6), ("angle", "ANGLE", 1e-6), ("dihedral", "DIHED", 1e-6),
                                ("improper", "IMPRP", 1e-5)):  # fmt: skip
            assert e0[col] == pytest.approx(ref[term], rel=rtol), (name, col)
        assert e0["ELECT"] + e0["VDW"] == pytest.approx(ref["elect"] + ref["vdw"], rel=2e-6), name
    cpu = log("apoa1-1.log").energies[0]
    assert (cpu["BOND"], cpu["ANGLE"], cpu["DIHED"], cpu["IMPRP"], cpu["ELECT"], cpu["VDW"]) == (
        ref["bond"], ref["angle"], ref["dihedral"], ref["improper"], ref["elect"], ref["vdw"]
    )  # fmt: skip


def test_published_a100_figures_are_what_the_logs_say():
    for mode, pattern in (("gpu_resident", "apoa1-GPU-Res-{}.log"), ("gpu_offload", "apoa1-GPU-{}.log"),
                          ("cpu", "apoa1-{}.log")):  # fmt: skip
        best = max((log(pattern.format(n)).benchmark[-1]["ns_per_day"], pattern.format(n)) for n in CORES)
        figure = namd.NAMD3_A100_APOA1[mode]
        assert best[0] == pytest.approx(figure["ns_per_day"], rel=1e-5) and best[1] == figure["log"], mode


def test_timing_only_falls_back_to_the_timestep():
    text = (
        "Info: TIMESTEP               2\nTIMING: 100  CPU: 1.0, 0.01/step  Wall: 1.2, 0.012/step, 0 hours remaining\n"
    )
    parsed = namd.parse_log(text)
    assert parsed.ns_per_day() == pytest.approx(86400 / 0.012 * 2e-6)
    assert not parsed.completed  # no WallClock: the run did not finish


def test_a_run_cut_short_by_a_fatal_error_is_incomplete():
    """A real log cut where NAMD would stop, with the FATAL ERROR line NAMD prints (the message is made up)."""
    text = log_text("apoa1-GPU-Res-1.log")
    cut = text[: text.index("PERFORMANCE: 100")] + "FATAL ERROR: CUDA error in cudaMemcpy: out of memory\n"
    parsed = namd.parse_log(cut, "cut.log")
    assert parsed.fatal_errors == ["FATAL ERROR: CUDA error in cudaMemcpy: out of memory"]
    assert not parsed.completed and parsed.wallclock_s is None


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


def run(label: str, name: str, mode: str, devices: list[int], text: str | None = None, **extra) -> dict:
    path = NAMD3_LOGS / name
    text = text if text is not None else log_text(name)
    return {
        "label": label,
        "mode": mode,
        "devices": devices,
        "command": f"namd3 {name}",
        "exit_code": 0,
        "log": str(path),
        "parsed": namd.asdict(namd.parse_log(text, str(path))),
        **extra,
    }


def test_judge_metrics_speedup_power_and_published_energy():
    runs = [
        run("gpu_resident_1", "apoa1-GPU-Res-1.log", "gpu_resident", [0], gpu_energy_j=600.0, gpu_power_avg_w=300.0),
        run("gpu_offload_1", "apoa1-GPU-4.log", "gpu_offload", [0], gpu_energy_j=1200.0, gpu_power_avg_w=250.0),
        run("cpu", "apoa1-16.log", "cpu", []),
    ]
    metrics, waived, failures, checked = namd.judge("apoa1", 500, runs)
    assert failures == [] and checked == 8  # 3 runs, 3 conserved energies, 2 published energies (not resident)
    assert metrics["gpu_resident_1_ns_per_day"]["value"] == pytest.approx(109.116)
    assert metrics["gpu_offload_1_ns_per_day"]["value"] == pytest.approx(20.0439)
    assert metrics["cpu_ns_per_day"]["value"] == pytest.approx(2.77006)
    assert metrics["speedup_vs_cpu"]["value"] == pytest.approx(109.116 / 2.77006)
    assert metrics["gpu_resident_1_energy_kj"]["value"] == pytest.approx(0.6)
    assert metrics["gpu_offload_1_ns_per_day_per_kw"]["value"] == pytest.approx(20.0439 / 0.25)
    assert metrics["cpu_wall_s"]["value"] == pytest.approx(17.175581)
    assert metrics["gpu_resident_1_s_per_step"]["value"] == pytest.approx(0.000791815)
    assert "gpu_offload_1_power_avg_w" in metrics and "cpu_power_avg_w" not in metrics
    assert waived["gpu_offload_all_ns_per_day"].startswith("one GPU")


def test_judge_fails_a_run_whose_energy_is_not_conserved_or_not_published():
    """A real CPU log whose step-500 TOTAL is raised by 50,000 kcal/mol (a run that blew up)."""
    text = log_text("apoa1-1.log")
    lines = text.splitlines(keepends=True)
    i = max(k for k, line in enumerate(lines) if line.startswith("ENERGY:     500 "))
    cols = lines[i].split()
    titles = next(line for line in lines if line.startswith("ETITLE:")).split()
    t = titles.index("TOTAL")
    cols[t] = f"{float(cols[t]) + 50000:.4f}"
    lines[i] = " ".join(cols) + "\n"
    metrics, _waived, failures, _ = namd.judge("apoa1", 500, [run("cpu", "apoa1-1.log", "cpu", [], "".join(lines))])
    assert any("TOTAL energy moved from -223539.1745 to -172495.4085" in f for f in failures), failures
    assert any("differs from the published -222495.2" in f for f in failures), failures
    assert metrics["cpu_ns_per_day"]["value"] == pytest.approx(0.191064)  # measured, but the check fails


def test_judge_fails_a_fatal_error_and_a_nonzero_exit():
    text = log_text("apoa1-GPU-Res-1.log")
    cut = text[: text.index("PERFORMANCE: 100")] + "FATAL ERROR: CUDA error in cudaMemcpy: out of memory\n"
    failures = namd.judge("apoa1", 500, [run("gpu_resident_1", "x.log", "gpu_resident", [0], cut)])[2]
    assert failures and "NAMD did not complete (FATAL ERROR: CUDA error in cudaMemcpy" in failures[0]
    bad = run("cpu", "apoa1-16.log", "cpu", [])
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
    good = needs_input("namd3-apoa1-logs", "apoa1-GPU-Res-16.log")
    proc = subprocess.run(
        [sys.executable, "-m", "gpuaccept.probe.namd", "parse", str(good), str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 4
    assert json.loads(proc.stdout.splitlines()[0])["ns_per_day"] == pytest.approx(110.493)
    assert f"{bad}:1: unreadable TIMING line" in proc.stderr
    assert not math.isnan(json.loads(proc.stdout.splitlines()[0])["ns_per_day"])
