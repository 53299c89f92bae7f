"""The verdict table as a terminal shows it (verdict.table): it fits 120 columns, each reason is printed once
below the table under a note number, the retry warnings stay under it, and the headline closes it."""

import json
import re

import pytest
from conftest import RECORDED

from gpuaccept.judge import deviation, verdict
from gpuaccept.judge.verdict import Row, Verdict

VERDICTS = sorted(RECORDED.rglob("verdict.json"))


def notes(text: str) -> dict[str, str]:
    """Note number -> its reason, joined back from the wrapped lines."""
    out: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        m = re.match(r"^\[(\d+)\] (.*)$", line)
        if m:
            key = m.group(1)
            out[key] = m.group(2)
        elif key and line.startswith(" "):
            out[key] += " " + line.strip()
        else:
            key = None
    return out


@pytest.mark.parametrize("path", VERDICTS, ids=lambda p: str(p.relative_to(RECORDED)))
def test_a_recorded_verdict_fits_120_columns_with_each_reason_once(path):
    v = Verdict.from_json(json.loads(path.read_text()))
    text = verdict.table(v)
    body = text.splitlines()[:-1]  # the headline is one line whatever its length (scripts read it)
    assert all(len(line) <= verdict.WIDTH for line in body), max(body, key=len)
    assert text.splitlines()[-1] == verdict.headline(v) and text.count(verdict.headline(v)) == 1
    said = notes(text)
    # the deviation rules' figure rows are in their own section (deviation.section), not among the notes
    reasons = {" ".join(r.reason.split()) for r in v.rows
               if r.reason and r.status != "pass" and not deviation.is_figure_row(r)}  # fmt: skip
    assert sorted(said.values()) == sorted(reasons)
    unjudged = [r for r in v.rows if deviation.is_figure_row(r) and r.value is None and r.reason]
    for rule in {r.check for r in unjudged}:
        n = sum(r.check == rule for r in unjudged)
        assert f"  {rule:9} {n} figure(s) not judged, e.g. " in text


def test_a_long_reason_shared_by_many_rows_is_printed_once_and_warnings_stay():
    why = "no NVIDIA GPU found (" + "NVML: NVML Shared Library Not Found; " * 46 + ")"
    assert len(why) > 1700
    rows = [Row(c, None, "not_run", reason=why) for c in ("bandwidth", "gemm", "hplstyle", "power", "health")]
    rows += [Row("cpu_gemm", None, "pass", warning="passed on attempt 2; earlier: dgemm_gflops 500 GFLOP/s (below)"),
             Row("cpu_gemm", "dgemm_gflops", "pass", 610.0, "GFLOP/s", 600.0, 570.0, reason="within its band"),
             Row("cpu_gemm", "a_metric_name_longer_than_any_column_should_be", "info", 1.0, "ratio", reason="shown")]
    v = Verdict("vm", "h100_sxm5_80gb", "commission", False, rows)
    text = verdict.table(v)
    assert all(len(line) <= verdict.WIDTH for line in text.splitlines()[:-1])
    assert text.count("NVML Shared Library Not Found; NVML") >= 1 and list(notes(text)) == ["1", "2"]
    assert notes(text)["1"] == " ".join(why.split()) and "within its band" not in text  # a pass needs no note
    table_lines = [line for line in text.splitlines() if line.startswith(("bandwidth", "gemm", "power"))]
    assert all(line.endswith("[1]") for line in table_lines)
    assert "warning: cpu_gemm passed on attempt 2; earlier: dgemm_gflops 500 GFLOP/s (below)" in text
    assert text.index("[2] shown") < text.index("warning: cpu_gemm") < text.index(verdict.headline(v))
    assert "a_metric_name_longer_than_" in text and "~" in text
