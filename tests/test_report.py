"""`gpuaccept report` on runs recorded on the GPU machines (docs/evidence): what the HTML holds, that it reads
offline, side-by-side ratios, and bad input. The browser's view of it is tests/test_report_browser.py."""

import copy
import json
import re

import pytest
from conftest import EVIDENCE, H100_DEGRADED, H100_RUNS, H200_RUNS, H200X2

from gpuaccept.cli import main
from gpuaccept.results import report  # matplotlib: requirements/report.txt, which scripts/venv.sh test installs

INPUTS = [f"h100_sxm5_80gb={H100_RUNS}", f"h200={H200_RUNS}", f"2xH200={H200X2}"]


@pytest.fixture(scope="module")
def page():
    groups = [report.load_group(spec) for spec in INPUTS]
    return report.build(groups, "H100 vs H200", generated="2026-11-22")


def figures(text):
    return dict(re.findall(r'<figure class="plot" data-plot="([^"]+)">(.*?)</figure>', text, re.S))


def test_every_section_has_its_figures(page):
    plots = figures(page)
    for label in ("h100_sxm5_80gb", "h200", "2xH200"):
        for kind in ("sweep", "matrix", "model", "gemm"):
            assert f"{kind}:{label}" in plots, f"{kind}:{label}"
    assert {"sweep:compare", "gemm:compare", "cpu:scaling", "peer:2xH200"} <= set(plots)
    assert "peer:h200" not in plots  # one GPU: no pairs
    for plot_id, svg in plots.items():
        assert svg.lstrip().startswith("<svg"), plot_id
        # Drawn data: matplotlib writes each line as a path with one command per point.
        longest = max((len(d.split()) for d in re.findall(r' d="([^"]+)"', svg)), default=0)
        assert longest > 10, f"{plot_id}: no line with data"
    # The sweep: 7 test cases of 87 sizes each on GPU 0 (1 byte .. 1 GiB, and +-3 bytes).
    sweep = plots["sweep:h100_sxm5_80gb"]
    assert all(case in sweep for case in report.SWEEP_CASES)


def test_the_report_reads_offline(page):
    assert "<script" not in page and "<link" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert 'xlink:href="http' not in page


def test_inventory_verdicts_and_left_out_documents(page):
    assert "1 x NVIDIA H100 80GB HBM3" in page and "2 x NVIDIA H200" in page and "1 x NVIDIA H200" in page
    assert "OpenBLAS 0.3.21" in page and "580.159.04" in page and "4.10.4" in page
    assert page.count(">ACCEPTED<") == 3 and page.count(">REJECTED<") == 2  # H200's provisional references
    assert "gemm-inject.json" in page and "Freivalds" in page  # the --inject-error self-test is left out
    # The two-GPU folder has no verdict: its node facts (gpuaccept facts) give the driver and PCIe link.
    driver = re.findall(r"<td>(.*?)</td>", re.search(r"<td>driver</td>(.*?)</tr>", page).group(1))
    assert driver == ["580.159.04"] * 3
    pcie = re.findall(r"<td>(.*?)</td>", re.search(r"<td>PCIe \(max\)</td>(.*?)</tr>", page).group(1))
    assert pcie == ["Gen5 x16"] * 3


def test_what_failed_is_listed_under_the_verdicts():
    page = report.build([report.load_group(f"degraded={H100_DEGRADED}")], "degraded", generated="2026-11-22")
    failed = page[page.index("What failed or did not run") : page.index("id='compare'")]
    row = re.search(r"<td>fp64_tflops_min</td><td>([^<]+)</td><td>([^<]+)</td><td>fail</td>", failed)
    assert row and row.groups() == ("24.33", "53.2")
    assert "<td>bandwidth</td><td>(check)</td><td>-</td><td>-</td><td>not_run</td>" in failed


def test_side_by_side_ratios_are_to_the_baseline(page):
    h100 = json.loads(next(H100_RUNS.rglob("bandwidth.json")).read_text())
    assert h100["metrics"]["d2d_min"]["unit"] == "GB/s"
    row = re.search(r"<td>d2d_min</td>(.*?)</tr>", page, re.S).group(1)
    cells = re.findall(r"<td>(.*?)</td>", row)
    assert cells[1].startswith("1506 (5)") and cells[2].startswith("2121 (5)")
    assert '<span class="better">1.409</span>' in cells[3]  # HBM3e copies ~1.41x HBM3
    latency = re.findall(r"<td>(.*?)</td>", re.search(r"<td>latency_d2h_max</td>(.*?)</tr>", page, re.S).group(1))
    assert 'class="worse"' in latency[3]  # higher latency than the baseline is worse


