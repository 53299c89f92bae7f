"""Cross-check of gpuaccept-bw against NVIDIA's own tools on the same node.

NVIDIA's nvbandwidth (JSON output, ``-j``) and the CUDA samples' p2pBandwidthLatencyTest (text output) run
beside ``gpuaccept-bw`` at the same buffer size; every figure the tools have in common is compared:

| ours (gpuaccept-bw)                         | theirs                                                          |
| ------------------------------------------- | --------------------------------------------------------------- |
| matrix, local NUMA row: ``h2d_pinned``      | nvbandwidth ``host_to_device_memcpy_ce`` [0][gpu]                |
| matrix, local NUMA row: ``d2h_pinned``      | nvbandwidth ``device_to_host_memcpy_ce`` [0][gpu]                |
| sweep ``d2d_oneway`` at the largest size    | nvbandwidth ``device_local_copy`` [0][gpu]; p2p sample's        |
|                                             | ``Unidirectional P2P=Disabled`` diagonal [gpu][gpu]             |
| peers ``write_gb_per_s`` (src -> dst)       | nvbandwidth ``device_to_device_memcpy_write_ce`` [src][dst];    |
|                                             | p2p sample's ``P2P Writes`` matrix [src][dst]                   |
| peers ``read_gb_per_s``                     | nvbandwidth ``device_to_device_memcpy_read_ce`` [src][dst]       |
| peers ``bidir_gb_per_s``                    | p2p sample's ``Bidirectional P2P=Enabled`` matrix [src][dst]    |

All three count GB/s as 1e9 bytes copied per second (both directions for bidirectional), except the p2p
sample's diagonal (a copy inside one GPU), which counts the read and the write: it is halved before the
comparison (found on the H100: 2974 GB/s printed where nvbandwidth and gpuaccept-bw both measured 1490). A pair
agrees when |ours / theirs - 1| <= tolerance. Verdict: ``FAIL`` when any pair disagrees, ``NOT RUN`` when
nothing could be compared (a tool failed, or no figure in common), ``PASS`` otherwise. A figure one side does
not have (one GPU: no peers; nvbandwidth's ``N/A`` or waived test case) is listed as not compared, with why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.atomic import write_text_atomic

SCHEMA = "gpuaccept.crosscheck/1"
DEFAULT_TOLERANCE = 0.05
DEFAULT_BYTES = 256 << 20

PASS, FAIL, NOT_RUN = "PASS", "FAIL", "NOT RUN"
# Exit status of `gpuaccept crosscheck`: 0 agree, 1 disagree (or our copies did not verify), 3 nothing compared.
EXIT = {PASS: 0, FAIL: 1, NOT_RUN: 3}


class CrosscheckInputError(ValueError):
    """An output of one of the tools cannot be read; the message names the file and what is wrong."""


# ---------------------------------------------------------------------------------------------------------------
# nvbandwidth (-j)


@dataclass
class NvbTestcase:
    name: str
    status: str
    matrix: list[list[float | None]] = field(default_factory=list)
    error: str = ""


def parse_nvbandwidth(text: str, source: str = "nvbandwidth output") -> dict[str, NvbTestcase]:
    """The test cases of nvbandwidth's JSON output (``nvbandwidth -j``), by name.

    Matrix entries are strings in nvbandwidth's JSON ("55.1", or "N/A" where a pair was not measured); they come
    back as floats, or None for "N/A". Raises CrosscheckInputError naming ``source`` when the text is not
    nvbandwidth's JSON or nvbandwidth reported an error for the whole run.
    """
    # nvbandwidth may print lines before the JSON document (e.g. warnings); the document starts at the first '{'.
    start = text.find("{")
    if start < 0:
        raise CrosscheckInputError(f"{source}: no JSON document (was nvbandwidth run with -j?)")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as err:
        raise CrosscheckInputError(f"{source}: not valid JSON at line {err.lineno}: {err.msg}") from None
    root = doc.get("nvbandwidth") if isinstance(doc, dict) else None
    if not isinstance(root, dict):
        raise CrosscheckInputError(f"{source}: no 'nvbandwidth' object at the top (not nvbandwidth -j output)")
    if root.get("error"):
        raise CrosscheckInputError(f"{source}: nvbandwidth reported an error: {root['error']}")
    cases: dict[str, NvbTestcase] = {}
    for i, case in enumerate(root.get("testcases") or []):
        if not isinstance(case, dict) or not isinstance(case.get("name"), str):
            raise CrosscheckInputError(f"{source}: testcases[{i}] has no name")
        matrix: list[list[float | None]] = []
        for r, row in enumerate(case.get("bandwidth_matrix") or []):
            values: list[float | None] = []
            for c, cell in enumerate(row):
                if cell in ("N/A", None):
                    values.append(None)
                    continue
                try:
                    values.append(float(cell))
                except (TypeError, ValueError):
                    raise CrosscheckInputError(
                        f"{source}: {case['name']}: bandwidth_matrix[{r}][{c}] = {cell!r} is not a number"
                    ) from None
            matrix.append(values)
        cases[case["name"]] = NvbTestcase(
            name=case["name"], status=str(case.get("status", "")), matrix=matrix, error=str(case.get("error", ""))
        )
    if not cases:
        raise CrosscheckInputError(f"{source}: no test cases in nvbandwidth's output")
    return cases


# ---------------------------------------------------------------------------------------------------------------
# p2pBandwidthLatencyTest (text)

# The sample's matrix titles, and our keys for them.
P2P_TITLES = {
    "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)": "unidir_p2p_disabled",
    "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)": "unidir_p2p_writes",
    "Unidirectional P2P=Enabled Bandwidth (P2P Reads) Matrix (GB/s)": "unidir_p2p_reads",
    "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)": "bidir_p2p_disabled",
    "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)": "bidir_p2p_enabled",
    "P2P=Disabled Latency Matrix (us)": "latency_p2p_disabled",
    "P2P=Enabled Latency (P2P Writes) Matrix (us)": "latency_p2p_writes",
    "P2P=Enabled Latency (P2P Reads) Matrix (us)": "latency_p2p_reads",
}
_ROW = re.compile(r"^\s*(\d+)\s+((?:[-+]?\d+(?:\.\d+)?\s*)+)$")
_HEADER = re.compile(r"^\s*(D\\D|GPU|CPU)(\s+\d+)+\s*$")


def parse_p2p(text: str, source: str = "p2pBandwidthLatencyTest output") -> dict[str, list[list[float]]]:
    """The matrices of p2pBandwidthLatencyTest's output, by key (P2P_TITLES); a latency matrix's GPU and CPU
    halves are ``<key>_gpu`` and ``<key>_cpu``.

    Raises CrosscheckInputError naming ``source`` and the line when a matrix is cut short or malformed, or when
    the output holds no bandwidth matrix at all (the sample failed before measuring).
    """
    lines = text.splitlines()
    out: dict[str, list[list[float]]] = {}
    key = None
    sub = ""
    rows: list[list[float]] = []
    columns = 0

    def close(lineno: int) -> None:
        nonlocal rows
        if key is None:
            return
        name = key + sub
        if columns and len(rows) != columns:
            raise CrosscheckInputError(
                f"{source}: line {lineno}: matrix '{name}' has {len(rows)} rows for {columns} GPUs (output cut short?)"
            )
        if rows:
            out[name] = rows
        rows = []

    for lineno, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped in P2P_TITLES:
            close(lineno)
            key, sub, columns = P2P_TITLES[stripped], "", 0
            continue
        if key is None:
            continue
        header = _HEADER.match(line)
        if header:
            close(lineno)
            word = header.group(1)
            sub = {"GPU": "_gpu", "CPU": "_cpu"}.get(word, "")
            columns = len(line.split()) - 1
            continue
        row = _ROW.match(line)
        if row and columns:
            values = [float(v) for v in row.group(2).split()]
            if len(values) != columns:
                raise CrosscheckInputError(
                    f"{source}: line {lineno}: {len(values)} values in a row of matrix '{key + sub}' with {columns} "
                    "GPUs"
                )
            if int(row.group(1)) != len(rows):
                raise CrosscheckInputError(
                    f"{source}: line {lineno}: row {row.group(1)} of matrix '{key + sub}' where row {len(rows)} "
                    "was expected"
                )
            rows.append(values)
            continue
        if stripped:
            close(lineno)
            key = None
    close(len(lines))
    if not any(k.startswith(("unidir", "bidir")) for k in out):
        raise CrosscheckInputError(f"{source}: no bandwidth matrix found (did p2pBandwidthLatencyTest fail?)")
    return out


# ---------------------------------------------------------------------------------------------------------------
# gpuaccept-bw


def _bw_figures(doc: dict[str, Any], source: str) -> tuple[dict[tuple[str, int, int], tuple[float, int]], list[int]]:
    """Our figures: {(what, gpu or src, dst or -1): (GB/s, bytes)}, and the GPUs measured."""
    if doc.get("tool") != "gpuaccept-bw":
        raise CrosscheckInputError(f"{source}: not a gpuaccept-bw document (tool = {doc.get('tool')!r})")
    results = doc.get("results") or {}
    gpus = sorted({int(d["index"]) for d in doc.get("devices") or [] if "index" in d})
    figures: dict[tuple[str, int, int], tuple[float, int]] = {}
    local: dict[tuple[str, int], list[tuple[float, int]]] = {}
    for row in results.get("matrix") or []:
        if not row.get("local"):
            continue
        for what in ("h2d_pinned", "d2h_pinned"):
            if isinstance(row.get(what), (int, float)):
                local.setdefault((what, int(row["gpu"])), []).append((float(row[what]), int(row["bytes"])))
    for (what, gpu), values in local.items():
        # One local row per NUMA node; with --affinity cores, one per core: their median, as the metric takes it.
        figures[(what, gpu, -1)] = (statistics.median(v for v, _ in values), values[0][1])
    for entry in results.get("sweep") or []:
        if entry.get("case") != "d2d_oneway" or not entry.get("points"):
            continue
        top = max(entry["points"], key=lambda p: p["bytes"])
        if isinstance(top.get("gb_per_s"), (int, float)):
            figures[("d2d", int(entry["gpu"]), -1)] = (float(top["gb_per_s"]), int(top["bytes"]))
    for pair in results.get("peer") or []:
        if not pair.get("access"):
            continue
        for what in ("write", "read", "bidir"):
            value = pair.get(f"{what}_gb_per_s")
            if isinstance(value, (int, float)):
                figures[(f"p2p_{what}", int(pair["src"]), int(pair["dst"]))] = (float(value), int(pair["bytes"]))
    return figures, gpus


# ---------------------------------------------------------------------------------------------------------------
# The comparison


def _cell(matrix: Sequence[Sequence[float | None]] | None, row: int, col: int) -> float | None:
    if matrix is None or row >= len(matrix) or col >= len(matrix[row]):
        return None
    return matrix[row][col]


def _nvb_matrix(nvb: dict[str, NvbTestcase] | None, not_run: dict[str, str],
                name: str) -> tuple[list[list[float | None]] | None, str]:
    """nvbandwidth's matrix of one test case, or None and why not."""
    if nvb is None:
        return None, f"nvbandwidth did not run: {not_run.get('nvbandwidth', 'no output')}"
    case = nvb.get(name)
    if case is None:
        return None, f"nvbandwidth test case {name} not in its output"
    if case.status != "Passed":
        return None, f"nvbandwidth test case {name}: {case.status} {case.error}".strip()
    return case.matrix, ""


