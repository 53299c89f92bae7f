"""Reference values from repeated runs: the median per metric and a tolerance from the spread.

Rule (docs/reference-values.md): over N runs, value = median; the tolerance on the side that matters (below
for 'higher is better', above for 'lower is better') is 1.5 x the largest relative deviation of any run from
the median, never below the unit's floor (noise cannot make it absurdly tight) and never above the cap (a
degraded node, e.g. DGEMM halved by a foreign process, must still fail). Metrics waived on every run become
informational entries, so the file stays complete.

Outliers are rejected first, with SuperBench's fixed-threshold idea: take the median of the runs, drop every
run worse than it by more than a fixed fraction (the cap by default: a run the resulting reference would
reject is a degraded node, not part of the spread), take the median of the rest, and repeat until nothing
more is dropped. Only the side that matters is rejected: a run better than the rest is not a fault. The
rejected runs are named in the proposal (``note``) so a reviewer sees them.
"""

from __future__ import annotations

import datetime as dt
import difflib
import fnmatch
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpuaccept import metric_table, textinput
from gpuaccept.checks import CHECKS
from gpuaccept.layout import VERDICT_FILE
from gpuaccept.probe import peaks
from gpuaccept.references import GPU_DIR, GPU_SCHEMA, NODE_BASELINE_SCHEMA, SCHEMA, SCHEMA_V1

FLOORS = {"GB/s": 0.05, "TFLOP/s": 0.05, "GFLOP/s": 0.10, "us": 0.25, "ratio": 0.10}
CAP = 0.30
SPREAD_FACTOR = 1.5
LOSS = 0.10  # a band of 3 runs or more catches a loss this large of any of them (catch_band)
# Link figures: the fraction of the link's rate per direction (both directions for the bidirectional figure)
# that a healthy copy reaches (docs/verdicts.md); a proposal writes these, a reviewer may change them.
LINK_FRACTIONS = {"h2d_pinned_min": 0.80, "d2h_pinned_min": 0.80, "bidir_pinned_min": 0.50}
DEFAULT_LINK_FRACTION = 0.80
HOST_REASON = (
    "a host figure (the host, the VM and the moment give it): reported, judged only against the node's own "
    "baseline (gpuaccept baseline --node-baseline)"
)


def find_documents(run_dirs: list[Path], check: str) -> list[dict[str, Any]]:
    """Every benchmark document of ``check`` under the run directories (ReFrame's output trees)."""
    name = CHECKS[check].result_file
    docs: dict[tuple, dict[str, Any]] = {}
    for run_dir in run_dirs:
        # Passed checks keep their document in ReFrame's output tree, failed ones in the stage tree; with
        # --keep-stage-files both hold a copy, so documents are told apart by when and where they ran.
        for path in sorted(Path(run_dir).rglob(name)):
            doc = textinput.load_json(path, "the benchmark document", ValueError)
            key = (
                doc.get("tool"),
                doc.get("started_utc"),
                (doc.get("host") or {}).get("hostname"),
                doc.get("elapsed_s"),
            )
            if not doc.get("started_utc"):
                # A document without its run's time (the HPL checks' before 2026-11-23) cannot be matched with a
                # copy of itself: each file counts, rather than every such run collapsing into one.
                key = (*key, str(path))
            docs.setdefault(key, doc)
    return list(docs.values())


