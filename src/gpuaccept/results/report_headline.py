"""The evaluation report's first page: what a buyer decides on, before the detail.

For each column of the report (a node type or a vendor's runs) one headline table: HPL (node and per GPU), GEMM
per precision, HBM (device-to-device) bandwidth, pinned host<->GPU copies, GPU-to-GPU copies, NCCL all-reduce,
APOA1 ns/day, GFLOP/s per watt and energy to solution. Each figure is the median of the column's runs (the
benchmark documents' own metric, or the verdicts' value where only the judge forms it, as for GFLOP/s per watt),
with its fraction of the GPU model's datasheet peak (reference_values/datasheets/gpu_peaks.yaml), the figure it
is judged against (the node type's reference entry, its source named in the page's sources), any public figure it
compares with (NAMD 3.0's published A100 logs for APOA1), and what the verdicts said of it. Under each table the
verdicts, one line each, and each reason a verdict gives for a failed or not-run check, one line each.

Two or more columns: the same figures side by side with their ratios to the baseline column, and one line per
kind of work saying which column is better for it (FP64 simulation, AI precisions, memory-bound codes, host
transfers, multi-GPU work, molecular dynamics, energy).

The GPU count and model come from the node's facts (``gpuaccept facts``, or the verdict's ``facts``), not from
one benchmark document: a tool that ran on GPU 0 alone lists one device.
"""

from __future__ import annotations

import html
import math
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuaccept import references
from gpuaccept.judge import readback
from gpuaccept.judge.status import FAIL, INFO, NOT_RUN, PASS, WAIVED
from gpuaccept.layout import REFERENCE_DIR
from gpuaccept.probe import peaks
from gpuaccept.references import bounds, link

if TYPE_CHECKING:  # the report's column of runs; only its attributes are used here
    from gpuaccept.results.report_group import Group

# What a figure tells a buyer: the kinds of work compared in "which is better for what".
FP64 = "FP64 simulation and linear algebra"
AI = "AI training and inference precisions"
MEMORY = "memory-bound codes"
HOST = "host<->GPU transfers"
MULTI = "multi-GPU work"
MD = "molecular dynamics"
ENERGY = "energy efficiency"
CATEGORIES = (FP64, AI, MEMORY, HOST, MULTI, MD, ENERGY)
PAR = 0.05  # within 5 %: on a par


@dataclass(frozen=True)
class Figure:
    """One headline row: where its value comes from (the verdict's check, the document's tool and metric), what it
    measures one of (``per``: 'GPU', the slowest GPU's figure, or 'node'), the kind of work it tells of, and how its
    datasheet fraction is formed (``peak``: a key of :func:`datasheet_peak`; '' none)."""

    key: str
    label: str
    check: str
    tool: str
    metric: str
    per: str
    category: str
    peak: str = ""
    better: str = "higher"
    system: str = ""  # a molecular dynamics figure: the system the document simulated
    optional: bool = False  # a row only where some column has a value (a backend the site may not have)


GEMM_NAMES = {"fp64": "FP64", "fp32": "FP32", "tf32": "TF32", "bf16": "BF16", "fp16": "FP16", "fp8": "FP8"}

FIGURES: tuple[Figure, ...] = (
    Figure("hpl_cuda", "HPL-CUDA (HPL 2.3, matrix in GPU memory), every GPU", "hpl_cuda", "hpl_cuda", "tflops",
           "node", FP64, "fp64_node"),
    Figure("hpl_cuda_gpu", "HPL-CUDA per GPU", "hpl_cuda", "hpl_cuda", "tflops_per_gpu", "GPU", FP64, "fp64"),
    Figure("hpl_nvidia", "HPL (NVIDIA HPC-Benchmarks), every GPU", "hpl_nvidia", "hpl_nvidia", "tflops", "node", FP64,
           "fp64_node", optional=True),
    Figure("hplstyle", "HPL-style LU (cuSOLVER), every GPU", "hplstyle", "gpuaccept-hplstyle", "tflops_sum", "node",
           FP64, "fp64_node"),
    *(
        Figure(f"gemm_{p}", f"GEMM {name}", "gemm", "gpuaccept-gemm", f"{p}_tflops_min", "GPU",
               FP64 if p in ("fp64", "fp32") else AI, f"gemm_{p}")
        for p, name in GEMM_NAMES.items()
    ),
    Figure("hbm", "HBM: device-to-device copy", "bandwidth", "gpuaccept-bw", "d2d_min", "GPU", MEMORY, "memory"),
    Figure("h2d", "Host to GPU, pinned", "bandwidth", "gpuaccept-bw", "h2d_pinned_min", "GPU", HOST, "link"),
    Figure("d2h", "GPU to host, pinned", "bandwidth", "gpuaccept-bw", "d2h_pinned_min", "GPU", HOST, "link"),
    Figure("p2p", "GPU to GPU, one way", "bandwidth", "gpuaccept-bw", "p2p_write_min", "node", MULTI, "nvlink"),
    Figure("p2p_bidir", "GPU to GPU, both ways", "bandwidth", "gpuaccept-bw", "p2p_bidir_min", "node", MULTI,
           "nvlink_both"),
    Figure("nccl", "NCCL all-reduce, bus bandwidth", "nccl", "gpuaccept-nccl", "allreduce_busbw_gbps_max", "node",
           MULTI, "nvlink"),
    Figure("apoa1", "APOA1 (92,224 atoms, OpenMM), one GPU", "md_apoa1", "gpuaccept-md-apoa1", "ns_per_day", "GPU",
           MD, system="apoa1"),
    Figure("hplstyle_per_watt", "HPL-style LU per watt", "hplstyle", "gpuaccept-hplstyle", "gflops_per_watt",
           "node", ENERGY),
    Figure("gemm_per_watt", "FP64 GEMM per watt (power check)", "power", "gpuaccept-powercheck", "gflops_per_watt",
           "GPU", ENERGY),
    Figure("hplstyle_energy", "Energy to solution: HPL-style LU", "hplstyle", "gpuaccept-hplstyle", "energy_j",
           "node", ENERGY, better="lower"),
    Figure("apoa1_energy", "Energy to solution: APOA1", "md_apoa1", "gpuaccept-md-apoa1", "gpu_energy_kj", "GPU",
           ENERGY, better="lower", system="apoa1"),
)


