"""`gpuaccept compare` on verdicts recorded on the GPU machines: the newest run per node, outliers worst
first, missing values and unknown node types loud."""

import json
import math

from conftest import H100_DEGRADED, H100_RUNS, RECORDED, REFERENCE_DIR, references_as_recorded

from gpuaccept.cli import main
from gpuaccept.results import compare

H200_EVAL1 = RECORDED / "2026-11-22-h200" / "runs" / "eval-1"


def test_the_degraded_run_is_the_newest_and_its_gemm_is_worst_first(tmp_path):
    found = compare.find_verdicts([H100_RUNS, H100_DEGRADED.parent])
    assert [p.parent for p, _ in found] == [H100_DEGRADED]  # one node, one node type: its newest run
    devs = compare.deviations(found)  # as judged on the day (the run's documents were not kept)
    measured = [d for d in devs if d.value is not None]
    assert [d.metric for d in measured[:4]] == [
        "bf16_tflops_min",
        "fp16_tflops_min",
        "fp32_tflops_min",
        "fp64_tflops_min",
    ]
    fp64 = next(d for d in devs if d.metric == "fp64_tflops_min")
    assert math.isclose(fp64.value / fp64.reference - 1, -0.543, abs_tol=0.001)
    assert 10 < fp64.units < 11 and fp64.outside  # 54% below with a 5% tolerance
    units = [d.units for d in devs]
    assert units == sorted(units, reverse=True)
    # The bandwidth and host GEMM checks did not run there: no value, listed before everything measured.
    missing = [d for d in devs if d.value is None]
    assert (
        missing
        and {d.check for d in missing} == {"bandwidth", "cpu_gemm"}
        and all("not_run" in d.reason for d in missing)
    )
    assert devs.index(missing[-1]) < devs.index(measured[0])


def test_a_good_fleet_passes_and_every_run_can_be_listed(tmp_path, capsys):
    refs = ["--reference-dir", str(references_as_recorded(tmp_path))]
    assert main(["compare", str(H100_RUNS), "--all", *refs]) == 0
    out = capsys.readouterr().out
    # 10: GEMM, device copies and the three link gates (the host GEMM, pageable copies and latencies are host
    # figures since issue 24: reported unjudged)
    assert "0 of 10 judged metrics outside their tolerance on 0 of 1 node(s) (1 run(s)" in out
    assert main(["compare", "--every-run", str(H100_RUNS), *refs]) == 0
    assert "(3 run(s)" in capsys.readouterr().out


def test_a_fleet_of_two_node_types_rejects_with_a_json_list(tmp_path, capsys):
    out_json = tmp_path / "compare.json"
    refs = ["--reference-dir", str(references_as_recorded(tmp_path))]
    rc = main(["compare", str(H100_RUNS), str(H100_DEGRADED), str(H200_EVAL1), "--json", str(out_json), *refs])
    assert rc == 1
    printed = capsys.readouterr().out
    # Judged again: the degraded run kept no GEMM document, so its GEMM check fails for that, with the day's record.
    assert "on 1 of 2 node(s)" in printed and "gemm.-" in printed and "fp64_tflops_min=24.3" in printed
    doc = json.loads(out_json.read_text())
    types = {d["node_type"] for d in doc["deviations"]}
    assert types == {"h100_sxm5_80gb", "h200"}
    h200 = [d for d in doc["deviations"] if d["node_type"] == "h200"]
    assert h200 and not any(d["outside"] for d in h200)  # the first H200 run is within the shipped h200 file


def test_an_unknown_node_type_is_an_error_for_that_node(tmp_path):
    run = tmp_path / "results" / "n1" / "r1"
    run.mkdir(parents=True)
    doc = json.loads((H100_RUNS / "20261122T052346Z-commission" / "verdict.json").read_text())
    doc["node_type"], doc["node"] = "no_such_type", "n1"
    (run / "verdict.json").write_text(json.dumps(doc))
    devs = compare.deviations(compare.find_verdicts([tmp_path / "results"]), REFERENCE_DIR)
    assert len(devs) == 1 and devs[0].outside and "unknown node type 'no_such_type'" in devs[0].reason


def test_bad_input_is_named(tmp_path, capsys):
    assert main(["compare", str(tmp_path)]) == 4
    assert "no verdict.json under it" in capsys.readouterr().err
    (tmp_path / "verdict.json").write_text("{}")
    assert main(["compare", str(tmp_path / "verdict.json")]) == 4
    assert "not a gpuaccept verdict" in capsys.readouterr().err
