"""The first page of the report of the recorded 2 x H200 and 4 x H200 runs (tests/fixtures/multigpu_h200x2_one_revision
and multigpu_h200x4_one_revision, nine and ten `make accept` runs): every number in its headline table is checked
against the runs' verdict.json rows, read here as plain JSON (not through the report's reader): each run's figure is
its node row, or its slowest GPU's row; the median, range and run count over the runs; the verdict column says pass
where every GPU passed in every run; the datasheet fraction is that median over gpu_peaks.yaml's figure; the figure it
is judged against is the node type's reference. The decision line, the GPU-by-GPU summary and each verdict's line are
checked the same way, and the page names no internal id or machine label."""

import datetime as dt
import json
import re
import statistics
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, ROOT

from gpuaccept import references
from gpuaccept.results import report, report_headline

RECORDED = {"h200_x2": "multigpu_h200x2_one_revision", "h200_x4": "multigpu_h200x4_one_revision"}
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?")
PEAKS = yaml.safe_load((ROOT / "reference_values" / "datasheets" / "gpu_peaks.yaml").read_text())["gpus"]
PEAKS = PEAKS["h200_sxm_141gb"]


@pytest.fixture(scope="module", params=sorted(RECORDED))
def recorded(request, tmp_path_factory):
    """(node type, the runs' verdict.json documents, the page) of one recorded set."""
    out = tmp_path_factory.mktemp(request.param)
    for tar in sorted((FIXTURES / RECORDED[request.param]).glob("*.tar.gz")):
        with tarfile.open(tar) as t:
            t.extractall(out, filter="data")
    verdicts = [json.loads(p.read_text()) for p in sorted(out.rglob("verdict.json"))]
    page = report.build([report.load_group(f"node={out}")], "recorded", generated="x")
    return request.param, verdicts, page[page.index("<section id='headline'>") : page.index("</section>")]


def numbers(cell: str) -> list[str]:
    """The numbers a cell shows (its citations [n] and markup left out)."""
    text = re.sub(r"<sup class='cite'>.*?</sup>", "", cell)
    text = re.sub(r"<[^>]+>", " ", text).replace("&ge;", "").replace("&le;", "")
    return NUMBER.findall(text.replace(",", ""))


def run_value(verdict, fig):
    """(value, status) of a figure in one run: its node row, else its slowest GPU's row and worst status."""
    mine = [r for r in verdict["rows"] if r["check"] == fig.check and r["metric"] == fig.metric]
    rows = [r for r in mine if r.get("gpu") is None] or mine
    values = [r["value"] for r in rows if isinstance(r.get("value"), (int, float))]
    if not rows:
        return None, None
    status = next(s for s in ("fail", "not_run", "pass", "info", "waived") if any(r["status"] == s for r in rows))
    return ((min if fig.better == "higher" else max)(values) if values else None), status


def fmt(x: float) -> str:
    return f"{x:.0f}" if x >= 1e4 else f"{x:.4g}"


def test_every_number_of_the_headline_table_is_the_verdict_rows(recorded):
    node_type, verdicts, section = recorded
    nt = references.load_node_type(ROOT / "reference_values", node_type)
    rows = dict(re.findall(r"<tr data-group='node' data-figure='([^']+)'>(.*?)</tr>", section, re.S))
    checked = 0
    for fig in report_headline.FIGURES:
        if fig.key not in rows:
            continue
        cells = re.findall(r"<td>(.*?)</td>", rows[fig.key], re.S)
        found = [run_value(v, fig) for v in verdicts]
        values = [x for x, _ in found if x is not None]
        statuses = [s for _, s in found if s]
        if not values:
            assert "class='missing'" in cells[1] and numbers(cells[0] + cells[1]) == numbers(fig.label), fig.key
            continue
        med = statistics.median(values)
        want = [fmt(med), str(len(values))] + ([fmt(min(values)), fmt(max(values))] if len(values) > 1 else [])
        shown = numbers(cells[1])
        assert shown[: len(want)] == want, (fig.key, shown, want)
        assert len(shown) == len(want) or fig.key == "hplstyle_energy", (fig.key, shown)  # + the LU's N
        # the verdicts' column: each status in how many runs; a per-GPU figure passes where every GPU passed
        counts = {s: statuses.count(s) for s in set(statuses)}
        words = {"info": "reported", "not_run": "not run"}
        for status, n in counts.items():
            assert f"{words.get(status, status)}</span> {n}/{len(statuses)}" in cells[4] or (
                f"{words.get(status, status)} {n}/{len(statuses)}" in cells[4]), (fig.key, cells[4])
        assert sorted(numbers(cells[4])) == sorted(x for n in counts.values() for x in (str(n), str(len(statuses))))
        # of the datasheet peak: the median over gpu_peaks.yaml's figure, the figure as the datasheet gives it
        peak = {"gemm_fp64": PEAKS["tflops"]["fp64_tensor"], "hbm": PEAKS["memory_gbps"] / 2}.get(fig.key)
        if fig.check == "gemm" and fig.key != "gemm_fp64":
            peak = PEAKS["tflops"][fig.key.removeprefix("gemm_")]
        if peak:
            assert cells[2].startswith(f"{med / peak:.0%} of "), (fig.key, cells[2])
        # judged against: the node type's reference and its band
        ref = (nt.checks.get(fig.check) or {}).get(fig.metric)
        if ref is not None and ref.judged and ref.value is not None and ref.link_fraction is None:
            band = [fmt(b) for b in (ref.lower_bound, ref.upper_bound) if b is not None]
            assert numbers(cells[3]) == [fmt(ref.value), *band], (fig.key, cells[3])
        checked += 1
    assert checked >= 16