# ---------------------------------------------------------------------------------------------- the node


@dataclass(frozen=True)
class Node:
    """What a column's node is: GPU count and models, from the node's facts where the runs kept them."""

    gpus: int
    models: tuple[str, ...]
    memory_gib: float | None
    facts: dict[str, Any]
    origin: str  # 'node facts' or 'benchmark documents'

    @property
    def text(self) -> str:
        memory = f" ({self.memory_gib:.0f} GiB each)" if self.memory_gib else ""
        return f"{self.gpus} x {', '.join(self.models) or 'unknown GPU'}{memory}"


def node_facts(group: Group) -> dict[str, Any]:
    """The newest facts of the column's node: a verdict's ``facts`` or a ``gpuaccept facts`` output beside the
    runs; {} when there are none."""
    found = [v.get("facts") for v in group.verdicts if v.get("facts")] + list(group.facts)
    return found[-1] if found else {}


def node(group: Group) -> Node:
    """The GPU count and models: from the node's facts (every GPU NVML sees); without facts, from the benchmark
    document that lists the most devices (a tool run on one GPU lists one)."""
    facts = node_facts(group)
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    origin = "node facts"
    if not gpus:
        lists = [d.get("devices") or [] for d in group.docs]
        gpus = max((lst for lst in lists if all(isinstance(g, dict) and g.get("name") for g in lst)), key=len,
                   default=[])  # fmt: skip
        origin = "benchmark documents"
    models = tuple(sorted({str(g.get("name")) for g in gpus if g.get("name")}))
    memory = [g["memory_bytes"] / 2**30 for g in gpus if isinstance(g.get("memory_bytes"), (int, float))]
    return Node(len(gpus), models, min(memory) if memory else None, facts, origin)


LOCAL_NAMES = ("localhost", "127.0.0.1", "::1", "")  # an inventory's name for the machine it runs on


def node_name(group: Group, verdict: dict[str, Any] | None = None) -> str:
    """The node as the operator named it: the name given to the report (``--node-name``), else the verdict's
    inventory name, unless that is only 'localhost' (inventories/local), then the host name in its facts."""
    if getattr(group, "node_name", ""):
        return str(group.node_name)
    verdicts = [verdict] if verdict is not None else list(reversed(group.verdicts))
    for v in verdicts:
        name = str(v.get("node") or "")
        if name not in LOCAL_NAMES:
            return name
        host = str((v.get("facts") or {}).get("hostname") or "")
        if host:
            return host
    host = str(node_facts(group).get("hostname") or "")
    return host or "unnamed node"


def node_type(group: Group, reference_dir: Path) -> tuple[references.NodeType | None, str]:
    """The column's node type (its verdicts', else detected from its facts) with its link gates bound to the
    node's link, and how it was found; (None, why) where there is none."""
    facts = node_facts(group)
    named = Counter(v.get("node_type") for v in group.verdicts if v.get("node_type"))
    try:
        if named:
            name = named.most_common(1)[0][0]
            found, how = references.load_node_type(reference_dir, name), "the verdicts'"
        elif facts.get("gpus"):
            found, how = references.detect(reference_dir, facts), "detected from the node's facts"
        else:
            return None, "no verdict and no node facts among the runs"
    except references.ReferenceError as err:
        return None, str(err)
    return (references.bind_link(found, facts) if facts else found), how


# ---------------------------------------------------------------------------------------------- values


