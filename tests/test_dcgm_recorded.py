"""DCGM's diagnostic read from real ``dcgmi diag -j`` outputs (docs/checks/dcgm.md), captured on real GPUs by two
other public projects and copied byte for byte into tests/fixtures/recorded/dcgm-public (its README gives their
origin, licences and digests): glimmer-burnin's two GB10 (DGX Spark) captures, DCGM 4.5.2 and 4.2.3, and
VirtualClient's capture in DCGM's older layout. Each is read by the real parser, folded into the document, and
judged by the real rule; the values asserted are the files' own."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import RECORDED
from test_dcgm import dcgm_diag, reframe_run, stand_in

from gpuaccept.judge import dcgm_rules
from gpuaccept.probe import dcgm

PUBLIC = RECORDED / "dcgm-public"
GB10_452 = PUBLIC / "glimmer-burnin_gb10-level2-plugins-allowed.json"
GB10_423 = PUBLIC / "glimmer-burnin_gb10-level2-partial-skip.json"
OLD_LAYOUT = PUBLIC / "VirtualClient_DCGMIDiag_r3_results.json"
# DCGM's message for its error 29 (DCGM_FR_PERSISTENCE_MODE), as both GB10 captures give it.
PERSISTENCE = ('Persistence Mode: Persistence mode for GPU 0 is disabled. Enable persistence mode by running '
               '"nvidia-smi -i <gpuId> -pm 1 " as root.')  # fmt: skip
PERSISTENCE_MESSAGE = {"text": PERSISTENCE, "error_id": 29, "error_category": 8, "error_severity": 5}


def read(path: Path, level: int = 2):
    diag = dcgm.parse(path.read_text())
    doc = dcgm.build_document(diag, level, ["gpuaccept", "dcgm-diag"], "2026-11-28T00:00:00Z", 1.0)
    return diag, doc


def rows(diag: dcgm.Diag) -> list[tuple]:
    return [(r["category"], r["test"], r["entity_group"], r["entity_id"], r["gpu"], r["status"], r["dcgm_status"])
            for r in diag.results]  # fmt: skip


def counts(doc: dict) -> dict[str, int]:
    return {k: v["value"] for k, v in doc["metrics"].items()}


def test_dcgm_452_on_a_gb10_one_row_per_test_and_gpu_software_failed_on_persistence_mode():
    diag, doc = read(GB10_452)
    assert (diag.schema, diag.version, diag.driver, diag.runtime_error) == (
        "DCGM Diagnostic", "4.5.2", "580.82.09", None)  # fmt: skip
    assert rows(diag) == [("Deployment", "software", "GPU", 0, 0, "fail", "Fail"),
                          ("Hardware", "memory", "GPU", 0, 0, "pass", "Pass"),
                          ("Integration", "pcie", "GPU", 0, 0, "pass", "Pass")]  # fmt: skip
    software, memory, pcie = diag.results
    assert software["messages"] == [PERSISTENCE_MESSAGE]
    assert memory["info"] == ["Allocated 112427837082 bytes (87.5%)"] and memory["messages"] == []
    # dcgmi's own tab characters inside the strings survive as they are.
    assert pcie["info"] == ["GPU to Host bandwidth:\t\t58.62 GB/s", "Host to GPU bandwidth:\t\t58.88 GB/s",
                            "bidirectional bandwidth:\t58.69 GB/s", "GPU to Host latency:\t\t1.563 us",
                            "Host to GPU latency:\t\t1.740 us", "bidirectional latency:\t\t3.078 us"]  # fmt: skip
    # The GB10 has no serial for DCGM: its blank value <<<NOT_SUPPORTED>>> is no serial, not a serial.
    assert diag.gpus == [{"index": 0, "device_id": "2e12", "serial": None}]
    assert doc["devices"] == [{"index": 0, "name": None, "device_id": "2e12", "serial": None}]
    assert counts(doc) == {"dcgm_passed": 2, "dcgm_failed": 1, "dcgm_warned": 0, "dcgm_skipped": 0}
    assert doc["waived"] == {} and doc["errors"] == [] and doc["results"]["dcgm_version"] == "4.5.2"
    assert doc["cuda"]["driver_release"] == "580.82.09"
    assert [(g["gpu"], counts(g)) for g in doc["gpu_metrics"]] == [
        (0, {"dcgm_passed": 2, "dcgm_failed": 1, "dcgm_warned": 0, "dcgm_skipped": 0})]  # fmt: skip
    # Not an all-pass run: persistence mode is off on that GB10, and DCGM's software test fails the node for it.
    assert dcgm_rules.problems(doc, Path("dcgm_diag.json")) == [
        f"dcgm_diag.json: DCGM diag level 2: software (Deployment) failed on GPU 0: {PERSISTENCE} (DCGM error 29); "
        "run dcgmi diag -r 2 -v on the node for the details"]  # fmt: skip


def test_dcgm_423_on_a_gb10_software_fails_and_the_skipped_memory_and_pcie_tests_are_waived():
    diag, doc = read(GB10_423)
    assert (diag.schema, diag.version, diag.driver) == ("DCGM Diagnostic", "4.2.3", "580.82.09")
    assert rows(diag) == [("Deployment", "software", "GPU", 0, 0, "fail", "Fail"),
                          ("Hardware", "memory", "GPU", 0, 0, "skip", "Skip"),
                          ("Integration", "pcie", "GPU", 0, 0, "skip", "Skip")]  # fmt: skip
    assert diag.results[0]["messages"] == [PERSISTENCE_MESSAGE]
    # The software test's summary failed for the reason its GPU 0 result carries: no record of the whole test.
    assert all(r["entity_group"] == "GPU" for r in diag.results)
    assert counts(doc) == {"dcgm_passed": 0, "dcgm_failed": 1, "dcgm_warned": 0, "dcgm_skipped": 2}
    # DCGM skips them with no warning and no info: the waived rows say so rather than invent a reason.
    assert doc["waived"] == {"dcgm_memory_gpu0": "skipped by DCGM diag level 2: DCGM gave no reason",
                             "dcgm_pcie_gpu0": "skipped by DCGM diag level 2: DCGM gave no reason"}  # fmt: skip
    (p,) = dcgm_rules.problems(doc, Path("dcgm_diag.json"))
    assert p.startswith("dcgm_diag.json: DCGM diag level 2: software (Deployment) failed on GPU 0: Persistence Mode: ")
    assert "(DCGM error 29)" in p and "memory" not in p and "pcie" not in p


def test_the_command_reads_dcgmis_real_output_and_prints_its_failure(tmp_path):
    # dcgmi exited 226 on both GB10 captures (glimmer-burnin's notes); the document is written all the same.
    tool = stand_in(tmp_path, GB10_452.read_text(), rc=226)
    proc, doc = dcgm_diag(tmp_path, "--level", "2", "--dcgmi", str(tool))
    assert proc.returncode == 0, proc.stderr
    assert f"FAIL: software on GPU 0: {PERSISTENCE}" in proc.stdout
    assert "level 2: 2 passed, 1 failed, 0 warned, 0 skipped" in proc.stdout
    assert [(r["test"], r["gpu"], r["status"]) for r in doc["results"]["tests"]] == [
        ("software", 0, "fail"), ("memory", 0, "pass"), ("pcie", 0, "pass")]  # fmt: skip


def test_through_reframe_the_partial_skip_capture_fails_on_software_and_waives_memory_and_pcie(tmp_path):
    tool = stand_in(tmp_path, GB10_423.read_text(), rc=226)
    proc, verdict_rows = reframe_run(tmp_path / "run", tool)
    row = verdict_rows[("dcgm_diag", None)]
    assert row.status == "fail", proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "DCGM diag level 1: software (Deployment) failed on GPU 0: Persistence Mode:" in row.reason
    assert "(DCGM error 29)" in row.reason
    assert verdict_rows[("dcgm_diag", "dcgm_failed")].value == 1
    assert verdict_rows[("dcgm_diag", "dcgm_skipped")].value == 2
    for name in ("dcgm_memory_gpu0", "dcgm_pcie_gpu0"):
        assert verdict_rows[("dcgm_diag", name)].status == "waived"
        assert "DCGM gave no reason" in verdict_rows[("dcgm_diag", name)].reason


def test_the_older_layout_dcgm_gpu_diagnostic_one_row_per_test_and_gpu_and_info_as_one_string():
    diag, doc = read(OLD_LAYOUT, level=3)
    # The file names no DCGM version, no driver and no entities: the GPUs are those its results name.
    assert (diag.schema, diag.version, diag.driver, diag.runtime_error) == ("DCGM GPU Diagnostic", None, None, None)
    deployment = ["Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
                  "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom"]  # fmt: skip
    assert rows(diag) == [
        *[("Deployment", name, None, None, None, "pass", "Pass") for name in deployment],
        ("Integration", "PCIe", "GPU", 0, 0, "pass", "Pass"),
        ("Hardware", "GPU Memory", "GPU", 0, 0, "pass", "Pass"),
        ("Hardware", "Diagnostic", "GPU", 0, 0, "pass", "Pass"),
        ("Hardware", "EUD Test", "GPU", 0, 0, "skip", "Skip"),
        ("Stress", "Targeted Stress", "GPU", 0, 0, "pass", "Pass"),
        ("Stress", "Targeted Power", "GPU", 0, 0, "pass", "Pass"),
        ("Stress", "Memory Bandwidth", "GPU", 0, 0, "pass", "Pass"),
    ]
    by_test = {r["test"]: r for r in diag.results}
    # DCGM 2/3 writes a result's info as one string: one line of info, not one per character.
    assert by_test["GPU Memory"]["info"] == ["GPU 0 Allocated 15206918958 bytes (97.3%)"]
    assert by_test["Targeted Power"]["info"] == ["GPU 0 GPU 0 power average:\t70 W"]
    assert by_test["PCIe"]["info"][0].startswith("GPU 0 GPU 0 GPU to Host bandwidth:\t\t13.15 GB/s, ")
    assert by_test["Memory Bandwidth"]["info"] == [] and all(r["messages"] == [] for r in diag.results)
    assert [test for test, r in by_test.items() if r["test_key"] == "page_retirement_row_remap"] == [
        "Page Retirement/Row Remap"]  # fmt: skip
    assert diag.gpus == [{"index": 0, "device_id": None, "serial": None}]
    assert counts(doc) == {"dcgm_passed": 15, "dcgm_failed": 0, "dcgm_warned": 0, "dcgm_skipped": 1}
    assert doc["waived"] == {"dcgm_eud_test_gpu0": "skipped by DCGM diag level 3: DCGM gave no reason"}
    assert [(g["gpu"], counts(g)["dcgm_passed"], counts(g)["dcgm_skipped"]) for g in doc["gpu_metrics"]] == [(0, 6, 1)]
    assert dcgm_rules.problems(doc, Path("dcgm_diag.json")) == []


def test_the_older_layout_with_a_failure_names_dcgms_one_string_warning():
    # The capture with its Targeted Power result failed as DCGM 2/3's dcgmi writes a failure (dcgmi/Diag.cpp,
    # HelperJsonAddResult): the warning one string, with no error code. The message is made up, the rest real.
    out = json.loads(OLD_LAYOUT.read_text())
    (stress,) = [c for c in out["DCGM GPU Diagnostic"]["test_categories"] if c["category"] == "Stress"]
    (result,) = next(t for t in stress["tests"] if t["name"] == "Targeted Power")["results"]
    result.update(status="Fail", warnings="GPU 0: power below the target")
    diag = dcgm.parse(json.dumps(out, indent="\t"))
    (failed,) = [r for r in diag.results if r["status"] == "fail"]
    assert failed["messages"] == [{"text": "GPU 0: power below the target", "error_id": None, "error_category": None,
                                   "error_severity": None}]  # fmt: skip
    doc = dcgm.build_document(diag, 3, ["gpuaccept"], "t", 1.0)
    assert dcgm_rules.problems(doc, Path("dcgm_diag.json")) == [
        "dcgm_diag.json: DCGM diag level 3: Targeted Power (Stress) failed on GPU 0: GPU 0: power below the target; "
        "run dcgmi diag -r 3 -v on the node for the details"]  # fmt: skip
