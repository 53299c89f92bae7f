"""The judge's rules for one check's benchmark document (docs/benchmark-json.md): the document is the source of
truth, so each rule reads it and says what is wrong, with the file named.

- ``load_document``: missing, empty, not a regular file, too large, not UTF-8, not JSON, or not a
  ``gpuaccept.bench/1`` document by its schema: a problem naming the file, never an empty document.
- ``document_problems``: the tool's own errors, its failed verification, and a GPU it did not see (a GPU check's
  document must list its ``devices``).
- ``hpl_problems``: HPL's correctness rule on every run the document lists (residual below a finite threshold of
  at most 16, PASSED, output not cut short).
- ``throttle_findings``: clocks held back under load by anything but the power cap (each a Finding naming the GPU,
  the reason and its fix; ``throttle_problems`` their lines).
- ``memtest_findings``: a GPU whose memory did not hold what was written, or that was not tested (``memtest_problems``
  their lines).
- ``combine``: the power sampler's document joined to a check's, with GFLOP/s per watt.

The load stage (gpuaccept.judge.load) calls ``load_document``; the validate stage (gpuaccept.judge.validate)
calls the others, once per test case. Metric values against references are judged by ``MetricReference.assess``
(gpuaccept.references), the one place a value passes or fails; the health rules are in
gpuaccept.judge.health_rules.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jsonschema

from gpuaccept import textinput
from gpuaccept.judge import completeness
from gpuaccept.judge.rules.finding import Finding
from gpuaccept.layout import BENCH_SCHEMA

MAX_DOCUMENT_BYTES = 256 << 20  # the largest document a tool writes is a few MB (the bandwidth sweep)
HPL_THRESHOLD_MAX = 16.0  # HPL's own default; a larger one accepts wrong answers

_NUMBER_OR_NULL = {"type": ["number", "null"]}
_METRICS = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "required": ["value", "unit"],
        "properties": {"value": _NUMBER_OR_NULL, "unit": {"type": "string"}},
    },
}
DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema", "tool", "metrics", "verification"],
    "properties": {
        "schema": {"const": BENCH_SCHEMA},
        "tool": {"type": "string", "minLength": 1},
        "devices": {"type": "array", "items": {"type": "object"}},
        "metrics": _METRICS,
        # Each GPU's own figure of the per-GPU metrics above (docs/benchmark-json.md): one entry per GPU.
        "gpu_metrics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["gpu", "metrics"],
                "properties": {"gpu": {"type": "integer", "minimum": 0}, "metrics": _METRICS},
            },
        },
        "waived": {"type": "object", "additionalProperties": {"type": "string"}},
        "verification": {
            "type": "object",
            "required": ["passed"],
            "properties": {"passed": {"type": "boolean"}, "failures": {"type": "array", "items": {"type": "string"}}},
        },
        "errors": {"type": "array", "items": {"type": "string"}},
        "not_run": {
            "type": "object",
            "required": ["reason"],
            "properties": {"reason": {"type": "string", "minLength": 1}, "fix": {"type": "string"}},
        },
        "results": {"type": "object"},
        "parameters": {"type": "object"},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(DOCUMENT_SCHEMA)

# Clock throttle reasons under load that mean a fault, with what an operator does about each; the software
# power cap (and the idle or application clock settings) are how a GPU runs at its power limit, not faults.
FAULT_REASONS = {
    "hw_slowdown": "HW slowdown (power supply or thermal event): check the GPU's power cables, the PSUs and the "
    "inlet temperature",
    "sw_thermal_slowdown": "software thermal slowdown: check the fans, airflow and inlet temperature, and that "
    "nothing blocks the GPU's heatsink",
    "hw_thermal_slowdown": "hardware thermal slowdown: the GPU is too hot; check the cooling (fans, liquid loop, "
    "airflow) and the inlet temperature",
    "hw_power_brake_slowdown": "hardware power brake: the system asserted the power brake (PSU fault or "
    "over-current); check the PSUs and the BMC's event log",
}


class DocumentError(Exception):
    """A benchmark document (or another input the judge reads) is missing or not what it must be."""


def read_text_input(
    path: Path, what: str, max_bytes: int = MAX_DOCUMENT_BYTES, within: Path | tuple[Path, ...] | None = None
) -> str:
    """A file's text for the judge (gpuaccept.textinput.read_text: a regular file, never through a symbolic link,
    at most ``max_bytes``, UTF-8, inside ``within``); every problem raises DocumentError naming the file."""
    return textinput.read_text(path, what, DocumentError, max_bytes, within)


def load_json_input(path: Path, what: str, kind: type = dict, within: Path | tuple[Path, ...] | None = None) -> Any:
    """A JSON input of the judge (a benchmark document, ReFrame's report, the node facts): read as
    ``read_text_input`` does, parsed strictly (gpuaccept.textinput.parse_json: no key twice, no NaN, no number out
    of range, no deep nesting), and of the JSON type ``kind``."""
    return textinput.load_json(path, what, DocumentError, kind, MAX_DOCUMENT_BYTES, within)


def load_document(path: Path, within: Path | tuple[Path, ...] | None = None) -> dict[str, Any]:
    """A benchmark document, schema-checked (DOCUMENT_SCHEMA); DocumentError names the file and the problem.
    ``within``: the run directory (or directories) it must lie in."""
    doc = load_json_input(path, "the benchmark document", within=within)
    problem = schema_problem(doc)
    if problem:
        raise DocumentError(f"{path}: {problem}")
    return doc


def schema_problem(doc: Any) -> str:
    """What makes ``doc`` no ``gpuaccept.bench/1`` document by DOCUMENT_SCHEMA ("" when it is one)."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(doc))
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"not a {BENCH_SCHEMA} document: at {where}: {error.message[:300]}"


def document_problems(
    doc: dict[str, Any], path: Path, gpus_seen_by_node: int | None, one_gpu: bool = False
) -> list[str]:
    """What the tool itself reported as wrong (errors, failed verification), and a GPU count other than the
    node's (``gpus_seen_by_node``; None for host checks; 1 for a check that measures one GPU by design,
    ``one_gpu``), or no ``devices`` list to count them in."""
    problems = [f"{path.name}: error: {e}" for e in doc.get("errors") or []]
    verification = doc["verification"]
    if not verification["passed"]:
        failures = verification.get("failures") or []
        problems.append(f"{path.name}: verification failed: " + ("; ".join(failures[:5]) or "no details"))
    if gpus_seen_by_node is not None and "devices" not in doc:
        # Without it the GPU-count cross-check cannot be made: a document that hides a missing GPU is not a pass.
        problems.append(f"{path.name}: no 'devices' list: the GPUs the benchmark measured cannot be counted")
    elif gpus_seen_by_node is not None:
        seen = len(doc["devices"])
        if seen != gpus_seen_by_node:
            problems.append(f"{path.name}: the benchmark saw {seen} GPUs, " + (
                "it measures one GPU by design" if one_gpu else f"the node has {gpus_seen_by_node}"))
    return problems


def hpl_problems(doc: dict[str, Any], path: Path) -> list[str]:
    """HPL's correctness rule over the runs a document lists: gpuaccept-hplstyle's ``results.per_gpu[].runs``
    (threshold in ``parameters``) or an HPL output's ``results.runs`` (gpuaccept.probe.hpl.to_document)."""
    results, params = doc.get("results") or {}, doc.get("parameters") or {}
    threshold = params.get("threshold")
    problems = []
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        problems.append(f"{path.name}: no finite residual threshold ({threshold!r}): nothing was checked")
        threshold = None
    elif not 0 < threshold <= HPL_THRESHOLD_MAX:
        problems.append(
            f"{path.name}: residual threshold {threshold:g} is outside (0, {HPL_THRESHOLD_MAX:g}]: HPL skips its "
            "check at 0 or below, and a larger one accepts wrong answers (set 16.0 in HPL.dat)"
        )
        threshold = None
    runs: list[tuple[str, dict[str, Any]]] = []
    for g in results.get("per_gpu") or []:
        runs += [(f"GPU {g.get('gpu')} run {i + 1}", r) for i, r in enumerate(g.get("runs") or [])]
    runs += [(f"line {r.get('line')}: run {r.get('tv')} N={r.get('n')}", r) for r in results.get("runs") or []]
    if not runs:
        problems.append(f"{path.name}: no HPL run recorded: the run crashed or did not start")
    for what, run in runs:
        residual = run.get("scaled_residual")
        if isinstance(residual, bool) or not isinstance(residual, (int, float)) or math.isnan(residual):
            problems.append(f"{path.name}: {what}: no scaled residual ({residual!r})")
        elif threshold is not None and not residual < threshold:
            problems.append(f"{path.name}: {what}: scaled residual {residual:g} is not below {threshold:g}")
        if run.get("residual_verdict", "PASSED") != "PASSED" or run.get("passed", True) is not True:
            problems.append(f"{path.name}: {what}: HPL's own residual check FAILED")
    if "ended" in results and results["ended"] is not True:
        problems.append(f"{path.name}: no 'End of Tests.' line: the output is cut short (crash, kill or time limit)")
    return problems


def throttle_findings(doc: dict[str, Any], path: Path) -> list[Finding]:
    """Clocks held back under load by a fault (FAULT_REASONS, or a reason NVML did not name) on any GPU: one finding
    per GPU and reason (``key``), with the fix for that reason."""
    devices = {d.get("index"): d for d in doc.get("devices") or [] if isinstance(d, dict)}
    out = []
    for row in (doc.get("results") or {}).get("per_gpu") or []:
        d = devices.get(row.get("gpu"), {})
        label = f"GPU {row.get('gpu')} (bus {d.get('pci_bus_id')}, serial {d.get('serial') or 'unknown'})"
        for reason, seconds in sorted((row.get("throttled_s") or {}).items()):
            if reason in FAULT_REASONS or reason.startswith("unknown"):
                message = (f"{label}: clocks held back by {reason} for {seconds:.1f} s under load (max "
                           f"{row.get('temp_c_max')} C)")  # fmt: skip
                out.append(Finding("throttle", message, FAULT_REASONS.get(reason, "look the reason bit up in NVML"),
                                   gpu=_gpu(row.get("gpu")), file=path.name, key=reason))  # fmt: skip
    return out


def throttle_problems(doc: dict[str, Any], path: Path) -> list[str]:
    """``throttle_findings`` as the lines the verdict shows."""
    return [f.text() for f in throttle_findings(doc, path)]


def _gpu(index: Any) -> int | None:
    """A GPU index from a document (None where it is not a whole number)."""
    return index if isinstance(index, int) and not isinstance(index, bool) else None


# What an operator does about a GPU whose memory returned other bits than were written.
MEMTEST_FIX = (
    "the GPU's memory is faulty: note its serial (nvidia-smi -q), read its ECC counters and row remapping "
    "(nvidia-smi -q -d ECC,ROW_REMAPPER), reset it and rerun the test; a GPU that fails again goes back to its vendor"
)


def _count(value: Any) -> int | None:
    """A non-negative whole count from a document, or None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _first_bad(row: dict[str, Any]) -> str:
    """The first bad word a GPU's row records, as text: pattern, offset, address, expected, found, bits."""
    for pattern in row.get("patterns") or []:
        for bad in (pattern.get("first_bad") or []) if isinstance(pattern, dict) else []:
            if not isinstance(bad, dict):
                continue
            offset = bad.get("offset")
            where = f"offset {offset:#x} ({offset / 2**30:.3f} GiB)" if _count(offset) is not None else "offset ?"
            return (
                f"first in {pattern.get('pattern')} at {where}, address {bad.get('address')}, expected "
                f"{bad.get('expected')}, found {bad.get('found')} (bits {bad.get('bits')} flipped)"
            )
    return "no bad word recorded"


def memtest_findings(doc: dict[str, Any], path: Path) -> list[Finding]:
    """The memory test's rule over gpuaccept-memtest's ``results.per_gpu``: every GPU the document lists was tested
    (a pass completed over some memory) and every word held what was written (``mismatches`` 0); the node's
    ``errors_total`` is the sum of the GPUs' counts. A self-test run (``parameters.inject_error``) is named as
    one: its bad word was put there on purpose. A GPU's finding names it (``gpu``); a bad word's gives MEMTEST_FIX."""
    devices = {d.get("index"): d for d in doc.get("devices") or [] if isinstance(d, dict)}
    rows = (doc.get("results") or {}).get("per_gpu")

    def found(message: str, gpu: Any = None, fix: str | None = None) -> Finding:
        return Finding("memtest", message, fix, gpu=_gpu(gpu), file=path.name)

    if not isinstance(rows, list) or not rows:
        return [found(f"{path.name}: no GPU's memory test recorded (results.per_gpu): the test did not run")]
    problems = []
    if (doc.get("parameters") or {}).get("inject_error") is True:
        problems.append(found(f"{path.name}: a self-test run (--inject-error flipped one bit on each GPU on "
                              "purpose): rerun without it"))  # fmt: skip
    problems += [found(p) for p in completeness.records_problems(rows, "results.per_gpu", path, doc)]
    total = 0
    for row in rows:
        if not isinstance(row, dict):
            problems.append(found(f"{path.name}: results.per_gpu holds {type(row).__name__}, not an object per GPU"))
            continue
        gpu = row.get("gpu")
        d = devices.get(gpu, {})
        label = f"GPU {gpu} (bus {row.get('pci_bus_id') or d.get('pci_bus_id')}, {d.get('uuid') or 'uuid unknown'})"
        bad, passes, tested = _count(row.get("mismatches")), _count(row.get("passes")), _count(row.get("tested_bytes"))
        if bad is None:
            problems.append(found(f"{label}: no count of bad words ({row.get('mismatches')!r})", gpu))
            continue
        total += bad
        injected = row.get("injected") if isinstance(row.get("injected"), dict) else None
        if bad and injected and injected.get("reported") is True:
            problems.append(found(f"{label}: the self-test's flipped bit at offset {injected.get('offset')} was "
                                  f"found ({bad} bad word(s) in all)", gpu))  # fmt: skip
        elif bad:
            problems.append(found(f"{label}: {bad} bad 64-bit word(s) in its memory, {_first_bad(row)}", gpu,
                                  MEMTEST_FIX))  # fmt: skip
        if not passes or not tested:
            why = row.get("stopped") or "no pass completed"
            problems.append(found(f"{label}: memory not tested ({passes or 0} passes over {tested or 0} bytes): {why}",
                                  gpu))  # fmt: skip
        else:
            problems += [found(f"{label}: {p}", gpu) for p in memtest_coverage(row, doc.get("parameters") or {})]
    errors_total = ((doc.get("metrics") or {}).get("errors_total") or {}).get("value")
    if errors_total is not None and errors_total != total:
        problems.append(found(f"{path.name}: errors_total {errors_total!r} is not the sum of the GPUs' bad words "
                              f"({total})"))  # fmt: skip
    return problems


def memtest_problems(doc: dict[str, Any], path: Path) -> list[str]:
    """``memtest_findings`` as the lines the verdict shows."""
    return [f.text() for f in memtest_findings(doc, path)]


#: The memory test's budget by time is spent when one more pass would end after it (gpuaccept-memtest), so a GPU's
#: time plus one pass (its mean pass) reaches the time asked; this fraction of it leaves room for a last pass that
#: ran faster than the mean, and still fails a test stopped after a pass of a much longer budget.
MEMTEST_TIME_FRACTION = 0.9
#: cudaMalloc sizes are whole 2 MiB pages (the tool rounds its target down to them).
MEMTEST_GRANULARITY_BYTES = 2 << 20


def memtest_coverage(row: dict[str, Any], params: dict[str, Any]) -> list[str]:
    """Whether a GPU's memory test covered what it was asked: it did not stop early (``stopped``), it tested the
    bytes it planned (``target_bytes``: the asked ``fraction`` of the free memory less the margin) and it ran the
    passes (``--passes``) or the time (``--seconds``) asked. A figure the document does not hold (an older tool)
    is not judged; one that contradicts another fails."""
    out = []
    if row.get("stopped"):
        out.append(f"stopped before its budget was spent: {row['stopped']}")
    tested, target = _count(row.get("tested_bytes")), _count(row.get("target_bytes"))
    if tested is not None and target is not None and tested < target:
        out.append(f"tested {tested} bytes of the {target} planned: the rest of its memory was never written")
    free, margin, fraction = _count(row.get("free_bytes")), _count(row.get("margin_bytes")), params.get("fraction")
    if target is not None and free is not None and margin is not None and isinstance(fraction, (int, float)):
        asked = max(free - margin, 0) * float(fraction)
        if target < asked - MEMTEST_GRANULARITY_BYTES:
            out.append(f"planned {target} bytes, the fraction asked ({fraction:g} of {free} free less the "
                       f"{margin} margin) is {asked:.0f}")  # fmt: skip
    passes, seconds = _count(row.get("passes")), row.get("seconds")
    asked_passes, asked_s = _count(params.get("passes")), params.get("seconds")
    if asked_passes:
        if passes is not None and passes < asked_passes:
            out.append(f"{passes} passes of the {asked_passes} asked")
    elif isinstance(asked_s, (int, float)) and not isinstance(asked_s, bool):
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not passes:
            out.append(f"no time recorded for its passes ({seconds!r}): the {asked_s:g} s asked cannot be told spent")
        elif seconds * (passes + 1) / passes < MEMTEST_TIME_FRACTION * asked_s:
            out.append(f"ran {passes} pass(es) in {seconds:.3g} s of the {asked_s:g} s asked: the test stopped "
                       "early")  # fmt: skip
    else:
        out.append(f"the document does not say what was asked (parameters.seconds {asked_s!r}, passes "
                   f"{params.get('passes')!r})")  # fmt: skip
    return out


def _gflops(metric: dict[str, Any]) -> float | None:
    """A rate metric in GFLOP/s, or None when its unit is not a FLOP rate or it has no value."""
    scale = {"TFLOP/s": 1000.0, "GFLOP/s": 1.0}.get(metric.get("unit", ""))
    value = metric.get("value")
    if scale is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) * scale


