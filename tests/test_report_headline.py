"""The report's first page (gpuaccept.results.report_headline) and its GPU-by-GPU section
(gpuaccept.results.report_pergpu) on runs recorded on the GPU machines: every headline figure is the median of the
runs' own values, set against the datasheet and the node type's reference with their sources; the GPU count and model
come from the node's facts; on the 2 x H200 node each GPU's figures are its own, the slow one named. Where a case
needs documents no machine has recorded (per-GPU documents with ``gpu_metrics``, HPL at two GPU counts), the test
builds them from recorded ones and says so. The browser's view of the first page: tests/test_report_browser.py."""

import copy
import html
import json
import re
import statistics
import tarfile

import pytest
from conftest import FIXTURES, H100_DEGRADED, H100_RUNS, H200_RUNS, H200X2, RECORDED

from gpuaccept.cli import main
from gpuaccept.results import report, report_headline, report_pergpu

H100_EVALUATION = RECORDED / "2026-11-23-h100-evaluation" / "accept"
INPUTS = [f"h100_sxm5_80gb={H100_RUNS},{H100_EVALUATION}", f"h200={H200_RUNS}", f"2xH200={H200X2}"]


@pytest.fixture(scope="module")
def groups():
    return [report.load_group(spec) for spec in INPUTS]


@pytest.fixture(scope="module")
def page(groups):
    return report.build(groups, "first page", generated="2026-11-27")


def headline(page):
    return page[page.index("<section id='headline'>") : page.index("</section>")]


def rows(section, group):
    """{figure key: row HTML} of one column's headline table."""
    return dict(re.findall(rf"<tr data-group='{re.escape(group)}' data-figure='([^']+)'>(.*?)</tr>", section, re.S))


def cells(row):
    return re.findall(r"<td>(.*?)</td>", row, re.S)


def verdict_value(verdict, fig):
    """A judged run's figure as its verdict.json's rows hold it: the node's row, else the slowest GPU's row."""
    mine = [r for r in verdict["rows"] if r["check"] == fig.check and r["metric"] == fig.metric]
    node = [r["value"] for r in mine if r.get("gpu") is None and isinstance(r.get("value"), (int, float))]
    each = [r["value"] for r in mine if r.get("gpu") is not None and isinstance(r.get("value"), (int, float))]
    if node or each:  # two rows of the node (a suite that ran the check twice) or of its GPUs: the slowest
        return (min if fig.better == "higher" else max)(node or each)
    return None


def own_median(group, fig):
    """The median of the figure over the column's runs: a judged run's from its verdict.json (read here, not
    through the report), a run no verdict judged from its documents, as the runs wrote them."""
    values = [x for p in group.paths for f in sorted(p.rglob("verdict.json"))
              if (x := verdict_value(json.loads(f.read_text()), fig)) is not None]  # fmt: skip
    values += [d["metrics"][fig.metric]["value"] for d in group.unjudged
               if d.get("tool") == fig.tool and fig.metric in (d.get("metrics") or {})
               and (not fig.system or d["results"]["system"]["name"] == fig.system)]  # fmt: skip
    return statistics.median(values) if values else None


def test_the_first_page_comes_first_and_every_figure_is_the_runs_own(groups, page):
    assert page.index("<section id='headline'>") < page.index("<h2 id='inventory'>")
    section = headline(page)
    checked = 0
    for g in groups:
        found = rows(section, g.label)
        assert set(found) == {f.key for f in report_headline.FIGURES if not f.optional}, g.label
        for fig in report_headline.FIGURES:
            if fig.key not in found:
                continue
            want = own_median(g, fig)
            shown = re.search(r"<b class='value' data-value='([^']+)'>([^<]+)</b>", found[fig.key])
            if want is None:
                continue  # from the verdicts, or not measured: below
            assert shown, (g.label, fig.key)
            assert float(shown.group(1)) == want and shown.group(2) == f"{want:.4g}", (g.label, fig.key)
            checked += 1
    assert checked >= 9 + 9 + 11  # H100: HPL, GEMM, bandwidth, MD...; H200: GEMM, bandwidth; 2 x H200: + peers


