"""`gpuaccept report` on runs recorded on the GPU machines (docs/evidence): what the HTML holds, that it reads
offline, side-by-side ratios, and bad input. The browser's view of it is tests/test_report_browser.py."""

import copy
import html
import json
import re
from pathlib import Path

import pytest
from conftest import H100_DEGRADED, H100_RUNS, H200_RUNS, H200X2, RECORDED

from gpuaccept.cli import main
from gpuaccept.probe import fft
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
    verdicts = page[page.index("<h2 id='verdicts'>") :]
    assert verdicts.count(">ACCEPTED<") == 3 and verdicts.count(">REJECTED<") == 2  # H200's provisional references
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
        ([str(RECORDED / "2026-11-22-h100-smoke" / "nvidia-smi-q.txt")], "not a directory"),
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


def test_md_section_shows_apoa1_beside_namd_3_0s_published_a100_figures():
    """The H100's md_apoa1 runs (docs/evidence/2026-11-23-md-apoa1): APOA1 and its 1.1 M-atom replica through
    OpenMM, NAMD 3.0's A100 figures from the shared logs labelled as published, and the scaling line."""
    runs = RECORDED / "2026-11-23-md-apoa1" / "batch1"
    page = report.build([report.load_group(f"h100={runs}")], "md")
    section = page[page.index("id='md'") : page.index("id='other'")]
    assert "<td>apoa1</td><td>92224</td>" in section and "<td>apoa1_3x2x2</td><td>1106688</td>" in section
    assert "NAMD 3.0, A100 80GB PCIe (published logs, not measured here)" in section
    assert "<td>110.6</td>" in section and "apoa1-GPU-Res-16.log" in section
    # the median of the four APOA1 variants measured (153.4, 158.3, 162.1, 166.4 ns/day)
    assert "<td>160.2</td>" in section
    assert "h100: apoa1_3x2x2 (1,106,688 atoms) runs at 0.109 x the unit cell&#x27;s ns/day for 12 x" in section
    # md documents are not repeated under the other checks
    assert "gpuaccept-md-apoa1" not in page[page.index("id='other'") : page.index("id='power'")]


# The H100's and the H200's annotated gpuaccept-overlap documents (tests/fixtures/overlap/README.md).
OVERLAP = Path(__file__).resolve().parent / "fixtures" / "overlap"
OVERLAP_METHODS = ("sync", "streams_1", "streams_2", "streams_4", "streams_8", "streams_16", "mapped", "managed")
INTENSITY_ROW = re.compile(
    r"<tr><td>0</td><td>([^<]+)</td><td>[^<]+</td><td>([^<]+)</td><td><span class=\"(pass|fail)\">([^<]+)</span>"
    r"</td><td>([^<]+)</td>((?:<td>[^<]+</td>){8})</tr>"
)


def overlap_section(page):
    return page[page.index("<h2 id='overlap'>") : page.index("<h2 id='offload-gemm'>")]


@pytest.fixture(scope="module")
def overlap_page():
    groups = [report.load_group(f"h100={OVERLAP / 'h100'}"), report.load_group(f"h200={OVERLAP / 'h200'}")]
    return report.build(groups, "overlap", generated="2026-11-25")


def test_overlap_section_names_the_best_method_per_intensity(overlap_page):
    section = overlap_section(overlap_page)
    for label in ("h100", "h200"):
        part = section[section.index(f"<h3 id='overlap-{label}'>") :]
        head = part[part.index('<table class="overlap">') : part.index("</thead>")]
        for method in OVERLAP_METHODS[:-1]:
            assert f"<th>{method} error</th>" in head
        assert "<th>managed error (not modelled)</th>" in head
        rows = INTENSITY_ROW.findall(part[: part.index("</table>")])
        doc = json.loads((OVERLAP / label / "overlap-model.json").read_text())
        expected = doc["results"]["model"]["per_gpu"][0]["intensities"]
        assert [r[0] for r in rows] == ["0.25", "1", "4", "16", "64", "256", "1024", "4096"]
        assert [r[1] for r in rows] == [e["best_measured"] for e in expected]
        assert [r[3] for r in rows] == [e["best_predicted"] for e in expected]
        # On both GPUs (docs/checks/overlap.md): 16 streams fastest, but mapped memory at 1024 flop/byte; the
        # model always ranks mapped first, which is right only there.
        assert [r[1] for r in rows] == ["streams_16"] * 6 + ["mapped", "streams_16"]
        assert [r[2] for r in rows] == ["fail"] * 6 + ["pass", "fail"]
        assert [float(r[4]) for r in rows] == pytest.approx([e["rank_tau"] for e in expected], abs=5e-5)
        errors = [re.findall(r"<td>([^<]+)</td>", r[5]) for r in rows]
        assert errors == [[f"{m['rel_error']:+.1%}" for m in e["methods"]] for e in expected]
    # the H100 at 256 flop/byte: mapped 29.1 % slower than predicted, managed 47.4 %
    h100_256 = next(r for r in INTENSITY_ROW.findall(section) if r[0] == "256")
    assert re.findall(r"<td>([^<]+)</td>", h100_256[5])[-2:] == ["-29.1%", "-47.4%"]