def _p2p_matrix(p2p: dict[str, list[list[float]]] | None, not_run: dict[str, str],
                key: str) -> tuple[list[list[float]] | None, str]:
    """One of p2pBandwidthLatencyTest's matrices, or None and why not."""
    if p2p is None:
        return None, f"p2pBandwidthLatencyTest did not run: {not_run.get('p2p', 'no output')}"
    if key not in p2p:
        return None, f"p2pBandwidthLatencyTest printed no {key} matrix"
    return p2p[key], ""


@dataclass
class _Tally:
    """The comparisons made so far, and the figures that could not be compared with the reason."""

    ours: dict[tuple[str, int, int], tuple[float, int]]
    tolerance: float
    theirs_bytes: dict[str, int]
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        what: str,
        gpu: int,
        dst: int,
        tool: str,
        test: str,
        matrix: Any,
        why: str,
        row: int,
        col: int,
        scale: float = 1.0,
        note: str = "",
    ) -> None:
        """Our figure ``what`` of ``gpu`` (or the pair ``gpu`` -> ``dst``) against ``matrix[row][col]`` of
        ``tool``'s ``test``, times ``scale``; ``why``: why the matrix is None."""
        label = {"what": what, "gpu": gpu} if dst < 0 else {"what": what, "src": gpu, "dst": dst}
        label |= {"tool": tool, "test": test}
        mine = self.ours.get((what, gpu, dst))
        if mine is None:
            self.skipped.append(label | {"reason": f"gpuaccept-bw has no {what} figure for this GPU"})
            return
        value = _cell(matrix, row, col) if matrix is not None else None
        if value is None or value <= 0:
            self.skipped.append(label | {"reason": why or f"{tool} has no value at [{row}][{col}] (N/A)"})
            return
        printed = value
        value *= scale
        ratio = mine[0] / value
        entry = label | {
            "ours_gb_per_s": round(mine[0], 4),
            "theirs_gb_per_s": round(value, 4),
            "ratio": round(ratio, 5),
            "deviation": round(ratio - 1, 5),
            "agree": abs(ratio - 1) <= self.tolerance,
            "ours_bytes": mine[1],
        }
        if scale != 1.0:
            entry |= {"theirs_printed_gb_per_s": round(printed, 4), "theirs_scale": scale, "note": note}
        if tool in self.theirs_bytes:
            entry["theirs_bytes"] = self.theirs_bytes[tool]
        self.comparisons.append(entry)