def verdict_documents(run_dirs: list[Path], check: str) -> list[dict[str, Any]]:
    """Measurements of ``check`` taken from verdict.json rows, for runs that kept no benchmark document of it
    (a failed check whose stage directory was not kept still counts: it is what a degraded node measured).
    They look like benchmark documents with ``tool`` ``verdict.json`` and ``origin`` naming the file."""
    name = CHECKS[check].result_file
    docs: dict[tuple, dict[str, Any]] = {}
    for run_dir in run_dirs:
        for path in sorted(Path(run_dir).rglob(VERDICT_FILE)):
            if any(path.parent.rglob(name)):
                continue  # the document itself is there: find_documents reads it
            verdict = textinput.load_json(path, "the verdict", ValueError)
            try:
                rows = [r for r in verdict["rows"] if r["check"] == check and r.get("metric")]
            except (KeyError, TypeError) as err:
                raise ValueError(f"{path}: not a gpuaccept verdict: {err}") from None
            metrics: dict[str, dict[str, Any]] = {}
            per_gpu: dict[int, dict[str, Any]] = {}  # a per-GPU row's figure, as gpu_metrics holds it
            for r in rows:
                if not (isinstance(r.get("value"), (int, float)) and math.isfinite(r["value"])):
                    continue
                figure = {"value": r["value"], "unit": r["unit"], "better": "lower" if r["unit"] == "us" else "higher"}
                if r.get("gpu") is not None:
                    per_gpu.setdefault(r["gpu"], {})[r["metric"]] = figure
                    # The aggregate over the GPUs, as the tool writes it: the worst GPU's figure.
                    worst = metrics.get(r["metric"])
                    pick = min if figure["better"] == "higher" else max
                    metrics[r["metric"]] = figure if worst is None else {**figure,
                                                                         "value": pick(worst["value"], r["value"])}
                else:
                    metrics[r["metric"]] = figure
            if not metrics:
                continue
            started = verdict.get("started_unix")
            when = dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if started else None
            key = (verdict.get("node"), started, check)
            docs.setdefault(
                key,
                {
                    "tool": VERDICT_FILE,
                    "origin": str(path),
                    "started_utc": when,
                    "host": {"hostname": verdict.get("node")},
                    "metrics": metrics,
                    **({"gpu_metrics": [{"gpu": g, "metrics": m} for g, m in sorted(per_gpu.items())]}
                       if per_gpu else {}),
                    "waived": {},
                },
            )
    return list(docs.values())


def collect(run_dirs: list[Path], check: str) -> list[dict[str, Any]]:
    """Every run of ``check`` under the run directories: its benchmark documents, and verdict rows where the
    document was not kept."""
    return find_documents(run_dirs, check) + verdict_documents(run_dirs, check)


def run_label(doc: dict[str, Any]) -> str:
    return f"{(doc.get('host') or {}).get('hostname') or '?'} {doc.get('started_utc') or '?'}"


def figures(check: str, doc: dict[str, Any], metric: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, figure) of a metric in one run's document: each GPU's own figure of a per-GPU metric where the
    document has them (``gpu_metrics``, docs/benchmark-json.md), so that a band placed on them passes the slowest
    healthy GPU; else the document's one figure."""
    try:
        per_gpu = metric_table.layer(check, metric) == metric_table.GPU
    except metric_table.UnknownMetric:
        per_gpu = False
    own = [
        (f"{run_label(doc)} GPU {g.get('gpu')}", g["metrics"][metric])
        for g in (doc.get("gpu_metrics") or []) if per_gpu and isinstance((g.get("metrics") or {}).get(metric), dict)
    ]  # fmt: skip
    if own:
        return own
    m = (doc.get("metrics") or {}).get(metric)
    return [(run_label(doc), m)] if isinstance(m, dict) else []


def reject_outliers(values: list[float], better: str, threshold: float = CAP) -> tuple[list[int], list[int]]:
    """(kept, rejected) indices: SuperBench's fixed-threshold loop on the side that matters. ``threshold`` 0
    rejects nothing. Never rejects half of the runs or more: then the runs disagree and no one is the
    outlier, which is an error for the operator to look at."""
    kept = list(range(len(values)))
    if threshold <= 0:
        return kept, []
    while True:
        med = statistics.median(values[i] for i in kept)
        if not med:
            break
        worse = [i for i in kept if (med - values[i] if better == "higher" else values[i] - med) / abs(med) > threshold]
        if not worse:
            break
        kept = [i for i in kept if i not in worse]
    rejected = [i for i in range(len(values)) if i not in kept]
    if len(rejected) * 2 >= len(values):
        raise ValueError(
            f"{len(rejected)} of {len(values)} runs are more than {threshold:.0%} worse than the median of the "
            f"others ({', '.join(f'{v:.4g}' for v in values)}): the runs disagree too much to tell outliers; "
            "look at the nodes, or pass --reject 0 to keep them all"
        )
    return kept, rejected


