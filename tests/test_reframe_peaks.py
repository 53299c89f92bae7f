"""BenchCheck's ``peak_fractions``: after the benchmark, ``gpuaccept annotate peaks`` annotates its document in the job
itself. Run for real through ReFrame with the host GEMM check (this machine has no GPU, so the document gets
a ``peak`` block and no fractions: the plumbing, not the figures, which tests/test_peaks.py covers), once with
the peaks file and once without it, where the job must fail and say so instead of passing unannotated."""

import json
import re
import shutil

import pytest
from conftest import REFERENCE_DIR
from rfm_support import render_config, run_reframe

from gpuaccept.probe import facts as node_facts

REF = """\
schema: gpuaccept.references/1
node_type: ci_peaks
description: CI host without GPUs (synthetic test references)
match: {gpu_count: 0}
sources:
  synthetic: {kind: synthetic, date: 2026-11-23, reference: "tests/test_reframe_peaks.py: plumbing test"}
checks:
  cpu_gemm:
    dgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: plumbing test, source: synthetic}
    sgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: plumbing test, source: synthetic}
    dgemm_scaling_efficiency: {informational: plumbing test, unit: ratio, source: synthetic}
    dgemm_peak_fraction: {informational: plumbing test, unit: ratio, source: synthetic}
    sgemm_peak_fraction: {informational: plumbing test, unit: ratio, source: synthetic}
    blas_optimized_core: {informational: plumbing test, unit: count, source: synthetic}
"""


def run_check(base, with_peaks: bool):
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_peaks.yaml").write_text(REF)
    if with_peaks:
        (refs / "datasheets").mkdir()
        shutil.copy(REFERENCE_DIR / "datasheets" / "gpu_peaks.yaml", refs / "datasheets" / "gpu_peaks.yaml")
    facts = node_facts.gather()
    facts_file = base / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    run_dir = base / "run"
    run_dir.mkdir()
    config = render_config(run_dir / "settings.py", "ci_peaks", refs, facts, facts_file)
    opts = ["-S", "bench_opts=--size,256,--window-s,0.1,--threads,1", "-S", "peak_fractions=true"]
    proc = run_reframe(config, run_dir, "commission", "-n", "CpuGemm", *opts)
    report = json.loads((run_dir / "reframe-report.json").read_text())
    (case,) = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("CpuGemm")]
    (doc,) = list((run_dir / "reframe").rglob("cpu_gemm.json"))
    return proc, case, json.loads(doc.read_text())


@pytest.fixture(scope="module")
def annotated(tmp_path_factory):
    return run_check(tmp_path_factory.mktemp("rfm-peaks"), with_peaks=True)


@pytest.fixture(scope="module")
def no_table(tmp_path_factory):
    return run_check(tmp_path_factory.mktemp("rfm-peaks-missing"), with_peaks=False)


def test_the_job_annotates_the_document_and_passes(annotated):
    proc, case, doc = annotated
    assert proc.returncode == 0 and case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    assert doc["peak"]["file"].endswith("datasheets/gpu_peaks.yaml") and doc["peak"]["fractions"] == {}


def test_a_missing_peaks_file_fails_the_job(no_table):
    proc, case, doc = no_table
    assert proc.returncode == 1 and case["result"] == "fail"
    assert re.search(r"exit(ed| code) 4", case["fail_reason"]) and "peak" not in doc
