"""The fleet through Slurm, for real: Debian's slurmctld and slurmd on localhost (auth/none, temporary
directories, free ports, no systemd), the ReFrame configuration generated from an inventory, the host GEMM
check run with `reframe --distribute` as one Slurm job per node, one verdict per node, the opt-in drain of a
failed node with its reason, and the fleet summary."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT
from prom_stack import free_port

from gpuaccept.results import slurm

# Never two Slurm clusters at once on this machine, whichever worker runs this module (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_slurm_cluster")

NEED = "CI installs Debian's slurm-wlm (.ci/run)"
REF = """\
schema: gpuaccept.references/1
node_type: {name}
description: CI host without GPUs (synthetic test references)
match: {{gpu_count: 0}}
sources:
  synthetic: {{kind: synthetic, date: 2026-11-22, reference: "tests/test_slurm.py: plumbing test"}}
checks:
  cpu_gemm:
    dgemm_gflops: {{value: {dgemm}, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    sgemm_gflops: {{value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    dgemm_scaling_efficiency: {{value: 0.5, unit: ratio, lower: 0.95, wide_tolerance: CI test, source: synthetic}}
    dgemm_peak_fraction: {{value: 0.001, unit: ratio, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    sgemm_peak_fraction: {{value: 0.001, unit: ratio, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    blas_optimized_core: {{informational: "CI's CPU model is not ours to choose", unit: count, source: synthetic}}
"""
SLURM_CONF = """\
ClusterName=gpuacceptci
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=ci Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def sbin(name: str) -> str:
    path = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if Path(p).exists()), None)
    if path is None:
        pytest.fail(f"{name} not found: {NEED}")
    return path


@contextlib.contextmanager
def running_cluster(base: Path, extra_conf: str = "") -> Iterator[tuple[str, dict, Path]]:
    """slurmctld and slurmd on localhost with their state under ``base`` and ``extra_conf`` appended to
    slurm.conf; yields (the node's name, the environment naming the configuration, ``base``)."""
    if os.geteuid() != 0:
        pytest.fail("the Slurm test starts slurmd, which runs jobs as root: run it as root (CI does)")
    (base / "state").mkdir()
    (base / "spool").mkdir()
    host = socket.gethostname().split(".")[0]
    conf = base / "slurm.conf"
    conf.write_text(
        SLURM_CONF.format(host=host, base=base, ctld_port=free_port(), d_port=free_port(), cpus=os.cpu_count())
        + extra_conf
    )
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs = [
        subprocess.Popen(
            [sbin("slurmctld"), "-D", "-f", str(conf)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        ),
    ]
    try:
        time.sleep(1)
        procs.append(
            subprocess.Popen(
                [sbin("slurmd"), "-D", "-f", str(conf), "-N", host],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        )
        deadline = time.monotonic() + 60
        state = ""
        while time.monotonic() < deadline:
            res = subprocess.run(
                [sbin("sinfo"), "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True, check=False
            )
            state = res.stdout.strip()
            if state == "idle":
                break
            time.sleep(0.5)
        else:
            log = (base / "slurmctld.log").read_text() if (base / "slurmctld.log").exists() else ""
            pytest.fail(f"Slurm did not come up (node state {state!r}): {log[-2000:]}")
        yield host, env, base
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


def inventory(path: Path, host: str, node_type: str, reservation: str = "") -> Path:
    path.write_text(
        f"all:\n  children:\n    {node_type}:\n      hosts:\n        {host}:\n      vars:\n"
        f"        gpuaccept_node_type: {node_type}\n        gpuaccept_gpu_count: 0\n"
        f"        gpuaccept_slurm_partition: ci\n"
        + (f"        gpuaccept_slurm_reservation: {reservation}\n" if reservation else "")
    )
    return path


def accept(
    cluster, tmp: Path, node_type: str, *extra: str, reservation: str = ""
) -> tuple[subprocess.CompletedProcess, Path]:
    host, env, _ = cluster
    refs = tmp / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    (refs / "ci_pass.yaml").write_text(REF.format(name="ci_pass", dgemm=1.0))
    (refs / "ci_fail.yaml").write_text(REF.format(name="ci_fail", dgemm=1.0e6))
    inv = inventory(tmp / f"{node_type}.yml", host, node_type, reservation)
    results = tmp / "results"
    run_env = {**env, "VENV": sys.prefix, "RESULTS": str(results), "REFERENCE_DIR": str(refs)}
    proc = subprocess.run(
        [
            str(ROOT / "scripts" / "slurm-accept.sh"),
            str(inv),
            "commission",
            *extra,
            "--",
            # The host GEMM only, at a tiny size (the host HPL, also a CPU check, has options of its own).
            "-n",
            "^CpuGemm$",
            "-S",
            "bench_opts=--size,512,--window-s,0.3",
        ],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return proc, results


def latest(results: Path, host: str) -> dict:
    runs = sorted((results / host).glob("*-slurm/verdict.json"))
    assert runs, f"no verdict for {host} under {results}"
    return json.loads(runs[-1].read_text())


def test_a_cpu_check_runs_through_slurm_with_distribute(cluster, tmp_path):
    """Commissioning as a site does it: the node held in a Slurm reservation, the jobs sent into it."""
    host, env, _ = cluster
    subprocess.run(
        [
            sbin("scontrol"),
            "create",
            "reservation",
            "ReservationName=commission",
            f"Nodes={host}",
            "StartTime=now",
            "Duration=60",
            "Users=root",
            "Flags=IGNORE_JOBS",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    try:
        proc, results = accept(cluster, tmp_path, "ci_pass", reservation="commission")
    finally:
        subprocess.run([sbin("scontrol"), "delete", "ReservationName=commission"], env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    doc = latest(results, host)
    assert doc["verdict"] == "pass" and doc["node"] == host and doc["node_type"] == "ci_pass"
    # The job went through Slurm, pinned to the node by --distribute, on the inventory's Slurm partition.
    work = next((results / "_slurm").iterdir())
    report = json.loads((work / "reframe-report.json").read_text())
    (tc,) = [t for r in report["runs"] for t in r["testcases"] if not t.get("fixture")]
    assert tc["scheduler"] == "squeue" and tc["jobid"] and f"%.nid={host}" in tc["display_name"]
    script = next((work / "reframe").rglob("rfm_job.sh")).read_text()
    assert f"#SBATCH --nodelist={host}" in script and "#SBATCH --partition=ci" in script
    assert "#SBATCH --reservation=commission" in script
    assert json.loads((results / host / work.name / "node-facts.json").read_text())["hostname"]
    assert "1 node(s): 1 accepted, 0 rejected, 0 missing" in proc.stdout
    fleet = json.loads((work / "fleet.json").read_text())
    assert fleet["accepted"] is True and fleet["nodes"][0]["node"] == host


def test_a_failed_node_is_drained_with_the_reason(cluster, tmp_path):
    host, env, _ = cluster
    try:
        proc, results = accept(cluster, tmp_path, "ci_fail", "--drain")
        assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-3000:]
        doc = latest(results, host)
        assert doc["verdict"] == "fail" and doc["failed_checks"] == ["cpu_gemm"]
        res = subprocess.run(
            [sbin("sinfo"), "-h", "-N", "-o", "%T|%E"], env=env, capture_output=True, text=True, check=True
        )
        state, reason = res.stdout.strip().split("|", 1)
        assert state in ("drained", "draining"), res.stdout
        assert reason.startswith("gpuaccept: commission: cpu_gemm failed ("), reason
        assert "REJECTED" in proc.stdout
    finally:
        subprocess.run([sbin("scontrol"), "update", f"NodeName={host}", "State=RESUME"], env=env, check=False)


def test_inventory_errors_name_the_host():
    inv = {"_meta": {"hostvars": {"n1": {"gpuaccept_node_type": "h200", "gpuaccept_gpu_count": 8}}}}
    with pytest.raises(slurm.SlurmError, match="host n1: no gpuaccept_slurm_partition"):
        slurm.partitions(inv)
    inv["_meta"]["hostvars"] = {
        "n1": {"gpuaccept_node_type": "h200", "gpuaccept_gpu_count": 8, "gpuaccept_slurm_partition": "gpu"},
        "n2": {"gpuaccept_node_type": "h200", "gpuaccept_gpu_count": 4, "gpuaccept_slurm_partition": "gpu"},
    }
    with pytest.raises(slurm.SlurmError, match=r"host n2: node type h200 .* but n1 has"):
        slurm.partitions(inv)
    inv["_meta"]["hostvars"] = {"n1": {"gpuaccept_node_type": "auto", "gpuaccept_slurm_partition": "gpu"}}
    with pytest.raises(slurm.SlurmError, match="host n1: gpuaccept_node_type is 'auto'"):
        slurm.partitions(inv)


def test_config_from_the_example_inventory_has_one_partition_per_node_type(tmp_path):
    parts = slurm.partitions(slurm.load_inventory(ROOT / "inventories" / "example"))
    assert {p.node_type: (p.slurm_partition, p.reservation, p.gpu_count, len(p.hosts)) for p in parts} == {
        "h100_sxm5_80gb": ("h100", "commission", 8, 2),
        "h200": ("h200", "commission", 8, 2),
    }
    config = slurm.site_config(parts, ROOT / "reference_values", {"blas": "openblas", "git_revision": "test"})
    path = slurm.write_config(config, tmp_path / "settings.py", "inventories/example")
    scope: dict = {}
    exec(path.read_text(), scope)
    (system,) = scope["site_configuration"]["systems"]
    h200 = next(p for p in system["partitions"] if p["name"] == "h200")
    assert h200["scheduler"] == "squeue" and h200["access"] == ["--partition=h200", "--reservation=commission"]
    assert h200["features"] == ["gpu"] and h200["devices"] == [{"type": "gpu", "num_devices": 8}]
    assert h200["extras"]["node_type"] == "h200" and h200["extras"]["gpu_count"] == 8
    assert scope["site_configuration"]["environments"][0]["name"] == "builtin"


def test_across_takes_the_allocations_nodes(cluster, tmp_path):
    """gpuaccept across --slurm inside an allocation: the nodes from `scontrol show hostnames` of the job's node
    list; one node is NOT RUN with the reason (exit 3), nothing launched."""
    host, env, _base = cluster
    res = subprocess.run(
        [sbin("salloc"), "-N1", "--time=2", sys.executable, "-m", "gpuaccept", "across", "--slurm", "--launcher",
         "srun", "--results", str(tmp_path)],
        env={**env, "PYTHONPATH": str(ROOT / "src")}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 3, res.stdout + res.stderr
    (summary,) = tmp_path.glob("_across/*/across.json")
    doc = json.loads(summary.read_text())
    assert doc["hosts"] == [host] and doc["rounds"] == []
    assert doc["judgement"]["nodes"][0]["reason"] == f"{host}: fewer than 2 nodes: nothing between nodes to measure"


def test_the_nccl_across_bootstrap_is_the_allocations_first_host(cluster):
    """The bootstrap address NcclAcrossNodes exports in its job script (reframe_checks/src/nccl/bootstrap-address.sh):
    inside an allocation, the first host `scontrol show hostnames` gives for the job's node list."""
    host, env, _base = cluster
    script = ROOT / "reframe_checks" / "src" / "nccl" / "bootstrap-address.sh"
    res = subprocess.run([sbin("salloc"), "-N1", "--time=2", "sh", str(script), "29511"], env=env,
                         capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"{host}:29511"
    bad = subprocess.run(["sh", str(script), "port"], capture_output=True, text=True, check=False)
    assert bad.returncode == 3 and "give the bootstrap port (a number), not 'port'" in bad.stderr
