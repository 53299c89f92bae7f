"""The alert rules and the Grafana dashboard: promtool's own unit tests, and tests that they can fail."""

import json
import re
import subprocess

import yaml
from conftest import ROOT
from prom_stack import tool

PROM = ROOT / "prometheus"
RULES = PROM / "gpuaccept.rules.yml"
RULE_TESTS = PROM / "gpuaccept.rules.test.yml"
DASHBOARD = PROM / "grafana" / "gpuaccept.json"


def promtool(*args, cwd=PROM):
    return subprocess.run([tool("promtool"), *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_rules_are_valid_and_pass_their_unit_tests():
    res = promtool("check", "rules", str(RULES))
    assert res.returncode == 0, res.stdout + res.stderr
    res = promtool("test", "rules", str(RULE_TESTS))
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_unit_tests_catch_a_broken_rule(tmp_path):
    """A rule that no longer fires on a rejected node must fail the unit tests."""
    broken = RULES.read_text().replace("expr: gpuaccept_node_accepted == 0", "expr: gpuaccept_node_accepted == 2")
    assert broken != RULES.read_text()
    (tmp_path / RULES.name).write_text(broken)
    (tmp_path / RULE_TESTS.name).write_text(RULE_TESTS.read_text())
    res = promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)
    assert res.returncode != 0
    assert "GpuacceptNodeRejected" in res.stdout + res.stderr


def test_every_alert_has_a_severity_and_a_summary():
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r]
    names = {r["alert"] for r in rules}
    assert {
        "GpuacceptNodeRejected",
        "GpuacceptResultsStale",
        "GpuacceptCheckNotRun",
        "GpuacceptMetricFailed",
    } <= names
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))
    assert names <= tested, f"alerts without a unit test: {names - tested}"
    for r in rules:
        assert r["labels"]["severity"] in ("critical", "warning"), r["alert"]
        assert r["annotations"]["summary"] and r["annotations"]["description"], r["alert"]


def test_dashboard_is_grafana_json_with_queries():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert len(exprs) >= 8 and all(e.strip() for e in exprs)
    variables = {v["name"] for v in dash["templating"]["list"]}
    used = {m for e in exprs for m in re.findall(r"\$(\w+)", e)}
    assert used <= variables, f"undefined dashboard variables: {used - variables}"