@dataclass
class Value:
    """A figure of one column: one value per run (median shown), unit, what each run's verdict said of it, and where
    the values came from; or why there is none."""

    values: list[float] = field(default_factory=list)
    unit: str = ""
    origin: str = ""  # 'verdicts', 'documents' (runs no verdict judged), or both
    missing: str = ""  # why there is no value: the verdict's or the document's waiver, or 'not run'
    detail: str = ""  # what the figure is of, where it depends on the run (HPL's N)
    statuses: Counter = field(default_factory=Counter)  # per judged run: the status its verdict gave the figure
    per_gpu: bool = False  # each run's value is its slowest GPU's (the verdict's rows name a GPU each)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None


# A figure's statuses, worst first: a run's status for a per-GPU figure is its worst GPU's.
STATUS_ORDER = (FAIL, NOT_RUN, PASS, INFO, WAIVED)


def _worst(statuses: list[str]) -> str:
    return min(statuses, key=lambda s: STATUS_ORDER.index(s) if s in STATUS_ORDER else len(STATUS_ORDER))


def _why(reason: str, status: str) -> str:
    return (reason or status).split(" (not expected")[0]


@dataclass(frozen=True)
class RunFigure:
    """A figure in one judged run: its value (a per-GPU figure: the slowest GPU's), unit, the verdict's status
    (a per-GPU figure: the worst GPU's), whether it came from per-GPU rows, and why there is no value."""

    value: float | None
    unit: str = ""
    status: str = ""
    per_gpu: bool = False
    missing: str = ""


def run_figure(verdict: dict[str, Any], fig: Figure) -> RunFigure:
    """The figure in one run, from its verdict's rows (gpuaccept.judge.readback, the judge's reader): the node's
    row of the figure's check and metric, else its per-GPU rows (the slowest GPU's value, the worst status)."""
    try:
        rows = readback.rows(verdict)
    except ValueError as err:
        return RunFigure(None, missing=f"its verdict's rows cannot be read ({err})")
    mine = [r for r in rows if r.check == fig.check and r.metric == fig.metric]
    node_rows = [r for r in mine if r.gpu is None]
    use = node_rows or [r for r in mine if r.gpu is not None]
    if use:
        values = [r.value for r in use if r.value is not None]
        pick = min if fig.better == "higher" else max
        missing = next((_why(r.reason, r.status) for r in use if r.status in (WAIVED, NOT_RUN)), "")
        return RunFigure(pick(values) if values else None, use[0].unit, _worst([r.status for r in use]),
                         not node_rows, "" if values else missing)  # fmt: skip
    check = next((r for r in rows if r.check == fig.check and r.metric is None), None)
    if check is not None and check.status == NOT_RUN:
        return RunFigure(None, missing=_why(check.reason, "not run"))
    return RunFigure(None)


def _system(doc: dict[str, Any]) -> str:
    return str((((doc.get("results") or {}).get("system")) or {}).get("name") or "")


def gpus_used(doc: dict[str, Any]) -> int | None:
    """The GPUs a document's run used: its backend's ``gpus_used`` (HPL), else its device list; None unknown."""
    backend = (doc.get("parameters") or {}).get("backend") or {}
    used = backend.get("gpus_used") if isinstance(backend, dict) else None
    if isinstance(used, int) and not isinstance(used, bool):
        return used
    devices = doc.get("devices")
    return len(devices) if isinstance(devices, list) and devices else None


def _documents(group: Group, fig: Figure, out: Value) -> None:
    """The figure from the documents of runs no verdict judged (a vendor's folder of documents): the tool's
    metric in each (for molecular dynamics, of the figure's system; a node figure, of runs over every GPU)."""
    docs = [d for d in group.unjudged if d.get("tool") == fig.tool and (not fig.system or _system(d) == fig.system)]
    if fig.per == "node":  # a node's figure from runs over all of its GPUs (not a scaling run on fewer)
        gpus = node(group).gpus
        docs = [d for d in docs if gpus_used(d) in (None, gpus)]
    for d in docs:
        m = (d.get("metrics") or {}).get(fig.metric)
        if isinstance(m, dict) and isinstance(m.get("value"), (int, float)) and math.isfinite(m["value"]):
            out.values.append(float(m["value"]))
            out.unit = out.unit or str(m.get("unit") or "")
            out.per_gpu = out.per_gpu or fig.per == "GPU"
        elif fig.metric in (d.get("waived") or {}) and not out.missing:
            out.missing = f"waived: {d['waived'][fig.metric]}"


