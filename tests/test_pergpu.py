"""Every GPU judged and named: a document's ``gpu_metrics`` (docs/benchmark-json.md) give each GPU's figure of a
per-GPU metric a row of its own, which names the GPU by the node facts' index, PCI bus id and serial.

No 4-GPU run is recorded yet: the documents and node facts here are BUILT IN CODE (``gemm_document``,
``FACTS``), shaped as gpuaccept-gemm, gpuaccept-bw, gpuaccept-hplstyle, gpuaccept powercheck and gpuaccept health
write them, with one GPU made 20 % slow by the test itself (``SLOW``). Documents without ``gpu_metrics`` (every
recorded run) are judged as before: tests/test_judge.py re-judges them all."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from conftest import RECORDED, REFERENCE_DIR
from judge_support import ref_entry

from gpuaccept import metric_table
from gpuaccept.checks import CHECKS
from gpuaccept.judge import exporter, load, pergpu, rules, summarize, validate, verdict
from gpuaccept.probe import document, health, peaks, powercheck
from gpuaccept.references import SCHEMA_V1, load_node_type
from gpuaccept.results import baseline, compare

NODE_TYPE = "h100_sxm5_80gb_x4"
# The node facts of a 4 x H100 node, built here: NVML's index, bus id and serial of each GPU.
BUS = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0"]
SERIALS = ["1651326138922", "1652824197575", "1752624021474", "1654021377413"]
FACTS = {
    "hostname": "hgx-test",
    "gpu_source": "nvml",
    "driver_version": "580.159.04",
    "gpus": [
        {"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": BUS[i], "pci_device_id": "0x233010DE",
         "serial": SERIALS[i], "uuid": f"GPU-test-{i}", "pcie_gen_max": 5, "pcie_width_max": 16,
         "pcie_gen_current": 5, "pcie_width_current": 16}
        for i in range(4)
    ],
}  # fmt: skip
SLOW = 1  # the GPU this test makes 20 % slow
HEALTHY_FP64 = [53.0, 53.4, 52.9, 53.2]  # TFLOP/s per GPU: the H100's reference is 53.13 -4.76 %


def devices(order: list[int] | None = None) -> list[dict]:
    """The document's devices as CUDA numbers them (``order``: the facts' GPU behind each CUDA index)."""
    order = order or [0, 1, 2, 3]
    return [{"index": cuda, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "0000:" + BUS[nvml][9:].lower(),
             "uuid": f"GPU-test-{nvml}"} for cuda, nvml in enumerate(order)]  # fmt: skip


def metric(value: float, unit: str = "TFLOP/s", better: str = "higher") -> dict:
    return {"value": value, "unit": unit, "better": better}


def gemm_document(fp64: list[float], order: list[int] | None = None) -> dict:
    """A gpuaccept-gemm document of fp64 on 4 GPUs, every GPU's window and with-transfer rate per GPU."""
    xfer = [r * 0.8 for r in fp64]
    return {
        "schema": "gpuaccept.bench/1",
        "tool": "gpuaccept-gemm",
        "devices": devices(order),
        "metrics": {
            "fp64_tflops_min": metric(min(fp64)),
            "fp64_xfer_tflops_min": metric(min(xfer)),
            "fp64_concurrent_tflops_min": metric(min(fp64)),
        },
        "gpu_metrics": [
            {"gpu": i, "metrics": {"fp64_tflops_min": metric(fp64[i]), "fp64_xfer_tflops_min": metric(xfer[i])}}
            for i in range(4)
        ],
        "waived": {},
        "verification": {"passed": True, "checked": 8, "failures": []},
        "errors": [],
    }


def slow(values: list[float], gpu: int = SLOW, loss: float = 0.20) -> list[float]:
    """``values`` with one GPU's ``loss`` lower: the degraded GPU of these tests."""
    return [v * (1 - loss) if i == gpu else v for i, v in enumerate(values)]


KEEP = {
    "gemm": ("fp64_tflops_min", "fp64_xfer_tflops_min", "fp64_concurrent_tflops_min"),
    "bandwidth": ("d2d_min", "h2d_pinned_min"),
    "hplstyle": ("tflops_min", "tflops_sum", "residual_max"),
    "power": ("idle_power_max_w", "load_power_min_w", "load_power_max_w", "gflops_per_watt", "gemm_energy_j"),
    "health": ("pcie_gen_min", "pcie_width_min", "health_findings", "xid_events"),
}


