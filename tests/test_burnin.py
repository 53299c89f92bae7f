"""The burn-in (docs/checks/burnin.md): its timeline functions, its rules, its figures, its schedule, the load driver
with its sampler, and its wiring into the suites.

Every timeline, window and document below is BUILT HERE IN CODE to show one behaviour each (a GPU whose SM clock
drops with a thermal reason at t=300 s, an XID, a foreign process, a healthy node), not presented as a recording. The
driver runs for real against a stand-in NVML (a Python object answering as pynvml does) and a stand-in gpuaccept-gemm
(a script that sleeps through its window and writes a document of gpuaccept-gemm's shape); what they answer is
written in this file. Burn-ins recorded on GPUs are judged in tests/test_h100_burnin_commission.py (1 x H100,
healthy), tests/test_multigpu_h200x4.py (4 x H200, healthy) and tests/test_multigpu_h200x2.py (2 x H200, a foreign
process started on GPU 1 halfway).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import REFERENCE_DIR, ROOT
from rfm_support import render_config

from gpuaccept import metric_table
from gpuaccept import run as gpuaccept_run
from gpuaccept.checks import CHECKS, SUITES, in_suite
from gpuaccept.judge import burnin_rules, exporter, verdict
from gpuaccept.layout import BENCH_SCHEMA
from gpuaccept.probe import burnin, burnin_sampler
from gpuaccept.probe import burnin_timeline as tl
from gpuaccept.results import burnin_plot, report

STARTED = 1795000000.0  # 2026-11-18T08:26:40Z: the built burn-ins' start
H100 = {"name": "NVIDIA H100 80GB HBM3", "pci_device_id": "0x233010DE"}
THRESHOLDS = {"gpu_slowdown_c": 87, "gpu_shutdown_c": 92, "gpu_max_operating_c": 85, "memory_max_operating_c": 95}


def utc(t_s: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(STARTED + t_s))


# ------------------------------------------------------------------------------------------------
# Built timelines and documents.


def built_timeline(seconds: int = 600, change=None) -> dict[str, list]:
    """A healthy GPU under a power-capped GEMM, one sample a second; ``change(t)`` returns the columns that differ
    at time t."""
    timeline = tl.empty()
    for t in range(seconds + 1):
        sample = {"t_s": float(t), "sm_mhz": 1755, "mem_mhz": 2619, "gpu_temp_c": 62, "mem_temp_c": 70,
                  "power_w": 690.0, "reasons": 0x4, "ecc_corrected": 0, "ecc_uncorrected": 0, "remap_pending": 0,
                  "remap_failure": 0, "remap_uncorrectable": 0}  # fmt: skip
        sample.update(change(t) if change else {})
        tl.append(timeline, sample)
    return timeline


def built_windows(rates: list[float], window_s: float = 60.0, memtest_s: float = 30.0) -> list[dict]:
    """GEMM windows at ``rates`` (TFLOP/s), each followed by a memory-test turn, 2 s apart."""
    out, t = [], 0.0
    for i, rate in enumerate(rates, start=1):
        out.append({"kind": "gemm", "index": i, "start_s": t, "end_s": t + window_s, "exit_status": 0,
                    "tflops_median": rate, "sm_mhz_median": 1755 if rate > 50 else 1300, "passed": True,
                    "problems": []})  # fmt: skip
        t += window_s + 2
        out.append({"kind": "memtest", "index": i, "start_s": t, "end_s": t + memtest_s, "exit_status": 0,
                    "passed": True, "problems": []})  # fmt: skip
        t += memtest_s + 2
    return out


def built_gpu(index: int, timeline=None, rates=(54.0, 53.6, 53.5, 53.4, 53.3, 53.1, 53.0), **more) -> dict:
    return {"gpu": index, "name": H100["name"], "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0",
            "serial": f"17525240{index:05d}", "power_limit_w": 700.0, "thresholds_c": dict(THRESHOLDS),
            "timeline": timeline or built_timeline(), "windows": built_windows(list(rates)),
            "xid_source": "nvml_events", "xid_events": [], "foreign_processes": [],
            "nvlink": {"links": [], "errors_start": {}, "errors_end": {}}, **more}  # fmt: skip


def built_document(per_gpu: list[dict], elapsed_s: float = 600.0, duration_s: float = 600.0) -> dict:
    metrics, waived, gpu_metrics = burnin.figures(per_gpu)
    return {
        "schema": BENCH_SCHEMA, "tool": burnin.TOOL, "started_utc": utc(0),
        "devices": [{"index": g["gpu"], "name": g["name"], "pci_bus_id": g["pci_bus_id"]} for g in per_gpu],
        "parameters": {"duration_s": duration_s},
        "results": {"started_unix": STARTED, "elapsed_s": elapsed_s, "per_gpu": per_gpu, "xid": {}},
        "metrics": metrics, "waived": waived, "gpu_metrics": gpu_metrics,
        "verification": {"passed": True, "checked": 1, "failures": []}, "errors": [],
    }  # fmt: skip


def findings(per_gpu: list[dict], **kw) -> tuple[list[burnin_rules.Finding], str | None]:
    return burnin_rules.assess(built_document(per_gpu, **kw))


# ------------------------------------------------------------------------------------------------
# The rules.


def test_a_healthy_burn_in_has_no_finding():
    found, cannot = findings([built_gpu(0), built_gpu(1)])
    assert found == [] and cannot is None


def test_a_gpu_that_throttles_thermally_at_300_s_fails_naming_the_gpu_and_the_time():
    """GPU 1 reaches its slowdown threshold at 300 s: hw_thermal_slowdown joins the power cap, the SM clock drops to
    1300 MHz, and the GEMM windows from then on run 40 instead of 53 TFLOP/s."""

    def hot(t: int) -> dict:
        return {"reasons": 0x4 | 0x40, "sm_mhz": 1300, "gpu_temp_c": 88} if t >= 300 else {}

    gpu1 = built_gpu(1, built_timeline(600, hot), rates=(54.0, 53.6, 53.5, 40.1, 39.8, 39.9, 39.7))
    found, cannot = findings([built_gpu(0), gpu1])
    assert cannot is None
    by_rule = {f.rule: f for f in found}
    assert set(by_rule) == {"throttle", "temperature", "performance"} and all(f.gpu == 1 for f in found)
    label = "GPU 1 (bus 00000000:19:00.0, serial 1752524000001)"
    throttle = by_rule["throttle"].text()
    assert throttle.startswith(f"{label}: clocks held back by hw_thermal_slowdown at 300 s ({utc(300)}) for 301 s")
    assert "the GPU is too hot" in throttle
    temp = by_rule["temperature"].text()
    assert f"GPU temperature 88 C at 300 s ({utc(300)}), at or above its slowdown threshold 87 C" in temp
    perf = by_rule["performance"].text()
    assert "ran 39.7 TFLOP/s, 0.735 of the first (54 TFLOP/s), below 0.9" in perf
    assert f"first below at 282 s ({utc(282)}) (window 4: 40.1 TFLOP/s, SM 1300 MHz)" in perf


def test_the_judge_rejects_the_thermal_gpu_and_accepts_the_healthy_node(tmp_path):
    """Through the judge's three stages: a ReFrame report naming the burn-in's test case, its document, the node
    type h100_sxm5_80gb_x2's references (the shipped files)."""
    facts = {"hostname": "n1", "gpus": [{**H100, "index": i, "pci_bus_id": g["pci_bus_id"], "serial": g["serial"]}
                                        for i, g in enumerate((built_gpu(0), built_gpu(1)))]}  # fmt: skip

    def judged(per_gpu: list[dict]) -> dict:
        out = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        out.mkdir()
        (out / "burnin.json").write_text(json.dumps(built_document(per_gpu)))
        report = {"runs": [{"testcases": [{"check_key": "burnin", "result": "pass", "outputdir": str(out)}]}]}
        v = verdict.build(report, facts, REFERENCE_DIR, "h100_sxm5_80gb_x2", "burnin")
        return {(r.check, r.metric): r for r in v.rows}

    rows = judged([built_gpu(0), built_gpu(1)])
    assert rows[("burnin", None)].status == "pass"
    assert rows[("burnin", "tflops_last_over_first_min")].status == "info"
    assert rows[("health", None)].status == "not_run"  # the suite's other check, not in this built report
    hot = built_timeline(600, lambda t: {"reasons": 0x44, "gpu_temp_c": 88} if t >= 300 else {})
    rows = judged([built_gpu(0), built_gpu(1, hot)])
    assert rows[("burnin", None)].status == "fail"
    assert f"GPU 1 (bus 00000000:19:00.0, serial 1752524000001): clocks held back by hw_thermal_slowdown at 300 s " \
           f"({utc(300)})" in rows[("burnin", None)].reason  # fmt: skip


