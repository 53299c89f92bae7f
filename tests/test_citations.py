"""Shipped text cites a source by its authors and year, never by the number of its file among the project's
source documents ("seed 000"): verdict reasons, reference notes, help, reports and docs are read by operators and
vendors who never saw those numbers. And every link into docs/bibliography.md lands on an entry there.

Shipped text: every tracked file under the directories below (docs/evidence/ excluded: recorded outputs and past
READMEs are history, as are tests/fixtures/, which this test does not read)."""

import re
import shutil
import subprocess

import pytest
from conftest import ROOT

SHIPPED = ("src", "reframe_checks", "reference_values", "roles", "playbooks", "prometheus", "scripts", "docs",
           "inventories", "README.md", "Makefile", "ansible.cfg")  # fmt: skip
HISTORY = ("docs/evidence/",)
FILE_NUMBER = re.compile(r"seeds? ?0[0-9]", re.IGNORECASE)
BIBLIOGRAPHY = ROOT / "docs" / "bibliography.md"
ANCHOR = re.compile(r'<a id="([\w.-]+)"></a>')
LINK = re.compile(r"\]\((?:[\w./]*/)?(bibliography\.md)?#([\w.-]+)\)")


def shipped_files() -> list[str]:
    """The tracked files of SHIPPED, outside HISTORY (where git or the repository's metadata is missing: every
    file there but Python's caches)."""
    if shutil.which("git") and (ROOT / ".git").exists():
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--", *SHIPPED], capture_output=True,
                             check=True).stdout.decode()  # fmt: skip
        paths = [p for p in out.split("\0") if p]
    else:
        paths = []
        for name in SHIPPED:
            top = ROOT / name
            found = [top] if top.is_file() else sorted(top.rglob("*"))
            paths += [str(p.relative_to(ROOT)) for p in found if p.is_file() and "__pycache__" not in p.parts]
    return sorted(p for p in paths if not p.startswith(HISTORY))


def file_numbers(text: str) -> list[tuple[int, str]]:
    """(line, line text) of every citation by file number."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if FILE_NUMBER.search(line)]


def test_no_shipped_text_cites_a_source_by_its_file_number():
    files = shipped_files()
    assert "README.md" in files and "docs/bibliography.md" in files and "src/gpuaccept/judge/verdict.py" in files
    found = []
    for rel in files:
        path = ROOT / rel
        if not path.is_file():  # deleted in the work tree, still in the index
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        found += [f"{rel}:{n}: {line}" for n, line in file_numbers(text)]
    assert not found, ("cite the source by authors and year, as docs/bibliography.md names it (in docs, with a link "
                       "to its entry), not by file number:\n" + "\n".join(found))  # fmt: skip


@pytest.mark.parametrize("text", ["Seed 000's ratio", "as seed 003 does", "(seed 002)", "seeds 000 and 002",
                                  "seed002", "SEED 004"])  # fmt: skip
def test_a_file_number_is_caught(text):
    assert file_numbers(text)


@pytest.mark.parametrize("text", ["--seed 1", "apoa1.namd's seed 74269", "regenerated from the seed",
                                  "mix64(seed ^ 0xA)", "Allada et al. (2009)"])  # fmt: skip
def test_a_random_seed_is_not_a_file_number(text):
    assert not file_numbers(text)


def bibliography_anchors() -> set[str]:
    return set(ANCHOR.findall(BIBLIOGRAPHY.read_text()))


def test_the_bibliography_has_the_sources_the_checks_follow():
    anchors = bibliography_anchors()
    for anchor in ("allada-2009", "remote-offload-thesis", "van-werkhoven-2014", "kozin-2010", "agarwal-2014"):
        assert anchor in anchors, anchor
    ids = ANCHOR.findall(BIBLIOGRAPHY.read_text())
    assert len(ids) == len(set(ids)), "an anchor of docs/bibliography.md is defined twice"


DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "evidence" not in p.parts)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_into_the_bibliography_lands_on_an_entry(doc):
    anchors = bibliography_anchors()
    text = doc.read_text()
    links = [anchor for target, anchor in LINK.findall(text) if target or doc == BIBLIOGRAPHY]
    missing = sorted({a for a in links if a not in anchors})
    assert not missing, (f"{doc.relative_to(ROOT)} links to anchors that docs/bibliography.md does not define: "
                         f"{', '.join(missing)} (add the entry's <a id=...> or fix the link)")


def test_a_broken_link_is_caught():
    links = LINK.findall("see [X](../bibliography.md#nobody-1900) and [Y](bibliography.md#allada-2009)")
    assert [a for _, a in links] == ["nobody-1900", "allada-2009"]
    assert "nobody-1900" not in bibliography_anchors()


# How the project got its machines is no part of what it ships: no tracker numbers ("issue 15"), and machines named
# by what they are ("2 x H200 141 GB SXM, 32 vCPUs, VM"), never by the label they were lent under or the tool
# that lent them. (Reference files' own source ids, such as nvidia-h200-datasheet, are not labels.)
HISTORY_WORDS = re.compile(r"\bissues? #?\d+|\blent\b|device tool|nvidia-[ah]\d+(?:-x\d+)?(?![-\w])", re.IGNORECASE)


def history_words(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if HISTORY_WORDS.search(line)]


def test_no_shipped_text_speaks_of_issue_numbers_or_how_machines_were_lent():
    found = []
    for rel in shipped_files():
        path = ROOT / rel
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace")
            found += [f"{rel}:{n}: {line}" for n, line in history_words(text)]
    assert not found, ("say what is true of the project, not which issue changed it or how a machine was lent; "
                       "describe a machine by what it is (2 x H200 141 GB SXM, 32 vCPUs, VM):\n" + "\n".join(found))


@pytest.mark.parametrize("text", ["(issue 15)", "before issue 26 item 3", "Issues 4 and 5", "on the lent VMs",
                                  "device tool nvidia-h200-x2", "measured on nvidia-h100-x1", "nvidia-h200: NVIDIA"])
def test_a_history_word_is_caught(text):
    assert history_words(text)


@pytest.mark.parametrize("text", ["source: nvidia-h200-datasheet", "a silent error", "2 x H200 141 GB SXM, VM",
                                  "the issues the judge raises", "nvidia-smi -q"])  # fmt: skip
def test_a_plain_word_is_not_a_history_word(text):
    assert not history_words(text)
