"""One self-contained HTML evaluation report from run directories: the first page for the decision (headline
figures per node type and side by side: report_headline), inventory, verdicts, GPU by GPU (report_pergpu), the
bandwidth sweep, the NUMA x GPU matrix, the PCIe model, compute/transfer overlap against the model of
van Werkhoven et al. (2014), GEMM and FFT offload against the host's BLAS and FFT, GEMM and host GEMM scaling,
other checks (HPL, NAMD...), power and energy, and two or more node types side by side with ratios to a chosen baseline.

Inputs are groups of runs: ``[LABEL=]PATH``, where PATH is a run directory (results/<node>/<run>), a results
tree holding many, or a folder of benchmark documents. Every ``gpuaccept.bench/1`` document under PATH is read
(ReFrame's output and stage trees alike, each document once), and every verdict.json. Plots are matplotlib
figures inlined as SVG, so the file reads offline; nothing is fetched. Documents whose verification failed are
listed and left out of the figures and tables.
"""

from __future__ import annotations

import copy
import datetime as dt
import html
import io
import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuaccept import __version__, atomic, manifest, textinput
from gpuaccept.judge import readback
from gpuaccept.judge.status import FAIL, NOT_RUN
from gpuaccept.layout import BENCH_SCHEMA, VERDICT_FILE
from gpuaccept.probe import fft, offload, overlap
from gpuaccept.results import across_heatmap, archive, burnin_plot, report_deviation, report_headline, report_pergpu
from gpuaccept.results import scaling as hpl_scaling
from gpuaccept.results.report_group import Group

VERDICT_SCHEMA = "gpuaccept.verdict/1"
KNOWN_TOOLS = ("gpuaccept-bw", "gpuaccept-gemm", "gpuaccept-cpugemm", "gpuaccept-sample", "gpuaccept-md-apoa1")
SWEEP_CASES = (
    "h2d_pinned_oneway",
    "d2h_pinned_oneway",
    "h2d_pageable_oneway",
    "d2h_pageable_oneway",
    "d2d_oneway",
    "pinned_roundtrip",
    "pageable_roundtrip",
)
MATRIX_KEYS = ("h2d_pageable", "d2h_pageable", "h2d_pinned", "d2h_pinned", "bidir_pinned")
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")


class ReportInputError(ValueError):
    """An input path or document the report cannot use; the message names it."""


LABEL_RE = re.compile(r"^[\w.+-]+$")
FACTS_KEYS = {"hostname", "gpus", "driver_version", "numa_nodes", "logical_cpus"}  # `gpuaccept facts` output


def _read_json(path: Path) -> tuple[Any, str]:
    try:  # read strictly, as the judge reads it: a link, a key twice, NaN, deep nesting is no document
        return textinput.load_json(path, "the file", ValueError, object), ""
    except ValueError as err:
        return None, f"not readable as JSON: {str(err).removeprefix(f'{path}: ')}"


def load_group(spec: str) -> Group:
    """``[LABEL=]PATH[,PATH...]``: the runs under the paths. LABEL defaults to the verdicts' node type, or
    the GPU model and count of the documents."""
    label, _, rest = spec.partition("=")
    if not rest or not LABEL_RE.match(label):
        label, rest = "", spec
    given = [Path(p) for p in rest.split(",") if p]
    if not given:
        raise ReportInputError(f"{spec!r}: no path given ([LABEL=]PATH[,PATH...])")
    paths, unpacked = [], []
    for path in given:  # a run archive, or a folder holding some (an evidence folder): unpacked to read
        try:
            folders, names = archive.expand(path)
        except archive.ArchiveError as err:
            raise ReportInputError(str(err)) from None
        paths += folders
        unpacked += names
    group = Group(label, paths, archives=unpacked)
    seen: set[tuple] = set()
    found: list[tuple[str, str, dict[str, Any]]] = []
    judged: list[Path] = []  # the folders of the verdicts found: their runs' documents are judged
    for path in paths:
        if not path.is_dir():
            raise ReportInputError(f"{path}: not a directory of runs or benchmark documents, nor a run archive")
        for f in sorted(path.rglob("*.json")):
            doc, error = _read_json(f)
            if error:  # a half-written or damaged file is shown, not skipped
                group.rejected.append((str(f), error))
                continue
            if not isinstance(doc, dict):
                continue
            if doc.get("schema") == VERDICT_SCHEMA:
                if f.name == VERDICT_FILE and (why := manifest.unvouched(f.parent)):
                    group.unvouched[len(group.verdicts)] = why
                group.verdicts.append(doc)
                judged.append(f.parent)
            elif FACTS_KEYS <= set(doc):
                group.facts.append(doc)
            elif doc.get("schema") == BENCH_SCHEMA:
                key = (
                    doc.get("tool"),
                    doc.get("started_utc"),
                    (doc.get("host") or {}).get("hostname"),
                    doc.get("elapsed_s"),
                )
                if key in seen:
                    continue  # ReFrame's output and stage trees both hold a copy
                seen.add(key)
                verification = doc.get("verification") or {}
                if not verification.get("passed", True) or doc.get("errors"):
                    why = [*map(str, verification.get("failures", [])[:2]), *map(str, (doc.get("errors") or [])[:2])]
                    group.rejected.append((str(f), "; ".join(why) or "verification failed"))
                    continue
                found.append((doc.get("started_utc") or "", str(f), doc))
    found.sort(key=lambda t: (t[0], t[1]))
    group.docs = [d for _, _, d in found]
    group.unjudged = [d for _, f, d in found if not any(Path(f).is_relative_to(run) for run in judged)]
    group.verdicts.sort(key=lambda v: v.get("started_unix") or 0)
    if not group.docs and not group.verdicts:
        where = ", ".join(map(str, given))
        raise ReportInputError(f"{where}: no benchmark documents or verdicts found in it or in the archives it holds")
    if not group.label:
        types = sorted({v.get("node_type", "?") for v in group.verdicts})
        if types:
            group.label = "+".join(types)
        else:
            devices = next((d.get("devices") for d in group.docs if d.get("devices")), [])
            group.label = f"{devices[0]['name']} x{len(devices)}" if devices else str(paths[0])
    return group


# ---------------------------------------------------------------------------------------------- plotting


def _pyplot():
    import matplotlib  # noqa: PLC0415 (optional dependency: requirements/report.txt)

    matplotlib.use("svg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "gpuaccept", "font.size": 9})
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _svg(fig: Any, plot_id: str, caption: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    _pyplot().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    return (
        f'<figure class="plot" data-plot="{html.escape(plot_id)}">{text}'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _group_svg(fig: Any, kind: str, group: Group, caption: str) -> str:
    """One node type's figure: plot id ``<kind>:<label>``, and the caption after the label."""
    return _svg(fig, f"{kind}:{group.label}", f"{group.label}: {caption}")


def _colors(n: int) -> list[str]:
    base = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]
    return [base[i % len(base)] for i in range(n)]


def _frame(ax: Any, xlabel: str, ylabel: str, title: str = "", *, logx: bool = True, logy: bool = True,
           **grid: Any) -> None:  # fmt: skip
    """An axis in the report's style: sizes in powers of two on x (``logx``), rates and times on a log y
    (``logy``), its labels and title ('' none), a light grid (``grid``: matplotlib's ``which``, ``axis``)."""
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3, **grid)


def plot_sweep(group: Group, doc: dict[str, Any]) -> str:
    """Allada et al. (2009), figures 4-7: NetPIPE throughput and latency against size, log axes, GPU 0's test cases."""
    plt = _pyplot()
    sweep = [s for s in doc["results"].get("sweep", []) if s.get("gpu") == 0]
    fig, (ax_t, ax_l) = plt.subplots(1, 2, figsize=(10, 3.8))
    for s, color in zip(sweep, _colors(len(sweep)), strict=True):
        pts = sorted(s["points"], key=lambda p: p["bytes"])
        x = [p["bytes"] for p in pts]
        ax_t.plot(x, [p["gb_per_s"] for p in pts], ".-", ms=2.5, lw=1, color=color, label=s["case"])
        ax_l.plot(x, [p["seconds"] * 1e6 for p in pts], ".-", ms=2.5, lw=1, color=color, label=s["case"])
    for ax, ylabel in ((ax_t, "throughput (GB/s)"), (ax_l, "time per transfer (us)")):
        _frame(ax, "transfer size (bytes)", ylabel, which="major")
    ax_t.legend(fontsize=7, loc="upper left")
    ax_t.set_title(f"{group.label}: throughput")
    ax_l.set_title(f"{group.label}: latency")
    caption = f"bandwidth sweep of GPU 0 ({doc.get('started_utc')}): {doc.get('timing', '')}"
    return _group_svg(fig, "sweep", group, caption)


def plot_sweep_compare(groups: list[Group]) -> str | None:
    plt = _pyplot()
    cases = ("h2d_pinned_oneway", "d2h_pinned_oneway", "d2d_oneway")
    fig, axes = plt.subplots(1, len(cases), figsize=(12, 3.6))
    drawn = False
    for g, color in zip(groups, _colors(len(groups)), strict=True):
        doc = g.newest("gpuaccept-bw")
        if not doc:
            continue
        for ax, case in zip(axes, cases, strict=True):
            s = next((s for s in doc["results"].get("sweep", []) if s["gpu"] == 0 and s["case"] == case), None)
            if s:
                pts = sorted(s["points"], key=lambda p: p["bytes"])
                ax.plot([p["bytes"] for p in pts], [p["gb_per_s"] for p in pts], lw=1.2, color=color, label=g.label)
                drawn = True
    if not drawn:
        _pyplot().close(fig)
        return None
    for ax, case in zip(axes, cases, strict=True):
        _frame(ax, "transfer size (bytes)", "", case)
    axes[0].set_ylabel("throughput (GB/s)")
    axes[0].legend(fontsize=7)
    return _svg(fig, "sweep:compare", "Throughput against size, every node type (GPU 0, newest run)")


def plot_matrix(group: Group, doc: dict[str, Any]) -> str | None:
    """Kozin and Cable (2010), tables 1-4, as heat maps: NUMA node (or core) x GPU, one panel per direction and
    memory."""
    matrix = doc["results"].get("matrix") or []
    if not matrix:
        return None
    plt = _pyplot()
    rows = sorted({(m.get("numa_node"), m.get("core")) for m in matrix}, key=lambda r: (r[0] or 0, r[1] or -1))
    gpus = sorted({m["gpu"] for m in matrix})
    fig, axes = plt.subplots(
        1, len(MATRIX_KEYS), figsize=(1.2 + (1.0 + 0.9 * len(gpus)) * len(MATRIX_KEYS), 1.2 + 0.45 * len(rows))
    )
    for n, (ax, key) in enumerate(zip(axes, MATRIX_KEYS, strict=True)):
        grid = [[math.nan] * len(gpus) for _ in rows]
        for m in matrix:
            v = m.get(key)
            if isinstance(v, (int, float)):
                grid[rows.index((m.get("numa_node"), m.get("core")))][gpus.index(m["gpu"])] = v
        # One colour scale per panel, from 0 to its largest figure: equal figures look equal, and a slow
        # far node stands out as in Kozin and Cable (2010)'s tables.
        top = max((v for row in grid for v in row if not math.isnan(v)), default=1.0)
        ax.imshow(grid, cmap="viridis", vmin=0, vmax=top, aspect="auto")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    color = "white" if v < 0.6 * top else "black"
                    ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=8, color=color)
        ax.set_xticks(range(len(gpus)), [f"GPU {g}" for g in gpus])
        labels = [f"node {r}" if c is None else f"core {c}" for r, c in rows]
        ax.set_yticks(range(len(rows)), labels if n == 0 else [])
        ax.tick_params(left=n == 0)
        ax.set_title(f"{key} (GB/s)", fontsize=8)
    mib = matrix[0].get("bytes", 0) / 2**20
    caption = f"NUMA x GPU bandwidth at {mib:.0f} MiB, thread and host buffer bound to the node"
    return _group_svg(fig, "matrix", group, caption)


