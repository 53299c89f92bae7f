"""Bad input gets a clear message naming what was wrong, a failed verdict where it applies, and earlier
results stay intact."""

import json
import stat
import subprocess
import sys
from pathlib import Path

from conftest import REFERENCE_DIR

from gpuaccept.atomic import write_text_atomic
from gpuaccept.judge import verdict

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]
NO_GPU = {"hostname": "n1", "cpu_model": "x", "gpus": [], "gpu_error": "no NVIDIA GPU found (NVML: Driver Not Loaded)"}


def run(*args, **kw):
    return subprocess.run([*GPUACCEPT, *args], capture_output=True, text=True, check=False, **kw)


def test_unknown_node_type_rejects_the_node(tmp_path):
    (tmp_path / "node-facts.json").write_text(json.dumps(NO_GPU))
    res = run("summarize", "--run-dir", str(tmp_path), "--node-type", "no_such_type", "--suite", "commission",
              "--facts", str(tmp_path / "node-facts.json"), "--reference-dir", str(REFERENCE_DIR))
    assert res.returncode == 1
    doc = json.loads((tmp_path / "verdict.json").read_text())
    assert doc["verdict"] == "fail"
    refs = [r for r in doc["rows"] if r["check"] == "references"]
    assert "unknown node type 'no_such_type'" in refs[0]["reason"]
    assert "a100_sxm4_80gb" in refs[0]["reason"]  # lists the known ones


def test_missing_report_means_not_run_and_rejected(tmp_path):
    facts = {"hostname": "n1", "gpus": [{"name": "NVIDIA A100-SXM4-80GB"}] * 8}
    v = verdict.build(None, facts, REFERENCE_DIR, "a100_sxm4_80gb", "commission",
                      report_error="reframe-report.json: ReFrame's report is missing")
    checks = {r.check: r for r in v.rows if r.metric is None}
    assert {checks[k].status for k in ("bandwidth", "gemm", "cpu_gemm")} == {"not_run"}
    assert "report is missing" in checks["gemm"].reason
    assert not v.accepted


def test_fewer_gpus_than_the_inventory_says(tmp_path):
    facts = {"hostname": "n1", "gpu_source": "nvml", "gpus": [{"name": "NVIDIA A100-SXM4-80GB"}] * 7}
    v = verdict.build(None, facts, REFERENCE_DIR, "a100_sxm4_80gb", "commission", expected_gpus=8)
    gpu_rows = [r for r in v.rows if r.metric == "gpu_count"]
    assert [r.status for r in gpu_rows] == ["fail", "fail"]
    assert "the inventory says 8 GPUs, nvml sees 7 on n1" in gpu_rows[0].reason
    assert not v.accepted


def test_no_gpu_and_no_claim_reports_gpu_checks_not_run():
    v = verdict.build(None, NO_GPU, REFERENCE_DIR, "a100_sxm4_80gb", "nightly")
    checks = {r.check: r for r in v.rows if r.metric is None}
    assert checks["bandwidth"].status == "not_run"
    assert checks["bandwidth"].reason.startswith("no NVIDIA GPU found (NVML: Driver Not Loaded)")
    assert not v.accepted




def test_unwritable_textfile_dir_is_named(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "node-facts.json").write_text(json.dumps(NO_GPU))
    blocker = tmp_path / "textfile"
    blocker.write_text("a file, not a directory")  # unwritable as a directory, even for root
    res = run("summarize", "--run-dir", str(run_dir), "--node-type", "a100_sxm4_80gb", "--suite", "nightly",
              "--facts", str(run_dir / "node-facts.json"), "--textfile-dir", str(blocker / "sub"))
    assert res.returncode == 4
    assert f"cannot write {blocker / 'sub' / 'gpuaccept_nightly.prom'}" in res.stderr
    assert blocker.read_text() == "a file, not a directory"
    assert (run_dir / "verdict.json").exists()  # the run's own results are kept
    assert not list(tmp_path.rglob(".*.tmp"))


def test_earlier_textfile_survives_a_run_that_cannot_write(tmp_path):
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    earlier = textfile / "gpuaccept_nightly.prom"
    earlier.write_text("# earlier run\n")
    bad_run_dir = tmp_path / "file"
    bad_run_dir.write_text("x")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(NO_GPU))
    res = run("summarize", "--run-dir", str(bad_run_dir), "--node-type", "a100_sxm4_80gb", "--suite", "nightly",
              "--facts", str(facts), "--textfile-dir", str(textfile))
    assert res.returncode == 4
    assert earlier.read_text() == "# earlier run\n"


def test_unwritable_run_dir_names_it(tmp_path):
    bad = tmp_path / "file"
    bad.write_text("x")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(NO_GPU))
    res = run("summarize", "--run-dir", str(bad), "--node-type", "a100_sxm4_80gb", "--suite", "nightly",
              "--facts", str(facts))
    assert res.returncode == 4
    assert str(bad) in res.stderr and "no such run directory" in res.stderr


def test_malformed_reference_file_is_named(tmp_path):
    (tmp_path / "broken.yaml").write_text("schema: [\n")
    res = run("references", "--reference-dir", str(tmp_path))
    assert res.returncode == 4
    assert f"{tmp_path / 'broken.yaml'}: not valid YAML" in res.stderr


def test_detect_with_no_gpu_says_so(tmp_path):
    facts = tmp_path / "f.json"
    facts.write_text(json.dumps(NO_GPU))
    res = run("detect", "--facts", str(facts), "--reference-dir", str(REFERENCE_DIR))
    assert res.returncode == 4
    assert "no reference file" in res.stderr and "no GPU (no NVIDIA GPU found" in res.stderr


def test_atomic_write_replaces_whole_files(tmp_path):
    target = tmp_path / "x.prom"
    write_text_atomic(target, "a\n")
    write_text_atomic(target, "b\n")
    assert target.read_text() == "b\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in Path(tmp_path).iterdir()] == ["x.prom"]
