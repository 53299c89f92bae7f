"""Runs gpuaccept's ReFrame checks for real on this (GPU-less) machine, with a configuration rendered from
the gpuaccept_reframe role's own template."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jinja2
from conftest import ROOT

TEMPLATE = ROOT / "roles" / "gpuaccept_reframe" / "templates" / "reframe_settings.py.j2"
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
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["to_json"] = json.dumps
    env.filters["comment"] = lambda text: "\n".join(f"# {line}" for line in str(text).splitlines())
    extras = {"node_type": node_type, "reference_dir": str(reference_dir), "gpu_count": len(facts["gpus"]),
              "facts_file": str(facts_file), "cuda_arch": "", "git_revision": "test", **blas_extras()}
    text = env.from_string(TEMPLATE.read_text()).render(
        ansible_managed="rendered by tests/rfm_support.py",
        inventory_hostname="localhost",
        _gpuaccept_reframe_node_type=node_type,
        _gpuaccept_reframe_facts_file=str(facts_file),
        _gpuaccept_reframe_gpus=facts["gpus"],
        _gpuaccept_reframe_extras=extras,
        _gpuaccept_reframe_nvcc="nvcc",
    )
    path.write_text(text)
    return path


def run_reframe(config: Path, run_dir: Path, suite: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [str(VENV / "bin" / "reframe"), "-C", str(config), "-c", str(ROOT / "reframe_checks"), "-R",
           "--tag", suite, "--prefix", str(run_dir / "reframe"), "--report-file",
           str(run_dir / "reframe-report.json"), "--save-log-files", *extra, "-r"]
    env = {**os.environ, "LC_ALL": "C.UTF-8", "RFM_REPORT_JUNIT": ""}
    return subprocess.run(cmd, cwd=run_dir, capture_output=True, text=True, timeout=1200, env=env, check=False)
