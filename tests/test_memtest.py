"""The memory test's judging: its rule (gpuaccept.judge.rules.memtest_problems), its references and bounds, and a
whole verdict. No GPU has run gpuaccept-memtest for these tests yet: the documents are built here, in code, in the
shape the tool writes (reframe_checks/src/memtest/gpuaccept_memtest.cu, docs/checks/memtest.md), and are not
presented as recorded. The whole verdict adds such a document, as a test case built here, to a copy of the recorded
H100 evaluation run that today's references accept (tests/fixtures/recorded/2026-11-23-h100-evaluation)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from conftest import RECORDED, REFERENCE_DIR

from gpuaccept import metric_table, references
from gpuaccept.checks import CHECKS, in_suite
from gpuaccept.judge import rules, verdict
from gpuaccept.references import bounds

GIB = 2**30
EVALUATION_RUN = RECORDED / "2026-11-23-h100-evaluation" / "accept" / "results" / "20261123T174108Z-evaluation"
TOTAL = 85_017_493_504  # an H100 80GB's memory as cudaMemGetInfo reports it
PATTERNS = ("moving_inversions_ones_zeros", "moving_inversions_walking", "address_in_address", "random")


def bad_word(offset: int, bit: int) -> dict:
    expected = 0xFFFFFFFFFFFFFFFF
    return {"offset": offset, "address": f"0x{0x7F0000000000 + offset:016x}", "chunk": offset // GIB,
            "chunk_offset": offset % GIB, "expected": f"0x{expected:016x}", "found": f"0x{expected ^ 1 << bit:016x}",
            "xor": f"0x{1 << bit:016x}", "bits": [bit], "pass": 3,
            "sweep": "check_complement_then_restore_falling"}  # fmt: skip


def gpu_row(gpu: int, bus: str, bad: list[dict] | None = None, tested: int = 82_325_000_000) -> dict:
    """One GPU's results.per_gpu entry: 30 passes over `tested` bytes at about 2.8 TB/s, `bad` words found by the
    first pattern."""
    bad = bad or []
    patterns = []
    for i, key in enumerate(PATTERNS):
        moved = 30 * (5 if i < 2 else 4) * tested
        mine = bad if i == 0 else []
        patterns.append({"pattern": key, "runs": 30, "mismatches": len(mine), "seconds": moved / 2.8e12,
                         "bytes_moved": float(moved), "throughput_gbps": 2800.0,
                         "lowest_bad_offset": mine[0]["offset"] if mine else None,
                         "highest_bad_offset": mine[-1]["offset"] if mine else None, "records_dropped": False,
                         "first_bad": mine})  # fmt: skip
    seconds = sum(p["seconds"] for p in patterns)
    return {"gpu": gpu, "pci_bus_id": bus, "total_bytes": TOTAL, "free_bytes": 84_300_000_000,
            "margin_bytes": 1_969_225_728, "target_bytes": tested, "tested_bytes": tested,
            "tested_fraction": tested / TOTAL, "chunks": 77, "passes": 30, "seconds": 19.5,  # 20 s asked
            "kernel_seconds": seconds, "bytes_moved": sum(p["bytes_moved"] for p in patterns),
            "throughput_gbps": 2800.0, "mismatches": len(bad), "stopped": None, "patterns": patterns,
            "injected": None, "ecc": {"before": {}, "after": {}, "change": {}}}  # fmt: skip


def memtest_doc(buses: list[str], bad_gpu: int | None = None, bad: list[dict] | None = None) -> dict:
    """A gpuaccept-memtest document over GPUs on `buses`, with `bad` words on GPU `bad_gpu`, built as the tool builds
    its own (failures, exit status 2's verification and metrics included)."""
    rows = [gpu_row(i, bus, bad if i == bad_gpu else None) for i, bus in enumerate(buses)]
    failures = [f"GPU {r['gpu']} (bus {r['pci_bus_id']}): moving_inversions_ones_zeros: {r['mismatches']} bad "
                "64-bit word(s) in 30 run(s)" for r in rows if r["mismatches"]]  # fmt: skip

    def figures(rs: list[dict], node: bool) -> dict:
        def m(value, unit, better):
            return {"value": value, "unit": unit, "better": better}

        return {"errors_total": m(sum(r["mismatches"] for r in rs), "count", "lower"),
                "bytes_tested_min": m(min(r["tested_bytes"] for r in rs) / GIB, "GiB", "higher"),
                "tested_fraction_min": m(min(r["tested_fraction"] for r in rs), "ratio", "higher"),
                "throughput_gbps_min": m(min(r["throughput_gbps"] for r in rs), "GB/s", "higher")}  # fmt: skip

    return {
        "schema": "gpuaccept.bench/1", "tool": "gpuaccept-memtest", "tool_version": "0.1.0", "git_revision": "test",
        "timing": "one cudaEvent pair per GPU around each run of a pattern",
        "devices": [{"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": bus, "uuid": f"GPU-test-{i}"}
                    for i, bus in enumerate(buses)],
        "nvml": {"available": True, "why_not": None},
        "parameters": {"gpus": list(range(len(buses))), "patterns": list(PATTERNS), "seconds": 20, "passes": None,
                       "inject_error": False},
        "results": {"per_gpu": rows, "notes": []},
        "gpu_metrics": [{"gpu": r["gpu"], "metrics": figures([r], False)} for r in rows],
        "metrics": figures(rows, True),
        "waived": {},
        "verification": {"passed": not failures, "checked": 4 * len(rows), "failures": failures},
        "errors": [],
    }  # fmt: skip


FOUR = [f"00000000:{b:02x}:00.0" for b in (0x18, 0x2A, 0x3A, 0x5D)]


# ------------------------------------------------------------------------------------------------
# The rule.


def test_a_clean_document_has_no_problem_and_agrees_with_the_metric_table():
    doc = memtest_doc(FOUR)
    assert rules.memtest_problems(doc, Path("memtest.json")) == []
    assert metric_table.document_problems("memtest", doc) == []
    for entry in doc["gpu_metrics"]:
        assert all(metric_table.unit("memtest", name) == m["unit"] for name, m in entry["metrics"].items())


def test_a_bad_word_names_the_gpu_the_pattern_the_offset_and_the_bit():
    doc = memtest_doc(FOUR, bad_gpu=2, bad=[bad_word(0x98A3C1F28, 17)])
    (problem,) = rules.memtest_problems(doc, Path("memtest.json"))
    assert problem.startswith("GPU 2 (bus 00000000:3a:00.0, GPU-test-2): 1 bad 64-bit word(s) in its memory")
    assert "first in moving_inversions_ones_zeros at offset 0x98a3c1f28 (38.160 GiB)" in problem
    assert "expected 0xffffffffffffffff, found 0xfffffffffffdffff (bits [17] flipped)" in problem
    assert "goes back to its vendor" in problem


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d["results"].update(per_gpu=[]), "no GPU's memory test recorded"),
        (lambda d: d["results"]["per_gpu"][1].update(passes=0, stopped="cudaErrorIllegalAddress"),
         "GPU 1 (bus 00000000:2a:00.0, GPU-test-1): memory not tested (0 passes over 82325000000 bytes): "
         "cudaErrorIllegalAddress"),
        (lambda d: d["results"]["per_gpu"][3].update(tested_bytes=0), "GPU 3 (bus 00000000:5d:00.0"),
        (lambda d: d["results"]["per_gpu"][0].update(mismatches=None), "GPU 0 (bus 00000000:18:00.0, GPU-test-0): no "
         "count of bad words"),
        (lambda d: d["metrics"]["errors_total"].update(value=0), None),  # the count itself is consistent
        (lambda d: d["results"]["per_gpu"][0].update(mismatches=2), "errors_total 1 is not the sum"),
    ],
)
def test_a_document_that_hides_a_gpu_or_its_count_is_named(change, says):
    doc = memtest_doc(FOUR, bad_gpu=1, bad=[bad_word(4096, 3)])
    change(doc)
    problems = rules.memtest_problems(doc, Path("memtest.json"))
    if says is None:
        assert any("errors_total 0 is not the sum of the GPUs' bad words (1)" in p for p in problems), problems
    else:
        assert any(says in p for p in problems), problems