def _conclusion(comparisons: list[dict[str, Any]], not_run: dict[str, str], tolerance: float) -> tuple[str, str]:
    """The cross-check's verdict and its reason: FAIL where a figure disagrees, NOT_RUN where none was compared."""
    disagree = [c for c in comparisons if not c["agree"]]
    if disagree:
        verdict = FAIL
        reason = "; ".join(
            f"{c['what']} GPU {c.get('gpu', str(c.get('src')) + '->' + str(c.get('dst')))}: ours "
            f"{c['ours_gb_per_s']:.2f} GB/s vs {c['tool']} {c['test']} {c['theirs_gb_per_s']:.2f} GB/s "
            f"({c['deviation']:+.1%}, tolerance {tolerance:.0%})"
            for c in disagree
        )
    elif not comparisons:
        verdict = NOT_RUN
        reason = "nothing compared: " + ("; ".join(f"{k}: {v}" for k, v in not_run.items()) or "no figure in common")
    else:
        verdict = PASS
        worst = max(comparisons, key=lambda c: abs(c["deviation"]))
        reason = (
            f"{len(comparisons)} figures agree within {tolerance:.0%} (largest deviation {worst['deviation']:+.2%}: "
            f"{worst['what']} vs {worst['tool']} {worst['test']})"
        )
    return verdict, reason