def provenance(docs_by_check: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Nodes, first and last run, and where each run came from, for the proposal's source entry."""
    docs = [d for ds in docs_by_check.values() for d in ds]
    nodes = sorted({(d.get("host") or {}).get("hostname") or "?" for d in docs})
    started = sorted(d["started_utc"] for d in docs if d.get("started_utc"))
    out: dict[str, Any] = {"nodes": nodes}
    if started:
        out["first_run"], out["last_run"] = started[0], started[-1]
    out["runs_per_check"] = {check: len(ds) for check, ds in docs_by_check.items() if ds}
    return out


def unified_diff(reviewed: Path, proposal_text: str, proposal_name: str) -> str:
    old = reviewed.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, proposal_text.splitlines(keepends=True), str(reviewed), proposal_name))


def changes(reviewed_text: str, proposed_text: str) -> list[str]:
    """One line per metric whose value or tolerance differs between the reviewed file and the proposal. Only the
    checks the proposal's runs measured are compared: the reviewed file's other checks (measured elsewhere, with
    their own evidence) are outside the proposal."""
    reviewed, proposed = textinput.parse_yaml(reviewed_text) or {}, textinput.parse_yaml(proposed_text) or {}
    lines = []
    old_checks, new_checks = reviewed.get("checks") or {}, proposed.get("checks") or {}
    for check in sorted(new_checks):
        old, new = old_checks.get(check) or {}, new_checks.get(check) or {}
        for metric in sorted(set(old) | set(new)):
            a, b = old.get(metric), new.get(metric)
            if a is None or b is None:
                lines.append(f"{check}.{metric}: {'added' if a is None else 'removed'}")
                continue
            if "value" not in a or "value" not in b:
                if ("value" in a) != ("value" in b):
                    lines.append(f"{check}.{metric}: {'now judged' if 'value' in b else 'now informational'}")
                continue
            tol_a = a.get("lower", a.get("upper"))
            tol_b = b.get("lower", b.get("upper"))
            if a["value"] != b["value"] or tol_a != tol_b:
                rel = (b["value"] / a["value"] - 1) if a["value"] else math.inf
                lines.append(
                    f"{check}.{metric}: {a['value']:.6g} -> {b['value']:.6g} {b.get('unit', '')} ({rel:+.1%}), "
                    f"tolerance {tol_a} -> {tol_b}"
                )
    return lines


def waived_unit(check: str, metric: str) -> str:
    """A waived metric carries no unit in the benchmark document: the metric table says it."""
    try:
        return metric_table.unit(check, metric)
    except metric_table.UnknownMetric as err:
        raise ValueError(f"{check}.{metric} (waived): {err}") from None


def catch_band(values: list[float], better: str, loss: float = LOSS, what: str = "runs") -> tuple[float, str] | None:
    """(tolerance, why) of a band that passes every run and fails each run ``loss`` worse: the bound halfway
    between the worst run and the best run made ``loss`` worse, as a fraction of the median. None with fewer
    than 3 runs, or runs that spread too far for such a bound (then the spread rule decides). ``what`` says what
    the values are in the reason (``runs``, or each GPU's figures)."""
    if len(values) < 3:
        return None
    lo, hi, med = min(values), max(values), statistics.median(values)
    if better == "higher":
        if (1 - loss) * hi >= lo:
            return None
        floor = (lo + (1 - loss) * hi) / 2
        return round(1 - floor / med, 4), (
            f"{len(values)} {what} {lo:.4g}-{hi:.4g}: the floor {floor:.4g} passes the lowest and fails each "
            f"{loss:.0%} lower (at most {(1 - loss) * hi:.4g})")
    if (1 + loss) * lo <= hi:
        return None
    ceil = (hi + (1 + loss) * lo) / 2
    return round(ceil / med - 1, 4), (
        f"{len(values)} {what} {lo:.4g}-{hi:.4g}: the ceiling {ceil:.4g} passes the highest and fails each "
        f"{loss:.0%} higher (at least {(1 + loss) * lo:.4g})")


