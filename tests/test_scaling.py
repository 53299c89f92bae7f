"""gpuaccept.results.scaling on HPL-CUDA's recorded runs: HPL's outputs of one and two H200s of one node
(tests/fixtures/hpl_grid, call 2: the 1 x 1 run on GPU 0 and the 1 x 2 runs on both) and GpuHplCuda's document from
an H100 (tests/fixtures/hpl_cuda_reframe). No four-GPU run is recorded yet: docs/evidence/2026-11-27-hpl-multigpu's
device script makes them. Documents from the HPL outputs are built here by gpuaccept.probe.hpl.to_document, as a
device script or the check builds them."""

import json
import re

import pytest
from conftest import ROOT

from gpuaccept.probe import hpl
from gpuaccept.results import report, scaling

GRID = ROOT / "tests" / "fixtures" / "hpl_grid"
CALL2 = sorted(GRID.glob("h200x2-call2-*.out"))  # 1 x 1 (N=130560), 1 x 2 (N=184320, twice; N=16384)
H100_DOC = next((ROOT / "tests" / "fixtures" / "hpl_cuda_reframe").rglob("hpl_cuda.json"))


def built_document(path, node: str, started: str = "") -> dict:
    """HPL-CUDA's document of a recorded HPL output, one rank per GPU, on the node it ran on (the header names the
    host that builds it)."""
    out = hpl.parse_file(path)
    doc = hpl.to_document(out, "hpl_cuda", out.runs[0].p * out.runs[0].q, started_utc=started)
    doc["host"]["hostname"] = node
    return doc


def test_two_h200s_give_0_906_of_twice_one():
    (s,) = scaling.scale(r for p in CALL2 for r in scaling.runs_of_output(p, "h200x2"))
    assert s.counts == [1, 2] and (s.base.tflops, s.base.n) == (47.138, 130560)
    one, two = s.runs  # the fastest row per GPU count and grid: the 1 x 2 run at N=184320 beats N=16384's
    assert (one.grid, two.grid, two.n, two.tflops) == ("1 x 1", "1 x 2", 184320, 85.376)
    assert s.ideal(2) == pytest.approx(94.276) and s.fraction(two) == pytest.approx(0.9056, abs=1e-4)
    assert scaling.rows(s) == [[1, "1 x 1", 130560, 1024, 47.14, 47.14, 47.14, 1.0],
                               [2, "1 x 2", 184320, 1024, 85.38, 42.69, 94.28, 0.906]]  # fmt: skip


def test_documents_of_each_node_scale_on_their_own():
    """Two nodes: the H200 pair (documents built from its outputs, their host named here) and the H100 (GpuHplCuda's
    own document, node "vm"), which has one GPU count only."""
    docs = [built_document(p, "h200x2") for p in CALL2]
    docs.append(json.loads(H100_DOC.read_text()))
    nodes = {s.node: s for s in scaling.scale(r for d in docs for r in scaling.runs_of_document(d))}
    assert sorted(nodes) == ["h200x2", "vm"]
    assert nodes["vm"].counts == [1] and nodes["vm"].base.tflops == 45.48
    pair = nodes["h200x2"]
    assert pair.counts == [1, 2] and round(pair.fraction(pair.runs[-1]), 3) == 0.906


def test_only_what_passed_counts():
    """A document that failed its verification (built here: the recorded one with its check marked failed, and a
    residual line that said FAILED) contributes nothing; another tool's neither."""
    doc = json.loads(H100_DOC.read_text())
    failed = {**doc, "verification": {"passed": False, "checked": 1, "failures": ["built failed"]}}
    row = {**doc["results"]["runs"][0], "residual_verdict": "FAILED"}
    assert scaling.runs_of_document(failed) == []
    assert scaling.runs_of_document({**doc, "results": {"runs": [row]}}) == []
    assert scaling.runs_of_document({**doc, "tool": "hpl_host"}) == []
    assert [r.gpus for r in scaling.runs_of_document(doc)] == [1]


def test_the_report_draws_the_pair_and_the_ideal_line(tmp_path):
    runs = tmp_path / "h200x2"
    runs.mkdir()
    for i, p in enumerate(CALL2):
        (runs / f"hpl_cuda-{i}.json").write_text(json.dumps(built_document(p, "h200x2", f"2026-11-25T23:0{i}:00Z")))
    page = report.build([report.load_group(f"h200x2={runs}")], "scaling", generated="2026-11-27")
    part = page[page.index("<h2 id='hpl-scaling'>") : page.index("<h2 id='power'>")]
    (plot_id,) = re.findall(r'data-plot="(hpl-scaling:[^"]+)"', part)
    assert plot_id.startswith("hpl-scaling:h200x2:")
    assert "ideal: GPUs x 47.14 (one GPU)" in part and "85.4 (1 x 2), 0.906 of ideal" in part
    assert "<td>0.906</td>" in part and "<th>fraction of ideal</th>" in part


def test_a_node_with_one_gpu_count_has_no_figure(tmp_path):
    page = report.build([report.load_group(f"h100={H100_DOC.parent}")], "one GPU", generated="2026-11-27")
    part = page[page.index("<h2 id='hpl-scaling'>") : page.index("<h2 id='power'>")]
    assert "No HPL-CUDA runs on more than one GPU count of a node." in part and "<figure" not in part


def test_the_command_line_prints_the_table_and_draws_one_node(tmp_path, capsys):
    svg = tmp_path / "scaling.svg"
    assert scaling.main(["--node", "h200x2", *map(str, CALL2), "--svg", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "node h200x2" in out and "  2 | 1 x 2 | 184320 | 1024 | 85.38 | 42.69 | 94.28 | 0.906" in out
    assert "<svg" in svg.read_text()
    assert scaling.main([str(H100_DOC), str(CALL2[0]), "--svg", str(svg)]) == 2  # two nodes: which to draw?
