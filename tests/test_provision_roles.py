"""The provisioning roles, run for real with ansible-playbook against this host (tests/ansible/apply_role.yml).

What runs here and what it proves (no GPU, no network, no systemd needed):
- preflight refusals with their operator-facing messages: unsupported platform, unpinned or wrong checksums,
  missing artifacts, inconsistent settings;
- gpuaccept_nvidia_driver's "right driver present -> change nothing" decision, against a stand-in nvidia-smi on
  PATH that prints what nvidia-smi --query-gpu=driver_version prints. It proves the role's probe and decision, not
  that a driver works; the driver's install path runs only on a real node;
- gpuaccept_cuda_toolkit's "present -> change nothing" against this machine's real nvcc and libraries;
- gpuaccept_node_exporter's Debian package path for real (apt, the package that .ci/run installs) and its
  release-binary path with the package's own binary repackaged as a release archive; both idempotent, and
  Debian's node_exporter started with the flags the role wrote reads a file from the textfile directory;
- gpuaccept_mkl against a tool environment that has MKL (CI's: GPUACCEPT_MKL=1): loads libmkl_rt, asks its
  version, changes nothing.
System paths the roles write (systemd units, /etc/default, the binary's link) are redirected into tmp_path
through the roles' internal path variables, so running the tests changes nothing outside it except packages
that are already installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PLAYBOOK = ROOT / "tests" / "ansible" / "apply_role.yml"
IS_ROOT = os.geteuid() == 0
NODE_EXPORTER = Path("/usr/bin/prometheus-node-exporter")


def play(tmp_path: Path, role: str, extra: dict | None = None, *args: str) -> tuple[int, str]:
    vars_file = tmp_path / f"vars-{role}-{time.monotonic_ns()}.json"
    vars_file.write_text(json.dumps({"gpuaccept_test_role": role, **(extra or {})}))
    env = dict(
        os.environ,
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
        LC_ALL="C.UTF-8",
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "at"),
    )
    env.pop("ANSIBLE_INVENTORY", None)
    proc = subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            "-i",
            str(ROOT / "inventories" / "local"),
            str(PLAYBOOK),
            "-e",
            f"@{vars_file}",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def recap(output: str) -> dict[str, int]:
    line = re.search(r"localhost\s+:\s+(.*)", output)
    assert line, output[-3000:]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line.group(1))}


def failed_with(output: str, *fragments: str) -> None:
    flat = " ".join(output.split())
    for fragment in fragments:
        assert " ".join(fragment.split()) in flat, f"{fragment!r} not in the output:\n{output[-4000:]}"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def fake_smi(tmp_path: Path):
    """A stand-in for nvidia-smi that reports the given driver versions, one per GPU."""

    def make(*versions: str) -> str:
        path = tmp_path / "nvidia-smi"
        lines = "".join(f"{v}\\n" for v in versions)
        path.write_text(f'#!/bin/sh\n[ "$1" = --query-gpu=driver_version ] || exit 9\nprintf "{lines}"\n')
        path.chmod(0o755)
        return str(path)

    return make


# --- gpuaccept_nvidia_driver ----------------------------------------------------------------------------------


def test_driver_present_changes_nothing(tmp_path, fake_smi):
    smi = fake_smi("580.159.04", "580.159.04")
    extra = {
        "gpuaccept_nvidia_driver_smi": smi,
        "gpuaccept_nvidia_driver_gpu_count": 2,
        "gpuaccept_nvidia_driver_version": "580.159.04",
    }
    for args in ((), ("--check",)):
        rc, out = play(tmp_path, "gpuaccept_nvidia_driver", extra, *args)
        assert rc == 0, out[-3000:]
        assert recap(out)["changed"] == 0
        failed_with(
            out,
            "nvidia-smi sees 2 GPU(s) with driver 580.159.04; wanted 580.159.04 on 2 GPUs: present, nothing to install",
        )


def test_driver_right_version_wrong_gpu_count_is_refused(tmp_path, fake_smi):
    rc, out = play(
        tmp_path,
        "gpuaccept_nvidia_driver",
        {"gpuaccept_nvidia_driver_smi": fake_smi("580.159.04"), "gpuaccept_gpu_count": 8},
    )
    assert rc != 0
    failed_with(
        out,
        "runs the wanted driver (580.159.04) but nvidia-smi sees 1 GPU(s), not the 8 expected",
        "reinstalling will not bring GPUs back",
    )


def test_driver_install_needs_a_pinned_key(tmp_path, fake_smi):
    rc, out = play(tmp_path, "gpuaccept_nvidia_driver", {"gpuaccept_nvidia_driver_smi": str(tmp_path / "none")})
    assert rc != 0
    failed_with(
        out,
        "nvidia-smi sees 0 GPU(s) with driver none",
        "wanted branch 580: installing",
        "the repository's signing key is not pinned: set gpuaccept_nvidia_driver_repo_key",
    )

    smi = fake_smi("570.86.15")

    key = tmp_path / "cuda.pub"
    key.write_text("not NVIDIA's key\n")
    rc, out = play(
        tmp_path,
        "gpuaccept_nvidia_driver",
        {
            "gpuaccept_nvidia_driver_smi": smi,
            "gpuaccept_nvidia_driver_repo_key": str(key),
            "gpuaccept_nvidia_driver_repo_key_sha256": "0" * 64,
        },
    )
    assert rc != 0
    failed_with(
        out,
        "with driver 570.86.15; wanted branch 580: installing",
        f"the repository key {key} has sha256 {sha256(key)}, not the pinned {'0' * 64}",
    )


def test_driver_refuses_unsupported_platform_and_bad_versions(tmp_path):
    rc, out = play(tmp_path, "gpuaccept_nvidia_driver", {"gpuaccept_nvidia_driver_platforms": {"Rocky": ["9"]}})
    assert rc != 0
    failed_with(out, "installs drivers on Rocky (see gpuaccept_nvidia_driver_platforms), not on")
    rc, out = play(
        tmp_path,
        "gpuaccept_nvidia_driver",
        {"gpuaccept_nvidia_driver_branch": "580", "gpuaccept_nvidia_driver_version": "570.86.15"},
    )
    assert rc != 0
    failed_with(out, "a version of that branch such as 580.159.04 (it is '570.86.15')")


# --- gpuaccept_cuda_toolkit -----------------------------------------------------------------------------------


def _nvcc_home() -> tuple[Path, str] | None:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    release = re.search(r"release (\d+\.\d+)", out)
    home = Path(nvcc).resolve().parent.parent
    return (home, release.group(1)) if release and (home / "lib64" / "libcudart.so").exists() else None


def test_toolkit_present_changes_nothing(tmp_path):
    found = _nvcc_home()
    if found is None:
        pytest.skip("no CUDA toolkit with lib64/ here")
    home, release = found
    rc, out = play(
        tmp_path,
        "gpuaccept_cuda_toolkit",
        {"gpuaccept_cuda_toolkit_home": str(home), "gpuaccept_cuda_toolkit_version": release},
    )
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] == 0
    failed_with(out, f"{home}/bin/nvcc is release {release}; wanted {release}: present, nothing to install")


def test_toolkit_wrong_release_or_missing_library_needs_a_pinned_key(tmp_path):
    rc, out = play(
        tmp_path,
        "gpuaccept_cuda_toolkit",
        {"gpuaccept_cuda_toolkit_home": str(tmp_path / "cuda"), "gpuaccept_cuda_toolkit_version": "12.8"},
    )
    assert rc != 0
    failed_with(
        out,
        f"{tmp_path}/cuda/bin/nvcc does not run, missing cudart, cublas, cublasLt, cusolver; wanted 12.8",
        "the repository's signing key is not pinned",
    )
    rc, out = play(tmp_path, "gpuaccept_cuda_toolkit", {"gpuaccept_cuda_toolkit_version": "13"})
    assert rc != 0
    failed_with(out, 'gpuaccept_cuda_toolkit_version must be a toolkit release such as "13.0"')


# --- gpuaccept_node_exporter ----------------------------------------------------------------------------------


def _redirect(tmp_path: Path) -> dict:
    return {
        "_gpuaccept_node_exporter_unit_dir": str(tmp_path / "systemd"),
        "_gpuaccept_node_exporter_args_file": str(tmp_path / "default"),
        "_gpuaccept_node_exporter_bin_link": str(tmp_path / "bin" / "node_exporter"),
        "gpuaccept_node_exporter_textfile_dir": str(tmp_path / "textfile"),
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(argv: list[str], port: int) -> str:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(50):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                    return resp.read().decode()
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"node_exporter did not answer: {proc.stderr.read() if proc.poll() is not None else ''}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


needs_package = pytest.mark.skipif(
    not (IS_ROOT and NODE_EXPORTER.exists() and shutil.which("dpkg")),
    reason="needs root and Debian's prometheus-node-exporter (.ci/run installs it)",
)


@needs_package
def test_node_exporter_package_path(tmp_path):
    extra = _redirect(tmp_path) | {"gpuaccept_node_exporter_listen_address": "127.0.0.1:9911"}
    rc, out = play(tmp_path, "gpuaccept_node_exporter", extra)
    assert rc == 0, out[-3000:]
    rc, out = play(tmp_path, "gpuaccept_node_exporter", extra)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    textfile = tmp_path / "textfile"
    st = textfile.stat()
    assert (st.st_uid, oct(st.st_mode & 0o777)) == (0, "0o755")
    assert textfile.group() == "prometheus"
    args = (tmp_path / "default").read_text()
    assert f'ARGS="--web.listen-address=127.0.0.1:9911 --collector.textfile.directory={textfile}"' in args
    dropin = (tmp_path / "systemd" / "prometheus-node-exporter.service.d" / "gpuaccept-hardening.conf").read_text()
    for line in ("NoNewPrivileges=yes", "ProtectSystem=strict", f"ReadOnlyPaths={textfile}", "CapabilityBoundingSet="):
        assert line in dropin
    # Debian's node_exporter, started with the flags the role wrote (on a free port), reads the directory.
    (textfile / "probe.prom").write_text("# TYPE gpuaccept_probe gauge\ngpuaccept_probe 1\n")
    flags = shlex.split(args.split("=", 1)[1].strip().strip('"'))
    port = _free_port()
    flags = [f"--web.listen-address=127.0.0.1:{port}" if f.startswith("--web.listen-address") else f for f in flags]
    body = _scrape([str(NODE_EXPORTER), *flags, "--collector.disable-defaults", "--collector.textfile"], port)
    assert "\ngpuaccept_probe 1" in body
    assert "\nnode_textfile_scrape_error 0" in body


@needs_package
def test_node_exporter_binary_path(tmp_path):
    """The release-archive path, with Debian's node_exporter binary repackaged in a release's layout."""
    archive = tmp_path / "node_exporter-1.5.0.linux-amd64.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(NODE_EXPORTER, arcname="node_exporter-1.5.0.linux-amd64/node_exporter")
    extra = _redirect(tmp_path) | {
        "gpuaccept_node_exporter_install_method": "binary",
        "gpuaccept_node_exporter_binary_archive": str(archive),
        "gpuaccept_node_exporter_binary_sha256": sha256(archive),
        "gpuaccept_node_exporter_binary_version": "1.5.0",
        "gpuaccept_node_exporter_binary_prefix": str(tmp_path / "opt"),
        "gpuaccept_node_exporter_binary_user": "prometheus",
    }
    (tmp_path / "bin").mkdir()
    (tmp_path / "systemd").mkdir()
    rc, out = play(tmp_path, "gpuaccept_node_exporter", extra)
    assert rc == 0, out[-3000:]
    rc, out = play(tmp_path, "gpuaccept_node_exporter", extra)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    link = tmp_path / "bin" / "node_exporter"
    assert link.resolve() == tmp_path / "opt" / "node_exporter-1.5.0.linux-amd64" / "node_exporter"
    unit = (tmp_path / "systemd" / "node_exporter.service").read_text()
    assert f"ExecStart={link} --web.listen-address=:9100 --collector.textfile.directory={tmp_path / 'textfile'}" in unit
    assert "ProtectSystem=strict" in unit and "User=prometheus" in unit and "Ansible managed" in unit

    rc, out = play(tmp_path, "gpuaccept_node_exporter", extra | {"gpuaccept_node_exporter_binary_sha256": "f" * 64})
    assert rc != 0
    failed_with(out, f"the node_exporter archive {archive} has sha256 {sha256(archive)}, not the pinned {'f' * 64}")


def test_node_exporter_binary_needs_archive_and_checksum(tmp_path):
    rc, out = play(tmp_path, "gpuaccept_node_exporter", {"gpuaccept_node_exporter_install_method": "binary"})
    assert rc != 0
    failed_with(out, "gpuaccept_node_exporter_install_method is binary, so gpuaccept_node_exporter_binary_archive")
    rc, out = play(
        tmp_path,
        "gpuaccept_node_exporter",
        {
            "gpuaccept_node_exporter_install_method": "binary",
            "gpuaccept_node_exporter_binary_archive": str(tmp_path / "missing.tar.gz"),
            "gpuaccept_node_exporter_binary_sha256": "e" * 64,
        },
    )
    assert rc != 0
    failed_with(out, f"the node_exporter archive {tmp_path / 'missing.tar.gz'} does not exist on the controller")


# --- gpuaccept_mkl --------------------------------------------------------------------------------------------


def test_mkl_refuses_missing_inputs(tmp_path):
    rc, out = play(tmp_path, "gpuaccept_mkl", {"gpuaccept_mkl_venv": str(tmp_path / "venv")})
    assert rc != 0
    failed_with(out, f"there is no tool environment at {tmp_path / 'venv'}")
    rc, out = play(
        tmp_path,
        "gpuaccept_mkl",
        {"gpuaccept_mkl_venv": str(BIN.parent), "gpuaccept_mkl_requirements": str(tmp_path / "mkl.txt")},
    )
    assert rc != 0
    failed_with(out, f"{tmp_path / 'mkl.txt'} (MKL's pinned wheels) is not a file")
    rc, out = play(
        tmp_path,
        "gpuaccept_mkl",
        {
            "gpuaccept_mkl_venv": str(BIN.parent),
            "gpuaccept_mkl_requirements": str(ROOT / "requirements" / "mkl.txt"),
            "gpuaccept_mkl_wheelhouse": str(tmp_path / "wheels"),
        },
    )
    assert rc != 0
    failed_with(out, f"gpuaccept_mkl_wheelhouse is {tmp_path / 'wheels'}, which is not a directory")


@pytest.mark.skipif(
    not (BIN.parent / "lib" / "libmkl_rt.so.3").exists(),
    reason="the test environment has no MKL (GPUACCEPT_MKL=1 scripts/venv.sh test, as CI does)",
)
def test_mkl_in_the_tool_environment_changes_nothing(tmp_path):
    rc, out = play(
        tmp_path,
        "gpuaccept_mkl",
        {"gpuaccept_mkl_venv": str(BIN.parent), "gpuaccept_mkl_requirements": str(ROOT / "requirements" / "mkl.txt")},
    )
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] == 0
    failed_with(out, "Intel(R) oneAPI Math Kernel Library Version")


# --- gpuaccept_cuda_samples -----------------------------------------------------------------------------------


def test_cuda_samples_refuses_missing_or_unpinned_archives(tmp_path):
    rc, out = play(
        tmp_path,
        "gpuaccept_cuda_samples",
        {"gpuaccept_cuda_samples_nvbandwidth_archive": str(tmp_path / "nvbandwidth-0.8.tar.gz")},
    )
    assert rc != 0
    failed_with(
        out,
        f"the nvbandwidth source archive {tmp_path / 'nvbandwidth-0.8.tar.gz'} does not exist on the "
        "controller: build the bundle",
    )
    fake = tmp_path / "cuda-samples-13.0.tar.gz"
    with tarfile.open(fake, "w:gz") as tar:
        tar.add(ROOT / "README.md", arcname="cuda-samples-13.0/README.md")
    rc, out = play(tmp_path, "gpuaccept_cuda_samples", {"gpuaccept_cuda_samples_samples_archive": str(fake)})
    assert rc != 0
    failed_with(
        out,
        f"the CUDA samples source archive {fake} has sha256 {sha256(fake)}, not the pinned "
        "63cc9d5d8280c87df3c1f4e2276234a0f42cc497c52b40dd5bdda2836607db79",
    )
    rc, out = play(tmp_path, "gpuaccept_cuda_samples", {"gpuaccept_cuda_samples_tolerance": 5})
    assert rc != 0
    failed_with(out, "gpuaccept_cuda_samples_tolerance must be a fraction between 0 and 1 (it is 5")


def test_cuda_samples_check_mode_on_a_fresh_node(tmp_path):
    """Check mode with archives whose checksums are pinned (stand-ins: what is checked is the flow, not a build)."""
    archives = {}
    for name, top in (("nvbandwidth", "nvbandwidth-0.8"), ("samples", "cuda-samples-13.0")):
        path = tmp_path / f"{top}.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            tar.add(ROOT / "README.md", arcname=f"{top}/README.md")
        archives |= {
            f"gpuaccept_cuda_samples_{name}_archive": str(path),
            f"gpuaccept_cuda_samples_{name}_sha256": sha256(path),
        }
    rc, out = play(
        tmp_path,
        "gpuaccept_cuda_samples",
        archives | {"gpuaccept_root": str(tmp_path / "root"), "gpuaccept_cuda_samples_install_deps": False},
        "--check",
    )
    assert rc == 0, out[-3000:]
    failed_with(out, f"{tmp_path}/root/build/nvidia-tools does not exist yet on localhost")
    assert not (tmp_path / "root").exists()


def fake_nccl(home: Path) -> Path:
    """A directory shaped like NCCL's (include/nccl.h, lib/libnccl.so.2, both empty): only where they are matters."""
    (home / "include").mkdir(parents=True)
    (home / "include" / "nccl.h").write_text("")
    (home / "lib").mkdir()
    (home / "lib" / "libnccl.so.2").write_text("")
    return home


