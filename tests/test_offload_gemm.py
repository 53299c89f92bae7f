"""The crossover of transfer-inclusive GEMM against the host's BLAS (gpuaccept.probe.offload, run by
``gpuaccept annotate offload``). The documents here are hand-built with round numbers (no GPU or host output):
nothing is asserted about timings a machine gave."""

import json
import math
import subprocess
import sys

import pytest
from conftest import ROOT

from gpuaccept.probe import offload


def case(prec: str, n: int, kernel: float, pinned: float, pageable: float, verified: bool = True) -> dict:
    """A gpuaccept-xgemm case with the given GFLOP/s per mode."""
    return {
        "precision": prec, "n": n, "run": True, "verified": verified,
        "kernel": {"gflops": kernel}, "pinned": {"gflops": pinned}, "pageable": {"gflops": pageable},
        "pinned_over_kernel": pinned / kernel, "pageable_over_kernel": pageable / kernel,
    }


def xgemm_doc(*cases: dict) -> dict:
    return {"schema": "gpuaccept.bench/1", "tool": "gpuaccept-xgemm", "results": {"cases": list(cases)}, "metrics": {},
            "waived": {}}


def cpugemm_doc(rows: list[tuple[str, int, float]], threads: int = 16) -> dict:
    return {"schema": "gpuaccept.bench/1", "tool": "gpuaccept-cpugemm", "results": {"cpu_gemm": [
        {"precision": p, "n": n, "threads": threads, "gflops_median": gf, "verified": True} for p, n, gf in rows]}}


