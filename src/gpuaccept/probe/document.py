"""The header every gpuaccept.bench/1 document of the Python probes starts with (docs/benchmark-json.md): the
schema, the tool and its version, the project revision, the command line, when it started and how it timed,
and the host. One builder, so the health probe, the power sampler, the MD and NAMD runners write the same keys
the CUDA tools write (bench_common.h), and one answer to "which revision ran". Also the ``gpu_metrics`` a probe
that measures every GPU writes beside its ``metrics`` (:func:`gpu_metrics`)."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

from gpuaccept import __version__
from gpuaccept.layout import BENCH_SCHEMA, PROJECT_ROOT
from gpuaccept.probe import facts


def git_revision(root: Path = PROJECT_ROOT) -> str:
    """The project's revision: GPUACCEPT_GIT_REVISION (set by the checks), else the ``.gitrev`` file the
    gpuaccept_toolenv role writes into a copied project, else ``git rev-parse``, else "unknown". The file comes
    before git: a copy of the tree may carry another commit's git directory."""
    env = os.environ.get("GPUACCEPT_GIT_REVISION", "").strip()
    if env:
        return env
    try:
        return (root / ".gitrev").read_text(encoding="utf-8").strip() or "unknown"
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False, env={**os.environ, "LC_ALL": "C"},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def utc_iso(epoch_s: float | None = None) -> str:
    """A document's time stamp (``started_utc``): the given Unix time, else now, in UTC to the second."""
    when = dt.datetime.now(dt.UTC) if epoch_s is None else dt.datetime.fromtimestamp(epoch_s, dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def host_block() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "cpu_model": facts.cpu_model(),
        "logical_cpus": os.cpu_count(),
        "numa_nodes": facts.numa_nodes(),
    }


def header(
    tool: str, command_line: list[str], started_utc: str, timing: str, elapsed_s: float | None = None
) -> dict[str, Any]:
    """The common top of a document; the caller adds cuda, devices, parameters, results, metrics, waived,
    verification and errors."""
    doc: dict[str, Any] = {
        "schema": BENCH_SCHEMA,
        "tool": tool,
        "tool_version": __version__,
        "git_revision": git_revision(),
        "command_line": command_line,
        "started_utc": started_utc,
    }
    if elapsed_s is not None:
        doc["elapsed_s"] = round(elapsed_s, 3)
    doc["timing"] = timing
    doc["host"] = host_block()
    return doc


def gpu_metrics(
    rows: list[dict[str, Any]], metrics: dict[str, Any], figures: dict[str, tuple[str, str, str]]
) -> list[dict[str, Any]]:
    """The document's ``gpu_metrics`` (docs/benchmark-json.md): one entry per GPU (``rows``, each with its ``gpu``
    index), holding its own figure of each per-GPU metric the document reports in ``metrics``. ``figures`` maps a
    metric's name to (the row's key holding the GPU's figure, unit, better); a GPU whose row has no figure for it
    gets none (the judge then fails that GPU's row: not measured)."""
    out = []
    for row in rows:
        own = {
            name: {"value": row[key], "unit": unit, "better": better}
            for name, (key, unit, better) in figures.items()
            if name in metrics and isinstance(row.get(key), (int, float)) and not isinstance(row.get(key), bool)
        }
        if own:
            out.append({"gpu": row["gpu"], "metrics": own})
    return out


def finite(value: Any) -> Any:
    """``value`` with every float that is not finite (NaN, infinity) replaced by None, in nested dicts and lists: a
    figure that could not be measured is written as null, never as a token that is not JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(doc: Any, indent: int | None = None) -> str:
    """A document as strict JSON text with a closing newline, as the judge reads it (non-finite numbers as null)."""
    return json.dumps(finite(doc), indent=indent, allow_nan=False) + "\n"