def test_the_gpu_count_and_model_come_from_the_nodes_facts(page, tmp_path):
    section = headline(page)
    assert re.search(r"<b>2xH200</b>: node <span class='node-name'>[^<]+</span>, <span class='gpus'>2 x NVIDIA H200 "
                     r"\(140 GiB each\)</span>, node type h200_x2", section)
    assert "node type h200_x2 (detected from the node&#x27;s facts)" in section
    # A run that kept one GPU's document beside the node's facts (made here: the recorded single-GPU H200 GEMM
    # document and the 2 x H200 node's facts): the node has two GPUs, not one.
    (tmp_path / "gemm.json").write_bytes((H200_RUNS / "smoke" / "gemm.json").read_bytes())
    (tmp_path / "facts.json").write_bytes((H200X2 / "facts.json").read_bytes())
    one = report.load_group(f"x={tmp_path}")
    assert len(json.loads((tmp_path / "gemm.json").read_text())["devices"]) == 1
    node = report_headline.node(one)
    assert (node.gpus, node.models, node.origin) == (2, ("NVIDIA H200",), "node facts")
    (tmp_path / "facts.json").unlink()
    assert report_headline.node(report.load_group(f"x={tmp_path}")).text == "1 x NVIDIA H200 (140 GiB each)"
    inventory = report.build([one], "one")
    assert "<td>GPUs</td><td>2 x NVIDIA H200 (node facts)</td>" in inventory


def test_fractions_of_the_datasheet_and_of_the_links(page):
    x2 = rows(headline(page), "2xH200")
    gemm = json.loads((H200X2 / "gemm.json").read_text())["metrics"]
    bw = json.loads((H200X2 / "bandwidth.json").read_text())["metrics"]
    # GEMM against the H200's datasheet rate of its precision, dense (gpu_peaks.yaml)
    assert f"{gemm['fp64_tflops_min']['value'] / 67:.0%} of 67 TFLOP/s FP64 tensor" in cells(x2["gemm_fp64"])[2]
    assert f"{gemm['fp8_tflops_min']['value'] / 1979:.0%} of 1979 TFLOP/s FP8 tensor" in cells(x2["gemm_fp8"])[2]
    # a device-to-device copy reads and writes each byte: twice its rate against the HBM's 4.8 TB/s
    assert f"{2 * bw['d2d_min']['value'] / 4800:.0%} of HBM 4800 GB/s" in cells(x2["hbm"])[2]
    # pinned copies against the PCIe link the facts report; peer copies against NVLink per direction
    assert f"{bw['h2d_pinned_min']['value'] / 63.015:.0%} of PCIe Gen5 x16, 63.0 GB/s" in cells(x2["h2d"])[2]
    assert f"{bw['p2p_write_min']['value'] / 450:.0%} of NVLink 450 GB/s per direction" in cells(x2["p2p"])[2]
    assert "86% of NVLink 900 GB/s both ways" in cells(x2["p2p_bidir"])[2]


