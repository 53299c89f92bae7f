"""`make accept` on a lent 2 x H200 machine started twice (tests/fixtures/multigpu_h200x2,
docs/evidence/2026-11-27-h200x2-h100-burnin), judged again against today's references: the commission run and the
four nightly runs are ACCEPTED with both GPUs' rows and the node-level figures judged; the burn-in with a foreign
BF16 matmul started on GPU 1 halfway through is REJECTED on burnin and health naming GPU 1 alone, from 67 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES
from judge_support import judged_node_figures, rejudge_today, unpack_results

from gpuaccept.judge import verdict

HERE = FIXTURES / "multigpu_h200x2"
COMMISSION, BURNIN = "20261127T190859Z-commission", "20261127T192119Z-burnin"
NIGHTLY = ["20261127T192405Z-nightly", "20261127T192543Z-nightly", "20261127T192711Z-nightly",
           "20261127T192856Z-nightly"]  # fmt: skip
GPU1 = "GPU 1 (bus 00000000:00:07.0, serial 1653724056919)"
NODE_LEVEL = {("nccl", f"{c}_busbw_gbps_max") for c in ("allreduce", "allgather", "reducescatter", "broadcast")} | {
    ("bandwidth", "p2p_bidir_min"), ("bandwidth", "p2p_read_min"), ("bandwidth", "p2p_write_min"),
    ("gemm", "fp8_concurrent_tflops_min"), ("gemm", "bf16_concurrent_tflops_min"),
    ("gemm", "fp64_concurrent_tflops_min"), ("hpl_cuda", "tflops"), ("hplstyle", "tflops_sum"),
    ("hplstyle", "gflops_per_watt"),
}  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Both machine starts' results in one folder: start A's commission, start B's burn-in and nightly runs."""
    archives = (HERE / "results-commission.tar.gz", HERE / "results.tar.gz")
    return unpack_results(tmp_path_factory.mktemp("h200x2"), *archives)


def test_the_fixture_holds_both_machine_starts(runs):
    assert sorted(p.name for p in runs.iterdir()) == sorted([COMMISSION, BURNIN, *NIGHTLY])


@pytest.mark.parametrize("name", [COMMISSION, *NIGHTLY])
def test_the_healthy_runs_are_accepted_by_todays_references(runs, name):
    v = rejudge_today(runs / name)
    assert v.accepted, verdict.table(v)
    assert v.node_type == "h200_x2" and len(v.facts["gpus"]) == 2
    assert {r.gpu for r in v.rows if r.gpu is not None} == {0, 1}


def test_the_node_level_figures_are_judged_against_the_2_gpu_references(runs):
    """NCCL, peer copies, every GPU at once, HPL-CUDA and the HPL-style LU of the node: judged (measured on this
    machine), not shown as informational."""
    v = rejudge_today(runs / COMMISSION)
    judged = judged_node_figures(v)
    assert judged >= NODE_LEVEL, verdict.table(v)
    latency = next(r for r in v.rows if (r.check, r.metric) == ("nccl", "allreduce_latency_us"))
    assert latency.status == verdict.INFO  # informational, as on h200_x4


@pytest.mark.parametrize("name", NIGHTLY)
def test_the_nightly_runs_judge_the_peer_copies_and_every_gpu_at_once(runs, name):
    v = rejudge_today(runs / name)
    judged = judged_node_figures(v)
    assert {k for k in NODE_LEVEL if k[0] in ("bandwidth", "gemm")} <= judged, verdict.table(v)


def test_a_foreign_load_on_gpu_1_during_the_burn_in_rejects_naming_gpu_1_alone(runs):
    v = rejudge_today(runs / BURNIN)
    assert not v.accepted and set(v.failed_checks()) == {"burnin", "health"}, verdict.table(v)
    assert v.node_type == "h200_x2" and len(v.facts["gpus"]) == 2
    burnin = next(r for r in v.rows if r.check == "burnin" and r.metric is None)
    assert burnin.reason.startswith(GPU1) and "pid 2300" in burnin.reason
    assert "ran on it from 67 s (2026-11-27T19:22:30Z)" in burnin.reason
    assert "0.446 of the first" in burnin.reason
    health = next(r for r in v.rows if r.check == "health" and r.metric is None)
    assert health.reason.startswith(GPU1) and "compute process pid 2300" in health.reason
    for row in (burnin, health):
        assert "GPU 0" not in row.reason
    gpu0 = [r for r in v.rows if r.gpu == 0]
    assert gpu0 and all(r.status in (verdict.PASS, verdict.INFO) for r in gpu0), verdict.table(v)
    assert not [r for r in v.rows if r.gpu is not None and r.gpu != 1 and r.status == verdict.FAIL]


def test_the_two_gpu_run_set_over_two_machine_starts_holds(runs):
    """Every healthy run's node facts, before and after its suite, show the same two H200s with all 18 NVLink links
    up; the two starts were two boards (different serials), each judged as h200_x2."""
    serials = {}
    for name in (COMMISSION, *NIGHTLY):
        for facts_file in ("node-facts.json", "node-facts-end.json"):
            facts = json.loads((runs / name / facts_file).read_text())
            gpus = facts["gpus"]
            assert len(gpus) == 2 and {g["name"] for g in gpus} == {"NVIDIA H200"}, (name, facts_file)
            assert all(sum(link["state"] == "up" for link in g["nvlink"]["links"]) == 18 for g in gpus)
            serials.setdefault(name, {g["serial"] for g in gpus})
    assert len({frozenset(s) for s in serials.values()}) == 2  # start A's board, start B's board
    assert all(serials[n] == serials[NIGHTLY[0]] for n in NIGHTLY) and serials[COMMISSION] != serials[NIGHTLY[0]]
