"""The node's verdict: ReFrame's JSON report, the node facts and the node type's references, turned into one
row per check and metric (pass, fail, not run, waived, or informational) and a verdict for the node.

A check that did not run is 'not_run' with the reason, never 'pass'; a node passes only when every check its
node type has references for passed, and the GPU count matches what the inventory and the node type say.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .checks import CHECKS, in_suite
from .references import NodeType, ReferenceError, load_node_type

PASS, FAIL, NOT_RUN, WAIVED, INFO = "pass", "fail", "not_run", "waived", "info"
SCHEMA = "gpuaccept.verdict/1"


@dataclass
class Row:
    check: str
    metric: str | None  # None: the row of the check itself
    status: str
    value: float | None = None
    unit: str = ""
    reference: float | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None
    reason: str = ""
    expected: bool = True  # False: the node type has no references for this check, so it does not count

    @property
    def tolerance(self) -> str:
        parts = []
        if self.reference:
            if self.lower_bound is not None:
                parts.append(f"-{(1 - self.lower_bound / self.reference) * 100:.0f}%")
            if self.upper_bound is not None:
                parts.append(f"+{(self.upper_bound / self.reference - 1) * 100:.0f}%")
        return "/".join(parts)


@dataclass
class Verdict:
    node: str
    node_type: str
    suite: str
    accepted: bool
    rows: list[Row]
    started_unix: float | None = None
    finished_unix: float | None = None
    reframe_version: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    run_dir: str = ""

    @property
    def duration_s(self) -> float | None:
        if self.started_unix is None or self.finished_unix is None:
            return None
        return self.finished_unix - self.started_unix

    def failed_checks(self) -> list[str]:
        return sorted({r.check for r in self.rows if r.status in (FAIL, NOT_RUN) and r.expected})

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "gpuaccept_version": __version__,
            "node": self.node,
            "node_type": self.node_type,
            "suite": self.suite,
            "verdict": PASS if self.accepted else FAIL,
            "failed_checks": self.failed_checks(),
            "started_unix": self.started_unix,
            "finished_unix": self.finished_unix,
            "duration_s": self.duration_s,
            "reframe_version": self.reframe_version,
            "run_dir": self.run_dir,
            "facts": self.facts,
            "rows": [asdict(r) for r in self.rows],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Verdict:
        if doc.get("schema") != SCHEMA:
            raise ValueError(f"not a gpuaccept verdict (schema {doc.get('schema')!r}, expected {SCHEMA!r})")
        return cls(
            node=doc["node"],
            node_type=doc["node_type"],
            suite=doc["suite"],
            accepted=doc["verdict"] == PASS,
            rows=[Row(**r) for r in doc["rows"]],
            started_unix=doc.get("started_unix"),
            finished_unix=doc.get("finished_unix"),
            reframe_version=doc.get("reframe_version"),
            facts=doc.get("facts") or {},
            run_dir=doc.get("run_dir", ""),
        )


class ReportError(Exception):
    """ReFrame's report is missing or not what ReFrame 4 writes."""