def plot_peer(group: Group, doc: dict[str, Any]) -> str | None:
    """GPU x GPU: source against destination, write, read and bidirectional; pairs without access blank."""
    peer = doc["results"].get("peer") or []
    if not peer:
        return None
    plt = _pyplot()
    gpus = sorted({p["src"] for p in peer} | {p["dst"] for p in peer})
    keys = ("write_gb_per_s", "read_gb_per_s", "bidir_gb_per_s")
    fig, axes = plt.subplots(1, len(keys), figsize=(1.2 + (1.0 + 0.8 * len(gpus)) * len(keys), 1.0 + 0.6 * len(gpus)))
    for n, (ax, key) in enumerate(zip(axes, keys, strict=True)):
        grid = [[math.nan] * len(gpus) for _ in gpus]
        for p in peer:
            if isinstance(p.get(key), (int, float)):
                grid[gpus.index(p["src"])][gpus.index(p["dst"])] = p[key]
        top = max((v for row in grid for v in row if not math.isnan(v)), default=1.0)
        ax.imshow(grid, cmap="viridis", vmin=0, vmax=top, aspect="auto")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                text = "-" if math.isnan(v) else f"{v:.0f}"
                color = "black" if math.isnan(v) or v >= 0.6 * top else "white"
                ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
        ax.set_xticks(range(len(gpus)), [f"to {g}" for g in gpus])
        ax.set_yticks(range(len(gpus)), [f"from {g}" for g in gpus] if n == 0 else [])
        ax.tick_params(left=n == 0)
        ax.set_title(f"{key.removesuffix('_gb_per_s')} (GB/s)", fontsize=8)
    return _group_svg(fig, "peer", group, "GPU x GPU peer copies (- on the diagonal)")


def plot_model(group: Group, doc: dict[str, Any]) -> str | None:
    """van Werkhoven et al. (2014): the pinned one-way time against size with the fitted T(k) = (L + o) + k G."""
    model = [m for m in doc["results"].get("model") or [] if m.get("gpu") == 0]
    if not model:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(model), figsize=(5 * len(model), 3.6), squeeze=False)
    for ax, m in zip(axes[0], model, strict=True):
        case = f"{m['direction']}_pinned_oneway"
        s = next((s for s in doc["results"].get("sweep", []) if s["gpu"] == 0 and s["case"] == case), None)
        if not s:
            continue
        pts = sorted(s["points"], key=lambda p: p["bytes"])
        x = [p["bytes"] for p in pts]
        ax.plot(x, [p["seconds"] * 1e6 for p in pts], "o", ms=2.5, label="measured")
        fit = [m["lo_fit_us"] + k * m["G_s_per_byte"] * 1e6 for k in x]
        ax.plot(
            x,
            fit,
            "-",
            lw=1.2,
            color="#d62728",
            label=f"L+o {m['lo_fit_us']:.2f} us + k/{m['asymptotic_gb_per_s']:.1f} GB/s",
        )
        _frame(ax, "transfer size k (bytes)", "time (us)", f"{group.label}: {m['direction']} model fit")
        ax.legend(fontsize=7)
    caption = "PCIe model T(k) = (L + o) + k G fitted over sizes >= 64 KiB (van Werkhoven et al. 2014), GPU 0"
    return _group_svg(fig, "model", group, caption)


def overlap_model(doc: dict[str, Any]) -> dict[str, Any]:
    """``results.model`` of a gpuaccept-overlap document; a document that lacks it (the model step failed, or the
    raw output) is annotated here, on a copy, with the run's own copies as the links (gpuaccept.probe.overlap).
    Raises overlap.OverlapError, naming the key, when the document cannot be modelled."""
    model = (doc.get("results") or {}).get("model")
    if isinstance(model, dict) and model.get("per_gpu"):
        return model
    return overlap.annotate(copy.deepcopy(doc))["results"]["model"]


def _methods(row: dict[str, Any]) -> list[str]:
    return [str(m["method"]) for m in row["methods"] if m.get("method")]


def plot_overlap(group: Group, doc: dict[str, Any], gpu: dict[str, Any], links_from: str) -> str:
    """Time against arithmetic intensity (log-log): each method's measured points and the predicted line of
    van Werkhoven et al. (2014)'s model, one colour per method."""
    plt = _pyplot()
    rows = sorted(gpu["intensities"], key=lambda r: r["flop_per_byte"])
    methods = list(dict.fromkeys(m for r in rows for m in _methods(r)))
    gid = f"overlap-{group.label}-gpu{gpu['gpu']}"  # each series' SVG group id
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for method, color in zip(methods, _colors(len(methods)), strict=True):
        pts = [
            (r["flop_per_byte"], m) for r in rows for m in r["methods"] if m.get("method") == method and m.get("run")
        ]
        if not pts:
            continue
        x = [p[0] for p in pts]
        ax.plot(x, [p[1]["measured_s"] * 1e3 for p in pts], "o", ms=4, color=color, label=method,
                gid=f"{gid}-measured-{method}")  # fmt: skip
        ax.plot(x, [p[1]["predicted_s"] * 1e3 for p in pts], "-", lw=1, color=color,
                gid=f"{gid}-predicted-{method}")  # fmt: skip
    title = f"{group.label}: GPU {gpu['gpu']}, {gpu['copy_engines']} copy engines"
    _frame(ax, "arithmetic intensity (flop/byte)", "time, host to host (ms)", title, which="major")
    ax.legend(fontsize=7, ncols=2, title="points: measured; lines: model", title_fontsize=7)
    nbytes = next((g.get("bytes") for g in doc["results"].get("per_gpu") or [] if g.get("gpu") == gpu["gpu"]), None)
    size = f"{nbytes / 2**20:.0f} MiB each way, " if isinstance(nbytes, (int, float)) else ""
    return _svg(
        fig,
        f"overlap:{group.label}:gpu{gpu['gpu']}",
        f"{group.label}: compute/transfer overlap on GPU {gpu['gpu']} ({doc.get('started_utc')}), {size}"
        f"each method measured (points) and predicted by van Werkhoven et al. (2014)'s model with links from "
        f"{links_from} (lines; managed: predicted as sync, its error is page migration's cost)",
    )


