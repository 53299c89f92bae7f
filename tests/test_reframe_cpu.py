"""The host GEMM check, run for real through ReFrame on this GPU-less machine, judged and exported."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rfm_support import render_config, run_reframe

from gpuaccept.probe import facts as node_facts

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]
# Synthetic references: one the host GEMM passes on any working CPU, one it cannot reach. They exercise the
# plumbing (ReFrame judging, verdict, textfile), not this machine's speed.
REF = """\
schema: gpuaccept.references/1
node_type: {name}
description: CI host without GPUs (synthetic test references)
match: {{gpu_count: 0}}
sources:
  synthetic: {{kind: synthetic, date: 2026-11-22, reference: "tests/test_reframe_cpu.py: plumbing test"}}
checks:
  cpu_gemm:
    dgemm_gflops: {{value: {dgemm}, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    sgemm_gflops: {{value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    dgemm_scaling_efficiency: {{value: 0.5, unit: ratio, lower: 0.95, wide_tolerance: CI test, source: synthetic}}
    dgemm_peak_fraction: {{value: 0.001, unit: ratio, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    sgemm_peak_fraction: {{value: 0.001, unit: ratio, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    blas_optimized_core: {{informational: "CI's CPU model is not ours to choose (tests/test_build.py judges the
      generic-core case)", unit: count, source: synthetic}}
"""
# The host HPL (hpcc, Debian's package; make test installs it): judged where hpcc is installed, at a tiny N.
HPCC = shutil.which("hpcc")
REF_HPL = """\
  hpl_host:
    gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}
    residual_max: {value: 1.0, unit: ratio, upper: 15.0, wide_tolerance: CI test, source: synthetic}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("rfm")
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_pass.yaml").write_text(REF.format(name="ci_pass", dgemm=1.0) + (REF_HPL if HPCC else ""))
    (refs / "ci_fail.yaml").write_text(REF.format(name="ci_fail", dgemm=1.0e6) + (REF_HPL if HPCC else ""))
    facts = node_facts.gather()
    assert not facts["gpus"], "this test expects a machine without NVIDIA GPUs"
    facts_file = base / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    out = {}
    for name, extra in (("ci_pass", ()), ("ci_fail", ()), ("ci_hang", ("-S", "time_limit=1s"))):
        run_dir = base / name
        run_dir.mkdir()
        node_type = "ci_pass" if name == "ci_hang" else name
        config = render_config(run_dir / "settings.py", node_type, refs, facts, facts_file)
        proc = run_reframe(config, run_dir, "commission", "-S", "bench_opts=--size,768,--window-s,0.5",
                            "-S", "HostHpl.hpl_n=1000", *extra)
        summary = subprocess.run([*GPUACCEPT, "summarize", "--run-dir", str(run_dir), "--node-type", node_type,
                                  "--suite", "commission", "--facts", str(facts_file), "--reference-dir", str(refs),
                                  "--textfile-dir", str(run_dir / "textfile")],
                                 capture_output=True, text=True, check=False)
        out[name] = (run_dir, proc, summary)
    return out


def rows(run_dir: Path) -> dict:
    doc = json.loads((run_dir / "verdict.json").read_text())
    return {(r["check"], r["metric"]): r for r in doc["rows"]}, doc


def test_cpu_gemm_runs_and_passes_through_reframe(runs):
    run_dir, proc, summary = runs["ci_pass"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert summary.returncode == 0, summary.stdout + summary.stderr
    table, doc = rows(run_dir)
    assert doc["verdict"] == "pass"
    assert table[("cpu_gemm", None)]["status"] == "pass"
    assert table[("cpu_gemm", "dgemm_gflops")]["value"] > 0.9
    # The benchmark's own document is kept with the run (nothing lost).
    docs = list((run_dir / "reframe" / "output").rglob("cpu_gemm.json"))
    assert len(docs) == 1
    bench = json.loads(docs[0].read_text())
    assert bench["verification"]["passed"] is True
    assert bench["results"]["blas"]["library"] in ("Intel MKL", "OpenBLAS")
    # GPU checks are reported as not run, with the reason, never as passed.
    for key in ("bandwidth", "gemm"):
        assert table[(key, None)]["status"] == "not_run"
        assert "no NVIDIA GPU found" in table[(key, None)]["reason"]
    assert "ACCEPTED" in summary.stdout and "NOT RUN" in summary.stdout
    assert (run_dir / "gpuaccept.prom").read_text() == (run_dir / "textfile" / "gpuaccept_commission.prom").read_text()


def test_cpu_gemm_below_reference_fails(runs):
    run_dir, proc, summary = runs["ci_fail"]
    assert proc.returncode == 0, "ReFrame records; the judge alone fails a figure"
    assert summary.returncode == 1
    table, doc = rows(run_dir)
    assert doc["verdict"] == "fail" and doc["failed_checks"] == ["cpu_gemm"]
    assert table[("cpu_gemm", "dgemm_gflops")]["status"] == "fail"
    assert table[("cpu_gemm", "sgemm_gflops")]["status"] == "pass"
    assert "REJECTED" in summary.stdout


def test_a_benchmark_past_its_time_limit_fails_the_check(runs):
    """A hung benchmark: ReFrame stops it at the check's time limit and the verdict says so."""
    run_dir, proc, summary = runs["ci_hang"]
    assert proc.returncode == 1
    assert summary.returncode == 1
    table, _doc = rows(run_dir)
    check = table[("cpu_gemm", None)]
    assert check["status"] == "fail" and "job timed out" in check["reason"], check


def test_host_hpl_runs_through_reframe(runs):
    """hpcc's HPL for real, judged by gpuaccept.hpl through the HostHpl check."""
    if HPCC is None:  # like every other tool the tests need: a failure, not a skip
        pytest.fail("hpcc not found: make test installs it (scripts/deps.sh; apt-get install hpcc)")
    run_dir, _proc, _summary = runs["ci_pass"]
    table, _doc = rows(run_dir)
    assert table[("hpl_host", None)]["status"] == "pass", table[("hpl_host", None)]
    assert table[("hpl_host", "gflops")]["value"] > 0
    assert table[("hpl_host", "residual_max")]["value"] < 16
    outputs = list((run_dir / "reframe" / "output").rglob("hpccoutf.txt"))
    assert len(outputs) == 1 and "End of Tests." in outputs[0].read_text()
