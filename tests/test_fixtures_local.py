"""The tests read their recorded inputs under tests/fixtures, each copy with a README naming where it came from
(issue 26 item 5): docs/evidence is history, not input, so a change there cannot change what a test checks.
Prose may still name the evidence a fixture was copied from; no code of a test module may reach into it."""

import ast
import hashlib
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

TESTS = ROOT / "tests"
# Modules whose code names docs/evidence without reading it, and why.
ALLOWED = {
    "test_baseline_proposals.py": "`--evidence docs/evidence` is the label a proposal records, not a path read",
    "test_references.py": "a synthetic reference file's `evidence:` label, not a path read",
    "test_md_references.py": "the shipped reference's reason text, which names its evidence, not a path read",
    "test_fixtures_local.py": "this guard: the strings it looks for",
    "test_citations.py": "docs/evidence is what the citation guard leaves out (recorded history), not a path read",
    "test_docs_figures.py": "the README's test figures against the evidence log the README cites: the docs' claim",
    "test_report_recorded.py": "what the evidence reports the READMEs cite say on page one: the docs' claim",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (prose, which may name the evidence)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def evidence_references(path: Path) -> list[str]:
    """Where the code of `path` names docs/evidence: a string (not a docstring) holding it, or a path joined
    from "docs" and "evidence" (ROOT / "docs" / "evidence"); as `file:line: text`."""
    text = path.read_text()
    tree = ast.parse(text, filename=str(path))
    prose = _docstrings(tree)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    out = []
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            hit = "docs/evidence" in node.value
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            right = node.right
            hit = isinstance(right, ast.Constant) and right.value == "evidence"
        if hit:
            out.append(f"{where}:{node.lineno}: {ast.get_source_segment(text, node)}")
    return out


MODULES = sorted(p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_module_reads_the_evidence(path):
    found = evidence_references(path)
    if path.name in ALLOWED:
        return
    assert not found, "read the copy under tests/fixtures instead (tests/fixtures/README.md):\n" + "\n".join(found)


def test_the_guard_finds_what_it_looks_for(tmp_path):
    bad = tmp_path / "test_probe.py"
    bad.write_text('"""Reads docs/evidence (prose: allowed)."""\n'
                   'A = ROOT / "docs" / "evidence"\n'
                   'B = "docs/evidence/x"\n')
    assert sorted(int(f.split(":")[1]) for f in evidence_references(bad)) == [2, 3]


def test_every_allowed_module_still_needs_its_place():
    for name in ALLOWED:
        assert evidence_references(TESTS / name), f"{name} no longer names docs/evidence: drop it from ALLOWED"


SHA_LINE = re.compile(r"^([0-9a-f]{64})  (\S+)$", re.M)


def fixture_readmes() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("README.md") if SHA_LINE.search(p.read_text()))


@pytest.mark.parametrize("readme", fixture_readmes(), ids=lambda p: str(p.parent.relative_to(FIXTURES)))
def test_each_fixture_is_the_copy_its_readme_describes(readme):
    """Each file a fixture README lists has the sha256 it states: the copies are byte for byte, and stay so."""
    for digest, name in SHA_LINE.findall(readme.read_text()):
        path = readme.parent / name
        assert path.is_file(), f"{readme.relative_to(ROOT)} lists {name}, which is not there"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{path.relative_to(ROOT)} changed"