def reference_dir(out: Path, checks: tuple[str, ...]) -> Path:
    """The 4 x H100 node type reduced to ``checks`` and to the metrics these documents measure (KEEP), its values
    as shipped: a self-contained reference file, so that the node type expects these checks alone."""
    shipped = load_node_type(REFERENCE_DIR, NODE_TYPE)
    doc = {"schema": SCHEMA_V1, "node_type": NODE_TYPE, "description": "4 x H100, built by tests/test_pergpu.py",
           "match": shipped.match, "sources": shipped.sources, **shipped.extra,
           "checks": {c: {m: ref_entry(shipped.checks[c][m]) for m in KEEP[c]} for c in checks}}  # fmt: skip
    out.mkdir()
    (out / f"{NODE_TYPE}.yaml").write_text(yaml.safe_dump(json.loads(json.dumps(doc)), sort_keys=False))
    return out


@pytest.fixture
def refdir(tmp_path: Path) -> Path:
    """A node type that expects gemm alone."""
    return reference_dir(tmp_path / "refs", ("gemm",))


def judge(docs: dict[str, dict], refdir: Path, tmp_path: Path, suite: str = "commission",
          facts: dict | None = None) -> verdict.Verdict:  # fmt: skip
    """The verdict of these documents as the judge's stages give it: loaded, validated, judged."""
    run = load.load_run(load.Run(None, facts or FACTS, NODE_TYPE, suite), refdir)
    for check, doc in docs.items():
        path = tmp_path / CHECKS[check].result_file
        path.write_text(json.dumps(doc))
        run.cases.append(load.Case(check, {"result": "pass"}, document=load.Document(path, rules.load_document(path))))
    return verdict.judge(run, validate.validate(run))


def rows_of(v: verdict.Verdict, check: str, name: str) -> list[verdict.Row]:
    return [r for r in v.rows if r.check == check and r.metric == name]


def check_row(v: verdict.Verdict, check: str) -> verdict.Row:
    return next(r for r in v.rows if r.check == check and r.metric is None)


# ------------------------------------------------------------------------------------------------
# The judge: one row per GPU.


def test_one_slow_gpu_rejects_the_node_naming_that_gpu_alone(refdir, tmp_path):
    v = judge({"gemm": gemm_document(slow(HEALTHY_FP64))}, refdir, tmp_path)
    assert not v.accepted and v.failed_checks() == ["gemm"]
    rows = rows_of(v, "gemm", "fp64_tflops_min")
    assert [r.gpu for r in rows] == [0, 1, 2, 3]
    assert [r.status for r in rows] == ["pass", "fail", "pass", "pass"]
    failed = rows[SLOW]
    assert failed.value == pytest.approx(53.4 * 0.8)
    assert failed.reason.startswith(f"GPU 1 (bus {BUS[1]}, serial {SERIALS[1]}): below 50.")
    reason = check_row(v, "gemm").reason
    assert reason == f"a metric failed its reference: fp64_tflops_min on GPU 1 (bus {BUS[1]}, serial {SERIALS[1]})"
    assert all(SERIALS[i] not in reason for i in (0, 2, 3))
    # The aggregate the tool wrote (the min over the GPUs) is not judged a second time.
    assert not [r for r in rows if r.gpu is None]
    text = verdict.table(v)
    assert f"GPU 1 (bus {BUS[1]}, serial {SERIALS[1]}): below" in " ".join(text.split())
    assert text.splitlines()[-1].endswith("REJECTED; failed or not run: gemm")


def test_the_same_node_with_every_gpu_healthy_is_accepted(refdir, tmp_path):
    v = judge({"gemm": gemm_document(HEALTHY_FP64)}, refdir, tmp_path)
    assert v.accepted, verdict.table(v)
    rows = rows_of(v, "gemm", "fp64_tflops_min")
    assert [(r.gpu, r.status) for r in rows] == [(0, "pass"), (1, "pass"), (2, "pass"), (3, "pass")]
    # Node-level metrics stay one row; informational per-GPU figures are shown per GPU.
    assert [r.gpu for r in rows_of(v, "gemm", "fp64_concurrent_tflops_min")] == [None]
    assert [(r.gpu, r.status) for r in rows_of(v, "gemm", "fp64_xfer_tflops_min")] == [(i, "info") for i in range(4)]