def overlap_tables(group: Group, gpu: dict[str, Any]) -> str:
    """Per intensity: the fastest method measured and predicted, Kendall's tau, each method's model error; then
    the full-duplex figure and its flag."""
    rows = sorted(gpu["intensities"], key=lambda r: r["flop_per_byte"])
    methods = list(dict.fromkeys(m for r in rows for m in _methods(r)))
    modelled = {m["method"]: m.get("modelled", True) for r in rows for m in r["methods"] if m.get("run")}
    head = ["GPU", "flop/byte", "kernel (ms)", "best measured", "best predicted", "Kendall's tau"]
    head += [f"{m} error" + ("" if modelled.get(m, True) else " (not modelled)") for m in methods]
    out = []
    for r in rows:
        by = {m.get("method"): m for m in r["methods"]}
        row: list[Any] = [gpu["gpu"], r["flop_per_byte"], r["kernel_s"] * 1e3]
        same = r["best_measured"] == r["best_predicted"]
        row.append(r["best_measured"])
        row.append(Markup(f'<span class="{"pass" if same else "fail"}">{html.escape(str(r["best_predicted"]))}</span>'))
        row.append(r["rank_tau"])
        for m in methods:
            e = by.get(m) or {}
            row.append(f"{e['rel_error']:+.1%}" if e.get("run") else f"not run: {e.get('not_run') or '?'}")
        out.append(row)
    d = gpu["duplex"]
    flag = Markup(
        '<span class="pass">full duplex</span>' if d["full_duplex"] else '<span class="fail">NOT full duplex</span>'
    )
    times = [d["h2d_s"] * 1e3, d["d2h_s"] * 1e3, d["bidir_s"] * 1e3]
    duplex = _table(
        ["group", "GPU", "H2D alone (ms)", "D2H alone (ms)", "both at once (ms)", "fraction overlapped", "flag"],
        [[group.label, gpu["gpu"], *times, d["fraction_overlapped"], flag]],
        "overlap-duplex",
    )
    return _table(head, out, "overlap") + duplex


def _per_column(groups: list[Group], tool: str, check: str, anchor: str, note: str,
                body: Callable[[Group, dict[str, Any]], list[str]]) -> str:  # fmt: skip
    """A section with one subsection per column that has a ``tool`` document: its newest, rendered by ``body``
    (HTML parts), under the column's heading (id ``<anchor>-<label>``), after ``note``. Columns without one have
    no subsection; where none has one, a line names the check that makes them."""
    parts = []
    for g in groups:
        doc = g.newest(tool)
        if doc:
            parts.append(f"<h3 id='{anchor}-{html.escape(g.label)}'>{html.escape(g.label)}</h3>")
            parts.extend(body(g, doc))
    if not parts:
        return f"<p>No {tool} documents among the inputs (the evaluation suite's <code>{check}</code> check).</p>"
    return note + "\n".join(parts)


def _unreadable(doc: dict[str, Any], what: str, err: Exception) -> str:
    return (
        f"<p class='fail'>The {html.escape(str(doc.get('tool')))} document of "
        f"{html.escape(str(doc.get('started_utc')))} {what}: {html.escape(str(err))}</p>"
    )


def overlap_column(group: Group, doc: dict[str, Any]) -> list[str]:
    """Per GPU the plot, the per-intensity table and the full-duplex figure."""
    try:
        model = overlap_model(doc)
    except overlap.OverlapError as err:
        return [_unreadable(doc, "cannot be modelled", err)]
    parts = []
    for gpu in model["per_gpu"]:
        parts.append(plot_overlap(group, doc, gpu, str(model.get("links_from", ""))))
        parts.append(overlap_tables(group, gpu))
    return parts


def overlap_section(groups: list[Group]) -> str:
    """Per column with a gpuaccept-overlap document (the newest): :func:`overlap_column`."""
    note = (
        "<p class='note'>Errors are (predicted - measured) / measured: negative where the method ran slower than "
        f"the model says. Measured times within {overlap.TIE_REL:.0%} of each other count as ties for Kendall's "
        "tau (1: the model orders the methods as measured). Best predicted in red where it is not the method "
        "measured fastest. "
        f"H2D and D2H count as full duplex from {overlap.FULL_DUPLEX_MIN} of the one-way time overlapped "
        "(docs/checks/overlap.md).</p>"
    )
    return _per_column(groups, "gpuaccept-overlap", "overlap", "overlap", note, overlap_column)


def offload_analysis(group: Group, doc: dict[str, Any]) -> dict[str, Any]:
    """``results.crossover`` of a gpuaccept-xgemm document (gpuaccept.probe.offload); a document that lacks it (the
    tool's raw output) is analysed here, on a copy, against the group's gpuaccept-cpugemm documents, or with no
    host at all where the group has none. Raises offload.OffloadError, naming the key, when it cannot be read."""
    done = (doc.get("results") or {}).get("crossover")
    if isinstance(done, dict) and isinstance(done.get("per_precision"), dict):
        return done
    hosts = group.by_tool("gpuaccept-cpugemm")
    names = [f"gpuaccept-cpugemm of {h.get('started_utc')}" for h in hosts]
    why = "" if hosts else "no host GEMM timings among this column's documents (gpuaccept-cpugemm)"
    rates = offload.host_rates(zip(names, hosts, strict=True))
    return offload.annotate(copy.deepcopy(doc), rates, ", ".join(names), no_host=why)["results"]["crossover"]


def offload_links(group: Group, doc: dict[str, Any]) -> tuple[tuple[overlap.Link, overlap.Link] | None, str]:
    """The pinned-copy links (L + o, G, g per direction) of the xgemm run's GPU from the column's newest
    gpuaccept-bw document (its fitted PCIe model, as the overlap model reads it), and where they came from; (None,
    why) where there is none."""
    gpu = (doc.get("parameters") or {}).get("gpu", 0)
    bw = group.newest("gpuaccept-bw")
    if bw is None:
        return None, "no fitted PCIe model among this column's documents (no gpuaccept-bw run): no model line"
    try:
        return overlap.links_from_bandwidth(bw, gpu), f"the PCIe model fitted by gpuaccept-bw ({bw.get('started_utc')})"
    except overlap.OverlapError as err:
        return None, f"no fitted PCIe model for GPU {gpu} ({err}): no model line"


def _offload_cases(doc: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(str(c.get("precision")), int(c["n"])): c for c in (doc.get("results") or {}).get("cases") or []}


def _seconds(n: int, gflops: Any) -> float | None:
    ok = isinstance(gflops, (int, float)) and math.isfinite(gflops) and gflops > 0
    return offload.flops(n) / (gflops * 1e9) if ok else None


def offload_model_s(case: dict[str, Any], links: tuple[overlap.Link, overlap.Link]) -> float | None:
    """The pinned offload's time predicted from the measured kernel time and the fitted links."""
    kernel_s = (case.get("kernel") or {}).get("seconds")
    if not isinstance(kernel_s, (int, float)) or not all(isinstance(case.get(k), (int, float))
                                                         for k in ("h2d_bytes", "d2h_bytes")):  # fmt: skip
        return None
    return offload.predicted_offload_s(kernel_s, case["h2d_bytes"], case["d2h_bytes"], *links)


OFFLOAD_SERIES = (  # (key of the series, label, marker, colour): what every offload panel draws, in this order
    ("host", "host", "s", "#7f7f7f"),
    ("kernel", "GPU kernel alone", "o", "#1f77b4"),
    ("pinned", "GPU with copies, pinned", "o", "#2ca02c"),
    ("pageable", "GPU with copies, pageable", "o", "#d62728"),
)


@dataclass
class OffloadPanel:
    """One panel of an offload plot: measured times per series (x, seconds), the model's pinned offload, the
    crossovers (mode: x) and the host series' label."""

    key: str
    title: str
    measured: dict[str, list[tuple[float, float | None]]]
    model: list[tuple[float, float | None]]
    crossovers: dict[str, float]
    host_label: str = "host"


def plot_offload(panels: list[OffloadPanel], plot_id: str, gid: str, xlabel: str, ylabel: str, caption: str) -> str:
    """Time against size (log-log), one panel each: the host's, the kernel's and both offloads' measured points
    (``OFFLOAD_SERIES``), the pinned offload predicted from the PCIe model (a line), and the crossovers (dotted for
    pinned, dashed for pageable). Elements have ids ``<gid>-<panel>-<series|model|crossover-mode>``."""
    plt = _pyplot()
    cols = min(2, len(panels))
    rows_n = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(5.2 * cols, 3.6 * rows_n), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for key, name, marker, color in OFFLOAD_SERIES:
            pts = [(x, t * 1e3) for x, t in panel.measured.get(key, []) if t is not None and math.isfinite(t)]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker, ms=4, color=color,
                        label=panel.host_label if key == "host" else name, gid=f"{gid}-{panel.key}-{key}")  # fmt: skip
        model = [(x, t * 1e3) for x, t in panel.model if t is not None]
        if model:
            ax.plot(*zip(*model, strict=True), "-", lw=1.2, color="#2ca02c", label="pinned, model",
                    gid=f"{gid}-{panel.key}-model")  # fmt: skip
        for mode, style in (("pinned", ":"), ("pageable", "--")):
            if mode in panel.crossovers:
                ax.axvline(panel.crossovers[mode], ls=style, lw=0.8, color="#555", label=f"crossover, {mode}",
                           gid=f"{gid}-{panel.key}-crossover-{mode}")  # fmt: skip
        _frame(ax, xlabel, ylabel, panel.title, which="major")
    legend: dict[str, Any] = {}  # every panel's series once (the crossovers are not in every panel)
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    with_model = any(p.model for p in panels)
    title = f"points: measured{'; line: model' if with_model else ''}; vertical: where the GPU starts to win"
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncols=4, fontsize=7, title=title, title_fontsize=7)
    return _svg(fig, plot_id, caption)


def _crossovers(res: dict[str, Any]) -> dict[str, float]:
    return {m: res[m]["n"] for m in ("pinned", "pageable") if res[m]["status"] == "crossover"}


def _model_note(links: tuple[overlap.Link, overlap.Link] | None, links_note: str, copies: str) -> str:
    """The caption's words on the model line: what it adds to the measured kernel, by which fit, or why none."""
    if links is None:
        return f"{links_note}; "
    return f"the line: the pinned offload predicted as the measured kernel plus {copies} by {links_note}; "


