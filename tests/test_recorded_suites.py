"""The health probe's NVML readings and the nightly suite as recorded on the H100
(docs/evidence/2026-11-22-h100-suites): the rules re-judge them to the same result, and one changed field makes
them fail."""

import copy
import json

import pytest
from conftest import RECORDED, REFERENCE_DIR

from gpuaccept import references
from gpuaccept.judge import health_rules, verdict
from gpuaccept.probe import powercheck

SUITES = RECORDED / "2026-11-22-h100-suites"
RUN1 = SUITES / "run1"
NIGHTLY_OLD_BW = RUN1 / "results" / "localhost" / "20261122T065514Z-nightly"
GPU = "GPU 0 (bus 00000000:00:06.0, serial 1653723041302): "


@pytest.fixture(scope="module")
def expect():
    return health_rules.expectations(references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb"))


def test_recorded_nvml_health_readings_rejudge_healthy(expect):
    doc = json.loads((RUN1 / "health-idle.json").read_text())
    obs = doc["results"]["observations"]
    assert obs["source"] == "nvml" and doc["verification"]["passed"] is True
    g = obs["gpus"][0]
    assert (g["pcie_gen_loaded"], g["pcie_width_loaded"]) == (5, 16) and obs["pcie_load"]["ran"] is True
    assert g["ecc_enabled"] is True and g["persistence_mode"] is True and g["processes"] == []
    findings, _ = health_rules.judge(obs, expect, [(1, "the inventory")], doc["results"]["kernel_log"]["xid_events"])
    assert findings == []


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("pcie_width_loaded", 8, "PCIe link at x8 under load, expected x16"),
        ("ecc_uncorrectable_volatile", 1, "1 uncorrectable ECC errors since the driver loaded"),
        ("persistence_mode", False, "persistence mode is disabled"),
    ],
)
def test_recorded_nvml_readings_with_a_changed_field_fail(expect, field, value, says):
    obs = copy.deepcopy(json.loads((RUN1 / "health-idle.json").read_text())["results"]["observations"])
    obs["gpus"][0][field] = value
    findings, _ = health_rules.judge(obs, expect, [(1, "the inventory")], [])
    (finding,) = findings
    assert finding.message.startswith(GPU + says) and finding.fix


def test_recorded_foreign_process_is_named_with_pid_and_user(expect):
    doc = json.loads((RUN1 / "health-foreign.json").read_text())
    (finding,) = doc["results"]["findings"]
    assert finding["rule"] == "foreign_process" and finding["serial"] == "1653723041302"
    assert finding["message"].startswith(GPU + "compute process pid 851 of user root (python3 -c import time")
    assert doc["verification"]["passed"] is False and doc["metrics"]["health_findings"]["value"] == 1
    # Recorded before issue 17, the document holds the process's command line. Judged today, the same
    # observations name it by pid, user and executable only (this recording has no executable name).
    (rejudged,), _ = health_rules.judge(doc["results"]["observations"], expect, [(1, "the inventory")], [])
    assert rejudged.message == GPU + "compute process pid 851 of user root (executable unknown) runs on it"
    assert {k: v for k, v in rejudged.record().items() if k != "message"} == {
        k: v for k, v in finding.items() if k != "message"
    }
    assert "851" in (RUN1 / "foreign-process.csv").read_text()


def test_recorded_nightly_power_check_rejudges_to_its_metrics():
    out = NIGHTLY_OLD_BW / "reframe" / "output" / "gpuaccept" / "node" / "builtin" / "GpuPower"
    doc = json.loads((out / "power_check.json").read_text())
    gemm = {0: json.loads((out / "power_gemm_0.json").read_text())}
    r = doc["results"]
    metrics, waived, failures, _rows = powercheck.measure(r["idle"], r["load"], gemm, "fp64", r["host_power"])
    assert failures == [] and set(waived) == {"host_power_load_w"}
    assert {k: v["value"] for k, v in metrics.items()} == {k: v["value"] for k, v in doc["metrics"].items()}
    assert r["settle"]["settled"] is True
    assert 690 < metrics["load_power_min_w"]["value"] <= 700


def test_recorded_nightly_with_the_old_bandwidth_options_is_rejected_on_bandwidth_only():
    report = verdict.load_report(NIGHTLY_OLD_BW / "reframe-report.json")
    node = json.loads((NIGHTLY_OLD_BW / "node-facts.json").read_text())
    v = verdict.build(report, node, REFERENCE_DIR, "h100_sxm5_80gb", "nightly", run_dir=NIGHTLY_OLD_BW)
    checks = {r.check: r.status for r in v.rows if r.metric is None}
    assert checks == {"bandwidth": "fail", "gemm": "pass", "health": "pass", "power": "pass"}
    # The failed check's stage directory was not kept: its document is missing, and ReFrame's record names d2d.
    bandwidth = next(r for r in v.rows if r.check == "bandwidth")
    assert "bandwidth.json: the benchmark document is missing" in bandwidth.reason
    assert "d2d_min" in bandwidth.reason and not v.accepted
    units = {r.metric: r.unit for r in v.rows if r.check == "power" and r.metric}
    assert units["idle_power_max_w"] == "W" and units["gflops_per_watt"] == "GFLOP/s/W"


def test_recorded_nightly_with_the_final_options_is_accepted_with_every_check():
    run = SUITES / "run2" / "results" / "localhost" / "20261122T070352Z-nightly"
    report = verdict.load_report(run / "reframe-report.json")
    node = json.loads((run / "node-facts.json").read_text())
    v = verdict.build(report, node, REFERENCE_DIR, "h100_sxm5_80gb", "nightly", run_dir=run)
    checks = {r.check: r.status for r in v.rows if r.metric is None}
    assert checks == {"bandwidth": "pass", "gemm": "pass", "health": "pass", "power": "pass"}
    assert v.accepted
    assert "wall 117.7 s" in (SUITES / "run2" / "walls.txt").read_text()