def test_overlap_plot_draws_each_methods_points_and_the_models_line(overlap_page):
    plots = figures(overlap_page)
    assert {"overlap:h100:gpu0", "overlap:h200:gpu0"} <= set(plots)
    svg = plots["overlap:h100:gpu0"]
    for method in OVERLAP_METHODS:
        for kind in ("measured", "predicted"):
            assert svg.count(f'id="overlap-h100-gpu0-{kind}-{method}"') == 1, (kind, method)
        # the measured series: a marker per intensity; the model: one line through the 8 intensities
        measured = svg[svg.index(f'id="overlap-h100-gpu0-measured-{method}"') :]
        measured = measured[: measured.index('id="overlap-h100-gpu0-predicted-')]
        assert measured.count("<use ") == 8, method
        predicted = svg[svg.index(f'id="overlap-h100-gpu0-predicted-{method}"') :]
        line = re.search(r' d="([^"]+)"', predicted).group(1)
        assert line.count("L") == 7, method
    assert "arithmetic intensity (flop/byte)" in svg and "256 MiB each way" in plots["overlap:h100:gpu0"]


def test_overlap_full_duplex_figure_and_flag(overlap_page, tmp_path):
    section = overlap_section(overlap_page)
    duplex = dict(re.findall(r"<tr><td>(h[0-9]+)</td><td>0</td>(?:<td>[^<]+</td>){3}<td>([^<]+)</td>", section))
    assert duplex == {"h100": "0.8326", "h200": "0.9079"}
    assert section.count('<span class="pass">full duplex</span>') == 2 and "NOT full duplex" not in section
    # The same H100 document without its model (as when the model step failed), and with H2D + D2H at once
    # taking the sum of the two: the report models it itself, and flags the copies that no longer overlap.
    doc = json.loads((OVERLAP / "h100" / "overlap-model.json").read_text())
    del doc["results"]["model"]
    copies = doc["results"]["per_gpu"][0]["copies"]
    copies["bidir"]["seconds"] = copies["h2d"]["full_s"] + copies["d2h"]["full_s"]
    (tmp_path / "overlap.json").write_text(json.dumps(doc))
    section = overlap_section(report.build([report.load_group(f"serial={tmp_path}")], "serial"))
    assert "<td>serial</td><td>0</td><td>4.861</td><td>4.87</td><td>9.731</td><td>0</td>" in section
    assert '<span class="fail">NOT full duplex</span>' in section
    assert len(INTENSITY_ROW.findall(section)) == 8


def test_overlap_document_without_its_model_is_modelled_as_recorded(overlap_page, tmp_path):
    doc = json.loads((OVERLAP / "h100" / "overlap-model.json").read_text())
    del doc["results"]["model"]
    (tmp_path / "overlap.json").write_text(json.dumps(doc))
    raw = overlap_section(report.build([report.load_group(f"h100={tmp_path}")], "raw"))
    recorded = overlap_section(overlap_page)
    recorded = recorded[: recorded.index("<h3 id='overlap-h200'>")]
    strip = re.compile(r"<figure.*?</figure>", re.S)
    assert strip.sub("", raw).strip() == strip.sub("", recorded).strip()


