"""`make accept` on a lent 1 x H100 machine (tests/fixtures/h100_burnin_commission,
docs/evidence/2026-11-27-h200x2-h100-burnin), judged again against today's references: a two-minute burn-in and a
commission run, both ACCEPTED. The burn-in sampled the GPU about once a second, alternated GEMM and memory-test
windows, and saw only the power cap among the throttle reasons; commission ran every expected check, the memory
test and HPL-CUDA included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES
from judge_support import rejudge_today, unpack_results

from gpuaccept.judge import verdict

HERE = FIXTURES / "h100_burnin_commission"
BURNIN, COMMISSION = "20261127T193258Z-burnin", "20261127T193646Z-commission"
SERIAL = "1652724067783"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    return unpack_results(tmp_path_factory.mktemp("h100"), HERE / "results.tar.gz")


@pytest.mark.parametrize("name", [BURNIN, COMMISSION])
def test_both_runs_are_accepted_by_todays_references(runs, name):
    v = rejudge_today(runs / name)
    assert v.accepted, verdict.table(v)
    assert v.node_type == "h100_sxm5_80gb" and len(v.facts["gpus"]) == 1
    assert v.facts["gpus"][0]["serial"] == SERIAL


def test_the_burn_in_judged_every_rule_on_the_gpu(runs):
    v = rejudge_today(runs / BURNIN)
    rows = {r.metric: r for r in v.rows if r.check == "burnin" and r.gpu == 0}
    for metric in ("tflops_last_over_first_min", "gpu_temp_max_c", "throttle_other_samples", "xid_events",
                   "ecc_uncorrectable_new", "remapped_rows_pending", "gemm_windows_min"):  # fmt: skip
        assert metric in rows, sorted(rows)
    assert 0.9 <= rows["tflops_last_over_first_min"].value <= 1.1
    assert rows["xid_events"].value == 0 and rows["throttle_other_samples"].value == 0
    assert not [r for r in v.rows if r.check == "burnin" and r.status == verdict.FAIL]


def test_the_burn_in_sampled_once_a_second_and_alternated_gemm_and_memory_test(runs):
    doc = json.loads(next((runs / BURNIN).rglob("burnin.json")).read_text(encoding="utf-8"))
    assert doc["parameters"]["duration_s"] == 120 and doc["parameters"]["sample_interval_s"] == 1
    gpu = doc["results"]["per_gpu"][0]
    assert 110 <= gpu["samples"] <= 130, gpu["samples"]
    kinds = [w["kind"] for w in gpu["windows"]]
    assert kinds[:2] == ["gemm", "memtest"] and kinds.count("memtest") >= 2, kinds
    assert all(w["passed"] and w["exit_status"] == 0 for w in gpu["windows"])
    assert {e["reason"] for e in gpu["reason_episodes"]} <= {"gpu_idle", "sw_power_cap"}


def test_commission_ran_every_expected_check_the_memory_test_and_hpl_cuda_included(runs):
    v = rejudge_today(runs / COMMISSION)
    assert not [r for r in v.rows if r.expected and r.status in (verdict.FAIL, verdict.NOT_RUN)], verdict.table(v)
    checks = {r.check for r in v.rows if r.status == verdict.PASS}
    assert {"memtest", "hpl_cuda", "gemm", "bandwidth", "hplstyle", "power", "health", "cpu_gemm"} <= checks, checks