def _model_error(predicted: float | None, measured: float | None) -> str | None:
    """(predicted - measured) / measured, as the tables show it."""
    return f"{(predicted - measured) / measured:+.1%}" if measured and predicted else None


def plot_offload_gemm(group: Group, doc: dict[str, Any], analysis: dict[str, Any],
                      links: tuple[overlap.Link, overlap.Link] | None, links_note: str) -> str:  # fmt: skip
    """Time against n, one panel per precision (:func:`plot_offload`)."""
    cases = _offload_cases(doc)
    panels = []
    for prec, res in analysis["per_precision"].items():
        rows = sorted(res["rows"], key=lambda r: r["n"])
        measured = {key: [(r["n"], _seconds(r["n"], r[f"{key}_gflops"])) for r in rows] for key, *_ in OFFLOAD_SERIES}
        model = ([(r["n"], offload_model_s(cases.get((prec, r["n"]), {}), links)) for r in rows]
                 if links is not None else [])  # fmt: skip
        panels.append(OffloadPanel(prec, f"{prec} (host: {res['host_precision']})", measured, model,
                                   _crossovers(res), f"host {res['host_precision']}"))  # fmt: skip
    return plot_offload(
        panels, f"offload:{group.label}", f"offload-{group.label}", "n (square matrices)", "time per GEMM (ms)",
        f"{group.label}: GEMM offload on GPU {(doc.get('parameters') or {}).get('gpu', 0)} ({doc.get('started_utc')})"
        ": time per GEMM against n, the host's BLAS, the kernel on resident data, and the whole offload (H2D of A and "
        "B, GEMM, D2H of C) from pinned and from pageable memory; "
        + _model_note(links, links_note, "the copies")
        + "dotted and dashed: the pinned and pageable crossovers",
    )


def _fastest(options: dict[str, Any], better: Callable[..., str] = max) -> str:
    """The fastest way to a result from host memory at one size, of ``options`` (``host``, ``GPU, pinned``, ``GPU,
    pageable``: rates with ``better=max``, times with ``better=min``)."""
    measured = {k: v for k, v in options.items() if isinstance(v, (int, float)) and math.isfinite(v)}
    if "host" not in measured:
        return "- (no host timing)"
    return better(measured, key=lambda k: measured[k])


def _winner(row: dict[str, Any]) -> str:
    """:func:`_fastest` of a GEMM row's rates: the host, or the GPU with either kind of copy."""
    return _fastest({"host": row.get("host_gflops"), "GPU, pinned": row.get("pinned_gflops"),
                     "GPU, pageable": row.get("pageable_gflops")})  # fmt: skip


def offload_tables(group: Group, doc: dict[str, Any], analysis: dict[str, Any],
                   links: tuple[overlap.Link, overlap.Link] | None) -> str:  # fmt: skip
    """Per precision the crossovers and the ratios at the largest n; then per size the rates, the fastest way from
    host memory and (with a PCIe model) the pinned offload's model error."""
    per = analysis["per_precision"]
    cases = _offload_cases(doc)
    summary = []
    for prec, res in per.items():
        largest = max(res["rows"], key=lambda r: r["n"], default=None) or {}
        summary.append([group.label, prec, res["host_precision"], res["pinned"]["text"], res["pageable"]["text"],
                        largest.get("n"), largest.get("pinned_over_kernel"), largest.get("pageable_over_kernel")])
    head = ["group", "GPU GEMM", "host GEMM", "GPU with pinned copies beats the host from",
            "with pageable copies from", "largest n", "pinned / kernel", "pageable / kernel"]  # fmt: skip
    sizes = ["GPU GEMM", "n", "kernel (TFLOP/s)", "pinned", "pageable", "host", "pinned / kernel",
             "pageable / kernel", "fastest from host memory"]  # fmt: skip
    rows = []
    for prec, res in per.items():
        for r in sorted(res["rows"], key=lambda r: r["n"]):
            rates = [r[k] / 1e3 if isinstance(r[k], (int, float)) else None
                     for k in ("kernel_gflops", "pinned_gflops", "pageable_gflops", "host_gflops")]  # fmt: skip
            row = [prec, r["n"], *rates, r["pinned_over_kernel"], r["pageable_over_kernel"], _winner(r)]
            if links is not None:
                measured = _seconds(r["n"], r["pinned_gflops"])
                predicted = offload_model_s(cases.get((prec, r["n"]), {}), links)
                row.append(_model_error(predicted, measured))
            rows.append(row)
    return _offload_tables("offload", head, summary, sizes, rows, links is not None, per)


def _offload_tables(cls: str, head: list[str], summary: list[list[Any]], sizes: list[str], rows: list[list[Any]],
                    with_model: bool, per: dict[str, Any]) -> str:  # fmt: skip
    """The crossover table (``<cls>-crossover``), the per-size table (``<cls>-sizes``, with a model error column
    where ``with_model``) and the analysis' notes per case of ``per``."""
    notes = [f"{case}: {note}" for case, res in per.items() for note in res["notes"]]
    noted = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes)
    sizes = [*sizes, "pinned model error"] if with_model else sizes
    return _table(head, summary, f"{cls}-crossover") + _table(sizes, rows, f"{cls}-sizes") + noted


def _offload_column(group: Group, doc: dict[str, Any], analyse: Callable[[Group, dict[str, Any]], dict[str, Any]],
                    key: str, plot: Callable[..., str], tables: Callable[..., str]) -> list[str]:  # fmt: skip
    """An offload column: ``analyse(group, doc)`` (offload.OffloadError: the document named as unreadable), a line
    where its ``key`` holds no case, the notes (no host; no PCIe model: no line), then ``plot(group, doc, analysis,
    links, links_note)`` and ``tables(group, doc, analysis, links)`` with the links of :func:`offload_links`."""
    try:
        analysis = analyse(group, doc)
    except offload.OffloadError as err:
        return [_unreadable(doc, "cannot be read", err)]
    if not analysis[key]:
        return [f"<p class='fail'>The {html.escape(str(doc.get('tool')))} document has no case measured.</p>"]
    parts = []
    links, links_note = offload_links(group, doc)
    if analysis.get("no_host"):
        parts.append(f"<p class='note'>No crossover: {html.escape(str(analysis['no_host']))}.</p>")
    if links is None:
        parts.append(f"<p class='note'>{html.escape(links_note)}.</p>")
    parts.append(plot(group, doc, analysis, links, links_note))
    parts.append(tables(group, doc, analysis, links))
    return parts


def offload_gemm_column(group: Group, doc: dict[str, Any]) -> list[str]:
    """The plot of time against n, the crossovers and ratios per precision, and the rates per size."""
    return _offload_column(group, doc, offload_analysis, "per_precision", plot_offload_gemm, offload_tables)


def offload_gemm_section(groups: list[Group]) -> str:
    """Per column with a gpuaccept-xgemm document (the newest): :func:`offload_gemm_column`."""
    note = (
        "<p class='note'>Rates are 2 n<sup>3</sup> / time. The crossover is the smallest n from which the GPU, "
        "copies included, beats the host at every larger size measured, interpolated in log n; TF32 and BF16 are "
        "set against the host's SGEMM. Every figure here is the host's and the link's: informational, never a "
        "verdict (docs/checks/offload-gemm.md).</p>"
    )
    return _per_column(groups, "gpuaccept-xgemm", "offload_gemm", "offload-gemm", note, offload_gemm_column)


FFT_SHAPES = {"1d": "1-D batched", "3d": "3-D"}
COMPLEX_BYTES = {"fp32": 8, "fp64": 16}  # one complex point: what gpuaccept-fft copies per point each way


def fft_analysis(doc: dict[str, Any]) -> dict[str, Any]:
    """``results.crossover`` of a gpuaccept-fft document (gpuaccept.probe.fft); a document that lacks it (the
    tool's raw output) is analysed here. Raises offload.OffloadError, naming the key, when it cannot be read."""
    done = (doc.get("results") or {}).get("crossover")
    if isinstance(done, dict) and isinstance(done.get("per_case"), dict):
        return done
    return {"per_case": fft.analyse(doc, f"gpuaccept-fft document of {doc.get('started_utc')}")}


def _fft_cases(doc: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(f"fft{c.get('shape')}_{c.get('precision')}", int(c["points"])): c
            for c in (doc.get("results") or {}).get("cases") or [] if c.get("run")}  # fmt: skip


def fft_model_s(case: dict[str, Any], links: tuple[overlap.Link, overlap.Link]) -> float | None:
    """The pinned offload's time predicted from the measured cuFFT time and the fitted links, as gpuaccept-fft
    times it: the input's H2D ((L + o) + bytes G), cuFFT, the output's D2H ((L + o) + bytes G), in stream order;
    bytes = points x ``COMPLEX_BYTES`` (8 for fp32, 16 for fp64), the same each way (the document's ``bytes``,
    printed to 9 digits, is that figure rounded)."""
    kernel_s = (case.get("kernel") or {}).get("seconds")
    width = COMPLEX_BYTES.get(str(case.get("precision")))
    if not isinstance(kernel_s, (int, float)) or width is None:
        return None
    nbytes = int(case["points"]) * width
    return offload.predicted_offload_s(kernel_s, nbytes, nbytes, *links, h2d_transfers=1)


