"""The docs' lists of checks and metrics are written from the checks' declarations (gpuaccept.judge.checkdoc)."""

import re

import pytest

from gpuaccept.checks import CHECKS
from gpuaccept.judge import checkdoc


def test_the_committed_docs_are_what_the_declarations_give():
    assert checkdoc.stale() == [], "run: PYTHONPATH=src python -m gpuaccept.judge.checkdoc"


def test_every_check_and_every_metric_pattern_is_listed():
    checks = "\n".join(checkdoc.checks_table())
    metrics = "\n".join(checkdoc.metrics_table())
    for key, check in CHECKS.items():
        assert f"| `{key}` |" in checks
        assert f"docs/checks/{check.doc}" in checks
        for metric in check.metrics:
            assert f"| `{key}` | `{metric.pattern}` | {metric.unit} |" in metrics


def test_rewrite_replaces_only_the_block():
    text = "before\n<!-- BEGIN checks: generated -->\nold row\n<!-- END checks -->\nafter\n"
    assert checkdoc.rewrite(text, "checks", ["| a |", "| b |"]) == (
        "before\n<!-- BEGIN checks: generated -->\n| a |\n| b |\n<!-- END checks -->\nafter\n"
    )


def test_a_file_without_its_markers_is_an_error_that_names_it():
    with pytest.raises(checkdoc.BlockError, match=re.escape("docs/x.md: no '<!-- BEGIN checks")):
        checkdoc.rewrite("no markers\n", "checks", [], where="docs/x.md")


def test_check_mode_reports_a_stale_file_and_writes_nothing(tmp_path):
    for block, (name, _render) in checkdoc.BLOCKS.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<!-- BEGIN {block}: x -->\nstale\n<!-- END {block} -->\n")
    assert len(checkdoc.stale(tmp_path)) == len(checkdoc.BLOCKS)
    assert "stale" in (tmp_path / "docs/running.md").read_text()
    checkdoc.stale(tmp_path, write=True)
    assert checkdoc.stale(tmp_path) == []
