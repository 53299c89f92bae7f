"""The report's GPU-by-GPU section: on a node of several GPUs, each GPU's figures side by side, which GPU is the
slow one, and how the node scales (every GPU busy against one; HPL and NCCL over GPU counts).

Each GPU's figures come from the newest document of each tool in a column: its ``gpu_metrics`` where the tool
writes them (one entry per GPU, ``{"gpu", "metrics": {name: {"value", "unit", "better"}}}``, the names those of the
node-level metrics they feed), else from its results: gpuaccept-gemm's ``results.gemm`` (the sustained window at
the metric size, per GPU and precision), gpuaccept-bw's ``results.sweep`` (the device-to-device copy at the largest
size) and ``results.matrix`` (pinned copies from the GPU's own NUMA node), gpuaccept-hplstyle's
``results.per_gpu``. A verdict row that names a GPU (``gpu``) marks that GPU's cell.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuaccept.judge import readback
from gpuaccept.judge.status import FAIL
from gpuaccept.results import report_headline

if TYPE_CHECKING:
    from gpuaccept.results.report_group import Group

#: Figures of the scaling subsection beyond its tables, such as HPL-CUDA's rate against the GPU count: each takes
#: the report's columns and returns an HTML figure, or None where its documents are not among them.
SCALING_FIGURES: list[Callable[[list[Group]], str | None]] = []

#: The checks whose verdict rows a tool's per-GPU figures correspond to.
TOOL_CHECK = {"gpuaccept-gemm": "gemm", "gpuaccept-bw": "bandwidth", "gpuaccept-hplstyle": "hplstyle",
              "gpuaccept-powercheck": "power", "gpuaccept-health": "health"}  # fmt: skip


@dataclass(frozen=True)
class Column:
    tool: str
    metric: str
    label: str
    unit: str
    better: str = "higher"


COLUMNS: tuple[Column, ...] = (
    *(Column("gpuaccept-gemm", f"{p}_tflops_min", f"GEMM {name}", "TFLOP/s")
      for p, name in report_headline.GEMM_NAMES.items()),
    Column("gpuaccept-gemm", "fp64_concurrent_tflops_min", "GEMM FP64, every GPU busy", "TFLOP/s"),
    Column("gpuaccept-bw", "d2d_min", "HBM copy", "GB/s"),
    Column("gpuaccept-bw", "h2d_pinned_min", "H2D pinned", "GB/s"),
    Column("gpuaccept-bw", "d2h_pinned_min", "D2H pinned", "GB/s"),
    Column("gpuaccept-bw", "bidir_pinned_min", "both ways pinned", "GB/s"),
    Column("gpuaccept-hplstyle", "tflops_min", "HPL-style LU", "TFLOP/s"),
)
SLOW = 0.05  # a GPU this far below the median of its node's other GPUs is named as slow
Figures = dict[int, dict[tuple[str, str], float]]  # GPU index -> (tool, metric) -> value
Slowest = dict[tuple[str, str], tuple[int, float]]  # (tool, metric) -> (GPU, from the other GPUs' median)


def _gemm(doc: dict[str, Any]) -> dict[int, dict[str, float]]:
    size = (doc.get("parameters") or {}).get("metric_size")
    # Every GPU at once (the tool's default on several GPUs): the GPU's own rate is its concurrent window.
    own = "concurrent" if (doc.get("parameters") or {}).get("schedule") == "together" else "solo"
    out: dict[int, dict[str, float]] = {}
    for r in (doc.get("results") or {}).get("gemm") or []:
        if r.get("phase") != "window" or (size is not None and r.get("m") != size) or r.get("gpu") is None:
            continue
        each = out.setdefault(int(r["gpu"]), {})
        if r.get("mode") == own and isinstance(r.get("tflops_median"), (int, float)):
            each[f"{r['precision']}_tflops_min"] = float(r["tflops_median"])
            if isinstance(r.get("tflops_with_transfer"), (int, float)):
                each[f"{r['precision']}_xfer_tflops_min"] = float(r["tflops_with_transfer"])
        if r.get("mode") == "concurrent" and isinstance(r.get("tflops_median"), (int, float)):
            each[f"{r['precision']}_concurrent_tflops_min"] = float(r["tflops_median"])
    return out


def _bandwidth(doc: dict[str, Any]) -> dict[int, dict[str, float]]:
    results = doc.get("results") or {}
    out: dict[int, dict[str, float]] = {}
    for s in results.get("sweep") or []:
        if s.get("case") == "d2d_oneway" and s.get("points"):
            top = max(s["points"], key=lambda p: p["bytes"])
            out.setdefault(int(s["gpu"]), {})["d2d_min"] = float(top["gb_per_s"])
    cells: dict[tuple[int, str], list[float]] = {}
    for m in results.get("matrix") or []:
        if not m.get("local") or m.get("binding", "ok") != "ok":
            continue
        for key in ("h2d_pinned", "d2h_pinned", "bidir_pinned", "h2d_pageable", "d2h_pageable"):
            if isinstance(m.get(key), (int, float)):
                cells.setdefault((int(m["gpu"]), f"{key}_min"), []).append(float(m[key]))
    for (gpu, name), values in cells.items():
        out.setdefault(gpu, {})[name] = statistics.median(values)
    return out


def _hplstyle(doc: dict[str, Any]) -> dict[int, dict[str, float]]:
    return {int(g["gpu"]): {"tflops_min": float(g["tflops_median"])}
            for g in (doc.get("results") or {}).get("per_gpu") or []
            if g.get("gpu") is not None and isinstance(g.get("tflops_median"), (int, float))}  # fmt: skip


FROM_RESULTS: dict[str, Callable[[dict[str, Any]], dict[int, dict[str, float]]]] = {
    "gpuaccept-gemm": _gemm,
    "gpuaccept-bw": _bandwidth,
    "gpuaccept-hplstyle": _hplstyle,
}


def figures(doc: dict[str, Any]) -> dict[int, dict[str, float]]:
    """{GPU index: {metric: value}} of one document: its ``gpu_metrics``, else what its results hold per GPU."""
    listed = doc.get("gpu_metrics")
    if isinstance(listed, list) and listed:
        out: dict[int, dict[str, float]] = {}
        for entry in listed:
            if not isinstance(entry, dict) or entry.get("gpu") is None:
                continue
            for name, m in (entry.get("metrics") or {}).items():
                if isinstance(m, dict) and isinstance(m.get("value"), (int, float)):
                    out.setdefault(int(entry["gpu"]), {})[name] = float(m["value"])
        return out
    extract = FROM_RESULTS.get(str(doc.get("tool")))
    return extract(doc) if extract else {}


#: What the per-GPU rows of the other checks measure, as the table heads them (name, unit).
ROW_LABELS = {
    ("bandwidth", "h2d_pageable_min"): ("H2D pageable", "GB/s"),
    ("bandwidth", "d2h_pageable_min"): ("D2H pageable", "GB/s"),
    ("bandwidth", "latency_h2d_max"): ("H2D latency", "us"),
    ("bandwidth", "latency_d2h_max"): ("D2H latency", "us"),
    ("power", "idle_power_max_w"): ("idle power", "W"),
    ("power", "load_power_min_w"): ("power under load, lowest", "W"),
    ("power", "gflops_per_watt"): ("FP64 GEMM per watt", "GFLOP/s/W"),
    ("memtest", "errors_total"): ("memory errors", ""),
    ("memtest", "tested_fraction_min"): ("memory tested, fraction", ""),
    ("memtest", "throughput_gbps_min"): ("memory test rate", "GB/s"),
    ("health", "pcie_gen_min"): ("PCIe generation", ""),
    ("health", "pcie_width_min"): ("PCIe width", ""),
    ("health", "nvlink_links_up_min"): ("NVLink links up", ""),
    ("health", "xid_events"): ("XID events", ""),
}
CHECK_TOOL = {check: tool for tool, check in TOOL_CHECK.items()}


def from_verdicts(group: Group) -> Figures:
    """Each GPU's figures from the rows of the column's verdicts that name a GPU (gpuaccept.judge.readback, the
    judge's reader), keyed by (tool, metric) as the documents' are: each the median over the runs."""
    seen: dict[int, dict[tuple[str, str], list[float]]] = {}
    for v in group.verdicts:
        try:
            rows = readback.rows(v)
        except ValueError:
            continue  # the first page says which verdict cannot be read
        for r in rows:
            if r.gpu is not None and r.metric and r.value is not None:
                key = (CHECK_TOOL.get(r.check, r.check), r.metric)
                seen.setdefault(r.gpu, {}).setdefault(key, []).append(r.value)
    return {g: {k: statistics.median(v) for k, v in each.items()} for g, each in seen.items()}


def per_gpu(group: Group) -> tuple[Figures, list[str]]:
    """Each GPU's figures in a column, keyed by (tool, metric): from its verdicts' per-GPU rows (the check that
    owns each figure), else from the newest document of each tool; and where they came from."""
    if group.verdicts:
        found = from_verdicts(group)
        if found:
            n = len(group.verdicts)
            runs = f"{n} run{'s' if n != 1 else ''}'"
            return found, [f"the rows of the {runs} verdicts (each figure the median over the runs)"]
    out: dict[int, dict[tuple[str, str], float]] = {}
    used = []
    for tool in sorted({str(d.get("tool")) for d in group.docs}):
        doc = group.newest(tool)
        found = figures(doc) if doc else {}
        if not found:
            continue
        used.append(f"{tool} of {doc.get('started_utc')}" + (" (gpu_metrics)" if doc.get("gpu_metrics") else ""))
        for gpu, metrics in found.items():
            for name, value in metrics.items():
                out.setdefault(gpu, {})[(tool, name)] = value
    return out, used


def _verdict_marks(group: Group) -> dict[tuple[str, str, int], tuple[str, str]]:
    """(check, metric, gpu) -> (status, reason) of the verdicts' rows that name a GPU: a failure in any run, else
    the newest run's status."""
    marks: dict[tuple[str, str, int], tuple[str, str]] = {}
    for v in group.verdicts:
        try:
            rows = readback.rows(v)
        except ValueError:
            continue
        for r in rows:
            key = (r.check, str(r.metric), r.gpu) if r.gpu is not None else None
            if key and marks.get(key, ("", ""))[0] != FAIL:
                marks[key] = (r.status, r.reason)
    return marks


def gpu_table(group: Group) -> str:
    """One row per GPU, one column per figure; the slowest GPU of each figure marked with how far it is below the
    other GPUs' median; then which GPU is slow."""
    found, used = per_gpu(group)
    if not found:
        return "<p class='note'>No per-GPU figures among these documents.</p>"
    gpus = sorted(found)
    known = [c for c in COLUMNS if any((c.tool, c.metric) in found[g] for g in gpus)]
    extra = [k for k in ROW_LABELS if any((CHECK_TOOL.get(k[0], k[0]), k[1]) in found[g] for g in gpus)]
    # The other checks' per-GPU figures (power, memory test, health...), shown; the slowest is named only among
    # the performance figures above.
    columns = known + [Column(CHECK_TOOL.get(check, check), metric, *ROW_LABELS[(check, metric)])
                       for check, metric in extra]  # fmt: skip
    facts = {g.get("index"): g for g in report_headline.node_facts(group).get("gpus") or [] if isinstance(g, dict)}
    marks = _verdict_marks(group)
    slowest = slowest_of(found, known)
    head = ["GPU", "model, PCI bus", *[f"{c.label} ({c.unit})" if c.unit else c.label for c in columns]]
    rows = []
    for g in gpus:
        fact = facts.get(g) or {}
        who = ", ".join(str(x) for x in (fact.get("name"), fact.get("pci_bus_id")) if x) or "-"
        cells = [f"<td>{g}</td>", f"<td>{html.escape(who)}</td>"]
        for c in columns:
            value = found[g].get((c.tool, c.metric))
            if value is None:
                cells.append("<td>-</td>")
                continue
            classes, text = [], report_headline.fmt(value)
            worst = slowest.get((c.tool, c.metric))
            if worst and worst[0] == g:
                classes.append("slowest")
                text += f" <span class='note'>({worst[1]:+.{1 if abs(worst[1]) >= 0.01 else 2}%})</span>"
            status, reason = marks.get((TOOL_CHECK.get(c.tool, ""), c.metric, g), ("", ""))
            if status == FAIL:
                classes.append("fail")
            title = f" title='{html.escape(reason, quote=True)}'" if status == FAIL else ""
            cells.append(f"<td class='{' '.join(classes)}' data-gpu='{g}' data-metric='{html.escape(c.metric)}'"
                         f" data-value='{value!r}'{title}>{text}</td>")  # fmt: skip
        rows.append("<tr>" + "".join(cells) + "</tr>")
    table = (
        "<table class='per-gpu'><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    return table + slow_lines(slowest, known, len(gpus)) + (
        f"<p class='note'>From {html.escape('; '.join(used))}. Marked: the slowest GPU of each figure, with how far "
        "it is from the other GPUs' median; in red: a GPU its verdict failed.</p>"
    )


def slowest_of(found: Figures, columns: list[Column]) -> Slowest:
    """(tool, metric) -> (the slowest GPU, how far it is from the other GPUs' median) of each figure measured on two
    GPUs or more."""
    slowest: dict[tuple[str, str], tuple[int, float]] = {}
    for c in columns:
        values = {g: found[g][(c.tool, c.metric)] for g in found if (c.tool, c.metric) in found[g]}
        if len(values) > 1:
            pick = min if c.better == "higher" else max
            worst = pick(values, key=lambda g, v=values: v[g])
            if sum(1 for v in values.values() if v == values[worst]) > 1:
                continue  # a tie: no GPU is the slowest
            others = statistics.median(v for g, v in values.items() if g != worst)
            slowest[(c.tool, c.metric)] = (worst, (values[worst] - others) / others if others else 0.0)
    return slowest


def summary(group: Group) -> str:
    """The GPU-by-GPU section in a few lines, for the first page: which GPU is the slowest in how many figures, and
    any GPU more than ``SLOW`` below the others."""
    found, _ = per_gpu(group)
    if len(found) < 2:
        return ""
    columns = [c for c in COLUMNS if any((c.tool, c.metric) in f for f in found.values())]
    lines = slow_lines(slowest_of(found, columns), columns, len(found))
    link = f"<a href='#per-gpu-{html.escape(group.label)}'>GPU by GPU</a>"
    return f"<p class='note'>{link}, from each GPU's own figures:</p>{lines}" if lines else ""


def slow_lines(slowest: Slowest, columns: list[Column], n_gpus: int) -> str:
    """Which GPU is the slow one: each GPU slowest in how many figures, and every figure where a GPU is more than
    ``SLOW`` below the others' median."""
    if n_gpus < 2 or not slowest:
        return ""
    labels = {(c.tool, c.metric): c.label for c in columns}
    count: dict[int, list[str]] = {}
    for key, (gpu, _) in slowest.items():
        count.setdefault(gpu, []).append(labels[key])
    lines = []
    for gpu, names in sorted(count.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"GPU {gpu} is the slowest in {len(names)} of {len(slowest)} figures: {'; '.join(names)}")
    far = [f"GPU {g}: {labels[k]} {d:+.1%} from the other GPUs' median" for k, (g, d) in slowest.items()
           if abs(d) > SLOW]  # fmt: skip
    lines.append("slow beyond 5 %: " + ("; ".join(far) if far else "none: the GPUs are within 5 % of each other"))
    return "<ul class='slow'>" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"


# ---------------------------------------------------------------------------------------------- scaling

#: (tool, metric, label): node figures compared across GPU counts of one GPU model.
SCALING = (
    ("hpl_cuda", "tflops", "HPL-CUDA (TFLOP/s)"),
    ("hpl_nvidia", "tflops", "HPL, NVIDIA (TFLOP/s)"),
    ("gpuaccept-hplstyle", "tflops_sum", "HPL-style LU (TFLOP/s)"),
    ("gpuaccept-nccl", "allreduce_busbw_gbps_max", "NCCL all-reduce bus bandwidth (GB/s)"),
)


def gpu_count(doc: dict[str, Any]) -> int:
    """How many GPUs a document's run used: HPL's ``parameters.backend.gpus_used``, else its devices."""
    used = ((doc.get("parameters") or {}).get("backend") or {}).get("gpus_used")
    return int(used) if isinstance(used, int) and used > 0 else max(1, len(doc.get("devices") or []))


def _busy(group: Group, precision: str) -> tuple[float | None, float | None]:
    """One GPU busy (the slowest GPU's solo window) and every GPU busy (the slowest GPU's concurrent window) of a
    GEMM precision: the medians over the column's verdicts' rows, else the newest GEMM document's metrics."""
    solo_fig = report_headline.Figure("solo", "", "gemm", "gpuaccept-gemm", f"{precision}_tflops_min", "GPU", "")
    busy_fig = report_headline.Figure("busy", "", "gemm", "gpuaccept-gemm", f"{precision}_concurrent_tflops_min",
                                      "node", "")  # fmt: skip
    if group.verdicts:
        pairs = [(report_headline.run_figure(v, solo_fig).value, report_headline.run_figure(v, busy_fig).value)
                 for v in group.verdicts]  # fmt: skip
        pairs = [(a, b) for a, b in pairs if a and b]
        if pairs:
            return statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs)
    metrics = (group.newest("gpuaccept-gemm") or {}).get("metrics") or {}
    solo, busy = metrics.get(solo_fig.metric), metrics.get(busy_fig.metric)
    if isinstance(solo, dict) and isinstance(busy, dict) and solo.get("value") and busy.get("value"):
        return float(solo["value"]), float(busy["value"])
    return None, None