def test_power_profile_and_energy_table_from_sampler_documents(tmp_path):
    """The sampler (gpuaccept sample, issue 4) had not run on a GPU machine when this was written: these two
    power documents are SYNTHETIC, made here in the contract's shape, to test the plot and the table."""

    def power_doc(host, watts, seconds):
        t = [i * 0.1 for i in range(int(seconds * 10))]
        return {
            "schema": "gpuaccept.bench/1", "tool": "gpuaccept-sample", "tool_version": "test",
            "git_revision": "test", "started_utc": "2026-11-22T06:00:00Z", "elapsed_s": seconds,
            "host": {"hostname": host}, "devices": [],
            "command_line": ["gpuaccept", "sample", "--output", "power.json", "--", "/opt/bin/gpuaccept-gemm"],
            "results": {"samples": [{"gpu": 0, "t_s": t, "power_w": [watts] * len(t)}],
                        "per_gpu": [{"gpu": 0, "avg_w": watts, "peak_w": watts, "energy_j": watts * seconds}]},
            "metrics": {}, "waived": {}, "verification": {"passed": True}, "errors": [],
        }  # fmt: skip

    for name, watts, seconds in (("a", 700.0, 30.0), ("b", 600.0, 20.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "power.json").write_text(json.dumps(power_doc(name, watts, seconds)))
    groups = [report.load_group(f"A={tmp_path / 'a'}"), report.load_group(f"B={tmp_path / 'b'}")]
    page = report.build(groups, "power", baseline_label="A")
    assert {"power:A:gpuaccept-gemm", "power:B:gpuaccept-gemm"} <= set(figures(page))
    energy = page[page.index("id='energy'") :]
    rows = {
        m[0]: m[1:] for m in re.findall(r"<td>gpuaccept-gemm</td><td>([^<]+)</td>" + r"<td>([^<]+)</td>" * 3, energy)
    }
    assert rows["elapsed (s)"] == ("30", "20", "1.5")
    assert rows["average power (W)"] == ("700", "600", "1.167")
    assert rows["energy (kJ)"] == ("21", "12", "1.75")


def test_unknown_checks_appear_side_by_side(tmp_path):
    """A document of a check the report has no figures for (HPL, NAMD): its metrics are listed. The document is
    the recorded H100 host GEMM document with its tool renamed, here in the test."""
    doc = json.loads(next(H100_RUNS.rglob("cpu_gemm.json")).read_text())
    other = copy.deepcopy(doc)
    other["tool"], other["metrics"] = "gpuaccept-hpl", {"hpl_tflops": {"value": 51.0, "unit": "TFLOP/s"}}
    (tmp_path / "hpl.json").write_text(json.dumps(other))
    page = report.build([report.load_group(f"x={tmp_path}")], "other")
    section = page[page.index("id='other'") : page.index("id='power'")]
    assert "gpuaccept-hpl" in section and "hpl_tflops" in section and "51 (1)" in section


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/no/such/dir"], "/no/such/dir: not a directory"),
        ([str(EVIDENCE / "2026-11-22-h100-smoke" / "nvidia-smi-q.txt")], "not a directory"),
        ([f"a={H200X2}", f"a={H100_RUNS}"], "same label"),
        ([f"a={H200X2}", "--baseline", "b"], "--baseline 'b' is none of the inputs' labels: a"),
    ],
)
def test_bad_input_is_named(tmp_path, capsys, args, message):
    assert main(["report", "--output", str(tmp_path / "r.html"), *args]) == 4
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_a_damaged_document_is_listed_not_skipped(tmp_path):
    good = next(H100_RUNS.rglob("cpu_gemm.json")).read_text()
    (tmp_path / "a=b").mkdir()  # a path with '=' in it is a path, not LABEL=PATH
    (tmp_path / "a=b" / "cpu_gemm.json").write_text(good)
    (tmp_path / "a=b" / "gemm.json").write_text(good[: len(good) // 2])  # cut short, as by a crash
    group = report.load_group(str(tmp_path / "a=b"))
    assert group.label == str(tmp_path / "a=b") and len(group.docs) == 1
    page = report.build([group], "damaged")
    assert "gemm.json" in page and "not readable as JSON" in page


def test_a_folder_without_documents_is_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["report", "--output", str(tmp_path / "r.html"), str(tmp_path / "empty")]) == 4
    assert "no benchmark documents or verdicts found" in capsys.readouterr().err