def test_a_run_without_overlap_has_no_overlap_section(page, tmp_path):
    section = overlap_section(page)
    assert "<h3" not in section and "<figure" not in section and "<table" not in section
    assert "No gpuaccept-overlap documents among the inputs" in section
    assert not any(p.startswith("overlap:") for p in figures(page))
    # beside a column that has one: only that column's subsection
    mixed = report.build([report.load_group(f"h200={OVERLAP / 'h200'}"), report.load_group(f"x={H200X2}")], "m")
    assert re.findall(r"<h3 id='overlap-([^']+)'>", mixed) == ["h200"]
    assert [p for p in figures(mixed) if p.startswith("overlap:")] == ["overlap:h200:gpu0"]


def test_an_overlap_document_the_model_cannot_read_is_named(tmp_path):
    doc = json.loads((OVERLAP / "h200" / "overlap-model.json").read_text())
    del doc["results"]["model"]
    del doc["results"]["per_gpu"][0]["copies"]["bidir"]
    (tmp_path / "overlap.json").write_text(json.dumps(doc))
    section = overlap_section(report.build([report.load_group(f"h200={tmp_path}")], "broken"))
    assert "cannot be modelled: results.per_gpu[gpu=0].copies.bidir.seconds" in section
    assert "<figure" not in section


OFFLOAD = Path(__file__).resolve().parent / "fixtures" / "offload_gemm"
OFFLOAD_PRECISIONS = ("dgemm", "sgemm", "tf32", "bf16")
# The H100 bandwidth run of 2026-11-22 (another session than the xgemm run): its fitted PCIe model draws the line.
H100_BW = H100_RUNS / "20261122T053025Z-evaluation/reframe/output/gpuaccept/node/builtin/GpuBandwidth_17e1f477"


def offload_section(page):
    return page[page.index("<h2 id='offload-gemm'>") : page.index("<h2 id='gemm'>")]


def offload_folder(tmp_path, gpu, *names):
    folder = tmp_path / gpu
    folder.mkdir()
    for name in names:
        for src in sorted((OFFLOAD / gpu).glob(name)):
            (folder / src.name).write_bytes(src.read_bytes())
    return folder


def table_rows(section, cls):
    table = section[section.index(f'<table class="{cls}">') :]
    table = table[: table.index("</table>")]
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]]


@pytest.fixture(scope="module")
def offload_page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("offload-report")
    h100 = offload_folder(tmp, "h100-1", "xgemm-crossover.json")
    (h100 / "bandwidth.json").write_bytes((H100_BW / "bandwidth.json").read_bytes())
    h200 = offload_folder(tmp, "h200", "xgemm-crossover.json")
    groups = [report.load_group(f"h100={h100}"), report.load_group(f"h200={h200}")]
    return report.build(groups, "offload", generated="2026-11-26")


def test_offload_section_gives_the_crossovers_and_ratios_recorded(offload_page):
    section = offload_section(offload_page)
    assert re.findall(r"<h3 id='offload-gemm-([^']+)'>", section) == ["h100", "h200"]
    for label, gpu in (("h100", "h100-1"), ("h200", "h200")):
        part = section[section.index(f"<h3 id='offload-gemm-{label}'>") :]
        recorded = json.loads((OFFLOAD / gpu / "xgemm-crossover.json").read_text())
        per = recorded["results"]["crossover"]["per_precision"]
        rows = table_rows(part, "offload-crossover")
        assert [r[1:3] for r in rows] == [[p, per[p]["host_precision"]] for p in OFFLOAD_PRECISIONS]
        assert [r[3:5] for r in rows] == [[per[p]["pinned"]["text"], per[p]["pageable"]["text"]]
                                          for p in OFFLOAD_PRECISIONS]  # fmt: skip
        ratios = [[float(x) for x in r[6:]] for r in rows]
        metrics = recorded["metrics"]
        assert ratios == [pytest.approx([metrics[f"{p}_pinned_over_kernel_ratio"]["value"],
                                         metrics[f"{p}_pageable_over_kernel_ratio"]["value"]], rel=5e-4)
                          for p in OFFLOAD_PRECISIONS]  # fmt: skip
    h100 = section[: section.index("<h3 id='offload-gemm-h200'>")]
    assert "n = 583 (between 512 and 1024" in h100  # DGEMM from pageable memory, the H100's first run
    # per size: the fastest way from host memory; the host only at 256 for SGEMM, TF32 and BF16 on the H100
    sizes = table_rows(h100, "offload-sizes")
    assert len(sizes) == 28
    best = {(r[0], r[1]): r[8] for r in sizes}
    assert best[("sgemm", "256")] == "host" and best[("dgemm", "256")] == "GPU, pinned"
    assert best[("dgemm", "16384")] == "- (no host timing)"
    assert {b for (p, n), b in best.items() if n not in ("256", "16384")} == {"GPU, pinned"}


