"""One parser for HPL's output: NVIDIA's xhpl, hpcc's HPL section and gpuaccept-hplstyle.

All three print HPL's result table (``T/V  N  NB  P  Q  Time  Gflops``, NVIDIA's xhpl adds ``( per GPU)``),
one scaled-residual line per run (``||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)= 1.2e-03 ...... PASSED``),
the threshold in the header (``Computational tests pass if scaled residuals are less than 16.0``) and
``End of Tests.`` at the end. HPL's own rule decides: a run passes when its residual is below the threshold.

:func:`judge` turns a parsed output into the reasons it fails, each naming the file and line: no result row,
a row without its residual line, a residual at or above the threshold (or NaN), a threshold of 0 or below
(HPL then skips its check, so nothing was checked), a missing threshold, or an output cut short (no
``End of Tests.``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpuaccept.probe import document

__all__ = [
    "HplOutput",
    "HplRun",
    "gpu_transport",
    "hpcc_hpl_section",
    "hpl_flops",
    "parse",
    "parse_file",
    "record_problems",
    "scaled_residual",
    "scaled_residual_from_norms",
    "to_document",
]

_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf)"
_ROW = re.compile(
    rf"^\s*(?P<tv>[A-Za-z][A-Za-z0-9_]*)\s+(?P<n>\d+)\s+(?P<nb>\d+)\s+(?P<p>\d+)\s+(?P<q>\d+)\s+"
    rf"(?P<time>{_NUM})\s+(?P<gflops>{_NUM})(?:\s*\(\s*(?P<per_gpu>{_NUM})\s*\))?\s*$"
)
_HEADER = re.compile(r"^\s*T/V\s+N\s+NB\s+P\s+Q\s+Time\s+Gflops")
_RESIDUAL = re.compile(
    rf"^\s*\|\|Ax-b\|\|_oo\s*/\s*\(\s*eps\s*\*\s*\(\s*\|\|A\|\|_oo\s*\*\s*\|\|x\|\|_oo\s*\+\s*\|\|b\|\|_oo\s*\)\s*\*\s*N\s*\)"
    rf"\s*=\s*(?P<value>{_NUM})\s*\.+\s*(?P<verdict>PASSED|FAILED)"
)
_THRESHOLD = re.compile(rf"Computational tests pass if scaled residuals are less than\s+(?P<value>{_NUM})")
_EPS = re.compile(rf"relative machine precision \(eps\) is taken to be\s+(?P<value>{_NUM})")
_END = re.compile(r"^\s*End of Tests\.")
# HPL-CUDA's rank 0 on stderr (reframe_checks/src/hpl/gpuaccept_hpl_gpu.cu, set_up_comms)
_TRANSPORT = re.compile(
    r"^gpuaccept HPL: grid (?P<p>\d+) x (?P<q>\d+), panel broadcast (?P<bcast>nccl|mpi|none) \((?P<why>[^)]*)\), "
    r"NCCL_NVLS_ENABLE=(?P<nvls>\S+)\s*$"
)


@dataclass
class HplRun:
    """One row of HPL's result table and its residual line."""

    line: int  # 1-based line of the table row
    tv: str
    n: int
    nb: int
    p: int
    q: int
    seconds: float
    gflops: float
    gflops_per_gpu: float | None = None
    residual: float | None = None
    residual_verdict: str | None = None  # PASSED / FAILED as printed
    residual_line: int | None = None

    @property
    def tflops(self) -> float:
        return self.gflops / 1e3


@dataclass
class HplOutput:
    source: str
    runs: list[HplRun] = field(default_factory=list)
    threshold: float | None = None
    eps: float | None = None
    ended: bool = False  # 'End of Tests.' seen
    stray_residual_lines: list[int] = field(default_factory=list)


def _num(text: str) -> float:
    return float(text)