def test_the_decision_gpus_and_verdict_lines_are_the_runs(recorded):
    node_type, verdicts, section = recorded
    gpus = len(verdicts[0]["facts"]["gpus"])
    host = verdicts[0]["facts"]["hostname"]
    ok = sum(1 for v in verdicts if all(r["status"] in ("pass", "info", "waived") or not r.get("expected", True)
                                        for r in v["rows"]))  # fmt: skip
    decision = re.search(r"<ul class='decision'>(.*?)</ul>", section).group(1)
    assert f"node <span class='node-name'>{host}</span>" in decision and "localhost" not in section
    assert f"{gpus} x NVIDIA H200" in decision and f"node type {node_type};" in decision
    assert f"{ok} of {len(verdicts)} runs ACCEPTED" in decision and ok == len(verdicts)
    # every run accepted with nothing more to say: one line, how many, the suites, from when to when
    lines = re.findall(r"<li class='verdict'>(.*?)</li>", section)
    runs = sorted(verdicts, key=lambda v: v["started_unix"])
    when = [dt.datetime.fromtimestamp(v["started_unix"], dt.UTC).strftime("%Y-%m-%d %H:%MZ") for v in runs]
    suites = ", ".join(f"{sum(v['suite'] == s for v in runs)} {s}" for s in sorted({v["suite"] for v in runs}))
    assert [re.sub(r"<[^>]+>", "", line) for line in lines] == [
        f"ACCEPTED {len(runs)} runs of {host} ({suites}), {when[0]} to {when[-1]}"]


def test_the_gpu_by_gpu_summary_counts_each_gpus_slowest_figures_from_the_rows(recorded):
    _, verdicts, section = recorded
    labels = {("gemm", f"{p}_tflops_min"): f"GEMM {n}" for p, n in report_headline.GEMM_NAMES.items()}
    labels |= {("bandwidth", "d2d_min"): "HBM copy", ("bandwidth", "h2d_pinned_min"): "H2D pinned",
               ("bandwidth", "d2h_pinned_min"): "D2H pinned", ("bandwidth", "bidir_pinned_min"): "both ways pinned",
               ("hplstyle", "tflops_min"): "HPL-style LU"}  # fmt: skip
    slowest: dict[int, list[str]] = {}
    for key, label in labels.items():
        per: dict[int, list[float]] = {}
        for v in verdicts:
            for r in v["rows"]:
                if (r["check"], r["metric"]) == key and r.get("gpu") is not None:
                    per.setdefault(r["gpu"], []).append(r["value"])
        medians = {g: statistics.median(x) for g, x in per.items()}
        low = min(medians.values())
        if list(medians.values()).count(low) == 1:  # a tie names no GPU
            slowest.setdefault(min(medians, key=medians.get), []).append(label)
    total = sum(map(len, slowest.values()))
    summary = re.search(r"<ul class='slow'>(.*?)</ul>", section).group(1)
    for gpu, names in slowest.items():
        assert f"GPU {gpu} is the slowest in {len(names)} of {total} figures: {'; '.join(names)}" in summary


def test_the_page_cites_sources_by_title_and_names_no_internal_id_or_machine_label(recorded):
    _, _, section = recorded
    sources = re.search(r"<ol class='sources'>(.*?)</ol>", section).group(1)
    assert "NVIDIA H200 Tensor Core GPU datasheet (NVIDIA, 2024" in sources
    # a published figure for the same GPU beside the node's: the Top500 list's HPL per H100 and H200 GPU
    per_gpu = re.search(r"<tr data-group='node' data-figure='hpl_cuda_gpu'>(.*?)</tr>", section).group(1)
    public = r"public: Top500 H100 and H200 systems, 55-59 TFLOP/s per GPU<sup class='cite'>\[(\d+)\]"
    cited = re.search(public, per_gpu)
    items = re.findall(r"<li>(.*?)</li>", sources)
    assert cited and items[int(cited.group(1)) - 1].startswith("Glenn K. Lockwood, &quot;H100&quot;")
    assert not re.search(r"nvidia-[ah]\d+(-x\d+)?(?![-\w])|device tool|\blent\b|no-public-figure|-device-20", section)
    assert " 1 runs" not in section and "GPU GPU" not in section


def test_the_evidence_reports_are_regenerated_from_the_same_runs():
    """The reports kept in the evidence folders are what this revision's report makes of the recorded runs."""
    for folder, name in (("2026-11-27-h200x2-one-revision", "report-h200x2.html"),
                         ("2026-11-27-h200x4-one-revision", "report-h200x4.html")):  # fmt: skip
        text = (ROOT / "docs" / "evidence" / folder / name).read_text()
        first = text[text.index("<section id='headline'>") : text.index("</section>")]
        assert "localhost" not in first and "device tool" not in first and "(27 runs" not in first
        assert "(every GPU)" in first, name
        assert "Regenerated on 2026-11-28" in (ROOT / "docs" / "evidence" / folder / "README.md").read_text()
    assert Path(ROOT / "docs" / "evidence").is_dir()
