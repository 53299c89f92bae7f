"""The burn-in's section of the evaluation report (docs/checks/burnin.md, docs/reports.md): per node type, the newest
gpuaccept-burnin document drawn as every GPU's timeline (SM clock, GPU and memory temperature against their
thresholds, power, and each GEMM window's rate), the stretches where a clock-event reason other than the power cap
held shaded, and a table of each GPU's figures.

The timeline is read through gpuaccept.probe.burnin_timeline, as the judge's rules read it; this module draws, it
decides nothing (the verdict's rows say pass or fail). Plots are matplotlib SVG, inline, as the report's others.
"""

from __future__ import annotations

import html
import io
from typing import Any

from gpuaccept.probe import burnin, burnin_timeline

TOOL = burnin.TOOL
#: The most points a line is drawn with (a 30-minute burn-in has 1800 samples per GPU): each drawn point stands for
#: a bucket of samples, the worst of it (the lowest clock, the highest temperature and power).
MAX_POINTS = 600
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def _pyplot():
    import matplotlib  # noqa: PLC0415 (optional dependency: requirements/report.txt)

    matplotlib.use("svg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "gpuaccept", "font.size": 9})
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def buckets(times: list[float], values: list[Any], worst: Any, limit: int = MAX_POINTS) -> tuple[list, list]:
    """(times, values) of at most ``limit`` points: consecutive samples in buckets, each drawn at its first time with
    the ``worst`` (min or max) of its values read; a bucket with none read is left out."""
    n = len(times)
    size = max(1, -(-n // limit))
    ts, vs = [], []
    for i in range(0, n, size):
        read = [v for v in values[i : i + size] if v is not None]
        if read:
            ts.append(times[i])
            vs.append(worst(read))
    return ts, vs


def plot(label: str, doc: dict[str, Any]) -> str:
    """Every GPU's timeline of one burn-in, four panels sharing the time axis (minutes), as an HTML figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(4, 1, figsize=(9, 8.5), sharex=True)
    ax_clock, ax_temp, ax_power, ax_rate = axes
    per_gpu = (doc.get("results") or {}).get("per_gpu") or []
    for i, g in enumerate(per_gpu):
        color = COLORS[i % len(COLORS)]
        timeline = g.get("timeline") or {}
        try:
            burnin_timeline.check(timeline)
        except burnin_timeline.TimelineError:
            continue
        minutes = [t / 60.0 for t in timeline["t_s"]]
        name = f"GPU {g.get('gpu')}"
        ax_clock.plot(*buckets(minutes, timeline["sm_mhz"], min), lw=0.8, color=color, label=name)
        ax_temp.plot(*buckets(minutes, timeline["gpu_temp_c"], max), lw=0.8, color=color, label=f"{name} GPU")
        mem = buckets(minutes, timeline["mem_temp_c"], max)
        if mem[0]:
            ax_temp.plot(*mem, lw=0.8, ls="--", color=color, label=f"{name} memory")
        ax_power.plot(*buckets(minutes, timeline["power_w"], max), lw=0.8, color=color, label=name)
        for w in burnin_timeline.gemm_windows(g.get("windows") or []):
            start, end = w["start_s"] / 60.0, (w.get("end_s") or w["start_s"]) / 60.0
            ax_rate.plot([start, end], [w["tflops_median"]] * 2, lw=2.0, color=color)
        for e in burnin_timeline.episodes(timeline):
            if e.reason not in burnin_timeline.POWER_CAP_OR_IDLE:
                for ax in axes:
                    ax.axvspan(e.start_s / 60.0, e.end_s / 60.0, color=color, alpha=0.12, lw=0)
        slowdown = (g.get("thresholds_c") or {}).get("gpu_slowdown_c")
        if slowdown is not None and i == 0:
            ax_temp.axhline(slowdown, color="#b00020", lw=0.8, ls=":", label=f"GPU slowdown {slowdown} C (GPU 0)")
    titles = (
        (ax_clock, "SM clock (MHz)", "lowest in each bucket"),
        (ax_temp, "temperature (C)", "GPU solid, memory dashed; highest in each bucket"),
        (ax_power, "power (W)", "highest in each bucket"),
        (ax_rate, "GEMM (TFLOP/s)", "each window's median"),
    )
    for ax, ylabel, note in titles:
        ax.set_ylabel(ylabel)
        ax.set_title(note, fontsize=8, loc="right")
        ax.grid(True, alpha=0.3)
    ax_rate.set_xlabel("minutes since the burn-in started")
    ax_clock.legend(fontsize=7, ncol=min(8, max(1, len(per_gpu))), loc="lower left")
    ax_temp.legend(fontsize=6, ncol=2, loc="lower right")
    minutes = ((doc.get("results") or {}).get("elapsed_s") or 0.0) / 60.0
    fig.suptitle(f"{label}: burn-in of {doc.get('started_utc')}, {minutes:.1f} minutes")
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    caption = (
        f"{label}: every GPU's clock, temperatures, power and GEMM windows; shaded where a clock-event reason "
        "other than the power cap held, in that GPU's colour"
    )
    return (
        f'<figure class="plot" data-plot="burnin:{html.escape(label)}">{text[text.index("<svg") :]}'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _fmt(value: Any, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


def table(doc: dict[str, Any]) -> str:
    """Each GPU's figures (gpuaccept.probe.burnin.gpu_figures) and the reasons other than the power cap that held."""
    head = [
        "GPU",
        "bus",
        "GEMM windows",
        "first (TFLOP/s)",
        "last (TFLOP/s)",
        "last/first",
        "GPU max (C)",
        "memory max (C)",
        "slowdown (C)",
        "median power (W)",
        "other clock-event reasons",
        "XID",
        "new ECC",
    ]
    rows = []
    for g in (doc.get("results") or {}).get("per_gpu") or []:
        try:
            burnin_timeline.check(g.get("timeline"))
        except burnin_timeline.TimelineError as err:
            rows.append([g.get("gpu"), g.get("pci_bus_id"), f"timeline unreadable: {err}", *[""] * (len(head) - 3)])
            continue
        f = burnin.gpu_figures(g)
        other = sorted(
            {e.reason for e in burnin_timeline.episodes(g["timeline"])} - set(burnin_timeline.POWER_CAP_OR_IDLE)
        )
        rows.append(
            [
                g.get("gpu"),
                g.get("pci_bus_id"),
                f["gemm_windows_min"],
                _fmt(f["tflops_first_window_min"]),
                _fmt(f["tflops_last_window_min"]),
                _fmt(f["tflops_last_over_first_min"], ".3f"),
                _fmt(f["gpu_temp_max_c"]),
                _fmt(f["memory_temp_max_c"]),
                _fmt((g.get("thresholds_c") or {}).get("gpu_slowdown_c")),
                _fmt(f["power_median_max_w"]),
                ", ".join(other) or "none",
                _fmt(f["xid_events"]),
                _fmt(f["ecc_uncorrectable_new"]),
            ]
        )
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='burnin'><tr>{cells}</tr>{body}</table>"


def section(groups: list[Any]) -> str:
    """Per column (a report group: ``label`` and ``newest(tool)``) with a burn-in, its plot and table."""
    parts = []
    for g in groups:
        doc = g.newest(TOOL)
        if doc:
            memtest = ((doc.get("results") or {}).get("memtest") or {}).get("why")
            note = f"<p class='note'>{html.escape(memtest)}</p>" if memtest else ""
            parts += [
                f"<h3 id='burnin-{html.escape(g.label)}'>{html.escape(g.label)}</h3>",
                note,
                plot(g.label, doc),
                table(doc),
            ]
    if not parts:
        return "<p>No gpuaccept-burnin documents among the inputs (the burnin suite's <code>burnin</code> check).</p>"
    return "\n".join(parts)