def bench_in_check_mode(tmp_path: Path, nccl_home: str, extras_nccl: str) -> tuple[int, str]:
    """gpuaccept_bench in check mode on a node gpuaccept_reframe found one GPU and ``extras_nccl`` on (its
    find-nccl.sh answer, given here): the make command it asks about, in the verbose output."""
    resolved = {"nvcc": "/usr/local/cuda/bin/nvcc", "gpu_error": "",
                "extras": {"gpu_count": 1, "blas": "none", "cuda_arch": "", "git_revision": "test", "mklroot": "",
                           "openblas_inc": "", "openblas_lib": "", "nccl_home": extras_nccl}}  # fmt: skip
    settings = {"gpuaccept_bench_root": str(tmp_path), "gpuaccept_bench_build_dir": str(tmp_path / "build"),
                "gpuaccept_bench_src_dir": str(ROOT / "reframe_checks" / "src"), "gpuaccept_bench_nccl_home": nccl_home,
                "gpuaccept_reframe_resolved": resolved}  # fmt: skip
    return play(tmp_path, "gpuaccept_bench", settings, "--check", "-v")


def test_bench_builds_the_nccl_benchmark_against_the_nccl_gpuaccept_reframe_found(tmp_path):
    found = fake_nccl(tmp_path / "found")
    rc, out = bench_in_check_mode(tmp_path, "auto", str(found))
    assert rc == 0, out[-3000:]
    assert f"- NCCL_HOME={found}" in out and "\n    - nccl\n" in out, out[-3000:]
    assert "gpuaccept-nccl not built" not in out