def test_a_self_test_is_named_as_one_not_as_faulty_memory():
    doc = memtest_doc(FOUR[:1], bad_gpu=0, bad=[bad_word(40 * GIB, 9)])
    doc["parameters"]["inject_error"] = True
    doc["results"]["per_gpu"][0]["injected"] = {"offset": 40 * GIB, "bit": 9, "reported": True}
    problems = rules.memtest_problems(doc, Path("memtest.json"))
    assert problems[0].startswith("memtest.json: a self-test run (--inject-error")
    assert "the self-test's flipped bit at offset 42949672960 was found" in problems[1]
    assert not any("vendor" in p for p in problems)


# ------------------------------------------------------------------------------------------------
# Declaration, references, bounds.


def test_the_check_runs_in_commission_and_evaluation_and_its_rule_is_declared():
    check = CHECKS["memtest"]
    assert check.result_file == "memtest.json" and check.rules == ("memtest",) and check.needs_gpu
    assert "memtest" in {c.key for c in in_suite("commission")} | {c.key for c in in_suite("evaluation")}
    assert "memtest" not in {c.key for c in in_suite("nightly")}
    gated = {m.pattern for m in check.metrics if m.gated}
    assert gated == {"errors_total", "tested_fraction_min"}


@pytest.mark.parametrize("node_type", sorted(p.stem for p in REFERENCE_DIR.glob("*.yaml")))
def test_every_shipped_node_type_references_the_gated_metrics(node_type):
    refs = references.load_node_type(REFERENCE_DIR, node_type).checks["memtest"]
    assert not refs["errors_total"].judged and "memtest rule" in refs["errors_total"].informational
    floor = refs["tested_fraction_min"]
    assert floor.lower_bound == pytest.approx(0.9) and floor.upper_bound is None
    assert floor.assess(0.968)[0] == "pass" and floor.assess(0.85)[0] == "fail"


