"""scripts/bundle.sh: the pieces that need no network (CI reaches PyPI and Debian only, not GitHub or NVIDIA):
the pins it reads from the roles, the refusal of an archive whose sha256 is not the pinned one (nothing kept),
SHA256SUMS and --verify (which catches a changed file), and the Ansible variables it writes."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "scripts" / "bundle.sh"


def bundle(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUNDLE), *args], env=dict(os.environ, **env), capture_output=True, text=True, timeout=300, check=False
    )


def test_a_mirror_with_another_archive_is_refused(tmp_path: Path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    fake = mirror / "nvbandwidth-0.8.tar.gz"
    with tarfile.open(fake, "w:gz") as tar:
        tar.add(ROOT / "README.md", arcname="nvbandwidth-0.8/README.md")
    out = tmp_path / "b"
    proc = bundle(str(out), SKIP="wheelhouse keys packages project", SOURCES_FROM=str(mirror))
    assert proc.returncode == 1
    assert "nvbandwidth-0.8.tar.gz from " + str(mirror) + " has sha256 " in proc.stderr
    assert "not the pinned b3622945eb7fce2b4e1aea7d13de04f415f4d998db602893201a904320cf2d39" in proc.stderr
    assert not list((out / "sources").iterdir()), "a file that failed its checksum was kept"


def test_a_missing_mirror_file_is_named(tmp_path: Path):
    proc = bundle(str(tmp_path / "b"), SKIP="wheelhouse keys packages project", SOURCES_FROM=str(tmp_path))
    assert proc.returncode == 1
    assert f"{tmp_path}/nvbandwidth-0.8.tar.gz not found (SOURCES_FROM)" in proc.stderr


def test_checksums_and_verify(tmp_path: Path):
    out = tmp_path / "b"
    proc = bundle(str(out), SKIP="wheelhouse sources keys packages")
    assert proc.returncode == 0, proc.stderr
    sums = (out / "SHA256SUMS").read_text().splitlines()
    names = sorted(line.split()[1] for line in sums)
    (project,) = [n for n in names if n.endswith(".tar.gz")]
    assert names == sorted([project, "./gpuaccept-bundle.yml"])
    with tarfile.open(out / project[2:]) as tar:
        assert any(n.endswith("/roles/gpuaccept_cuda_samples/defaults/main.yml") for n in tar.getnames())
    assert yaml.safe_load((out / "gpuaccept-bundle.yml").read_text()) is None  # nothing to point at: all skipped
    ok = bundle("--verify", str(out))
    assert ok.returncode == 0 and "all match SHA256SUMS" in ok.stdout
    with open(out / "gpuaccept-bundle.yml", "a") as f:
        f.write("# changed in transit\n")
    bad = bundle("--verify", str(out))
    assert bad.returncode == 1
    assert "gpuaccept-bundle.yml: FAILED" in bad.stdout
    assert "do not match SHA256SUMS" in bad.stderr
    assert "not a bundle" in bundle("--verify", str(tmp_path)).stderr


def test_an_unpinned_nvidia_key_stops_the_build(tmp_path: Path):
    """NVIDIA's key is taken only against a sha256 that lives in the repository (or one given by hand), never
    trusted for being the first download (node_exporter's archive goes the same way, never by its release's own
    sha256sums.txt)."""
    env = {"NODE_EXPORTER_SHA256": "", "NVIDIA_KEY_SHA256": "", "SOURCES_FROM": str(tmp_path / "mirror")}
    (tmp_path / "mirror").mkdir()
    proc = bundle(str(tmp_path / "b"), SKIP="wheelhouse sources packages project", **env)
    assert proc.returncode == 1
    assert "no pinned sha256 for NVIDIA's key 3bf863cc.pub" in proc.stderr
    assert not (tmp_path / "b" / "keys" / "3bf863cc.pub").exists()


def test_verify_refuses_a_wheel_the_checkout_does_not_pin(tmp_path: Path):
    """SHA256SUMS is written with the bundle: a wheel swapped before it was written passes it, not the pins."""
    out = tmp_path / "b"
    (out / "wheelhouse").mkdir(parents=True)
    (out / "wheelhouse" / "pyyaml-6.0.3-cp311-cp311-manylinux_2_17_x86_64.whl").write_bytes(b"not the pinned wheel")
    proc = bundle(str(out), SKIP="wheelhouse sources keys packages project")
    assert proc.returncode == 0, proc.stderr
    bad = bundle("--verify", str(out))
    assert bad.returncode == 1 and "all match SHA256SUMS" in bad.stdout
    assert "pyyaml-6.0.3-cp311-cp311-manylinux_2_17_x86_64.whl" in bad.stderr
    assert "holds wheels this checkout does not pin" in bad.stderr
