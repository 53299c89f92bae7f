"""BenchCheck's ``sample_power``: the host GEMM check run for real through ReFrame under the power sampler.

This machine has no GPU: the sampler cannot read one, so the check must fail and say why (power is never
passed unmeasured), while the benchmark's and the sampler's documents are both kept."""

import json

import pytest
from rfm_support import render_config, run_reframe

from gpuaccept import facts as node_facts

REF = """\
schema: gpuaccept.references/1
node_type: ci_power
description: CI host without GPUs (synthetic test references)
match: {gpu_count: 0}
sources:
  synthetic: {kind: synthetic, date: 2026-11-22, reference: "tests/test_reframe_power.py: plumbing test"}
checks:
  cpu_gemm:
    dgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, source: synthetic}
    sgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, source: synthetic}
    dgemm_scaling_efficiency: {informational: plumbing test, unit: ratio, source: synthetic}
    energy_j: {value: 100.0, unit: J, lower: 0.99, upper: 100.0, source: synthetic}
    power_avg_w: {value: 100.0, unit: W, lower: 0.99, upper: 100.0, source: synthetic}
    power_peak_w: {informational: plumbing test, unit: W, source: synthetic}
    gflops_per_watt: {informational: plumbing test, unit: GFLOP/s/W, source: synthetic}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("rfm-power")
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_power.yaml").write_text(REF)
    facts = node_facts.gather()
    assert not facts["gpus"], "this test expects a machine without NVIDIA GPUs"
    facts_file = base / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    run_dir = base / "run"
    run_dir.mkdir()
    config = render_config(run_dir / "settings.py", "ci_power", refs, facts, facts_file)
    proc = run_reframe(
        config,
        run_dir,
        "commission",
        "-n",
        "CpuGemm",
        "-S",
        "bench_opts=--size,512,--window-s,0.3,--threads,1",
        "-S",
        "sample_power=true",
        "-S",
        "efficiency_metric=dgemm_gflops",
    )
    return run_dir, proc


def test_power_sampled_check_without_gpus_fails_and_says_why(run):
    run_dir, proc = run
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((run_dir / "reframe-report.json").read_text())
    cases = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("CpuGemm")]
    assert cases and cases[0]["result"] == "fail"
    reason = cases[0]["fail_reason"]
    assert "power sampler: cannot read the GPUs" in reason
    assert "metric 'energy_j' is referenced for node type ci_power but was waived" in reason
    # The benchmark ran under the sampler, and both documents are kept (a failed test's stage directory).
    power_docs = list((run_dir / "reframe").rglob("power.json"))
    bench_docs = list((run_dir / "reframe").rglob("cpu_gemm.json"))
    assert len(power_docs) == 1 and len(bench_docs) == 1
    doc = json.loads(power_docs[0].read_text())
    assert doc["tool"] == "gpuaccept-sample" and doc["results"]["exit_status"] == 0
    assert doc["parameters"]["command"][0].endswith("gpuaccept-cpugemm")
    assert "--output" in doc["parameters"]["command"]
