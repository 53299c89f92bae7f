"""A judge that cannot be fooled, part two: faults are never retried away, the GPUs must be the ones the node type
names, every input is read strictly from inside the run directory and held by its manifest, readers re-derive the
verdict from its rows, and a GPU model without a datasheet cannot be accepted on its figures alone.

The input is the run recorded on the H100 that today's references accept (docs/evidence/2026-11-23-h100-evaluation,
every check of the evaluation suite of its day, judged without the checks that came after it), copied, with one
thing changed; the documents a test writes in code (a
retry's list of checks, a crafted report or verdict) say so where they are made."""

from __future__ import annotations

import copy
import dataclasses
import functools
import html
import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import H100_DEGRADED, H200X2, REFERENCE_DIR
from judge_support import ACCEPTED_EVALUATION, DOC, OUT, edit, make_retry, references_before_later_checks

from gpuaccept import layout, run
from gpuaccept.cli import main
from gpuaccept.judge import exporter, load, rules, summarize, validate, verdict
from gpuaccept.references import bounds
from gpuaccept.results import fleet

NODE_TYPE, SUITE = "h100_sxm5_80gb", "evaluation"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    copy = tmp_path / "results" / "vm" / ACCEPTED_EVALUATION.name
    shutil.copytree(ACCEPTED_EVALUATION, copy)
    return copy


def judge(run_dir: Path, reference_dir: Path | None = None, node_type: str = NODE_TYPE, **kw) -> verdict.Verdict:
    """The run judged as ``gpuaccept summarize`` judges it (retries, manifest), its verdict written; by default
    against today's references less the checks that came after the run (judge_support.LATER_CHECKS)."""
    reference_dir = reference_dir or references_before_later_checks()
    return summarize.judge_run_dir(run_dir, None, reference_dir, node_type, SUITE, **kw)[0]


def check_row(v: verdict.Verdict, check: str) -> verdict.Row:
    return next(r for r in v.rows if r.check == check and r.metric is None)


def rows_of(v: verdict.Verdict, check: str) -> list[verdict.Row]:
    return [r for r in v.rows if r.check == check]


def test_the_recorded_run_is_accepted_as_recorded(run_dir):
    """The baseline of every test below: without the change, the node is ACCEPTED."""
    v = judge(run_dir)
    assert v.accepted, verdict.table(v)


# ------------------------------------------------------------------------------------------------
# 1. Faults are not noise: a failed verification, a tool's error, a health finding or an impossible figure rejects
# at once; a retry (even one that passed) never replaces it.


def _xid(doc: dict) -> None:
    doc["results"]["kernel_log"]["xid_events"] = [
        {"xid": 79, "pci": "0000:00:06", "time_unix": 1763917200,
         "text": "NVRM: Xid (PCI:0000:00:06): 79, GPU has fallen off the bus."}]  # fmt: skip


FAULTS = {
    "gemm verification": ("gemm", lambda d: d.update(verification={"passed": False, "failures": ["fp64: C differs"]}),
                          "verification failed"),
    "gemm tool error": ("gemm", lambda d: d.update(errors=["cublasLtMatmul: CUBLAS_STATUS_EXECUTION_FAILED"]),
                        "CUBLAS_STATUS_EXECUTION_FAILED"),
    "hpl residual": ("hplstyle", lambda d: d["results"]["per_gpu"][0]["runs"][0].update(scaled_residual=17.0),
                     "is not below"),
    "health xid": ("health", _xid, "XID 79"),
    "health link trained down": ("health", lambda d: d["metrics"]["pcie_gen_min"].update(value=4), "pcie_gen_min"),
    "impossible figure": ("gemm", lambda d: d["metrics"]["fp64_tflops_min"].update(value=1e6), "impossible"),
    "throttle fault": ("power", lambda d: d["results"]["per_gpu"][0]["throttled_s"].update(hw_slowdown=3.0),
                       "hw_slowdown"),
}  # fmt: skip


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_fault_is_never_retried_away(run_dir, fault):
    """The first attempt's fault stands, whatever a retry of the check measured (here: the healthy documents)."""
    check, change, says = FAULTS[fault]
    make_retry(run_dir, 1, [check])
    edit(run_dir / DOC[check], change)
    v = judge(run_dir)
    row = check_row(v, check)
    assert not v.accepted and row.status == verdict.FAIL and row.attempts == 1, verdict.table(v)
    assert says in " ".join(r.reason for r in rows_of(v, check)), verdict.table(v)
    assert "retry-1" in row.reason and "never measured again" in row.reason, row.reason
    assert check not in verdict.out_of_band_checks(v)