def tolerance(values: list[float], unit: str) -> float:
    med = statistics.median(values)
    worst = max(abs(v - med) / med for v in values) if med else 0.0
    return round(min(CAP, max(FLOORS.get(unit, 0.05), SPREAD_FACTOR * worst)), 3)


@dataclass
class _Measured:
    """One metric's figures in the runs of a check, outliers set apart: what derive makes an entry of."""

    runs: list[tuple[str, dict[str, Any]]]  # (where, the figure) of every measured figure
    all_values: list[float]  # every measured figure, in the order of runs
    values: list[float]  # those kept
    rejected: list[int]  # indices into all_values of the outliers
    unit: str
    better: str
    what: str  # what the figures are: "runs", or each GPU's figures of N runs
    measured_runs: int  # runs that measured the metric


def _measure(check: str, metric: str, docs: list[dict[str, Any]], reject: float) -> _Measured | None:
    """The metric's figures in ``docs``, runs worse than the median by more than ``reject`` set apart; None where
    no run measured it (waived in each)."""
    runs = [
        (label, m)
        for d in docs
        for label, m in figures(check, d, metric)
        if isinstance(m.get("value"), (int, float))
    ]
    measured_runs = sum(
        any(isinstance(m.get("value"), (int, float)) for _, m in figures(check, d, metric)) for d in docs
    )
    measured = [m for _, m in runs]
    # What the figures are: one per run, or each GPU's own (gpu_metrics), several per run.
    what = "runs" if len(runs) == measured_runs else f"GPU figures of {measured_runs} runs"
    values = [float(m["value"]) for m in measured]
    if not values:
        return None
    unit = measured[0]["unit"]
    better = measured[0].get("better", "higher")
    try:
        kept, rejected = reject_outliers(values, better, reject)
    except ValueError as err:
        raise ValueError(f"{check}.{metric}: {err}") from None
    return _Measured(runs, values, [values[i] for i in kept], rejected, unit, better, what, measured_runs)


def _not_judged(check: str, metric: str, med: float, owner: str, informational: dict[str, str] | None,
                host_baseline: bool) -> str | None:
    """Why the metric is reported without being judged (the reviewer's --informational, a datasheet fraction, a
    count that stayed 0, a host figure outside a node baseline); None where it is judged."""
    name = f"{check}.{metric}"
    reason = next((why for pat, why in (informational or {}).items() if fnmatch.fnmatchcase(name, pat)), None)
    if reason is None and check in peaks.CHECKS_ANNOTATED and metric.endswith("_peak_fraction"):
        reason = peaks.NOT_JUDGED  # a datasheet fraction (gpuaccept annotate peaks): reported, never judged
    if reason is None and med == 0:
        # A count that stayed 0 (XID events, health findings): a relative tolerance cannot judge it; the
        # check's own rules do.
        reason = "0 in every run kept: a relative tolerance cannot judge it (the check's own rules do)"
    if reason is None and owner == metric_table.HOST and not host_baseline:
        reason = HOST_REASON
    return reason


def _judged_entry(m: _Measured, med: float, owner: str, source_id: str, reject: float, docs: int,
                  host_baseline: bool) -> tuple[dict[str, Any], float]:
    """The entry of a judged metric: its median, the tolerance on the side that matters and how it was placed;
    and that tolerance."""
    values, all_values, what = m.values, m.all_values, m.what
    tol = tolerance(values, m.unit)
    entry: dict[str, Any] = {"value": float(f"{med:.6g}"), "unit": m.unit}
    # A node's host figures move with the moment even on one node: the spread rule, not the 10 % catch.
    caught = None if host_baseline else catch_band(values, m.better, what=what)
    if caught is not None:
        tol, band = caught
    else:
        band = (f"median of {len(values)} {what}, tolerance max(unit floor, {SPREAD_FACTOR:g} x the largest "
                f"deviation), capped at {CAP:.0%}"
                + ("" if len(values) >= 3 else ": fewer than 3 runs to place a band that catches a "
                   f"{LOSS:.0%} loss"))  # fmt: skip
    entry["lower" if m.better == "higher" else "upper"] = tol
    entry["source"] = source_id
    entry["band"] = band
    entry["owner"] = owner
    notes = []
    if m.measured_runs < docs:
        notes.append(f"measured in {m.measured_runs} of {docs} runs")
    if m.rejected:
        notes.append(
            f"rejected as outliers (more than {reject:.0%} worse than the median of the runs kept): "
            + ", ".join(f"{all_values[i]:.4g} ({m.runs[i][0]})" for i in m.rejected)
        )
    if notes:
        entry["note"] = "; ".join(notes)
    return entry, tol