def test_each_figure_names_what_it_is_judged_against_and_its_source(page):
    section = headline(page)
    h100 = rows(section, "h100_sxm5_80gb")
    sources = re.findall(r"<li>(.*?)</li>", section[section.index("<ol class='sources'>") :])

    def cited(row):
        return [html.unescape(sources[int(n) - 1]) for n in re.findall(r"\[(\d+)\]</sup>", row)]

    # GEMM FP64: the H100 SKU's measured reference, its band, and where it was measured
    judged = cells(h100["gemm_fp64"])[3]
    assert judged.startswith("53.13 TFLOP/s (&ge; 50.6)")
    assert any(s.startswith("Measured with gpuaccept on 1 x H100 80 GB SXM") for s in cited(judged)), cited(judged)
    assert any(s.startswith("NVIDIA H100 Tensor Core GPU datasheet") for s in cited(cells(h100["gemm_fp64"])[2]))
    # pinned copies: a fraction of the node's own link
    assert cells(h100["h2d"])[3].startswith("&ge; 50.41 GB/s (0.8 of the link)")
    # APOA1: the node type's reference, and NAMD 3.0's published A100 figure beside it
    apoa1 = cells(h100["apoa1"])
    assert "public: NAMD 3.0, A100 80GB PCIe, GPU-resident 110.6 ns/day" in apoa1[3]
    assert any("kguerns/namd_hw" in s for s in cited(apoa1[3]))
    # GFLOP/s per watt: formed by the judge from two documents, so the verdict's value
    verdict = json.loads(next(H100_EVALUATION.rglob("verdict.json")).read_text())
    per_watt = next(r["value"] for r in verdict["rows"] if (r["check"], r["metric"]) == ("hplstyle", "gflops_per_watt"))
    assert f"data-value='{per_watt!r}'>{per_watt:.4g}</b>" in h100["hplstyle_per_watt"]
    # a one-GPU node: peers and collectives waived, saying why
    assert "waived on this node: one GPU: no peers" in cells(h100["p2p"])[1] and cells(h100["p2p"])[4] == "waived 4/4"


def test_verdicts_in_one_line_each_with_their_reasons():
    section = headline(report.build([report.load_group(f"degraded={H100_DEGRADED}")], "d", generated="x"))
    lines = re.findall(r"<li class='(verdict|reason)'>(.*?)</li>", section)
    assert lines[0] == ("verdict", "<span class='fail'>REJECTED</span> vm, commission suite, 2026-11-22 05:35Z")
    assert ("reason", "gemm fp64_tflops_min: outside the reference&#x27;s tolerance") in lines
    assert ("reason", "bandwidth: ReFrame did not run this check (not selected, or filtered out: see reframe.log in "
                      "the run directory)") in lines  # fmt: skip
    assert all("\n" not in text for _, text in lines)
    # no documents: the value is the verdict's
    gemm = rows(section, "degraded")["gemm_fp64"]
    assert "<b class='value' data-value='24.3259" in gemm and "<span class='fail'>fail</span> 1/1" in gemm


def test_two_node_types_side_by_side_give_ratios_and_say_which_is_better_for_what(groups, page):
    section = headline(page)
    compare = section[section.index("<table class='headline-compare'>") :]
    hbm = re.search(r"<tr data-figure='hbm'>(.*?)</tr>", compare).group(1)
    fig = {f.key: f for f in report_headline.FIGURES}["hbm"]
    h100, h200 = (own_median(g, fig) for g in groups[:2])
    assert f"<span class='better' data-ratio='{h200 / h100!r}'>{h200 / h100:.2f}</span>" in hbm
    better = section[section.index("<table class='better-for'>") :]
    memory = re.search(r"<tr data-category='memory-bound codes'>(.*?)</tr>", better).group(1)
    assert "<span class='better'>h200</span>, 1.41 x" in memory
    assert "<span class='better'>2xH200</span>, 1.42 x" in memory
    fp64 = re.search(r"<tr data-category='FP64 simulation and linear algebra'>(.*?)</tr>", better).group(1)
    assert fp64.count("on a par") == 2
    # the first column is the baseline unless --baseline names another
    swapped = headline(report.build(groups, "t", baseline_label="h200", generated="x"))
    assert "better: h100_sxm5_80gb or h200" in swapped


