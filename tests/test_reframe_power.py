"""BenchCheck's ``sample_power``: the host GEMM check run for real through ReFrame under the power sampler.

This machine has no GPU: the sampler cannot read one, so the check must fail and say why (power is never
passed unmeasured), while the benchmark's and the sampler's documents are both kept.

The passing path runs the same check with a stand-in ``nvidia-smi`` on PATH (NVML cannot load here, so the
sampler falls back to nvidia-smi). The stand-in is written by this test, not recorded: it replays the streaming
query recorded on the H100 (docs/evidence/2026-11-22-h100-power/smi-stream.csv, real lines, in a loop) and
answers the device query with one line assembled from that machine's recorded ``nvidia-smi -q`` (name, UUID,
serial, bus id, enforced power limit, driver). It exercises the plumbing -- the fall-back back end, the
metrics joining the check's, gflops_per_watt -- not the power of this machine's CPU GEMM.
"""

import json
import os
import stat
import sys

import pytest
from conftest import RECORDED
from rfm_support import render_config, run_reframe

from gpuaccept.judge import verdict
from gpuaccept.probe import facts as node_facts

REF = """\
schema: gpuaccept.references/1
node_type: ci_power
description: CI host without GPUs (synthetic test references)
match: {gpu_count: 0}
sources:
  synthetic: {kind: synthetic, date: 2026-11-22, reference: "tests/test_reframe_power.py: plumbing test"}
checks:
  cpu_gemm:
    dgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}
    sgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}
    dgemm_scaling_efficiency: {informational: plumbing test, unit: ratio, source: synthetic}
    dgemm_peak_fraction: {informational: plumbing test, unit: ratio, source: synthetic}
    sgemm_peak_fraction: {informational: plumbing test, unit: ratio, source: synthetic}
    blas_optimized_core: {informational: plumbing test, unit: count, source: synthetic}
    energy_j: {value: 100.0, unit: J, lower: 0.99, upper: 100.0, wide_tolerance: CI test, source: synthetic}
    power_avg_w: {value: 100.0, unit: W, lower: 0.99, upper: 100.0, wide_tolerance: CI test, source: synthetic}
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
    """ReFrame records the run (it judges nothing); the judge fails the check from the two documents."""
    run_dir, proc = run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = verdict.load_report(run_dir / "reframe-report.json")
    facts = json.loads((run_dir.parent / "node-facts.json").read_text())
    v = verdict.build(report, facts, run_dir.parent / "refs", "ci_power", "commission", run_dir=run_dir)
    row = next(r for r in v.rows if r.check == "cpu_gemm" and r.metric is None)
    assert row.status == "fail" and "power sampler: cannot read the GPUs" in row.reason
    energy = next(r for r in v.rows if r.check == "cpu_gemm" and r.metric == "energy_j")
    assert energy.status == "fail" and "but node type ci_power expects a value" in energy.reason
    # The benchmark ran under the sampler, and both documents are kept (a failed test's stage directory).
    power_docs = list((run_dir / "reframe").rglob("power.json"))
    bench_docs = list((run_dir / "reframe").rglob("cpu_gemm.json"))
    assert len(power_docs) == 1 and len(bench_docs) == 1
    doc = json.loads(power_docs[0].read_text())
    assert doc["tool"] == "gpuaccept-sample" and doc["results"]["exit_status"] == 0
    assert doc["parameters"]["command"][0].endswith("gpuaccept-cpugemm")
    assert "--output" in doc["parameters"]["command"]


STAND_IN = """#!{python}
import sys, time
args = " ".join(sys.argv[1:])
if "enforced.power.limit" in args:
    print("0, NVIDIA H100 80GB HBM3, GPU-2a52442a-23d5-7401-9f76-21b9b464403e, 1752824029119, 00000000:00:06.0, "
          "700.00, 580.159.04")
elif "-lms=" in args:
    lines = [x for x in open({stream!r}).read().splitlines() if x.strip()]
    while True:
        for line in lines:
            print(line, flush=True)
            time.sleep(0.05)
else:
    print("0x0000000000000000")
"""

REF_PASS = REF.replace("ci_power", "ci_power_ok").replace(
    "energy_j: {value: 100.0, unit: J, lower: 0.99, upper: 100.0",
    "energy_j: {value: 100.0, unit: J, lower: 0.999, upper: 1000.0",
)


@pytest.fixture(scope="module")
def run_with_stand_in(tmp_path_factory):
    base = tmp_path_factory.mktemp("rfm-power-smi")
    bindir = base / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    stream = RECORDED / "2026-11-22-h100-power" / "smi-stream.csv"
    smi.write_text(STAND_IN.format(python=sys.executable, stream=str(stream)))
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_power_ok.yaml").write_text(REF_PASS)
    facts = node_facts.gather()
    facts_file = base / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    run_dir = base / "run"
    run_dir.mkdir()
    config = render_config(run_dir / "settings.py", "ci_power_ok", refs, facts, facts_file)
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{bindir}:{old_path}"
    try:
        proc = run_reframe(config, run_dir, "commission", "-n", "CpuGemm",
                           "-S", "bench_opts=--size,512,--window-s,0.3,--threads,1",
                           "-S", "sample_power=true", "-S", "efficiency_metric=dgemm_gflops")  # fmt: skip
    finally:
        os.environ["PATH"] = old_path
    return run_dir, proc


def test_power_sampled_check_passes_and_reports_power_metrics(run_with_stand_in):
    run_dir, proc = run_with_stand_in
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((run_dir / "reframe-report.json").read_text())
    (case,) = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("CpuGemm")]
    values = {k.rsplit(":", 1)[-1]: v[0] for k, v in case["perfvalues"].items()}
    units = {k.rsplit(":", 1)[-1]: v[4] for k, v in case["perfvalues"].items()}
    assert {"energy_j", "power_avg_w", "power_peak_w", "gflops_per_watt", "dgemm_gflops"} <= set(values)
    assert units["energy_j"] == "J" and units["power_avg_w"] == "W" and units["gflops_per_watt"] == "GFLOP/s/W"
    assert values["gflops_per_watt"] == pytest.approx(values["dgemm_gflops"] / values["power_avg_w"])
    (power_doc,) = list((run_dir / "reframe" / "output").rglob("power.json"))
    doc = json.loads(power_doc.read_text())
    assert doc["results"]["backend"] == "nvidia-smi" and doc["verification"]["passed"] is True
    assert doc["results"]["per_gpu"][0]["energy_source"] == "integrated_samples"
    assert 100 < values["power_avg_w"] < 720  # the recorded H100 stream: idle ~130 W to ~700 W under GEMM
