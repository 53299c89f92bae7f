"""`make accept` on a lent 4 x H200 machine (tests/fixtures/multigpu_h200x4, docs/evidence/2026-11-27-multigpu),
judged again against today's references: the healthy commission, nightly and burn-in runs are ACCEPTED; the
nightly with a foreign load on GPU 1 is REJECTED naming GPU 1 alone, every other GPU's rows PASS; HPL-CUDA ran over
all four GPUs with the panel GPU to GPU by NCCL and multicast off, at 0.95 or more of four times the one-GPU rate
of the same machine; the memory test's self-test names each flipped word."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES
from judge_support import judged_node_figures, rejudge_today, unpack_results

from gpuaccept.judge import verdict
from gpuaccept.results import scaling

HERE = FIXTURES / "multigpu_h200x4"
COMMISSION, NIGHTLY, FOREIGN = "20261127T172659Z-commission", "20261127T173454Z-nightly", "20261127T173640Z-nightly"
BURNIN, NIGHTLY_2 = "20261127T174247Z-burnin", "20261127T174439Z-nightly"
GPU1 = "GPU 1 (bus 00000000:00:07.0, serial 1653924043656)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    return unpack_results(tmp_path_factory.mktemp("h200x4"), HERE / "results.tar.gz")


@pytest.mark.parametrize("name", [COMMISSION, NIGHTLY, NIGHTLY_2, BURNIN])
def test_the_healthy_runs_are_accepted_by_todays_references(runs, name):
    v = rejudge_today(runs / name)
    assert v.accepted, verdict.table(v)
    assert v.node_type == "h200_x4" and len(v.facts["gpus"]) == 4
    gpus = {r.gpu for r in v.rows if r.gpu is not None}
    assert gpus == ({0, 1, 2, 3} if name != BURNIN else gpus)


def test_the_node_level_figures_are_judged_against_the_4_gpu_references(runs):
    """NCCL, peer copies, every GPU at once and HPL-CUDA of the node: judged (measured on this machine), not shown
    as informational."""
    v = rejudge_today(runs / COMMISSION)
    judged = judged_node_figures(v)
    assert {("nccl", "allreduce_busbw_gbps_max"), ("bandwidth", "p2p_read_min"), ("gemm", "fp8_concurrent_tflops_min"),
            ("hpl_cuda", "tflops"), ("hplstyle", "tflops_sum")} <= judged  # fmt: skip


def test_a_foreign_load_on_gpu_1_rejects_naming_gpu_1_alone(runs):
    v = rejudge_today(runs / FOREIGN)
    # the bands, the health rules, and the deviation rules (siblings, own commissioning run) each name GPU 1
    assert not v.accepted and set(v.failed_checks()) == {"gemm", "health", "power", "siblings", "baseline"}, \
        verdict.table(v)
    per_gpu_failed = {r.gpu for r in v.rows if r.gpu is not None and r.status == verdict.FAIL}
    assert per_gpu_failed == {1}
    for gpu in (0, 2, 3):
        rows = [r for r in v.rows if r.gpu == gpu and r.expected and r.status not in (verdict.INFO, verdict.WAIVED)]
        assert rows and all(r.status == verdict.PASS for r in rows), gpu
    for check in ("gemm", "power", "siblings", "baseline"):
        assert GPU1 in next(r for r in v.rows if r.check == check and r.metric is None).reason
    health = next(r for r in v.rows if r.check == "health" and r.metric is None)
    assert health.reason.startswith(GPU1) and "compute process pid" in health.reason
    assert "GPU 0" not in health.reason and "GPU 2" not in health.reason and "GPU 3" not in health.reason


def test_hpl_cuda_ran_over_every_gpu_by_nccl_with_multicast_off(runs):
    doc = json.loads(next((runs / COMMISSION).rglob("hpl_cuda.json")).read_text())
    backend = doc["parameters"]["backend"]
    assert backend["gpus_used"] == backend["gpus_on_node"] == 4 and backend["grid"] == "1 x 4"
    assert backend["panel_broadcast"] == "nccl" and str(backend["nccl_nvls_enable"]) == "0"
    assert doc["verification"]["passed"] and doc["metrics"]["tflops"]["value"] > 180


def test_hpl_cuda_on_four_gpus_is_at_least_095_of_four_times_one_of_the_same_machine():
    docs = [json.loads(p.read_text()) for p in sorted((HERE / "hpl_scaling").glob("hpl_cuda-*.json"))]
    (s,) = scaling.scale(r for d in docs for r in scaling.runs_of_document(d))
    assert s.counts == [1, 2, 4] and s.base is not None
    by_grid = {r.grid: s.fraction(r) for r in s.runs if r.gpus == 4}
    assert by_grid["1 x 4"] >= 0.95  # 180.43 TFLOP/s against 4 x 45.02
    assert by_grid["2 x 2"] > 0.9  # the 2-D grid passed HPL's residual check too, slower on one node
    assert all(d["verification"]["passed"] for d in docs)


def test_the_memory_tests_self_test_names_each_flipped_word():
    doc = json.loads((HERE / "memtest-selftest.json").read_text())
    assert doc["verification"]["passed"] is False and doc["parameters"].get("inject_error") in (True, 1)
    failures = doc["verification"]["failures"]
    assert len(failures) == 4 and all("bit 30" in f and "moving_inversions_ones_zeros" in f for f in failures)
    assert {f.split(" (bus")[0] for f in failures} == {f"GPU {i}" for i in range(4)}


def test_the_runs_manifest_holds_and_refuses_an_edited_document(runs, tmp_path):
    """`gpuaccept run` wrote each run's manifest on the GPU machine: judged again, the run shows no manifest row;
    a GEMM document edited afterwards is refused by name and the node is not accepted."""
    run = tmp_path / NIGHTLY
    shutil.copytree(runs / NIGHTLY, run)
    assert (run / "manifest.json").is_file()
    assert not [r for r in rejudge_today(run).rows if r.check == "inputs"]
    gemm = next(run.rglob("gemm.json"))
    gemm.write_text(gemm.read_text().replace('"fp64_tflops_min"', '"fp64_tflops_min" ', 1))
    v = rejudge_today(run)
    assert not v.accepted
    assert any(r.check == "inputs" and r.status == verdict.FAIL and "gemm.json" in r.reason for r in v.rows), (
        verdict.table(v)
    )
