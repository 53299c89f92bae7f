"""The report as a person sees it: rendered by headless Chromium (Debian's chromium package), the plots are in
the laid-out DOM with their lines, the screenshot shows them drawn in their colours, and the printed PDF's first page
holds the decision with the runs' own figures (read back with pdftotext, Debian's poppler-utils). `make test` (and so
CI) installs both (scripts/deps.sh) and sets GPUACCEPT_REQUIRE_CHROMIUM=1, so there a missing browser or pdftotext
fails instead of skipping; a bare `pytest` without them skips."""

import os
import re
import shutil
import subprocess

import pytest
from conftest import H100_RUNS, H200_RUNS, H200X2
from PIL import Image  # requirements/report.txt, which scripts/venv.sh test installs

from gpuaccept.results import report, report_headline

if not report.chromium():
    if os.environ.get("GPUACCEPT_REQUIRE_CHROMIUM") == "1":
        pytest.fail("GPUACCEPT_REQUIRE_CHROMIUM=1 but no Chromium on PATH (apt-get install chromium)", pytrace=False)
    pytest.skip("no Chromium on PATH (apt-get install chromium)", allow_module_level=True)

WIDTH = 1400


@pytest.fixture(scope="module")
def groups():
    return [report.load_group(s) for s in (f"h100_sxm5_80gb={H100_RUNS}", f"h200={H200_RUNS}", f"2xH200={H200X2}")]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, groups):
    out = tmp_path_factory.mktemp("report")
    html_path = out / "report.html"
    html_path.write_text(report.build(groups, "H100 vs H200", generated="2026-11-22"))
    return html_path, report.dump_dom(html_path), report.screenshot(html_path, out / "report.png", WIDTH, 16000)


def test_the_browser_lays_out_every_plot_with_its_lines(rendered):
    _, dom, _ = rendered
    figures = re.findall(r'<figure class="plot" data-plot="([^"]+)">(.*?)</figure>', dom, re.S)
    assert len(figures) >= 14, [f for f, _ in figures]
    for plot_id, body in figures:
        assert "<svg" in body, plot_id
        paths = re.findall(r' d="([^"]+)"', body)
        if plot_id.startswith(("matrix:", "peer:")):  # heat maps: the image of the cells
            assert re.search(r'<image[^>]+href="data:image/png;base64,', body), f"{plot_id}: no heat map image"
        elif plot_id == "gemm:compare":  # bars: one closed path each, 6 precisions per node type
            assert sum(1 for d in paths if d.rstrip().endswith("z")) >= 12, f"{plot_id}: no bars"
        else:
            lines = [d for d in paths if len(re.findall(r"[ML]", d)) >= 5]  # 5 thread counts at least; axes are 2
            assert lines, f"{plot_id}: the browser's DOM has no drawn line"


def test_the_screenshot_shows_the_plots_drawn(rendered):
    _, _, png = rendered
    image = Image.open(png).convert("RGB")
    assert image.width == WIDTH
    box = Image.eval(image.convert("L"), lambda v: 255 - v).getbbox()
    assert box and box[3] > 6000, f"the page is drawn only down to {box}"  # tables and ~20 figures
    page = image.crop((0, 0, WIDTH, box[3]))
    small = page.resize((page.width // 4, page.height // 4))
    pixels = list(small.get_flattened_data())
    ink = sum(1 for p in pixels if min(p) < 200) / len(pixels)
    assert ink > 0.02, f"only {ink:.1%} of the page is drawn"

    def near(colour, tolerance=40):
        return sum(1 for p in pixels if sum(abs(a - b) for a, b in zip(p, colour, strict=True)) < tolerance)

    # The plots' line colours (matplotlib's blue and red, the heat maps' viridis yellow) are on the page.
    for name, colour in (("blue", (0x1F, 0x77, 0xB4)), ("red", (0xD6, 0x27, 0x28)), ("viridis", (0xFD, 0xE7, 0x25))):
        assert near(colour) > 50, f"no {name} plot ink in the screenshot"


def test_the_report_prints_to_pdf(rendered, tmp_path):
    html_path, _, _ = rendered
    pdf = report.print_pdf(html_path, tmp_path / "report.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 100_000
    assert not list(tmp_path.glob(".report.pdf.*"))  # no temporary file left behind


def own_median(group, fig):
    """The figure over the column's runs as they recorded it: a judged run's from its verdict.json's rows, a run no
    verdict judged from its documents (tests/test_report_headline.py's reading, not the report's)."""
    from test_report_headline import own_median as recorded  # noqa: PLC0415

    return recorded(group, fig)


def test_the_browser_lays_out_the_first_page_with_the_runs_own_figures(rendered, groups):
    _, dom, _ = rendered
    assert re.search(r"<h2[^>]*>([^<]*)</h2>", dom).group(1) == "The decision"  # before any detail
    checked = 0
    for g in groups:
        for fig in report_headline.FIGURES:
            row = re.search(rf"<tr data-group=\"{re.escape(g.label)}\" data-figure=\"{fig.key}\">(.*?)</tr>", dom, re.S)
            want = own_median(g, fig)
            if row is None or want is None:
                continue
            shown = re.search(r'<b class="value" data-value="([^"]+)">([^<]+)</b>', row.group(1))
            assert shown and float(shown.group(1)) == want and shown.group(2) == f"{want:.4g}", (g.label, fig.key)
            checked += 1
    assert checked >= 9 + 9 + 11


def test_the_printed_first_page_holds_the_decision_and_the_runs_own_figures(rendered, groups, tmp_path):
    if not shutil.which("pdftotext"):
        if os.environ.get("GPUACCEPT_REQUIRE_CHROMIUM") == "1":
            pytest.fail("pdftotext not found: apt-get install poppler-utils (scripts/deps.sh)", pytrace=False)
        pytest.skip("pdftotext not found (apt-get install poppler-utils)")
    html_path, _, _ = rendered
    pdf = report.print_pdf(html_path, tmp_path / "report.pdf")
    page1 = subprocess.run(["pdftotext", "-layout", "-f", "1", "-l", "1", str(pdf), "-"], capture_output=True,
                           text=True, check=True).stdout  # fmt: skip
    assert "The decision" in page1 and "Nodes and software" not in page1
    for g, gpus in zip(groups, ("1 x NVIDIA H100 80GB HBM3", "1 x NVIDIA H200", "2 x NVIDIA H200"), strict=True):
        assert re.search(rf"{re.escape(g.label)}: node \S+, {re.escape(gpus)}", page1), g.label
    # No near-blank page: every page before the detail ("Nodes and software") is a full one
    pages = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                           check=True).stdout.split("\f")  # fmt: skip
    detail = next(n for n, text in enumerate(pages) if "Nodes and software" in text)
    for n, text in enumerate(pages[:detail]):
        assert len([line for line in text.splitlines() if line.strip()]) >= 20, f"page {n + 1} is nearly blank"
    lines = page1.splitlines()
    compared = 0
    for fig in report_headline.FIGURES:
        want = [own_median(g, fig) for g in groups]
        if sum(w is not None for w in want) < 2:
            continue
        line = next((line.strip() for line in lines if line.strip().startswith(fig.label + " ")), None)
        assert line, (fig.label, page1)
        # the line: label, unit, then each column's median (and each other column's ratio to the first)
        tokens = line[len(fig.label) :].split()
        assert [tokens[1], *tokens[2::2]] == [f"{w:.4g}" if w is not None else "-" for w in want], line
        compared += 1
    assert compared == 9  # GEMM in six precisions, HBM, H2D, D2H: measured in all three