@pytest.mark.parametrize("fault", ["gemm verification", "gemm tool error", "impossible figure"])
def test_a_fault_a_retry_found_rejects_even_where_the_first_attempt_now_passes(run_dir, fault):
    """A run retried GEMM, and the retry computed a wrong answer; judged again against references its first
    attempt passes, the fault of the retry still rejects the node."""
    check, change, says = FAULTS[fault]
    retry_dir = make_retry(run_dir, 1, [check])
    edit(retry_dir / DOC[check], change)
    v = judge(run_dir)
    assert not v.accepted and check_row(v, check).status == verdict.FAIL, verdict.table(v)
    assert says in " ".join(r.reason for r in rows_of(v, check))


def test_a_fault_reframe_ran_again_is_not_washed_away_by_its_later_pass(run_dir):
    """A report with ReFrame's own retry (--max-retries): the GEMM test case failed in its run phase, then passed in
    a second run (built here from the recorded one); the first failure rejects the node."""
    def add_retry(report: dict) -> None:
        gemm = next(tc for tc in report["runs"][0]["testcases"] if tc.get("check_key") == "gemm")
        failed = dict(gemm, result="fail", fail_phase="run", fail_reason="cublasLtMatmul: illegal memory access")
        report["runs"][0]["testcases"] = [failed if tc is gemm else tc for tc in report["runs"][0]["testcases"]]
        report["runs"].append({**report["runs"][0], "runid": 1, "testcases": [gemm]})

    edit(run_dir / layout.REPORT_FILE, add_retry)
    v = judge(run_dir)
    assert not v.accepted, verdict.table(v)
    assert any(r.status == verdict.FAIL and "illegal memory access" in r.reason for r in rows_of(v, "gemm"))


def test_a_fault_is_not_out_of_band_even_with_a_referenced_count():
    """A count (an XID, a link trained down, a health finding) outside its band is a fault, not a dip."""
    v = verdict.Verdict("n", NODE_TYPE, SUITE, False, [
        verdict.Row("health", None, verdict.FAIL, reason="a metric failed its reference: pcie_gen_min"),
        verdict.Row("health", "pcie_gen_min", verdict.FAIL, 4.0, "count", 5.0, 5.0, reason="below 5"),
    ])  # fmt: skip
    assert verdict.out_of_band_checks(v) == []  # the row built by hand says nothing; the judge's row says it:
    from gpuaccept.judge import retry as retry_rules  # noqa: PLC0415

    assert not retry_rules.retryable("health", "pcie_gen_min")
    assert not retry_rules.retryable("health", "xid_events")
    assert not retry_rules.retryable("hplstyle", "residual_max")
    assert retry_rules.retryable("gemm", "fp64_tflops_min") and retry_rules.retryable("bandwidth", "h2d_pinned_min")