def test_an_xid_fails_with_its_time_and_what_to_do():
    gpu0 = built_gpu(0, xid_events=[{"gpu": 0, "xid": 79, "t_s": 412.5, "source": "nvml_events"}])
    (f,), _ = findings([gpu0, built_gpu(1)])
    assert f.rule == "xid" and f.gpu == 0
    assert f.message.endswith(f"XID 79 at 412 s ({utc(412.5)}) (nvml_events)")
    assert "fallen off the bus" in f.fix
    # XID 79's immediate action in NVIDIA's XID catalogue: RESTART_BM.
    assert f.fix.startswith("immediate action: reboot the node (the catalogue's RESTART_BM)")


def test_new_uncorrectable_ecc_errors_and_a_pending_remap_fail():
    def bad(t: int) -> dict:
        return {"ecc_uncorrected": 2, "remap_pending": 1} if t >= 200 else {}

    found, _ = findings([built_gpu(0, built_timeline(600, bad))])
    texts = [f.text() for f in found]
    assert any(f"2 uncorrectable ECC errors during the burn-in, the first at 200 s ({utc(200)})" in t for t in texts)
    assert any(f"a row remapping is pending from 200 s ({utc(200)})" in t for t in texts)


def test_a_pending_remap_from_before_the_burn_in_says_so():
    found, _ = findings([built_gpu(0, built_timeline(60, lambda t: {"remap_pending": 1}))], elapsed_s=60, duration_s=60)
    assert any("a row remapping is pending already at the first sample, at 0 s" in f.text() for f in found)


