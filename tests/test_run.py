"""``gpuaccept run`` end to end on this GPU-less machine, with a real ReFrame: the run directory, the node's facts,
ReFrame's command line, the verdict (GPU checks NOT RUN with the reason, the host GEMM run), the exit status; a
node of no known node type; a suite that selects nothing on this node."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import NODE_TYPE_EXISTS, REFERENCE_DIR, ROOT

from gpuaccept import rfmconfig, run
from gpuaccept.probe import facts as node_facts

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]
# The host GEMM alone (no GPU here: --host-only), at a tiny size: the plumbing is under test, not the speed.
HOST_GEMM_ONLY = ["--host-only", "--", "-n", "^CpuGemm$", "-S", "bench_opts=--size,512,--window-s,0.3"]
# A node type without GPUs whose only check is the host GEMM (passes on any working CPU).
CI_TYPE = """\
schema: gpuaccept.references/1
node_type: ci_cpu
description: CI host without GPUs (synthetic test references)
match: {gpu_count: 0}
sources:
  synthetic: {kind: synthetic, date: 2026-11-23, reference: "tests/test_run.py: plumbing test"}
checks:
  cpu_gemm:
    dgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: plumbing test, source: synthetic}
    sgemm_gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: plumbing test, source: synthetic}
    dgemm_scaling_efficiency: {value: 0.5, unit: ratio, lower: 0.95, wide_tolerance: plumbing test, source: synthetic}
    dgemm_peak_fraction: {informational: plumbing test, unit: ratio, source: synthetic}
    sgemm_peak_fraction: {informational: plumbing test, unit: ratio, source: synthetic}
    blas_optimized_core: {informational: "CI's CPU model is not ours to choose", unit: count, source: synthetic}