def load_report(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: ReFrame's report is missing: ReFrame did not run or did not finish") from None
    except (OSError, json.JSONDecodeError) as err:
        raise ReportError(f"{path}: cannot read ReFrame's report: {err}") from None
    if not isinstance(report, dict) or "runs" not in report or "session_info" not in report:
        raise ReportError(f"{path}: not a ReFrame report (no 'session_info'/'runs')")
    return report


def _testcases(report: dict[str, Any]) -> list[dict[str, Any]]:
    cases = []
    for run in report.get("runs", []):
        cases.extend(tc for tc in run.get("testcases", []) if not tc.get("fixture"))
    # With --max-retries only the last run of a test case counts: later runs replace earlier ones.
    latest: dict[str, dict[str, Any]] = {}
    for tc in cases:
        latest[tc.get("unique_name") or tc.get("name")] = tc
    return list(latest.values())


def _bench_document(tc: dict[str, Any], result_file: str, moved: list[Path]) -> dict[str, Any] | None:
    """The benchmark's JSON document of a test case: where ReFrame kept it, or, for a run directory that was
    moved (fetched to the controller, recorded as a test fixture), at the same place relative to it."""
    candidates = [Path(d) for d in (tc.get("outputdir"), tc.get("stagedir")) if d]
    for prefix in moved:
        output = tc.get("outputdir")
        if output and output.startswith(str(prefix[0])):
            candidates.append(prefix[1] / Path(output).relative_to(prefix[0]))
    for directory in candidates:
        if directory:
            path = Path(directory) / result_file
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
    return None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _metric_rows(tc: dict[str, Any], key: str, node_type: NodeType | None, moved: list) -> list[Row]:
    rows = []
    refs = node_type.checks.get(key, {}) if node_type else {}
    seen = set()
    for perf_key, entry in (tc.get("perfvalues") or {}).items():
        metric = perf_key.rsplit(":", 1)[-1]
        seen.add(metric)
        value, _ref, _lower, _upper, unit, result = (list(entry) + [None] * 6)[:6]
        ref = refs.get(metric)
        row = Row(key, metric, FAIL, _num(value), unit or "")
        missing = node_type.missing_reason(key, metric) if node_type else None
        if ref is None and missing:
            row.status, row.reason = NOT_RUN, missing
        elif ref is None:
            row.reason = "no reference value for this metric"
        else:
            row.status, row.reason, (row.lower_bound, row.upper_bound) = ref.assess(row.value)
            row.reference = ref.value
            if row.status == PASS and result == "fail":
                row.status, row.reason = FAIL, "ReFrame failed the check's performance stage"
        rows.append(row)
    doc = _bench_document(tc, CHECKS[key].result_file, moved)
    for metric, why in ((doc or {}).get("waived") or {}).items():
        if metric in seen:
            continue
        ref = refs.get(metric)
        status = WAIVED if ref is None or not ref.judged else FAIL
        reason = f"waived on this node: {why}"
        if status == FAIL:
            reason += f" (but node type {node_type.name} expects a value)"  # type: ignore[union-attr]
        rows.append(Row(key, metric, status, unit=ref.unit if ref else "", reason=reason))
        seen.add(metric)
    for metric, ref in refs.items():
        if metric not in seen:
            status = FAIL if ref.judged else INFO
            rows.append(
                Row(
                    key,
                    metric,
                    status,
                    unit=ref.unit,
                    reference=ref.value,
                    reason="not measured: the check did not report this metric",
                )
            )
    return rows


# ReFrame's log line for a skipped test: "[ SKIP ] (1/2) <display name> /<hash> @<partition>+<env> [<reason>]"
_SKIP_LINE = re.compile(
    r"\bSKIP\s*(?:\x1b\[[0-9;]*m)?\s*\] \(\d+/\d+\) (?P<name>.+?) /(?P<hash>[0-9a-f]+) @\S+ \[(?P<why>.*)\]$"
)


def _skip_reason(tc: dict[str, Any], run_dir: str | Path | None) -> str:
    """Why ReFrame skipped a test: its JSON report (4.10) drops the reason, its log (run_dir/reframe.log) has it."""
    if run_dir is None:
        return ""
    try:
        text = (Path(run_dir) / "reframe.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    for line in text.splitlines():
        m = _SKIP_LINE.search(line.rstrip())
        if m and m.group("hash") == tc.get("hashcode") and m.group("name") == tc.get("display_name"):
            return m.group("why")
    return ""


def _not_run_reason(key: str, facts: dict[str, Any]) -> str:
    if CHECKS[key].needs_gpu and not facts.get("gpus"):
        return facts.get("gpu_error") or "no NVIDIA GPU found"
    return "ReFrame did not run this check (not selected, or filtered out: see reframe.log in the run directory)"


def build(
    report: dict[str, Any] | None,
    facts: dict[str, Any],
    reference_dir: str | Path,
    node_type_name: str,
    suite: str,
    expected_gpus: int | None = None,
    report_error: str | None = None,
    run_dir: str | Path | None = None,
) -> Verdict:
    """Judge one run. ``report`` None means ReFrame left no report; ``report_error`` says why. ``run_dir``
    holds the report and ReFrame's output tree under ``reframe/output`` (also after a move)."""
    rows: list[Row] = []
    node_type: NodeType | None = None
    try:
        node_type = load_node_type(reference_dir, node_type_name)
    except ReferenceError as err:
        rows.append(Row("references", None, FAIL, reason=str(err)))
    if node_type is not None and node_type.node_layer_missing:
        # A known GPU SKU with no node type file for this GPU count: per-GPU verdicts only; not accepted.
        rows.append(Row("references", "node_layer", NOT_RUN, reason=node_type.node_layer_missing))

    # The node itself: the GPUs the inventory and the node type promise are there.
    seen_gpus = len(facts.get("gpus") or [])
    for claim, source in (
        (expected_gpus, "the inventory"),
        (node_type.match["gpu_count"] if node_type else None, f"node type {node_type_name}"),
    ):
        if claim is None:
            continue
        ok = seen_gpus == claim
        reason = (
            ""
            if ok
            else (
                f"{source} says {claim} GPUs, {facts.get('gpu_source') or 'NVML/nvidia-smi'} "
                f"sees {seen_gpus} on {facts.get('hostname')}"
                + (f": {facts['gpu_error']}" if facts.get("gpu_error") else "")
                + "; check nvidia-smi, the seating and power of missing GPUs, or the inventory"
            )
        )
        rows.append(
            Row(
                "node",
                "gpu_count",
                PASS if ok else FAIL,
                float(seen_gpus),
                "",
                float(claim),
                float(claim),
                float(claim),
                reason,
            )
        )

    cases = _testcases(report) if report else []
    moved = []
    prefix_output = (report or {}).get("session_info", {}).get("prefix_output")
    if run_dir is not None and prefix_output:
        moved.append((Path(prefix_output), Path(run_dir) / "reframe" / "output"))
    for check in in_suite(suite):
        expected = node_type is None or check.key in node_type.checks
        mine = [tc for tc in cases if tc.get("check_key") == check.key]
        if not mine:
            reason = report_error or _not_run_reason(check.key, facts)
            if not expected:
                reason += f" (not expected for node type {node_type_name})"
            rows.append(Row(check.key, None, NOT_RUN, reason=reason, expected=expected))
            continue
        for tc in mine:
            result = tc.get("result")
            if result == "pass":
                status, reason = PASS, ""
            elif result == "skip":
                status, reason = NOT_RUN, (
                    tc.get("fail_reason") or tc.get("not_run_reason") or _skip_reason(tc, run_dir) or "skipped"
                )
            else:
                status = FAIL
                phase = tc.get("fail_phase") or "run"
                reason = f"{phase}: {tc.get('fail_reason') or result}"
            metric_rows = _metric_rows(tc, check.key, node_type, moved)
            if status == PASS and any(r.status == FAIL for r in metric_rows):
                status, reason = FAIL, "a metric failed its reference"
            if status == NOT_RUN and not expected:
                # Skipped (an optional backend or an application not installed) on a node type that has no
                # references for it: not run and not expected. Anywhere else not run fails.
                reason = f"{reason} (not expected for node type {node_type_name})"
            rows.append(Row(check.key, None, status, reason=reason, expected=expected or status != NOT_RUN))
            rows.extend(metric_rows)

    rows.extend(_cpu_gpu_ratios(rows))
    judged = [r for r in rows if r.expected and r.status not in (INFO, WAIVED)]
    accepted = (
        node_type is not None
        and all(r.status == PASS for r in judged)
        and any(r.metric is None and r.status == PASS for r in judged)
    )
    session = (report or {}).get("session_info", {})
    return Verdict(
        node=facts.get("hostname") or session.get("hostname") or "unknown",
        node_type=node_type_name,
        suite=suite,
        accepted=accepted,
        rows=rows,
        started_unix=session.get("time_start_unix"),
        finished_unix=session.get("time_end_unix"),
        reframe_version=session.get("version"),
        facts=facts,
    )


def _cpu_gpu_ratios(rows: list[Row]) -> list[Row]:
    """The host's GEMM rate (all cores) over the slowest GPU's, as seed 003 compares CPU and GPU: reported,
    not judged."""
    values = {(r.check, r.metric): r.value for r in rows if r.metric and r.value is not None}
    out = []
    for cpu, gpu, name in (("dgemm_gflops", "fp64_tflops_min", "cpu_gpu_dgemm_ratio"),
                           ("sgemm_gflops", "fp32_tflops_min", "cpu_gpu_sgemm_ratio")):
        c, g = values.get(("cpu_gemm", cpu)), values.get(("gemm", gpu))
        if c and g:
            out.append(Row("cpu_gemm", name, INFO, c / (g * 1000.0), "ratio",
                           reason=f"informational: host {cpu} (all cores) / GPU {gpu}"))
    # HPL: the GPUs' HPL-style node rate over the host's HPL (seed 003's GPU/CPU ratio), where both ran.
    host, gpus = values.get(("hpl_host", "gflops")), values.get(("hplstyle", "tflops_sum"))
    if host and gpus:
        out.append(Row("hpl_host", "gpu_cpu_hpl_ratio", INFO, gpus * 1000.0 / host, "ratio",
                       reason="informational: hplstyle tflops_sum (all GPUs) / hpl_host gflops (host)"))
    return out


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"
    return f"{text} {unit}".strip()


def table(verdict: Verdict) -> str:
    """The verdict as a plain-text table: check, metric, value, reference, tolerance, verdict, reason."""
    head = ("check", "metric", "value", "reference", "tolerance", "verdict", "reason")
    lines = [head]
    for r in verdict.rows:
        lines.append(
            (
                r.check,
                r.metric or "-",
                _fmt(r.value, r.unit),
                _fmt(r.reference, r.unit),
                r.tolerance or "-",
                r.status.upper().replace("_", " "),
                r.reason,
            )
        )
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head) - 1)]
    out = []
    for line in lines:
        cells = [str(c).ljust(w) for c, w in zip(line, widths, strict=False)]
        out.append("  ".join([*cells, line[-1]]).rstrip())
    out.insert(1, "  ".join("-" * w for w in widths) + "  ------")
    status = "ACCEPTED" if verdict.accepted else "REJECTED"
    failed = verdict.failed_checks()
    summary = f"{verdict.node} ({verdict.node_type}, suite {verdict.suite}): {status}"
    if failed:
        summary += f"; failed or not run: {', '.join(failed)}"
    return "\n".join([*out, "", summary])