def compare(
    bw_doc: dict[str, Any],
    nvb: dict[str, NvbTestcase] | None,
    p2p: dict[str, list[list[float]]] | None,
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    bw_source: str = "gpuaccept-bw document",
    theirs_bytes: dict[str, int] | None = None,
    not_run: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Compare gpuaccept-bw's figures with nvbandwidth's and the p2p sample's; returns the cross-check document.

    ``nvb`` or ``p2p`` is None when that tool did not run (``not_run`` says why). ``theirs_bytes`` records the
    buffer size each tool used; a comparison at different sizes than ours is listed with both sizes.
    """
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance {tolerance} is not a fraction between 0 and 1")
    ours, gpus = _bw_figures(bw_doc, bw_source)
    not_run = dict(not_run or {})
    tally = _Tally(ours, tolerance, theirs_bytes or {})
    add = tally.add

    def nvb_matrix(name: str) -> tuple[list[list[float | None]] | None, str]:
        return _nvb_matrix(nvb, not_run, name)

    def p2p_matrix(key: str) -> tuple[list[list[float]] | None, str]:
        return _p2p_matrix(p2p, not_run, key)

    for gpu in gpus:
        m, why = nvb_matrix("host_to_device_memcpy_ce")
        add("h2d_pinned", gpu, -1, "nvbandwidth", "host_to_device_memcpy_ce", m, why, 0, gpu)
        m, why = nvb_matrix("device_to_host_memcpy_ce")
        add("d2h_pinned", gpu, -1, "nvbandwidth", "device_to_host_memcpy_ce", m, why, 0, gpu)
        m, why = nvb_matrix("device_local_copy")
        add("d2d", gpu, -1, "nvbandwidth", "device_local_copy", m, why, 0, gpu)
        m2, why = p2p_matrix("unidir_p2p_disabled")
        add(
            "d2d",
            gpu,
            -1,
            "p2pBandwidthLatencyTest",
            "unidir_p2p_disabled",
            m2,
            why,
            gpu,
            gpu,
            0.5,
            "the sample counts both the read and the write of a copy inside one GPU (gb *= 2); halved here to bytes "
            "copied",
        )
    if len(gpus) < 2:
        tally.skipped.append({"what": "p2p", "reason": "one GPU: no peers"})
    for src in gpus:
        for dst in gpus:
            if src == dst:
                continue
            m, why = nvb_matrix("device_to_device_memcpy_write_ce")
            add("p2p_write", src, dst, "nvbandwidth", "device_to_device_memcpy_write_ce", m, why, src, dst)
            m, why = nvb_matrix("device_to_device_memcpy_read_ce")
            add("p2p_read", src, dst, "nvbandwidth", "device_to_device_memcpy_read_ce", m, why, src, dst)
            m2, why = p2p_matrix("unidir_p2p_writes")
            add("p2p_write", src, dst, "p2pBandwidthLatencyTest", "unidir_p2p_writes", m2, why, src, dst)
            m2, why = p2p_matrix("bidir_p2p_enabled")
            add("p2p_bidir", src, dst, "p2pBandwidthLatencyTest", "bidir_p2p_enabled", m2, why, src, dst)

    verdict, reason = _conclusion(tally.comparisons, not_run, tolerance)
    return {
        "schema": SCHEMA,
        "verdict": verdict,
        "reason": reason,
        "tolerance": tolerance,
        "gpus": gpus,
        "comparisons": tally.comparisons,
        "not_compared": tally.skipped,
        "not_run": not_run,
    }


# ---------------------------------------------------------------------------------------------------------------
# Running the three tools


def _run(argv: list[str], out: Path, timeout_s: float) -> tuple[int, str]:
    """Run one tool with LC_ALL=C; its stdout and stderr are kept in ``out`` (and ``out``.stderr)."""
    env = dict(os.environ, LC_ALL="C")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    except subprocess.TimeoutExpired as err:
        stdout = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        write_text_atomic(out, stdout)
        return 124, f"{argv[0]}: still running after {timeout_s:.0f} s, stopped"
    write_text_atomic(out, proc.stdout)
    write_text_atomic(out.with_name(out.name + ".stderr"), proc.stderr)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1]
        return proc.returncode, f"{argv[0]} exited {proc.returncode}: {tail}"
    return 0, ""


def tool_commands(
    bw_bin: str, nvbandwidth_bin: str, p2p_bin: str, out_dir: Path, nbytes: int = DEFAULT_BYTES
) -> dict[str, list[str]]:
    """The three command lines, every tool at ``nbytes`` (a multiple of 1 MiB)."""
    if nbytes <= 0 or nbytes % (1 << 20):
        raise ValueError(f"buffer size {nbytes} is not a positive multiple of 1 MiB")
    size = str(nbytes)
    return {
        "gpuaccept-bw": [
            bw_bin,
            "--cases",
            "d2d_oneway",
            "--min-bytes",
            size,
            "--max-bytes",
            size,
            "--perturbation",
            "0",
            "--matrix-bytes",
            size,
            "--output",
            str(out_dir / "gpuaccept-bw.json"),
        ],
        "nvbandwidth": [
            nvbandwidth_bin,
            "-j",
            "-b",
            str(nbytes >> 20),
            "-t",
            "host_to_device_memcpy_ce",
            "device_to_host_memcpy_ce",
            "device_local_copy",
            "device_to_device_memcpy_write_ce",
            "device_to_device_memcpy_read_ce",
        ],
        # The sample counts ints; --p2p_read adds the read matrices.
        "p2p": [p2p_bin, f"--numElems={nbytes // 4}"],
    }


def run_and_compare(
    bw_bin: str,
    nvbandwidth_bin: str,
    p2p_bin: str,
    out_dir: str | os.PathLike[str],
    *,
    nbytes: int = DEFAULT_BYTES,
    tolerance: float = DEFAULT_TOLERANCE,
    timeout_s: float = 900,
) -> dict[str, Any]:
    """Run gpuaccept-bw, nvbandwidth and p2pBandwidthLatencyTest one after the other, keep their raw outputs in
    ``out_dir``, compare, and write ``out_dir/crosscheck.json`` (atomically). Returns the document."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cmds = tool_commands(bw_bin, nvbandwidth_bin, p2p_bin, out, nbytes)
    not_run: dict[str, str] = {}
    rc, why = _run(cmds["gpuaccept-bw"], out / "gpuaccept-bw.stdout", timeout_s)
    bw_path = out / "gpuaccept-bw.json"
    if rc != 0 or not bw_path.is_file():
        # Exit 2: it measured, but its copies did not verify: its figures cannot be trusted, which is a failure.
        failed = rc == 2 and bw_path.is_file()
        doc = {
            "schema": SCHEMA,
            "verdict": FAIL if failed else NOT_RUN,
            "reason": f"gpuaccept-bw's verification failed: {why}"
            if failed
            else f"gpuaccept-bw did not measure: {why or 'no document written'}",
            "tolerance": tolerance,
            "commands": cmds,
        }
        write_text_atomic(out / "crosscheck.json", json.dumps(doc, indent=2) + "\n")
        return doc

    def measure(tool: str, output: str, parse: Callable[[str, str], Any]) -> Any:
        """One reference tool run and its output parsed; None, with the reason in not_run, when either failed."""
        rc, why = _run(cmds[tool], out / output, timeout_s)
        if rc != 0:
            not_run[tool] = why
            return None
        try:
            return parse((out / output).read_text(), str(out / output))
        except CrosscheckInputError as err:
            not_run[tool] = str(err)
            return None

    nvb = measure("nvbandwidth", "nvbandwidth.json", parse_nvbandwidth)
    p2p = measure("p2p", "p2pBandwidthLatencyTest.txt", parse_p2p)
    bw_doc = textinput.load_json(bw_path, "the gpuaccept-bw document", CrosscheckInputError, object)
    doc = compare(
        bw_doc,
        nvb,
        p2p,
        tolerance,
        bw_source=str(bw_path),
        theirs_bytes={"nvbandwidth": nbytes, "p2pBandwidthLatencyTest": nbytes // 4 * 4},
        not_run=not_run,
    )
    doc["commands"] = cmds
    write_text_atomic(out / "crosscheck.json", json.dumps(doc, indent=2) + "\n")
    return doc


def _text(path: str, what: str) -> str:
    return textinput.read_text(Path(path), what, CrosscheckInputError)


def compare_files(
    bw: str, nvbandwidth: str | None, p2p: str | None, tolerance: float = DEFAULT_TOLERANCE
) -> dict[str, Any]:
    """compare() on recorded outputs: gpuaccept-bw's JSON document, nvbandwidth -j output, the p2p sample's text."""
    bw_doc = textinput.load_json(Path(bw), "the gpuaccept-bw document", CrosscheckInputError, object)
    if not isinstance(bw_doc, dict):
        raise CrosscheckInputError(f"{bw}: not a gpuaccept-bw document (not a JSON object)")
    nvb = parse_nvbandwidth(_text(nvbandwidth, "nvbandwidth's output"), nvbandwidth) if nvbandwidth else None
    samples = parse_p2p(_text(p2p, "p2pBandwidthLatencyTest's output"), p2p) if p2p else None
    not_run = {}
    if nvb is None:
        not_run["nvbandwidth"] = "no output given"
    if samples is None:
        not_run["p2p"] = "no output given"
    return compare(bw_doc, nvb, samples, tolerance, bw_source=bw, not_run=not_run)


def _size(text: str) -> int:
    units = {"": 1, "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30}
    match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", text.strip())
    if not match or match.group(2).upper() not in units:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 256MiB)")
    return int(match.group(1)) * units[match.group(2).upper()]


def cmd_crosscheck(args: argparse.Namespace) -> int:
    if args.bw_bin:
        missing = [
            o
            for o, v in (
                ("--nvbandwidth-bin", args.nvbandwidth_bin),
                ("--p2p-bin", args.p2p_bin),
                ("--out-dir", args.out_dir),
            )
            if not v
        ]
        if missing:
            raise CrosscheckInputError(f"--bw-bin runs the tools: also give {', '.join(missing)}")
        doc = run_and_compare(
            args.bw_bin,
            args.nvbandwidth_bin,
            args.p2p_bin,
            args.out_dir,
            nbytes=args.bytes,
            tolerance=args.tolerance,
            timeout_s=args.timeout,
        )
    else:
        if not args.bw:
            raise CrosscheckInputError("give --bw-bin (run the tools) or --bw (compare recorded outputs)")
        doc = compare_files(args.bw, args.nvbandwidth, args.p2p, args.tolerance)
        if args.output:
            write_text_atomic(args.output, json.dumps(doc, indent=2) + "\n")
    for c in doc.get("comparisons", []):
        where = f"GPU {c['gpu']}" if "gpu" in c else f"GPU {c['src']}->{c['dst']}"
        print(
            f"{c['what']:<11} {where:<10} ours {c['ours_gb_per_s']:>9.2f} GB/s  {c['tool']} {c['test']:<32} "
            f"{c['theirs_gb_per_s']:>9.2f} GB/s  {c['deviation']:+7.2%}  {'agree' if c['agree'] else 'DISAGREE'}"
        )
    for s in doc.get("not_compared", []):
        print(f"not compared: {s.get('what')} {s.get('tool', '')} {s.get('test', '')}: {s['reason']}")
    print(f"cross-check: {doc['verdict']}: {doc['reason']}")
    return EXIT[doc["verdict"]]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`gpuaccept crosscheck` (gpuaccept.cli_common says how subcommands are added)."""
    sp = sub.add_parser(
        "crosscheck",
        help="compare gpuaccept-bw with nvbandwidth and p2pBandwidthLatencyTest (run them, or read their outputs)",
    )
    run = sp.add_argument_group("run the three tools on this node")
    run.add_argument("--bw-bin", help="gpuaccept-bw")
    run.add_argument("--nvbandwidth-bin", help="nvbandwidth")
    run.add_argument("--p2p-bin", help="p2pBandwidthLatencyTest")
    run.add_argument("--out-dir", help="raw outputs and crosscheck.json go here")
    run.add_argument("--bytes", type=_size, default=DEFAULT_BYTES, help="buffer size of every tool (default 256MiB)")
    run.add_argument("--timeout", type=float, default=900, help="seconds per tool (default 900)")
    rec = sp.add_argument_group("compare recorded outputs")
    rec.add_argument("--bw", help="gpuaccept-bw's JSON document")
    rec.add_argument("--nvbandwidth", help="nvbandwidth -j output")
    rec.add_argument("--p2p", help="p2pBandwidthLatencyTest's output")
    rec.add_argument("--output", help="write the cross-check document here (atomically)")
    sp.add_argument(
        "--tolerance", type=float, default=DEFAULT_TOLERANCE, help="largest relative difference (default 0.05)"
    )
    sp.set_defaults(func=cmd_crosscheck)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpuaccept.probe.crosscheck")
    add_parser(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["crosscheck", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except (ValueError, OSError) as err:
        print(f"gpuaccept crosscheck: {err}", file=sys.stderr)
        return 4


if __name__ == "__main__":
    sys.exit(main())
