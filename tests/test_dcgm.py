"""DCGM's diagnostic (docs/checks/dcgm.md): ``dcgmi diag -j`` read, folded into a document, judged.

No real ``dcgmi diag -j`` output exists in NVIDIA's DCGM repository (v4.6.0, commit 72fa3fe): it holds the
output's JSON schema (testing/python3/dcgm_diag_schema.json), the code that writes it (dcgmi/Diag.cpp) and one
C++ test string in the older layout that it marks unused. Every output below is therefore BUILT IN THIS TEST, in
the layout those files give: DCGM 4 (``"DCGM Diagnostic"``: results per ``entity_group``/``entity_id``, a
``test_summary`` per test, ``entity_groups``, ``metadata``) and DCGM 3 (``"DCGM GPU Diagnostic"``, results per
``gpu_ids``). The error codes and message texts are DCGM's own (dcgmlib/dcgm_errors.h: DCGM_FR_FAULTY_MEMORY 52,
"Found %lld faulty memory elements on GPU %u"; DCGM_FR_TEST_SKIPPED 117, "Test %s was skipped."), the values
(GPU serials, versions) made up. Real outputs, captured by other public projects, are tested in
tests/test_dcgm_recorded.py; tests/fixtures/dcgm/README.md says how to record one on our own nodes.
"""

from __future__ import annotations

import fnmatch
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from rfm_support import run_reframe

from gpuaccept import checks, rfmconfig
from gpuaccept.judge import dcgm_rules, verdict
from gpuaccept.probe import dcgm

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]


def gpu_result(gpu, status, warnings=()):
    entry = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu, "status": status}
    if warnings:
        entry["warnings"] = list(warnings)
    return entry


FAULTY = {"warning": "Found 2 faulty memory elements on GPU 1", "error_id": 52, "error_category": 10,
          "error_severity": 2}  # fmt: skip


def dcgm4(memory_on_1="Pass"):
    """A DCGM 4 level-2 output on two GPUs, built here (see the module): every test passes but PCIe, skipped on
    both, and the memory test on GPU 1 as asked."""
    memory = [gpu_result(0, "Pass"), gpu_result(1, memory_on_1, [FAULTY] if memory_on_1 != "Pass" else [])]
    skipped = {"warning": "Test pcie was skipped.", "error_id": 117, "error_category": 16, "error_severity": 3}
    return {
        "DCGM Diagnostic": {
            "test_categories": [
                {"category": "Deployment", "tests": [
                    {"name": "software", "results": [gpu_result(0, "Pass"), gpu_result(1, "Pass")],
                     "test_summary": {"status": "Pass"}}]},
                {"category": "Hardware", "tests": [
                    {"name": "memory", "results": memory,
                     "test_summary": {"status": "Pass" if memory_on_1 == "Pass" else "Fail"}}]},
                {"category": "Integration", "tests": [
                    {"name": "pcie", "results": [gpu_result(0, "Skip", [skipped]), gpu_result(1, "Skip", [skipped])],
                     "test_summary": {"status": "Skip"}}]},
            ]
        },
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [
            {"entity_id": 0, "device_id": "2335", "serial_num": "0000000000000"},
            {"entity_id": 1, "device_id": "2335", "serial_num": "0000000000001"}]}],
        "metadata": {"version": "4.x (built in the test)", "Driver Version Detected": "580.159.04"},
    }  # fmt: skip


def test_a_dcgm4_output_gives_one_record_per_test_and_gpu():
    diag = dcgm.parse(json.dumps(dcgm4("Fail")))
    assert (diag.schema, diag.driver, diag.runtime_error) == ("DCGM Diagnostic", "580.159.04", None)
    got = [(r["category"], r["test_key"], r["gpu"], r["status"]) for r in diag.results]
    assert got == [("Deployment", "software", 0, "pass"), ("Deployment", "software", 1, "pass"),
                   ("Hardware", "memory", 0, "pass"), ("Hardware", "memory", 1, "fail"),
                   ("Integration", "pcie", 0, "skip"), ("Integration", "pcie", 1, "skip")]  # fmt: skip
    assert diag.results[3]["messages"] == [{"text": "Found 2 faulty memory elements on GPU 1", "error_id": 52,
                                            "error_category": 10, "error_severity": 2}]  # fmt: skip
    assert [g["index"] for g in diag.gpus] == [0, 1]


