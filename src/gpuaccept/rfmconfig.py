"""The ReFrame configuration of one node, written by this module alone: the gpuaccept_reframe role runs it
(``python -m gpuaccept.rfmconfig``, with the extras the role computes from the node's facts), and so do
``gpuaccept reframe-config`` and ``gpuaccept run`` when no configuration is given (with the extras computed
here, for a node that has no Ansible: the GPU machine of a lab, a container), the Slurm configuration
(gpuaccept.results.slurm: its environments and logging) and the tests. One system, one partition, one
environment; the checks read the partition's ``extras``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from gpuaccept.atomic import write_text_atomic
from gpuaccept.layout import PROJECT_ROOT, REFRAME_LOG
from gpuaccept.probe import document, nccl_home

#: Where the gpuaccept_bench role builds the benchmarks (gpuaccept_bench_build_dir's default, relative to the
#: project root); the checks use the binaries found there instead of compiling them (docs/ansible.md).
BENCH_DIR = PROJECT_ROOT / "build" / "bench"
#: The gpuaccept_reframe role's defaults for OpenBLAS (Debian/Ubuntu's pthread flavour).
OPENBLAS_INC = "/usr/include/x86_64-linux-gnu/openblas-pthread"
OPENBLAS_LIB = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
CUDA_NVCC = "/usr/local/cuda/bin/nvcc"


class ConfigError(Exception):
    """The configuration cannot be written (bad extras, not valid Python)."""


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
    """The partition's extras, as the gpuaccept_reframe role computes them (roles/gpuaccept_reframe/vars).
    ``nccl_home``: where find-nccl.sh finds NCCL ('' none); ConfigError when NCCL_HOME names a directory without it."""
    venv = venv or Path(sys.prefix)
    try:
        nccl = nccl_home.find(pythons=[str(venv / "bin" / "python")])
    except nccl_home.NcclError as err:
        raise ConfigError(str(err)) from None
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
        "nccl_home": nccl,
    }


def site_configuration(node_type: str, gpu_count: int, extras_: dict[str, Any], nvcc: str) -> dict[str, Any]:
    """ReFrame's ``site_configuration``: system ``gpuaccept``, partition ``node`` (local scheduler and launcher;
    feature ``gpu`` and its devices where the node has GPUs), environment ``builtin``, and the logging: the
    stdout, ``reframe.log`` (debug) in the run directory, and the performance log."""
    partition: dict[str, Any] = {
        "name": "node",
        "descr": f"{node_type or 'unknown node type'}, {gpu_count} GPU(s)",
        "scheduler": "local",
        "launcher": "local",
        "environs": ["builtin"],
        "max_jobs": 1,
        "features": ["gpu"] if gpu_count > 0 else [],
    }
    if gpu_count > 0:
        partition["devices"] = [{"type": "gpu", "num_devices": gpu_count}]
    partition["extras"] = dict(extras_)
    return {
        "systems": [
            {
                "name": "gpuaccept",
                "descr": "A GPU node under acceptance test",
                "hostnames": [".*"],
                "modules_system": "nomod",
                "partitions": [partition],
            },
        ],
        "environments": [{"name": "builtin", "cc": "gcc", "cxx": "g++", "ftn": "", "nvcc": nvcc}],
        "logging": [
            {
                "level": "debug",
                "handlers": [
                    {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
                    {
                        "type": "file",
                        "name": REFRAME_LOG,
                        "level": "debug",
                        "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                        "append": False,
                    },
                ],
                "handlers_perflog": [
                    {
                        "type": "filelog",
                        "prefix": "%(check_system)s/%(check_partition)s",
                        "level": "info",
                        "format": "%(check_job_completion_time)s|%(check_result)s|%(check_name)s|"
                        "%(check_environ)s|%(check_perfvalues)s",
                        "format_perfvars": "%(check_perf_value)s|%(check_perf_unit)s|%(check_perf_ref)s|"
                        "%(check_perf_lower_thres)s|%(check_perf_upper_thres)s|",
                        "append": True,
                    },
                ],
            },
        ],
    }


def _literal(value: Any, indent: int = 0) -> str:
    """``value`` as a Python literal, one key or item a line; strings and numbers as JSON writes them (valid
    Python too), so a key reads ``"node_type": ""``."""
    pad = " " * (indent + 4)
    if isinstance(value, dict) and value:
        items = [f"{pad}{json.dumps(str(k))}: {_literal(v, indent + 4)}," for k, v in value.items()]
        return "{\n" + "\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list) and value:
        return "[\n" + "\n".join(f"{pad}{_literal(v, indent + 4)}," for v in value) + "\n" + " " * indent + "]"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (dict, list)):
        return repr(value)
    return json.dumps(value)


def text(
    host: str, node_type: str, gpu_count: int, extras_: dict[str, Any], nvcc: str, source: str = ""
) -> str:
    """The configuration file of this node: a header naming who wrote it, then ``site_configuration``."""
    header = (
        f"# Written by {source or 'gpuaccept reframe-config'} (gpuaccept.rfmconfig): regenerate, do not edit.\n"
        "#\n"
        f"# ReFrame configuration of {host}, node type {node_type or 'unknown'}: one system, one partition, one\n"
        f"# environment, from the node's facts in {extras_.get('facts_file', '')}; the checks read the partition's\n"
        "# 'extras'.\n"
    )
    config = site_configuration(node_type, gpu_count, extras_, nvcc)
    out = f"{header}\nsite_configuration = {_literal(config)}\n"
    try:
        compile(out, "<reframe configuration>", "exec")
    except SyntaxError as err:
        raise ConfigError(f"the configuration of {host} is not valid Python: {err}") from None
    return out


def render(
    facts: dict[str, Any], node_type: str, extras_: dict[str, Any], nvcc: str | None = None, source: str = ""
) -> str:
    """The configuration of the node these facts describe."""
    return text(
        facts.get("hostname") or "localhost",
        node_type,
        len(facts.get("gpus") or []),
        extras_,
        nvcc or (CUDA_NVCC if Path(CUDA_NVCC).exists() else "nvcc"),
        source,
    )


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


def main(argv: list[str] | None = None) -> int:
    """``python -m gpuaccept.rfmconfig``: print the configuration from extras computed elsewhere (the
    gpuaccept_reframe role's, which writes the file only when it differs; ``gpuaccept reframe-config`` writes
    one with the extras computed here)."""
    ap = argparse.ArgumentParser(prog="python -m gpuaccept.rfmconfig", description=main.__doc__)
    ap.add_argument("--host", required=True, help="the node's name, for the header")
    ap.add_argument("--node-type", default="", help="the node type ('' unknown)")
    ap.add_argument("--gpu-count", type=int, required=True, help="the node's GPUs")
    ap.add_argument("--extras", required=True, help="the partition's extras, a JSON object")
    ap.add_argument("--nvcc", default="nvcc", help="the CUDA compiler of the environment (%(default)s)")
    ap.add_argument("--source", default="", help="who writes it, for the header")
    args = ap.parse_args(argv)
    try:
        extras_ = json.loads(args.extras)
    except json.JSONDecodeError as err:
        ap.error(f"--extras: not JSON: {err}")
    if not isinstance(extras_, dict):
        ap.error(f"--extras: a JSON object expected, not {type(extras_).__name__}")
    try:
        sys.stdout.write(text(args.host, args.node_type, args.gpu_count, extras_, args.nvcc, args.source))
    except ConfigError as err:
        print(f"gpuaccept.rfmconfig: {err}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