@pytest.mark.parametrize(
    ("mask", "reason", "fix"),
    [
        (0x8, "hw_slowdown", "PSUs"),
        (0x80, "hw_power_brake_slowdown", "power brake"),
        (0x20, "sw_thermal_slowdown", "airflow"),
        (0x10, "sync_boost", "sync-boost group"),
        (0x2, "applications_clocks_setting", "nvidia-smi -rac"),
    ],
)
def test_every_clock_event_reason_but_the_power_cap_and_idle_fails(mask, reason, fix):
    timeline = built_timeline(600, lambda t: {"reasons": 0x4 | mask} if 120 <= t < 130 else {})
    (f,), _ = findings([built_gpu(0, timeline)])
    assert f"clocks held back by {reason} at 120 s ({utc(120)}) for 10 s (10 samples" in f.message and fix in f.fix


def test_idle_between_turns_and_the_power_cap_do_not_fail():
    timeline = built_timeline(600, lambda t: {"reasons": 0x1, "power_w": 90.0} if t % 90 in (60, 61) else {})
    assert findings([built_gpu(0, timeline)]) == ([], None)


def test_memory_temperature_is_held_to_the_memorys_own_maximum():
    timeline = built_timeline(600, lambda t: {"mem_temp_c": 95} if t >= 500 else {"mem_temp_c": 90})
    (f,), _ = findings([built_gpu(0, timeline)])
    assert f"memory (HBM) temperature 95 C at 500 s ({utc(500)}), at or above its maximum operating temperature 95 C" \
        in f.message  # fmt: skip
    gpu = built_gpu(0, built_timeline(600, lambda t: {"mem_temp_c": 90}))
    gpu["thresholds_c"]["memory_max_operating_c"] = None  # NVML gives none: the GPU's slowdown threshold (87 C)
    (f,), _ = findings([gpu])
    assert "at or above the GPU's slowdown threshold (NVML gives none for the memory) 87 C" in f.message


def test_a_foreign_process_fails_naming_the_gpu_and_when_it_came():
    proc = {"pid": 4242, "user": "root", "name": "python3.12", "first_s": 61.0, "last_s": 120.0,
            "used_memory_bytes": 1 << 30}  # fmt: skip
    found, _ = findings([built_gpu(0), built_gpu(1, foreign_processes=[proc])])
    (f,) = [f for f in found if f.rule == "foreign_process"]
    assert f.gpu == 1 and f"pid 4242 of user root (python3.12), not started by the burn-in, ran on it from 61 s " \
        f"({utc(61)}) to 120 s" in f.message and "kill 4242" in f.fix  # fmt: skip


