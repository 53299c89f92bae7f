"""Shared paths for the tests. Outputs recorded on the GPU machines are the evidence itself (docs/evidence),
not copies of it."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIR = ROOT / "reference_values"

# Outputs recorded on the GPU machines (docs/evidence/README.md says how each was made).
EVIDENCE = ROOT / "docs" / "evidence"
H100_SMOKE = EVIDENCE / "2026-11-22-h100-smoke"
H100_RUNS = EVIDENCE / "2026-11-22-h100-accept" / "results"
H100_COMMISSION = H100_RUNS / "20261122T052346Z-commission"
H100_DEGRADED = EVIDENCE / "2026-11-22-h100-degraded" / "20261122T053501Z-commission"
H200_RUNS = EVIDENCE / "2026-11-22-h200" / "runs"
H200X2 = EVIDENCE / "2026-11-22-h200x2"


def references_as_recorded(tmp_path: Path) -> Path:
    """A copy of reference_values without the checks added after the recorded H100/H200 runs (the HPL check,
    'hplstyle'), for tests that judge those runs as a whole; the HPL check's own runs are tested in test_hpl.py."""
    out = tmp_path / "references-as-recorded"
    out.mkdir()
    for path in REFERENCE_DIR.glob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        doc.get("checks", {}).pop("hplstyle", None)
        used = {m.get("source") for c in doc.get("checks", {}).values() for m in c.values()}
        doc["sources"] = {k: v for k, v in doc.get("sources", {}).items() if k in used}
        (out / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return out
