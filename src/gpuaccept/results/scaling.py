"""HPL-CUDA over the GPUs of one node: the rate against the GPU count, the ideal line (the count times the one-GPU
rate of the same node) and each run's fraction of it.

The runs come from HPL-CUDA's documents (``hpl_cuda``, gpuaccept.probe.hpl.to_document: GpuHplCuda's, or a device
script's) or from HPL's own output files (HPL.out), one rank per GPU, so the GPU count of a row is its P x Q. Only
rows HPL passed (its residual check) count. Per node, each GPU count and grid keeps its fastest row; the one-GPU
row is the base. The report draws one figure per node with more than one GPU count
(:func:`gpuaccept.results.report.build` calls :func:`section`); ``python -m gpuaccept.results.scaling`` prints the
table and, with matplotlib, writes the figure:

    python -m gpuaccept.results.scaling --node h100x4 runs/*/HPL.out --svg scaling.svg
"""

from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.probe import hpl

TOOL = "hpl_cuda"


@dataclass(frozen=True)
class Run:
    """One HPL row that passed: on ``gpus`` GPUs of ``node`` (grid ``P x Q``), ``tflops`` for the whole node."""

    node: str
    gpus: int
    grid: str
    n: int
    nb: int
    tflops: float
    source: str


def runs_of_document(doc: dict[str, Any], source: str = "") -> list[Run]:
    """The passed rows of an HPL-CUDA document (none when the document failed its own verification or is another
    tool's). GPUs: the backend's ``gpus_used``, else the document's devices, else the row's P x Q."""
    if doc.get("tool") != TOOL or not (doc.get("verification") or {}).get("passed"):
        return []
    node = str((doc.get("host") or {}).get("hostname") or "?")
    backend = (doc.get("parameters") or {}).get("backend") or {}
    out = []
    for row in (doc.get("results") or {}).get("runs") or []:
        if row.get("residual_verdict") != "PASSED":
            continue
        gpus = int(backend.get("gpus_used") or len(doc.get("devices") or []) or row["p"] * row["q"])
        out.append(Run(node, gpus, f"{row['p']} x {row['q']}", int(row["n"]), int(row["nb"]),
                       float(row["gflops"]) / 1e3, source or str(doc.get("started_utc") or "")))  # fmt: skip
    return out


def runs_of_output(path: str | Path, node: str) -> list[Run]:
    """The passed rows of an HPL output file of ``node``, one rank per GPU."""
    out = hpl.parse_file(path)
    return [Run(node, r.p * r.q, f"{r.p} x {r.q}", r.n, r.nb, r.gflops / 1e3, str(path))
            for r in out.runs if r.residual_verdict == "PASSED"]  # fmt: skip


@dataclass
class Scaling:
    """One node's runs, the fastest per GPU count and grid, fewest GPUs first."""

    node: str
    runs: list[Run]

    @property
    def base(self) -> Run | None:
        """The fastest one-GPU run: what the ideal is the multiple of."""
        ones = [r for r in self.runs if r.gpus == 1]
        return max(ones, key=lambda r: r.tflops) if ones else None

    @property
    def counts(self) -> list[int]:
        return sorted({r.gpus for r in self.runs})

    def ideal(self, gpus: int) -> float | None:
        base = self.base
        return gpus * base.tflops if base else None

    def fraction(self, run: Run) -> float | None:
        ideal = self.ideal(run.gpus)
        return run.tflops / ideal if ideal else None


def scale(runs: Iterable[Run]) -> list[Scaling]:
    """The runs by node, each GPU count and grid's fastest, nodes in name order."""
    best: dict[tuple[str, int, str], Run] = {}
    for run in runs:
        key = (run.node, run.gpus, run.grid)
        if key not in best or run.tflops > best[key].tflops:
            best[key] = run
    nodes = sorted({k[0] for k in best})
    return [Scaling(node, sorted((r for k, r in best.items() if k[0] == node), key=lambda r: (r.gpus, r.grid)))
            for node in nodes]  # fmt: skip


def rows(s: Scaling) -> list[list[Any]]:
    """The table: GPUs, grid, N, NB, TFLOP/s, per GPU, ideal (GPUs x the one-GPU rate), fraction of ideal."""
    out = []
    for r in s.runs:
        ideal, fraction = s.ideal(r.gpus), s.fraction(r)
        out.append([r.gpus, r.grid, r.n, r.nb, round(r.tflops, 2), round(r.tflops / r.gpus, 2),
                    round(ideal, 2) if ideal else None, round(fraction, 3) if fraction else None])  # fmt: skip
    return out


