"""The report as a person sees it: rendered by headless Chromium (Debian's chromium package), the plots are in
the laid-out DOM with their lines, and the screenshot shows them drawn in their colours. `make test` (and so CI)
installs chromium (scripts/deps.sh) and sets GPUACCEPT_REQUIRE_CHROMIUM=1, so there a missing browser fails
instead of skipping; a bare `pytest` without Chromium skips."""

import os
import re

import pytest
from conftest import H100_RUNS, H200_RUNS, H200X2
from PIL import Image  # requirements/report.txt, which scripts/venv.sh test installs

from gpuaccept.results import report

if not report.chromium():
    if os.environ.get("GPUACCEPT_REQUIRE_CHROMIUM") == "1":
        pytest.fail("GPUACCEPT_REQUIRE_CHROMIUM=1 but no Chromium on PATH (apt-get install chromium)", pytrace=False)
    pytest.skip("no Chromium on PATH (apt-get install chromium)", allow_module_level=True)

WIDTH = 1400


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    groups = [report.load_group(s) for s in (f"h100_sxm5_80gb={H100_RUNS}", f"h200={H200_RUNS}", f"2xH200={H200X2}")]
    html_path = out / "report.html"
    html_path.write_text(report.build(groups, "H100 vs H200", generated="2026-11-22"))
    return html_path, report.dump_dom(html_path), report.screenshot(html_path, out / "report.png", WIDTH, 12000)


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
