"""The real thing: the harness writes textfiles for two nodes (the H100 runs recorded on the GPU machine, one
accepted and one with a degraded GPU), Debian's node_exporter serves each, Debian's Prometheus scrapes both with
gpuaccept's alert rules loaded; the test asks Prometheus's HTTP API for the verdicts, the figures and the alerts,
and runs every query of the Grafana dashboard against it."""

import json
import re

import pytest
import yaml
from conftest import H100_COMMISSION, H100_DEGRADED, ROOT, references_as_recorded
from prom_stack import Stack, api, wait_for

from gpuaccept.judge import exporter, verdict

RULES = ROOT / "prometheus" / "gpuaccept.rules.yml"
DASHBOARD = ROOT / "prometheus" / "grafana" / "gpuaccept.json"


def recorded(run, reference_dir) -> verdict.Verdict:
    """The run judged against the references of the checks it ran (recorded before health, power and HPL); the
    degraded run kept only its report and verdict, so its verdict is the one recorded by the judge that day."""
    if run == H100_DEGRADED:
        return verdict.Verdict.from_json(json.loads((run / "verdict.json").read_text()))
    report = verdict.load_report(run / "reframe-report.json")
    facts = json.loads((run / "node-facts.json").read_text())
    return verdict.build(report, facts, reference_dir, "h100_sxm5_80gb", "commission", run_dir=run)


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    base = tmp_path_factory.mktemp("prom")
    # The rules as shipped, except `for:`, shortened so that alerts fire within the test.
    rules = yaml.safe_load(RULES.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "1s"
    fast_rules = base / "rules.yml"
    fast_rules.write_text(yaml.safe_dump(rules))
    stack = Stack(base)
    try:
        nodes = {}
        for name, run in (("good", H100_COMMISSION), ("bad", H100_DEGRADED)):
            textfile = base / name / "textfile"
            textfile.mkdir(parents=True)
            exporter.write(recorded(run, references_as_recorded(base)), base / name, textfile)
            nodes[name] = stack.node_exporter(textfile)
        url = stack.prometheus(list(nodes.values()), [fast_rules])
        wait_for(
            lambda: len(api(url, "query", query="gpuaccept_node_accepted")["data"]["result"]) == 2,
            "both nodes' verdicts in Prometheus",
        )
        yield url, nodes
    finally:
        stack.stop()


def by_instance(result: list[dict]) -> dict[str, float]:
    return {r["metric"]["instance"]: float(r["value"][1]) for r in result}


def test_verdicts_and_figures_are_in_prometheus(prom):
    url, nodes = prom
    accepted = by_instance(api(url, "query", query='gpuaccept_node_accepted{suite="commission"}')["data"]["result"])
    assert accepted == {nodes["good"]: 1.0, nodes["bad"]: 0.0}
    fp64 = by_instance(api(url, "query", query='gpuaccept_result_flops{metric="fp64_tflops_min"}')["data"]["result"])
    lower = by_instance(
        api(url, "query", query='gpuaccept_reference_lower_bound_flops{metric="fp64_tflops_min"}')["data"]["result"]
    )
    assert fp64[nodes["good"]] >= lower[nodes["good"]] > 4e13  # the H100's FP64 GEMM, in FLOP/s
    assert fp64[nodes["bad"]] < lower[nodes["bad"]]
    bw = api(url, "query", query='gpuaccept_result_bytes_per_second{metric="h2d_pinned_min"}')["data"]["result"]
    assert by_instance(bw)[nodes["good"]] > 1e10
    failed = api(url, "query", query='gpuaccept_check_status{status="fail"} == 1')["data"]["result"]
    assert {(r["metric"]["instance"], r["metric"]["check"]) for r in failed} == {(nodes["bad"], "gemm")}


def test_alert_rules_fire_on_the_failed_verdict_only(prom):
    url, nodes = prom

    def firing():
        alerts = api(url, "alerts")["data"]["alerts"]
        got = {(a["labels"]["alertname"], a["labels"]["instance"]) for a in alerts if a["state"] == "firing"}
        return got if ("GpuacceptNodeRejected", nodes["bad"]) in got else None

    got = wait_for(firing, "GpuacceptNodeRejected firing")
    assert ("GpuacceptMetricFailed", nodes["bad"]) in got
    assert ("GpuacceptCheckFailed", nodes["bad"]) in got
    assert ("GpuacceptCheckNotRun", nodes["bad"]) in got  # the degraded run's bandwidth check did not run
    assert not [a for a in got if a[1] == nodes["good"]], f"alerts on the accepted node: {got}"
    alerts = api(url, "alerts")["data"]["alerts"]
    below = {a["labels"]["metric"] for a in alerts if a["labels"]["alertname"] == "GpuacceptMetricFailed"}
    assert "fp64_tflops_min" in below and "fp8_tflops_min" not in below  # FP8 passed in the degraded run
    rules = api(url, "rules")["data"]["groups"][0]["rules"]
    assert all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules]


def test_every_dashboard_query_runs_on_prometheus(prom):
    url, _nodes = prom
    dash = json.loads(DASHBOARD.read_text())
    values = {"suite": "commission", "node_type": "h100_sxm5_80gb", "metric": ".*", "datasource": ""}

    def fill(expr: str) -> str:
        return re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], expr)

    for panel in dash["panels"]:
        for target in panel["targets"]:
            doc = api(url, "query", query=fill(target["expr"]))
            assert doc["status"] == "success", (panel["title"], target["expr"], doc.get("error"))
            assert doc["data"]["result"], f"{panel['title']}: no data for {fill(target['expr'])}"
    for var in dash["templating"]["list"]:
        if var["type"] != "query":
            continue
        m = re.fullmatch(r"label_values\((.+), (\w+)\)", var["query"]["query"])
        assert m, var
        series = api(url, "series", **{"match[]": fill(m.group(1))})["data"]
        assert any(m.group(2) in s for s in series), var["name"]
    verdicts = api(url, "query", query=fill(dash["panels"][4]["targets"][0]["expr"]))["data"]["result"]
    assert dash["panels"][4]["title"] == "Fleet verdicts" and len(verdicts) == 2
