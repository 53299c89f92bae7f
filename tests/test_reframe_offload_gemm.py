"""GpuOffloadGemm through ReFrame for real: the partition has one GPU and the prebuilt binaries' directory
(``extras.bench_dir``) holds stand-ins for ``gpuaccept-xgemm`` and ``gpuaccept-cpugemm`` written by this test.
They copy the H100's recorded documents (tests/fixtures/offload_gemm/h100-1): the xgemm run, and the host's
document of the size asked for. What is tested is the plumbing -- the check in the evaluation suite, the host
tool run at each size on all cores after the benchmark, the crossover analysis rewriting the document, its
metrics reaching ReFrame, and a node without the host tool still reporting the rest -- while
tests/test_offload_gemm.py covers the figures."""

import json
import stat
import sys

import pytest
from conftest import ROOT
from rfm_support import run_reframe

from gpuaccept import rfmconfig

FIXTURE = ROOT / "tests" / "fixtures" / "offload_gemm" / "h100-1"
PRECISIONS = ("dgemm", "sgemm", "tf32", "bf16")
METRICS = [f"{p}_{m}_over_kernel_ratio" for p in PRECISIONS for m in ("pinned", "pageable")] + [
    f"{p}_crossover_n_{m}" for p in PRECISIONS for m in ("pinned", "pageable")
]

REF = """\
schema: gpuaccept.references/1
node_type: ci_offload_gemm
description: CI host with one synthetic GPU and stand-in benchmarks (synthetic test references)
match: {gpu_model: NVIDIA Test GPU, gpu_count: 1}
sources:
  synthetic: {kind: synthetic, date: 2026-11-26, reference: "tests/test_reframe_offload_gemm.py: plumbing test"}
checks:
  offload_gemm:
"""

# Each stand-in logs its command line and the pinning variables to CALLS, then copies a recorded document to
# --output (the host's: the one of --size), and exits with EXIT.
STAND_IN = """\
#!{python}
# Stand-in for {tool} (tests/test_reframe_offload_gemm.py).
import json, os, shutil, sys
args = sys.argv[1:]
with open({calls!r}, "a") as log:
    log.write(json.dumps({{"tool": {tool!r}, "args": args, "OMP_PROC_BIND": os.environ.get("OMP_PROC_BIND"),
                          "OMP_PLACES": os.environ.get("OMP_PLACES")}}) + "\\n")
src = {source!r}
if "--size" in args:
    src = src.format(size=args[args.index("--size") + 1])
if {write!r}:
    shutil.copy(src, args[args.index("--output") + 1])
sys.exit({exit})
"""


def stand_in(bindir, tool, calls, source, write=True, exit_code=0):
    path = bindir / tool
    path.write_text(STAND_IN.format(python=sys.executable, tool=tool, calls=str(calls), source=str(source),
                                    write=write, exit=exit_code))  # fmt: skip
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def run_check(base, host: str = "ok", *extra: str):
    """``host``: ``ok`` (the recorded host documents), ``absent`` (no gpuaccept-cpugemm) or ``failing`` (it exits
    1 and writes nothing)."""
    bindir = base / "bin"
    bindir.mkdir()
    calls = base / "calls.jsonl"
    stand_in(bindir, "gpuaccept-xgemm", calls, FIXTURE / "xgemm.json")
    if host != "absent":
        stand_in(bindir, "gpuaccept-cpugemm", calls, FIXTURE / "cpugemm-n{size}.json", write=host == "ok",
                 exit_code=0 if host == "ok" else 1)  # fmt: skip
    refs = base / "refs"
    refs.mkdir()
    unit = {m: "n" if "_crossover_" in m else "ratio" for m in METRICS}
    entries = "".join(f"    {m}: {{informational: plumbing, unit: {unit[m]}, source: synthetic}}\n" for m in METRICS)
    (refs / "ci_offload_gemm.yaml").write_text(REF + entries)
    run_dir = base / "run"
    run_dir.mkdir()
    extras = {"node_type": "ci_offload_gemm", "reference_dir": str(refs), "gpu_count": 1, "facts_file": "",
              "cuda_arch": "", "git_revision": "test", "bench_dir": str(bindir)}  # fmt: skip
    config = run_dir / "settings.py"
    config.write_text(
        rfmconfig.text("localhost", "ci_offload_gemm", 1, extras, "nvcc", "tests/test_reframe_offload_gemm.py")
    )
    proc = run_reframe(config, run_dir, "evaluation", "-n", "GpuOffloadGemm", *extra)
    report = json.loads((run_dir / "reframe-report.json").read_text())
    (case,) = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("GpuOffloadGemm")]
    # A passed test's files are kept in ReFrame's output directory, a failed one's in its stage directory.
    out = run_dir / "reframe" / ("output" if case["result"] == "pass" else "stage")
    (kept,) = list(out.rglob("offload_gemm.json"))
    logged = [json.loads(line) for line in calls.read_text().splitlines()]
    values = {k.rsplit(":", 1)[-1]: v[0] for k, v in case["perfvalues"].items()}
    return proc, case, json.loads(kept.read_text()), logged, values, out