def busy_table(groups: list[Group]) -> str:
    """Every GPU busy against one GPU busy (gpuaccept-gemm's concurrent and solo windows): a node that cannot
    power, cool or feed all its GPUs at once shows it here."""
    rows, together = [], []
    for g in groups:
        for p, name in report_headline.GEMM_NAMES.items():
            solo, busy = _busy(g, p)
            if solo and busy and solo == busy:  # one measurement: the GEMM ran on every GPU at once
                together.append(g.label) if g.label not in together else None
            elif solo and busy:
                rows.append(f"<tr><td>{html.escape(g.label)}</td><td>{name}</td><td>{report_headline.fmt(solo)}"
                            f"</td><td>{report_headline.fmt(busy)}</td><td>{busy / solo:.3f}</td></tr>")  # fmt: skip
    note = (f"<p class='note'>{html.escape(', '.join(together))}: the GEMM ran on every GPU at once (its default "
            "on a node of several GPUs), so each GPU's GEMM figure above is its rate with every GPU busy; no run "
            "with one GPU busy to set it against.</p>") if together else ""  # fmt: skip
    if not rows:
        return note or "<p class='note'>No GEMM run with every GPU busy (one GPU per node, or none).</p>"
    head = ["column", "GEMM", "one GPU busy, slowest (TFLOP/s)", "every GPU busy, slowest (TFLOP/s)", "ratio"]
    return ("<table class='busy'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>") + note  # fmt: skip