def test_offload_model_line_comes_from_the_fitted_pcie_model(offload_page):
    plots = figures(offload_page)
    assert {"offload:h100", "offload:h200"} <= set(plots)
    svg = plots["offload:h100"]
    for prec in OFFLOAD_PRECISIONS:
        for series in ("host", "kernel", "pinned", "pageable"):
            assert svg.count(f'id="offload-h100-{prec}-{series}"') == 1, (prec, series)
        points = svg[svg.index(f'id="offload-h100-{prec}-kernel"') :]
        points = points[: points.index(f'id="offload-h100-{prec}-pinned"')]
        assert points.count("<use ") == 7, prec  # n = 256 .. 16384
        model = svg[svg.index(f'id="offload-h100-{prec}-model"') :]
        assert re.search(r' d="([^"]+)"', model).group(1).count("L") == 6, prec
    assert 'id="offload-h100-dgemm-crossover-pageable"' in svg and 'id="offload-h100-dgemm-crossover-pinned"' not in svg
    assert "PCIe model fitted by gpuaccept-bw (2026-11-22T05:31:47Z)" in svg
    # The model's error, worked by hand for DGEMM at n=16384 from the two documents: the H2D of A and B back to back,
    # (L+o) + 2 n^2 8 G + g, the kernel measured, the D2H of C, (L+o) + n^2 8 G.
    bw = {m["direction"]: m for m in json.loads((H100_BW / "bandwidth.json").read_text())["results"]["model"]
          if m["gpu"] == 0}  # fmt: skip
    case = next(c for c in json.loads((OFFLOAD / "h100-1" / "xgemm.json").read_text())["results"]["cases"]
                if c["precision"] == "dgemm" and c["n"] == 16384)  # fmt: skip
    n2 = 16384 * 16384 * 8
    predicted = (bw["h2d"]["lo_us"] * 1e-6 + 2 * n2 * bw["h2d"]["G_s_per_byte"] + bw["h2d"]["g_us"] * 1e-6
                 + case["kernel"]["seconds"] + bw["d2h"]["lo_us"] * 1e-6 + n2 * bw["d2h"]["G_s_per_byte"])  # fmt: skip
    measured = 2 * 16384**3 / (case["pinned"]["gflops"] * 1e9)
    row = next(r for r in table_rows(offload_section(offload_page), "offload-sizes") if r[:2] == ["dgemm", "16384"])
    assert row[9] == f"{(predicted - measured) / measured:+.1%}" == "+3.3%"


def test_offload_without_a_fitted_model_draws_no_line_and_says_so(offload_page):
    section = offload_section(offload_page)
    h200 = section[section.index("<h3 id='offload-gemm-h200'>") :]
    assert "no fitted PCIe model among this column&#x27;s documents (no gpuaccept-bw run): no model line" in h200
    assert "<th>pinned model error</th>" not in h200
    svg = figures(offload_page)["offload:h200"]
    assert "-model" not in svg and 'id="offload-h200-bf16-pinned"' in svg


def test_offload_raw_document_is_analysed_against_the_columns_host_documents(offload_page, tmp_path):
    raw = offload_folder(tmp_path, "h100-1", "xgemm.json", "cpugemm-n*.json")
    section = offload_section(report.build([report.load_group(f"h100={raw}")], "raw"))
    recorded = table_rows(offload_section(offload_page), "offload-crossover")[:4]
    assert table_rows(section, "offload-crossover") == recorded
    # without the host's documents: no crossover, said once, and the ratios still shown
    (tmp_path / "alone").mkdir()
    alone = offload_folder(tmp_path / "alone", "h100-1", "xgemm.json")
    section = offload_section(report.build([report.load_group(f"h100={alone}")], "alone"))
    why = "no host GEMM timings among this column&#x27;s documents (gpuaccept-cpugemm)"
    assert f"No crossover: {why}." in section
    rows = table_rows(section, "offload-crossover")
    assert [r[3:5] for r in rows] == [[why, why]] * 4 and [r[6:] for r in rows] == [r[6:] for r in recorded]
    assert 'id="offload-h100-dgemm-host"' not in figures(section)["offload:h100"]


