"""The `make accept` runs on the lent multi-GPU machines at one revision (764587a), each GPU count over two machine
starts on two boards, judged again against today's references: every one ACCEPTED, every GPU of the node judged,
HPL-CUDA over every GPU with the panel by NCCL and NVLink multicast off.

- 4 x H200: ten runs (tests/fixtures/multigpu_h200x4_one_revision, docs/evidence/2026-11-27-h200x4-one-revision);
- 2 x H200: nine runs (tests/fixtures/multigpu_h200x2_one_revision, docs/evidence/2026-11-27-h200x2-one-revision).

The commission runs measured their host copies in the cases metrics come from (`--cases metrics --perturbation
0`) and judged every figure they judged before."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, suite_bench_opts
from judge_support import judged_node_figures, rejudge_today, unpack_results

from gpuaccept.judge import verdict

REVISION = "764587a"


@dataclass(frozen=True)
class Recorded:
    node_type: str
    gpus: int
    fixture: str
    commission: str
    starts: tuple[tuple[str, ...], tuple[str, ...]]  # the run directories of each machine start

    @property
    def names(self) -> list[str]:
        return [*self.starts[0], *self.starts[1]]


RECORDED = {
    "h200_x4": Recorded("h200_x4", 4, "multigpu_h200x4_one_revision", "20261127T214532Z-commission", (
        ("20261127T214532Z-commission", "20261127T215147Z-nightly", "20261127T215327Z-nightly",
         "20261127T215510Z-nightly", "20261127T215655Z-nightly", "20261127T215839Z-nightly"),
        ("20261127T220239Z-nightly", "20261127T220422Z-nightly", "20261127T220605Z-nightly",
         "20261127T220747Z-nightly"))),
    "h200_x2": Recorded("h200_x2", 2, "multigpu_h200x2_one_revision", "20261127T235946Z-commission", (
        ("20261127T235116Z-nightly", "20261127T235246Z-nightly", "20261127T235433Z-nightly"),
        ("20261127T235946Z-commission", "20261128T000546Z-nightly", "20261128T000736Z-nightly",
         "20261128T000925Z-nightly", "20261128T001114Z-nightly", "20261128T001257Z-nightly"))),
}  # fmt: skip
EACH_RUN = [(t, n) for t, rec in RECORDED.items() for n in rec.names]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """node type -> the folder its two starts' `results.tar.gz` were unpacked into (results/localhost)."""
    return {t: unpack_results(tmp_path_factory.mktemp(t), FIXTURES / rec.fixture / "start1-results.tar.gz",
                              FIXTURES / rec.fixture / "start2-results.tar.gz")
            for t, rec in RECORDED.items()}  # fmt: skip


@pytest.mark.parametrize("node_type", sorted(RECORDED))
def test_each_fixture_holds_its_runs_and_no_other(recorded, node_type):
    assert sorted(p.name for p in recorded[node_type].iterdir() if p.is_dir()) == sorted(RECORDED[node_type].names)


@pytest.mark.parametrize(("node_type", "name"), EACH_RUN)
def test_every_run_is_accepted_by_todays_references_with_every_gpu_judged(recorded, node_type, name):
    v = rejudge_today(recorded[node_type] / name)
    assert v.accepted, verdict.table(v)
    gpus = RECORDED[node_type].gpus
    assert v.node_type == node_type and len(v.facts["gpus"]) == gpus
    assert {r.gpu for r in v.rows if r.gpu is not None} == set(range(gpus))
    # nothing expected was left unjudged, nothing judged went without a reference
    assert not [r for r in v.rows if r.expected and r.status not in (verdict.PASS, verdict.INFO, verdict.WAIVED)]


@pytest.mark.parametrize(("node_type", "name"), EACH_RUN)
def test_every_run_ran_the_one_revision(recorded, node_type, name):
    """The Python probes record the tree that was sent (the lent machine's own git answers with the commit its
    session started at: each evidence folder's README)."""
    health = json.loads(next((recorded[node_type] / name).rglob("health.json")).read_text())
    assert health["git_revision"] == REVISION


@pytest.mark.parametrize("node_type", sorted(RECORDED))
def test_the_two_machine_starts_had_different_gpus(recorded, node_type):
    rec = RECORDED[node_type]

    def serials(name: str) -> set[str]:
        facts = json.loads((recorded[node_type] / name / "node-facts.json").read_text())
        return {g["serial"] for g in facts["gpus"]}

    first, second = (serials(start[0]) for start in rec.starts)
    assert len(first) == len(second) == rec.gpus and not first & second
    assert all(serials(n) == first for n in rec.starts[0]) and all(serials(n) == second for n in rec.starts[1])


@pytest.mark.parametrize("node_type", sorted(RECORDED))
def test_the_commission_run_swept_the_host_copies_the_metrics_come_from(recorded, node_type):
    doc = json.loads(next((recorded[node_type] / RECORDED[node_type].commission).rglob("bandwidth.json")).read_text())
    assert all(o in doc["command_line"] for o in suite_bench_opts("commission", "GpuBandwidth"))
    assert doc["parameters"]["cases"] == ["h2d_pinned_oneway", "d2h_pinned_oneway", "d2d_oneway"]
    assert doc["parameters"]["host_sweep_sizes"] == [2**k for k in range(31)]
    # what the shorter sweep gives is what the whole sweep gave: the judged copies and the host figures
    for metric in ("h2d_pinned_min", "d2h_pinned_min", "bidir_pinned_min", "h2d_pageable_min", "d2h_pageable_min",
                   "d2d_min", "p2p_bidir_min", "latency_h2d_max", "latency_d2h_max", "h2d_fit_lo_max",
                   "d2h_fit_lo_max"):  # fmt: skip
        assert metric in doc["metrics"], metric


@pytest.mark.parametrize("node_type", sorted(RECORDED))
def test_the_commission_run_judged_the_node_level_figures_with_hpl_over_every_gpu(recorded, node_type):
    run = recorded[node_type] / RECORDED[node_type].commission
    judged = judged_node_figures(rejudge_today(run))
    assert {("nccl", "allreduce_busbw_gbps_max"), ("bandwidth", "p2p_read_min"), ("gemm", "fp8_concurrent_tflops_min"),
            ("hpl_cuda", "tflops"), ("hplstyle", "tflops_sum"), ("hplstyle", "gflops_per_watt")} <= judged  # fmt: skip
    doc = json.loads(next(run.rglob("hpl_cuda.json")).read_text())
    backend = doc["parameters"]["backend"]
    assert backend["gpus_used"] == RECORDED[node_type].gpus and backend["panel_broadcast"] == "nccl"
    assert str(backend["nccl_nvls_enable"]) == "0" and doc["verification"]["passed"]
