"""GpuFftOffload through ReFrame for real: the partition has one GPU and the prebuilt binaries' directory
(``extras.bench_dir``) holds a stand-in ``gpuaccept-fft`` that writes the H100's real document
(tests/fixtures/fft_offload/h100-mkl/fft.json): the plumbing -- the check in the evaluation suite, the job running
``gpuaccept annotate fft`` after the benchmark, the crossover metrics reaching ReFrame -- and, on a node
without a host FFT, NOT RUN with the reason."""

import json
import stat
import sys
from pathlib import Path

import pytest
from rfm_support import run_reframe

from gpuaccept import rfmconfig

FIX = Path(__file__).parent / "fixtures" / "fft_offload" / "h100-mkl"
CASES = ("fft1d_fp32", "fft1d_fp64", "fft3d_fp32", "fft3d_fp64")
ROWS = "\n".join(
    f"    {case}_{name}: {{informational: plumbing test, unit: {unit}, source: synthetic}}"
    for case in CASES
    for name, unit in (("speedup_kernel", "ratio"), ("speedup_pinned", "ratio"), ("speedup_pageable", "ratio"),
                       ("crossover_points_pinned", "points"), ("crossover_points_pageable", "points"))
)
REF = f"""\
schema: gpuaccept.references/1
node_type: ci_fft
description: CI host with one synthetic GPU and a stand-in benchmark (synthetic test references)
match: {{gpu_model: NVIDIA Test GPU, gpu_count: 1}}
sources:
  synthetic: {{kind: synthetic, date: 2026-11-26, reference: "tests/test_reframe_fft.py: plumbing test"}}
checks:
  fft_offload:
{ROWS}
"""

STAND_IN = """\
#!{python}
# Stand-in for gpuaccept-fft (tests/test_reframe_fft.py): copies a recorded document to --output.
import sys
out = sys.argv[sys.argv.index("--output") + 1]
open(out, "w").write(open({doc!r}).read())
"""


def run_check(base: Path, with_tool: bool = True):
    bindir = base / "bin"
    bindir.mkdir()
    if with_tool:
        tool = bindir / "gpuaccept-fft"
        tool.write_text(STAND_IN.format(python=sys.executable, doc=str(FIX / "fft.json")))
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_fft.yaml").write_text(REF)
    run_dir = base / "run"
    run_dir.mkdir()
    no_fftw = base / "no-fftw"
    no_fftw.mkdir()
    extras = {"node_type": "ci_fft", "reference_dir": str(refs), "gpu_count": 1, "facts_file": "",
              "cuda_arch": "", "git_revision": "test", "bench_dir": str(bindir), "blas": "none",
              "fftw_inc": str(no_fftw)}  # fmt: skip
    config = run_dir / "settings.py"
    config.write_text(rfmconfig.text("localhost", "ci_fft", 1, extras, "nvcc", "tests/test_reframe_fft.py"))
    proc = run_reframe(config, run_dir, "evaluation", "-n", "GpuFftOffload")
    report = json.loads((run_dir / "reframe-report.json").read_text())
    (case,) = [c for r in report["runs"] for c in r["testcases"] if c["name"].startswith("GpuFftOffload")]
    return proc, case, run_dir


def test_the_job_adds_the_crossovers_and_they_reach_reframe(tmp_path):
    proc, case, run_dir = run_check(tmp_path)
    assert proc.returncode == 0 and case["result"] == "pass", proc.stdout[-3000:] + proc.stderr[-3000:]
    (kept,) = list((run_dir / "reframe" / "output").rglob("fft_offload.json"))
    doc = json.loads(kept.read_text())
    want = json.loads((FIX / "fft-crossover.json").read_text())
    assert doc["results"]["crossover"] == want["results"]["crossover"]
    values = {k.rsplit(":", 1)[-1]: v[0] for k, v in case["perfvalues"].items()}
    for name in ("fft3d_fp64_crossover_points_pinned", "fft3d_fp32_speedup_pinned", "fft1d_fp64_speedup_kernel"):
        assert values[name] == pytest.approx(want["metrics"][name]["value"])


def test_without_a_host_fft_it_is_not_run_with_the_reason(tmp_path):
    # No prebuilt tool, no MKL, no fftw3.h: the build fixture builds nothing and the check skips, saying why.
    proc, case, _ = run_check(tmp_path, with_tool=False)
    assert case["result"] == "skip", proc.stdout[-3000:] + proc.stderr[-3000:]
    # ReFrame's JSON report drops a skip's reason; its log line (which the verdict reads) has it.
    (line,) = [x for x in proc.stdout.splitlines() if "SKIP" in x and "GpuFftOffload" in x]
    assert "no host FFT to compare cuFFT with: the partition's BLAS is 'none' (not MKL)" in line