def measure(group: Group, fig: Figure) -> Value:
    """The figure over the column's runs: each judged run's from its verdict's rows (:func:`run_figure`: the
    check that owns the figure, never another check's documents of the same tool), then each unjudged run's from
    its documents."""
    out = Value()
    for v in group.verdicts:
        found = run_figure(v, fig)
        if found.status:
            out.statuses[found.status] += 1
        if found.value is not None:
            out.values.append(found.value)
            out.unit = out.unit or found.unit
            out.per_gpu = out.per_gpu or found.per_gpu
        elif found.missing and not out.missing:
            out.missing = found.missing
    judged = len(out.values)
    _documents(group, fig, out)
    out.origin = " and ".join(w for w, n in (("verdicts", judged), ("documents", len(out.values) - judged)) if n)
    if fig.check == "hplstyle" and fig.metric == "energy_j" and out.values:
        docs = group.by_tool(fig.tool)
        sizes = sorted({g.get("n") for d in docs for g in (d.get("results") or {}).get("per_gpu") or [] if g.get("n")})
        out.detail = f"N = {', '.join(map(str, sizes))}" if sizes else ""
    return out


# ---------------------------------------------------------------------------------------------- datasheet


PEAK_NAMES = {"fp64": "FP64", "fp64_tensor": "FP64 tensor", "fp32": "FP32", "tf32": "TF32 tensor",
              "bf16": "BF16 tensor", "fp16": "FP16 tensor", "fp8": "FP8 tensor"}  # fmt: skip


@dataclass(frozen=True)
class Peak:
    value: float
    unit: str
    text: str  # what the peak is ('2 x FP64 tensor 67 TFLOP/s')
    source: str  # the datasheet (gpu_peaks.yaml's source text)
    times: float = 1.0  # the measured figure's multiple that the peak bounds (a copy reads and writes each byte)


def datasheet(the_node: Node, reference_dir: Path) -> peaks.GpuPeaks | None:
    """The GPU model's datasheet entry (reference_values/datasheets/gpu_peaks.yaml), None when the node's GPUs are
    of a model it does not hold, or of several."""
    if the_node.facts.get("gpus"):
        limits = bounds.node_limits(the_node.facts, reference_dir)
    else:
        limits = bounds.model_limits(reference_dir, list(the_node.models), [], the_node.gpus)
    return limits.datasheet


def datasheet_peak(kind: str, sheet: peaks.GpuPeaks | None, the_node: Node) -> Peak | None:
    """The peak a figure is a fraction of: ``fp64`` (one GPU's FP64 tensor rate), ``fp64_node`` (every GPU's),
    ``gemm_<precision>``, ``memory`` (HBM: a device-to-device copy reads and writes each byte, so twice its rate
    is set against it), ``link`` (the PCIe link NVML reports, per direction), ``nvlink`` (NVLink per direction)
    and ``nvlink_both``."""
    if kind == "link":
        rate, label = link.node_link(the_node.facts)
        text = label.replace(" per direction", "")
        source = ("PCI-SIG, PCI Express Base Specification, Revisions 4.0 (2017) and 5.0 (2019): the rate per lane "
                  "and direction, times the link width and generation NVML reports")
        return Peak(rate, "GB/s", text, source) if rate else None
    if sheet is None:
        return None
    if kind in ("fp64", "fp64_node") or kind.startswith("gemm_"):
        precision = "fp64_tensor" if kind.startswith("fp64") else peaks.GEMM_PRECISION[kind.removeprefix("gemm_")]
        if precision not in sheet.tflops:
            return None
        n = the_node.gpus if kind == "fp64_node" else 1
        each = sheet.tflops[precision]
        times = f"{n} x " if n > 1 else ""
        return Peak(n * each, "TFLOP/s", f"{times}{each:g} TFLOP/s {PEAK_NAMES[precision]}", sheet.reference)
    if kind == "memory" and sheet.memory_gbps:
        return Peak(sheet.memory_gbps, "GB/s", f"HBM {sheet.memory_gbps:g} GB/s (a copy reads and writes)",
                    sheet.reference, times=2.0)  # fmt: skip
    if kind.startswith("nvlink") and sheet.nvlink_gbps:
        both = kind == "nvlink_both"
        rate = sheet.nvlink_gbps if both else sheet.nvlink_gbps / 2
        what = "both ways" if both else "per direction"
        return Peak(rate, "GB/s", f"NVLink {rate:g} GB/s {what}", sheet.reference)
    return None


# ---------------------------------------------------------------------------------------------- html