def combine(
    doc: dict[str, Any], power_doc: dict[str, Any] | None, efficiency_metric: str
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """A check's metrics and waived metrics with the power sampler's joined (energy_j, power_avg_w,
    power_peak_w) and ``gflops_per_watt`` (``efficiency_metric`` over the average power), and the problems of
    the sampler's document. ``power_doc`` None: the check is not sampled."""
    metrics, waived = dict(doc.get("metrics") or {}), dict(doc.get("waived") or {})
    problems: list[str] = []
    if power_doc is None:
        return metrics, waived, problems
    problems += [f"power sampler: {e}" for e in power_doc.get("errors") or []]
    pver = power_doc.get("verification") or {}
    if not pver.get("passed", False):
        problems.append("power sampler: " + ("; ".join((pver.get("failures") or [])[:5]) or "verification failed"))
    metrics.update(power_doc.get("metrics") or {})
    waived.update(power_doc.get("waived") or {})
    if efficiency_metric:
        rate = metrics.get(efficiency_metric)
        watts = (metrics.get("power_avg_w") or {}).get("value")
        gflops = _gflops(rate) if rate else None
        if rate is None:
            why = waived.get(efficiency_metric, "not reported")
            waived["gflops_per_watt"] = f"efficiency_metric {efficiency_metric!r}: {why}"
        elif gflops is None:
            problems.append(f"efficiency_metric {efficiency_metric!r} is in {rate.get('unit')!r}, not a FLOP rate")
        elif not watts:
            waived["gflops_per_watt"] = "no average power: " + waived.get("power_avg_w", "not measured")
        else:
            metrics["gflops_per_watt"] = {
                "value": gflops / watts,
                "unit": "GFLOP/s/W",
                "better": "higher",
                "description": f"{efficiency_metric} in GFLOP/s per watt of average GPU power over the run",
            }
    return metrics, waived, problems
