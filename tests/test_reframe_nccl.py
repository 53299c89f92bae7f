"""GpuNccl through ReFrame for real: the partition has one GPU and the prebuilt binaries' directory
(``extras.bench_dir``) holds a stand-in ``gpuaccept-nccl`` written by this test. The stand-in notes the options and
NCCL_NVLS_ENABLE it was started with, then writes a document gpuaccept-nccl recorded on the H100
(tests/fixtures/recorded/2026-11-23-h100-nccl/final/nccl.json, unchanged). What this shows is the check's side of
NVLink SHARP: off (NCCL_NVLS_ENABLE=0, no --allow-nvls) unless ``-S GpuNccl.nccl_nvls=true`` asks for it."""

import json
import stat
import sys

import pytest
from conftest import RECORDED
from rfm_support import run_reframe

from gpuaccept import rfmconfig

RECORDED_DOC = RECORDED / "2026-11-23-h100-nccl" / "final" / "nccl.json"

REF = """\
schema: gpuaccept.references/1
node_type: ci_nccl
description: CI host with one synthetic GPU and a stand-in benchmark (synthetic test references)
match: {gpu_model: NVIDIA Test GPU, gpu_count: 1}
sources:
  synthetic: {kind: synthetic, date: 2026-11-27, reference: "tests/test_reframe_nccl.py: plumbing test"}
checks:
  nccl:
    allreduce_busbw_gbps_max: {informational: plumbing test, unit: GB/s, source: synthetic}
"""

STAND_IN = """\
#!{python}
# Stand-in for gpuaccept-nccl (tests/test_reframe_nccl.py): notes how it was started, writes a recorded document.
import json, os, shutil, sys
json.dump({{"argv": sys.argv[1:], "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE")}}, open({note!r}, "w"))
shutil.copyfile({doc!r}, sys.argv[sys.argv.index("--output") + 1])
"""


def run_check(base, *options: str) -> dict:
    bindir = base / "bin"
    bindir.mkdir()
    tool = bindir / "gpuaccept-nccl"
    note = base / "started.json"
    tool.write_text(STAND_IN.format(python=sys.executable, doc=str(RECORDED_DOC), note=str(note)))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_nccl.yaml").write_text(REF)
    run_dir = base / "run"
    run_dir.mkdir()
    extras = {"node_type": "ci_nccl", "reference_dir": str(refs), "gpu_count": 1, "facts_file": "",
              "cuda_arch": "", "git_revision": "test", "bench_dir": str(bindir), "nccl_home": ""}  # fmt: skip
    config = run_dir / "settings.py"
    config.write_text(rfmconfig.text("localhost", "ci_nccl", 1, extras, "nvcc", "tests/test_reframe_nccl.py"))
    proc = run_reframe(config, run_dir, "commission", "-n", "^GpuNccl$", *options)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(note.read_text())


@pytest.mark.parametrize(
    ("options", "nvls", "allow"),
    [((), "0", False), (("-S", "GpuNccl.nccl_nvls=true"), "1", True)],
    ids=["default-off", "asked-for"],
)
def test_the_nccl_check_keeps_nvlink_sharp_off_unless_asked(tmp_path, options, nvls, allow):
    started = run_check(tmp_path, *options)
    assert started["NCCL_NVLS_ENABLE"] == nvls
    assert ("--allow-nvls" in started["argv"]) is allow and "--output" in started["argv"]


def test_a_node_without_nccl_does_not_run_the_nccl_check_and_says_why(tmp_path):
    """The configuration says this node has no NCCL (``extras.nccl_home`` '', find-nccl.sh's answer) and no prebuilt
    gpuaccept-nccl: nothing is compiled, and the check is skipped with the reason and the fix (NOT RUN)."""
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_nccl.yaml").write_text(REF)
    extras = {"node_type": "ci_nccl", "reference_dir": str(refs), "gpu_count": 1, "facts_file": "", "cuda_arch": "",
              "git_revision": "test", "bench_dir": str(tmp_path / "empty"), "nccl_home": ""}  # fmt: skip
    config = tmp_path / "settings.py"
    config.write_text(rfmconfig.text("localhost", "ci_nccl", 1, extras, "nvcc", "tests/test_reframe_nccl.py"))
    proc = run_reframe(config, tmp_path, "commission", "-n", "^GpuNccl$")
    report = json.loads((tmp_path / "reframe-report.json").read_text())
    (case,) = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("GpuNccl")]
    assert case["result"] == "skip", proc.stdout[-3000:]
    # ReFrame's JSON report drops a skip's reason; its log line (which the verdict reads) has it.
    (line,) = [x for x in proc.stdout.splitlines() if "SKIP" in x and "GpuNccl" in x]
    assert "no NCCL on this node: reframe_checks/src/find-nccl.sh found" in line, line
    assert "then rewrite the ReFrame configuration" in line