def _fft_title(doc: dict[str, Any], case: str) -> str:
    shape, _, prec = case.removeprefix("fft").partition("_")
    length = (doc.get("parameters") or {}).get("length_1d")
    what = FFT_SHAPES.get(shape, shape) + (f" (length {length})" if shape == "1d" and length else "")
    return f"{what}, {prec}"


def _host_fft(doc: dict[str, Any]) -> tuple[str, Any]:
    host = (doc.get("parameters") or {}).get("host_fft") or {}
    return str(host.get("library", "?")), host.get("threads")


def plot_offload_fft(group: Group, doc: dict[str, Any], analysis: dict[str, Any],
                     links: tuple[overlap.Link, overlap.Link] | None, links_note: str) -> str:  # fmt: skip
    """Time against points, one panel per shape and precision (:func:`plot_offload`)."""
    cases = _fft_cases(doc)
    library, threads = _host_fft(doc)
    panels = []
    for case, res in analysis["per_case"].items():
        rows = sorted(res["rows"], key=lambda r: r["points"])
        measured = {key: [(r["points"], r[f"{key}_s"]) for r in rows] for key, *_ in OFFLOAD_SERIES}
        model = ([(r["points"], fft_model_s(cases.get((case, r["points"]), {}), links)) for r in rows]
                 if links is not None else [])  # fmt: skip
        panels.append(OffloadPanel(case, _fft_title(doc, case), measured, model, _crossovers(res), "host FFT"))
    return plot_offload(
        panels, f"fft:{group.label}", f"fft-{group.label}", "points (complex, per call)", "time per call (ms)",
        f"{group.label}: FFT offload on GPU {(doc.get('parameters') or {}).get('gpu', 0)} ({doc.get('started_utc')})"
        f": time per forward complex FFT against its points, the host's FFT ({library}, {threads} threads), cuFFT on "
        "resident data, and the whole offload (H2D of the input, cuFFT, D2H of the output) from pinned and from "
        "pageable memory; "
        + _model_note(links, links_note, "the copies of the input and the output")
        + "dotted and dashed: the pinned and pageable crossovers",
    )


def fft_tables(group: Group, doc: dict[str, Any], analysis: dict[str, Any],
               links: tuple[overlap.Link, overlap.Link] | None) -> str:  # fmt: skip
    """Per shape and precision the crossovers, the speed-ups at the largest size and the host FFT that ran; then
    per size the times, the fastest way from host memory and (with a PCIe model) the pinned offload's model
    error."""
    per = analysis["per_case"]
    cases = _fft_cases(doc)
    library, threads = _host_fft(doc)
    summary = []
    for case, res in per.items():
        shape, _, prec = case.removeprefix("fft").partition("_")
        top = max(res["rows"], key=lambda r: r["points"], default=None) or {}
        summary.append([group.label, FFT_SHAPES.get(shape, shape), prec, res["pinned"]["text"],
                        res["pageable"]["text"], top.get("points"), top.get("speedup_kernel"),
                        top.get("speedup_pinned"), top.get("speedup_pageable"), library, threads])  # fmt: skip
    head = ["group", "shape", "precision", "GPU with pinned copies beats the host from", "with pageable copies from",
            "largest (points)", "speed-up there, cuFFT alone", "with pinned copies", "with pageable copies",
            "host FFT", "threads"]  # fmt: skip
    sizes = ["case", "points", "host (ms)", "cuFFT alone", "pinned", "pageable", "host / cuFFT", "host / pinned",
             "host / pageable", "fastest from host memory"]  # fmt: skip
    rows = []
    for case, res in per.items():
        for r in sorted(res["rows"], key=lambda r: r["points"]):
            row = [case, r["points"], *(r[f"{m}_s"] * 1e3 for m in ("host", *fft.GPU_MODES)),
                   *(r[f"speedup_{m}"] for m in fft.GPU_MODES),
                   _fastest({"host": r["host_s"], "GPU, pinned": r["pinned_s"], "GPU, pageable": r["pageable_s"]},
                            min)]  # fmt: skip
            if links is not None:
                row.append(_model_error(fft_model_s(cases.get((case, r["points"]), {}), links), r["pinned_s"]))
            rows.append(row)
    return _offload_tables("fft", head, summary, sizes, rows, links is not None, per)


def fft_offload_column(group: Group, doc: dict[str, Any]) -> list[str]:
    """The plot of time against points, the crossovers and speed-ups per shape and precision, the times per size."""
    return _offload_column(group, doc, lambda _g, d: fft_analysis(d), "per_case", plot_offload_fft, fft_tables)


def fft_offload_section(groups: list[Group]) -> str:
    """Per column with a gpuaccept-fft document (the newest): :func:`fft_offload_column`."""
    note = (
        "<p class='note'>Speed-up = host time / GPU time, per call. The crossover is the smallest size, in complex "
        "points, from which the GPU, copies included, beats the host's FFT at every larger size measured, "
        "interpolated in log points. The model line needs the column's fitted PCIe model (a gpuaccept-bw run). "
        "Every figure here is the host's and the link's: informational, never a verdict "
        "(docs/checks/fft-offload.md).</p>"
    )
    return _per_column(groups, "gpuaccept-fft", "fft_offload", "offload-fft", note, fft_offload_column)


def plot_gemm(group: Group, doc: dict[str, Any]) -> str | None:
    """Allada et al. (2009), figure 8: throughput against size per precision (GPU 0, the series sizes: alone, or
    with every GPU busy where the tool measured them all at once, docs/checks/gemm.md)."""
    together = (doc.get("parameters") or {}).get("schedule") == "together"
    mode = "concurrent" if together else "solo"
    entries = [
        e
        for e in doc["results"].get("gemm", [])
        if e.get("gpu") == 0 and e.get("mode") == mode and isinstance(e.get("tflops_median"), (int, float))
    ]
    if not entries:
        return None
    series = {p: sorted((e["m"], e["tflops_median"]) for e in entries
                        if e["precision"] == p and e.get("phase") == "series") for p in PRECISIONS}  # fmt: skip
    if not any(series.values()):
        return None  # the run measured its metric size alone (no series against size): nothing to draw
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    for precision, color in zip(PRECISIONS, _colors(len(PRECISIONS)), strict=True):
        pts = series[precision]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, lw=1, color=color, label=precision)
    title = f"{group.label}: GEMM throughput against size"
    _frame(ax, "m = n = k", "TFLOP/s (median of the calls)", title, logx=False, which="both")
    ax.legend(fontsize=7, ncols=3)
    alone = "with every GPU busy" if together else "alone"
    caption = f"cuBLAS/cuBLASLt GEMM, GPU 0 {alone}, sizes in steps of 8 (Allada et al. 2009, figure 8)"
    return _group_svg(fig, "gemm", group, caption)


def plot_gemm_compare(groups: list[Group]) -> str | None:
    plt = _pyplot()
    values = {}
    for g in groups:
        doc = g.newest("gpuaccept-gemm")
        if doc:
            values[g.label] = {p: (doc["metrics"].get(f"{p}_tflops_min") or {}).get("value") for p in PRECISIONS}
    if not values:
        return None
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(values)
    for i, ((label, vals), color) in enumerate(zip(values.items(), _colors(len(values)), strict=True)):
        xs = [j + i * width for j, p in enumerate(PRECISIONS) if vals.get(p)]
        ax.bar(xs, [vals[p] for p in PRECISIONS if vals.get(p)], width, color=color, label=label)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(PRECISIONS))], PRECISIONS)
    ax.set_yscale("log")
    ax.set_ylabel("TFLOP/s")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return _svg(fig, "gemm:compare", "GEMM at the metric size, min over GPUs, every node type (newest run)")


def plot_cpu_scaling(groups: list[Group]) -> str | None:
    """Allada et al. (2009), figure 9: host GEMM rate against threads, with the linear scaling from one thread."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    drawn = False
    for g, color in zip(groups, _colors(len(groups)), strict=True):
        doc = g.newest("gpuaccept-cpugemm")
        if not doc:
            continue
        for ax, precision in zip(axes, ("dgemm", "sgemm"), strict=True):
            pts = sorted(
                (e["threads"], e["gflops_median"]) for e in doc["results"]["cpu_gemm"] if e["precision"] == precision
            )
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, color=color, label=g.label)
            ax.plot([p[0] for p in pts], [pts[0][1] * p[0] / pts[0][0] for p in pts], ":", color=color, lw=0.8)
            drawn = True
    if not drawn:
        _pyplot().close(fig)
        return None
    for ax, precision in zip(axes, ("DGEMM", "SGEMM"), strict=True):
        _frame(ax, "threads", "GFLOP/s", f"host {precision} (dotted: linear from 1 thread)", logy=False)
        ax.legend(fontsize=7)
    return _svg(fig, "cpu:scaling", "Host GEMM thread scaling (Allada et al. 2009, figure 9), newest run per node type")


def power_series(doc: dict[str, Any]) -> dict[int, tuple[list[float], list[float]]]:
    """{gpu: (t_s, power_w)} from a gpuaccept-sample document. ``results.samples`` is read as a list of
    per-GPU series (``{"gpu", "t_s": [...], "power_w": [...]}``) or of single samples (``{"gpu", "t_s",
    "power_w"}``), the two forms the sampler's contract allows."""
    out: dict[int, tuple[list[float], list[float]]] = {}
    samples = (doc.get("results") or {}).get("samples") or []
    if isinstance(samples, dict):  # {"0": {...}} keyed by GPU
        samples = [{"gpu": int(k), **v} for k, v in samples.items()]
    for s in samples:
        gpu = int(s.get("gpu", s.get("index", 0)))
        t, p = s.get("t_s"), s.get("power_w")
        ts, ps = out.setdefault(gpu, ([], []))
        if isinstance(t, list) and isinstance(p, list):
            pairs = [(a, b) for a, b in zip(t, p, strict=False) if isinstance(b, (int, float))]
            ts.extend(a for a, _ in pairs)
            ps.extend(b for _, b in pairs)
        elif isinstance(t, (int, float)) and isinstance(p, (int, float)):
            ts.append(t)
            ps.append(p)
    return {g: v for g, v in out.items() if v[0]}