def test_a_gpu_lost_mid_run_and_a_sampling_gap_fail():
    lost = built_timeline(600, lambda t: {"sm_mhz": None, "gpu_temp_c": None, "power_w": None} if t >= 450 else {})
    found, _ = findings([built_gpu(0, lost)])
    assert any(f.rule == "lost" and f"stopped answering NVML at 450 s ({utc(450)})" in f.message for f in found)
    gap = built_timeline(600)
    for c in tl.COLUMNS:
        del gap[c][100:130]
    found, _ = findings([built_gpu(0, gap)])
    assert [f.rule for f in found] == ["sampling"] and "no sample for 31 s from 99 s" in found[0].message


def test_a_burn_in_stopped_short_fails():
    found, _ = findings([built_gpu(0, built_timeline(300))], elapsed_s=300, duration_s=1800)
    assert [f.message for f in found] == ["the burn-in ran 300 s of the 1800 s asked"]


def test_what_the_burn_in_could_not_read_makes_it_not_run():
    no_ecc = built_timeline(600, lambda t: {"ecc_uncorrected": None})
    found, cannot = findings([built_gpu(0, no_ecc, xid_source=None)])
    assert found == []
    assert "GPU 0 (bus 00000000:18:00.0, serial 1752524000000): XID events could not be watched" in cannot
    assert "NVML never reported the ECC counters (is ECC enabled?)" in cannot


def test_fewer_than_two_gemm_windows_cannot_be_compared():
    (f,), _ = findings([built_gpu(0, rates=(54.0,))])
    assert f.rule == "performance" and "1 GEMM windows measured a rate" in f.message


def test_a_damaged_timeline_is_named():
    gpu = built_gpu(0)
    gpu["timeline"]["power_w"].pop()
    (f,), _ = findings([gpu])
    assert f.rule == "document" and "column 'power_w' has 600 values, t_s has 601" in f.message


# ------------------------------------------------------------------------------------------------
# The timeline functions and the figures.


def test_episodes_hold_each_reason_until_the_next_sample():
    timeline = built_timeline(10, lambda t: {"reasons": 0x44 if 3 <= t < 6 else 0x4})
    eps = tl.episodes(timeline, end_s=11.0)
    assert [(e.reason, e.start_s, e.end_s, e.samples) for e in eps] == [
        ("sw_power_cap", 0.0, 11.0, 11), ("hw_thermal_slowdown", 3.0, 6.0, 3)]  # fmt: skip
    assert tl.other_reason_samples(timeline) == 3
    assert tl.first_rise(built_timeline(5, lambda t: {"ecc_corrected": 3 if t > 2 else 1}), "ecc_corrected") == (
        3.0, 1, 3)  # fmt: skip


def test_figures_are_each_gpus_and_min_max_or_sum_over_them():
    hot = built_timeline(600, lambda t: {"gpu_temp_c": 80, "reasons": 0x44} if t == 10 else {})
    xid = [{"gpu": 1, "xid": 13, "t_s": 5.0, "source": "nvml_events"}]
    per_gpu = [built_gpu(0, rates=(54.0, 50.0)), built_gpu(1, hot, rates=(53.0, 52.0), xid_events=xid)]
    metrics, waived, gpu_metrics = burnin.figures(per_gpu)
    value = {k: m["value"] for k, m in metrics.items()}
    assert value["tflops_first_window_min"] == 53.0 and value["tflops_last_window_min"] == 50.0
    assert value["tflops_last_over_first_min"] == pytest.approx(50 / 54)
    assert value["gpu_temp_max_c"] == 80 and value["memory_temp_max_c"] == 70 and value["xid_events"] == 1
    assert value["throttle_other_samples"] == 1 and value["gemm_windows_min"] == 2
    assert waived == {"nvlink_errors_new": "no NVLink link up on any GPU"}
    assert gpu_metrics[1]["gpu"] == 1
    assert gpu_metrics[1]["metrics"]["tflops_last_over_first_min"] == {
        "value": pytest.approx(52 / 53), "unit": "ratio", "better": "higher"}  # fmt: skip
    # Every figure is a metric the burnin check declares, with the unit the document writes.
    assert {m.pattern for m in CHECKS["burnin"].metrics} == set(burnin.FIGURES)
    for name, (unit, _better, _how, _what) in burnin.FIGURES.items():
        assert metric_table.lookup("burnin", name) == (unit, "gpu")


# ------------------------------------------------------------------------------------------------
# The schedule and one turn's record.


