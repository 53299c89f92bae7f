"""playbooks/across.yml (role gpuaccept_across) on the controller: its syntax, check mode (nothing run), and real
runs of the real ``gpuaccept across`` with the argv the role builds, over an inventory group of four nodes, with the
stand-in ``mpirun`` of tests/test_across_cli.py on PATH (it writes gpuaccept-nccl's documented multi-process layout
from a model of the fleet): a healthy set passes the play; a slow node fails it, named in across.json, with the raw
documents kept."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_across_cli import FAKE_MPIRUN

VENV_BIN = Path(sys.prefix) / "bin"
PLAYBOOK = ROOT / "playbooks" / "across.yml"
INVENTORY = """\
all:
  children:
    gpu:
      hosts:
        node-a: {gpuaccept_node_type: ci_across}
        node-b: {gpuaccept_node_type: ci_across}
        node-c: {gpuaccept_node_type: ci_across}
        node-d: {gpuaccept_node_type: ci_across}
    service:
      hosts:
        login-1:
"""


def playbook(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    full = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1", "LC_ALL": "C.UTF-8",
            "PYTHONPATH": str(ROOT / "src"), **(env or {})}  # fmt: skip
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOK), "-e", "gpuaccept_across_group=gpu",
            "-e", f"gpuaccept_across_results_dir={tmp_path / 'res'}", *args]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=full, check=False, cwd=ROOT)


@pytest.fixture
def fake_path(tmp_path) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mpirun = bin_dir / "mpirun"
    mpirun.write_text(FAKE_MPIRUN.format(python=sys.executable))
    mpirun.chmod(mpirun.stat().st_mode | stat.S_IXUSR)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def test_syntax_and_check_mode_run_nothing(tmp_path):
    syntax = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(ROOT / "inventories" / "example"),
                             "--syntax-check", str(PLAYBOOK)], capture_output=True, text=True, check=False,
                            env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})  # fmt: skip
    assert syntax.returncode == 0, syntax.stdout + syntax.stderr
    proc = playbook(tmp_path, "--check")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "TASK [gpuaccept_across : Run gpuaccept across over the group's nodes]" in proc.stdout
    assert not (tmp_path / "res" / "_across").exists()


def test_a_group_of_one_node_is_refused_before_anything_runs(tmp_path):
    proc = playbook(tmp_path, "-e", "gpuaccept_across_group=service")
    assert proc.returncode != 0
    assert "gpuaccept_across_group 'service' has 1 host(s)" in proc.stdout, proc.stdout[-3000:]


@pytest.mark.parametrize(("bad", "play_rc"), [("", 0), ("node-c", 2)], ids=["healthy", "node-c-slow"])
def test_the_role_runs_gpuaccept_across_over_the_group(tmp_path, fake_path, bad, play_rc):
    proc = playbook(tmp_path, "-e", "gpuaccept_across_ranks_per_node=2", "-e", '{"gpuaccept_across_tool_args": '
                    '["--max-bytes", "67108864"], "gpuaccept_across_launcher_args": ["--mca", "btl", "tcp,self"]}',
                    env={"PATH": fake_path, "FAKE_BAD": bad})  # fmt: skip
    assert proc.returncode == play_rc, proc.stdout[-4000:] + proc.stderr[-2000:]
    (summary,) = (tmp_path / "res" / "_across").glob("*/across.json")
    doc = json.loads(summary.read_text())
    # The group's hosts only (login-1 is in the inventory, not in the group), the node type from the inventory.
    assert doc["hosts"] == ["node-a", "node-b", "node-c", "node-d"]
    argv = doc["rounds"][0]["argv"]
    assert argv[0] == "mpirun" and "--mca" in argv and argv[argv.index("--mca") + 1] == "btl"
    assert "--max-bytes" in argv and "--ring" in argv and "-np" in argv and argv[argv.index("-np") + 1] == "8"
    assert list((summary.parent / "raw").glob("*.json"))
    named = [n["subject"] for n in doc["judgement"]["nodes"] if n["status"] == "fail"]
    if bad:
        assert named == ["node-c"]
        assert "gpuaccept across exited 1: a node, rail or the whole set failed" in proc.stdout
    else:
        assert named == [] and "Fail unless every node passed" in proc.stdout
