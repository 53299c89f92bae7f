"""Shared paths for the tests. Outputs recorded on the GPU machines are the evidence itself (docs/evidence),
not copies of it."""

from pathlib import Path

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
