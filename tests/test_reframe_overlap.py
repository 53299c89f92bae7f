"""GpuOverlap through ReFrame for real: the partition has one GPU and the prebuilt binaries' directory
(``extras.bench_dir``) holds a stand-in ``gpuaccept-overlap`` written by this test. It writes test_overlap.py's
hand-built document (round numbers, no GPU output): the plumbing -- the check in the evaluation suite, the job
running ``gpuaccept annotate overlap`` after the benchmark, the model's metrics reaching ReFrame -- not the figures,
which tests/test_overlap.py covers."""

import json
import stat
import sys

import pytest
from rfm_support import run_reframe
from test_overlap import hand_doc

from gpuaccept import rfmconfig

REF = """\
schema: gpuaccept.references/1
node_type: ci_overlap
description: CI host with one synthetic GPU and a stand-in benchmark (synthetic test references)
match: {gpu_model: NVIDIA Test GPU, gpu_count: 1}
sources:
  synthetic: {kind: synthetic, date: 2026-11-25, reference: "tests/test_reframe_overlap.py: plumbing test"}
checks:
  overlap:
    duplex_overlap_min: {informational: plumbing test, unit: ratio, source: synthetic}
    stream_speedup_min: {informational: plumbing test, unit: ratio, source: synthetic}
    model_rel_error_max: {informational: plumbing test, unit: ratio, source: synthetic}
    model_rank_tau_min: {informational: plumbing test, unit: ratio, source: synthetic}
"""

STAND_IN = """\
#!{python}
# Stand-in for gpuaccept-overlap (tests/test_reframe_overlap.py): writes a hand-built document to --output.
import json, sys
doc = json.loads({doc!r})
doc["devices"] = [{{"index": 0, "name": "stand-in"}}]
out = sys.argv[sys.argv.index("--output") + 1]
open(out, "w").write(json.dumps(doc))
"""


def run_check(base, exit_code: int = 0, doc: dict | None = None):
    bindir = base / "bin"
    bindir.mkdir()
    tool = bindir / "gpuaccept-overlap"
    text = STAND_IN.format(python=sys.executable, doc=json.dumps(doc or hand_doc()))
    tool.write_text(text + (f"sys.exit({exit_code})\n" if exit_code else ""))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_overlap.yaml").write_text(REF)
    run_dir = base / "run"
    run_dir.mkdir()
    extras = {"node_type": "ci_overlap", "reference_dir": str(refs), "gpu_count": 1, "facts_file": "",
              "cuda_arch": "", "git_revision": "test", "bench_dir": str(bindir)}  # fmt: skip
    config = run_dir / "settings.py"
    config.write_text(rfmconfig.text("localhost", "ci_overlap", 1, extras, "nvcc", "tests/test_reframe_overlap.py"))
    proc = run_reframe(config, run_dir, "evaluation", "-n", "GpuOverlap")
    report = json.loads((run_dir / "reframe-report.json").read_text())
    (case,) = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("GpuOverlap")]
    # A passed test's files are kept in ReFrame's output directory, a failed one's in its stage directory.
    (kept,) = list((run_dir / "reframe" / ("output" if case["result"] == "pass" else "stage")).rglob("overlap.json"))
    return proc, case, json.loads(kept.read_text())


@pytest.fixture(scope="module")
def annotated(tmp_path_factory):
    return run_check(tmp_path_factory.mktemp("rfm-overlap"))


def test_the_job_adds_the_model_and_its_metrics_reach_reframe(annotated):
    proc, case, doc = annotated
    assert proc.returncode == 0 and case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    assert doc["results"]["model"]["links_from"] == "gpuaccept-overlap's own copies"
    values = {k.rsplit(":", 1)[-1]: v[0] for k, v in case["perfvalues"].items()}
    assert values["model_rel_error_max"] == pytest.approx(0.1) and values["model_rank_tau_min"] == 1
    assert values["duplex_overlap_min"] == 1.0


def test_a_document_the_model_cannot_read_fails_the_job(tmp_path):
    doc = hand_doc()
    del doc["results"]["per_gpu"][0]["copies"]["bidir"]
    _proc, case, kept = run_check(tmp_path, doc=doc)
    assert case["result"] == "fail" and "exited 4" in case["fail_reason"], case["fail_reason"]
    assert "model" not in kept["results"]