def test_a_gpu_is_named_as_the_node_facts_number_it_whatever_cuda_calls_it(refdir, tmp_path):
    """CUDA may number the GPUs otherwise than NVML: the document's device 1 is here the facts' GPU 3."""
    order = [0, 3, 1, 2]
    values = slow(HEALTHY_FP64, gpu=1)
    v = judge({"gemm": gemm_document(values, order)}, refdir, tmp_path)
    failed = [r for r in rows_of(v, "gemm", "fp64_tflops_min") if r.status == "fail"]
    assert [r.gpu for r in failed] == [3] and f"GPU 3 (bus {BUS[3]}, serial {SERIALS[3]})" in failed[0].reason


def test_a_document_that_leaves_a_gpu_out_fails_that_gpu(refdir, tmp_path):
    doc = gemm_document(HEALTHY_FP64)
    del doc["gpu_metrics"][2]["metrics"]["fp64_tflops_min"]
    v = judge({"gemm": doc}, refdir, tmp_path)
    rows = rows_of(v, "gemm", "fp64_tflops_min")
    assert [(r.gpu, r.status) for r in rows] == [(0, "pass"), (1, "pass"), (3, "pass"), (2, "fail")]
    gpu2 = f"GPU 2 (bus {BUS[2]}, serial {SERIALS[2]})"
    assert rows[-1].reason == f"{gpu2}: not measured: the document has no figure of this GPU"
    assert not v.accepted


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d["gpu_metrics"].append({"gpu": 7, "metrics": {}}), "figures of GPU 7, which is not among"),
        (lambda d: d["gpu_metrics"].append(copy.deepcopy(d["gpu_metrics"][0])), "lists GPU 0 twice"),
    ],
)
def test_gpu_metrics_that_do_not_match_the_devices_fail_the_check(refdir, tmp_path, change, says):
    doc = gemm_document(HEALTHY_FP64)
    change(doc)
    row = check_row(judge({"gemm": doc}, refdir, tmp_path), "gemm")
    assert row.status == "fail" and says in row.reason and "gemm.json" in row.reason


def test_gpu_metrics_that_break_the_schema_fail_the_check(refdir, tmp_path):
    doc = gemm_document(HEALTHY_FP64)
    doc["gpu_metrics"][0]["metrics"]["fp64_tflops_min"]["value"] = "53"
    path = tmp_path / "gemm.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(rules.DocumentError, match="at gpu_metrics/0/metrics/fp64_tflops_min/value"):
        rules.load_document(path)


def test_one_gpus_impossible_figure_fails_it_with_the_physical_bound(refdir, tmp_path):
    values = HEALTHY_FP64.copy()
    values[2] = 1e6  # above the H100's FP64 tensor core peak: a broken or forged figure, whatever the band
    v = judge({"gemm": gemm_document(values)}, refdir, tmp_path)
    row = rows_of(v, "gemm", "fp64_tflops_min")[2]
    assert row.status == "fail" and row.reason.startswith(f"GPU 2 (bus {BUS[2]}, serial {SERIALS[2]}): ")
    assert "is impossible: above 67 TFLOP/s" in row.reason
    assert "is impossible" in check_row(v, "gemm").reason


def test_a_document_without_gpu_metrics_is_judged_as_its_aggregates(refdir, tmp_path):
    doc = gemm_document(slow(HEALTHY_FP64))
    del doc["gpu_metrics"]
    v = judge({"gemm": doc}, refdir, tmp_path)
    rows = rows_of(v, "gemm", "fp64_tflops_min")
    assert len(rows) == 1 and rows[0].gpu is None and rows[0].status == "fail"
    assert rows[0].reason.startswith("below ") and "GPU" not in rows[0].reason
    assert "gpu" not in verdict.table(v).splitlines()[0].split()  # no gpu column without per-GPU rows
    assert check_row(v, "gemm").reason == "a metric failed its reference: fp64_tflops_min"