"""


@pytest.fixture(scope="module", autouse=True)
def no_gpu():
    if node_facts.gather()["gpus"]:
        pytest.skip("these tests expect a machine without NVIDIA GPUs")


def gpuaccept_run(results: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*GPUACCEPT, "run", "--results", str(results), "--node", "ci", *args],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip


def the_run(results: Path) -> tuple[Path, dict, dict]:
    (run_dir,) = (results / "ci").iterdir()
    doc = json.loads((run_dir / "verdict.json").read_text())
    rows = {(r["check"], r["metric"]): r for r in doc["rows"]}
    return run_dir, doc, rows


def test_a_node_without_gpus_gets_a_verdict_with_the_gpu_checks_not_run(tmp_path):
    proc = gpuaccept_run(tmp_path, "--suite", "commission", "--node-type", "h100_sxm5_80gb", *HOST_GEMM_ONLY)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir, doc, rows = the_run(tmp_path)
    assert run.RUN_ID_RE.match(run_dir.name) and run_dir.name.endswith("-commission")
    assert json.loads((run_dir / "node-facts.json").read_text())["gpus"] == []
    # The facts again after the suite (the NVLink counters' growth, docs/checks/health.md), gathered on the node.
    assert json.loads((run_dir / "node-facts-end.json").read_text())["gathered_unix"] > 0
    # ReFrame ran as the suite role runs it: one test at a time, into the run directory.
    argv = (run_dir / "reframe.out").read_text().splitlines()[0]
    assert "--exec-policy serial" in argv and "--tag commission" in argv and str(run_dir / "reframe") in argv
    assert (run_dir / "reframe-report.json").exists() and (run_dir / "gpuaccept.prom").exists()
    assert doc["verdict"] == "fail" and doc["node_type"] == "h100_sxm5_80gb"
    for check in ("bandwidth", "gemm", "hplstyle", "power"):
        assert rows[(check, None)]["status"] == "not_run"
        assert rows[(check, None)]["reason"].startswith("no NVIDIA GPU found"), rows[(check, None)]
    assert rows[("node", "gpu_count")]["status"] == "fail"
    # The host GEMM ran, and is shown with its figures.
    assert rows[("cpu_gemm", None)]["status"] in ("pass", "fail")
    assert rows[("cpu_gemm", "dgemm_gflops")]["value"] > 0
    assert "NOT RUN" in proc.stdout and "REJECTED" in proc.stdout and str(run_dir / "verdict.json") in proc.stdout


def test_a_node_without_a_gpu_stops_at_once_with_one_line_and_exit_3(tmp_path):
    """Without --host-only, a node with no usable GPU or driver runs nothing: one line says what is missing and
    what to do; the verdict (for the metrics) says the same, and the table and the directory name the node alike."""
    proc = gpuaccept_run(tmp_path, "--suite", "commission", "--node-type", "h100_sxm5_80gb")
    assert proc.returncode == run.EXIT_NOT_RUN, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("no NVIDIA GPU/driver on ci: "))
    assert line.endswith("install the driver with playbooks/provision.yml, or run on a GPU node"), line
    run_dir, doc, rows = the_run(tmp_path)
    assert not (run_dir / "reframe.out").exists() and doc["node"] == "ci" and doc["verdict"] == "fail"
    assert line in rows[("gemm", None)]["reason"]
    assert (run_dir / run.EXIT_STATUS_FILE).read_text() == "3 cannot judge\n"


@pytest.mark.parametrize("node_type", ["h100_pcie", "H100", "nosuch_x3", "h100_sxm5_80gb_x0"])
def test_an_unknown_node_type_stops_at_once_listing_the_known_ones(tmp_path, node_type):
    proc = gpuaccept_run(tmp_path, "--suite", "commission", "--node-type", node_type)
    assert proc.returncode == run.EXIT_INPUT, proc.stdout + proc.stderr
    assert not (tmp_path / "ci").exists()
    if node_type != "H100":
        known = ", ".join(sorted(p.stem for p in REFERENCE_DIR.glob("*.yaml")))
        assert f"unknown node type '{node_type}'" in proc.stderr and f"known node types: {known}" in proc.stderr
        assert "<sku>_x<count> for the known GPU SKUs: a100_sxm4_80gb, h100_sxm5_80gb, h200" in proc.stderr


@pytest.mark.parametrize(("name", "exists"), NODE_TYPE_EXISTS.items())
def test_the_node_types_the_run_takes_are_those_that_exist(name, exists):
    """``<sku>_x<count>`` of a known GPU SKU, with no file of its own, is a node type (per-GPU references only):
    the run takes it, as the judge does (gpuaccept.references.node_type_exists)."""
    if exists:
        run.check_node_type(name, REFERENCE_DIR)
    else:
        with pytest.raises(run.RunError, match=f"unknown node type '{name}'"):
            run.check_node_type(name, REFERENCE_DIR)


def test_a_node_of_no_known_type_runs_its_host_checks_unjudged_and_says_how_to_make_one(tmp_path):
    proc = gpuaccept_run(tmp_path, "--suite", "commission", "--reference-dir", str(REFERENCE_DIR), *HOST_GEMM_ONLY)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir, doc, rows = the_run(tmp_path)
    assert doc["verdict"] == "fail" and doc["node_type"] == ""
    why = rows[("inputs", None)]
    assert why["status"] == "fail" and why["reason"].startswith("no reference file for this node")
    known = sorted(p.stem for p in REFERENCE_DIR.glob("*.yaml"))
    for name in known:  # each known node type, with what it expects
        match = yaml.safe_load((REFERENCE_DIR / f"{name}.yaml").read_text())["match"]
        expects = why["reason"].split(f"{name} (", 1)[1].split(")", 1)[0]
        assert all(f"{key} {value!r}" in expects for key, value in match.items()), expects
    assert "gpuaccept baseline --node-type NAME" in rows[("references", None)]["reason"]
    assert rows[("gemm", None)]["status"] == "not_run" and "no NVIDIA GPU found" in rows[("gemm", None)]["reason"]
    # The host GEMM ran without references: its figures are shown, not judged.
    assert rows[("cpu_gemm", None)]["reason"].startswith("ran, not judged"), rows[("cpu_gemm", None)]
    assert rows[("cpu_gemm", "dgemm_gflops")]["status"] == "info"
    assert rows[("cpu_gemm", "dgemm_gflops")]["value"] > 0
    # The configuration was written for this node, with no node type.
    config = (run_dir / "reframe_settings.py").read_text()
    assert '"node_type": ""' in config and '"bench_dir":' in config
    # Resolved once, in node-type.json (in the manifest): no name, and why; the check read it and failed saying so.
    resolved = json.loads((run_dir / "node-type.json").read_text())
    assert resolved["name"] == "" and resolved["files"] == [] and resolved["error"] in why["reason"]
    assert "node-type.json" in json.loads((run_dir / "manifest.json").read_text())["files"]
    out = (run_dir / "reframe.out").read_text()
    assert "no node type for this node: no reference file for this node" in out and "AttributeError" not in out


def test_a_suite_that_selects_nothing_names_the_checks_that_did_not_run(tmp_path):
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_cpu.yaml").write_text(CI_TYPE)
    results = tmp_path / "results"
    proc = gpuaccept_run(results, "--suite", "nightly", "--reference-dir", str(refs))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir, doc, rows = the_run(results)
    assert "Running 0 check(s)" in (run_dir / "reframe.out").read_text()
    assert doc["node_type"] == "ci_cpu" and doc["verdict"] == "fail"
    for check in ("bandwidth", "gemm", "health", "power"):
        assert rows[(check, None)]["status"] == "not_run"
        assert rows[(check, None)]["reason"].startswith("no NVIDIA GPU found")
        assert "report is missing" not in rows[(check, None)]["reason"]
    assert doc["failed_checks"] == ["suite"]
    assert "ReFrame selected none" in rows[("suite", None)]["reason"]


def test_a_node_of_a_type_it_matches_is_accepted(tmp_path):
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_cpu.yaml").write_text(CI_TYPE)
    results = tmp_path / "results"
    proc = gpuaccept_run(results, "--suite", "commission", "--reference-dir", str(refs), *HOST_GEMM_ONLY)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir, doc, rows = the_run(results)
    assert doc["verdict"] == "pass" and doc["node_type"] == "ci_cpu"
    assert rows[("cpu_gemm", None)]["status"] == "pass"
    assert "(not expected for node type ci_cpu)" in rows[("gemm", None)]["reason"]
    # The run's manifest holds what it wrote: judged again unchanged, the same verdict without a warning; with the
    # host GEMM's document edited, the file is named and the node not accepted.
    listed = json.loads((run_dir / "manifest.json").read_text())["files"]
    (document,) = [name for name in listed if name.endswith("cpu_gemm.json")]
    assert "reframe-report.json" in listed and "node-facts.json" in listed and "verdict.json" not in listed
    # The node type, resolved once: its name and the file it came from with its sha256, in the manifest too.
    resolved = json.loads((run_dir / "node-type.json").read_text())
    assert "node-type.json" in listed and resolved["name"] == "ci_cpu" and resolved["error"] is None
    ((path, sha),) = [(f["path"], f["sha256"]) for f in resolved["files"]]
    assert path == str((refs / "ci_cpu.yaml").resolve()) and sha == hashlib.sha256(Path(path).read_bytes()).hexdigest()
    again = [*GPUACCEPT, "summarize", "--run-dir", str(run_dir), "--node-type", "ci_cpu", "--suite", "commission",
             "--reference-dir", str(refs), "--facts", str(run_dir / "node-facts.json")]  # fmt: skip
    proc = subprocess.run(again, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "no manifest" not in proc.stdout, proc.stdout[-3000:]
    (run_dir / document).write_text((run_dir / document).read_text() + "\n")
    proc = subprocess.run(again, capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and f"{document}: changed since the run" in " ".join(proc.stdout.split())


def test_reframe_that_cannot_start_is_not_run_with_exit_3(tmp_path):
    proc = gpuaccept_run(tmp_path, "--suite", "nightly", "--node-type", "h100_sxm5_80gb", "--host-only",
                         "--reframe", str(tmp_path / "no-reframe"))  # fmt: skip
    assert proc.returncode == run.EXIT_NOT_RUN, proc.stdout + proc.stderr
    _, _doc, rows = the_run(tmp_path)
    assert "ReFrame did not start" in rows[("gemm", None)]["reason"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run-id", "yesterday"], "run id 'yesterday' is not of the form <UTC time>-<suite>"),
        (["--reference-dir", "/nonexistent"], "--reference-dir /nonexistent: not a directory"),
        (["--drain"], "--distribute and --drain belong to a Slurm run"),
    ],
)
def test_bad_input_is_named(tmp_path, args, message):
    proc = gpuaccept_run(tmp_path, "--suite", "nightly", *args)
    assert proc.returncode == 4 and message in proc.stderr, proc.stderr


def test_the_nightly_suite_runs_quick_mode_and_the_comparable_bandwidth_pass():
    argv = run.reframe_argv("reframe", "c.py", "nightly", "/r")
    assert argv[argv.index("--tag") + 1] == "nightly" and argv[-1] == "-r"
    bw = "GpuBandwidth.bench_opts=--max-bytes,1GiB,--matrix-bytes,256MiB,--trials,7,--target-ms,5"
    assert "mode=quick" in argv and bw in argv and "GpuGemm.bench_opts=--window-s,3" in argv
    assert "mode=quick" not in run.reframe_argv("reframe", "c.py", "commission", "/r")
    assert "mode=quick" in run.reframe_argv("reframe", "c.py", "commission", "/r", quick=True)
    assert "mode=quick" not in run.reframe_argv("reframe", "c.py", "nightly", "/r", suite_options=False)
    distributed = run.reframe_argv("reframe", "c.py", "commission", "/r", distribute=True)
    assert "--distribute=avail" in distributed and "--exec-policy" not in distributed


def test_a_relative_configuration_and_checks_directory_are_made_absolute(tmp_path, monkeypatch):
    """ReFrame runs in the run directory: `--reframe-config build/reframe_settings.py`, typed in the project, must
    not be looked for under the run directory (it was, on the H100: docs/evidence/2026-11-23-h100-evaluation)."""
    monkeypatch.chdir(tmp_path)
    argv = run.reframe_argv("reframe", "build/c.py", "commission", tmp_path / "run", checks_dir="checks")
    assert argv[argv.index("-C") + 1] == str(tmp_path / "build" / "c.py")
    assert argv[argv.index("-c") + 1] == str(tmp_path / "checks")


def test_the_checks_use_the_prebuilt_benchmarks_and_compile_nothing(tmp_path):
    """The gpuaccept_bench role builds the benchmarks into a fixed directory (the extras' bench_dir); the build
    fixture then links them instead of running make."""
    bench = tmp_path / "bench"
    blas = rfmconfig.blas(Path(sys.prefix))
    assert blas != "none", "this test needs OpenBLAS (libopenblas-dev) or MKL in the environment"
    make = ["make", "-C", str(ROOT / "reframe_checks" / "src"), f"BUILD_DIR={bench}", f"BLAS={blas}",
            f"MKLROOT={sys.prefix}", "GIT_REV=prebuilt", "cpu"]  # fmt: skip
    subprocess.run(make, check=True, capture_output=True)
    results = tmp_path / "results"
    proc = gpuaccept_run(results, "--suite", "commission", "--node-type", "h100_sxm5_80gb",
                         "--bench-dir", str(bench), *HOST_GEMM_ONLY)  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir, _doc, rows = the_run(results)
    assert rows[("cpu_gemm", "dgemm_gflops")]["value"] > 0
    # ReFrame keeps the fixture's build script with the run's output (--save-log-files).
    (script,) = (run_dir / "reframe" / "output").rglob("CpuBenchBuild*/rfm_build.sh")
    text = script.read_text()
    assert f"ln -sf {bench / 'gpuaccept-cpugemm'}" in text and "make" not in text


def test_the_nightly_timer_runner_runs_the_suite_through_gpuaccept_run(tmp_path):
    """The runner the gpuaccept_nightly_timer role installs (rendered by the role, no service touched), run on this
    GPU-less host with a configuration from `gpuaccept reframe-config`: the nightly suite selects nothing here,
    and the verdict and the textfile metrics say which checks did not run."""
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_cpu.yaml").write_text(CI_TYPE)
    config = tmp_path / "build" / "reframe_settings.py"
    config.parent.mkdir()
    res = subprocess.run([*GPUACCEPT, "reframe-config", "--output", str(config), "--reference-dir", str(refs)],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert res.returncode == 0 and "node type ci_cpu, 0 GPUs" in res.stdout, res.stderr
    runner = tmp_path / "bin" / "gpuaccept-nightly"
    settings = {
        "gpuaccept_test_role": "gpuaccept_nightly_timer",
        "gpuaccept_node_type": "ci_cpu",
        "gpuaccept_nightly_timer_enabled": False,
        "gpuaccept_nightly_timer_root": str(tmp_path),
        "gpuaccept_nightly_timer_venv": sys.prefix,
        "gpuaccept_nightly_timer_reframe_config": str(config),
        "gpuaccept_nightly_timer_checks_dir": str(ROOT / "reframe_checks"),
        "gpuaccept_nightly_timer_reference_dir": str(refs),
        "gpuaccept_nightly_timer_textfile_dir": str(tmp_path / "textfile"),
        "gpuaccept_nightly_timer_unit_dir": str(tmp_path / "units"),
        "gpuaccept_nightly_timer_runner": str(runner),
    }
    (tmp_path / "vars.json").write_text(json.dumps(settings))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1", "LC_ALL": "C.UTF-8",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "at")}  # fmt: skip
    env.pop("ANSIBLE_INVENTORY", None)
    playbook = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(ROOT / "inventories" / "local"),
                str(ROOT / "tests" / "ansible" / "apply_role.yml"), "-e", f"@{tmp_path / 'vars.json'}"]  # fmt: skip
    play = subprocess.run(playbook, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert play.returncode == 0, play.stdout[-3000:]
    assert '/bin/gpuaccept" run --suite nightly' in runner.read_text()
    proc = subprocess.run([str(runner)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = (tmp_path / "results" / "localhost").iterdir()
    assert run_dir.name.endswith("-nightly")
    doc = json.loads((run_dir / "verdict.json").read_text())
    assert doc["node_type"] == "ci_cpu" and doc["failed_checks"] == ["suite"]
    # The nightly suite's options come from gpuaccept run (run.SUITE_OPTIONS), once: the role repeats none.
    first = (run_dir / "reframe.out").read_text().splitlines()[0]
    assert first.count("-S mode=quick") == 1 and first.count("GpuBandwidth.bench_opts=") == 1, first
    assert "--no-suite-options" not in runner.read_text()
    # The command ends on its own line: no continuation swallows the next one (`rc=$?`).
    assert "\nrc=$?" in runner.read_text() and " \\\nrc=$?" not in runner.read_text()
    prom = (tmp_path / "textfile" / "gpuaccept_nightly.prom").read_text()
    assert 'gpuaccept_node_accepted{node_type="ci_cpu",suite="nightly"} 0' in prom


def test_a_suite_stopped_at_its_time_limit_is_judged_and_exits_3(tmp_path):
    proc = gpuaccept_run(tmp_path, "--suite", "commission", "--node-type", "h100_sxm5_80gb", "--host-only",
                         "--timeout-s", "1")  # fmt: skip
    assert proc.returncode == run.EXIT_NOT_RUN, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir, doc, rows = the_run(tmp_path)
    assert doc["verdict"] == "fail"
    assert "reframe exit" in (run_dir / "reframe.out").read_text() and "stopped at the time limit" in proc.stdout
    # The checks that never started say why (with or without a report, as far as ReFrame got).
    assert "did not finish within its time limit (1 s)" in rows[("gemm", None)]["reason"]


def test_a_slurm_node_without_a_job_or_facts_is_judged_through_the_same_function(tmp_path):
    """gpuaccept run --slurm-inventory judges through slurm.judge: a node whose facts were not gathered and that
    got no job is rejected, naming both."""
    from gpuaccept.results import slurm  # noqa: PLC0415

    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_cpu.yaml").write_text(CI_TYPE)
    hostvars = {"n1": {"gpuaccept_node_type": "ci_cpu", "gpuaccept_gpu_count": 0, "gpuaccept_slurm_partition": "ci"}}
    parts = slurm.partitions({"_meta": {"hostvars": hostvars}})
    report = {"session_info": {"hostname": "login"}, "runs": [{"runid": 0, "testcases": []}]}
    (result,) = slurm.judge(report, parts, tmp_path / "results", "20261123T101500Z-commission-slurm", "commission",
                            refs)  # fmt: skip
    doc = json.loads((tmp_path / "results" / "n1" / "20261123T101500Z-commission-slurm" / "verdict.json").read_text())
    assert doc["node"] == "n1" and doc["verdict"] == "fail" and result.node == "n1"
    rows = {(r["check"], r["metric"]): r for r in doc["rows"]}
    facts = rows[("inputs", None)]["reason"]
    assert "node-facts.json: the node facts is missing" in facts
    assert "`gpuaccept facts` did not run on the node" in facts
    assert rows[("cpu_gemm", None)]["reason"].startswith("no job of this run ran on n1")
    assert (tmp_path / "results" / "n1" / "20261123T101500Z-commission-slurm" / "gpuaccept.prom").exists()
