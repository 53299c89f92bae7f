"""The fleet summary: the verdicts recorded on the H100 (one commissioning run accepted, one with a degraded
GPU rejected) laid out as the suite role fetches them for an inventory of four nodes, two of which never
reported; read by `gpuaccept fleet` and by the summary tasks the playbooks run on the controller."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import H100_COMMISSION, H100_DEGRADED, H100_RUNS, ROOT

from gpuaccept.results import fleet

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]
H100 = ("gpu-h100-01.example.org", "gpu-h100-02.example.org")
H200 = ("gpu-h200-01.example.org", "gpu-h200-02.example.org")


@pytest.fixture
def results(tmp_path):
    """h100-01: accepted; h100-02: accepted once, then rejected (the newest run counts), plus an evaluation."""
    root = tmp_path / "results"
    layout = [
        (H100[0], H100_COMMISSION),
        (H100[1], H100_COMMISSION),
        (H100[1], H100_DEGRADED),
        (H100[1], H100_RUNS / "20261122T052554Z-evaluation"),
    ]
    for node, run in layout:
        dest = root / node / run.name
        dest.mkdir(parents=True)
        shutil.copy(run / "verdict.json", dest / "verdict.json")
    return root


def test_newest_verdict_per_node_and_suite_and_missing_nodes(results):
    entries = fleet.collect(results, "commission", [*H100, *H200])
    got = {e.node: (e.verdict, e.failed_checks, e.run) for e in entries}
    assert got[H100[0]] == ("pass", [], "20261122T052346Z-commission")
    assert got[H100[1]] == ("fail", ["bandwidth", "cpu_gemm", "gemm"], "20261122T053501Z-commission")
    assert got[H200[0]][0] == got[H200[1]][0] == "missing"
    assert not fleet.all_accepted(entries)
    both = fleet.collect(results)
    assert {(e.node, e.suite) for e in both} == {
        (H100[0], "commission"),
        (H100[1], "commission"),
        (H100[1], "evaluation"),
    }


def test_fleet_command_prints_the_table_and_writes_json(results, tmp_path):
    out = tmp_path / "fleet.json"
    res = subprocess.run(
        [
            *GPUACCEPT,
            "fleet",
            str(results),
            "--suite",
            "commission",
            "--inventory",
            str(ROOT / "inventories" / "example"),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    lines = {line.split()[0]: line for line in res.stdout.splitlines() if line.startswith("gpu-")}
    assert "ACCEPTED" in lines[H100[0]]
    assert "REJECTED" in lines[H100[1]] and "gemm" in lines[H100[1]] and "cpu_gemm (not run)" in lines[H100[1]]
    assert "MISSING" in lines[H200[0]]
    assert "4 node(s): 1 accepted, 1 rejected, 2 missing" in res.stdout
    doc = json.loads(out.read_text())
    assert doc["schema"] == "gpuaccept.fleet/1" and doc["accepted"] is False and len(doc["nodes"]) == 4


def test_fleet_names_a_bad_verdict_file(results):
    bad = results / H100[0] / "20261122T060000Z-commission"
    bad.mkdir()
    (bad / "verdict.json").write_text("{not json")
    res = subprocess.run([*GPUACCEPT, "fleet", str(results)], capture_output=True, text=True, check=False)
    assert res.returncode == 4
    assert f"{bad / 'verdict.json'}: cannot read the verdict" in res.stderr


def test_the_playbooks_summary_tasks_on_the_controller(results, tmp_path):
    """The post_tasks of the suite playbooks, against the example inventory's four hosts (nothing connects to
    them: the summary runs on the controller)."""
    playbook = tmp_path / "summary.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        f"    - ansible.builtin.import_tasks: {ROOT / 'playbooks' / 'tasks' / 'fleet_summary.yml'}\n"
    )
    venv_bin = Path(sys.prefix) / "bin"
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "LC_ALL": "C.UTF-8", "ANSIBLE_NOCOLOR": "1"}
    res = subprocess.run(
        [
            str(venv_bin / "ansible-playbook"),
            "-i",
            str(ROOT / "inventories" / "example"),
            str(playbook),
            "-e",
            f"gpuaccept_suite_fetch_dir={results}",
            "-e",
            "gpuaccept_suite_name=commission",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "4 node(s): 1 accepted, 1 rejected, 2 missing" in res.stdout
    doc = json.loads((results / "fleet-commission.json").read_text())
    assert [n["verdict"] for n in doc["nodes"]] == ["pass", "fail", "missing", "missing"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"rows": "not a list"}, "'rows' is a JSON str, not a list"),
        ({"rows": {"check": "gemm"}}, "'rows' is a JSON dict, not a list"),
        ({"rows": [1, 2]}, "'rows' holds something other than objects"),
        ({"failed_checks": 7}, "'failed_checks' is not a list of check names"),
    ],
)
def test_a_verdict_whose_rows_are_not_a_list_is_reported_unreadable(results, change, says):
    """gpuaccept fleet does not crash on it: that node's verdict is UNREADABLE (not accepted), the others stand."""
    path = results / H100[0] / "20261122T060000Z-commission" / "verdict.json"
    path.parent.mkdir()
    doc = json.loads(next((results / H100[0]).glob("*/verdict.json")).read_text())
    path.write_text(json.dumps({**doc, **change}))
    res = subprocess.run([*GPUACCEPT, "fleet", str(results), "--suite", "commission"], capture_output=True, text=True,
                         check=False)  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    line = next(line for line in res.stdout.splitlines() if line.startswith(H100[0]))
    assert "UNREADABLE" in line and says in line, res.stdout
    assert "REJECTED" in next(line for line in res.stdout.splitlines() if line.startswith(H100[1]))
    assert "1 unreadable" in res.stdout