def test_a_recorded_run_has_no_per_gpu_rows():
    """Every recorded run predates gpu_metrics: judged again, no row names a GPU (tests/test_judge.py checks
    their statuses)."""
    run = next((RECORDED / "2026-11-22-h100-integrated" / "fourth").glob("results/localhost/*-commission"))
    _, v = summarize.rejudge(run, REFERENCE_DIR)
    assert all(r.gpu is None for r in v.rows)
    assert verdict.Verdict.from_json(json.loads((run / "verdict.json").read_text())).rows[0].gpu is None


# ------------------------------------------------------------------------------------------------
# The other per-GPU checks: bandwidth, hplstyle, power, health.


def bandwidth_document(d2d: list[float]) -> dict:
    return {
        "schema": "gpuaccept.bench/1", "tool": "gpuaccept-bw", "devices": devices(),
        "metrics": {"d2d_min": metric(min(d2d), "GB/s"), "h2d_pinned_min": metric(54.0, "GB/s")},
        "gpu_metrics": [{"gpu": i, "metrics": {"d2d_min": metric(d2d[i], "GB/s"),
                                               "h2d_pinned_min": metric(54.0 + i / 10, "GB/s")}} for i in range(4)],
        "waived": {}, "verification": {"passed": True, "checked": 4, "failures": []}, "errors": [],
    }  # fmt: skip


def hplstyle_document(rates: list[float]) -> dict:
    runs = [{"seconds": 13.5, "gflops": r * 1e3, "tflops": r, "scaled_residual": 0.003, "passed": True} for r in rates]
    return {
        "schema": "gpuaccept.bench/1", "tool": "gpuaccept-hplstyle", "devices": devices(),
        "parameters": {"threshold": 16.0},
        "results": {"per_gpu": [{"gpu": i, "runs": [runs[i]]} for i in range(4)]},
        "metrics": {"tflops_min": metric(min(rates)), "tflops_sum": metric(sum(rates)),
                    "residual_max": metric(0.003, "ratio", "lower")},
        "gpu_metrics": [{"gpu": i, "metrics": {"tflops_min": metric(rates[i]),
                                               "residual_max": metric(0.003, "ratio", "lower")}} for i in range(4)],
        "waived": {}, "verification": {"passed": True, "checked": 4, "failures": []}, "errors": [],
    }  # fmt: skip


def power_document(load_w: list[float]) -> dict:
    per = [{"idle_power_max_w": metric(71.0, "W", "lower"), "load_power_min_w": metric(w, "W"),
            "load_power_max_w": metric(w, "W", "lower"), "gflops_per_watt": metric(53.0e3 / w * 1.02, "GFLOP/s/W"),
            "gemm_energy_j": metric(w * 0.0204, "J", "lower")} for w in load_w]  # fmt: skip
    return {
        "schema": "gpuaccept.bench/1", "tool": "gpuaccept-powercheck", "devices": devices(),
        "results": {"per_gpu": [{"gpu": i, "throttled_s": {"sw_power_cap": 5.0}} for i in range(4)]},
        "metrics": {
            "idle_power_max_w": metric(71.0, "W", "lower"), "load_power_min_w": metric(min(load_w), "W"),
            "load_power_max_w": metric(max(load_w), "W", "lower"),
            "gflops_per_watt": metric(min(p["gflops_per_watt"]["value"] for p in per), "GFLOP/s/W"),
            "gemm_energy_j": metric(max(p["gemm_energy_j"]["value"] for p in per), "J", "lower"),
        },
        "gpu_metrics": [{"gpu": i, "metrics": per[i]} for i in range(4)],
        "waived": {}, "verification": {"passed": True, "checked": 4, "failures": []}, "errors": [],
    }  # fmt: skip