@pytest.fixture(scope="module")
def with_host(tmp_path_factory):
    return run_check(tmp_path_factory.mktemp("rfm-offload-gemm"))


def test_the_job_times_the_host_at_each_size_on_every_core_then_adds_the_crossovers(with_host):
    proc, case, doc, logged, values, out = with_host
    assert proc.returncode == 0 and case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    xgemm = [c for c in logged if c["tool"] == "gpuaccept-xgemm"]
    assert len(xgemm) == 1 and xgemm[0]["args"][:2] == ["--gpu", "0"] and "offload_gemm.json" in xgemm[0]["args"]
    host = [c for c in logged if c["tool"] == "gpuaccept-cpugemm"]
    assert [c["args"][c["args"].index("--size") + 1] for c in host] == ["256", "512", "1024", "2048", "4096", "8192"]
    threads = {c["args"][c["args"].index("--threads") + 1] for c in host}
    assert len(threads) == 1 and int(threads.pop()) >= 1
    assert all(c["OMP_PROC_BIND"] == "close" and c["OMP_PLACES"] == "cores" for c in host)
    assert sorted(p.name for p in out.rglob("cpugemm-n*.log")) == sorted(f"cpugemm-n{n}.log" for n in
                                                                         (256, 512, 1024, 2048, 4096, 8192))
    # The recorded run's crossovers and ratios, computed again in the job, reach ReFrame.
    recorded = json.loads((FIXTURE / "xgemm-crossover.json").read_text())
    assert doc["waived"] == recorded["waived"] == {
        "dgemm_crossover_n_pinned": "GPU wins at every size in the sweep (from n=256)"
    }
    assert set(values) == set(recorded["metrics"])
    for name, metric in recorded["metrics"].items():
        assert values[name] == pytest.approx(metric["value"]), name
    assert values["sgemm_crossover_n_pageable"] == pytest.approx(803.7, abs=0.1)
    rows = doc["results"]["crossover"]["per_precision"]["dgemm"]["rows"]
    assert [r["host_gflops"] is not None for r in rows] == [True] * 6 + [False]  # no host timing at 16384


def test_without_the_host_tool_the_crossovers_are_waived_and_the_ratios_still_report(tmp_path):
    proc, case, doc, logged, values, _out = run_check(tmp_path, host="absent")
    assert case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [c["tool"] for c in logged] == ["gpuaccept-xgemm"]
    assert set(values) == {m for m in METRICS if "_over_kernel_" in m}
    for p in PRECISIONS:
        for m in ("pinned", "pageable"):
            why = doc["waived"][f"{p}_crossover_n_{m}"]
            assert why.startswith("no host GEMM tool: no gpuaccept-cpugemm in ") and str(tmp_path / "bin") in why
    assert doc["results"]["crossover"]["no_host"] == why


def test_a_host_tool_that_writes_nothing_waives_the_crossovers_with_that_reason(tmp_path):
    proc, case, doc, logged, values, _out = run_check(tmp_path, host="failing")
    assert case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len([c for c in logged if c["tool"] == "gpuaccept-cpugemm"]) == 6
    assert not any("_crossover_" in name for name in values)
    why = "gpuaccept-cpugemm left no document at any size (cpugemm-n*.log)"
    assert doc["waived"]["bf16_crossover_n_pageable"] == why


def test_quick_mode_sweeps_to_4096_on_both_sides_without_passing_quick(tmp_path):
    proc, case, _doc, logged, values, _out = run_check(tmp_path, "ok", "-S", "mode=quick")
    assert case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    (xgemm,) = [c["args"] for c in logged if c["tool"] == "gpuaccept-xgemm"]
    assert "--quick" not in xgemm and xgemm[:6] == ["--gpu", "0", "--sizes", "256,512,1024,2048,4096", "--time-limit-s",
                                                    "20"]  # fmt: skip
    host = [c["args"] for c in logged if c["tool"] == "gpuaccept-cpugemm"]
    assert [a[a.index("--size") + 1] for a in host] == ["256", "512", "1024", "2048", "4096"]
    assert values["sgemm_crossover_n_pinned"] == pytest.approx(327.0, abs=0.1)  # below 4096: as in the full sweep
