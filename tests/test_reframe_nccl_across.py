"""NcclAcrossNodes (the multinode suite's NCCL check across nodes) through ReFrame: the job script ReFrame writes
for a Slurm partition with srun (``--dry-run``, nothing submitted): tasks, launcher line, environment, bootstrap; and
the check run for real with the real gpuaccept-nccl on this GPU-less machine (two ranks started by Open MPI's
mpirun), its "no CUDA device" document judged by ``gpuaccept summarize``: a failed check, never a pass."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from prom_stack import free_port
from rfm_support import VENV

from gpuaccept import rfmconfig
from gpuaccept.probe import facts as node_facts
from gpuaccept.results import slurm

REF = """\
schema: gpuaccept.references/1
node_type: {name}
description: CI node type expecting the NCCL check across nodes (synthetic test references)
match: {{gpu_model: NVIDIA Test GPU, gpu_count: {gpus}}}
sources:
  synthetic: {{kind: synthetic, date: 2026-11-28, reference: "tests/test_reframe_nccl_across.py: plumbing test"}}
checks:
  nccl_across:
    allreduce_busbw_gbps_max: {{value: 1.0, unit: GB/s, lower: 0.5, wide_tolerance: plumbing test, source: synthetic}}
"""
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}


def reframe(config: Path, run_dir: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [str(VENV / "bin" / "reframe"), "-C", str(config), "-c", str(ROOT / "reframe_checks"), "-R",
           "--tag", "multinode", "-n", "^NcclAcrossNodes$", "--prefix", str(run_dir / "reframe"),
           "--report-file", str(run_dir / "reframe-report.json"), "--save-log-files", *extra]  # fmt: skip
    env = {**os.environ, "LC_ALL": "C.UTF-8", "RFM_REPORT_JUNIT": "", "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    return subprocess.run(cmd, cwd=run_dir, capture_output=True, text=True, timeout=600, env=env, check=False)


def slurm_job(tmp_path: Path, *options: str) -> str:
    """The job script of NcclAcrossNodes for a Slurm partition of 4-GPU nodes with srun (gpuaccept slurm-config
    --launcher srun --mpi)."""
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_across.yaml").write_text(REF.format(name="ci_across", gpus=4))
    part = slurm.Partition("ci_across", "gpu", gpu_count=4, hosts=["node01", "node02"])
    config = slurm.site_config([part], refs, {"git_revision": "test", "bench_dir": str(tmp_path / "bin")},
                               scheduler="slurm", launcher="srun", mpi=True)  # fmt: skip
    slurm.write_config(config, tmp_path / "settings.py", "tests/test_reframe_nccl_across.py")
    proc = reframe(tmp_path / "settings.py", tmp_path, *options, "--dry-run")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs = list((tmp_path / "reframe").rglob("NcclAcrossNodes/rfm_job.sh"))
    assert len(jobs) == 1, proc.stdout[-3000:]
    return jobs[0].read_text()


def test_the_slurm_job_runs_one_rank_per_gpu_on_every_node_with_srun(tmp_path):
    script = slurm_job(tmp_path, "-S", "NcclAcrossNodes.num_nodes=3")
    lines = script.splitlines()
    assert "#SBATCH --ntasks=12" in lines and "#SBATCH --ntasks-per-node=4" in lines
    assert "#SBATCH --partition=gpu" in lines
    assert "export NCCL_NVLS_ENABLE=0" in lines
    boot = lines.index("GPUACCEPT_BOOTSTRAP=$(sh nccl/bootstrap-address.sh 29500) || exit 3")
    assert lines[boot + 1] == "export GPUACCEPT_BOOTSTRAP"
    (launch,) = [x for x in lines if x.startswith("srun ")]
    assert lines.index(launch) > boot + 1  # the bootstrap is exported before srun passes the environment on
    assert launch.split()[1].endswith("/gpuaccept-nccl")
    assert " --multi-process --comm world --ring --output nccl_across.json" in launch
    # The script the job runs is in the stage directory (ReFrame copies reframe_checks/src there).
    (stage,) = (tmp_path / "reframe" / "stage").rglob("NcclAcrossNodes")
    assert os.access(stage / "nccl" / "bootstrap-address.sh", os.X_OK)


def test_the_rail_layout_and_a_given_gpu_count(tmp_path):
    script = slurm_job(tmp_path, "-S", "NcclAcrossNodes.comm=rail", "-S", "NcclAcrossNodes.gpus_per_node=2")
    assert "#SBATCH --ntasks=4" in script and "#SBATCH --ntasks-per-node=2" in script
    assert " --multi-process --comm rail --ring " in script


def test_an_unknown_layout_is_refused(tmp_path):
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_across.yaml").write_text(REF.format(name="ci_across", gpus=4))
    config = slurm.site_config([slurm.Partition("ci_across", "gpu", gpu_count=4)], refs, {}, launcher="srun", mpi=True)
    slurm.write_config(config, tmp_path / "settings.py", "test")
    proc = reframe(tmp_path / "settings.py", tmp_path, "-S", "NcclAcrossNodes.comm=pairs", "--dry-run")
    assert "comm must be 'world' or 'rail', not 'pairs'" in proc.stdout + proc.stderr
    assert not list(tmp_path.rglob("rfm_job.sh"))


def test_the_real_tool_without_a_gpu_is_a_failed_check_never_a_pass(nccl_tool, tmp_path):
    """Two ranks on this host through the mpirun launcher (Open MPI sets OMPI_COMM_WORLD_RANK), the real
    gpuaccept-nccl prebuilt in ``extras.bench_dir``: every rank finds no CUDA device, rank 0 writes the document with
    every rank's error, and the judge fails the check with them."""
    if shutil.which("mpirun") is None:
        pytest.fail("mpirun not found: CI installs Debian's openmpi-bin (.ci/run)")
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_across.yaml").write_text(REF.format(name="ci_across", gpus=2))
    facts = node_facts.gather()
    facts_file = tmp_path / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    extras = {"node_type": "ci_across", "reference_dir": str(refs), "gpu_count": 2, "facts_file": str(facts_file),
              "cuda_arch": "", "git_revision": "test", "bench_dir": str(nccl_tool.parent)}  # fmt: skip
    site = rfmconfig.site_configuration("ci_across", 2, extras, "nvcc")
    (part,) = site["systems"][0]["partitions"]
    assert part["launcher"] == "local" and part["features"] == ["gpu"]
    part["launcher"], part["features"] = "mpirun", ["gpu", "mpi"]
    config = slurm.write_config(site, tmp_path / "settings.py", "tests/test_reframe_nccl_across.py")
    proc = reframe(config, tmp_path, "-S", "NcclAcrossNodes.num_nodes=1",
                   "-S", f"NcclAcrossNodes.bootstrap_port={free_port()}", "-S", "bench_opts=--bootstrap-timeout-s,20",
                   "-S", "mode=quick", "-r", env=MPI_ENV)  # fmt: skip
    script = next((tmp_path / "reframe").rglob("NcclAcrossNodes/rfm_job.sh")).read_text()
    assert "mpirun -np 2 " in script, script
    # A failed test's files stay in its stage directory, where the judge reads them.
    (doc_path,) = (tmp_path / "reframe").rglob("nccl_across.json")
    doc = json.loads(doc_path.read_text())
    assert doc["parameters"]["mode"] == "multi_process" and doc["parameters"]["ranks"] == 2
    assert doc["parameters"]["rank_source"] == "OMPI_COMM_WORLD_RANK" and doc["parameters"]["ring"] is True
    assert doc["verification"]["passed"] is False and doc["metrics"] == {}
    assert all("no CUDA device found" in e for e in doc["errors"]) and len(doc["errors"]) == 2
    summary = subprocess.run(
        [sys.executable, "-m", "gpuaccept", "summarize", "--run-dir", str(tmp_path), "--node-type", "ci_across",
         "--suite", "multinode", "--facts", str(facts_file), "--reference-dir", str(refs)],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert summary.returncode != 0 and verdict["verdict"] != "pass", proc.stdout[-3000:] + summary.stdout
    rows = {r["metric"]: r for r in verdict["rows"] if r["check"] == "nccl_across"}
    assert rows[None]["status"] == "fail" and "rank 1 (" in rows[None]["reason"], rows
    assert "no CUDA device found" in rows[None]["reason"]
    assert rows["allreduce_busbw_gbps_max"]["status"] == "fail"  # not measured
