"""A failed check's findings as data beyond its reason: verdict.json's check row holds each finding's rule, GPU and
fix (``findings``), Prometheus counts them by rule and GPU (``gpuaccept_check_findings``) and the report lists
them GPU by GPU. Shown on a recorded nightly run on one H200 that a foreign process on GPU 0 failed
(tests/fixtures/recorded/2026-11-25-trust), and a healthy one that shows none."""

from __future__ import annotations

from conftest import FIXTURES
from judge_support import rejudge_today

from gpuaccept.judge import exporter
from gpuaccept.results import report

LOADED = FIXTURES / "recorded" / "2026-11-25-trust" / "results" / "h200-c" / "vm" / "20261125T120651Z-nightly"
HEALTHY = FIXTURES / "recorded" / "2026-11-25-trust" / "results" / "h200-c" / "vm"


def test_the_failed_health_check_carries_its_finding_with_the_gpu_and_the_fix():
    v = rejudge_today(LOADED)
    health = next(r for r in v.rows if r.check == "health" and r.metric is None)
    assert health.status == "fail"
    assert [(f["rule"], f["gpu"]) for f in health.findings] == [("foreign_process", 0)]
    assert health.findings[0]["fix"].startswith("stop it (kill ")
    assert health.findings[0]["text"] in health.reason  # the line the reason has always shown
    row = next(r for r in v.to_json()["rows"] if r["check"] == "health" and r["metric"] is None)
    assert row["findings"] == health.findings
    text = exporter.render(v)
    assert 'gpuaccept_check_findings{check="health",gpu="0",node_type="h200",rule="foreign_process",' \
           'suite="nightly"} 1.0' in text  # fmt: skip


def test_a_passed_check_has_no_findings_in_verdict_json_nor_a_findings_series():
    runs = sorted(p for p in HEALTHY.iterdir() if p.is_dir() and p != LOADED and (p / "verdict.json").exists())
    passed = [v for v in map(rejudge_today, runs) if v.accepted]
    assert passed, "the fixture holds accepted runs"
    for v in passed:
        assert all("findings" not in r for r in v.to_json()["rows"])
        assert "gpuaccept_check_findings" not in exporter.render(v)


def test_the_report_lists_the_findings_gpu_by_gpu():
    group = report.Group(label="h200", paths=[LOADED], verdicts=[rejudge_today(LOADED).to_json()])
    rows = report.findings_rows([group])
    assert [r[3:6] for r in rows] == [["health", "GPU 0", "foreign_process"]]
    assert rows[0][7].startswith("stop it (kill ")