HEAD = ["GPUs", "grid", "N", "NB", "TFLOP/s", "per GPU", "ideal", "fraction of ideal"]


def figure(s: Scaling) -> Any:
    """A matplotlib figure: each run's rate against its GPU count (one marker per grid, its fraction of ideal beside
    it) and the ideal line from the one-GPU rate."""
    import matplotlib  # noqa: PLC0415 (optional dependency: requirements/report.txt)

    matplotlib.use("svg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    counts = s.counts
    if s.base:
        top = max(counts)
        ax.plot([0, top], [0, top * s.base.tflops], "--", color="#888", lw=1,
                label=f"ideal: GPUs x {s.base.tflops:.2f} (one GPU)")  # fmt: skip
    kinds = {"1 x Q": ("o", "#1f77b4", 4), "P x Q": ("s", "#d62728", -11)}  # marker, colour, label offset
    shown: set[str] = set()
    for r in s.runs:
        kind = "1 x Q" if r.grid.startswith("1 x") else "P x Q"
        marker, color, dy = kinds[kind]
        ax.plot([r.gpus], [r.tflops], marker, color=color, label=None if kind in shown else f"HPL-CUDA, {kind} grid")
        shown.add(kind)
        fraction = s.fraction(r)
        note = f"{r.tflops:.1f} ({r.grid})" + (f", {fraction:.3f} of ideal" if fraction and r.gpus > 1 else "")
        ax.annotate(note, (r.gpus, r.tflops), textcoords="offset points", xytext=(6, dy), fontsize=8)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("TFLOP/s (HPL, node)")
    ax.set_xticks(counts)
    ax.set_xlim(0, max(counts) * 1.25 + 0.5)
    ax.set_ylim(0, max(r.tflops for r in s.runs) * 1.2)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"{s.node}: HPL-CUDA against GPU count", fontsize=9)
    return fig


def section(groups: Sequence[tuple[str, Sequence[dict[str, Any]]]], figure_html: Callable[[Any, str, str], str]) -> str:
    """The report's part: per group (label, its verified documents) and node with HPL-CUDA on more than one GPU
    count, the figure (``figure_html(fig, plot_id, caption)`` makes it HTML) and the table."""
    parts = []
    for label, docs in groups:
        for s in scale(r for d in docs for r in runs_of_document(d)):
            if len(s.counts) < 2:
                continue
            base = s.base
            caption = (f"{label}, node {s.node}: HPL-CUDA's rate against GPU count, the ideal line from the one-GPU "
                       "rate" + ("" if base else " (no one-GPU run: no ideal line)"))  # fmt: skip
            parts.append(figure_html(figure(s), f"hpl-scaling:{label}:{s.node}", caption))
            head = "".join(f"<th>{html.escape(h)}</th>" for h in HEAD)
            body = "".join("<tr>" + "".join(f"<td>{html.escape('-' if v is None else str(v))}</td>" for v in row)
                           + "</tr>" for row in rows(s))  # fmt: skip
            parts.append(f"<table class='scaling'><tr>{head}</tr>{body}</table>")
    return "\n".join(parts) or "<p>No HPL-CUDA runs on more than one GPU count of a node.</p>"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpuaccept.results.scaling", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="HPL-CUDA documents (.json) or HPL output files (HPL.out)")
    ap.add_argument("--node", default="this node", help="the node of the HPL output files (%(default)s)")
    ap.add_argument("--svg", help="write the figure here (needs matplotlib; one node)")
    args = ap.parse_args(argv)
    runs: list[Run] = []
    try:
        for path in args.paths:
            if path.endswith(".json"):
                runs += runs_of_document(textinput.load_json(Path(path), "the HPL-CUDA document", ValueError), path)
            else:
                runs += runs_of_output(path, args.node)
    except (OSError, ValueError, KeyError) as err:
        print(f"gpuaccept.results.scaling: {err}", file=sys.stderr)
        return 2
    scalings = scale(runs)
    if not scalings:
        print("gpuaccept.results.scaling: no passed HPL-CUDA run in " + ", ".join(args.paths), file=sys.stderr)
        return 1
    for s in scalings:
        print(f"node {s.node}" + ("" if s.base else " (no one-GPU run: no ideal)"))
        print("  " + " | ".join(HEAD))
        for row in rows(s):
            print("  " + " | ".join("-" if v is None else str(v) for v in row))
    if args.svg:
        if len(scalings) != 1:
            print(f"gpuaccept.results.scaling: --svg draws one node; these runs are of {len(scalings)} (--node)",
                  file=sys.stderr)
            return 2
        fig = figure(scalings[0])
        fig.savefig(args.svg, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