def test_the_document_counts_each_status_and_waives_the_skipped_tests():
    doc = dcgm.build_document(dcgm.parse(json.dumps(dcgm4("Fail"))), 2, ["gpuaccept"], "2026-11-27T00:00:00Z", 1.0)
    assert {k: v["value"] for k, v in doc["metrics"].items()} == {
        "dcgm_passed": 3, "dcgm_failed": 1, "dcgm_warned": 0, "dcgm_skipped": 2}
    assert doc["waived"] == {"dcgm_pcie_gpu0": "skipped by DCGM diag level 2: Test pcie was skipped.",
                             "dcgm_pcie_gpu1": "skipped by DCGM diag level 2: Test pcie was skipped."}  # fmt: skip
    assert [(g["gpu"], g["metrics"]["dcgm_failed"]["value"]) for g in doc["gpu_metrics"]] == [(0, 0), (1, 1)]
    assert len(doc["devices"]) == 2 and doc["verification"]["passed"] and doc["errors"] == []
    # Every metric and waived row is one the check declares (the metric table knows it).
    names = [*doc["metrics"], *doc["waived"]]
    assert all(any(fnmatch.fnmatch(n, m.pattern) for m in checks.CHECKS["dcgm_diag"].metrics) for n in names)


def test_the_judge_fails_each_failed_test_naming_the_test_gpu_and_dcgms_message():
    doc = dcgm.build_document(dcgm.parse(json.dumps(dcgm4("Fail"))), 3, ["gpuaccept"], "t", 1.0)
    (p,) = dcgm_rules.problems(doc, Path("dcgm_diag.json"))
    assert p == ("dcgm_diag.json: DCGM diag level 3: memory (Hardware) failed on GPU 1: Found 2 faulty memory "
                 "elements on GPU 1 (DCGM error 52); run dcgmi diag -r 3 -v on the node for the details")
    ok = dcgm.build_document(dcgm.parse(json.dumps(dcgm4())), 3, ["gpuaccept"], "t", 1.0)
    assert dcgm_rules.problems(ok, Path("dcgm_diag.json")) == []


def test_a_warning_fails_too_and_an_unknown_status_is_never_a_pass():
    out = dcgm4("Warn")  # DCGM 3's JSON, and DCGM's text table, say Warn
    doc = dcgm.build_document(dcgm.parse(json.dumps(out)), 2, ["gpuaccept"], "t", 1.0)
    (p,) = dcgm_rules.problems(doc, Path("d.json"))
    assert "memory (Hardware) warned (a warning fails" in p and doc["metrics"]["dcgm_warned"]["value"] == 1
    out["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"][0]["status"] = "Maybe"
    (p, _) = dcgm_rules.problems(dcgm.build_document(dcgm.parse(json.dumps(out)), 2, ["g"], "t", 1.0), Path("d"))
    assert "software (Deployment) has a status gpuaccept does not know ('Maybe') on GPU 0" in p


def test_a_summary_that_failed_without_a_failing_gpu_is_its_own_record():
    out = dcgm4()
    test = out["DCGM Diagnostic"]["test_categories"][1]["tests"][0]
    test["test_summary"] = {"status": "Fail", "warnings": [{"warning": "the test could not start", "error_id": 1,
                                                            "error_category": 0, "error_severity": 1}]}  # fmt: skip
    diag = dcgm.parse(json.dumps(out))
    (extra,) = [r for r in diag.results if r["entity_group"] is None]
    assert extra["status"] == "fail" and extra["gpu"] is None
    assert extra["messages"][0]["text"] == "the test could not start"
    (p,) = dcgm_rules.problems(dcgm.build_document(diag, 2, ["g"], "t", 1.0), Path("d"))
    assert "memory (Hardware) failed on the whole test: the test could not start (DCGM error 1)" in p


def test_a_dcgm3_output_per_gpu_ids():
    # DCGM 2/3's dcgmi writes a result's warning as one string (dcgmi/Diag.cpp, HelperJsonAddResult), not a list.
    out = {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"gpu_ids": "0,1", "status": "Pass"}]}]},
        {"category": "Stress", "tests": [{"name": "Targeted Stress", "results": [
            {"gpu_id": "0", "status": "Pass"},
            {"gpu_id": "1", "status": "Fail", "warnings": "GPU 1: below the expected rate"}]}]}],
        "version": "3.x (built in the test)"}}  # fmt: skip
    diag = dcgm.parse("Successfully ran diagnostic for group.\n" + json.dumps(out))
    assert [(r["test_key"], r["gpu"], r["status"]) for r in diag.results] == [
        ("denylist", 0, "pass"), ("denylist", 1, "pass"), ("targeted_stress", 0, "pass"),
        ("targeted_stress", 1, "fail")]  # fmt: skip
    assert [g["index"] for g in diag.gpus] == [0, 1] and diag.version == "3.x (built in the test)"
    (p,) = dcgm_rules.problems(dcgm.build_document(diag, 3, ["g"], "t", 1.0), Path("d"))
    assert "Targeted Stress (Stress) failed on GPU 1: GPU 1: below the expected rate" in p


