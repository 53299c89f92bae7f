"""The NAMD checks run for real through ReFrame on this GPU-less machine: NOT RUN with the reason where NAMD is not
installed, and the whole runner path (configuration, NAMD's log, metrics, judging) with a stand-in namd3 that
prints a real NAMD 3.0 log (apoa1-16.log of the third-party input namd3-apoa1-logs, tests/inputs.toml: NAMD 3.0
multicore, 16 cores): what the check does with NAMD's output, not NAMD itself."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_input
from rfm_support import render_config, run_reframe

from gpuaccept.probe import facts as node_facts

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]
REF = """\
schema: gpuaccept.references/1
node_type: {name}
description: CI host without GPUs (synthetic test references)
match: {{gpu_count: 0}}
sources:
  synthetic: {{kind: synthetic, date: 2026-11-22, reference: "tests/test_reframe_md.py: plumbing test"}}
checks:
  namd_apoa1:
    cpu_ns_per_day: {{value: {rate}, unit: ns/day, lower: 0.05, source: synthetic}}
    cpu_s_per_step: {{value: 0.0311906, unit: s/step, upper: 0.05, source: synthetic}}
    cpu_wall_s: {{informational: "depends on the step count", unit: s, source: synthetic}}
"""
FAKE_NAMD = """\
#!/bin/sh
# Stand-in for namd3 (tests only): checks that it got a configuration, then prints a real NAMD 3.0 log.
conf=""; for a in "$@"; do conf="$a"; done
grep -q '^numsteps *500$' "$conf" || {{ echo "FATAL ERROR: no numsteps 500 in $conf"; exit 1; }}
cat {log}
"""


def fake_namd_home(base: Path) -> Path:
    home = base / "namd"
    (home / "cpu").mkdir(parents=True)
    exe = home / "cpu" / "namd3"
    exe.write_text(FAKE_NAMD.format(log=needs_input("namd3-apoa1-logs", "apoa1-16.log")))
    exe.chmod(0o755)
    (home / "inputs" / "apoa1").mkdir(parents=True)
    (home / "inputs" / "apoa1" / "apoa1.namd").write_text("structure apoa1.psf\nnumsteps 500\ntimestep 1\n")
    (home / "configs").mkdir()
    (home / "configs" / "apoa1_classic.namd").symlink_to(home / "inputs" / "apoa1" / "apoa1.namd")
    return home


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("rfm_md")
    refs = base / "refs"
    refs.mkdir()
    (refs / "ci_md.yaml").write_text(REF.format(name="ci_md", rate=2.77))
    (refs / "ci_md_fast.yaml").write_text(REF.format(name="ci_md_fast", rate=277.0))
    facts = node_facts.gather()
    assert not facts["gpus"], "this test expects a machine without NVIDIA GPUs"
    facts_file = base / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    home = fake_namd_home(base)
    out = {}
    for name, node_type, extra in (
        ("absent", "ci_md", ("-S", f"namd_home={base / 'nowhere'}")),
        ("fake", "ci_md", ("-S", f"namd_home={home}", "-S", "modes=cpu")),
        ("slow", "ci_md_fast", ("-S", f"namd_home={home}", "-S", "modes=cpu")),
    ):
        run_dir = base / name
        run_dir.mkdir()
        config = render_config(run_dir / "settings.py", node_type, refs, facts, facts_file)
        proc = run_reframe(config, run_dir, "evaluation", "-n", "Namd", *extra)
        summary = subprocess.run(
            [*GPUACCEPT, "summarize", "--run-dir", str(run_dir), "--node-type", node_type, "--suite", "evaluation",
             "--facts", str(facts_file), "--reference-dir", str(refs)],
            capture_output=True, text=True, check=False, env={**os.environ, "LC_ALL": "C.UTF-8"},
        )  # fmt: skip
        out[name] = (run_dir, proc, summary)
    return out


def rows(run_dir: Path) -> dict:
    doc = json.loads((run_dir / "verdict.json").read_text())
    return {(r["check"], r["metric"]): r for r in doc["rows"]}


def test_namd_not_installed_is_not_run_never_passed(runs):
    run_dir, proc, summary = runs["absent"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((run_dir / "reframe-report.json").read_text())
    cases = [tc for r in report["runs"] for tc in r["testcases"]]
    assert {tc["result"] for tc in cases} == {"skip"}
    table = rows(run_dir)
    apoa1 = table[("namd_apoa1", None)]
    assert apoa1["status"] == "not_run"
    assert "NAMD not installed (see README.md, section 'NAMD')" in apoa1["reason"]
    assert str(Path("nowhere") / "cpu" / "namd3") in apoa1["reason"]
    # The node type expects namd_apoa1: a check that did not run rejects the node.
    assert summary.returncode == 1 and "NOT RUN" in summary.stdout and "REJECTED" in summary.stdout
    assert table[("namd_stmv", None)]["status"] == "not_run" and not table[("namd_stmv", None)]["expected"]


def test_namd_runner_through_reframe_reads_the_log_and_passes(runs):
    run_dir, proc, _summary = runs["fake"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = rows(run_dir)
    assert table[("namd_apoa1", None)]["status"] == "pass", table[("namd_apoa1", None)]
    assert table[("namd_apoa1", "cpu_ns_per_day")]["value"] == pytest.approx(2.77006)
    assert table[("namd_apoa1", "cpu_wall_s")]["status"] == "info"
    docs = list((run_dir / "reframe" / "output").rglob("namd_apoa1.json"))
    assert len(docs) == 1
    doc = json.loads(docs[0].read_text())
    assert doc["verification"]["passed"] is True
    assert doc["results"]["runs"][0]["command"].endswith("apoa1_cpu.namd")
    # NAMD's own log and the configuration it ran are kept beside the document.
    prom = (run_dir / "gpuaccept.prom").read_text()
    assert 'gpuaccept_result_ns_per_day{check="namd_apoa1",metric="cpu_ns_per_day",' in prom
    assert 'gpuaccept_result_seconds_per_step{check="namd_apoa1",metric="cpu_s_per_step",' in prom
    kept = docs[0].parent / "namd_apoa1_logs"
    assert (kept / "apoa1_cpu.log").read_text().startswith("Charm++: standalone mode (not using charmrun)")
    assert "numsteps            500" in (kept / "apoa1_cpu.namd").read_text()


def test_namd_slower_than_reference_fails(runs):
    run_dir, proc, summary = runs["slow"]
    assert proc.returncode == 0  # ReFrame records; the judge alone fails a figure
    table = rows(run_dir)
    assert table[("namd_apoa1", "cpu_ns_per_day")]["status"] == "fail"
    assert summary.returncode == 1 and "REJECTED" in summary.stdout
