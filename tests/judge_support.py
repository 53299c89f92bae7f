"""Helpers for the judge's tests: the references a recorded verdict was judged against, rebuilt from its rows."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import EVIDENCE, REFERENCE_DIR

from gpuaccept.judge import verdict

DERIVED = verdict.DERIVED_METRICS


def recorded_runs() -> list[Path]:
    """Every recorded run directory under docs/evidence that has a verdict and ReFrame's report."""
    return sorted(p.parent for p in EVIDENCE.rglob("verdict.json") if (p.parent / "reframe-report.json").exists())


def references_of_verdict(recorded: dict, out_dir: Path) -> Path:
    """A reference directory holding the node type exactly as the recorded verdict shows it was judged: each
    metric row's reference value and bounds (informational rows informational), today's match, health and
    sources otherwise."""
    name = recorded["node_type"]
    doc = yaml.safe_load((REFERENCE_DIR / f"{name}.yaml").read_text())
    source = next(iter(doc["sources"]))
    checks: dict = {}
    for r in recorded["rows"]:
        if not r["metric"] or r["check"] in ("node", "references", "inputs", "suite") or r["metric"] in DERIVED:
            continue
        if r["status"] == "info" and r["reason"].startswith("informational: "):
            entry = {"unit": r["unit"], "source": source, "informational": r["reason"].removeprefix("informational: ")}
            if r["reference"] is not None:
                entry["value"] = r["reference"]
        elif r["reference"] is None or (r["lower_bound"] is None and r["upper_bound"] is None):
            continue
        else:
            ref = r["reference"]
            entry = {"value": ref, "unit": r["unit"], "source": source}
            if r["lower_bound"] is not None:
                entry["lower"] = round(1 - r["lower_bound"] / ref, 12)
            if r["upper_bound"] is not None:
                entry["upper"] = round(r["upper_bound"] / ref - 1, 12)
        checks.setdefault(r["check"], {})[r["metric"]] = entry
    for r in recorded["rows"]:  # checks judged with no metric reference of their own (health rules only, say)
        if r["metric"] is None and r["check"] in doc["checks"] and r["check"] not in checks and r["expected"]:
            checks[r["check"]] = doc["checks"][r["check"]]
    doc["checks"] = checks
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return out_dir


def rejudge(run: Path, reference_dir: Path) -> tuple[dict, verdict.Verdict]:
    recorded = json.loads((run / "verdict.json").read_text())
    facts_file = run / "node-facts.json"
    facts = json.loads(facts_file.read_text()) if facts_file.exists() else recorded.get("facts") or {}
    report = verdict.load_report(run / "reframe-report.json")
    return recorded, verdict.build(report, facts, reference_dir, recorded["node_type"], recorded["suite"], run_dir=run)
