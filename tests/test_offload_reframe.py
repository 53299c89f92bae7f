"""The offload checks as gpuaccept run judged them on the H100 (tests/fixtures/offload_reframe, issue 27): judged
again to the same rows, every offload figure reported and none judged against another machine, and a node's own
baseline flagging the node whose copies stop overlapping or whose PCIe model stops predicting (seed 002)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, REFERENCE_DIR

from gpuaccept import references
from gpuaccept.judge import summarize, verdict

RUN = FIXTURES / "offload_reframe" / "results" / "vm" / "20261126T022443Z-evaluation"
OUT = Path("reframe") / "output" / "gpuaccept" / "node" / "builtin"
OFFLOAD = ("overlap", "offload_gemm", "fft_offload")


@pytest.fixture
def run(tmp_path):
    copy = tmp_path / "results" / "vm" / RUN.name
    shutil.copytree(RUN, copy)
    return copy


def judge(run_dir: Path) -> verdict.Verdict:
    facts = json.loads((run_dir / "node-facts.json").read_text())
    return summarize.judge_run_dir(run_dir, facts, REFERENCE_DIR, "h100_sxm5_80gb", "evaluation")[0]


def rows(v: verdict.Verdict) -> dict[tuple, verdict.Row]:
    return {(r.check, r.metric): r for r in v.rows}


def set_metric(run_dir: Path, metric: str, value: float) -> None:
    path = run_dir / OUT / "GpuOverlap" / "overlap.json"
    doc = json.loads(path.read_text())
    doc["metrics"][metric]["value"] = value
    path.write_text(json.dumps(doc))


def test_the_recorded_run_is_judged_again_to_its_rows(run):
    recorded = {(r["check"], r["metric"]): r for r in json.loads((RUN / "verdict.json").read_text())["rows"]}
    again = rows(judge(run))
    for check in ("bandwidth", *OFFLOAD):
        keys = {k for k in recorded if k[0] == check}
        assert keys and keys == {k for k in again if k[0] == check}, check
        for key in keys:
            assert (again[key].status, again[key].value) == (recorded[key]["status"], recorded[key]["value"]), key


def test_every_offload_figure_is_reported_and_owned_by_the_host(run):
    r = rows(judge(run))
    for check in OFFLOAD:
        assert r[(check, None)].status == "pass", check
        figures = [row for (c, m), row in r.items() if c == check and m is not None]
        assert figures and {row.status for row in figures} <= {"info", "waived"}, check
        assert {row.owner for row in figures if row.status == "info"} == {"host"}, check
    fft = r[("fft_offload", "fft3d_fp32_speedup_pinned")]
    assert fft.value == pytest.approx(20.378, rel=1e-4)  # FFTW 3.3.10, 16 threads, 2^27 points


def write_baseline(run_dir: Path) -> None:
    (run_dir.parent / references.NODE_BASELINE_FILE).write_text("""\
schema: gpuaccept.node_baseline/1
node: vm
node_type: h100_sxm5_80gb
description: vm's own overlap figures
sources:
  vm: {kind: measured, machine: vm, date: 2026-11-26, runs: 3, statistic: median, evidence: results/vm}
checks:
  overlap:
    duplex_overlap_min: {value: 0.8, unit: ratio, lower: 0.25, source: vm, band: 3 accepted runs of vm}
    model_rel_error_max: {value: 0.4, unit: ratio, upper: 0.5, source: vm, band: 3 accepted runs of vm}
""")


def test_a_node_baseline_flags_copies_that_stop_overlapping(run):
    write_baseline(run)
    healthy = rows(judge(run))
    for metric in ("duplex_overlap_min", "model_rel_error_max"):
        row = healthy[("overlap", metric)]
        assert row.status == "pass" and row.owner == "host" and row.reference is not None, metric
    set_metric(run, "duplex_overlap_min", 0.3)  # H2D and D2H serialised: the copy engines no longer overlap
    row = rows(judge(run))[("overlap", "duplex_overlap_min")]
    assert row.status == "fail" and row.owner == "host", row.reason


def test_a_node_baseline_flags_a_model_error_that_jumps(run):
    write_baseline(run)
    set_metric(run, "model_rel_error_max", 0.9)
    r = rows(judge(run))
    assert r[("overlap", "model_rel_error_max")].status == "fail"
    assert r[("overlap", "duplex_overlap_min")].status == "pass"