def derive(
    docs_by_check: dict[str, list[dict[str, Any]]],
    source_id: str,
    reject: float = CAP,
    informational: dict[str, str] | None = None,
    host_baseline: bool = False,
) -> tuple[dict, dict]:
    """(checks section, per-metric statistics) from benchmark documents grouped by check; runs worse than the
    median by more than ``reject`` are dropped first (:func:`reject_outliers`). ``informational`` maps
    ``check.metric`` patterns (fnmatch) to the reviewer's reason for reporting such a metric without judging it:
    its entry then says the reason and the range measured, with no value or tolerance."""
    checks: dict[str, dict[str, Any]] = {}
    stats: dict[str, dict[str, Any]] = {}
    for check, docs in docs_by_check.items():
        if not docs:
            continue
        entries: dict[str, Any] = {}
        names = sorted(
            {m for d in docs for m in (d.get("metrics") or {})} | {m for d in docs for m in (d.get("waived") or {})}
        )
        for metric in names:
            if host_baseline and metric_table.owner(check, metric) != metric_table.HOST:
                continue  # a node baseline holds the node's host figures only
            m = _measure(check, metric, docs, reject)
            if m is None and host_baseline:
                continue  # waived on this node: nothing of its own to judge
            if m is None:
                why = next(d["waived"][metric] for d in docs if metric in (d.get("waived") or {}))
                unit = waived_unit(check, metric)
                entries[metric] = {
                    "informational": f"waived on the measured machine: {why}",
                    "unit": unit,
                    "source": source_id,
                }
                continue
            all_values, unit, what = m.all_values, m.unit, m.what
            med = statistics.median(m.values)
            owner = metric_table.owner(check, metric)
            reason = _not_judged(check, metric, med, owner, informational, host_baseline)
            if reason is not None and host_baseline:
                continue  # a node baseline judges what it holds
            if reason is not None:
                entries[metric] = {
                    "informational": f"{reason}; measured {min(all_values):.4g}-{max(all_values):.4g} {unit}, "
                    f"median {statistics.median(all_values):.4g} over {len(all_values)} {what}",
                    "unit": unit,
                    "source": source_id,
                    "owner": owner,
                }
                continue
            if owner == metric_table.LINK:
                # Judged against the link NVML reports, never against this machine's figure (docs/verdicts.md).
                entries[metric] = {
                    "link_fraction": LINK_FRACTIONS.get(metric, DEFAULT_LINK_FRACTION),
                    "unit": unit,
                    "source": source_id,
                    "band": "a fraction of the link's rate (docs/verdicts.md); measured "
                    f"{min(all_values):.4g}-{max(all_values):.4g} {unit} over {len(all_values)} {what}",
                    "owner": owner,
                }
                continue
            entries[metric], tol = _judged_entry(m, med, owner, source_id, reject, len(docs), host_baseline)
            stats[f"{check}.{metric}"] = {
                "runs": len(m.values),
                "rejected": [all_values[i] for i in m.rejected],
                "median": med,
                "min": min(m.values),
                "max": max(m.values),
                "tolerance": tol,
            }
        for metric, entry in entries.items():
            entry.setdefault("owner", metric_table.owner(check, metric))  # what the figure is judged against
        if entries or not host_baseline:
            checks[check] = entries
    return checks, stats