def test_a_dip_is_still_measured_again_and_a_retry_that_did_not_run_the_check_leaves_the_failure(run_dir):
    retry_dir = make_retry(run_dir, 1, ["gemm"])
    edit(run_dir / DOC["gemm"], lambda d: d["metrics"]["fp64_tflops_min"].update(value=40.0))
    v = judge(run_dir)
    assert v.accepted and check_row(v, "gemm").attempts == 2, verdict.table(v)
    # The retry's report without the GEMM test case: the dip stands.
    edit(retry_dir / "reframe-report.json",
         lambda r: [x["testcases"].remove(tc) for x in r["runs"] for tc in list(x["testcases"])
                    if tc.get("check_key") == "gemm"])  # fmt: skip
    v = judge(run_dir)
    assert not v.accepted and check_row(v, "gemm").status == verdict.FAIL, verdict.table(v)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda r: make_retry(r, 2, ["gemm"]), "retry-2: attempt 3 without attempt 2 (retry-1)"),
        (lambda r: (make_retry(r, 1, ["gemm"]) / layout.RETRIED_FILE).unlink(), "retry-1/retried.json"),
        (lambda r: make_retry(r, 1, ["gemm"]).rename(r / "retry-01"), "retry-01: not a retry gpuaccept run writes"),
        (lambda r: (r / "retry-1").write_text("x"), "retry-1: not a directory"),
        (lambda r: (r / "retry-1").symlink_to(make_retry(r, 9, ["gemm"])), "retry-1: a symbolic link"),
        (lambda r: (make_retry(r, 1, ["gemm"]) / layout.RETRIED_FILE).write_text('["gemm", "gemm"]'),
         "names a check twice"),
        (lambda r: (make_retry(r, 1, ["gemm"]) / layout.RETRIED_FILE).write_text('["no_such_check"]'),
         "no_such_check"),
    ],
)
def test_a_retry_folder_gpuaccept_run_did_not_write_fails_naming_it(run_dir, make, says):
    """Attempt 1's GEMM dipped (a figure outside its band); what lies in the retry folders is not what gpuaccept run
    writes: the dip stands and the verdict names the folder."""
    edit(run_dir / DOC["gemm"], lambda d: d["metrics"]["fp64_tflops_min"].update(value=40.0))
    make(run_dir)
    v = judge(run_dir)
    assert not v.accepted, verdict.table(v)
    assert any(says in r.reason and r.status == verdict.FAIL for r in v.rows), verdict.table(v)


# ------------------------------------------------------------------------------------------------
# 2. The hardware matches the order: the node type's GPU model and count.


def _h200x2_run(tmp_path: Path, d2d_factor: float = 1.0) -> Path:
    """The 2 x H200 machine's recorded bandwidth and GEMM documents (docs/evidence/2026-11-22-h200x2) in a run
    directory, with a ReFrame report built here that names them."""
    run_dir = tmp_path / "results" / "h200x2" / "20261122T000000Z-nightly"
    cases = []
    for key, cls in (("bandwidth", "GpuBandwidth"), ("gemm", "GpuGemm")):
        out = run_dir / "out" / cls
        out.mkdir(parents=True)
        shutil.copy(H200X2 / f"{key}.json", out / f"{key}.json")
        cases.append({"name": cls, "check_key": key, "result": "pass", "outputdir": str(out)})
    edit(run_dir / "out" / "GpuBandwidth" / "bandwidth.json",
         lambda d: d["metrics"]["d2d_min"].update(value=d["metrics"]["d2d_min"]["value"] * d2d_factor))  # fmt: skip
    (run_dir / layout.REPORT_FILE).write_text(json.dumps({"session_info": {}, "runs": [{"testcases": cases}]}))
    shutil.copy(H200X2 / "facts.json", run_dir / layout.FACTS_FILE)
    return run_dir


