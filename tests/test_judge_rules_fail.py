"""An ACCEPTED verdict that cannot be fooled (issue 24, item 7): every rule that can fail a node has a test here
that goes red when the rule is taken out. The input is a run recorded on the H100 that today's references accept
(docs/evidence/2026-11-23-h100-evaluation: every check of the evaluation suite of its day; judged against today's
references less the checks that came after it, judge_support.LATER_CHECKS), copied, with one thing changed: a
crafted figure, a document, ReFrame's record, or a reference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import RECORDED, REFERENCE_DIR
from judge_support import ACCEPTED_EVALUATION, DOC, edit, references_before_later_checks

from gpuaccept import metric_table, references
from gpuaccept.judge import verdict
from gpuaccept.references import bounds

NODE_TYPE, SUITE = "h100_sxm5_80gb", "evaluation"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    copy = tmp_path / "results" / "vm" / ACCEPTED_EVALUATION.name
    shutil.copytree(ACCEPTED_EVALUATION, copy)
    return copy


def set_metric(run: Path, doc: str, metric: str, value: float) -> None:
    edit(run / DOC[doc], lambda d: d["metrics"][metric].update(value=value))


def judge(run: Path, reference_dir: Path | None = None, node_type: str = NODE_TYPE) -> verdict.Verdict:
    reference_dir = reference_dir or references_before_later_checks()
    facts = json.loads((run / "node-facts.json").read_text())
    report = verdict.load_report(run / "reframe-report.json")
    return verdict.build(report, facts, reference_dir, node_type, SUITE, run_dir=run)


def check_row(v: verdict.Verdict, check: str) -> verdict.Row:
    return next(r for r in v.rows if r.check == check and r.metric is None)


def metric_row(v: verdict.Verdict, check: str, metric: str) -> verdict.Row:
    return next(r for r in v.rows if r.check == check and r.metric == metric)


def assert_rejected_by(v: verdict.Verdict, check: str, text: str) -> verdict.Row:
    """The node is rejected, and ``check`` failed with ``text`` in its reason (a counted row, not an unjudged one)."""
    row = check_row(v, check)
    assert not v.accepted, verdict.table(v)
    assert row.status == verdict.FAIL and row.expected and text in row.reason, row
    return row


def test_the_recorded_run_is_accepted_as_recorded(run):
    """The baseline of every test below: without the change, the node is ACCEPTED."""
    v = judge(run)
    assert v.accepted, verdict.table(v)


# ------------------------------------------------------------------------------------------------
# Physical bounds (gpuaccept.references.bounds): a figure no node can measure fails, whatever its reference says.


@pytest.mark.parametrize(
    ("doc", "metric", "value", "says"),
    [
        ("gemm", "fp64_tflops_min", 1e300, "fp64_tflops_min 1e+300 TFLOP/s is impossible: above 67 TFLOP/s"),
        ("gemm", "fp64_tflops_min", 68.0, "datasheet peak for fp64_tensor"),
        ("gemm", "fp8_tflops_min_peak_fraction", 1.01, "above 1 ratio"),
        ("bandwidth", "latency_h2d_max", -1.0, "latency_h2d_max -1 us is impossible: zero or negative"),
        ("bandwidth", "h2d_pinned_min", 64.0, "above 63.0154 GB/s, the rate of the PCIe link NVML reports"),
        ("bandwidth", "bidir_pinned_min", 127.0, "twice the rate of the PCIe link"),
        ("bandwidth", "h2d_pageable_min", 0.0, "h2d_pageable_min 0 GB/s is impossible: zero or negative"),
        ("bandwidth", "d2d_min", 3400.0, "memory bandwidth"),
        ("power", "idle_power_max_w", 0.0, "idle_power_max_w 0 W is impossible: zero or negative"),
        ("power", "load_power_max_w", 800.0, "maximum board power 700 W"),
        ("power", "gemm_energy_j", -14.0, "gemm_energy_j -14 J is impossible: zero or negative"),
        ("hplstyle_power", "energy_j", -1.0, "energy_j -1 J is impossible"),
        ("hplstyle", "tflops_min", 1e300, "tflops_min 1e+300 TFLOP/s is impossible"),
        ("hplstyle", "tflops_sum", 1e300, "tflops_sum 1e+300 TFLOP/s is impossible: above 67 TFLOP/s"),
        ("md_apoa1", "wall_s", 0.0, "wall_s 0 s is impossible: zero or negative"),
        ("md_apoa1", "ns_per_day", -3.0, "ns_per_day -3 ns/day is impossible"),
    ],
)
def test_a_figure_out_of_physical_bounds_fails_its_check(run, doc, metric, value, says):
    set_metric(run, doc, metric, value)
    v = judge(run)
    check = doc.removesuffix("_power")
    assert_rejected_by(v, check, says)
    row = metric_row(v, check, metric)
    assert row.status == verdict.FAIL and says in row.reason and "broken or forged" in row.reason


def test_copies_of_a_gen5_link_are_impossible_where_nvml_reports_gen4(run):
    edit(run / "node-facts.json", lambda f: [g.update(pcie_gen_max=4) for g in f["gpus"]])
    v = judge(run)
    assert_rejected_by(v, "bandwidth", "PCIe Gen4 x16")
    assert "impossible" in metric_row(v, "bandwidth", "h2d_pinned_min").reason


def test_an_impossible_figure_is_not_measured_again(run):
    """A broken or forged measurement is not a figure outside its band: gpuaccept run does not retry it."""
    set_metric(run, "gemm", "fp64_tflops_min", 1e300)
    v = judge(run)
    assert not check_row(v, "gemm").out_of_band and "gemm" not in verdict.out_of_band_checks(v)


def test_every_recorded_figure_is_within_its_physical_bounds():
    """The bounds reject no figure measured on the GPU machines: every document of every recorded run with node
    facts, against that node's datasheet and PCIe link."""
    seen = 0
    for facts_file in sorted(RECORDED.rglob("node-facts.json")):
        facts = json.loads(facts_file.read_text())
        limits = bounds.node_limits(facts, REFERENCE_DIR)
        for path in facts_file.parent.rglob("*.json"):
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict) or doc.get("schema") != "gpuaccept.bench/1":
                continue
            check = path.stem.removesuffix("_check")  # power_check.json: the power check's
            if path.stem.startswith("power_gemm"):
                check = "gemm"  # the power check's GEMM load: gpuaccept-gemm's document
            elif path.name == "power.json":
                check = "hplstyle"  # the power sampler's, joined to a sampled check
            if check not in metric_table.METRICS:
                continue
            seen += 1
            assert bounds.problems(check, doc.get("metrics") or {}, limits) == {}, path
    assert seen > 100