def load_name(doc: dict[str, Any]) -> str:
    """What ran under the sampler: the command after ``--``, else the tool."""
    cmd = [str(c) for c in doc.get("command_line") or []]
    if "--" in cmd and cmd.index("--") + 1 < len(cmd):
        return Path(cmd[cmd.index("--") + 1]).name
    return str((doc.get("parameters") or {}).get("load") or doc.get("tool"))


def plot_power(group: Group, doc: dict[str, Any]) -> str | None:
    """Kozin and Cable (2010), figure 3: the power of every GPU and of the node over the run."""
    series = power_series(doc)
    if not series:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.4))
    for (gpu, (t, p)), color in zip(sorted(series.items()), _colors(len(series)), strict=True):
        ax.plot(t, p, lw=0.9, color=color, label=f"GPU {gpu}")
    if len(series) > 1:
        t0 = sorted(series.items())[0][1][0]
        total = [sum(v[1][i] for v in series.values() if i < len(v[1])) for i in range(len(t0))]
        ax.plot(t0, total, lw=1.2, color="black", label="all GPUs")
    _frame(ax, "time (s)", "power (W)", f"{group.label}: {load_name(doc)}", logx=False, logy=False)
    ax.legend(fontsize=7)
    return _svg(
        fig,
        f"power:{group.label}:{load_name(doc)}",
        f"{group.label}: power during {load_name(doc)} ({doc.get('started_utc')})",
    )