def test_bench_without_nccl_builds_no_nccl_benchmark_and_says_so(tmp_path):
    for nccl_home, extras_nccl, why in (("auto", "", "reframe_checks/src/find-nccl.sh found no NCCL"),
                                        ("", str(fake_nccl(tmp_path / "found")), "gpuaccept_bench_nccl_home is empty")):
        rc, out = bench_in_check_mode(tmp_path, nccl_home, extras_nccl)
        assert rc == 0, out[-3000:]
        assert "NCCL_HOME=" not in out and "\n    - nccl\n" not in out, out[-3000:]
        failed_with(out, f"gpuaccept-nccl not built on localhost: {why}", "the nccl check will say NOT RUN")


def test_bench_checks_the_nccl_directory_it_is_given(tmp_path):
    given = fake_nccl(tmp_path / "given")
    rc, out = bench_in_check_mode(tmp_path, str(given), "")
    assert rc == 0 and f"- NCCL_HOME={given}" in out, out[-3000:]
    rc, out = bench_in_check_mode(tmp_path, str(tmp_path), "")
    assert rc != 0
    failed_with(out, f"gpuaccept_bench_nccl_home on localhost: find-nccl.sh: the directory {tmp_path} has no "
                "include/nccl.h", "or set it to auto")  # fmt: skip