def test_h200s_judged_as_the_h100_node_type_are_rejected_whatever_their_figures(tmp_path):
    run_dir = _h200x2_run(tmp_path, d2d_factor=0.75)
    v = summarize.judge_run_dir(run_dir, None, REFERENCE_DIR, "h100_sxm5_80gb_x2", "nightly")[0]
    row = next(r for r in v.rows if (r.check, r.metric) == ("node", "gpu_model"))
    assert not v.accepted and row.status == verdict.FAIL, verdict.table(v)
    assert "NVIDIA H100 80GB HBM3" in row.reason and "0x233010DE" in row.reason  # what was ordered
    assert "GPU 0, 1: NVIDIA H200" in row.reason  # what is there (NVML's names: these facts have no device ids)
    # The same node judged as its own type: its GPU model passes.
    v = summarize.judge_run_dir(run_dir, None, REFERENCE_DIR, "h200_x2", "nightly")[0]
    assert next(r for r in v.rows if (r.check, r.metric) == ("node", "gpu_model")).status == verdict.PASS


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda g: g.update(pci_device_id="0x233510DE"), "0x233510DE"),  # an H200's device id
        (lambda g: g.update(name="NVIDIA H100 PCIe"), "NVIDIA H100 PCIe"),  # another name, the same device id
        (lambda g: g.update(name="NVIDIA H200", pci_device_id=None), "NVIDIA H200"),  # facts without device ids
    ],
)
def test_a_node_whose_gpus_differ_from_its_node_type_is_rejected(run_dir, change, says):
    edit(run_dir / layout.FACTS_FILE, lambda f: [change(g) for g in f["gpus"]])
    v = judge(run_dir)
    row = next(r for r in v.rows if (r.check, r.metric) == ("node", "gpu_model"))
    assert not v.accepted and row.status == verdict.FAIL and says in row.reason, verdict.table(v)


def test_a_gpus_power_is_bounded_by_one_board_on_a_node_of_several():
    """A figure of one GPU is held to one GPU's datasheet, a node's to all of them: 800 W idle on one H100 of two is
    impossible, 800 W for both at once is not."""
    facts = json.loads((ACCEPTED_EVALUATION / layout.FACTS_FILE).read_text())
    facts["gpus"].append(dict(facts["gpus"][0], index=1))
    limits = bounds.node_limits(facts, REFERENCE_DIR)
    assert limits.gpus == 2 and "maximum board power 700 W" in bounds.problem("power", "idle_power_max_w", 800.0,
                                                                              limits)  # fmt: skip
    assert bounds.problem("hplstyle", "power_avg_w", 800.0, limits) is None


def test_more_gpus_than_the_node_type_fail_the_count(run_dir):
    edit(run_dir / layout.FACTS_FILE, lambda f: f["gpus"].append(dict(f["gpus"][0], index=1)))
    v = judge(run_dir)
    row = next(r for r in v.rows if (r.check, r.metric) == ("node", "gpu_count"))
    assert not v.accepted and row.status == verdict.FAIL and "says 1 GPUs" in row.reason and "sees 2" in row.reason


# ------------------------------------------------------------------------------------------------
# 3. Strict inputs: each a clear error naming the file, or a failed check; never a pass, never a traceback.


def _replace_text(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("change", "says"),
    [
        # The failing value first, a healthy one last: a reader that keeps the last key would pass it.
        (lambda t: t.replace('"fp64_tflops_min": {', '"fp64_tflops_min": {"value": 1.0, "unit": "TFLOP/s"}, '
                             '"fp64_tflops_min": {', 1), "'fp64_tflops_min' appears twice"),
        (lambda t: t.replace('"passed": true', '"passed": false, "passed": true', 1), "'passed' appears twice"),
        (lambda t: t.replace('"schema"', '"nan": NaN, "schema"', 1), "NaN"),
        (lambda t: t.replace('"schema"', '"big": 1e999, "schema"', 1), "1e999"),
        (lambda t: t.replace('"schema"', '"big": -Infinity, "schema"', 1), "Infinity"),
        (lambda t: t.replace('"schema"', f'"huge": {"9" * 5000}, "schema"', 1), "out of range"),
        (lambda t: t.replace('"schema"', '"deep": ' + "[" * 100 + "]" * 100 + ', "schema"', 1), "nested 101 deep"),
        (lambda t: t.replace('"schema"', '"deep": ' + "[" * 100_000 + "]" * 100_000 + ', "schema"', 1), "nested"),
    ],
)
def test_a_benchmark_document_that_is_not_strict_json_fails_its_check_naming_the_file(run_dir, change, says):
    path = run_dir / DOC["gemm"]
    path.write_text(change(path.read_text()))
    v = judge(run_dir)
    row = check_row(v, "gemm")
    assert not v.accepted and row.status == verdict.FAIL, verdict.table(v)
    assert str(path) in row.reason and says in row.reason, row.reason


