"""The gpuaccept_namd role, run for real with ansible-playbook on this host: its preflight (artifact missing,
checksum wrong, checksum not pinned, GPU build required), check mode, a real install from site artifacts
(stand-in NAMD tarballs built here: a top folder holding an executable namd3, and an input archive) and
idempotency."""

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from gpuaccept.probe import namd

PLAYBOOK = """\
- name: Install NAMD for gpuaccept (test)
  hosts: localhost
  gather_facts: false
  roles: [gpuaccept_namd]
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_tar(path: Path, files: dict[str, str], exe: tuple[str, ...] = ()) -> Path:
    src = path.with_suffix(".d")
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
        if name in exe:
            (src / name).chmod(0o755)
    with tarfile.open(path, "w:gz") as tar:
        for top in sorted({n.split("/")[0] for n in files}):
            tar.add(src / top, arcname=top)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp("namd_role")
    gpu = make_tar(
        base / "NAMD_3.0.2_Linux-x86_64-multicore-CUDA.tar.gz",
        {"NAMD_3.0.2_Linux-x86_64-multicore-CUDA/namd3": "#!/bin/sh\necho stand-in\n"},
        exe=("NAMD_3.0.2_Linux-x86_64-multicore-CUDA/namd3",),
    )
    cpu = make_tar(
        base / "NAMD_3.0.2_Linux-x86_64-multicore.tar.gz",
        {"NAMD_3.0.2_Linux-x86_64-multicore/namd3": "#!/bin/sh\necho stand-in\n"},
        exe=("NAMD_3.0.2_Linux-x86_64-multicore/namd3",),
    )
    apoa1 = make_tar(
        base / "apoa1.tar.gz", {"apoa1/apoa1.namd": "structure apoa1.psf\nnumsteps 500\n", "apoa1/apoa1.psf": "PSF\n"}
    )
    (base / "playbook.yml").write_text(PLAYBOOK)
    return {"base": base, "gpu": gpu, "cpu": cpu, "apoa1": apoa1}


def play(site, variables: dict, *extra: str) -> subprocess.CompletedProcess:
    vars_file = site["base"] / f"vars-{abs(hash(str(variables)))}.yml"
    vars_file.write_text(yaml.safe_dump(variables))
    env = {
        **os.environ,
        "LC_ALL": "C.UTF-8",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
    }
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(ROOT / "inventories" / "local"),
           str(site["base"] / "playbook.yml"), "-e", f"@{vars_file}", *extra]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, check=False, timeout=600)
    proc.text = " ".join(proc.stdout.split())  # messages as one line (the YAML callback folds them)
    return proc


def good(site, home: Path) -> dict:
    return {
        "gpuaccept_namd_home": str(home),
        "gpuaccept_namd_gpu_build": {"src": str(site["gpu"]), "sha256": sha256(site["gpu"])},
        "gpuaccept_namd_cpu_build": {"src": str(site["cpu"]), "sha256": sha256(site["cpu"])},
        "gpuaccept_namd_input_archives": [{"src": str(site["apoa1"]), "sha256": sha256(site["apoa1"])}],
        "gpuaccept_namd_configs": {"apoa1": {"classic": "apoa1/apoa1.namd", "resident": ""}},
    }


def recap_changed(proc: subprocess.CompletedProcess) -> int:
    line = next(x for x in proc.stdout.splitlines() if x.startswith("localhost") and "changed=" in x)
    return int(line.split("changed=")[1].split()[0])


def test_missing_artifact_is_named(site, tmp_path):
    variables = good(site, tmp_path / "namd")
    variables["gpuaccept_namd_gpu_build"]["src"] = str(tmp_path / "NAMD_absent.tar.gz")
    proc = play(site, variables)
    assert proc.returncode != 0
    assert f"{tmp_path / 'NAMD_absent.tar.gz'} not found on the controller" in proc.text
    assert "see the NAMD section of README.md" in proc.text
    assert not (tmp_path / "namd").exists()


def test_wrong_checksum_is_named_and_nothing_is_installed(site, tmp_path):
    variables = good(site, tmp_path / "namd")
    variables["gpuaccept_namd_cpu_build"]["sha256"] = "0" * 64
    proc = play(site, variables)
    assert proc.returncode != 0
    assert f"has sha256 {sha256(site['cpu'])}, but {'0' * 64} is pinned" in proc.text
    assert not (tmp_path / "namd").exists()


def test_checksum_must_be_pinned(site, tmp_path):
    variables = good(site, tmp_path / "namd")
    variables["gpuaccept_namd_input_archives"][0]["sha256"] = ""
    proc = play(site, variables)
    assert proc.returncode != 0
    assert "gpuaccept_namd_input_archives" in proc.text and "64 lower-case hex digits" in proc.text


def test_required_gpu_build_without_source_fails(site, tmp_path):
    proc = play(site, {"gpuaccept_namd_home": str(tmp_path / "namd"), "gpuaccept_namd_required": True})
    assert proc.returncode != 0
    assert "gpuaccept_namd_gpu_build.src is empty" in proc.text


def test_check_mode_changes_nothing_then_install_is_idempotent(site, tmp_path):
    home = tmp_path / "namd"
    variables = good(site, home)
    dry = play(site, variables, "--check")
    assert dry.returncode == 0, dry.stdout[-3000:]
    assert not home.exists()
    first = play(site, variables)
    assert first.returncode == 0, first.stdout[-3000:]
    assert os.access(home / "gpu" / "namd3", os.X_OK) and os.access(home / "cpu" / "namd3", os.X_OK)
    assert (home / "configs" / "apoa1_classic.namd").resolve() == home / "inputs" / "apoa1" / "apoa1.namd"
    assert (home / "configs" / "apoa1_resident.namd").resolve() == home / "inputs" / "apoa1" / "apoa1.namd"
    # What the NAMD check looks for is all there now.
    assert namd.missing(home, "apoa1", ["gpu_resident", "gpu_offload", "cpu"]) == ""
    again = play(site, variables)
    assert again.returncode == 0 and recap_changed(again) == 0, again.stdout[-3000:]
    dry_after = play(site, variables, "--check")
    assert dry_after.returncode == 0 and recap_changed(dry_after) == 0, dry_after.stdout[-3000:]


def test_config_path_missing_from_the_archives_is_named(site, tmp_path):
    variables = good(site, tmp_path / "namd")
    variables["gpuaccept_namd_configs"] = {"apoa1": {"classic": "apoa1/nosuch.namd", "resident": ""}}
    proc = play(site, variables)
    assert proc.returncode != 0
    assert "apoa1/nosuch.namd (gpuaccept_namd_configs.apoa1.classic) is not in the unpacked input archives" in proc.text