def test_the_schedule_scales_its_windows_and_ends_on_a_gemm_window():
    assert burnin.Schedule.for_minutes(30, True) == burnin.Schedule(1800.0, 60.0, 30.0)
    assert burnin.Schedule.for_minutes(2, True) == burnin.Schedule(120.0, 20.0, 10.0)
    assert burnin.Schedule.for_minutes(1, False) == burnin.Schedule(60.0, 10.0, 0.0)
    with pytest.raises(ValueError, match=r"--minutes 0.5: the burn-in lasts 1 to 1440 minutes \(default 30\)"):
        burnin.Schedule.for_minutes(0.5, True)
    s = burnin.Schedule(120.0, 20.0, 10.0)
    kinds, left, last = [], 120.0, None
    while (turn := s.next_turn(left, last, 3.0)) is not None:
        kinds.append(turn)
        left -= turn[1] + 3.0
        last = turn[0]
    assert kinds[0] == ("gemm", 20.0) and kinds[-1][0] == "gemm" and ("memtest", 10.0) in kinds
    assert left < burnin.TURN_S_MIN + 3.0
    assert all(k == "gemm" for k, _ in _turns(burnin.Schedule(120.0, 20.0, 0.0)))


def _turns(s: burnin.Schedule) -> list[tuple[str, float]]:
    out, left, last = [], s.duration_s, None
    while (turn := s.next_turn(left, last, 3.0)) is not None:
        out.append(turn)
        left, last = left - turn[1] - 3.0, turn[0]
    return out


def gemm_document(gpu: int, tflops: float = 53.2, passed: bool = True) -> dict:
    """A document of gpuaccept-gemm's shape (docs/benchmark-json.md), built here: one solo fp64 window."""
    row = {"gpu": gpu, "precision": "fp64", "m": 8192, "n": 8192, "k": 8192, "mode": "solo", "phase": "window",
           "samples": 2900, "tflops_median": tflops, "tflops_min": tflops - 3, "tflops_max": tflops + 2,
           "seconds_total": 59.8, "verified": passed, "rel_error": 1e-15,
           "algorithm": {"api": "cublasLtMatmul", "heuristic_rank": 0},
           "clocks": {"sm_clock_mhz_median": 1755, "power_w_median": 695.0}}  # fmt: skip
    return {"schema": BENCH_SCHEMA, "tool": "gpuaccept-gemm", "metrics": {}, "results": {"gemm": [row]},
            "verification": {"passed": passed, "failures": [] if passed else ["GPU 0 fp64: C differs"]},
            "errors": []}  # fmt: skip


def test_a_turn_record_takes_the_windows_rate_or_says_what_went_wrong(tmp_path):
    out = tmp_path / "gemm-gpu0-1.json"
    out.write_text(json.dumps(gemm_document(0)))
    child = burnin.Child(0, ["gemm"], out, tmp_path / "log", start_s=2.0, end_s=64.5, exit_status=0)
    rec = burnin.turn_record("gemm", 1, child, "fp64")
    assert rec["passed"] and rec["tflops_median"] == 53.2 and rec["sm_mhz_median"] == 1755
    assert rec["algorithm"] == "cublasLtMatmul heuristic rank 0" and rec["calls"] == 2900
    out.write_text(json.dumps(gemm_document(0, passed=False)))
    child.exit_status = 2
    rec = burnin.turn_record("gemm", 1, child, "fp64")
    assert not rec["passed"] and rec["problems"] == ["exit status 2", "GPU 0 fp64: C differs"]
    missing = burnin.Child(0, ["gemm"], tmp_path / "none.json", tmp_path / "log", exit_status=1)
    assert burnin.turn_record("gemm", 2, missing, "fp64")["problems"] == ["exit status 1", "left no document"]


def test_nvml_bus_ids_match_the_kernels_xid_lines():
    assert burnin.short_bus("00000000:18:00.0") == "0000:18:00"
    assert burnin.short_bus("00000001:AB:00.0") == "0001:ab:00"


def test_the_memory_test_takes_turns_only_where_its_binary_is(tmp_path):
    assert burnin.memtest_state("")["why"].startswith("no gpuaccept-memtest given: GEMM windows alone")
    assert not burnin.memtest_state(str(tmp_path / "gpuaccept-memtest"))["available"]
    exe = tmp_path / "gpuaccept-memtest"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert burnin.memtest_state(str(exe)) == {"available": True, "binary": str(exe), "why": None}


