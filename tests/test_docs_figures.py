"""The figures the README and docs/install.md give for `make test` (tests passed, failed and skipped, how long each
stage took) are those of a run recorded whole in the repository, the file they name: a number no run printed, or one
the suite has outgrown, cannot sit in them unnoticed. A doc that wants newer figures records a newer run and names
it."""

import re

import pytest
from conftest import ROOT

RECORD = "docs/evidence/2026-11-28-make-test/make-test-fresh-clone.log"
SECTIONS = {"README.md": ("## Test the project", "## Where to go next"), "docs/install.md": ("## `make test`", "\n## ")}
FIGURE = re.compile(r"\d+ (?:passed|failed|skipped)|\d+ tests skipped|\d+ min \d+ s|\b\d+(?:\.\d+)? s\b|"
                    r"about \d+ minutes|\d+-\d+ minutes")  # fmt: skip


def section(doc: str) -> str:
    text = (ROOT / doc).read_text()
    start, end = SECTIONS[doc]
    body = text[text.index(start) + len(start) :]
    return body[: body.index(end)] if end in body else body


def figures(text: str) -> list[str]:
    return FIGURE.findall(" ".join(text.split()))


@pytest.mark.parametrize("doc", sorted(SECTIONS))
def test_the_make_test_figures_are_the_recorded_runs(doc):
    text = section(doc)
    assert RECORD in " ".join(text.split()).replace("/ ", "/"), f"{doc} must name the run its figures come from"
    record = " ".join((ROOT / RECORD).read_text().split())
    stale = [f for f in figures(text) if f not in record]
    assert not stale, f"{doc}: figures no recorded run printed ({RECORD}): {stale}"


def test_a_stale_figure_is_caught():
    record = " ".join((ROOT / RECORD).read_text().split())
    assert [f for f in figures("pytest ok (675 s): 1620 passed, about 8 minutes, 48 tests skipped") if f not in record]
    assert figures("ok (526 s): 2146 passed, 0 failed, 1 skipped; make test: passed in 12 min 35 s") == [
        "526 s", "2146 passed", "0 failed", "1 skipped", "12 min 35 s"]