def health_document(processes: dict[int, list[dict]] | None = None) -> dict:
    processes = processes or {}
    gpus = [{"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": BUS[i], "serial": SERIALS[i],
             "uuid": f"GPU-test-{i}", "pcie_gen_max": 5, "pcie_width_max": 16, "pcie_gen_loaded": 5,
             "pcie_width_loaded": 16, "ecc_enabled": True, "persistence_mode": True, "nvlink_up": 0,
             "processes": processes.get(i, [])} for i in range(4)]  # fmt: skip
    return {
        "schema": "gpuaccept.bench/1", "tool": "gpuaccept-health",
        "devices": [{k: g[k] for k in ("index", "name", "pci_bus_id", "uuid", "serial")} for g in gpus],
        "results": {"observations": {"source": "nvml", "driver_version": "580.159.04", "cuda_version": "13.0",
                                     "gpus": gpus, "pcie_load": {"ran": True}},
                    "kernel_log": {"read_with": "dmesg", "xid_events": []}},
        "metrics": {"pcie_gen_min": metric(5, "count"), "pcie_width_min": metric(16, "count"),
                    "xid_events": metric(0, "count", "lower")},
        "gpu_metrics": [{"gpu": i, "metrics": {"pcie_gen_min": metric(5, "count"),
                                               "pcie_width_min": metric(16, "count"),
                                               "xid_events": metric(0, "count", "lower")}} for i in range(4)],
        "waived": {}, "verification": {"passed": True, "checked": 4, "failures": []}, "errors": [],
    }  # fmt: skip


def test_every_per_gpu_check_names_the_slow_gpu_alone(refdir, tmp_path):
    """bandwidth's D2D, hplstyle's rate and power under load, each 20 % low on GPU 1: each check fails naming
    GPU 1, and every other GPU's row of those metrics passes."""
    docs = {
        "gemm": gemm_document(slow(HEALTHY_FP64)),
        "bandwidth": bandwidth_document(slow([1504.0, 1506.0, 1503.0, 1505.0])),
        "hplstyle": hplstyle_document(slow([40.9, 41.1, 40.8, 41.0])),
        "power": power_document(slow([697.0, 698.0, 696.0, 697.5])),
        "health": health_document(),
    }
    v = judge(docs, reference_dir(tmp_path / "all", tuple(KEEP)), tmp_path)
    assert not v.accepted and v.failed_checks() == ["bandwidth", "gemm", "hplstyle", "power"]
    for check, name in (("gemm", "fp64_tflops_min"), ("bandwidth", "d2d_min"), ("hplstyle", "tflops_min"),
                        ("power", "load_power_min_w")):  # fmt: skip
        rows = rows_of(v, check, name)
        assert [(r.gpu, r.status) for r in rows] == [(0, "pass"), (1, "fail"), (2, "pass"), (3, "pass")], check
        assert f"GPU 1 (bus {BUS[1]}, serial {SERIALS[1]})" in check_row(v, check).reason
    for check in ("gemm", "bandwidth", "hplstyle", "power"):
        failed = [r for r in v.rows if r.check == check and r.status == "fail" and r.metric]
        assert {r.gpu for r in failed} == {SLOW}, check
    assert check_row(v, "health").status == "pass"
    assert [r.gpu for r in rows_of(v, "health", "health_findings")] == [0, 1, 2, 3]
    text = verdict.table(v)  # with its gpu column, the table still fits a 120-column terminal
    assert text.splitlines()[0].split()[:3] == ["check", "metric", "gpu"]
    assert all(len(line) <= verdict.WIDTH for line in text.splitlines()[:-1])


def test_a_foreign_process_is_a_health_finding_of_its_gpu_alone(refdir, tmp_path):
    docs = {"health": health_document({SLOW: [{"pid": 4242, "user": "alice", "name": "python3"}]})}
    v = judge(docs, reference_dir(tmp_path / "health", ("health",)), tmp_path)
    findings = rows_of(v, "health", "health_findings")
    assert [(r.gpu, r.value) for r in findings] == [(0, 0.0), (1, 1.0), (2, 0.0), (3, 0.0)]
    row = check_row(v, "health")
    assert row.status == "fail" and f"GPU 1 (bus {BUS[1]}, serial {SERIALS[1]}): compute process pid 4242" in row.reason
    assert [r.gpu for r in rows_of(v, "health", "pcie_gen_min")] == [0, 1, 2, 3]


def test_pergpu_identify_matches_by_bus_id():
    gpus = pergpu.identify(devices([2, 0, 3, 1]), FACTS)
    assert [gpus[i].index for i in range(4)] == [2, 0, 3, 1]
    assert gpus[0].label == f"GPU 2 (bus {BUS[2]}, serial {SERIALS[2]})"
    assert pergpu.identify([{"index": 0, "pci_bus_id": "0000:99:00.0"}], FACTS)[0].label == (
        "GPU 0 (bus 0000:99:00.0, serial unknown)")  # fmt: skip
    assert pergpu.bus_key("00000000:2A:00.0") == pergpu.bus_key("0000:2a:00.0") == "0000:2a:00.0"


