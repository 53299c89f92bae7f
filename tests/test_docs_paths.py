"""Every path that README.md and docs/ name inside the repository exists (issue 25: a README that named
`inventories/site`, which is not shipped). A path is a word that starts with one of the repository's top-level
directories; placeholders (`<node>`, `*`, `{...}`) and paths under results/ or a run directory are not paths of
the repository."""

import re

import pytest
from conftest import ROOT

TOP = ("docs", "scripts", "src", "roles", "playbooks", "reframe_checks", "reference_values", "inventories", "tests",
       "prometheus", "requirements", ".ci")  # fmt: skip
TOPS = "|".join(re.escape(t) for t in TOP)
PATH = re.compile(rf"(?<![\w./-])((?:{TOPS})/[\w./+-]*)")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "checks").glob("*.md"))]


def named_paths(text: str) -> set[str]:
    out = set()
    for m in PATH.finditer(text):
        path = m.group(1).rstrip(".,:;)")
        after = text[m.end(1):m.end(1) + 1]
        if after in ("<", "*", "{", "$") or path.endswith("/<"):
            continue  # a placeholder: reference_values/<node_type>.yaml, docs/evidence/*
        out.add(path)
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_document_names_exists(doc):
    missing = sorted(p for p in named_paths(doc.read_text()) if not (ROOT / p).exists())
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_readme_is_a_first_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for doc in ("docs/verdicts.md", "docs/install.md", "docs/running.md", "docs/exit-status.md"):
        assert doc in text, doc
    for phrase in ("lent here", "the mission", "this session", "inventories/site"):
        assert phrase not in text, phrase


def test_a_missing_path_is_caught():
    assert named_paths("see docs/nope.md, and reference_values/<node_type>.yaml") == {"docs/nope.md"}