def test_the_length_comes_from_the_environment_where_no_option_gives_it(monkeypatch):
    monkeypatch.setenv("GPUACCEPT_BURNIN_MINUTES", "2")
    assert burnin.default_minutes() == 2.0
    monkeypatch.setenv("GPUACCEPT_BURNIN_MINUTES", "half an hour")
    with pytest.raises(ValueError, match="GPUACCEPT_BURNIN_MINUTES='half an hour': give the burn-in's length"):
        burnin.default_minutes()
    monkeypatch.delenv("GPUACCEPT_BURNIN_MINUTES")
    assert burnin.default_minutes() == 30.0


# ------------------------------------------------------------------------------------------------
# The driver and its sampler, against a stand-in NVML and a stand-in gpuaccept-gemm.


class StandInError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


class StandInNvml:
    """Answers as pynvml does for two H100s. GPU 1 gains a compute process (pid 4242) from FOREIGN_FROM_S on; NVML
    event sets are refused (as in a VM that does not pass them through); GPU 0 has two NVLink links."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC = 0, 1, 0
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 0, 1
    NVML_TEMPERATURE_THRESHOLD_GPU_MAX, NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 3, 5
    NVML_NVLINK_MAX_LINKS = 4
    NVML_FI_DEV_MEMORY_TEMP = 82
    NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL = 38, 45
    NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL = 52, 59
    NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY = 0, 1
    NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA = 2, 3
    FOREIGN_FROM_S = 1.5

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=f"00000000:{0x18 + h:02X}:00.0".encode())

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700000

    def nvmlDeviceGetTemperatureThreshold(self, h, which):
        return {0: 92, 1: 87, 3: 85, 5: 95}[which]

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{h}"

    def nvmlDeviceGetSerial(self, h):
        return f"175252400000{h}"

    def nvmlDeviceGetNvLinkState(self, h, link):
        return 1 if h == 0 and link < 2 else 0

    def nvmlDeviceGetNvLinkErrorCounter(self, h, link, counter):
        return 0

    def nvmlDeviceGetFieldValues(self, h, ids):
        def fv(fid):
            value = SimpleNamespace(uiVal=71, ullVal=0)
            return SimpleNamespace(nvmlReturn=0, valueType=1 if fid == 82 else 3, value=value)

        return [fv(fid) for fid in ids]

    def nvmlDeviceGetPowerUsage(self, h):
        return 690000

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1755 if which == 1 else 2619

    def nvmlDeviceGetTemperature(self, h, which):
        return 63

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4

    def nvmlDeviceGetTotalEccErrors(self, h, kind, counter):
        return 0

    def nvmlDeviceGetRemappedRows(self, h):
        return (0, 0, 0, 0)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        late = time.monotonic() - self.t0 >= self.FOREIGN_FROM_S
        return [SimpleNamespace(pid=4242, usedGpuMemory=1 << 30)] if h == 1 and late else []

    def nvmlEventSetCreate(self):
        raise StandInError(3)


class StandInSession:
    def __init__(self) -> None:
        self.lib = StandInNvml()
        self.error = StandInError

    def optional(self, fn, *args):
        try:
            value = fn(*args)
        except StandInError:
            return None
        return value.decode() if isinstance(value, bytes) else value

    def handles(self):
        return [0, 1]

    def versions(self):
        return "580.159.04", "13.0"

    def close(self):
        pass


STAND_IN_GEMM = f"""#!{sys.executable}
# A stand-in for gpuaccept-gemm (tests/test_burnin.py): sleeps through its window, writes one fp64 window row.
import json, sys, time
a = sys.argv[1:]
opt = lambda name: a[a.index(name) + 1]
time.sleep(float(opt("--window-s")))
gpu = int(opt("--gpus"))
row = {{"gpu": gpu, "precision": "fp64", "mode": "solo", "phase": "window", "tflops_median": 53.0 - gpu,
        "samples": 10, "verified": True, "clocks": {{"sm_clock_mhz_median": 1755}}, "algorithm": {{}}}}
json.dump({{"schema": "{BENCH_SCHEMA}", "tool": "gpuaccept-gemm", "metrics": {{}}, "results": {{"gemm": [row]}},
           "verification": {{"passed": True, "failures": []}}, "errors": []}}, open(opt("--output"), "w"))