def test_a_runtime_error_or_output_that_is_not_the_diagnostic_is_an_error():
    out = {"DCGM Diagnostic": {"version": "4.x", "runtime_error": "Error: the diagnostic could not start"}}
    doc = dcgm.build_document(dcgm.parse(json.dumps(out)), 2, ["g"], "t", 1.0)
    assert doc["errors"] == ["DCGM: Error: the diagnostic could not start"] and not doc["verification"]["passed"]
    with pytest.raises(dcgm.DcgmOutputError, match="no JSON object in dcgmi's output: Usage: dcgmi"):
        dcgm.parse("Usage: dcgmi diag ...")
    with pytest.raises(dcgm.DcgmOutputError, match="no 'DCGM Diagnostic' object"):
        dcgm.parse('{"something": 1}')


# ------------------------------------------------------------------------------------------------
# The command, with a stand-in dcgmi the test writes.

STAND_IN = """#!/bin/sh
# Stand-in for dcgmi (tests/test_dcgm.py): prints what the test gives, exits as asked.
cat {out}
exit {rc}
"""


def stand_in(tmp_path: Path, text: str, rc: int = 0) -> Path:
    out = tmp_path / "dcgmi-output.txt"
    out.write_text(text)
    tool = tmp_path / "dcgmi"
    tool.write_text(STAND_IN.format(out=out, rc=rc))
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


def dcgm_diag(tmp_path: Path, *args: str, path: str | None = None):
    env = {**os.environ, "PATH": path} if path is not None else None
    out = tmp_path / "dcgm_diag.json"
    proc = subprocess.run([*GPUACCEPT, "dcgm-diag", "--output", str(out), *args],
                          capture_output=True, text=True, check=False, env=env)  # fmt: skip
    return proc, json.loads(out.read_text())


def test_the_command_writes_the_document_and_prints_each_failure(tmp_path):
    # DCGM exits non-zero when a test failed: the document is written all the same, and the judge decides.
    tool = stand_in(tmp_path, json.dumps(dcgm4("Fail"), indent=4), rc=226)
    proc, doc = dcgm_diag(tmp_path, "--level", "3", "--dcgmi", str(tool))
    assert proc.returncode == 0, proc.stderr
    assert "FAIL: memory on GPU 1: Found 2 faulty memory elements on GPU 1" in proc.stdout
    assert doc["parameters"] == {"level": 3, "command": [str(tool), "diag", "-r", "3", "-j"]}
    assert doc["metrics"]["dcgm_failed"]["value"] == 1 and "not_run" not in doc


def test_without_dcgmi_the_check_is_not_run_with_the_fix(tmp_path):
    proc, doc = dcgm_diag(tmp_path, path=str(tmp_path / "empty"))
    assert proc.returncode == 0
    assert doc["not_run"] == {"reason": "dcgmi not installed (not on PATH)", "fix": dcgm.FIX_INSTALL}
    assert "install datacenter-gpu-manager" in doc["not_run"]["fix"] and "nv-hostengine" in doc["not_run"]["fix"]
    assert doc["metrics"] == {} and "NOT RUN: dcgmi not installed" in proc.stdout


def test_without_nv_hostengine_the_check_is_not_run_with_dcgmis_words(tmp_path):
    # What dcgmi/Command.cpp prints when it cannot connect (errorString(DCGM_ST_CONNECTION_NOT_VALID)).
    tool = stand_in(tmp_path, "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n",
                    rc=1)  # fmt: skip
    _, doc = dcgm_diag(tmp_path, "--dcgmi", str(tool))
    assert doc["not_run"]["reason"].startswith("nv-hostengine cannot be reached: dcgmi said 'Error: Unable to connect")
    assert doc["not_run"]["fix"] == dcgm.FIX_HOSTENGINE


