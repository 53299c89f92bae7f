"""The ReFrame configuration of one node without Ansible: the gpuaccept_reframe role's own template
(roles/gpuaccept_reframe/templates/reframe_settings.py.j2) rendered with the extras the role would compute from
the node's facts (``gpuaccept reframe-config``, and ``gpuaccept run`` when no configuration is given).

The role stays the way Ansible configures a node; this module computes the same extras in Python for a node
that has no Ansible (the GPU machine of a lab, a container), so that both paths run the same checks the same way.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from gpuaccept.atomic import write_text_atomic
from gpuaccept.layout import PROJECT_ROOT
from gpuaccept.probe import document

TEMPLATE = PROJECT_ROOT / "roles" / "gpuaccept_reframe" / "templates" / "reframe_settings.py.j2"
#: Where the gpuaccept_bench role builds the benchmarks (gpuaccept_bench_build_dir's default, relative to the
#: project root); the checks use the binaries found there instead of compiling them (docs/ansible.md).
BENCH_DIR = PROJECT_ROOT / "build" / "bench"
#: The gpuaccept_reframe role's defaults for OpenBLAS (Debian/Ubuntu's pthread flavour).
OPENBLAS_INC = "/usr/include/x86_64-linux-gnu/openblas-pthread"
OPENBLAS_LIB = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
CUDA_NVCC = "/usr/local/cuda/bin/nvcc"


class ConfigError(Exception):
    """The configuration cannot be written (template missing, does not render)."""


def blas(venv: Path) -> str:
    """``mkl`` when the tool environment holds Intel MKL, ``openblas`` when OpenBLAS is installed, else ``none``
    (the gpuaccept_reframe role's rule)."""
    if (venv / "lib" / "libmkl_rt.so.3").exists() and (venv / "include" / "mkl.h").exists():
        return "mkl"
    if Path(OPENBLAS_INC, "cblas.h").exists() and Path(OPENBLAS_LIB, "libopenblas.so").exists():
        return "openblas"
    return "none"


def cuda_arch(facts: dict[str, Any]) -> str:
    """nvcc's -gencode flags for the node's GPUs ("9.0" -> sm_90); '' leaves the Makefile's fat binary."""
    sms = sorted({int(str(g["compute_capability"]).replace(".", "")) for g in facts.get("gpus") or []
                  if g.get("compute_capability")})  # fmt: skip
    return " ".join(f"-gencode=arch=compute_{sm},code=sm_{sm}" for sm in sms)


def extras(
    facts: dict[str, Any],
    node_type: str,
    reference_dir: str | Path,
    facts_file: str | Path,
    bench_dir: str | Path | None = None,
    venv: Path | None = None,
) -> dict[str, Any]:
    """The partition's extras, as the gpuaccept_reframe role computes them (roles/gpuaccept_reframe/vars)."""
    venv = venv or Path(sys.prefix)
    return {
        "node_type": node_type,
        "reference_dir": str(Path(reference_dir).resolve()),
        "gpu_count": len(facts.get("gpus") or []),
        "facts_file": str(Path(facts_file).resolve()),
        "cuda_arch": cuda_arch(facts),
        "blas": blas(venv),
        "mklroot": str(venv),
        "openblas_inc": OPENBLAS_INC,
        "openblas_lib": OPENBLAS_LIB,
        "git_revision": document.git_revision(PROJECT_ROOT),
        "namd_home": os.environ.get("GPUACCEPT_NAMD_HOME") or str(PROJECT_ROOT / "namd"),
        "bench_dir": str(Path(bench_dir or BENCH_DIR).resolve()),
    }


def render(
    facts: dict[str, Any], node_type: str, extras_: dict[str, Any], nvcc: str | None = None, source: str = ""
) -> str:
    """The role's template rendered for this node."""
    import jinja2  # noqa: PLC0415  (in the tool environment: Ansible's dependency)

    if not TEMPLATE.exists():
        raise ConfigError(f"{TEMPLATE}: the gpuaccept_reframe role's template is missing from this checkout")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["to_json"] = json.dumps
    env.filters["comment"] = lambda text: "\n".join(f"# {line}" for line in str(text).splitlines())
    try:
        text = env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
            ansible_managed=f"Written by {source or 'gpuaccept reframe-config'} from {TEMPLATE.name}: regenerate, "
            "do not edit.",
            inventory_hostname=facts.get("hostname") or "localhost",
            _gpuaccept_reframe_node_type=node_type or "unknown",
            _gpuaccept_reframe_facts_file=extras_["facts_file"],
            _gpuaccept_reframe_gpus=facts.get("gpus") or [],
            _gpuaccept_reframe_extras=extras_,
            _gpuaccept_reframe_nvcc=nvcc or (CUDA_NVCC if Path(CUDA_NVCC).exists() else "nvcc"),
        )
    except jinja2.TemplateError as err:
        raise ConfigError(f"{TEMPLATE}: does not render: {err}") from None
    compile(text, str(TEMPLATE), "exec")
    return text


def write(
    path: str | Path,
    facts: dict[str, Any],
    node_type: str,
    reference_dir: str | Path,
    facts_file: str | Path,
    bench_dir: str | Path | None = None,
    nvcc: str | None = None,
    source: str = "",
) -> Path:
    """Write the ReFrame configuration of this node to ``path`` (atomically)."""
    ext = extras(facts, node_type, reference_dir, facts_file, bench_dir)
    return write_text_atomic(path, render(facts, node_type, ext, nvcc, source))