def test_the_2x_h200_node_gpu_by_gpu(page):
    section = page[page.index("<h2 id='per-gpu'>") : page.index("<h2 id='compare'>")]
    table = section[section.index("<h3 id='per-gpu-2xH200'>") :]
    gemm = json.loads((H200X2 / "gemm.json").read_text())
    for r in gemm["results"]["gemm"]:
        if r["phase"] == "window" and r["mode"] == "solo" and r["m"] == 8192:
            cell = f"data-gpu='{r['gpu']}' data-metric='{r['precision']}_tflops_min'"
            assert f"{cell} data-value='{r['tflops_median']!r}'" in table, r
    # the node's metric is the slowest GPU's: GPU 0 for FP64 (52.87 against GPU 1's 53.10)
    slow = re.search(r"<td class='slowest' data-gpu='(\d)' data-metric='fp64_tflops_min' data-value='([^']+)'", table)
    assert slow.groups() == ("0", repr(gemm["metrics"]["fp64_tflops_min"]["value"]))
    assert "GPU 0 is the slowest in 8 of 11 figures" in table and "none: the GPUs are within 5 % of each other" in table
    first = headline(page)
    x2 = first[first.index("<h3 id='headline-2xH200'>") :]
    assert "<a href='#per-gpu-2xH200'>GPU by GPU</a>" in x2 and "GPU 0 is the slowest in 8 of 11 figures" in x2
    assert "GPU by GPU</a>" not in first[: first.index("<h3 id='headline-2xH200'>")]  # one-GPU columns: none
    for name in ("h100_sxm5_80gb", "h200"):
        assert f"<h3 id='per-gpu-{name}'>" in section  # one GPU: said so, no table
    busy = re.search(r"<tr><td>2xH200</td><td>FP64</td>(.*?)</tr>", section).group(1)
    ratio = gemm["metrics"]["fp64_concurrent_tflops_min"]["value"] / gemm["metrics"]["fp64_tflops_min"]["value"]
    assert busy.endswith(f"<td>{ratio:.3f}</td>")


def test_per_gpu_figures_come_from_gpu_metrics_where_a_tool_writes_them(tmp_path):
    """A gpuaccept-gemm document with ``gpu_metrics`` (made here from the recorded 2 x H200 one: GPU 1's FP64 figure
    set 20 % low) and a verdict that failed GPU 1 (made here): GPU 1 is named slow and its cell marked."""
    doc = json.loads((H200X2 / "gemm.json").read_text())
    metric = {"unit": "TFLOP/s", "better": "higher"}
    doc["gpu_metrics"] = [{"gpu": g, "metrics": {"fp64_tflops_min": {"value": v, **metric}}}
                          for g, v in ((0, 53.0), (1, 42.4))]  # fmt: skip
    (tmp_path / "gemm.json").write_text(json.dumps(doc))
    (tmp_path / "facts.json").write_bytes((H200X2 / "facts.json").read_bytes())
    page = report.build([report.load_group(f"x2={tmp_path}")], "gpu_metrics")
    section = page[page.index("<h2 id='per-gpu'>") : page.index("<h2 id='compare'>")]
    assert "data-metric='fp32_tflops_min'" not in section  # gpu_metrics, not results.gemm
    cell = re.search(r"<td class='([^']*)' data-gpu='1' data-metric='fp64_tflops_min'[^>]*>([^<]+)", section)
    assert cell.groups() == ("slowest", "42.4 ")
    # Judged: each GPU's figure is its verdict's row (the judged run's documents are not read); a failed GPU marked
    verdict = {"schema": "gpuaccept.verdict/1", "node": "vm", "node_type": "h200_x2", "suite": "commission",
               "verdict": "fail", "started_unix": 1795334510, "facts": json.loads((H200X2 / "facts.json").read_text()),
               "rows": [{"check": "gemm", "metric": "fp64_tflops_min", "gpu": g, "status": status, "value": v,
                         "reason": reason, "expected": True}
                        for g, v, status, reason in ((0, 53.0, "pass", ""), (1, 42.4, "fail", "below 50.7 TFLOP/s"))]}
    (tmp_path / "verdict.json").write_text(json.dumps(verdict))  # fmt: skip
    doc["gpu_metrics"][1]["metrics"]["fp64_tflops_min"]["value"] = 10.0  # a document the verdict did not judge by
    (tmp_path / "gemm.json").write_text(json.dumps(doc))
    page = report.build([report.load_group(f"x2={tmp_path}")], "gpu_metrics")
    section = page[page.index("<h2 id='per-gpu'>") : page.index("<h2 id='compare'>")]
    cell = re.search(r"<td class='([^']*)' data-gpu='1' data-metric='fp64_tflops_min'[^>]*>([^<]+)", section)
    assert cell.groups() == ("slowest fail", "42.4 ")
    assert "slow beyond 5 %: GPU 1: GEMM FP64 -20.0% from the other GPUs&#x27; median" in section
    # the headline's reasons name the GPU
    assert "gemm fp64_tflops_min (GPU 1): below 50.7 TFLOP/s" in headline(page)