def test_levels_per_suite_reach_reframe_through_the_suite_options():
    from gpuaccept import run  # noqa: PLC0415

    for suite, level in dcgm.SUITE_LEVELS.items():
        assert ["-S", f"DcgmDiag.level={level}"] == run.SUITE_OPTIONS[suite][-2:]
    assert dcgm.SUITE_LEVELS == {"commission": 3, "evaluation": 2, "burnin": 3}
    assert set(checks.CHECKS["dcgm_diag"].suites) >= {"commission", "evaluation"}
    assert checks.CHECKS["dcgm_diag"].optional


# ------------------------------------------------------------------------------------------------
# Through ReFrame and the judge: a partition with one GPU (synthetic) and a node type that reports the check.

REF = """\
schema: gpuaccept.references/1
node_type: ci_dcgm
description: CI host with one synthetic GPU and a stand-in dcgmi (synthetic test references)
match: {gpu_model: NVIDIA Test GPU, gpu_count: 1}
sources:
  synthetic: {kind: synthetic, date: 2026-11-27, reference: "tests/test_dcgm.py: plumbing test"}
checks:
  dcgm_diag:
    dcgm_passed: {informational: plumbing test, unit: count, source: synthetic}
    dcgm_failed: {informational: plumbing test, unit: count, source: synthetic}
    dcgm_warned: {informational: plumbing test, unit: count, source: synthetic}
    dcgm_skipped: {informational: plumbing test, unit: count, source: synthetic}
"""
FACTS = {"hostname": "ci", "gpus": [{"index": 0, "name": "NVIDIA Test GPU"}], "driver_version": "580.159.04"}


def one_gpu(out: dict) -> dict:
    """The built DCGM 4 output cut to GPU 0 (the partition has one GPU), GPU 0's memory test failing."""
    for cat in out["DCGM Diagnostic"]["test_categories"]:
        for test in cat["tests"]:
            test["results"] = [r for r in test["results"] if r["entity_id"] == 0]
    out["DCGM Diagnostic"]["test_categories"][1]["tests"][0]["results"] = [gpu_result(0, "Fail", [FAULTY])]
    out["entity_groups"][0]["entities"] = out["entity_groups"][0]["entities"][:1]
    return out


def reframe_run(tmp_path: Path, tool: Path | None):
    refs = tmp_path / "refs"
    refs.mkdir(parents=True)
    (refs / "ci_dcgm.yaml").write_text(REF)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    extras = {"node_type": "ci_dcgm", "reference_dir": str(refs), "gpu_count": 1, "facts_file": "",
              "cuda_arch": "", "git_revision": "test", "blas": "none"}  # fmt: skip
    config = run_dir / "settings.py"
    config.write_text(rfmconfig.text("localhost", "ci_dcgm", 1, extras, "nvcc", "tests/test_dcgm.py"))
    dcgmi = str(tool) if tool else str(tmp_path / "no-dcgmi-here")
    proc = run_reframe(config, run_dir, "commission", "-n", "^DcgmDiag$", "-S", "DcgmDiag.level=1",
                       "-S", f"DcgmDiag.bench_opts=--dcgmi,{dcgmi}")  # fmt: skip
    report = verdict.load_report(run_dir / "reframe-report.json")
    v = verdict.build(report, FACTS, refs, "ci_dcgm", "commission", run_dir=run_dir)
    return proc, {(r.check, r.metric): r for r in v.rows}


def test_through_reframe_a_failed_test_fails_the_check_and_a_missing_dcgmi_rejects_nothing(tmp_path):
    tool = stand_in(tmp_path, json.dumps(one_gpu(dcgm4())), rc=226)
    proc, rows = reframe_run(tmp_path / "a", tool)
    row = rows[("dcgm_diag", None)]
    assert row.status == "fail" and row.expected, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "DCGM diag level 1: memory (Hardware) failed on GPU 0: Found 2 faulty memory elements" in row.reason
    assert rows[("dcgm_diag", "dcgm_failed")].value == 1
    assert rows[("dcgm_diag", "dcgm_pcie_gpu0")].status == "waived"
    # Where the site has no dcgmi: NOT RUN with the fix, and, reported only, it rejects nothing.
    _, rows = reframe_run(tmp_path / "b", None)
    row = rows[("dcgm_diag", None)]
    assert row.status == "not_run" and not row.expected
    assert "dcgmi not installed" in row.reason and "install datacenter-gpu-manager" in row.reason
