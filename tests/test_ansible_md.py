"""The gpuaccept_md role, run for real with ansible-playbook on this host: the APOA1 input set (the third-party
input apoa1, tests/inputs.toml) installed from a file on the controller with its pinned sha256, a wrong file
refused, nothing done without a source, check mode and idempotency."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, needs_input

from gpuaccept.manifest import file_sha256
from gpuaccept.probe import md_apoa1

PLAYBOOK = """\
- name: Install the APOA1 input set for gpuaccept (test)
  hosts: localhost
  gather_facts: false
  roles: [gpuaccept_md]
"""


def play(base: Path, variables: dict, *extra: str) -> subprocess.CompletedProcess:
    (base / "playbook.yml").write_text(PLAYBOOK)
    vars_file = base / f"vars-{abs(hash(str(variables)))}.yml"
    vars_file.write_text(yaml.safe_dump(variables))
    env = {**os.environ, "LC_ALL": "C.UTF-8", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_ROLES_PATH": str(ROOT / "roles")}  # fmt: skip
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(ROOT / "inventories" / "local"),
           str(base / "playbook.yml"), "-e", f"@{vars_file}", *extra]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, check=False, timeout=600)
    proc.text = " ".join(proc.stdout.split())
    return proc


def recap_changed(proc: subprocess.CompletedProcess) -> int:
    line = next(x for x in proc.stdout.splitlines() if x.startswith("localhost") and "changed=" in x)
    return int(line.split("changed=")[1].split()[0])


def test_the_pinned_checksum_is_that_of_the_shared_input_set():
    assert file_sha256(needs_input("apoa1")) == md_apoa1.APOA1_TARBALL_SHA256
    defaults = yaml.safe_load((ROOT / "roles" / "gpuaccept_md" / "defaults" / "main.yml").read_text())
    assert defaults["gpuaccept_md_apoa1_archive"]["sha256"] == md_apoa1.APOA1_TARBALL_SHA256


def test_wrong_file_is_refused_and_nothing_is_installed(tmp_path):
    other = tmp_path / "apoa1.tar.gz"
    other.write_bytes(b"not the input set")
    variables = {"gpuaccept_md_home": str(tmp_path / "md"), "gpuaccept_md_apoa1_archive": {"src": str(other)}}
    proc = play(tmp_path, variables)
    assert proc.returncode != 0
    assert f"but {md_apoa1.APOA1_TARBALL_SHA256} is pinned: it is not the input set NAMD publishes" in proc.text
    assert not (tmp_path / "md").exists()


def test_no_source_installs_nothing_unless_required(tmp_path):
    proc = play(tmp_path, {"gpuaccept_md_home": str(tmp_path / "md")})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert not (tmp_path / "md").exists()
    proc = play(tmp_path, {"gpuaccept_md_home": str(tmp_path / "md"), "gpuaccept_md_required": True})
    assert proc.returncode != 0 and "gpuaccept_md_apoa1_archive.src is empty" in proc.text


def test_check_mode_then_install_is_idempotent(tmp_path):
    home = tmp_path / "md"
    variables = {"gpuaccept_md_home": str(home), "gpuaccept_md_apoa1_archive": {"src": str(needs_input("apoa1"))}}
    dry = play(tmp_path, variables, "--check")
    assert dry.returncode == 0, dry.stdout[-3000:]
    assert not home.exists()
    first = play(tmp_path, variables)
    assert first.returncode == 0, first.stdout[-3000:]
    for name in md_apoa1.INPUT_FILES:
        assert (home / "apoa1" / name).is_file(), name
    assert (home / "apoa1" / f".gpuaccept-{md_apoa1.APOA1_TARBALL_SHA256[:12]}").is_file()
    again = play(tmp_path, variables)
    assert again.returncode == 0 and recap_changed(again) == 0, again.stdout[-3000:]


@pytest.mark.parametrize("sha", ["", "ABC"])
def test_checksum_must_be_pinned(tmp_path, sha):
    variables = {"gpuaccept_md_home": str(tmp_path / "md"),
                 "gpuaccept_md_apoa1_archive": {"src": str(needs_input("apoa1")), "sha256": sha}}  # fmt: skip
    proc = play(tmp_path, variables)
    assert proc.returncode != 0 and "must be 64 lower-case hex digits" in proc.text
