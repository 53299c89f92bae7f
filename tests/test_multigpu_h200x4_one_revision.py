"""Ten `make accept` runs on the lent 4 x H200 machine at one revision (764587a), over two machine starts
(tests/fixtures/multigpu_h200x4_one_revision, docs/evidence/2026-11-27-h200x4-one-revision), judged again against
today's references: every one ACCEPTED, every GPU of the node judged, the two starts on different GPUs. The
commission run measured its host copies in the cases metrics come from (`--cases metrics --perturbation 0`), and
judged every figure it judged before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, suite_bench_opts
from judge_support import judged_node_figures, rejudge_today, unpack_results

from gpuaccept.judge import verdict

HERE = FIXTURES / "multigpu_h200x4_one_revision"
REVISION = "764587a"
COMMISSION = "20261127T214532Z-commission"
START_1 = [COMMISSION, "20261127T215147Z-nightly", "20261127T215327Z-nightly", "20261127T215510Z-nightly",
           "20261127T215655Z-nightly", "20261127T215839Z-nightly"]  # fmt: skip
START_2 = ["20261127T220239Z-nightly", "20261127T220422Z-nightly", "20261127T220605Z-nightly",
           "20261127T220747Z-nightly"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    return unpack_results(tmp_path_factory.mktemp("h200x4rev"), HERE / "start1-results.tar.gz",
                          HERE / "start2-results.tar.gz")  # fmt: skip


def test_the_fixture_holds_the_ten_runs_and_no_other(runs):
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == sorted(START_1 + START_2)


@pytest.mark.parametrize("name", START_1 + START_2)
def test_every_run_is_accepted_by_todays_references_with_every_gpu_judged(runs, name):
    v = rejudge_today(runs / name)
    assert v.accepted, verdict.table(v)
    assert v.node_type == "h200_x4" and len(v.facts["gpus"]) == 4
    assert {r.gpu for r in v.rows if r.gpu is not None} == {0, 1, 2, 3}
    # nothing expected was left unjudged, nothing judged went without a reference
    assert not [r for r in v.rows if r.expected and r.status not in (verdict.PASS, verdict.INFO, verdict.WAIVED)]


@pytest.mark.parametrize("name", START_1 + START_2)
def test_every_run_ran_the_one_revision(runs, name):
    """The Python probes record the tree that was sent (the lent machine's own git answers with the commit its
    session started at: docs/evidence/2026-11-27-h200x4-one-revision/README.md)."""
    health = json.loads(next((runs / name).rglob("health.json")).read_text())
    assert health["git_revision"] == REVISION


def test_the_two_machine_starts_had_different_gpus(runs):
    def serials(name: str) -> set[str]:
        facts = json.loads((runs / name / "node-facts.json").read_text())
        return {g["serial"] for g in facts["gpus"]}

    first, second = serials(START_1[0]), serials(START_2[0])
    assert len(first) == len(second) == 4 and not first & second
    assert all(serials(n) == first for n in START_1) and all(serials(n) == second for n in START_2)


def test_the_commission_run_swept_the_host_copies_the_metrics_come_from(runs):
    doc = json.loads(next((runs / COMMISSION).rglob("bandwidth.json")).read_text())
    assert all(o in doc["command_line"] for o in suite_bench_opts("commission", "GpuBandwidth"))
    assert doc["parameters"]["cases"] == ["h2d_pinned_oneway", "d2h_pinned_oneway", "d2d_oneway"]
    assert doc["parameters"]["host_sweep_sizes"] == [2**k for k in range(31)]
    # what the shorter sweep gives is what the whole sweep gave: the judged copies and the host figures
    for metric in ("h2d_pinned_min", "d2h_pinned_min", "bidir_pinned_min", "h2d_pageable_min", "d2h_pageable_min",
                   "d2d_min", "p2p_bidir_min", "latency_h2d_max", "latency_d2h_max", "h2d_fit_lo_max",
                   "d2h_fit_lo_max"):  # fmt: skip
        assert metric in doc["metrics"], metric


def test_the_commission_run_judged_the_node_level_figures(runs):
    v = rejudge_today(runs / COMMISSION)
    judged = judged_node_figures(v)
    assert {("nccl", "allreduce_busbw_gbps_max"), ("bandwidth", "p2p_read_min"), ("gemm", "fp8_concurrent_tflops_min"),
            ("hpl_cuda", "tflops"), ("hplstyle", "tflops_sum"), ("hplstyle", "gflops_per_watt")} <= judged  # fmt: skip
    doc = json.loads(next((runs / COMMISSION).rglob("hpl_cuda.json")).read_text())
    backend = doc["parameters"]["backend"]
    assert backend["gpus_used"] == 4 and backend["panel_broadcast"] == "nccl"
    assert str(backend["nccl_nvls_enable"]) == "0" and doc["verification"]["passed"]
