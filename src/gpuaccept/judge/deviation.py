"""Three references besides the node type's band: a GPU against its siblings, a node against its fleet, a run
against the same node's accepted commissioning run (docs/verdicts.md, "Deviation from siblings, fleet and own
baseline").

Each rule reads the judged rows of a verdict (a figure with a band: ``lower_bound`` or ``upper_bound``), and
gives rows of its own: check ``siblings``, ``fleet`` or ``baseline``, metric ``<check>.<metric>``, value the
figure over its reference (a ratio: 0.95 is 5 % below), reference 1, and a bound of 1 - threshold (a rate) or
1 + threshold (a latency, a power) on the worse side only. A figure better than its reference never fails.

- **siblings**: each GPU's per-GPU figure against the median of the other GPUs of the same node. Noise model:
  GPUs of one board measured in the same run share the host, the driver, the clocks' policy and the moment, so
  their spread is the spread of the GPUs themselves; the threshold is the largest worse-side deviation any
  recorded healthy node showed, plus a margin. A node of one GPU has no siblings: one row says it cannot judge.
- **fleet**: each node's figure against the median of the other nodes of its node type and suite, with the
  robust z of Iglewicz and Hoaglin (1993), 0.6745 (x - median) / MAD, as Microsoft's Azure HPC guide to
  finding outlier nodes computes it for small fleets; a figure fails only where it is beyond the threshold
  and its robust z is beyond ``Z_LIMIT`` (the same guide's cut), so a fleet whose own spread is wide does not
  reject its ordinary members. Fewer than ``min_fleet_nodes`` nodes: one row says it cannot judge.
- **baseline**: each figure of a run against the same figure of the node's accepted commissioning run, each
  per-GPU figure matched by the GPU's serial number (a GPU swapped since is not compared), as SuperBench's
  rule compares a node with a baseline of its own kind (x / baseline - 1 < -0.05). Noise model: run-to-run
  spread of one node, on one machine start.

The thresholds are data (``reference_values/deviation/thresholds.yaml``), derived by
``scripts/derive_deviation_thresholds.py`` from the recorded healthy runs; a figure the file has no threshold
for says so in an informational row. A rule's failed row fails the node; a row that cannot judge is shown,
not counted (informational), with its reason.
"""

from __future__ import annotations

import dataclasses
import statistics
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.checks import CHECKS
from gpuaccept.judge import retry
from gpuaccept.judge.row import Row
from gpuaccept.judge.status import FAIL, INFO, PASS

SIBLINGS, FLEET, BASELINE = "siblings", "fleet", "baseline"
RULES = (SIBLINGS, FLEET, BASELINE)
THRESHOLDS_FILE = Path("deviation") / "thresholds.yaml"
SCHEMA = "gpuaccept.deviation/1"
#: The robust z beyond which a fleet member is an outlier (Azure HPC's outlier guide; Iglewicz and Hoaglin 1993).
Z_LIMIT = 2.0
CANNOT = "cannot judge: "
_REFERENCE = {SIBLINGS: "the median of its siblings", FLEET: "the fleet median of its node type",
              BASELINE: "the node's own commissioning run"}  # fmt: skip


@dataclass(frozen=True)
class Thresholds:
    """Each rule's threshold per suite and figure (rule -> suite -> ``check.metric`` -> fraction: a suite's
    checks run with its own parameters, so each has its own noise), the fleet's minimum size and where they came
    from; ``problem`` says why there are none (no file, a malformed one)."""

    rules: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    min_fleet_nodes: int = 0
    source: str = ""
    problem: str = ""
    # rule -> suite -> figure -> node type -> fraction: a node type's own noise, where its recorded runs span two
    # machine starts or more (the thresholds file's ``node_types``); other node types take the pooled one.
    types: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)

    def of(self, rule: str, suite: str, figure: str) -> float | None:
        return self.rules.get(rule, {}).get(suite, {}).get(figure)

    def for_type(self, node_type: str) -> Thresholds:
        """The thresholds a node of ``node_type`` is judged with: its own where measured, else the pooled ones."""
        if not self.types:
            return self
        rules = {rule: {suite: {name: self.types.get(rule, {}).get(suite, {}).get(name, {}).get(node_type, t)
                                for name, t in figures.items()} for suite, figures in suites.items()}
                 for rule, suites in self.rules.items()}  # fmt: skip
        return dataclasses.replace(self, rules=rules, types={})