@dataclass
class Sources:
    """The page's numbered sources: each text once, cited as [n] in the cells."""

    texts: list[str] = field(default_factory=list)

    def cite(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"<sup class='cite'>[{self.texts.index(text) + 1}]</sup>"

    def html(self) -> str:
        if not self.texts:
            return ""
        items = "".join(f"<li>{html.escape(t)}</li>" for t in self.texts)
        return f"<ol class='sources'>{items}</ol>"


def fmt(value: float | None) -> str:
    """A figure as every headline cell prints it: 4 significant digits (a figure of 10,000 or more whole)."""
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def _table(head: list[str], rows: list[str], cls: str) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table class='{cls}'><thead><tr>{cells}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def year(date: Any) -> str:
    """A source's year, from its date ('2026-11-27', 2024)."""
    text = str(date or "")
    return text[:4] if text[:4].isdigit() else ""


def source_text(nt: references.NodeType, source_id: str) -> str:
    """A reference's source as the page cites it, never by its id in the reference file: what was measured on
    which machine, when and in how many runs (and where the runs are kept); a datasheet or publication by its text
    and year. "" where the source only says that there is no published figure."""
    src = nt.sources.get(source_id) or {}
    kind = src.get("kind", "")
    when = year(src.get("date"))
    if kind == "measured":
        runs = f", {plural(int(src['runs']), 'run')}" if isinstance(src.get("runs"), int) else ""
        where = f" ({src['evidence']})" if src.get("evidence") else ""
        machine = src.get("machine", "an unnamed machine")
        return f"Measured with gpuaccept on {machine}, {src.get('date', '?')}{runs}{where}"
    text = " ".join(str(src.get("reference") or src.get("description") or "").split())
    if not text or not citable(src):
        return ""
    return f"{text} ({when})" if when and when not in text else text


def citable(src: dict[str, Any]) -> bool:
    """Whether a source names a measurement or a publication (not a note that none exists yet)."""
    text = str(src.get("reference") or src.get("description") or "").lower()
    return src.get("kind") in ("measured", "datasheet") or not text.startswith("no ")


def reference_cell(nt: references.NodeType | None, fig: Figure, unit: str, sources: Sources) -> str:
    """The figure it is judged against: the node type's reference (value and band, or why not judged), its
    source cited."""
    if nt is None:
        return "-"
    ref = (nt.checks.get(fig.check) or {}).get(fig.metric)
    if ref is None:
        return "no reference"
    text = source_text(nt, ref.source) if ref.source else ""
    cite = sources.cite(text) if text else ""
    unit = unit or ref.unit
    if not ref.judged:
        return f"not judged{cite}" if cite else "not judged: no published or measured figure yet"
    if ref.needs_link:
        return f"{html.escape(ref.band or 'a fraction of the PCIe link')}{cite}"
    if ref.link_fraction is not None and ref.value is not None:
        return f"&ge; {fmt(ref.value)} {html.escape(unit)} ({ref.link_fraction:g} of the link){cite}"
    if ref.value is None:
        return f"-{cite}"
    band = []
    if ref.lower_bound is not None:
        band.append(f"&ge; {fmt(ref.lower_bound)}")
    if ref.upper_bound is not None:
        band.append(f"&le; {fmt(ref.upper_bound)}")
    return f"{fmt(ref.value)} {html.escape(unit)} ({', '.join(band) or 'no band'}){cite}"


# HPL per GPU of the Top500 systems built of H100 and H200 GPUs (Rmax over the GPU count), as a public survey of
# the list gives it: set beside a node's HPL-CUDA per GPU, a multi-node run of NVIDIA's HPL at the system's size.
TOP500_HOPPER_HPL = (55.0, 59.0)
TOP500_HOPPER_SOURCE = ("Glenn K. Lockwood, \"H100\" (glennklockwood.com/garden/processors/h100, read 2026-11-28): the "
                        "Top500 list's H100 and H200 systems give 55.0 to 59.0 TFLOP/s of HPL per GPU")  # fmt: skip


def public_figures(fig: Figure, sources: Sources, the_node: Node | None = None) -> str:
    """Published figures a row compares with that are no reference of the node type's: NAMD 3.0 on an A100 for
    APOA1 (gpuaccept.probe.namd); for a node of H100 or H200 GPUs, the Top500 list's HPL per GPU beside HPL-CUDA
    per GPU."""
    hopper = the_node is not None and any(m.startswith(("NVIDIA H100", "NVIDIA H200")) for m in the_node.models)
    if fig.key == "hpl_cuda_gpu" and hopper:
        low, high = TOP500_HOPPER_HPL
        return f"<br>public: Top500 H100 and H200 systems, {fmt(low)}-{fmt(high)} TFLOP/s per GPU" + sources.cite(
            TOP500_HOPPER_SOURCE)
    if fig.key != "apoa1":
        return ""
    from gpuaccept.probe.namd import NAMD3_A100_APOA1, NAMD3_A100_SOURCE  # noqa: PLC0415 - constants only

    resident = NAMD3_A100_APOA1["gpu_resident"]["ns_per_day"]
    return f"<br>public: NAMD 3.0, A100 80GB PCIe, GPU-resident {fmt(resident)} ns/day{sources.cite(NAMD3_A100_SOURCE)}"


def verdict_cell(value: Value) -> str:
    """What the column's verdicts said of the figure: each status and in how many runs (failures first); a per-GPU
    figure passes in a run where every GPU's row passed."""
    seen = value.statuses
    if not seen:
        return "-"
    total = sum(seen.values())
    parts = []
    for status in sorted(seen, key=lambda s: STATUS_ORDER.index(s) if s in STATUS_ORDER else len(STATUS_ORDER)):
        cls = {FAIL: "fail", NOT_RUN: "fail", PASS: "pass"}.get(status, "")
        word = {INFO: "reported", NOT_RUN: "not run"}.get(status, str(status))
        parts.append((f"<span class='{cls}'>{word}</span>" if cls else word) + f" {seen[status]}/{total}")
    every = " <span class='note'>(every GPU)</span>" if value.per_gpu and seen.get(PASS) else ""
    return ", ".join(parts) + every


def per_note(fig: Figure, value: Value) -> str:
    """What one value of the figure is of, where its label does not say: the slowest GPU's, or the node's."""
    if value.per_gpu or fig.per == "GPU":
        return "" if "per GPU" in fig.label or "one GPU" in fig.label else "slowest GPU"
    return "" if "every GPU" in fig.label or "GPU to GPU" in fig.label else "node"


@dataclass
class Column:
    """A report column's first-page facts: the node, its node type, the datasheet, and every figure."""

    group: Group
    node: Node
    node_type: references.NodeType | None
    node_type_how: str
    sheet: peaks.GpuPeaks | None
    values: dict[str, Value]


def column(group: Group, reference_dir: Path) -> Column:
    the_node = node(group)
    nt, how = node_type(group, reference_dir)
    try:
        sheet = datasheet(the_node, reference_dir)
    except bounds.BoundsError:
        sheet = None
    return Column(group, the_node, nt, how, sheet, {f.key: measure(group, f) for f in FIGURES})


def shown(columns: list[Column]) -> list[Figure]:
    """The rows: every figure, but an optional one (a backend the site may not have) only where a column has it."""
    return [f for f in FIGURES if not f.optional or any(c.values[f.key].values for c in columns)]


def headline_table(col: Column, figures: list[Figure], sources: Sources) -> str:
    """One column's headline table: figure, measured (median, runs, range), of the datasheet peak, judged against,
    what the verdicts said."""
    rows = []
    label = html.escape(col.group.label)
    for fig in figures:
        v = col.values[fig.key]
        med = v.median
        unit = html.escape(v.unit)
        if med is None:
            why = v.missing or "not measured in these runs"
            measured = f"<span class='missing'>{html.escape(why)}</span>"
        else:
            spread = f" [{fmt(min(v.values))}-{fmt(max(v.values))}]" if len(v.values) > 1 else ""
            runs = plural(len(v.values), "run")
            detail = f", {html.escape(v.detail)}" if v.detail else ""
            measured = (f"<b class='value' data-value='{med!r}'>{fmt(med)}</b> {unit} "
                        f"<span class='note'>({runs}{spread}{detail})</span>")  # fmt: skip
        peak = datasheet_peak(fig.peak, col.sheet, col.node) if fig.peak else None
        if peak is not None and med is not None:
            share = med * peak.times / peak.value
            fraction = f"{share:.{0 if share >= 0.1 else 1}%} of {html.escape(peak.text)}{sources.cite(peak.source)}"
        else:
            fraction = "-"
        compares = reference_cell(col.node_type, fig, v.unit, sources) + public_figures(fig, sources, col.node)
        per = per_note(fig, v)
        per = f" <span class='note'>{html.escape(per)}</span>" if per else ""
        rows.append(
            f"<tr data-group='{label}' data-figure='{fig.key}'><td>{html.escape(fig.label)}{per}</td>"
            f"<td>{measured}</td><td>{fraction}</td><td>{compares}</td><td>{verdict_cell(v)}</td></tr>"
        )
    head = ["figure", "measured (median)", "of the datasheet peak", "judged against", "verdicts"]
    return _table(head, rows, "headline")


def _when(v: dict[str, Any]) -> str:
    import datetime as dt  # noqa: PLC0415

    started = v.get("started_unix")
    return dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%d %H:%MZ") if started else "?"


def one_line(text: str, limit: int = 150) -> str:
    """A reason on one line: its whitespace (ReFrame's multi-line messages) folded, cut at ``limit``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reasons(v: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, reason) of each failed or not-run expected row of a verdict: the metrics' own, and a check's where
    none of its metrics says more."""
    rows = [r for r in v.get("rows") or [] if r.get("status") in (FAIL, NOT_RUN) and r.get("expected", True)]
    with_metric = {r.get("check") for r in rows if r.get("metric")}
    out = []
    for r in rows:
        if not r.get("metric") and r.get("check") in with_metric:
            continue
        what = f"{r.get('check')}" + (f" {r['metric']}" if r.get("metric") else "")
        what += f" (GPU {r['gpu']})" if r.get("gpu") is not None else ""
        out.append((what, str(r.get("reason") or r.get("status"))))
    return out


def accepted(v: dict[str, Any]) -> bool:
    """Whether a recorded verdict accepts its node, by its rows (the judge's rule, gpuaccept.judge.readback), never
    by its ``verdict`` field; rows that cannot be read accept nothing."""
    try:
        return readback.accepted(v)
    except ValueError:
        return False


def _disagreement(v: dict[str, Any]) -> str:
    try:
        return readback.disagreement(v)
    except ValueError as err:
        return f"its rows cannot be read ({err})"


def _clean(v: dict[str, Any]) -> bool:
    """An accepted verdict with nothing more to say: no reason, its fields agreeing with its rows."""
    return accepted(v) and not _reasons(v) and not _disagreement(v)


def _accepted_line(group: Group, runs: list[dict[str, Any]]) -> str:
    """Accepted runs with nothing more to say, in one line: how many, the node, the suites, from when to when."""
    if len(runs) == 1:
        v = runs[0]
        where = ", ".join(html.escape(str(x)) for x in (node_name(group, v), f"{v.get('suite')} suite", _when(v)))
        return f"<li class='verdict'><span class='pass'>ACCEPTED</span> {where}</li>"
    names = sorted({node_name(group, v) for v in runs})
    suites = Counter(str(v.get("suite")) for v in runs)
    said = ", ".join(f"{n} {s}" for s, n in sorted(suites.items()))
    span = f"{_when(runs[0])} to {_when(runs[-1])}"
    return (f"<li class='verdict'><span class='pass'>ACCEPTED</span> {len(runs)} runs of "
            f"{html.escape(', '.join(names))} ({html.escape(said)}), {span}</li>")  # fmt: skip


def verdict_lines(group: Group, limit: int = 6) -> str:
    """Each verdict in one line (ACCEPTED or REJECTED, node, suite, when), then each reason it gives for a failed
    or not-run expected check, one line each (the first ``limit``; the Verdicts section lists every one). Accepted
    runs with nothing more to say share one line, so that the first page stays one page."""
    if not group.verdicts:
        return "<p class='note'>No verdict among these runs: benchmark documents only, not judged.</p>"
    lines = []
    quiet = [v for v in group.verdicts if _clean(v)]
    if quiet:
        lines.append(_accepted_line(group, quiet))
    for v in group.verdicts:
        if _clean(v):
            continue
        ok = accepted(v)
        word = f"<span class='{'pass' if ok else 'fail'}'>{'ACCEPTED' if ok else 'REJECTED'}</span>"
        where = ", ".join(html.escape(str(x)) for x in (node_name(group, v), f"{v.get('suite')} suite", _when(v)))
        lines.append(f"<li class='verdict'>{word} {where}</li>")
        edited = _disagreement(v)
        if edited:
            lines.append(f"<li class='reason'>verdict.json: {html.escape(edited)}</li>")
        reasons = []
        for what, reason in _reasons(v):
            if (what, reason) not in reasons:
                reasons.append((what, reason))
        for what, reason in reasons[:limit]:
            lines.append(f"<li class='reason'>{html.escape(what)}: {html.escape(one_line(reason))}</li>")
        if len(reasons) > limit:
            lines.append(f"<li class='reason'>and {len(reasons) - limit} more (Verdicts, below)</li>")
    return f"<ul class='verdict-lines'>{''.join(lines)}</ul>"


# ---------------------------------------------------------------------------------------------- side by side


def ratio(fig: Figure, value: float | None, base: float | None) -> float | None:
    """How much better ``value`` is than ``base`` (above 1: better), by the figure's direction."""
    if not value or not base:
        return None
    return value / base if fig.better == "higher" else base / value


def comparable(fig: Figure, col: Column, base: Column) -> bool:
    """A node figure compares two columns only when their nodes have as many GPUs; a GPU figure always."""
    return fig.per == "GPU" or col.node.gpus == base.node.gpus


def compare_table(columns: list[Column], base: Column, figures: list[Figure]) -> str:
    head = ["figure", "unit"]
    for c in columns:
        head.append(c.group.label)
        if c is not base:
            head.append(f"{c.group.label} / {base.group.label}")
    rows = []
    for fig in figures:
        if sum(1 for c in columns if c.values[fig.key].values) < 2:
            continue
        unit = next(c.values[fig.key].unit for c in columns if c.values[fig.key].values)
        cells = [html.escape(fig.label), html.escape(unit)]
        for c in columns:
            med = c.values[fig.key].median
            cells.append(fmt(med))
            if c is base:
                continue
            r = ratio(fig, med, base.values[fig.key].median)
            if r is None:
                cells.append("-")
            else:
                cls = "better" if r > 1 + PAR else "worse" if r < 1 - PAR else "par"
                star = "" if comparable(fig, c, base) else "*"
                cells.append(f"<span class='{cls}' data-ratio='{r!r}'>{r:.2f}{star}</span>")
        rows.append(f"<tr data-figure='{fig.key}'>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    if not rows:
        return "<p class='note'>No headline figure was measured in two columns: nothing to set side by side.</p>"
    return _table(head, rows, "headline-compare")


def better_for(columns: list[Column], base: Column, figures: list[Figure]) -> str:
    """A table, one row per kind of work and one column per other column: the geometric mean of its figures' ratios
    to the baseline (node figures only between nodes of as many GPUs), and which is better for it."""
    others = [c for c in columns if c is not base]
    rows = []
    for cat in CATEGORIES:
        cells = []
        for c in others:
            used = []
            for fig in figures:
                if fig.category != cat or not comparable(fig, c, base):
                    continue
                r = ratio(fig, c.values[fig.key].median, base.values[fig.key].median)
                if r is not None:
                    used.append((fig, r))
            if not used:
                cells.append("<td>-</td>")
                continue
            mean = math.exp(sum(math.log(r) for _, r in used) / len(used))
            what = ", ".join(f.label for f, _ in used)
            a, b = html.escape(c.group.label), html.escape(base.group.label)
            if abs(math.log(mean)) < math.log(1 + PAR):
                text = f"<span class='par'>on a par</span> ({mean:.2f} x)"
            elif mean > 1:
                text = f"<span class='better'>{a}</span>, {mean:.2f} x"
            else:
                text = f"<span class='worse'>{b}</span>, {1 / mean:.2f} x"
            cells.append(f"<td data-group='{a}' data-ratio='{mean!r}'>{text} "
                         f"<span class='note'>({html.escape(what)})</span></td>")  # fmt: skip
        if any(cell != "<td>-</td>" for cell in cells):
            rows.append(f"<tr data-category='{html.escape(cat)}'><td>{html.escape(cat)}</td>{''.join(cells)}</tr>")
    if not rows:
        return "<p class='note'>No figure was measured in the baseline and another column.</p>"
    head = ["kind of work", *[f"better: {c.group.label} or {base.group.label}" for c in others]]
    return _table(head, rows, "better-for")


# ---------------------------------------------------------------------------------------------- the page


def section(groups: list[Group], baseline: Group, reference_dir: Path | None = None,
            per_gpu: Callable[[Group], str] | None = None) -> str:
    """The first page: for two or more columns the comparison first, then each column's headline table with the
    node, its verdicts and their reasons (and, from ``per_gpu``, what its GPUs one by one say: the GPU-by-GPU
    section's summary), then the sources cited."""
    reference_dir = Path(reference_dir or REFERENCE_DIR)
    columns = [column(g, reference_dir) for g in groups]
    base = next(c for c in columns if c.group is baseline)
    figures = shown(columns)
    sources = Sources()
    parts = ["<section id='headline'>", "<h2 id='decision'>The decision</h2>"]
    summary = []
    for c in columns:
        ok = sum(1 for v in c.group.verdicts if accepted(v))
        n = len(c.group.verdicts)
        if n == 1:
            verdict = "<span class='pass'>ACCEPTED</span>" if ok else "<span class='fail'>REJECTED</span>"
        elif n:
            verdict = f"<span class='{'pass' if ok == n else 'fail'}'>{ok} of {n} runs ACCEPTED</span>"
        else:
            verdict = "<span class='note'>not judged (no verdict)</span>"
        nt = c.node_type.name if c.node_type else "no node type"
        summary.append(f"<li data-group='{html.escape(c.group.label)}'><b>{html.escape(c.group.label)}</b>: "
                       f"node <span class='node-name'>{html.escape(node_name(c.group))}</span>, "
                       f"<span class='gpus'>{html.escape(c.node.text)}</span>, node type {html.escape(nt)}; "
                       f"{verdict}</li>")  # fmt: skip
    parts.append(f"<ul class='decision'>{''.join(summary)}</ul>")
    if len(columns) > 1:
        parts.append(f"<p><b>Which is better for what</b>: per kind of work, the geometric mean of its figures' "
                     f"ratios to <b>{html.escape(base.group.label)}</b> (above 1: better; within 5 %: on a "
                     "par).</p>")  # fmt: skip
        parts.append(better_for(columns, base, figures))
        parts.append(compare_table(columns, base, figures))
        if any(not comparable(f, c, base) and c.values[f.key].values and base.values[f.key].values
               for f in figures for c in columns):  # fmt: skip
            parts.append("<p class='note'>* a node's figure set against a node of another GPU count: shown, left "
                         "out of the kinds of work above.</p>")  # fmt: skip
    for c in columns:
        label = html.escape(c.group.label)
        nt = f"node type {html.escape(c.node_type.name)} ({html.escape(c.node_type_how)})" if c.node_type else (
            f"no node type: {html.escape(c.node_type_how)}")  # fmt: skip
        parts.append(f"<h3 id='headline-{label}'>{label}: <span class='gpus'>{html.escape(c.node.text)}</span> "
                     f"<span class='note'>(GPUs from the {html.escape(c.node.origin)}; {nt})</span></h3>")
        parts.append(headline_table(c, figures, sources))
        if per_gpu is not None and c.node.gpus > 1:
            parts.append(per_gpu(c.group))
        parts.append(verdict_lines(c.group))
    parts.append("<p class='note'>Medians over each column's runs ([range] where there are several); a GPU figure "
                 "is the slowest GPU's. Sources:</p>")  # fmt: skip
    parts.append(sources.html())
    parts.append("</section>")
    return "\n".join(parts)