def test_impossible_figures_are_bounded():
    limits = bounds.Limits(datasheet=bounds._datasheet(None, [("NVIDIA H100 80GB HBM3", None)]))
    assert "at most 1" in bounds.problem("memtest", "tested_fraction_min", 1.2, limits)
    assert "memory bandwidth" in bounds.problem("memtest", "throughput_gbps_min", 4000.0, limits)
    assert bounds.problem("memtest", "throughput_gbps_min", 2800.0, limits) is None
    assert "negative" in bounds.problem("memtest", "errors_total", -1, limits)


# ------------------------------------------------------------------------------------------------
# A whole verdict: the recorded evaluation run with a memory test case added.


def with_memtest(tmp_path: Path, doc: dict, result: str = "pass") -> verdict.Verdict:
    run = tmp_path / "results" / "vm" / EVALUATION_RUN.name
    shutil.copytree(EVALUATION_RUN, run)
    out = run / "reframe" / "output" / "gpuaccept" / "node" / "builtin" / "GpuMemtest"
    out.mkdir(parents=True)
    gpus = json.loads((run / "node-facts.json").read_text())["gpus"]
    for d in doc["devices"]:  # the tool names each GPU by the UUID the node facts give it
        d["uuid"] = gpus[d["index"]]["uuid"]
    (out / "memtest.json").write_text(json.dumps(doc))
    report = json.loads((run / "reframe-report.json").read_text())
    case = copy.deepcopy(next(c for c in report["runs"][0]["testcases"] if c["name"] == "GpuGemm"))
    prefix = report["session_info"]["prefix_output"]
    case.update(name="GpuMemtest", unique_name="GpuMemtest", display_name="GpuMemtest", short_name="GpuMemtest",
                check_key="memtest", result=result, outputdir=f"{prefix}/gpuaccept/node/builtin/GpuMemtest",
                stagedir=f"{prefix}/gpuaccept/node/builtin/GpuMemtest", perfvalues={},
                fail_phase=None if result == "pass" else "sanity",
                fail_reason=None if result == "pass" else "vm: gpuaccept-memtest exited 2")  # fmt: skip
    report["runs"][0]["testcases"].append(case)
    (run / "reframe-report.json").write_text(json.dumps(report))
    facts = json.loads((run / "node-facts.json").read_text())
    return verdict.build(verdict.load_report(run / "reframe-report.json"), facts, REFERENCE_DIR, "h100_sxm5_80gb",
                         "evaluation", run_dir=run)  # fmt: skip


def bus_of_recorded_gpu() -> str:
    return json.loads((EVALUATION_RUN / "node-facts.json").read_text())["gpus"][0]["pci_bus_id"]


def test_a_clean_memory_test_completes_the_recorded_run_to_accepted(tmp_path):
    v = with_memtest(tmp_path, memtest_doc([bus_of_recorded_gpu()]))
    rows = {(r.check, r.metric): r for r in v.rows}
    assert v.accepted, verdict.table(v)
    assert rows[("memtest", None)].status == "pass"
    assert rows[("memtest", "errors_total")].status == "info" and rows[("memtest", "errors_total")].value == 0
    assert rows[("memtest", "tested_fraction_min")].status == "pass"
    assert rows[("memtest", "throughput_gbps_min")].value == 2800.0


def test_a_bad_word_rejects_the_node_naming_the_gpu(tmp_path):
    bus = bus_of_recorded_gpu()
    v = with_memtest(tmp_path, memtest_doc([bus], bad_gpu=0, bad=[bad_word(0x1234_5678, 40)]), result="fail")
    row = next(r for r in v.rows if r.check == "memtest" and r.metric is None)
    assert not v.accepted and v.failed_checks() == ["memtest"], verdict.table(v)
    uuid = json.loads((EVALUATION_RUN / "node-facts.json").read_text())["gpus"][0]["uuid"]
    assert row.status == "fail" and f"GPU 0 (bus {bus}, {uuid}): 1 bad 64-bit word(s)" in row.reason
    assert "offset 0x12345678" in row.reason and "bits [40] flipped" in row.reason


def test_too_little_memory_tested_fails_its_floor(tmp_path):
    doc = memtest_doc([bus_of_recorded_gpu()])
    for part in (doc["metrics"], doc["gpu_metrics"][0]["metrics"]):
        part["tested_fraction_min"]["value"] = 0.5
    v = with_memtest(tmp_path, doc)
    row = next(r for r in v.rows if r.check == "memtest" and r.metric == "tested_fraction_min")
    assert not v.accepted and row.status == "fail" and row.gpu == 0, verdict.table(v)
    assert row.reason.startswith("GPU 0 (bus ") and ": below 0.9 ratio" in row.reason  # each GPU judged and named