# ---------------------------------------------------------------------------------------------- tables


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def _table(head: list[str], rows: list[list[Any]], cls: str = "") -> str:
    out = [
        f'<table class="{cls}"><thead><tr>'
        + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
    ]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c if isinstance(c, Markup) else _cell(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


class Markup(str):
    """HTML that a table cell takes as it is."""


def inventory(groups: list[Group]) -> str:
    head = ["", *[g.label for g in groups]]

    def first(g: Group, get: Any) -> Any:
        for d in reversed(g.docs):
            try:
                v = get(d)
            except (KeyError, IndexError, TypeError):
                continue
            if v not in (None, "", []):
                return v
        return None

    def facts(g: Group) -> dict[str, Any]:
        found = [v.get("facts") for v in g.verdicts if v.get("facts")] + g.facts
        return found[-1] if found else {}

    def gpus(g: Group) -> str | None:
        found = report_headline.node(g)
        return f"{found.gpus} x {', '.join(found.models)} ({found.origin})" if found.gpus else None

    def nodes(g: Group) -> str:
        names = {v["node"] for v in g.verdicts} | {(d.get("host") or {}).get("hostname", "?") for d in g.docs}
        return ", ".join(sorted(names))

    def pcie(g: Group) -> str | None:
        f = facts(g)
        return f"Gen{f['gpus'][0]['pcie_gen_max']} x{f['gpus'][0]['pcie_width_max']}" if f.get("gpus") else None

    def span(g: Group) -> str | None:
        started = sorted(d["started_utc"] for d in g.docs if d.get("started_utc"))
        return f"{started[0]} / {started[-1]}" if started else None

    def dev(key: str):
        return lambda g: first(g, lambda d: d["devices"][0][key])

    lines: list[tuple[str, Any]] = [
        ("nodes", nodes),
        ("GPUs", gpus),
        ("GPU memory (GiB)", lambda g: first(g, lambda d: d["devices"][0]["memory_bytes"] / 2**30)),
        ("SMs", dev("sm_count")),
        ("compute capability", dev("compute_capability")),
        ("PCIe (max)", pcie),
        ("driver", lambda g: facts(g).get("driver_version") or first(g, lambda d: d["cuda"]["driver_release"])),
        (
            "CUDA driver / runtime",
            lambda g: first(g, lambda d: f"{d['cuda']['driver_version']} / {d['cuda']['runtime_version']}"),
        ),
        ("cuBLAS", lambda g: first(g, lambda d: d["cuda"]["cublas_version"])),
        ("CPU", lambda g: first(g, lambda d: d["host"]["cpu_model"])),
        ("logical CPUs", lambda g: first(g, lambda d: d["host"]["logical_cpus"])),
        ("NUMA nodes", lambda g: first(g, lambda d: len(d["host"]["numa_nodes"]))),
        ("host BLAS", lambda g: first(g, lambda d: d["results"]["blas"]["version"])),
        (
            "benchmarks (version, git)",
            lambda g: ", ".join(
                sorted({f"{d.get('tool')} {d.get('tool_version')} {d.get('git_revision')}" for d in g.docs})
            ),
        ),
        ("ReFrame", lambda g: ", ".join(sorted({str(v.get("reframe_version")) for v in g.verdicts})) or None),
        ("benchmark documents", lambda g: len(g.docs)),
        ("first / last run", span),
        ("inputs", lambda g: ", ".join(map(str, g.paths))),
    ]
    rows = [[name, *[fn(g) for g in groups]] for name, fn in lines]
    return _table(head, rows, "inventory")


def _failed_checks(v: dict[str, Any]) -> list[str]:
    try:
        return readback.failed_checks(v)
    except ValueError:
        return ["(rows unreadable)"]


def verdict_summary(groups: list[Group]) -> str:
    rows = []
    for g in groups:
        for i, v in enumerate(g.verdicts):
            counts: dict[str, int] = {}
            for r in v.get("rows", []):
                if r.get("metric"):
                    counts[r["status"]] = counts.get(r["status"], 0) + 1
            started = v.get("started_unix")
            when = dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ") if started else None
            # By its rows, as the judge decides (gpuaccept.judge.readback), whatever its 'verdict' field says.
            try:
                passed, edited = readback.accepted(v), readback.disagreement(v)
            except ValueError as err:
                passed, edited = False, f"its rows cannot be read ({err})"
            edited = "; ".join(x for x in (edited, g.unvouched.get(i, "")) if x)
            mark = Markup(
                f'<span class="{"pass" if passed else "fail"}">{"ACCEPTED" if passed else "REJECTED"}</span>'
                + (f" ({html.escape(edited)})" if edited else "")
            )
            rows.append(
                [
                    g.label,
                    v.get("node"),
                    v.get("node_type"),
                    v.get("suite"),
                    when,
                    v.get("duration_s"),
                    mark,
                    ", ".join(_failed_checks(v)) or "-",
                    ", ".join(f"{k} {n}" for k, n in sorted(counts.items())),
                ]
            )
    if not rows:
        return "<p>No verdicts among the inputs (benchmark documents only).</p>"
    failed = []
    for g in groups:
        for v in g.verdicts:
            for r in v.get("rows", []):
                if r.get("status") in (FAIL, NOT_RUN) and r.get("expected", True):
                    failed.append(
                        [
                            g.label,
                            v.get("node"),
                            v.get("suite"),
                            r["check"],
                            (r.get("metric") or "(check)") + ("" if r.get("gpu") is None else f" [GPU {r['gpu']}]"),
                            r.get("value"),
                            r.get("reference"),
                            r["status"],
                            (r.get("reason") or "")[:300],
                        ]
                    )
    head = [
        "group",
        "node",
        "node type",
        "suite",
        "started",
        "duration (s)",
        "verdict",
        "failed or not run",
        "metrics by status",
    ]
    out = _table(head, rows, "verdicts")
    if failed:
        out += "<p>What failed or did not run, as each verdict judged it:</p>" + _table(
            ["group", "node", "suite", "check", "metric", "value", "reference", "status", "reason"], failed, "failed"
        )
    found = findings_rows(groups)
    if found:
        out += "<p>The failed checks' findings, GPU by GPU, with the fix to try first:</p>" + _table(
            ["group", "node", "suite", "check", "GPU", "rule", "finding", "fix"], found, "findings"
        )
    return out


def findings_rows(groups: list[Group]) -> list[list[Any]]:
    """Each finding of a failed check (its row's ``findings`` in verdict.json), its GPU ("node" where it is about the
    node, a port or the document) and its fix apart from the line."""
    out = []
    for g in groups:
        for v in g.verdicts:
            for r in v.get("rows", []):
                found = [f for f in r.get("findings") or [] if isinstance(f, dict)] if r.get("metric") is None else []
                out += [[g.label, v.get("node"), v.get("suite"), r["check"],
                         "node" if f.get("gpu") is None else f"GPU {f['gpu']}", f.get("rule") or "",
                         (f.get("text") or "")[:300], f.get("fix") or ""] for f in found]  # fmt: skip
    return out


def metric_values(group: Group, tool: str | None = None) -> dict[tuple[str, str], tuple[list[float], str, str]]:
    """{(tool, metric): (values over the group's documents, unit, better)}."""
    out: dict[tuple[str, str], tuple[list[float], str, str]] = {}
    for d in group.docs:
        if tool and d.get("tool") != tool:
            continue
        for name, m in (d.get("metrics") or {}).items():
            if isinstance(m, dict) and isinstance(m.get("value"), (int, float)):
                entry = out.setdefault((d["tool"], name), ([], m.get("unit", ""), m.get("better", "higher")))
                entry[0].append(float(m["value"]))
    return out


def side_by_side(groups: list[Group], baseline: Group, tools: tuple[str, ...] | None = None) -> str:
    """Median of every metric per group, and its ratio to the baseline group (above 1 = better)."""
    values = {g.label: metric_values(g) for g in groups}
    keys = sorted({k for v in values.values() for k in v if tools is None or k[0] in tools})
    if not keys:
        return "<p>No metrics.</p>"
    head = ["tool", "metric", "unit"]
    for g in groups:
        head += [f"{g.label} (median, runs)"] + ([] if g is baseline else [f"{g.label} / {baseline.label}"])
    rows = []
    for tool, metric in keys:
        base = values[baseline.label].get((tool, metric))
        unit = next(v[(tool, metric)][1] for v in values.values() if (tool, metric) in v)
        row: list[Any] = [tool, metric, unit]
        for g in groups:
            v = values[g.label].get((tool, metric))
            med = statistics.median(v[0]) if v else None
            spread = f" [{min(v[0]):.4g}-{max(v[0]):.4g}]" if v and len(v[0]) > 1 else ""
            row.append(f"{med:.4g} ({len(v[0])}){spread}" if v else "-")
            if g is baseline:
                continue
            if v and base and statistics.median(base[0]):
                ratio = med / statistics.median(base[0])  # type: ignore[operator]
                better = ratio >= 1 if v[2] == "higher" else ratio <= 1
                row.append(Markup(f'<span class="{"better" if better else "worse"}">{ratio:.3f}</span>'))
            else:
                row.append("-")
        rows.append(row)
    return _table(head, rows, "compare")


def _bw_rows(groups: list[Group], key: str, row: Callable[[dict[str, Any]], list[Any]]) -> list[list[Any]]:
    """A row per entry of ``results[key]`` in each group's newest gpuaccept-bw document: the group's label, then
    ``row(entry)``."""
    rows = []
    for g in groups:
        doc = g.newest("gpuaccept-bw")
        rows.extend([g.label, *row(entry)] for entry in (doc or {}).get("results", {}).get(key) or [])
    return rows


def model_table(groups: list[Group]) -> str:
    fields = ("lo_us", "lo_fit_us", "asymptotic_gb_per_s", "g_us", "max_rel_error", "fit_points")
    rows = _bw_rows(groups, "model", lambda m: [m["gpu"], m["direction"], *(m.get(f) for f in fields)])
    if not rows:
        return "<p>No PCIe model in these runs.</p>"
    head = [
        "group",
        "GPU",
        "direction",
        "L+o measured (us)",
        "L+o fitted (us)",
        "1/G (GB/s)",
        "g (us)",
        "max rel. error of fit",
        "points",
    ]
    return _table(head, rows, "model")


def matrix_table(group: Group, doc: dict[str, Any]) -> str:
    rows = [
        [
            m["gpu"],
            m.get("numa_node"),
            m.get("core"),
            "yes" if m.get("local") else "no",
            *[m.get(k) for k in MATRIX_KEYS],
        ]
        for m in doc["results"].get("matrix") or []
    ]
    return _table(["GPU", "NUMA node", "core", "local", *[f"{k} (GB/s)" for k in MATRIX_KEYS]], rows, "matrix")


def peer_table(groups: list[Group]) -> str:
    fields = ("write_gb_per_s", "read_gb_per_s", "bidir_gb_per_s")
    rows = _bw_rows(groups, "peer", lambda p: [p["src"], p["dst"], *(p.get(f) for f in fields), p.get("waived", "")])
    if not rows:
        return "<p>No GPU pairs in these runs (one GPU per node).</p>"
    return _table(["group", "src", "dst", "write (GB/s)", "read (GB/s)", "bidirectional (GB/s)", "waived"], rows)


def energy_table(groups: list[Group], baseline: Group) -> str:
    """Kozin and Cable (2010), table 7: per load, elapsed time, average power and energy, and ratios to the baseline."""
    rows: dict[str, dict[str, tuple[float | None, float | None, float | None]]] = {}
    for g in groups:
        for doc in g.by_tool("gpuaccept-sample"):
            metrics = doc.get("metrics") or {}
            per_gpu = (doc.get("results") or {}).get("per_gpu") or []

            def total(key: str, metric: str, _m: dict = metrics, _p: list = per_gpu) -> float | None:
                if isinstance((_m.get(metric) or {}).get("value"), (int, float)):
                    return float(_m[metric]["value"])
                vals = [p.get(key) for p in _p if isinstance(p.get(key), (int, float))]
                return float(sum(vals)) if vals else None

            series = power_series(doc)
            elapsed = doc.get("elapsed_s") or (max(max(t) for t, _ in series.values()) if series else None)
            rows.setdefault(load_name(doc), {})[g.label] = (
                elapsed,
                total("avg_w", "power_avg_w"),
                total("energy_j", "energy_j"),
            )
    if not rows:
        return (
            "<p>No power samples in these runs: checks run with <code>sample_power</code> keep a "
            "<code>power.json</code> (gpuaccept sample) beside their output, and it appears here.</p>"
        )
    head = ["load", "quantity"]
    for g in groups:
        head += [g.label] + ([] if g is baseline else [f"ratio {baseline.label} / {g.label}"])
    out = []
    for load, per in sorted(rows.items()):
        for i, name in enumerate(("elapsed (s)", "average power (W)", "energy (kJ)")):
            row: list[Any] = [load, name]
            base = per.get(baseline.label, (None, None, None))[i]
            for g in groups:
                v = per.get(g.label, (None, None, None))[i]
                v = v / 1000 if (v is not None and i == 2) else v
                row.append(v)
                if g is not baseline:
                    b = base / 1000 if (base is not None and i == 2) else base
                    row.append(b / v if (b and v) else None)
            out.append(row)
    return _table(head, out, "energy")


def md_table(groups: list[Group]) -> str:
    """APOA1 through OpenMM on each group's GPUs (median over its runs of each system), NAMD 3.0's published A100
    figures beside it (labelled as such), and the scaling from the unit cell to the replicated system."""
    from gpuaccept.probe.namd import NAMD3_A100_APOA1, NAMD3_A100_SOURCE  # noqa: PLC0415 - constants only

    rows: list[list[Any]] = []
    scaling: list[str] = []
    for g in groups:
        by_system: dict[str, list[dict[str, Any]]] = {}
        for d in g.by_tool("gpuaccept-md-apoa1"):
            name = ((d.get("results") or {}).get("system") or {}).get("name")
            if name:
                by_system.setdefault(name, []).append(d)
        rates: dict[str, tuple[float, int]] = {}
        for name, docs in sorted(by_system.items(), key=lambda kv: len(kv[0])):

            def med(metric: str, _docs: list = docs) -> float | None:
                vals = [d["metrics"][metric]["value"] for d in _docs if metric in d.get("metrics", {})]
                return statistics.median(vals) if vals else None

            system = docs[-1]["results"]["system"]
            integ = (docs[-1]["results"].get("integrator") or {}).get("kind", "")
            ns = med("ns_per_day")
            rows.append(
                [
                    g.label,
                    name,
                    system.get("atoms"),
                    f"OpenMM {docs[-1]['results'].get('openmm_version', '')} {integ}, {len(docs)} run(s)",
                    ns,
                    med("all_gpus_ns_per_day"),
                    med("cpu_ns_per_day"),
                    med("speedup_vs_cpu"),
                    med("gpu_memory_used_gib"),
                    med("ns_per_day_per_kw"),
                    max(med("energy_bonded_max_rel_diff") or 0.0, med("energy_nonbonded_rel_diff") or 0.0),
                ]
            )
            if ns and system.get("atoms"):
                rates[name] = (ns, system["atoms"])
        if "apoa1" in rates and len(rates) > 1:
            base_ns, base_atoms = rates["apoa1"]
            for name, (ns, atoms) in rates.items():
                if name != "apoa1":
                    scaling.append(
                        f"{g.label}: {name} ({atoms:,} atoms) runs at {ns / base_ns:.3g} x the unit cell's ns/day for "
                        f"{atoms / base_atoms:.3g} x its atoms: {ns * atoms / (base_ns * base_atoms):.3g} x the "
                        "atom-steps per second"
                    )
    if not rows:
        return "<p>No gpuaccept-md-apoa1 documents among the inputs.</p>"
    for mode, fig in NAMD3_A100_APOA1.items():
        label = Markup("<i>NAMD 3.0, A100 80GB PCIe (published logs, not measured here)</i>")
        rows.append(
            [
                label,
                "apoa1",
                92224,
                f"NAMD 3.0 {mode.replace('_', '-')}, {fig['cpus']} cores ({fig['log']})",
                fig["ns_per_day"] if mode != "cpu" else None,
                None,
                fig["ns_per_day"] if mode == "cpu" else None,
                None,
                None,
                None,
                None,
            ]
        )
    head = [
        "group",
        "system",
        "atoms",
        "engine",
        "ns/day (1 GPU)",
        "ns/day (all GPUs)",
        "ns/day (CPU)",
        "speedup",
        "GPU memory GiB",
        "ns/day per kW",
        "step-0 energy vs NAMD (max rel.)",
    ]
    notes = "".join(f"<p>{html.escape(line)}</p>" for line in scaling)
    return (
        _table(head, rows)
        + notes
        + f"<p class='note'>NAMD rows: {html.escape(NAMD3_A100_SOURCE)}. OpenMM rows: this harness's runs, energies "
        "validated against NAMD 3.0's step 0 before timing (docs/checks/md.md).</p>"
    )


def other_checks(groups: list[Group], baseline: Group) -> str:
    tools = tuple(sorted({d["tool"] for g in groups for d in g.docs if d.get("tool") not in KNOWN_TOOLS}))
    if not tools:
        return (
            "<p>No HPL, NAMD or other benchmark documents among the inputs: when those checks run, their "
            "documents' metrics appear here, side by side.</p>"
        )
    return side_by_side(groups, baseline, tools)


# ---------------------------------------------------------------------------------------------- page

CSS = """
body{font-family:sans-serif;margin:2em;max-width:1300px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}figure{margin:1em 0}figure svg{max-width:100%;height:auto}
figcaption{font-size:.85em;color:#555}.pass,.better{color:#13801f;font-weight:bold}
.fail,.worse{color:#b00020;font-weight:bold}.note{color:#555;font-size:.9em}.par{font-weight:bold}
#headline h3{margin:1.2em 0 .2em}#headline table{font-size:.8em}.missing{color:#777}
ul.verdict-lines{margin:.2em 0 1em;padding-left:1.2em;font-size:.85em}li.reason{list-style:none;color:#555}
ol.sources{font-size:.75em;color:#444}sup.cite{color:#555}td.slowest{background:#fde8e8}ul.slow{font-size:.85em}
#headline h3 .note{font-weight:normal;font-size:.7em}
@media print{body{margin:0;max-width:none}#headline{break-after:page}h2{break-after:avoid}
ol.sources{font-size:.65em;margin:.2em 0}#headline h2{margin-top:.5em}}
"""


def build(groups: list[Group], title: str, baseline_label: str | None = None, generated: str | None = None,
          reference_dir: Path | None = None, across: list[tuple[str, dict[str, Any]]] | None = None) -> str:
    """The report: the first page (report_headline: the figures a buyer decides on, per column and side by
    side), the nodes, the verdicts, the GPUs one by one (report_pergpu), then the detail of every benchmark.
    ``reference_dir`` holds the node types the headline sets each figure against (default: the shipped ones);
    ``across``: ``gpuaccept across`` summaries (their file, the summary) shown after the verdicts."""
    if not groups:
        raise ReportInputError("no inputs: give at least one [LABEL=]PATH")
    labels = [g.label for g in groups]
    if len(set(labels)) != len(labels):
        raise ReportInputError(f"two inputs have the same label ({', '.join(labels)}): name them LABEL=PATH")
    if baseline_label and baseline_label not in labels:
        raise ReportInputError(f"--baseline {baseline_label!r} is none of the inputs' labels: {', '.join(labels)}")
    baseline = next(g for g in groups if g.label == (baseline_label or labels[0]))
    generated = generated or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='note'>gpuaccept {__version__} report, made {html.escape(generated)} from "
        f"{sum(len(g.docs) for g in groups)} benchmark documents and {sum(len(g.verdicts) for g in groups)} "
        f"verdicts; ratios are to <b>{html.escape(baseline.label)}</b>. Figures are medians or minima as each "
        "benchmark's <i>timing</i> says (docs/benchmark-json.md).</p>",
        report_headline.section(groups, baseline, reference_dir, report_pergpu.summary),
        "<h2 id='inventory'>Nodes and software</h2>",
        inventory(groups),
        "<h2 id='verdicts'>Verdicts</h2>",
        verdict_summary(groups),
    ]
    rejected = [(g.label, p, why) for g in groups for p, why in g.rejected]
    if rejected:
        parts.append("<p class='fail'>Documents left out (unreadable, verification failed, or errors):</p>")
        parts.append(_table(["group", "document", "why"], [list(r) for r in rejected]))
    if across:
        parts.append("<h2 id='across'>Between nodes</h2>")
        parts += [across_heatmap.html_section(summary, source) for source, summary in across]
    parts.append("<h2 id='per-gpu'>GPU by GPU</h2>")
    parts.append(report_pergpu.section(groups))
    parts.append("<h2 id='deviation'>Against siblings, fleet and own baseline</h2>")
    parts.append(report_deviation.section(groups))
    parts.append("<h2 id='compare'>Side by side</h2>")
    parts.append(side_by_side(groups, baseline, ("gpuaccept-bw", "gpuaccept-gemm", "gpuaccept-cpugemm")))

    parts.append("<h2 id='sweep'>Bandwidth against size</h2>")
    for g in groups:
        doc = g.newest("gpuaccept-bw")
        if doc:
            parts.append(plot_sweep(g, doc))
    if len(groups) > 1:
        parts.append(plot_sweep_compare(groups) or "")
    parts.append("<h2 id='matrix'>NUMA node x GPU bandwidth</h2>")
    for g in groups:
        doc = g.newest("gpuaccept-bw")
        if doc:
            parts.append(plot_matrix(g, doc) or "<p>No matrix.</p>")
            parts.append(matrix_table(g, doc))
    parts.append("<h2 id='peer'>GPU x GPU</h2>")
    for g in groups:
        doc = g.newest("gpuaccept-bw")
        if doc:
            parts.append(plot_peer(g, doc) or "")
    parts.append(peer_table(groups))
    parts.append("<h2 id='model'>PCIe model</h2>")
    parts.append(model_table(groups))
    for g in groups:
        doc = g.newest("gpuaccept-bw")
        if doc:
            parts.append(plot_model(g, doc) or "")
    parts.append("<h2 id='overlap'>Compute/transfer overlap</h2>")
    parts.append(overlap_section(groups))
    parts.append("<h2 id='offload-gemm'>GEMM offload</h2>")
    parts.append(offload_gemm_section(groups))
    parts.append("<h2 id='offload-fft'>FFT offload</h2>")
    parts.append(fft_offload_section(groups))
    parts.append("<h2 id='gemm'>GEMM throughput</h2>")
    for g in groups:
        doc = g.newest("gpuaccept-gemm")
        if doc:
            parts.append(plot_gemm(g, doc) or "")
    if len(groups) > 1:
        parts.append(plot_gemm_compare(groups) or "")
    parts.append("<h2 id='cpu'>Host GEMM thread scaling</h2>")
    parts.append(plot_cpu_scaling(groups) or "<p>No host GEMM runs.</p>")
    parts.append("<h2 id='md'>Molecular dynamics: APOA1</h2>")
    parts.append(md_table(groups))
    parts.append("<h2 id='other'>HPL, NAMD and other checks</h2>")
    parts.append(other_checks(groups, baseline))
    parts.append("<h2 id='hpl-scaling'>HPL-CUDA against GPU count</h2>")
    parts.append(hpl_scaling.section([(g.label, g.docs) for g in groups], _svg))
    parts.append("<h2 id='power'>Power profile</h2>")
    plots = [plot_power(g, d) for g in groups for d in g.by_tool("gpuaccept-sample")]
    parts.extend(p for p in plots if p)
    if not any(plots):
        parts.append("<p>No power samples in these runs.</p>")
    parts.append("<h2 id='burnin'>Burn-in</h2>")
    parts.append(burnin_plot.section(groups))
    parts.append("<h2 id='energy'>Energy</h2>")
    parts.append(energy_table(groups, baseline))
    parts.append("</body></html>\n")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------- browser

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str | None:
    """Debian's chromium (or another Chromium on PATH; GPUACCEPT_CHROMIUM names one)."""
    named = os.environ.get("GPUACCEPT_CHROMIUM")
    if named:
        return shutil.which(named)
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def _headless(args: list[str], what: str, timeout: int = 180) -> subprocess.CompletedProcess:
    browser = chromium()
    if not browser:
        raise ReportInputError(f"{what} needs Chromium: apt-get install chromium (or set GPUACCEPT_CHROMIUM)")
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", *args]
    env = {**os.environ, "LC_ALL": "C"}
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    except subprocess.TimeoutExpired:
        raise ReportInputError(f"{what}: Chromium did not finish in {timeout} s: {' '.join(cmd)}") from None
    if res.returncode != 0:
        raise ReportInputError(f"{what}: Chromium exited {res.returncode}: {res.stderr.strip()[-800:]}")
    return res