def test_without_a_known_datasheet_the_signs_are_still_bounded(run):
    edit(run / "node-facts.json", lambda f: [g.update(name="NVIDIA X1", pci_device_id="0x99990000") for g in f["gpus"]])
    limits = bounds.node_limits(json.loads((run / "node-facts.json").read_text()), REFERENCE_DIR)
    assert limits.datasheet is None
    assert bounds.problem("gemm", "fp64_tflops_min", 1e300, limits) is None
    assert "zero or negative" in bounds.problem("bandwidth", "latency_d2h_max", -2.0, limits)


# ------------------------------------------------------------------------------------------------
# Reference values bounded the same way when loaded (gpuaccept.references).


def _references_with(tmp_path: Path, file: str, check: str, metric: str, **entry) -> Path:
    """A copy of the shipped references with one entry of ``file`` changed."""
    refs = tmp_path / "refs"
    shutil.copytree(references_before_later_checks(), refs)
    path = refs / file
    doc = yaml.safe_load(path.read_text())
    doc["checks"][check][metric].update(entry)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return refs


@pytest.mark.parametrize(
    ("file", "check", "metric", "value", "says"),
    [
        ("gpus/h100_sxm5_80gb.yaml", "gemm", "fp64_tflops_min", 1e-9, "the smallest reference that judges anything"),
        ("gpus/h100_sxm5_80gb.yaml", "gemm", "fp64_tflops_min", 80.0, "datasheet peak for fp64_tensor"),
        ("gpus/h100_sxm5_80gb.yaml", "power", "idle_power_max_w", 1e-9, "below 1 W"),
        ("gpus/h100_sxm5_80gb.yaml", "bandwidth", "d2d_min", 5000.0, "memory bandwidth"),
        ("h100_sxm5_80gb_x8.yaml", "nccl", "allreduce_busbw_gbps_max", 1e-9, "below 0.01 GB/s"),
    ],
)
def test_a_reference_value_out_of_bounds_is_refused(tmp_path, file, check, metric, value, says):
    refs = _references_with(tmp_path, file, check, metric, value=value)
    with pytest.raises(references.ReferenceError) as err:
        references.load_all(refs)
    text = str(err.value)
    assert text.startswith(str(refs / file)) and f"checks.{check}.{metric}.value" in text and says in text, text


