"""Shared paths for the tests. Fixtures recorded on the GPU machine live in tests/fixtures/ (see its README)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
REFERENCE_DIR = ROOT / "reference_values"


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES

# Outputs recorded on the GPU machines (docs/evidence/README.md says how each was made).
EVIDENCE = ROOT / "docs" / "evidence"
H100_SMOKE = EVIDENCE / "2026-11-22-h100-smoke"
H100_RUNS = EVIDENCE / "2026-11-22-h100-accept" / "results"
H100_COMMISSION = H100_RUNS / "20261122T052346Z-commission"
H100_DEGRADED = EVIDENCE / "2026-11-22-h100-degraded" / "20261122T053501Z-commission"
H200_RUNS = EVIDENCE / "2026-11-22-h200" / "runs"
H200X2 = EVIDENCE / "2026-11-22-h200x2"