def split_layers(checks: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(per-GPU, node-level) sections of a derived checks section, by the metric table's layer. A metric the
    table does not know is an error: the table must learn it first (its check's declaration,
    src/gpuaccept/checks.py)."""
    layers: dict[str, dict[str, dict[str, Any]]] = {metric_table.GPU: {}, metric_table.NODE: {}}
    for check, metrics in checks.items():
        for metric, entry in metrics.items():
            try:
                layer = metric_table.layer(check, metric)
            except metric_table.UnknownMetric as err:
                raise ValueError(f"{check}.{metric}: {err}") from None
            layers[layer].setdefault(check, {})[metric] = entry
    return layers[metric_table.GPU], layers[metric_table.NODE]


def _used_sources(checks: dict[str, dict[str, Any]], sources: dict[str, Any]) -> dict[str, Any]:
    used = {entry["source"] for metrics in checks.values() for entry in metrics.values()}
    return {sid: src for sid, src in sources.items() if sid in used}


class _IndentedDumper(yaml.SafeDumper):
    """Block sequences indented under their key, as yamllint's default (and the shipped files) want them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _dump(doc: dict[str, Any], header: str) -> str:
    comments = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return comments + yaml.dump(doc, Dumper=_IndentedDumper, sort_keys=False, width=110)


def _file(schema: str, fields: dict[str, Any], sources: dict[str, Any], checks: dict[str, Any], header: str) -> str:
    """A reference file's YAML: ``schema``, then ``fields`` in their order, then ``sources`` and ``checks``;
    ``header`` lines become comments at its top."""
    return _dump({"schema": schema, **fields, "sources": sources, "checks": checks}, header)


def node_baseline(node: str, node_type: str, source_id: str, source: dict[str, Any], checks: dict[str, Any],
                  header: str = "") -> str:
    """A node's own baseline (schema gpuaccept.node_baseline/1): its host figures from its accepted runs, judged
    on that node only (results/<node>/node-baseline.yaml, docs/verdicts.md)."""
    description = f"{node}'s own host figures (gpuaccept baseline --node-baseline)"
    fields = {"node": node, "node_type": node_type, "description": description}
    return _file(NODE_BASELINE_SCHEMA, fields, {source_id: source}, checks, header)


def proposals(
    node_type: str,
    description: str,
    match: dict[str, Any],
    source_id: str,
    source: dict[str, Any],
    checks: dict[str, Any],
    header: str = "",
    sku: tuple[str, dict[str, Any], str] | None = None,
    gpu_count: int = 0,
) -> tuple[str, str | None]:
    """(node type file, GPU SKU file or None) of a proposal; ``header`` lines become comments at their top. With
    ``sku`` (its name, match and description) and ``gpu_count``, two layers: per-GPU figures go to
    ``gpus/<sku>.yaml``, node-level ones to ``<node_type>.yaml`` (docs/reference-values.md). Without, for a node
    without GPUs, where no GPU SKU holds the per-GPU layer: one self-contained file (schema
    gpuaccept.references/1, both layers in one file)."""
    sources = {source_id: source}
    if sku is None:
        fields = {"node_type": node_type, "description": description, "match": match}
        return _file(SCHEMA_V1, fields, sources, checks, header), None
    sku_name, sku_match, sku_description = sku
    gpu_checks, node_checks = split_layers(checks)
    node_fields = {"node_type": node_type, "description": description, "gpu": sku_name, "gpu_count": gpu_count}
    if match:
        node_fields["match"] = match
    gpu_text = None
    if gpu_checks:
        gpu_text = _file(
            GPU_SCHEMA,
            {"sku": sku_name, "description": sku_description, "match": sku_match},
            _used_sources(gpu_checks, sources),
            gpu_checks,
            header + f"\nThe per-GPU layer: every node type with gpu: {sku_name} shares it.",
        )
    node_text = _file(
        SCHEMA,
        node_fields,
        _used_sources(node_checks, sources),
        node_checks,
        header + f"\nThe node layer; the per-GPU figures are in {GPU_DIR}/{sku_name}.yaml.",
    )
    return node_text, gpu_text