def test_a_node_judged_against_a_reference_of_1e_9_is_rejected(run, tmp_path):
    """The forged reference of issue 24 (1e-9 TFLOP/s, which accepted every node): the node is not accepted, and
    the verdict names the file and the key."""
    refs = _references_with(tmp_path, "gpus/h100_sxm5_80gb.yaml", "gemm", "fp64_tflops_min", value=1e-9)
    v = judge(run, refs)
    row = check_row(v, "references")
    assert not v.accepted and row.status == verdict.FAIL and "checks.gemm.fp64_tflops_min.value" in row.reason


def test_link_gates_without_a_value_still_load():
    node_type = references.load_node_type(REFERENCE_DIR, NODE_TYPE)
    gate = node_type.checks["bandwidth"]["h2d_pinned_min"]
    assert gate.link_fraction and gate.value is None


# ------------------------------------------------------------------------------------------------
# The document's device list: the GPU-count cross-check cannot be skipped by leaving it out.


@pytest.mark.parametrize("doc", ["gemm", "bandwidth", "md_apoa1"])
def test_a_gpu_document_without_its_devices_list_fails(run, doc):
    edit(run / DOC[doc], lambda d: d.pop("devices"))
    assert_rejected_by(judge(run), doc, "no 'devices' list")


def test_a_gpu_document_listing_another_number_of_gpus_fails(run):
    edit(run / DOC["gemm"], lambda d: d["devices"].append(dict(d["devices"][0], index=1)))
    assert_rejected_by(judge(run), "gemm", "the benchmark saw 2 GPUs, the node has 1")


def test_a_host_document_needs_no_devices_list(run):
    edit(run / DOC["hpl_host"], lambda d: d.pop("devices", None))
    assert judge(run).accepted


# ------------------------------------------------------------------------------------------------
# The rules that can fail a node, each with the smallest change that trips it.


def _testcase(run: Path, check: str, change) -> None:
    def apply(report: dict) -> None:
        for r in report["runs"]:
            for tc in r["testcases"]:
                if tc.get("check_key") == check:
                    change(tc)

    edit(run / "reframe-report.json", apply)


@pytest.mark.parametrize("result", ["abort", "aborted", None, "pending"])
def test_a_reframe_result_neither_pass_nor_fail_fails_the_check(run, result):
    _testcase(run, "gemm", lambda tc: tc.update(result=result))
    assert_rejected_by(judge(run), "gemm", f"ReFrame recorded no result ({result!r})")


def test_a_reframe_failure_before_sanity_fails_the_check(run):
    _testcase(run, "gemm", lambda tc: tc.update(result="fail", fail_phase="run", fail_reason="time limit exceeded"))
    assert_rejected_by(judge(run), "gemm", "run: time limit exceeded")


def test_the_tools_own_error_fails_the_check(run):
    edit(run / DOC["gemm"], lambda d: d.update(errors=["cublasLtMatmul failed: CUBLAS_STATUS_EXECUTION_FAILED"]))
    assert_rejected_by(judge(run), "gemm", "CUBLAS_STATUS_EXECUTION_FAILED")


def test_the_tools_failed_verification_fails_the_check(run):
    edit(run / DOC["gemm"], lambda d: d.update(verification={"passed": False, "failures": ["fp64: C differs"]}))
    assert_rejected_by(judge(run), "gemm", "verification failed: fp64: C differs")