@pytest.mark.parametrize("file", [layout.REPORT_FILE, layout.FACTS_FILE])
@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.replace("{", '{"k": 1, "k": 2, ', 1),
        lambda t: t.replace("{", '{"k": NaN, ', 1),
        lambda t: t.replace("{", '{"k": ' + "[" * 100_000 + "]" * 100_000 + ", ", 1),
    ],
)
def test_a_report_or_facts_file_that_is_not_strict_json_is_a_failed_input_naming_it(run_dir, file, change):
    path = run_dir / file
    path.write_text(change(path.read_text()))
    v = judge(run_dir)
    assert not v.accepted, verdict.table(v)
    assert any(str(path) in r.reason and r.status in (verdict.FAIL, verdict.NOT_RUN) for r in v.rows), verdict.table(v)


def test_a_datasheet_with_a_key_twice_is_refused(tmp_path):
    """The datasheet file bounds every figure: a bound given twice (the failing one first) is no bound."""
    refs = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, refs)
    peaks_file = refs / "datasheets" / "gpu_peaks.yaml"
    text = peaks_file.read_text()
    peaks_file.write_text(text.replace("    memory_gbps: 3350", "    memory_gbps: 3350\n    memory_gbps: 99999", 1))
    facts = json.loads((ACCEPTED_EVALUATION / layout.FACTS_FILE).read_text())
    with pytest.raises(bounds.BoundsError, match="'memory_gbps' appears twice"):
        bounds.node_limits(facts, refs)


def test_a_document_that_is_a_link_to_another_runs_document_fails(run_dir, tmp_path):
    other = tmp_path / "other" / "gemm.json"
    other.parent.mkdir()
    shutil.copy(run_dir / DOC["gemm"], other)
    (run_dir / DOC["gemm"]).unlink()
    (run_dir / DOC["gemm"]).symlink_to(other)
    v = judge(run_dir)
    row = check_row(v, "gemm")
    assert not v.accepted and row.status == verdict.FAIL and "symbolic link" in row.reason, verdict.table(v)


def test_a_document_that_is_a_link_to_another_document_of_the_run_fails(run_dir):
    """Inside the run directory too: the GEMM check's document a link to a copy of it beside."""
    copy_ = run_dir / DOC["gemm"].parent / "gemm-copy.json"
    (run_dir / DOC["gemm"]).rename(copy_)
    (run_dir / DOC["gemm"]).symlink_to(copy_.name)
    v = judge(run_dir)
    row = check_row(v, "gemm")
    assert not v.accepted and row.status == verdict.FAIL and "is a symbolic link (to gemm-copy.json)" in row.reason