def test_a_run_without_xgemm_has_no_offload_subsection(page, tmp_path):
    section = offload_section(page)
    assert "<h3" not in section and "<figure" not in section
    assert "No gpuaccept-xgemm documents among the inputs" in section
    doc = json.loads((OFFLOAD / "h200" / "xgemm.json").read_text())
    del doc["results"]["cases"][3]["pinned"]
    (tmp_path / "xgemm.json").write_text(json.dumps(doc))
    section = offload_section(report.build([report.load_group(f"h200={tmp_path}")], "broken"))
    assert "cannot be read: " in section and "lacks pinned.gflops" in section and "<figure" not in section


# gpuaccept-fft on the H100 (MKL) and the H200 (FFTW) (tests/fixtures/fft_offload/README.md), each kept as the
# evaluation suite's fft_offload check keeps it: fft_offload.json in the check's output.
FFT = Path(__file__).resolve().parent / "fixtures" / "fft_offload"
FFT_CASES = ("fft1d_fp32", "fft1d_fp64", "fft3d_fp32", "fft3d_fp64")


def fft_section(page):
    return page[page.index("<h2 id='offload-fft'>") : page.index("<h2 id='gemm'>")]


@pytest.fixture(scope="module")
def fft_page(tmp_path_factory):
    """The H100's raw document (analysed by the report) beside the H100's PCIe fit; the H200's annotated one alone."""
    tmp = tmp_path_factory.mktemp("fft-report")
    (tmp / "h100").mkdir()
    (tmp / "h100" / "fft_offload.json").write_bytes((FFT / "h100-mkl" / "fft.json").read_bytes())
    (tmp / "h100" / "bandwidth.json").write_bytes((H100_BW / "bandwidth.json").read_bytes())
    (tmp / "h200").mkdir()
    (tmp / "h200" / "fft_offload.json").write_bytes((FFT / "h200-fftw" / "fft-crossover.json").read_bytes())
    groups = [report.load_group(f"h100={tmp / 'h100'}"), report.load_group(f"h200={tmp / 'h200'}")]
    return report.build(groups, "fft", generated="2026-11-26")


def test_fft_section_gives_the_crossovers_the_analysis_computes(fft_page):
    section = fft_section(fft_page)
    assert re.findall(r"<h3 id='offload-fft-([^']+)'>", section) == ["h100", "h200"]
    for label, gpu, host in (("h100", "h100-mkl", "Intel MKL DFTI"), ("h200", "h200-fftw", "FFTW3")):
        part = section[section.index(f"<h3 id='offload-fft-{label}'>") :]
        doc = json.loads((FFT / gpu / "fft.json").read_text())
        per = fft.analyse(doc)
        rows = table_rows(part, "fft-crossover")
        assert [r[1:3] for r in rows] == [["1-D batched", "fp32"], ["1-D batched", "fp64"], ["3-D", "fp32"],
                                          ["3-D", "fp64"]]  # fmt: skip
        assert [r[3:5] for r in rows] == [[per[c]["pinned"]["text"], per[c]["pageable"]["text"]] for c in FFT_CASES]
        assert {r[5] for r in rows} == {"134217728"}
        speedups = [[float(x) for x in r[6:9]] for r in rows]
        assert speedups == [pytest.approx([doc["metrics"][f"{c}_speedup_{m}"]["value"]
                                           for m in ("kernel", "pinned", "pageable")], rel=1e-3)
                            for c in FFT_CASES]  # fmt: skip
        assert {r[9] for r in rows} == {html.escape(doc["parameters"]["host_fft"]["library"])}
        assert rows[0][9].startswith(host) and {r[10] for r in rows} == {"16"}
    h100 = section[: section.index("<h3 id='offload-fft-h200'>")]
    # 3-D FP64 from pinned memory: the H100 against 16 MKL threads from 2.36 M points (n = 133 cubed)
    assert "points = 2364189 (between 2097152 and 7077888, interpolated in log points)" in h100
    sizes = table_rows(h100, "fft-sizes")
    assert len(sizes) == 2 * 16 + 2 * 11
    best = {(r[0], r[1]): r[9] for r in sizes}
    assert best[("fft3d_fp64", "134217728")] == "GPU, pinned" and best[("fft1d_fp32", "134217728")] == "host"