def test_scaling_over_gpu_counts_where_runs_of_two_counts_exist(tmp_path):
    """HPL-CUDA on one and on two GPUs of one model: the recorded one-GPU H100 run, and a two-GPU document made here
    from it (its rate x 1.9, ``gpus_used`` 2); the table gives the rate per GPU and the efficiency."""
    one = next(RECORDED.parent.glob("hpl_cuda_reframe/*/reframe/output/gpuaccept/node/builtin/GpuHplCuda"))
    doc = json.loads((one / "hpl_cuda.json").read_text())
    two = copy.deepcopy(doc)
    two["started_utc"] = "2026-11-26T00:00:00Z"
    two["parameters"]["backend"]["gpus_used"] = 2
    two["metrics"]["tflops"]["value"] = doc["metrics"]["tflops"]["value"] * 1.9
    facts = next(one.parents[5].glob("node-facts.json")).read_bytes()  # the run's: an H100 (GPU model)
    for name, d in (("a", doc), ("b", two)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "hpl_cuda.json").write_text(json.dumps(d))
        (tmp_path / name / "node-facts.json").write_bytes(facts)
    groups = [report.load_group(f"one={tmp_path / 'a'}"), report.load_group(f"two={tmp_path / 'b'}")]
    table = report_pergpu.scaling_table(groups)
    rate = doc["metrics"]["tflops"]["value"]
    assert f"<td>1</td><td>{rate:.4g}</td><td>{rate:.4g}</td><td>100%</td>" in table
    assert f"<td>2</td><td>{rate * 1.9:.4g}</td><td>{rate * 0.95:.4g}</td><td>95%</td>" in table
    assert "No HPL or NCCL runs of one GPU model at two GPU counts" in report_pergpu.scaling_table(groups[:1])


def test_pdf_without_chromium_names_the_package(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPUACCEPT_CHROMIUM", "no-such-chromium")
    args = ["report", "--output", str(tmp_path / "r.html"), "--pdf", str(tmp_path / "r.pdf"), f"x={H200X2}"]
    assert main(args) == 4
    assert "apt-get install chromium" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_a_node_figure_counts_only_runs_over_every_gpu_of_the_node(tmp_path):
    """The 4 x H200 node's HPL-CUDA beside its scaling runs on 1 and 2 GPUs (tests/fixtures/multigpu_h200x4): the
    node's rate is the median of the runs over all four GPUs, never of the smaller ones; the rate per GPU counts
    them all."""
    here = FIXTURES / "multigpu_h200x4"
    with tarfile.open(here / "results.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    run = tmp_path / "results" / "localhost" / "20261127T172659Z-commission"
    group = report.load_group(f"h200_x4={run},{here / 'hpl_scaling'}")
    fig = {f.key: f for f in report_headline.FIGURES}
    node_rate = report_headline.measure(group, fig["hpl_cuda"])
    assert sorted(round(v, 2) for v in node_rate.values) == [166.23, 180.43, 182.78]  # 2 x 2, 1 x 4, the suite's
    assert len(report_headline.measure(group, fig["hpl_cuda_gpu"]).values) == 5
