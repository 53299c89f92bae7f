"""The third-party inputs of the tests (tests/inputs.toml, tests/inputs.py): each pinned by sha256 and found under
$GPUACCEPT_INPUTS; an absent one skips its tests with a reason naming it and where to get it, a different file fails
them, and scripts/test.sh's summary counts the skips per input. Runs without the inputs: the folders here are made
in the test (empty, or holding a file of the wrong content)."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import inputs as third_party
import pytest
import yaml
from conftest import ROOT

from gpuaccept.probe import md_apoa1

MANIFEST = third_party.load()


def test_every_input_is_pinned_and_says_where_to_get_it():
    assert set(MANIFEST) == {"hpl-2.3", "apoa1", "namd3-apoa1-logs"}
    for inp in MANIFEST.values():
        assert inp.files and all(len(sha) == 64 for sha in inp.files.values()), inp.name
        assert "github.com/" in inp.get or "netlib" in inp.get, inp.name
    assert len(MANIFEST["namd3-apoa1-logs"].files) == 15


def test_the_pins_agree_with_the_code_that_checks_the_same_files():
    """The APOA1 archive the MD check and its role install is the one the tests read."""
    assert MANIFEST["apoa1"].files[""] == md_apoa1.APOA1_TARBALL_SHA256
    role = yaml.safe_load((ROOT / "roles" / "gpuaccept_md" / "vars" / "main.yml").read_text())
    assert role["_gpuaccept_md_apoa1_published_sha256"] == md_apoa1.APOA1_TARBALL_SHA256


def test_an_absent_input_is_a_skip_naming_it(tmp_path):
    third_party.check.cache_clear()
    path, absent = third_party.check("apoa1", tmp_path)
    assert path == tmp_path / "data" / "apoa1" / "apoa1.tar.gz"
    assert absent.startswith("third-party input apoa1 absent: ")
    assert str(path) in absent and "$GPUACCEPT_INPUTS" in absent and "ks.uiuc.edu" in absent


def test_another_file_fails_naming_both_digests(tmp_path):
    third_party.check.cache_clear()
    logs = tmp_path / "data" / "namd3-apoa1-logs"
    logs.mkdir(parents=True)
    for name in MANIFEST["namd3-apoa1-logs"].files:
        (logs / name).write_text("not NAMD's log\n")
    with pytest.raises(third_party.InputError, match=r"apoa1-1\.log: sha256 [0-9a-f]{64}, but tests/inputs.toml pins "
                       + MANIFEST["namd3-apoa1-logs"].files["apoa1-1.log"]):  # fmt: skip
        third_party.check("namd3-apoa1-logs", tmp_path)


def junit(path, skips):
    """A JUnit file as pytest writes it, made here: one test case per (module, skip message)."""
    suite = ET.Element("testsuite", tests=str(len(skips) + 1), skipped=str(len(skips)))
    ET.SubElement(suite, "testcase", classname="tests.test_other", name="test_runs")
    for n, (module, message) in enumerate(skips):
        case = ET.SubElement(suite, "testcase", classname=f"tests.{module}", name=f"test_{n}")
        ET.SubElement(case, "skipped", type="pytest.skip", message=message)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path)
    return path


def test_the_summary_names_each_absent_input_once_with_what_it_skipped(tmp_path):
    third_party.check.cache_clear()
    reason = {name: third_party.check(name, tmp_path)[1] for name in MANIFEST}
    xml = junit(tmp_path / "pytest.xml", [("test_namd", reason["namd3-apoa1-logs"])] * 3
                + [("test_reframe_md", reason["namd3-apoa1-logs"]), ("test_xplor_charmm", reason["apoa1"]),
                   ("test_slurm", "not root: slurmd runs jobs as root")])  # fmt: skip
    lines = third_party.summary(xml, tmp_path)
    assert len(lines) == 2
    assert lines[0].startswith("input apoa1 absent: 1 tests skipped (test_xplor_charmm.py 1); put it at ")
    assert lines[1].startswith("input namd3-apoa1-logs absent: 4 tests skipped (test_namd.py 3, test_reframe_md.py 1)")
    assert f"put it at {tmp_path / 'data' / 'namd3-apoa1-logs'}" in lines[1] and "kguerns/namd_hw" in lines[1]


def test_the_command_line_checks_every_input(tmp_path):
    env = {**os.environ, "GPUACCEPT_INPUTS": str(tmp_path)}
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "inputs.py"), "check"], capture_output=True, text=True,
                         env=env, check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert [line.split(":")[0] for line in res.stdout.splitlines()] == list(MANIFEST)
    assert res.stdout.count(": absent: third-party input ") == 3