def test_a_document_reached_through_a_linked_folder_outside_the_run_fails(run_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.move(run_dir / DOC["gemm"].parent, elsewhere)
    (run_dir / DOC["gemm"].parent).symlink_to(elsewhere)
    v = judge(run_dir)
    row = check_row(v, "gemm")
    assert not v.accepted and row.status == verdict.FAIL and "outside the run directory" in row.reason, row.reason


def test_a_verdict_is_written_even_for_inputs_that_used_to_raise(run_dir):
    """A malformed document of each kind is a failed check in a verdict that replaces the older one."""
    (run_dir / layout.VERDICT_FILE).write_text('{"old": true}')
    edit(run_dir / DOC["hplstyle"], lambda d: d["results"].update(per_gpu=[1, "x", None]))
    edit(run_dir / DOC["power"], lambda d: d["results"]["per_gpu"][0].update(throttled_s={"hw_slowdown": "long"}))
    edit(run_dir / DOC["health"], lambda d: d["results"]["observations"].update(gpus=[1]))
    edit(run_dir / DOC["hpl_host"], lambda d: d["results"].update(runs={"a": 1}))
    v = judge(run_dir)
    assert not v.accepted
    for check in ("hplstyle", "power", "health", "hpl_host"):
        assert check_row(v, check).status == verdict.FAIL, (check, verdict.table(v))
    assert json.loads((run_dir / layout.VERDICT_FILE).read_text())["schema"] == verdict.SCHEMA


# ------------------------------------------------------------------------------------------------
# The manifest: what gpuaccept run wrote is what is judged again.


def test_re_judging_refuses_a_changed_added_or_missing_document_by_name(run_dir):
    from gpuaccept import manifest  # noqa: PLC0415

    manifest.write(run_dir)
    assert judge(run_dir).accepted
    edit(run_dir / DOC["gemm"], lambda d: d["metrics"]["fp64_tflops_min"].update(value=60.0))
    (run_dir / "reframe" / "extra.json").write_text("{}")
    (run_dir / DOC["power"].parent / "rfm_job.out").unlink()
    v = judge(run_dir)
    assert not v.accepted, verdict.table(v)
    reasons = " ".join(r.reason for r in v.rows if r.check == "inputs" and r.status == verdict.FAIL)
    assert f"{DOC['gemm']}: changed since the run" in reasons
    assert "reframe/extra.json: added since the run" in reasons
    assert f"{DOC['power'].parent / 'rfm_job.out'}: missing since the run" in reasons


def test_a_run_recorded_before_manifests_is_judged_with_a_warning_row(run_dir):
    v = judge(run_dir)
    row = next(r for r in v.rows if (r.check, r.metric) == ("inputs", "manifest"))
    assert v.accepted and row.status == verdict.INFO and not row.expected and "no manifest" in row.reason
    assert "no manifest" in verdict.table(v)


def test_a_manifest_that_is_not_one_is_a_failed_input(run_dir):
    from gpuaccept import manifest  # noqa: PLC0415

    (run_dir / manifest.MANIFEST_FILE).write_text('{"schema": "gpuaccept.manifest/1", "files": []}')
    v = judge(run_dir)
    assert not v.accepted and any(manifest.MANIFEST_FILE in r.reason for r in v.rows if r.status == verdict.FAIL)


# ------------------------------------------------------------------------------------------------
# 4. Readers re-derive the verdict from its rows.


@pytest.fixture
def edited_verdict(tmp_path: Path) -> Path:
    """The degraded H100's rejected run, its verdict.json's 'verdict' field edited to pass (in this test)."""
    run_dir = tmp_path / "results" / "vm" / H100_DEGRADED.name
    run_dir.mkdir(parents=True)
    edit_to = json.loads((H100_DEGRADED / layout.VERDICT_FILE).read_text())
    assert edit_to["verdict"] == "fail"
    edit_to["verdict"], edit_to["failed_checks"] = "pass", []
    (run_dir / layout.VERDICT_FILE).write_text(json.dumps(edit_to))
    return run_dir


def test_show_takes_the_verdict_from_the_rows_and_says_when_the_file_disagrees(edited_verdict, capsys):
    assert main(["show", str(edited_verdict)]) == 1
    out = capsys.readouterr()
    assert "REJECTED" in out.out and "ACCEPTED" not in out.out
    assert "its 'verdict' field says pass" in out.err


def test_fleet_takes_the_verdict_from_the_rows(edited_verdict):
    entries = fleet.collect(edited_verdict.parent.parent)
    assert [e.verdict for e in entries] == [verdict.FAIL] and entries[0].failed_checks
    assert "its 'verdict' field says pass" in entries[0].reason


def test_the_exporter_takes_the_verdict_from_the_rows(edited_verdict):
    doc = json.loads((edited_verdict / layout.VERDICT_FILE).read_text())
    v = verdict.Verdict.from_json(doc)
    assert not v.accepted
    forced = verdict.Verdict(**{**v.__dict__, "accepted": True})
    assert "gpuaccept_node_accepted{" in exporter.render(forced)
    assert 'gpuaccept_node_accepted{node_type="h100_sxm5_80gb",suite="commission"} 0.0' in exporter.render(forced)


def test_the_report_takes_the_verdict_from_the_rows(edited_verdict):
    pytest.importorskip("matplotlib")
    from gpuaccept.results import report  # noqa: PLC0415

    group = report.load_group(str(edited_verdict))
    text = html.unescape(report.verdict_summary([group]))
    assert "REJECTED" in text and "ACCEPTED" not in text and "its 'verdict' field says pass" in text


# ------------------------------------------------------------------------------------------------
# 5. A GPU model without a datasheet cannot be accepted on its figures: cannot judge (exit 3).


def _references_without_the_h100_datasheet(tmp_path: Path) -> Path:
    refs = tmp_path / "refs"
    shutil.copytree(references_before_later_checks(), refs)
    peaks = refs / "datasheets" / "gpu_peaks.yaml"
    doc = yaml.safe_load(peaks.read_text())
    del doc["gpus"]["h100_sxm5_80gb"]
    peaks.write_text(yaml.safe_dump(doc, sort_keys=False))
    return refs


def test_a_gpu_model_without_a_datasheet_cannot_be_judged(run_dir, tmp_path):
    refs = _references_without_the_h100_datasheet(tmp_path)
    edit(run_dir / DOC["gemm"], lambda d: d["metrics"]["fp64_tflops_min"].update(value=1e6))
    v = judge(run_dir, refs)
    assert not v.accepted, verdict.table(v)
    # The forged figure fails its band; without it the node still cannot be accepted.
    shutil.copy(ACCEPTED_EVALUATION / DOC["gemm"], run_dir / DOC["gemm"])
    v = judge(run_dir, refs)
    row = next(r for r in v.rows if (r.check, r.metric) == ("references", "datasheet"))
    assert not v.accepted and row.status == verdict.NOT_RUN, verdict.table(v)
    assert row.reason.startswith("cannot judge: no datasheet for NVIDIA H100 80GB HBM3"), row.reason
    assert verdict.cannot_judge(v) == row.reason
    assert run.exit_status(v, run.ReframeOutcome(0)) == run.EXIT_NOT_RUN
    argv = ["summarize", "--reference-dir", str(refs), "--run-dir", str(run_dir), "--node-type", NODE_TYPE, "--suite",
            SUITE, "--facts", str(run_dir / layout.FACTS_FILE)]  # fmt: skip
    assert main(argv) == 3


def test_a_faulty_node_of_an_unknown_gpu_model_is_rejected_not_unjudgeable(run_dir, tmp_path):
    refs = _references_without_the_h100_datasheet(tmp_path)
    edit(run_dir / DOC["gemm"], lambda d: d.update(verification={"passed": False, "failures": ["C differs"]}))
    v = judge(run_dir, refs)
    assert not v.accepted and verdict.cannot_judge(v) == ""
    assert run.exit_status(v, run.ReframeOutcome(0)) == run.EXIT_REJECTED


# ------------------------------------------------------------------------------------------------
# 6. Rules that no test covered: each has one here that goes red when it is taken out (tests/mutation_check.py).


def test_an_hpl_output_cut_short_fails(run_dir):
    edit(run_dir / DOC["hpl_host"], lambda d: d["results"].update(ended=False))
    v = judge(run_dir)
    row = check_row(v, "hpl_host")
    assert not v.accepted and row.status == verdict.FAIL and "cut short" in row.reason


def test_an_optional_check_that_ran_gates_the_node(run_dir, tmp_path):
    """HPL-CUDA, an optional backend, with a judged reference (made so here): its absence rejects nothing, but a run
    of it below its band rejects the node."""
    refs = tmp_path / "refs"
    shutil.copytree(references_before_later_checks(), refs)
    sku = refs / "gpus" / "h100_sxm5_80gb.yaml"
    doc = yaml.safe_load(sku.read_text())
    entry = doc["checks"]["hpl_cuda"]["tflops_per_gpu"]
    measured = json.loads((run_dir / OUT / "GpuHplCuda" / "hpl_cuda.json").read_text())["metrics"]["tflops_per_gpu"]
    entry.pop("informational", None)
    entry.update(value=measured["value"], lower=0.1)
    sku.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert judge(run_dir, refs).accepted
    edit(run_dir / OUT / "GpuHplCuda" / "hpl_cuda.json",
         lambda d: d["metrics"]["tflops_per_gpu"].update(value=d["metrics"]["tflops_per_gpu"]["value"] * 0.8))
    v = judge(run_dir, refs)
    row = check_row(v, "hpl_cuda")
    assert not v.accepted and row.status == verdict.FAIL and row.expected, verdict.table(v)


# ------------------------------------------------------------------------------------------------
# No input raises past the judge: every value it reads, replaced in turn by a value of another JSON type.

OTHER_VALUES = (None, "x", [], {}, -1, True)


def _paths(doc, depth: int, prefix: tuple = ()):
    """Every key (and each list's first element) of ``doc``, ``depth`` levels down."""
    if depth == 0:
        return
    items = doc.items() if isinstance(doc, dict) else ([(0, doc[0])] if isinstance(doc, list) and doc else [])
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, depth - 1, (*prefix, key))