# ------------------------------------------------------------------------------------------------
# What reads the rows: retries, Prometheus, compare, baseline, sensitivity's hook.


def test_a_retry_keeps_the_gpu_in_what_the_earlier_attempt_measured(refdir, tmp_path):
    first = judge({"gemm": gemm_document(slow(HEALTHY_FP64))}, refdir, tmp_path)
    again = judge({"gemm": gemm_document(HEALTHY_FP64)}, refdir, tmp_path)
    merged = verdict.merge_retry(first, again, ["gemm"], 2)
    assert merged.accepted
    warning = check_row(merged, "gemm").warning
    assert warning.startswith("passed on attempt 2; earlier: fp64_tflops_min of GPU 1 42.72 TFLOP/s (GPU 1 (bus")


def test_prometheus_series_of_per_gpu_rows_carry_a_gpu_label(refdir, tmp_path):
    v = judge({"gemm": gemm_document(slow(HEALTHY_FP64))}, refdir, tmp_path)
    text = exporter.render(v)
    passed = [line for line in text.splitlines() if line.startswith("gpuaccept_metric_passed{")]
    per_gpu = [line for line in passed if 'metric="fp64_tflops_min"' in line]
    assert len(per_gpu) == 4 and all('gpu="' in line for line in per_gpu)
    assert any('gpu="1"' in line and line.endswith(" 0.0") for line in per_gpu)
    assert sum(line.endswith(" 1.0") for line in per_gpu) == 3
    # The node's own series have no GPU: an empty label, which Prometheus stores as no label.
    concurrent = [line for line in text.splitlines() if 'metric="fp64_concurrent_tflops_min"' in line]
    assert concurrent and all('gpu=""' in line for line in concurrent)
    old = exporter.render(judge({"gemm": {k: v for k, v in gemm_document(HEALTHY_FP64).items() if k != "gpu_metrics"}},
                                refdir, tmp_path))  # fmt: skip
    assert "gpu=" not in old


def test_compare_keeps_each_gpu_apart(refdir, tmp_path):
    v = judge({"gemm": gemm_document(slow(HEALTHY_FP64))}, refdir, tmp_path)
    path = tmp_path / "run" / "verdict.json"
    path.parent.mkdir()
    path.write_text(json.dumps(v.to_json()))
    devs = [d for d in compare.deviations([(path, v.to_json())]) if d.metric == "fp64_tflops_min"]
    assert [(d.gpu, d.outside) for d in devs][:1] == [(1, True)] and len(devs) == 4
    assert "gemm.fp64_tflops_min[gpu 1]" in compare.table(devs)


def test_a_baseline_from_per_gpu_figures_passes_the_lowest_healthy_gpu(tmp_path):
    """Five runs of a 4-GPU node: the proposal's band is placed on every GPU's figure, so it passes the slowest
    healthy GPU (not only the minimum the aggregate shows, which it would pass too, but also no higher)."""
    docs = []
    for run in range(5):
        values = [53.0 + run * 0.05, 53.6, 52.6 - run * 0.02, 53.3]
        doc = gemm_document(values)
        doc["started_utc"] = f"2026-11-27T0{run}:00:00Z"
        docs.append(doc)
    checks, stats = baseline.derive({"gemm": docs}, "test-runs")
    entry = checks["gemm"]["fp64_tflops_min"]
    floor = entry["value"] * (1 - entry["lower"])
    lowest = min(v for d in docs for g in d["gpu_metrics"] for v in [g["metrics"]["fp64_tflops_min"]["value"]])
    assert floor <= lowest and stats["gemm.fp64_tflops_min"]["runs"] == 20
    assert entry["value"] == pytest.approx(53.15, abs=0.2)  # the median of every GPU's figure


# ------------------------------------------------------------------------------------------------
# The Python probes' gpu_metrics.


