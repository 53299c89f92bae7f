"""Runs gpuaccept's ReFrame checks for real on this (GPU-less) machine, with a configuration written by
gpuaccept.rfmconfig, as the gpuaccept_reframe role writes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from gpuaccept import rfmconfig

VENV = Path(sys.prefix)


def blas_extras() -> dict[str, str]:
    if (VENV / "lib" / "libmkl_rt.so.3").exists():
        return {"blas": "mkl", "mklroot": str(VENV)}
    return {
        "blas": "openblas",
        "openblas_inc": "/usr/include/x86_64-linux-gnu/openblas-pthread",
        "openblas_lib": "/usr/lib/x86_64-linux-gnu/openblas-pthread",
    }


def render_config(path: Path, node_type: str, reference_dir: Path, facts: dict, facts_file: Path) -> Path:
    extras = {"node_type": node_type, "reference_dir": str(reference_dir), "gpu_count": len(facts["gpus"]),
              "facts_file": str(facts_file), "cuda_arch": "", "git_revision": "test", **blas_extras()}
    path.write_text(rfmconfig.text("localhost", node_type, len(facts["gpus"]), extras, "nvcc", "tests/rfm_support.py"))
    return path


def run_reframe(config: Path, run_dir: Path, suite: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [str(VENV / "bin" / "reframe"), "-C", str(config), "-c", str(ROOT / "reframe_checks"), "-R",
           "--tag", suite, "--prefix", str(run_dir / "reframe"), "--report-file",
           str(run_dir / "reframe-report.json"), "--save-log-files", *extra, "-r"]
    env = {**os.environ, "LC_ALL": "C.UTF-8", "RFM_REPORT_JUNIT": ""}
    return subprocess.run(cmd, cwd=run_dir, capture_output=True, text=True, timeout=1200, env=env, check=False)
