"""An ACCEPTED verdict that cannot be fooled (issue 24, item 7): every rule that can fail a node has a test here
that goes red when the rule is taken out. The input is a run recorded on the H100 that today's references accept
(docs/evidence/2026-11-23-h100-evaluation: every check of the evaluation suite), copied, with one thing changed:
a crafted figure, a document, ReFrame's record, or a reference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import EVIDENCE, REFERENCE_DIR

from gpuaccept.judge import bounds, references, verdict

ACCEPTED_RUN = EVIDENCE / "2026-11-23-h100-evaluation" / "accept" / "results" / "20261123T174108Z-evaluation"
OUT = Path("reframe") / "output" / "gpuaccept" / "node" / "builtin"
NODE_TYPE, SUITE = "h100_sxm5_80gb", "evaluation"
# Each check's document in the recorded run.
DOC = {
    "bandwidth": OUT / "GpuBandwidth" / "bandwidth.json",
    "gemm": OUT / "GpuGemm" / "gemm.json",
    "power": OUT / "GpuPower" / "power_check.json",
    "hplstyle": OUT / "GpuHplStyle" / "hplstyle.json",
    "hplstyle_power": OUT / "GpuHplStyle" / "power.json",
    "hpl_host": OUT / "HostHpl" / "hpl_host.json",
    "md_apoa1": OUT / "MdApoa1_79c8e77b" / "md_apoa1.json",
}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    copy = tmp_path / "results" / "vm" / ACCEPTED_RUN.name
    shutil.copytree(ACCEPTED_RUN, copy)
    return copy


def edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def set_metric(run: Path, doc: str, metric: str, value: float) -> None:
    edit(run / DOC[doc], lambda d: d["metrics"][metric].update(value=value))


def judge(run: Path, reference_dir: Path = REFERENCE_DIR, node_type: str = NODE_TYPE) -> verdict.Verdict:
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
# Physical bounds (gpuaccept.judge.bounds): a figure no node can measure fails, whatever its reference says.


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
    for facts_file in sorted(EVIDENCE.rglob("node-facts.json")):
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
            if check not in bounds.metric_table.METRICS:
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
# Reference values bounded the same way when loaded (gpuaccept.judge.references).


def _references_with(tmp_path: Path, file: str, check: str, metric: str, **entry) -> Path:
    """A copy of the shipped references with one entry of ``file`` changed."""
    refs = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, refs)
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
