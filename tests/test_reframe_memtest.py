"""GpuMemtest through ReFrame for real: the partition has one GPU and the prebuilt binaries' directory
(``extras.bench_dir``) holds a stand-in ``gpuaccept-memtest`` written by this test, which writes test_memtest.py's
document built in code (no GPU output) with its own command line. The plumbing -- the check in the commission
suite, the budget it passes in full and in quick mode, its metrics reaching ReFrame -- not the figures."""

import json
import stat
import sys

import pytest
from rfm_support import run_reframe
from test_memtest import memtest_doc

from gpuaccept import rfmconfig

REF = """\
schema: gpuaccept.references/1
node_type: ci_memtest
description: CI host with one synthetic GPU and a stand-in benchmark (synthetic test references)
match: {gpu_model: NVIDIA Test GPU, gpu_count: 1}
sources:
  synthetic: {kind: synthetic, date: 2026-11-27, reference: "tests/test_reframe_memtest.py: plumbing test"}
checks:
  memtest:
    errors_total: {informational: plumbing test, unit: count, source: synthetic}
    tested_fraction_min: {value: 0.9, lower: 0, unit: ratio, source: synthetic}
    bytes_tested_min: {informational: plumbing test, unit: GiB, source: synthetic}
    throughput_gbps_min: {informational: plumbing test, unit: GB/s, source: synthetic}
"""

STAND_IN = """\
#!{python}
# Stand-in for gpuaccept-memtest (tests/test_reframe_memtest.py): writes a document built in code to --output.
import json, sys
doc = json.loads({doc!r})
doc["command_line"] = sys.argv
out = sys.argv[sys.argv.index("--output") + 1]
open(out, "w").write(json.dumps(doc))
"""


def run_check(base, *extra: str):
    bindir = base / "bin"
    bindir.mkdir()
    tool = bindir / "gpuaccept-memtest"
    tool.write_text(STAND_IN.format(python=sys.executable, doc=json.dumps(memtest_doc(["00000000:00:06.0"]))))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_memtest.yaml").write_text(REF)
    run_dir = base / "run"
    run_dir.mkdir()
    extras = {"node_type": "ci_memtest", "reference_dir": str(refs), "gpu_count": 1, "facts_file": "",
              "cuda_arch": "", "git_revision": "test", "bench_dir": str(bindir)}  # fmt: skip
    config = run_dir / "settings.py"
    config.write_text(rfmconfig.text("localhost", "ci_memtest", 1, extras, "nvcc", "tests/test_reframe_memtest.py"))
    proc = run_reframe(config, run_dir, "commission", "-n", "GpuMemtest", *extra)
    report = json.loads((run_dir / "reframe-report.json").read_text())
    (case,) = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("GpuMemtest")]
    (kept,) = list((run_dir / "reframe" / ("output" if case["result"] == "pass" else "stage")).rglob("memtest.json"))
    return proc, case, json.loads(kept.read_text())


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return run_check(tmp_path_factory.mktemp("rfm-memtest"))


def test_commission_runs_it_for_its_seconds_and_its_metrics_reach_reframe(full):
    proc, case, doc = full
    assert proc.returncode == 0 and case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    args = doc["command_line"][1:]
    assert args[:2] == ["--output", "memtest.json"] and args[-2:] == ["--seconds", "20"] and "--quick" not in args
    values = {k.rsplit(":", 1)[-1]: v[0] for k, v in case["perfvalues"].items()}
    assert values["errors_total"] == 0 and values["tested_fraction_min"] == pytest.approx(0.9683, abs=1e-4)
    assert values["throughput_gbps_min"] == 2800.0


def test_quick_mode_leaves_the_budget_to_the_tool(tmp_path):
    proc, case, doc = run_check(tmp_path, "-S", "mode=quick")
    assert case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    assert doc["command_line"][1:] == ["--output", "memtest.json", "--quick"]


def test_a_burn_in_budget_gets_a_time_limit_that_fits_it(tmp_path):
    proc, case, doc = run_check(tmp_path, "-S", "GpuMemtest.seconds=900")
    assert case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    assert doc["command_line"][-2:] == ["--seconds", "900"] and case["time_limit"] == 1200.0
