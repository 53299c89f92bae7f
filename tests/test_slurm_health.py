"""The node's lifecycle in Slurm, for real (docs/fleet.md, "The node's lifecycle in Slurm"): Debian's slurmctld
and slurmd on localhost (tests/test_slurm.py's cluster), `scripts/health-check.sh` as the HealthCheckProgram that
slurmd runs every few seconds and as the Epilog, judging the `nvidia-smi -q` recorded on the H200: a fault planted
in that output (ECC disabled, changed in the test) drains the node with a reason that starts with "gpuaccept:" and
names the rule, its repair resumes it, and a node drained by someone else stays drained with its reason, fault or
no fault. The rule itself (gpuaccept.results.slurm.apply_health) is the one a suite run with --drain uses.
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import RECORDED, ROOT
from test_slurm import running_cluster, sbin

from gpuaccept.probe import health
from gpuaccept.results import slurm

# Its cluster and tests/test_slurm.py's never run at once (tests/conftest.py, one_slurm_cluster).
pytestmark = pytest.mark.usefixtures("one_slurm_cluster")

H200_Q = RECORDED / "2026-11-22-h200" / "runs" / "smoke" / "nvidia-smi-q.txt"
ECC_ON = "ECC Mode\n        Current                                        : Enabled"
ECC_OFF = ECC_ON.replace("Enabled", "Disabled")


class Site:
    """The node's settings file, kernel log and `nvidia-smi -q` output, and a HealthCheckProgram that runs the
    shipped wrapper with them (slurmd gives its programs an environment of its own)."""

    def __init__(self, base: Path) -> None:
        self.smi, self.log, self.env_file = base / "smi-q.txt", base / "kernel.log", base / "health-check.env"
        self.smi.write_text(H200_Q.read_text())
        self.log.write_text(f"{health.KERNEL_LOG_HEADER} journalctl -k -o short-unix\n")
        self.env_file.write_text(f"GPUACCEPT_VENV={sys.prefix}\nGPUACCEPT_NODE_TYPE=h200\nGPUACCEPT_SLURM=1\n"
                                 f"GPUACCEPT_STATE_DIR={base}/hc-state\n"
                                 f"GPUACCEPT_HEALTH_CHECK_ARGS='--from-smi-q {self.smi}'\n")  # fmt: skip
        self.program = base / "healthcheck"
        self.program.write_text(
            "#!/bin/sh\n"
            f"export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF={base}/slurm.conf PYTHONPATH={ROOT / 'src'}\n"
            f"export GPUACCEPT_HEALTH_CHECK_ENV={self.env_file} {health.KERNEL_LOG_ENV}={self.log}\n"
            f"exec {ROOT / 'scripts' / 'health-check.sh'}\n"
        )
        self.program.chmod(0o755)

    def fault(self, on: bool) -> None:
        text = self.smi.read_text()
        self.smi.write_text(text.replace(ECC_ON, ECC_OFF) if on else text.replace(ECC_OFF, ECC_ON))


def node(env: dict) -> tuple[str, str]:
    res = subprocess.run([sbin("sinfo"), "-h", "-N", "-o", "%T|%E"], env=env, capture_output=True, text=True,
                         check=True)  # fmt: skip
    state, reason = res.stdout.strip().split("|", 1)
    return state.rstrip("*"), reason  # "*": slurmd has not answered slurmctld's last ping yet (not the state)


def wait_for(env: dict, want, what: str, timeout: float = 40) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    seen = node(env)
    while time.monotonic() < deadline:
        seen = node(env)
        if want(*seen):
            return seen
        time.sleep(0.5)
    pytest.fail(f"{what}: node stayed {seen}")


@pytest.fixture
def site(tmp_path):
    base = tmp_path / "slurm"
    base.mkdir()
    return Site(base)


def test_the_health_check_program_drains_a_fault_resumes_its_repair_and_leaves_a_foreign_drain(site):
    base = site.program.parent
    conf = (f"HealthCheckProgram={site.program}\nHealthCheckInterval=5\nHealthCheckNodeState=ANY,CYCLE\n"
            f"Epilog={site.program}\n")  # fmt: skip
    with running_cluster(base, conf) as (host, env, _):
        scontrol = sbin("scontrol")
        site.fault(True)
        _state, reason = wait_for(env, lambda s, r: s.startswith("drain"), "a planted fault under HealthCheckProgram")
        assert reason.startswith("gpuaccept: health-check: ecc_mode GPU 0"), reason
        site.fault(False)
        wait_for(env, lambda s, r: s == "idle", "the repair under HealthCheckProgram")
        # The Epilog: a job on a node whose fault appears meanwhile; the job ends well and the node drains.
        site.fault(True)
        subprocess.run([scontrol, "update", "NodeName=" + host, "State=DRAIN", "Reason=bios update"], env=env,
                       check=True)  # fmt: skip
        time.sleep(12)  # two health checks: the node is someone else's, fault or no fault
        assert node(env) == ("drained", "bios update")
        site.fault(False)
        time.sleep(12)
        assert node(env) == ("drained", "bios update")
        subprocess.run([scontrol, "update", "NodeName=" + host, "State=RESUME"], env=env, check=True)
        wait_for(env, lambda s, r: s == "idle", "resume by the operator")
        (site.program.parent / "hc-state" / "state.json").unlink()  # the Epilog's check starts afresh


def test_the_epilog_drains_after_a_job_without_failing_it(site):
    base = site.program.parent
    with running_cluster(base, f"Epilog={site.program}\n") as (_host, env, _):
        site.fault(True)
        job = subprocess.run([sbin("srun"), "-N1", "-t1", "true"], env=env, capture_output=True, text=True,
                             timeout=120, check=False)  # fmt: skip
        assert job.returncode == 0, job.stderr
        _state, reason = wait_for(env, lambda s, r: s.startswith("drain"), "the Epilog after a job on a faulty node")
        assert reason.startswith("gpuaccept: health-check: ecc_mode GPU 0"), reason  # not slurmd's "Epilog error"
        site.fault(False)
        res = subprocess.run([site.program], capture_output=True, text=True, timeout=60, check=False)
        assert res.returncode == 0 and "OK" in res.stdout
        wait_for(env, lambda s, r: s == "idle", "the repair, checked as HealthCheckProgram would")


def test_one_rule_for_the_health_check_and_a_suite(tmp_path, monkeypatch):
    """slurm.apply_health against the real slurmctld: a suite's drain waits for a suite that accepts the node;
    the health check resumes only its own drains; nobody resumes a foreign drain."""
    base = tmp_path / "slurm"
    base.mkdir()
    with running_cluster(base) as (host, env, _):
        monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])
        assert slurm.apply_health(host, None, slurm.HEALTH_CHECK) == "in service"
        assert slurm.apply_health(host, "cpu_gemm failed (run1)", "commission").startswith("drained: gpuaccept: ")
        assert node(env) == ("drained", "gpuaccept: commission: cpu_gemm failed (run1)")
        assert slurm.apply_health(host, None, slurm.HEALTH_CHECK).startswith("left drained: a suite drained it")
        assert slurm.apply_health(host, "ecc_mode GPU 0", slurm.HEALTH_CHECK).startswith("already drained")
        assert slurm.apply_health(host, None, "commission").startswith("resumed")
        assert node(env)[0] == "idle"
        subprocess.run([sbin("scontrol"), "update", f"NodeName={host}", "State=DRAIN", "Reason=rack move"], env=env,
                       check=True)  # fmt: skip
        for problem, source in ((None, "commission"), ("x", slurm.HEALTH_CHECK), (None, slurm.HEALTH_CHECK)):
            assert slurm.apply_health(host, problem, source).startswith("left alone: drained by someone else")
        assert node(env) == ("drained", "rack move")


def test_without_slurm_the_step_fails_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol: a clear error naming the command, no traceback
    with pytest.raises(slurm.SlurmError, match=r"^scontrol show node n1: .*scontrol"):
        slurm.apply_health("n1", None, slurm.HEALTH_CHECK)