def test_the_power_check_writes_each_gpus_figures():
    """From the sampler documents recorded on the H100 (one GPU): its row's figures, each in gpu_metrics."""
    power = RECORDED / "2026-11-22-h100-power"
    idle, load_doc, gemm = (json.loads((power / n).read_text()) for n in ("idle-nvml.json", "gemm-nvml.json",
                                                                            "gemm-nvml-bench.json"))  # fmt: skip
    metrics, _waived, _f, rows = powercheck.measure(idle, load_doc, {0: gemm}, "fp64", {"how": "not available"})
    (entry,) = document.gpu_metrics(rows, metrics, powercheck.GPU_FIGURES)
    assert entry["gpu"] == 0 and set(entry["metrics"]) == set(powercheck.GPU_FIGURES)
    for name in ("idle_power_max_w", "load_power_min_w", "load_power_max_w", "gflops_per_watt", "gemm_energy_j"):
        assert entry["metrics"][name]["value"] == pytest.approx(metrics[name]["value"]), name
    assert entry["metrics"]["load_energy_j"]["value"] == pytest.approx(metrics["load_energy_j"]["value"])


def test_the_health_probe_counts_each_gpus_xid_events_by_its_bus():
    obs = health_document()["results"]["observations"]
    xids = [{"pci": "0000:2a:00", "xid": 79}, {"pci": "0000:2a:00", "xid": 45}, {"pci": "0000:5d:00", "xid": 13},
            {"pci": "0000:99:00", "xid": 13}]  # the last on a PCI device that is no GPU of the node
    metrics, _waived = health.metrics_of(obs, xids)
    entries = document.gpu_metrics(health.gpu_rows(obs, xids), metrics, health.GPU_FIGURES)
    assert [e["metrics"]["xid_events"]["value"] for e in entries] == [0, 2, 0, 1]
    assert metrics["xid_events"]["value"] == 4
    assert [e["metrics"]["pcie_width_min"]["value"] for e in entries] == [16] * 4
    # NVLink: each GPU's links up (GPU 2 with one link down), the metric their min.
    for g in obs["gpus"]:
        g["nvlink"] = {"supported": True, "links": [{"state": "up"}] * (17 if g["index"] == 2 else 18)}
    metrics, _waived = health.metrics_of(obs, xids)
    entries = document.gpu_metrics(health.gpu_rows(obs, xids), metrics, health.GPU_FIGURES)
    assert [e["metrics"]["nvlink_links_up_min"]["value"] for e in entries] == [18, 18, 17, 18]
    assert metrics["nvlink_links_up_min"]["value"] == 17
    # The kernel log unread: no XID figure at all, per GPU or for the node.
    assert "xid_events" not in document.gpu_metrics(health.gpu_rows(obs, None), health.metrics_of(obs, None)[0],
                                                    health.GPU_FIGURES)[0]["metrics"]  # fmt: skip


def test_peak_fractions_are_added_per_gpu(tmp_path):
    doc = gemm_document(slow(HEALTHY_FP64))
    doc["parameters"] = {"schedule": "together"}
    annotated = peaks.annotate(doc, peaks.load(REFERENCE_DIR / peaks.DEFAULT_PATH), "gpu_peaks.yaml")
    fractions = [g["metrics"]["fp64_tflops_min_peak_fraction"]["value"] for g in annotated["gpu_metrics"]]
    assert fractions[1] == pytest.approx(annotated["metrics"]["fp64_tflops_min_peak_fraction"]["value"])
    assert fractions[0] == pytest.approx(53.0 / 67.0)


def test_the_metric_table_agrees_with_the_per_gpu_documents():
    """Every per-GPU figure the documents built here carry is of a per-GPU metric, in its unit."""
    for check, doc in (("gemm", gemm_document(HEALTHY_FP64)), ("bandwidth", bandwidth_document([1500.0] * 4)),
                       ("hplstyle", hplstyle_document([41.0] * 4)), ("power", power_document([697.0] * 4)),
                       ("health", health_document())):  # fmt: skip
        assert metric_table.document_problems(check, doc) == [], check
    doc = gemm_document(HEALTHY_FP64)
    doc["gpu_metrics"][0]["metrics"]["fp64_concurrent_tflops_min"] = metric(53.0)
    doc["gpu_metrics"][1]["metrics"]["fp64_tflops_min"]["unit"] = "GFLOP/s"
    assert metric_table.document_problems("gemm", doc) == [
        "gemm.fp64_concurrent_tflops_min: a node-level metric, with a figure of GPU 0",
        "gemm.fp64_tflops_min of GPU 1: unit 'GFLOP/s', the metric's unit is 'TFLOP/s'",
    ]
