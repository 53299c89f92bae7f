"""Reference values from repeated runs: the median per metric and a tolerance from the spread.

Rule (docs/reference-values.md): over N runs, value = median; the tolerance on the side that matters (below
for 'higher is better', above for 'lower is better') is 1.5 x the largest relative deviation of any run from
the median, never below the unit's floor (noise cannot make it absurdly tight) and never above the cap (a
degraded node, e.g. DGEMM halved by a foreign process, must still fail). Metrics waived on every run become
informational entries, so the file stays complete.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import yaml

from .checks import CHECKS
from .references import SCHEMA

FLOORS = {"GB/s": 0.05, "TFLOP/s": 0.05, "GFLOP/s": 0.10, "us": 0.25, "ratio": 0.10}
CAP = 0.30
SPREAD_FACTOR = 1.5


def find_documents(run_dirs: list[Path], check: str) -> list[dict[str, Any]]:
    """Every benchmark document of ``check`` under the run directories (ReFrame's output trees)."""
    name = CHECKS[check].result_file
    docs: dict[tuple, dict[str, Any]] = {}
    for run_dir in run_dirs:
        # Passed checks keep their document in ReFrame's output tree, failed ones in the stage tree; with
        # --keep-stage-files both hold a copy, so documents are told apart by when and where they ran.
        for path in sorted(Path(run_dir).rglob(name)):
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as err:
                raise ValueError(f"{path}: not a benchmark JSON document: {err}") from err
            key = (doc.get("tool"), doc.get("started_utc"), (doc.get("host") or {}).get("hostname"),
                   doc.get("elapsed_s"))
            docs.setdefault(key, doc)
    return list(docs.values())


def waived_unit(metric: str) -> str:
    """A waived metric carries no unit in the benchmark document: its name says it."""
    for suffix, unit in (("_tflops_min", "TFLOP/s"), ("_gflops", "GFLOP/s"), ("_max", "us"),
                         ("_ns_per_day_per_kw", "ns/day/kW"), ("_ns_per_day", "ns/day"), ("_s_per_step", "s/step"),
                         ("_wall_s", "s"), ("_power_avg_w", "W"), ("_energy_kj", "kJ")):
        if metric.endswith(suffix):
            return unit
    return "GB/s" if metric.startswith(("p2p_", "h2d_", "d2h_", "d2d_", "bidir_")) else "ratio"


def tolerance(values: list[float], unit: str) -> float:
    med = statistics.median(values)
    worst = max(abs(v - med) / med for v in values) if med else 0.0
    return round(min(CAP, max(FLOORS.get(unit, 0.05), SPREAD_FACTOR * worst)), 3)


def derive(docs_by_check: dict[str, list[dict[str, Any]]], source_id: str) -> tuple[dict, dict]:
    """(checks section, per-metric statistics) from benchmark documents grouped by check."""
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
            measured = [d["metrics"][metric] for d in docs if metric in (d.get("metrics") or {})]
            values = [float(m["value"]) for m in measured if isinstance(m.get("value"), (int, float))]
            if not values:
                why = next(d["waived"][metric] for d in docs if metric in (d.get("waived") or {}))
                unit = waived_unit(metric)
                entries[metric] = {
                    "informational": f"waived on the measured machine: {why}",
                    "unit": unit,
                    "source": source_id,
                }
                continue
            unit = measured[0]["unit"]
            better = measured[0].get("better", "higher")
            med = statistics.median(values)
            tol = tolerance(values, unit)
            entry: dict[str, Any] = {"value": float(f"{med:.6g}"), "unit": unit}
            entry["lower" if better == "higher" else "upper"] = tol
            entry["source"] = source_id
            if len(values) < len(docs):
                entry["note"] = f"measured in {len(values)} of {len(docs)} runs"
            entries[metric] = entry
            stats[f"{check}.{metric}"] = {
                "runs": len(values),
                "median": med,
                "min": min(values),
                "max": max(values),
                "tolerance": tol,
            }
        checks[check] = entries
    return checks, stats


def proposal(
    node_type: str,
    description: str,
    match: dict[str, Any],
    source_id: str,
    source: dict[str, Any],
    checks: dict[str, Any],
) -> str:
    doc = {
        "schema": SCHEMA,
        "node_type": node_type,
        "description": description,
        "match": match,
        "sources": {source_id: source},
        "checks": checks,
    }
    return yaml.safe_dump(doc, sort_keys=False, width=110)
