"""scripts/deps.sh, what `make test` and CI run first: it installs every missing Debian package in one apt-get
call, or, where it cannot, names every missing package in one message with the command to install them."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEPS = ROOT / "scripts" / "deps.sh"


def packages() -> list[str]:
    return subprocess.run([str(DEPS), "--list"], capture_output=True, text=True, check=True).stdout.split()


@pytest.fixture
def fakebin(tmp_path):
    """A PATH directory in front of the system's: dpkg-query answers from tmp_path/installed, apt-get and sudo
    record their arguments, id -u answers tmp_path/uid, nvcc exists."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"

    def script(name: str, body: str) -> None:
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)

    script("dpkg-query", f'grep -qx "$3" {tmp_path}/installed && printf "ii " || exit 1')
    script("apt-get", f'echo "apt-get $*" >> {calls}')
    script("id", f"cat {tmp_path}/uid")
    script("sudo", f'[ "$1" = -n ] && exit 1; echo "sudo $*" >> {calls}; exec "$@"')
    script("nvcc", "exit 0")
    (tmp_path / "uid").write_text("0\n")
    (tmp_path / "installed").write_text("\n".join(packages()) + "\n")
    return tmp_path


def deps(fakebin: Path, *args: str, path_tail: str = "/usr/bin:/bin") -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{fakebin / 'bin'}:{path_tail}", "CUDA_HOME": str(fakebin / "no-cuda")}
    return subprocess.run([str(DEPS), *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                          check=False)


def uninstall(fakebin: Path, *names: str) -> None:
    kept = [p for p in packages() if p not in names]
    (fakebin / "installed").write_text("\n".join(kept) + "\n")


def test_the_list_has_what_the_tests_use():
    listed = packages()
    assert len(listed) == len(set(listed))
    for pkg in ("chromium", "hpcc", "libopenblas-dev", "prometheus", "prometheus-node-exporter",
                "prometheus-pushgateway", "slurmctld", "slurmd", "slurm-client", "openmpi-bin", "python3-apt"):
        assert pkg in listed


def test_nothing_missing_installs_nothing(fakebin):
    res = deps(fakebin)
    assert res.returncode == 0, res.stderr
    assert not (fakebin / "calls").exists()
    # Success says so too: one line, whether or not --check was given.
    for args in ((), ("--check",)):
        res = deps(fakebin, *args)
        assert res.returncode == 0 and "Debian packages the tests need are installed" in res.stdout, res
        assert f"CUDA toolkit: {fakebin / 'bin' / 'nvcc'}" in res.stdout


def test_missing_packages_are_installed_in_one_call_as_root(fakebin):
    uninstall(fakebin, "chromium", "hpcc")
    res = deps(fakebin)
    assert res.returncode == 0, res.stderr
    assert "installing 2 Debian package(s) with apt-get: hpcc chromium" in res.stdout
    assert (fakebin / "calls").read_text().splitlines() == [
        "apt-get update -q",
        "apt-get install -y -q --no-install-recommends hpcc chromium",
    ]


def test_not_root_installs_through_sudo_when_it_needs_no_password(fakebin):
    uninstall(fakebin, "slurmd")
    (fakebin / "uid").write_text("1000\n")
    sudo = fakebin / "bin" / "sudo"
    sudo.write_text(f'#!/bin/sh\n[ "$1" = -n ] && shift\necho "sudo $*" >> {fakebin}/calls\nexec "$@"\n')
    res = deps(fakebin)
    assert res.returncode == 0, res.stderr
    assert "sudo apt-get install -y -q --no-install-recommends slurmd" in (fakebin / "calls").read_text()


def test_not_root_without_sudo_lists_everything_missing_once(fakebin):
    uninstall(fakebin, "chromium", "slurmctld", "prometheus")
    (fakebin / "uid").write_text("1000\n")  # the fake sudo asks for a password, and stdin is no terminal
    res = deps(fakebin)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        "deps.sh: not root and no sudo to install with; missing 3 package(s): prometheus chromium slurmctld",
        "deps.sh: install them with: sudo apt-get update && sudo apt-get install --no-install-recommends "
        "prometheus chromium slurmctld",
    ]
    assert not (fakebin / "calls").exists()


def test_check_only_lists(fakebin):
    uninstall(fakebin, "hpcc")
    res = deps(fakebin, "--check")
    assert res.returncode == 2
    assert "missing 1 package(s): hpcc" in res.stderr
    assert not (fakebin / "calls").exists()


def test_no_cuda_toolkit_is_named(fakebin):
    (fakebin / "bin" / "nvcc").unlink()
    res = deps(fakebin, path_tail="/bin")  # /bin without /usr/bin: on Debian 12 /bin is /usr/bin, so keep nvcc out
    if (Path("/bin") / "nvcc").exists():
        pytest.skip("nvcc is in /bin here")
    assert res.returncode == 2
    assert "no nvcc on PATH" in res.stderr and "CUDA toolkit" in res.stderr


def test_unknown_argument_is_a_usage_error(fakebin):
    res = deps(fakebin, "--instal")
    assert res.returncode == 2
    assert res.stderr.strip() == "usage: scripts/deps.sh [--check | --list]"