def test_the_power_samplers_failed_verification_fails_the_sampled_check(run):
    edit(run / DOC["hplstyle_power"],
         lambda d: d.update(verification={"passed": False, "failures": ["energy counter went backwards"]}))  # fmt: skip
    assert_rejected_by(judge(run), "hplstyle", "power sampler: energy counter went backwards")


def test_the_power_samplers_error_fails_the_sampled_check(run):
    edit(run / DOC["hplstyle_power"], lambda d: d.update(errors=["nvmlDeviceGetTotalEnergyConsumption failed"]))
    assert_rejected_by(judge(run), "hplstyle", "power sampler: nvmlDeviceGetTotalEnergyConsumption failed")


def test_a_sampled_check_without_the_samplers_document_fails(run):
    (run / DOC["hplstyle_power"]).unlink()
    assert_rejected_by(judge(run), "hplstyle", "power sampler:")


@pytest.mark.parametrize("reason", ["unknown_0x1000", "hw_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"])
def test_clocks_held_back_by_a_fault_or_an_unknown_reason_fail_the_power_check(run, reason):
    edit(run / DOC["power"], lambda d: d["results"]["per_gpu"][0]["throttled_s"].update({reason: 2.5}))
    assert_rejected_by(judge(run), "power", f"clocks held back by {reason} for 2.5 s")


def test_the_power_cap_is_not_a_fault(run):
    edit(run / DOC["power"], lambda d: d["results"]["per_gpu"][0]["throttled_s"].update(sw_power_cap=60.0))
    assert judge(run).accepted


def _hpl_run(run: Path, change) -> None:
    edit(run / DOC["hplstyle"], lambda d: change(d["results"]["per_gpu"][0]["runs"][0]))


def test_a_missing_hpl_scaled_residual_fails(run):
    _hpl_run(run, lambda r: r.pop("scaled_residual"))
    assert_rejected_by(judge(run), "hplstyle", "no scaled residual (None)")


def test_an_hpl_residual_not_below_the_threshold_fails(run):
    _hpl_run(run, lambda r: r.update(scaled_residual=16.0))
    assert_rejected_by(judge(run), "hplstyle", "scaled residual 16 is not below 16")


@pytest.mark.parametrize(("threshold", "says"), [(None, "no finite residual threshold"), (0.0, "outside (0, 16]"),
                                                 (1e9, "outside (0, 16]")])  # fmt: skip
def test_an_hpl_threshold_that_checks_nothing_fails(run, threshold, says):
    edit(run / DOC["hplstyle"], lambda d: d["parameters"].update(threshold=threshold))
    assert_rejected_by(judge(run), "hplstyle", says)


def test_hpls_own_failed_residual_check_fails(run):
    _hpl_run(run, lambda r: r.update(residual_verdict="FAILED"))
    assert_rejected_by(judge(run), "hplstyle", "HPL's own residual check FAILED")


def test_an_hpl_document_with_no_run_fails(run):
    edit(run / DOC["hplstyle"], lambda d: d["results"]["per_gpu"][0].update(runs=[]))
    assert_rejected_by(judge(run), "hplstyle", "no HPL run recorded")


def test_a_failed_optional_check_still_rejects(run):
    """Host HPL is an optional backend on the H100: its absence rejects nothing, but a run of it that failed (HPL's
    residual check) rejects the node."""
    assert verdict.expectation(verdict.CHECKS["hpl_host"], references.load_node_type(REFERENCE_DIR, NODE_TYPE)) == (
        verdict.WHERE_INSTALLED
    )
    edit(run / DOC["hpl_host"], lambda d: d["results"]["runs"][0].update(residual_verdict="FAILED"))
    assert_rejected_by(judge(run), "hpl_host", "HPL's own residual check FAILED")