def _changed(doc, path: tuple, value):
    """``doc`` with the value at ``path`` replaced: the containers on the way copied, the rest shared."""
    out = copy.copy(doc)
    here = out
    for key in path[:-1]:
        here[key] = copy.copy(here[key])
        here = here[key]
    here[path[-1]] = value
    return out


def test_no_document_value_raises_past_the_judge(run_dir):
    """Each benchmark and power sampler document the judge read, in memory, with one value replaced: validate and
    judge return a verdict every time (the load stage refuses what is not schema-valid, naming the file)."""
    report = load.load_report(run_dir / layout.REPORT_FILE)
    facts = json.loads((run_dir / layout.FACTS_FILE).read_text())
    base = load.load_run(load.Run(report, facts, NODE_TYPE, SUITE), references_before_later_checks(), run_dir)
    tried = 0
    for i, case in enumerate(base.cases):
        for which in ("document", "power"):
            found = getattr(case, which)
            if found is None or found.doc is None:
                continue
            for path in _paths(found.doc, 3):
                for value in OTHER_VALUES[:4]:
                    doc = _changed(found.doc, path, value)
                    if rules.schema_problem(doc):
                        continue
                    cases = list(base.cases)
                    cases[i] = dataclasses.replace(case, **{which: dataclasses.replace(found, doc=doc)})
                    run = dataclasses.replace(base, cases=cases)
                    v = verdict.judge(run, validate.validate(run))
                    assert v.rows, (case.check, path, value)
                    tried += 1
    assert tried > 1000


@pytest.fixture
def cached_references(monkeypatch):
    """The node type loaded once (the sweeps below judge a run hundreds of times; the references do not change)."""
    monkeypatch.setattr(load, "load_node_type", functools.lru_cache(maxsize=None)(load.load_node_type))


@pytest.mark.parametrize("file", [layout.FACTS_FILE, layout.REPORT_FILE])
def test_no_value_of_the_facts_or_report_raises_past_the_judge(run_dir, file, cached_references):
    """The node facts and ReFrame's report, each value two levels down (and a GPU's or test case's, three)
    replaced in turn: the judge writes a verdict every time, and a change that leaves the facts unreadable
    rejects the node."""
    original = json.loads((run_dir / file).read_text())
    deep = {layout.FACTS_FILE: ("gpus",), layout.REPORT_FILE: ("runs",)}[file]
    paths = [p for p in _paths(original, 4) if len(p) <= 2 or (p[0] in deep and len(p) <= 4)]
    for path in paths:
        for value in OTHER_VALUES[:4]:
            (run_dir / file).write_text(json.dumps(_changed(original, path, value)))
            v = judge(run_dir)
            assert v.rows, (path, value)
    assert len(paths) > 20