"""


def test_the_driver_loads_every_gpu_in_turns_while_the_sampler_reads_them(tmp_path):
    gemm = tmp_path / "gpuaccept-gemm"
    gemm.write_text(STAND_IN_GEMM)
    gemm.chmod(0o755)
    args = argparse.Namespace(gemm=str(gemm), memtest=None, minutes=1.0, precision="fp64", size=8192, exempt_pid=[])
    sched = burnin.Schedule(3.0, 0.8, 0.0, 0.3)  # three seconds: the plumbing is under test, not the GPUs
    sampler = burnin_sampler.Sampler(StandInSession(), interval=0.25)
    out = burnin.drive(args, sched, sampler, tmp_path)
    doc = burnin.build_document(args, ["gpuaccept", "burnin"], sched, burnin.memtest_state(""), out)
    assert sampler.xid_source is None and "NVML event sets: NVML error 3" in sampler.xid_why_not
    per_gpu = doc["results"]["per_gpu"]
    assert [g["pci_bus_id"] for g in per_gpu] == ["00000000:18:00.0", "00000000:19:00.0"]
    assert per_gpu[0]["thresholds_c"] == THRESHOLDS and per_gpu[0]["nvlink"]["links"] == [0, 1]
    assert per_gpu[1]["nvlink"]["links"] == [] and per_gpu[1]["timeline"]["nvlink_crc"][0] is None
    windows = per_gpu[0]["windows"]
    assert len(windows) >= 2 and all(w["kind"] == "gemm" and w["passed"] for w in windows)
    assert [w["tflops_median"] for w in per_gpu[1]["windows"]] == [52.0] * len(per_gpu[1]["windows"])
    timeline = per_gpu[0]["timeline"]
    assert tl.length(timeline) >= 8 and timeline["mem_temp_c"][0] == 71 and timeline["reasons"][0] == 4
    assert per_gpu[0]["foreign_processes"] == []
    (foreign,) = per_gpu[1]["foreign_processes"]
    assert foreign["pid"] == 4242 and 1.5 <= foreign["first_s"] <= 2.5
    assert doc["verification"]["passed"] and doc["errors"] == []
    # The sampler could not watch XIDs here (no event set; run() then reads the kernel log): NOT RUN, and the
    # foreign process on GPU 1 fails it, as does a burn-in of seconds (shorter than the judge's floor).
    found, cannot = burnin_rules.assess(doc)
    assert [(f.rule, f.gpu) for f in found] == [("duration", None), ("foreign_process", 1)]
    assert "XID events could not be watched" in cannot
    csv = burnin.timeline_csv(timeline).splitlines()
    assert csv[0] == ",".join(tl.COLUMNS) and len(csv) == tl.length(timeline) + 1


# ------------------------------------------------------------------------------------------------
# The suite's wiring.


def test_the_burnin_suite_is_the_health_probe_and_the_burn_in():
    assert "burnin" in SUITES
    # DCGM's diagnostic (optional: where the site installed DCGM) runs in the burn-in suite too, at level 3.
    assert [c.key for c in in_suite("burnin")] == ["health", "dcgm_diag", "burnin"]
    assert all("burnin" not in in_suite(s) for s in ("nightly", "commission", "evaluation"))


def test_gpuaccept_run_passes_the_length_and_sizes_the_time_limit(monkeypatch):
    args = argparse.Namespace(suite="burnin", burnin_minutes=None, timeout_s=None)
    monkeypatch.delenv("GPUACCEPT_BURNIN_MINUTES", raising=False)
    assert gpuaccept_run.burnin_minutes(args) == 30.0 and gpuaccept_run.suite_timeout_s(args) == 3600.0
    monkeypatch.setenv("GPUACCEPT_BURNIN_MINUTES", "90")
    assert gpuaccept_run.suite_timeout_s(args) == 90 * 60 + gpuaccept_run.BURNIN_MARGIN_S
    args.burnin_minutes = 2.0
    assert gpuaccept_run.burnin_minutes(args) == 2.0
    args.burnin_minutes = 0.2
    with pytest.raises(gpuaccept_run.RunError, match=r"--burnin-minutes 0\.2: the burn-in lasts 1 to 1440 minutes"):
        gpuaccept_run.burnin_minutes(args)
    with pytest.raises(gpuaccept_run.RunError, match="only the burnin suite has a length"):
        gpuaccept_run.burnin_minutes(argparse.Namespace(suite="nightly", burnin_minutes=5.0, timeout_s=None))


def test_reframe_selects_the_burnin_suites_checks_and_passes_the_length(tmp_path):
    """ReFrame itself (--dry-run: job scripts written, nothing run), on a configuration for a node of type
    h100_sxm5_80gb_x2 and gpuaccept run's command line for the burnin suite: the burnin tag selects the health
    probe and the burn-in, whose job runs ``gpuaccept burnin`` for the length given, GEMM alone (no memory test
    built here)."""
    facts = {"hostname": "n1", "gpus": [{**H100, "index": 0}, {**H100, "index": 1}]}
    facts_file = tmp_path / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    config = render_config(tmp_path / "settings.py", "h100_sxm5_80gb_x2", REFERENCE_DIR, facts, facts_file)
    argv = gpuaccept_run.reframe_argv(Path(sys.prefix) / "bin" / "reframe", config, "burnin", tmp_path,
                                      extra=["-S", "GpuBurnin.minutes=2"])  # fmt: skip
    argv[-1] = "--dry-run"
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs = sorted(p.parent.name for p in (tmp_path / "reframe").rglob("rfm_job.sh"))
    assert jobs == ["DcgmDiag", "GpuBurnin", "GpuHealth"]
    (dcgm_job,) = (tmp_path / "reframe").rglob("DcgmDiag/rfm_job.sh")
    assert " -m gpuaccept dcgm-diag --level 3 " in dcgm_job.read_text()
    (job,) = (tmp_path / "reframe").rglob("GpuBurnin/rfm_job.sh")
    line = next(x for x in job.read_text().splitlines() if " -m gpuaccept burnin " in x)
    assert "--minutes 2 --precision fp64 --output burnin.json" in line and "--memtest" not in line
    assert line.split(" --gemm ")[1].split()[0].endswith("/gpuaccept-gemm")


def test_the_burnin_playbook_runs_the_suite_with_a_time_limit_that_grows_with_its_length():
    (play,) = yaml.safe_load((ROOT / "playbooks" / "burnin.yml").read_text())
    assert play["vars"]["gpuaccept_suite_name"] == "burnin"
    assert "gpuaccept_burnin_minutes" in play["vars"]["gpuaccept_suite_timeout_s"]
    argv = (ROOT / "roles" / "gpuaccept_suite" / "vars" / "main.yml").read_text()
    assert "['--burnin-minutes', gpuaccept_suite_burnin_minutes | string] if gpuaccept_suite_name == 'burnin'" in argv


def test_the_textfile_of_the_burnin_suite_and_its_per_gpu_series():
    assert exporter.textfile_name("burnin") == "gpuaccept_burnin.prom"
    rows = [verdict.Row("burnin", None, "pass"),
            verdict.Row("burnin", "tflops_last_over_first_min", "info", 0.98, "ratio"),
            verdict.Row("burnin", "gpu_temp_max_c", "info", 71.0, "C")]  # fmt: skip
    rows[1].gpu = 1  # a per-GPU row (its GPU's own figure)
    text = exporter.render(verdict.Verdict("n1", "h100_sxm5_80gb_x2", "burnin", True, rows))
    labels = 'node_type="h100_sxm5_80gb_x2",suite="burnin"'
    assert f'gpuaccept_burnin_last_over_first_window_ratio{{gpu="1",{labels}}} 0.98' in text
    assert f'gpuaccept_burnin_gpu_temperature_max_celsius{{gpu="all",{labels}}} 71.0' in text


# ------------------------------------------------------------------------------------------------
# The report's section.


def test_the_report_draws_every_gpus_timeline_and_tabulates_its_figures(tmp_path):
    pytest.importorskip("matplotlib")
    hot = built_timeline(600, lambda t: {"reasons": 0x44, "gpu_temp_c": 88} if t >= 300 else {})
    doc = built_document([built_gpu(0), built_gpu(1, hot, rates=(54.0, 53.6, 53.5, 40.1, 39.8, 39.9, 39.7))])
    run = tmp_path / "run"
    run.mkdir()
    (run / "burnin.json").write_text(json.dumps(doc))
    page = report.build([report.load_group(f"h100x2={run}")], "burn-in")
    section = page[page.index("<h2 id='burnin'>") : page.index("<h2 id='energy'>")]
    assert '<figure class="plot" data-plot="burnin:h100x2">' in section and "<svg" in section
    assert "<td>hw_thermal_slowdown</td>" in section and "<td>0.735</td>" in section and "<td>none</td>" in section


def test_a_long_timeline_is_drawn_with_the_worst_of_each_bucket():
    times = [float(t) for t in range(7200)]
    temps = [60] * 7200
    temps[5001] = 90
    ts, vs = burnin_plot.buckets(times, temps, max)
    assert len(ts) == 600 and ts[:2] == [0.0, 12.0] and max(vs) == 90 and vs.count(90) == 1