def test_a_gated_metric_without_a_reference_fails(run):
    """A gated figure of a check the node type expects, with no reference of its own (a GEMM precision the
    references never heard of, written into the GEMM document): not a pass."""
    assert "fp4_tflops_min" not in references.load_node_type(REFERENCE_DIR, NODE_TYPE).checks["gemm"]
    assert metric_table.gated("gemm", "fp4_tflops_min")
    edit(run / DOC["gemm"], lambda d: d["metrics"].update(fp4_tflops_min={"value": 900.0, "unit": "TFLOP/s"}))
    v = judge(run)
    assert_rejected_by(v, "gemm", "a metric failed its reference: fp4_tflops_min")
    assert metric_row(v, "gemm", "fp4_tflops_min").reason == "no reference value for this metric"


def test_a_reported_metric_without_a_reference_is_shown_not_failed(run):
    """A reported figure (the power sampler's energy, here written into the power check's document) with no
    reference: shown with its value, and the node is judged on the rest."""
    assert "energy_j" not in references.load_node_type(REFERENCE_DIR, NODE_TYPE).checks["power"]
    assert not metric_table.gated("power", "energy_j")
    edit(run / DOC["power"], lambda d: d["metrics"].update(energy_j={"value": 8000.0, "unit": "J"}))
    v = judge(run)
    row = metric_row(v, "power", "energy_j")
    assert v.accepted, verdict.table(v)
    assert row.status == verdict.INFO and row.value == 8000.0 and row.reason.startswith("reported: node type")


def test_a_referenced_metric_not_measured_fails(run):
    edit(run / DOC["gemm"], lambda d: d["metrics"].pop("fp64_tflops_min"))
    v = judge(run)
    assert not v.accepted and metric_row(v, "gemm", "fp64_tflops_min").reason.startswith("not measured")


def test_a_figure_in_another_unit_than_its_reference_fails(run):
    edit(run / DOC["gemm"], lambda d: d["metrics"]["fp64_tflops_min"].update(unit="GFLOP/s"))
    v = judge(run)
    assert not v.accepted and "the reference is in 'TFLOP/s'" in metric_row(v, "gemm", "fp64_tflops_min").reason


def test_a_node_type_without_references_rejects_the_node(run):
    v = judge(run, node_type="no_such_type")
    row = check_row(v, "references")
    assert not v.accepted and row.status == verdict.FAIL and "unknown node type" in row.reason


def test_a_run_in_which_nothing_ran_is_not_accepted(run, tmp_path):
    """A node type that expects no check of the suite, and a ReFrame report with no test case: every row is
    unexpected or passes (the GPU count), yet nothing ran, so nothing is accepted."""
    refs = tmp_path / "only-mpi"
    refs.mkdir()
    (refs / "only_mpi.yaml").write_text(yaml.safe_dump({
        "schema": references.SCHEMA_V1, "node_type": "only_mpi", "description": "checks of another suite only",
        "match": {"gpu_count": 1, "gpu_model": "NVIDIA H100 80GB HBM3"},
        "sources": {"s": {"kind": "synthetic", "date": "2026-11-25", "reference": "this test"}},
        "checks": {"mpi": {"host_latency_max": {"value": 2.0, "unit": "us", "upper": 0.5, "source": "s"}}},
    }))  # fmt: skip
    edit(run / "reframe-report.json", lambda r: r.update(runs=[]))
    v = judge(run, refs, "only_mpi")
    assert not v.accepted, verdict.table(v)
    row = check_row(v, "suite")
    assert row.status == verdict.NOT_RUN and "no check of the evaluation suite ran and passed" in row.reason
    assert not verdict.decide([]) and not verdict.decide([verdict.Row("x", "m", verdict.PASS)])


def test_an_expected_check_that_did_not_run_rejects_the_node(run):
    edit(run / "reframe-report.json",
         lambda r: [r_["testcases"].remove(tc) for r_ in r["runs"] for tc in list(r_["testcases"])
                    if tc.get("check_key") == "md_apoa1"])  # fmt: skip
    v = judge(run)
    row = check_row(v, "md_apoa1")
    assert not v.accepted and row.status == verdict.NOT_RUN and row.expected


def test_a_gpu_missing_from_the_node_rejects_it(run):
    edit(run / "node-facts.json", lambda f: f.update(gpus=[]))
    v = judge(run)
    assert not v.accepted and metric_row(v, "node", "gpu_count").status == verdict.FAIL