def parse(text: str, source: str = "<output>") -> HplOutput:
    """Parses HPL's output; never raises on content (see :func:`judge` for what is wrong with it)."""
    out = HplOutput(source=source)
    in_table = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if _HEADER.match(line):
            in_table = True
            continue
        if m := _THRESHOLD.search(line):
            out.threshold = _num(m["value"])
            continue
        if m := _EPS.search(line):
            out.eps = _num(m["value"])
            continue
        if _END.match(line):
            out.ended = True
            continue
        if m := _RESIDUAL.match(line):
            pending = [r for r in out.runs if r.residual_line is None]
            if pending:
                run = pending[-1]
                run.residual, run.residual_verdict, run.residual_line = _num(m["value"]), m["verdict"], lineno
            else:
                out.stray_residual_lines.append(lineno)
            continue
        if in_table and (m := _ROW.match(line)):
            out.runs.append(
                HplRun(
                    line=lineno,
                    tv=m["tv"],
                    n=int(m["n"]),
                    nb=int(m["nb"]),
                    p=int(m["p"]),
                    q=int(m["q"]),
                    seconds=_num(m["time"]),
                    gflops=_num(m["gflops"]),
                    gflops_per_gpu=_num(m["per_gpu"]) if m["per_gpu"] else None,
                )
            )
            # The table goes on: with a threshold of 0 or below HPL prints its header once and then one row per
            # test, with no residual line between them (gpuaccept.probe.hpl_dat.render_sweep's sweeps).
    return out


def parse_file(path: str | Path, hpcc: bool = False) -> HplOutput:
    """Parses a file; with ``hpcc``, only its HPL section (hpcc's other sections print HPL-like headers)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    return parse(hpcc_hpl_section(text) if hpcc else text, str(path))


def hpcc_hpl_section(text: str) -> str:
    """hpcc's output with every line outside 'Begin of HPL section.' .. 'End of HPL section.' blanked (line
    numbers stay those of the file); all blank when the section never began (hpcc failed before HPL)."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("Begin of HPL section."):
            inside = True
        elif line.startswith("End of HPL section."):
            inside = False
        lines.append(line if inside else "")
    return "\n".join(lines) + "\n"


def record_problems(out: HplOutput, expected_runs: int | None = None) -> list[str]:
    """What makes this output an incomplete record: no result row, a run without its residual line (HPL was cut
    short, or skipped its check at a threshold of 0 or below), a rate that is not a number, or another count of
    runs than started. Whether the residuals pass is the judge's rule (gpuaccept.judge.rules.hpl_problems), read
    from the document (:func:`to_document`), and decided there alone."""
    src = out.source
    problems: list[str] = []
    if not out.runs:
        problems.append(f"{src}: no result row (T/V N NB P Q Time Gflops): the run crashed or did not start")
    for run in out.runs:
        what = f"{src}:{run.line}: run {run.tv} N={run.n}"
        if run.residual is None:
            problems.append(f"{what}: no residual line follows (crashed, killed or cut short, or no check made)")
        # HPL prints the time with 2 decimals: a tiny run shows 0.00 s, but never a rate of 0 or NaN.
        if not (math.isfinite(run.gflops) and run.gflops > 0 and math.isfinite(run.seconds) and run.seconds >= 0):
            problems.append(f"{what}: no usable time/rate ({run.seconds:g} s, {run.gflops:g} Gflops)")
    if expected_runs is not None and len(out.runs) != expected_runs:
        problems.append(f"{src}: {len(out.runs)} result rows, expected {expected_runs}")
    return problems


def gpu_transport(text: str) -> list[dict]:
    """What HPL-CUDA's rank 0 said on stderr for each grid it ran: ``{"grid": "P x Q", "panel_broadcast": "nccl" |
    "mpi" | "none", "why": ..., "nccl_nvls_enable": "0" | ...}``, in order ([] from any other HPL)."""
    found = []
    for line in text.splitlines():
        m = _TRANSPORT.match(line)
        if m:
            found.append({"grid": f"{m['p']} x {m['q']}", "panel_broadcast": m["bcast"], "why": m["why"],
                          "nccl_nvls_enable": m["nvls"]})  # fmt: skip
    return found


def hpl_flops(n: int) -> float:
    """HPL's operation count for order n: 2/3 n^3 + 3/2 n^2."""
    return 2.0 / 3.0 * n**3 + 1.5 * n**2


def scaled_residual(a: list[list[float]], x: list[float], b: list[float], eps: float = 2.0**-53) -> float:
    """HPL's scaled residual ||Ax-b||_oo / (eps * (||A||_oo * ||x||_oo + ||b||_oo) * n), in plain Python.

    For tests and small cross-checks; ``a`` is a list of rows.
    """
    n = len(b)
    if len(a) != n or any(len(row) != n for row in a) or len(x) != n:
        raise ValueError(f"scaled_residual: A must be {n} x {n} and x of length {n}")
    r = [math.fsum(a[i][j] * x[j] for j in range(n)) - b[i] for i in range(n)]
    norm_a = max(math.fsum(abs(v) for v in row) for row in a)
    norm_x = max(abs(v) for v in x)
    norm_b = max(abs(v) for v in b)
    norm_r = max(abs(v) for v in r)
    return scaled_residual_from_norms(norm_r, norm_a, norm_x, norm_b, n, eps)