def test_fft_model_line_is_cufft_plus_the_copies_by_the_fitted_pcie_model(fft_page):
    plots = figures(fft_page)
    assert {"fft:h100", "fft:h200"} <= set(plots)
    svg = plots["fft:h100"]
    for case, sizes in zip(FFT_CASES, (16, 16, 11, 11), strict=True):
        for series in ("host", "kernel", "pinned", "pageable", "model"):
            assert svg.count(f'id="fft-h100-{case}-{series}"') == 1, (case, series)
        points = svg[svg.index(f'id="fft-h100-{case}-kernel"') :]
        points = points[: points.index(f'id="fft-h100-{case}-pinned"')]
        assert points.count("<use ") == sizes, case
        model = svg[svg.index(f'id="fft-h100-{case}-model"') :]
        assert re.search(r' d="([^"]+)"', model).group(1).count("L") == sizes - 1, case
    assert 'id="fft-h100-fft3d_fp64-crossover-pinned"' in svg
    assert 'id="fft-h100-fft3d_fp64-crossover-pageable"' not in svg
    assert "PCIe model fitted by gpuaccept-bw (2026-11-22T05:31:47Z)" in svg
    # The model's error, worked by hand for 3-D FP64 at 512^3 points: H2D of the input, (L+o) + points 16 G, the
    # cuFFT time measured, D2H of the output, (L+o) + points 16 G; against the measured pinned offload.
    bw = {m["direction"]: m for m in json.loads((H100_BW / "bandwidth.json").read_text())["results"]["model"]
          if m["gpu"] == 0}  # fmt: skip
    case = next(c for c in json.loads((FFT / "h100-mkl" / "fft.json").read_text())["results"]["cases"]
                if c["shape"] == "3d" and c["precision"] == "fp64" and c["size"] == 512)  # fmt: skip
    nbytes = 512**3 * 16
    assert case["bytes"] == pytest.approx(nbytes, rel=1e-8)  # what the tool copies each way: the FP64 complex array
    predicted = (bw["h2d"]["lo_us"] * 1e-6 + nbytes * bw["h2d"]["G_s_per_byte"] + case["kernel"]["seconds"]
                 + bw["d2h"]["lo_us"] * 1e-6 + nbytes * bw["d2h"]["G_s_per_byte"])  # fmt: skip
    measured = case["pinned"]["seconds"]
    row = next(r for r in table_rows(fft_section(fft_page), "fft-sizes") if r[:2] == ["fft3d_fp64", "134217728"])
    assert row[10] == f"{(predicted - measured) / measured:+.1%}" == "+1.6%"


def test_fft_without_a_fitted_model_draws_no_line_and_says_so(fft_page):
    section = fft_section(fft_page)
    h200 = section[section.index("<h3 id='offload-fft-h200'>") :]
    assert "no fitted PCIe model among this column&#x27;s documents (no gpuaccept-bw run): no model line" in h200
    assert "<th>pinned model error</th>" not in h200 and all(len(r) == 10 for r in table_rows(h200, "fft-sizes"))
    svg = figures(fft_page)["fft:h200"]
    assert "-model" not in svg and 'id="fft-h200-fft3d_fp64-pinned"' in svg
    # the H200 against FFTW: 3-D from pinned memory wins at every size, from pageable from 5.2 M points (FP64)
    assert 'id="fft-h200-fft3d_fp64-crossover-pageable"' in svg
    assert 'id="fft-h200-fft3d_fp64-crossover-pinned"' not in svg
    assert "points = 5205949 (between 2097152 and 7077888" in h200


def test_a_run_without_fft_has_no_fft_subsection(page, tmp_path):
    section = fft_section(page)
    assert "<h3" not in section and "<figure" not in section
    assert "No gpuaccept-fft documents among the inputs (the evaluation suite&#x27;s" not in section
    assert "No gpuaccept-fft documents among the inputs" in section and "<code>fft_offload</code>" in section
    doc = json.loads((FFT / "h200-fftw" / "fft.json").read_text())
    del doc["results"]["cases"][3]["pinned"]
    (tmp_path / "fft_offload.json").write_text(json.dumps(doc))
    section = fft_section(report.build([report.load_group(f"h200={tmp_path}")], "broken"))
    assert "cannot be read: " in section and "lacks pinned.seconds" in section and "<figure" not in section