def _browser_output(target: Path, suffix: str, flag: str, html_path: Path, extra: list[str], what: str) -> Path:
    """Chromium writes to a temporary name beside ``target``, renamed into place when complete."""
    atomic.make_dirs(target.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    try:
        _headless([*extra, f"{flag}={tmp}", html_path.resolve().as_uri()], what)
        if os.path.getsize(tmp) == 0:
            raise ReportInputError(f"{what}: Chromium wrote nothing to {target}")
        atomic.finish(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


def print_pdf(html_path: Path, pdf: Path) -> Path:
    """The report as PDF, printed by headless Chromium (its print engine keeps the inline SVG as vectors)."""
    return _browser_output(pdf, ".pdf", "--print-to-pdf", html_path, ["--no-pdf-header-footer"], "PDF")


def screenshot(html_path: Path, png: Path, width: int = 1400, height: int = 16000) -> Path:
    """A PNG of the rendered report, ``width`` x ``height`` CSS pixels (the page's white tail is kept)."""
    return _browser_output(png, ".png", "--screenshot", html_path, [f"--window-size={width},{height}"], "screenshot")


def dump_dom(html_path: Path) -> str:
    """The DOM after Chromium has parsed and laid out the report."""
    return _headless(["--dump-dom", html_path.resolve().as_uri()], "DOM dump").stdout