def scaled_residual_from_norms(
    norm_r: float, norm_a: float, norm_x: float, norm_b: float, n: int, eps: float = 2.0**-53
) -> float:
    """HPL's scaled residual from the infinity norms of r = Ax-b, A, x and b."""
    return norm_r / (eps * (norm_a * norm_x + norm_b) * n)


def to_document(
    out: HplOutput,
    tool: str,
    ranks: int,
    metric_prefix: str = "",
    unit: str = "TFLOP/s",
    per_gpu: bool = True,
    expected_runs: int | None = 1,
    errors: list[str] | None = None,
    backend: dict | None = None,
    started_utc: str = "",
    elapsed_s: float | None = None,
    command_line: list[str] | None = None,
) -> dict:
    """A gpuaccept.bench/1 document (docs/benchmark-json.md) for an HPL output that gpuaccept did not write
    (NVIDIA's xhpl, hpcc), so that the judge reads it like every other document: its HPL rule
    (gpuaccept.judge.rules.hpl_problems) decides from ``parameters.threshold`` and ``results.runs``.

    Metrics (when the record is complete, :func:`record_problems`): ``<prefix>tflops`` (best run, node total; GFLOP/s
    with ``unit="GFLOP/s"``), ``<prefix>tflops_per_gpu`` (the per-GPU column of NVIDIA's xhpl, else the total
    over ``ranks``; only with ``per_gpu``) and ``residual_max``. ``backend`` (which HPL, which BLAS, how it
    was started) goes into the document's parameters as it is. The header is every document's
    (:func:`gpuaccept.probe.document.header`): ``started_utc``, ``elapsed_s`` and ``command_line`` are the run's,
    as the check that started HPL knows them; they tell one run's document from another's.
    """
    # The tool's own verification: a complete record, and HPL's own PASSED on every residual line it printed.
    problems = record_problems(out, expected_runs) + [
        f"{out.source}:{r.residual_line}: run {r.tv} N={r.n}: HPL's own residual check printed {r.residual_verdict}"
        for r in out.runs
        if r.residual is not None and r.residual_verdict != "PASSED"
    ]
    scale = 1e3 if unit == "TFLOP/s" else 1.0
    rate = "tflops" if unit == "TFLOP/s" else "gflops"
    metrics: dict[str, dict] = {}
    if not problems and out.runs:
        best = max(out.runs, key=lambda r: r.gflops)
        metrics[f"{metric_prefix}{rate}"] = {
            "value": best.gflops / scale,
            "unit": unit,
            "better": "higher",
            "description": f"HPL rate of the best run (N={best.n}, NB={best.nb}, {best.p}x{best.q}), node total",
        }
        if per_gpu:
            each = best.gflops_per_gpu if best.gflops_per_gpu is not None else best.gflops / max(ranks, 1)
            metrics[f"{metric_prefix}{rate}_per_gpu"] = {
                "value": each / scale,
                "unit": unit,
                "better": "higher",
                "description": "HPL rate per GPU of the best run (xhpl's per-GPU column, else total / ranks)",
            }
        metrics["residual_max"] = {
            "value": max(r.residual or 0.0 for r in out.runs),
            "unit": "ratio",
            "better": "lower",
            "description": "largest HPL scaled residual over the runs",
        }
    timing = "HPL's own: wall time of HPL_pdgesv (factorisation and solve), rate from 2/3 N^3 + 3/2 N^2"
    return {
        **document.header(tool, command_line or [], started_utc, timing, elapsed_s),
        "devices": [{"index": i} for i in range(ranks)] if per_gpu else [],
        "parameters": {"source": out.source, "threshold": out.threshold, "eps": out.eps, "backend": backend or {}},
        "results": {
            "runs": [
                {
                    "line": r.line,
                    "tv": r.tv,
                    "n": r.n,
                    "nb": r.nb,
                    "p": r.p,
                    "q": r.q,
                    "seconds": r.seconds,
                    "gflops": r.gflops,
                    "gflops_per_gpu": r.gflops_per_gpu,
                    "scaled_residual": r.residual,
                    "residual_verdict": r.residual_verdict,
                }
                for r in out.runs
            ],
            "ended": out.ended,
        },
        "metrics": metrics,
        "waived": {},
        "verification": {"passed": not problems, "checked": len(out.runs), "failures": problems},
        "errors": list(errors or []),
    }