def load(reference_dir: str | Path) -> Thresholds:
    """The thresholds of ``reference_dir``; a Thresholds with ``problem`` set where the file is missing or
    malformed (every rule then says it cannot judge, naming the file)."""
    path = Path(reference_dir) / THRESHOLDS_FILE
    if not path.is_file():
        return Thresholds(problem=f"no thresholds file {path}")
    try:
        doc = textinput.load_yaml(path, "the thresholds file", ValueError)
    except ValueError as err:
        return Thresholds(problem=str(err))
    if doc.get("schema") != SCHEMA:
        return Thresholds(problem=f"{path}: not a thresholds file (schema {SCHEMA!r} expected)")
    rules: dict[str, dict[str, dict[str, float]]] = {}
    types: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for rule in RULES:
        suites = (doc.get("rules") or {}).get(rule) or {}
        try:
            rules[rule] = {str(suite): {str(k): float(v["threshold"]) for k, v in entries.items()}
                           for suite, entries in suites.items()}  # fmt: skip
            types[rule] = {str(suite): {str(k): {str(t): float(e["threshold"]) for t, e in
                                                 (v.get("node_types") or {}).items()} for k, v in entries.items()}
                           for suite, entries in suites.items()}  # fmt: skip
        except (TypeError, KeyError, ValueError, AttributeError):
            return Thresholds(problem=f"{path}: rules.{rule}: each suite's figure needs a numeric 'threshold'")
    size = doc.get("min_fleet_nodes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 2:
        return Thresholds(problem=f"{path}: min_fleet_nodes must be an integer of at least 2")
    return Thresholds(rules, size, str(path), types=types)


def judged(rows: Iterable[Row]) -> list[Row]:
    """The figures the rules compare: rates with a floor (GEMM, copies, collectives, HPL, the power a GPU draws
    under load, efficiency: judge/retry.py's performance figures; a count, a link's trained width, a residual is
    a fault the band judges alone). Ceilings (the most power a GPU draws, idle power, energy, latencies) are left
    to their bands: a GPU drawing a watt more than its sibling is no fault."""
    return [r for r in rows if r.metric and r.value is not None and r.expected and r.check in CHECKS
            and r.lower_bound is not None and retry.retryable(r.check, r.metric)]  # fmt: skip


def higher_is_better(row: Row) -> bool:
    """A rate has a floor (lower bound): higher is better; a latency or a power has a ceiling only."""
    return row.lower_bound is not None


def figure(row: Row) -> str:
    return f"{row.check}.{row.metric}"


def _label(gpu: int | None, facts: dict[str, Any]) -> str:
    if gpu is None:
        return "the node"
    for g in facts.get("gpus") or []:
        if isinstance(g, dict) and g.get("index") == gpu:
            return f"GPU {gpu} (bus {g.get('pci_bus_id') or 'unknown'}, serial {g.get('serial') or 'unknown'})"
    return f"GPU {gpu}"


def compare(rule: str, row: Row, against: float, threshold: float | None, said: str, facts: dict[str, Any],
            extra: str = "", outlier: bool = True) -> Row:  # fmt: skip
    """One figure against its reference ``against`` (a median, a baseline): a row of ``rule``. ``said`` names
    the reference in the reason; ``outlier`` False lets a figure beyond the threshold pass (the fleet's own
    spread is as wide; a GPU above its model's reference), ``extra`` saying why."""
    assert row.value is not None
    who = _label(row.gpu, facts)
    name = figure(row)
    if threshold is None:
        why = f"{CANNOT}no measured noise for {name} in this suite (no threshold in reference_values/{THRESHOLDS_FILE})"
        return Row(rule, name, INFO, None, "ratio", reason=why, owner=row.owner, gpu=row.gpu, expected=False)
    if against <= 0:
        return Row(rule, name, INFO, None, "ratio", reason=f"{CANNOT}the reference of {name} is {against:g}",
                   owner=row.owner, gpu=row.gpu, expected=False)  # fmt: skip
    ratio = row.value / against
    up = higher_is_better(row)
    lo, hi = (1.0 - threshold, None) if up else (None, 1.0 + threshold)
    worse = (lo is not None and ratio < lo) or (hi is not None and ratio > hi)
    out = Row(rule, name, PASS, ratio, "ratio", 1.0, lo, hi, owner=row.owner, gpu=row.gpu,
              band=f"{'-' if up else '+'}{threshold:.1%} of {said} ({rule} noise, reference_values/"
              f"{THRESHOLDS_FILE})")  # fmt: skip
    if worse and outlier:
        side = "below" if up else "above"
        out.status = FAIL
        out.reason = (f"{who}: {name} {row.value:.4g} {row.unit} is {abs(ratio - 1):.1%} {side} {said} "
                      f"({against:.4g} {row.unit}); the {rule} threshold is {threshold:.1%}{extra}")  # fmt: skip
    elif worse:
        out.reason = f"{who}: beyond the threshold, but not named{extra}"
    return out


def check_row(rule: str, rows: list[Row], cannot: str = "") -> Row:
    """The rule's own row: FAIL naming each failed figure, PASS when it judged some and all passed, else an
    informational row saying why it could not judge."""
    failed = [r for r in rows if r.status == FAIL]
    if failed:
        by_who: dict[str, list[str]] = {}
        for r in failed:
            bound = r.lower_bound if r.lower_bound is not None else r.upper_bound
            by_who.setdefault(r.reason.split(": ", 1)[0], []).append(
                f"{r.metric} {r.value - 1:+.1%} (limit {bound - 1:+.1%})")  # type: ignore[operator]
        said = "; ".join(f"{who}: {', '.join(figs)}" for who, figs in by_who.items())
        return Row(rule, None, FAIL, reason=f"{said} against {_REFERENCE[rule]}")
    if any(r.status == PASS for r in rows):
        return Row(rule, None, PASS)
    return Row(rule, None, INFO, reason=cannot or f"{CANNOT}no figure with a threshold", expected=False)


def siblings(rows: list[Row], facts: dict[str, Any], suite: str, thresholds: Thresholds) -> list[Row]:
    """Each GPU's per-GPU figure against the median of the node's other GPUs (module docstring)."""
    if thresholds.problem:
        return [check_row(SIBLINGS, [], CANNOT + thresholds.problem)]
    per: dict[str, list[Row]] = {}
    for r in judged(rows):
        if r.gpu is not None:
            per.setdefault(figure(r), []).append(r)
    gpus = len(facts.get("gpus") or [])
    if gpus < 2:
        return [check_row(SIBLINGS, [], f"{CANNOT}a node of {gpus} GPU has no siblings to compare with")]
    out: list[Row] = []
    for name, group in per.items():
        if len(group) < 2:
            continue
        for r in group:
            others = [o for o in group if o is not r]
            median = statistics.median(o.value for o in others)  # type: ignore[misc]
            said = f"the median of its siblings (GPU {', '.join(str(o.gpu) for o in others)})"
            # Below its siblings is not enough (with one sibling, the other may be the odd one, running fast on
            # power headroom a slowed sibling left): a GPU is named only where it stands further below the value
            # its GPU model's band is centred on than its siblings' median stands above it.
            limit = thresholds.of(SIBLINGS, suite, name)
            accused = r.reference is None or r.value < 2 * r.reference - median  # type: ignore[operator]
            extra = "" if accused else (f" (its siblings stand further above its GPU model's reference "
                                        f"{r.reference:.4g} {r.unit} than it stands below: the odd one is not "
                                        "it)")  # fmt: skip
            out.append(compare(SIBLINGS, r, median, limit, said, facts, extra, accused))
    why = f"{CANNOT}no per-GPU figure measured on 2 GPUs or more" if not per else ""
    return [check_row(SIBLINGS, out, why), *out]


def fleet(rows: list[Row], facts: dict[str, Any], suite: str, others: list[list[Row]], thresholds: Thresholds
          ) -> list[Row]:  # fmt: skip
    """One node's figures against the median of ``others`` (the rows of the fleet's other nodes of its node type
    and suite): a per-GPU figure against every GPU of the other nodes, a node's figure against theirs."""
    if thresholds.problem:
        return [check_row(FLEET, [], CANNOT + thresholds.problem)]
    nodes = len(others) + 1
    if nodes < thresholds.min_fleet_nodes:
        return [check_row(FLEET, [], f"{CANNOT}a fleet of {nodes} node(s) of this type and suite; the rule needs "
                          f"{thresholds.min_fleet_nodes} (reference_values/{THRESHOLDS_FILE})")]  # fmt: skip
    pool: dict[tuple[str, bool], list[float]] = {}
    for node_rows in others:
        for r in judged(node_rows):
            pool.setdefault((figure(r), r.gpu is not None), []).append(r.value)  # type: ignore[arg-type]
    out = []
    for r in judged(rows):
        values = pool.get((figure(r), r.gpu is not None), [])
        if len(values) < thresholds.min_fleet_nodes - 1:
            continue
        median = statistics.median(values)
        mad = statistics.median(abs(v - median) for v in values)
        z = 0.6745 * (r.value - median) / mad if mad > 0 else None  # type: ignore[operator]
        outlier = z is None or (z < -Z_LIMIT if higher_is_better(r) else z > Z_LIMIT)
        extra = f" (robust z {z:+.1f})" if z is not None else " (the fleet's figures are equal: MAD 0)"
        if not outlier:
            extra = f" (robust z {z:+.1f}: within the fleet's own spread)"
        said = f"the fleet median of {len(others)} other node(s)"
        out.append(compare(FLEET, r, median, thresholds.of(FLEET, suite, figure(r)), said, facts, extra, outlier))
    return [check_row(FLEET, out, f"{CANNOT}the fleet measured none of this node's figures"), *out]


def baseline(rows: list[Row], facts: dict[str, Any], suite: str, commission: list[Row] | None,
             commission_facts: dict[str, Any], where: str, thresholds: Thresholds) -> list[Row]:  # fmt: skip
    """One run's figures against the node's accepted commissioning run (``commission``: its rows, None where
    there is none; ``where`` names it or says why there is none), per-GPU figures matched by serial."""
    if thresholds.problem:
        return [check_row(BASELINE, [], CANNOT + thresholds.problem)]
    if commission is None:
        return [check_row(BASELINE, [], f"{CANNOT}no commissioning run ({where})")]
    serial_now = {g.get("index"): g.get("serial") for g in facts.get("gpus") or [] if isinstance(g, dict)}
    serial_then = {g.get("serial"): g.get("index") for g in commission_facts.get("gpus") or [] if isinstance(g, dict)}
    same_gpus = bool(serial_now) and set(serial_now.values()) == set(serial_then)
    then = {(figure(r), r.gpu): r.value for r in judged(commission)}
    out: list[Row] = []
    unmatched: set[int] = set()
    for r in judged(rows):
        if r.gpu is None:
            key = (figure(r), None) if same_gpus else None
        else:
            old = serial_then.get(serial_now.get(r.gpu))
            key = (figure(r), old) if old is not None else None
            if old is None:
                unmatched.add(r.gpu)
        if key is None or key not in then:
            continue
        said = f"the commissioning run {where}"
        out.append(compare(BASELINE, r, then[key], thresholds.of(BASELINE, suite, figure(r)), said, facts))  # type: ignore[arg-type]
    notes = [Row(BASELINE, "gpu_serial", INFO, expected=False, gpu=g, reason=f"{CANNOT}{_label(g, facts)} is not a "
                 f"GPU of the commissioning run {where} (no GPU of that serial): its figures are not compared")
             for g in sorted(unmatched)]  # fmt: skip
    if not same_gpus:
        why = f"{CANNOT}the node's GPUs are not those of the commissioning run {where}: its figures are not compared"
        notes.append(Row(BASELINE, "node_gpus", INFO, expected=False, reason=why))
    why = f"{CANNOT}the commissioning run {where} has none of this run's figures"
    return [check_row(BASELINE, out, why), *notes, *out]


def off(row: Row) -> float:
    """How far a rule's row stands to the worse side of its reference (negative: to the better side)."""
    assert row.value is not None
    return (1.0 - row.value) if higher_is_better(row) else (row.value - 1.0)


def is_figure_row(row: Row) -> bool:
    """A rule's row of one figure (shown in the verdict table's deviation section, not among the checks)."""
    return row.check in RULES and row.metric is not None


def section(rows: list[Row], limit: int = 3) -> list[str]:
    """The verdict table's deviation section: per rule, every failed figure and the ``limit`` worst others, worst
    first (figure, GPU, deviation, threshold, verdict); all of them are in verdict.json and Prometheus."""
    lines: list[str] = []
    for rule in RULES:
        figures = sorted((r for r in rows if r.check == rule and r.metric and r.value is not None), key=off,
                         reverse=True)  # fmt: skip
        shown = [r for r in figures if r.status == FAIL] or []
        shown += [r for r in figures if r.status != FAIL][: max(0, limit - len(shown))]
        for r in shown:
            bound = r.lower_bound if r.lower_bound is not None else r.upper_bound
            limit_text = "-" if bound is None else f"{bound - 1:+.1%}"
            gpu = "-" if r.gpu is None else str(r.gpu)
            lines.append(f"  {rule:9} {r.metric:38} {gpu:>3} {r.value - 1:+7.1%}  limit {limit_text:>7}  "  # type: ignore[operator]
                         f"{r.status.upper()}")  # fmt: skip
        if len(figures) > len(shown):
            lines.append(f"  {rule:9} ({len(figures) - len(shown)} more within their threshold: verdict.json)")
        unjudged = [r for r in rows if r.check == rule and r.metric and r.value is None and r.reason]
        if unjudged:  # e.g. a suite whose noise was never measured: said once, each figure's reason in verdict.json
            lines += textwrap.wrap(f"{rule:9} {len(unjudged)} figure(s) not judged, e.g. {unjudged[0].metric}: "
                                   f"{unjudged[0].reason} (each one's reason: verdict.json)", 118,
                                   initial_indent="  ", subsequent_indent=" " * 12)  # fmt: skip
    if not lines:
        return []
    return ["deviation from siblings, fleet median and own commissioning run (worst first; gpu, figure/reference - 1):",
            *lines]  # fmt: skip
