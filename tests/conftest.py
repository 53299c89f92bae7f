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