def annotate(*args: str) -> subprocess.CompletedProcess:
    """``gpuaccept annotate offload ARGS`` in a process of its own."""
    return subprocess.run([sys.executable, "-m", "gpuaccept", "annotate", "offload", *args], capture_output=True,
                          text=True, check=False, cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src"), "LC_ALL": "C"})


def test_crossover_is_interpolated_in_log_n():
    # ln(gpu/host): -ln 2 at n=1000, +ln 2 at n=4000: zero half-way in ln n, at n = 2000.
    cx = offload.crossover([(1000, 50.0, 100.0), (4000, 200.0, 100.0)])
    assert cx["status"] == "crossover" and cx["between"] == [1000, 4000]
    assert cx["n"] == pytest.approx(2000.0)
    # Unequal distances: -ln 2 and +ln 8 -> a quarter of the way: 1000 * 4^0.25.
    cx = offload.crossover([(4000, 800.0, 100.0), (1000, 50.0, 100.0)])  # order of the points does not matter
    assert cx["n"] == pytest.approx(1000 * 4 ** 0.25)


def test_crossover_is_after_the_last_size_the_host_wins():
    # The GPU wins at 512, loses at 1024 (noise, a slow size), wins from 2048 on: from 2048's side of the change.
    pts = [(256, 10.0, 100.0), (512, 150.0, 100.0), (1024, 90.0, 100.0), (2048, 400.0, 100.0)]
    cx = offload.crossover(pts)
    assert cx["status"] == "crossover" and cx["between"] == [1024, 2048]
    assert 1024 < cx["n"] < 2048


def test_a_tie_counts_as_the_host_winning():
    cx = offload.crossover([(1000, 100.0, 100.0), (2000, 400.0, 100.0)])
    assert cx["status"] == "crossover" and cx["n"] == pytest.approx(1000.0)


def test_no_crossover_in_the_sweep():
    cx = offload.crossover([(256, 1.0, 100.0), (512, 200.0, 100.0), (1024, 50.0, 100.0)])
    assert cx["status"] == "none_in_sweep" and cx["n"] is None and "n=1024" in cx["text"]


def test_gpu_wins_at_every_size():
    cx = offload.crossover([(256, 101.0, 100.0), (512, 300.0, 100.0)])
    assert cx["status"] == "gpu_wins_everywhere" and cx["n"] is None and "n=256" in cx["text"]


def test_no_common_size_is_no_data():
    assert offload.crossover([])["status"] == "no_data"


def test_annotate_writes_crossover_metrics_and_waivers():
    doc = xgemm_doc(
        case("dgemm", 256, 400.0, 50.0, 25.0), case("dgemm", 1024, 20000.0, 4000.0, 1000.0),
        case("sgemm", 256, 800.0, 300.0, 200.0), case("sgemm", 1024, 30000.0, 9000.0, 3000.0),
    )
    host = offload.host_rates([("h.json", cpugemm_doc([("dgemm", 256, 100.0), ("dgemm", 1024, 2000.0),
                                                       ("sgemm", 256, 200.0), ("sgemm", 1024, 4000.0)]))])
    offload.annotate(doc, host, "h.json")
    per = doc["results"]["crossover"]["per_precision"]
    # dgemm pinned: 50/100 at 256, 4000/2000 at 1024: ln ratios -ln 2 and +ln 2, crossover at 512.
    assert per["dgemm"]["pinned"]["status"] == "crossover"
    assert doc["metrics"]["dgemm_crossover_n_pinned"]["value"] == pytest.approx(512.0)
    # dgemm pageable: 25/100 and 1000/2000: the host wins at both sizes.
    assert per["dgemm"]["pageable"]["status"] == "none_in_sweep"
    assert "dgemm_crossover_n_pageable" not in doc["metrics"]
    assert "none in the sweep" in doc["waived"]["dgemm_crossover_n_pageable"]
    # sgemm pinned: 300/200 and 9000/4000: the GPU wins everywhere: waived with that reason.
    assert per["sgemm"]["pinned"]["status"] == "gpu_wins_everywhere"
    assert "every size" in doc["waived"]["sgemm_crossover_n_pinned"]
    rows = {r["n"]: r for r in per["dgemm"]["rows"]}
    assert rows[256]["pinned_winner"] == "host" and rows[1024]["pinned_winner"] == "gpu"
    assert rows[1024]["host_gflops"] == 2000.0 and rows[1024]["host_threads"] == 16


def test_a_missing_host_precision_is_named():
    # TF32 is set against the host's SGEMM; host documents with DGEMM only cannot answer it.
    doc = xgemm_doc(case("dgemm", 256, 400.0, 200.0, 100.0), case("tf32", 256, 900.0, 300.0, 200.0))
    host = offload.host_rates([("h.json", cpugemm_doc([("dgemm", 256, 100.0)]))])
    offload.annotate(doc, host)
    tf32 = doc["results"]["crossover"]["per_precision"]["tf32"]
    assert tf32["host_precision"] == "sgemm" and tf32["pinned"]["status"] == "no_host_data"
    assert "no verified sgemm timing" in tf32["pinned"]["text"] and "tf32" in tf32["pinned"]["text"]
    assert "sgemm" in doc["waived"]["tf32_crossover_n_pageable"]


def test_sizes_the_host_lacks_are_noted_and_left_out():
    doc = xgemm_doc(case("dgemm", 256, 400.0, 50.0, 25.0), case("dgemm", 1024, 2e4, 4000.0, 1000.0),
                    case("dgemm", 4096, 4e4, 2e4, 8000.0))
    host = offload.host_rates([("a.json", cpugemm_doc([("dgemm", 256, 100.0)])),
                               ("b.json", cpugemm_doc([("dgemm", 1024, 2000.0)]))])
    res = offload.analyse(doc, host)["dgemm"]
    assert res["pinned"]["n"] == pytest.approx(512.0)
    assert any("n=4096" in note and "dgemm" in note for note in res["notes"])


def test_unverified_and_skipped_gpu_cases_are_left_out():
    doc = xgemm_doc(case("dgemm", 256, 400.0, 50.0, 25.0), case("dgemm", 1024, 2e4, 4000.0, 1000.0, verified=False),
                    {"precision": "dgemm", "n": 16384, "run": False, "not_run": "does not fit"})
    host = offload.host_rates([("h.json", cpugemm_doc([("dgemm", 256, 100.0), ("dgemm", 1024, 2000.0)]))])
    res = offload.analyse(doc, host)["dgemm"]
    assert [r["n"] for r in res["rows"]] == [256]
    assert res["pinned"]["status"] == "none_in_sweep"
    assert any("failed verification" in note for note in res["notes"])
    assert any("does not fit" in note for note in res["notes"])


def test_host_rate_is_the_fastest_verified_row():
    rows = cpugemm_doc([("dgemm", 512, 50.0), ("dgemm", 512, 80.0)])
    rows["results"]["cpu_gemm"].append({"precision": "dgemm", "n": 512, "threads": 32, "gflops_median": 500.0,
                                        "verified": False})
    host = offload.host_rates([("h.json", rows)])
    assert host[("dgemm", 512)].gflops == 80.0


def test_host_rates_from_timings():
    host = offload.host_rates_from_timings([(1000, "dgemm", 2.0), (1000, "dgemm", 1.0)])
    assert host[("dgemm", 1000)].gflops == pytest.approx(2.0)  # 2e9 flops in 1 s, the faster of the two
    with pytest.raises(offload.OffloadError, match="seconds must be positive"):
        offload.host_rates_from_timings([(1000, "dgemm", 0.0)])


def test_wrong_documents_are_named():
    with pytest.raises(offload.OffloadError, match=r"h\.json: not a gpuaccept-cpugemm document"):
        offload.host_rates([("h.json", {"tool": "gpuaccept-gemm"})])
    with pytest.raises(offload.OffloadError, match=r"x\.json: not a gpuaccept-xgemm document"):
        offload.analyse({"tool": "gpuaccept-overlap"}, {}, "x.json")
    with pytest.raises(offload.OffloadError, match=r"x\.json: case dgemm n=256 lacks pinned\.gflops"):
        offload.analyse(xgemm_doc({"precision": "dgemm", "n": 256, "run": True, "verified": True,
                                   "kernel": {"gflops": 1.0}}), {}, "x.json")


def test_command_line_prints_the_table_and_writes_the_document(tmp_path):
    x = tmp_path / "xgemm.json"
    h = tmp_path / "cpugemm.json"
    out = tmp_path / "annotated.json"
    x.write_text(json.dumps(xgemm_doc(case("dgemm", 256, 400.0, 50.0, 25.0), case("dgemm", 1024, 2e4, 4000.0, 1e3))))
    h.write_text(json.dumps(cpugemm_doc([("dgemm", 256, 100.0), ("dgemm", 1024, 2000.0)])))
    res = annotate(str(x), "--host", str(h), "--output", str(out))
    assert res.returncode == 0, res.stderr
    assert "dgemm vs host dgemm: pinned n = 512 (between 256 and 1024" in res.stdout
    doc = json.loads(out.read_text())
    assert math.isclose(doc["metrics"]["dgemm_crossover_n_pinned"]["value"], 512.0)
    assert json.loads(x.read_text())["metrics"] == {}  # the input is left alone when --output is given


def test_command_line_names_a_bad_host_document(tmp_path):
    x = tmp_path / "xgemm.json"
    x.write_text(json.dumps(xgemm_doc(case("dgemm", 256, 400.0, 50.0, 25.0))))
    res = annotate(str(x), "--host", str(x))
    assert res.returncode == 4 and "not a gpuaccept-cpugemm document" in res.stderr
    assert json.loads(x.read_text())["metrics"] == {}  # a bad input leaves the document as it was


def test_command_line_fails_on_a_run_without_cases(tmp_path):
    x = tmp_path / "xgemm.json"
    h = tmp_path / "cpugemm.json"
    doc = xgemm_doc()
    doc["errors"] = ["no CUDA device found: cudaErrorNoDevice"]
    x.write_text(json.dumps(doc))
    h.write_text(json.dumps(cpugemm_doc([("dgemm", 256, 100.0)])))
    res = annotate(str(x), "--host", str(h))
    assert res.returncode == 1 and "no case to compare" in res.stdout and "cudaErrorNoDevice" in res.stdout


FIXTURES = ROOT / "tests" / "fixtures" / "offload_gemm"


@pytest.mark.parametrize("gpu", ["h100-1", "h200"])
def test_recorded_runs_give_again_the_crossovers_recorded_on_the_gpu_machine(gpu):
    """The H100's and the H200's documents (tests/fixtures/offload_gemm, from docs/evidence/2026-11-26-offload-gemm):
    every case verified; the analysis run here on xgemm.json and the host's cpugemm documents gives the crossovers
    and metrics written there; and what the runs found holds: pinned DGEMM beats the host at every size, the
    whole trip at n=16384 runs well below the seed's 0.95 of the kernel."""
    folder = FIXTURES / gpu
    doc = json.loads((folder / "xgemm.json").read_text())
    recorded = json.loads((folder / "xgemm-crossover.json").read_text())
    assert doc["verification"]["passed"] and not doc["errors"]
    host = offload.host_rates((p.name, json.loads(p.read_text())) for p in sorted(folder.glob("cpugemm-n*.json")))
    offload.annotate(doc, host)
    again, before = doc["results"]["crossover"]["per_precision"], recorded["results"]["crossover"]["per_precision"]
    for prec in ("dgemm", "sgemm", "tf32", "bf16"):
        for mode in ("pinned", "pageable"):
            assert again[prec][mode]["status"] == before[prec][mode]["status"], (prec, mode)
            assert again[prec][mode]["n"] == pytest.approx(before[prec][mode]["n"]), (prec, mode)
    for name, metric in recorded["metrics"].items():
        assert doc["metrics"][name]["value"] == pytest.approx(metric["value"]), name
    assert again["dgemm"]["pinned"]["status"] == "gpu_wins_everywhere"
    assert 0.5 < doc["metrics"]["dgemm_pinned_over_kernel_ratio"]["value"] < 0.7


def test_without_a_host_tool_the_crossovers_are_waived_with_the_reason_and_the_ratios_stay(tmp_path):
    x = tmp_path / "xgemm.json"
    doc = xgemm_doc(case("dgemm", 256, 400.0, 50.0, 25.0), case("sgemm", 256, 800.0, 90.0, 40.0))
    doc["metrics"]["dgemm_pinned_over_kernel_ratio"] = {"value": 0.125, "unit": "ratio"}
    x.write_text(json.dumps(doc))
    why = "no gpuaccept-cpugemm in /opt/bench"
    res = annotate(str(x), "--no-host", why)
    assert res.returncode == 0, res.stderr
    out = json.loads(x.read_text())
    assert out["waived"] == {f"{p}_crossover_n_{m}": why for p in ("dgemm", "sgemm") for m in offload.MODES}
    assert list(out["metrics"]) == ["dgemm_pinned_over_kernel_ratio"]
    cx = out["results"]["crossover"]
    assert cx["no_host"] == why and cx["host_source"] is None
    dgemm = cx["per_precision"]["dgemm"]
    assert dgemm["notes"] == [] and dgemm["rows"][0]["host_gflops"] is None
    both = annotate(str(x), "--no-host", why, "--host", str(x))
    assert both.returncode == 2 and "not allowed with" in both.stderr


@pytest.mark.parametrize(("gpu", "node_type"), [("h100-1", "h100_sxm5_80gb"), ("h200", "h200")])
def test_recorded_metrics_are_in_the_table_owned_by_the_host_and_only_reported(gpu, node_type):
    """The H100's and the H200's annotated documents agree with the metric table, and the shipped references of
    their node types give every figure as informational (owner host): reported, never a verdict."""
    from gpuaccept import metric_table, references  # noqa: PLC0415

    doc = json.loads((FIXTURES / gpu / "xgemm-crossover.json").read_text())
    assert metric_table.document_problems("offload_gemm", doc) == []
    refs = references.load_node_type(ROOT / "reference_values", node_type).checks["offload_gemm"]
    assert set(doc["metrics"]) | set(doc["waived"]) == set(refs)
    for name, metric in doc["metrics"].items():
        assert metric_table.owner("offload_gemm", name) == metric_table.HOST == refs[name].owner, name
        assert not refs[name].judged and refs[name].unit == metric["unit"], name
        assert refs[name].assess(metric["value"])[0] == "info", name