def scaling_table(groups: list[Group]) -> str:
    """Node figures of one GPU model at two or more GPU counts, from every column's documents: the median rate,
    per GPU, and its efficiency against the fewest GPUs' rate per GPU."""
    series: dict[tuple[str, str, str], dict[int, list[float]]] = {}
    for g in groups:
        model = ", ".join(report_headline.node(g).models) or g.label
        for tool, metric, label in SCALING:
            for d in g.by_tool(tool):
                m = (d.get("metrics") or {}).get(metric)
                if isinstance(m, dict) and isinstance(m.get("value"), (int, float)):
                    series.setdefault((model, tool, label), {}).setdefault(gpu_count(d), []).append(float(m["value"]))
    rows = []
    for (model, _tool, label), by_count in sorted(series.items()):
        if len(by_count) < 2:
            continue
        first = min(by_count)
        base = statistics.median(by_count[first]) / first
        for n in sorted(by_count):
            med = statistics.median(by_count[n])
            rows.append(f"<tr><td>{html.escape(model)}</td><td>{html.escape(label)}</td><td>{n}</td>"
                        f"<td>{report_headline.fmt(med)}</td><td>{report_headline.fmt(med / n)}</td>"
                        f"<td>{med / n / base:.0%}</td><td>{len(by_count[n])}</td></tr>")  # fmt: skip
    if not rows:
        return ("<p class='note'>No HPL or NCCL runs of one GPU model at two GPU counts among the inputs: give the "
                "report a node type's runs on 1 and on N GPUs (for instance h200 and h200_x2) to see how it "
                "scales.</p>")  # fmt: skip
    head = ["GPU model", "figure", "GPUs", "median", "per GPU", "efficiency per GPU", "runs"]
    return ("<table class='scaling'><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")  # fmt: skip


def section(groups: list[Group]) -> str:
    """Per column of several GPUs the per-GPU table; then the scaling tables and figures."""
    parts = []
    for g in groups:
        the_node = report_headline.node(g)
        label = html.escape(g.label)
        parts.append(f"<h3 id='per-gpu-{label}'>{label}: {html.escape(the_node.text)}</h3>")
        parts.append(gpu_table(g) if the_node.gpus > 1 else "<p class='note'>One GPU: its figures are the node's "
                     "(the first page).</p>")  # fmt: skip
    parts.append("<h3 id='scaling'>Scaling</h3>")
    parts.append(busy_table(groups))
    parts.append(scaling_table(groups))
    parts.extend(fig for make in SCALING_FIGURES if (fig := make(groups)))
    return "\n".join(parts)
