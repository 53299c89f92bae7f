"""reframe_checks/src/find-nccl.sh, the one place gpuaccept looks for NCCL, through gpuaccept.probe.nccl_home and
the Makefile: the operator's directory checked, else CUDA_HOME, /usr and a Python interpreter's nvidia.nccl package
in that order; none found is '' (and the Makefile's nccl target says how to fix it). NCCL here is an empty header
and library in a temporary directory: only where they are matters."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from gpuaccept.probe import nccl_home

SRC = ROOT / "reframe_checks" / "src"


def fake_nccl(home: Path, lib: str = "lib") -> Path:
    (home / "include").mkdir(parents=True)
    (home / "include" / "nccl.h").write_text("")
    (home / lib).mkdir(parents=True)
    (home / lib / "libnccl.so.2").write_text("")
    return home


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """An environment where CUDA_HOME has no NCCL, no NCCL_HOME is set and no Python package is on the path."""
    if nccl_home.find(env={"PATH": "/usr/bin:/bin", "CUDA_HOME": str(tmp_path / "none")}):
        pytest.skip("this machine has NCCL in /usr or in python3's nvidia.nccl: the search order cannot be shown")
    base = {k: v for k, v in os.environ.items() if k not in ("NCCL_HOME", "PYTHONPATH", "GPUACCEPT_NCCL_PYTHONS")}
    return {**base, "CUDA_HOME": str(tmp_path / "no-cuda")}


def test_the_cuda_installation_first_then_a_python_package(tmp_path, env):
    wheel = fake_nccl(tmp_path / "site" / "nvidia" / "nccl")
    with_package = {**env, "PYTHONPATH": str(tmp_path / "site")}
    assert nccl_home.find(env=with_package) == str(wheel)
    cuda = fake_nccl(tmp_path / "cuda", "lib64")
    assert nccl_home.find(env={**with_package, "CUDA_HOME": str(cuda)}) == str(cuda)
    assert nccl_home.find(env=env) == ""


def test_the_operators_directory_is_checked(tmp_path, env):
    given = fake_nccl(tmp_path / "nccl", "lib/x86_64-linux-gnu")
    assert nccl_home.find(str(given), env=env) == str(given)
    assert nccl_home.find(env={**env, "NCCL_HOME": str(given)}) == str(given)
    (tmp_path / "half" / "include").mkdir(parents=True)
    (tmp_path / "half" / "include" / "nccl.h").write_text("")
    with pytest.raises(nccl_home.NcclError, match=r"half has no libnccl.so.2 in lib64/, lib/ or lib/<multiarch>/"):
        nccl_home.find(str(tmp_path / "half"), env=env)
    with pytest.raises(nccl_home.NcclError, match=r"NCCL_HOME= .*/empty has no include/nccl.h and libnccl.so.2"):
        nccl_home.find(env={**env, "NCCL_HOME": str(tmp_path / "empty")})


def test_libdir_names_the_librarys_directory(tmp_path, env):
    home = fake_nccl(tmp_path / "nccl", "lib/x86_64-linux-gnu")
    out = subprocess.run(["sh", str(SRC / "find-nccl.sh"), "--libdir", str(home)], capture_output=True, text=True,
                         check=True, env=env).stdout  # fmt: skip
    assert out.strip() == str(home / "lib" / "x86_64-linux-gnu")


def test_the_makefile_builds_against_what_it_finds_and_says_how_to_fix_none(tmp_path, env):
    wheel = fake_nccl(tmp_path / "site" / "nvidia" / "nccl")
    make = ["make", "-C", str(SRC), "-n", f"BUILD_DIR={tmp_path / 'b'}", "nccl"]
    dry = subprocess.run(make, capture_output=True, text=True, check=True,
                         env={**env, "PYTHONPATH": str(tmp_path / "site")}).stdout  # fmt: skip
    assert f"-I{wheel}/include" in dry and f"-L{wheel}/lib -Xlinker -rpath -Xlinker {wheel}/lib" in dry
    real = subprocess.run(make[:3] + make[4:], capture_output=True, text=True, check=False, env=env)
    assert real.returncode != 0
    assert "NCCL not found (find-nccl.sh: no NCCL (include/nccl.h and libnccl.so.2) in" in real.stdout
    assert "set NCCL_HOME" in real.stdout


def test_the_hpl_object_uses_nccl_where_it_is_found(tmp_path, env):
    """hpl-gpu's HPL_NCCL=auto: compiled with GPUACCEPT_HPL_NCCL where NCCL is found, without it where not."""
    tree = tmp_path / "hpl"
    (tree / "include").mkdir(parents=True)
    (tree / "include" / "hpl.h").write_text("")
    wheel = fake_nccl(tmp_path / "site" / "nvidia" / "nccl")
    make = ["make", "-C", str(SRC), "-n", f"BUILD_DIR={tmp_path / 'b'}", f"HPL_TOP={tree}", "hpl-gpu"]
    found = subprocess.run(make, capture_output=True, text=True, check=True,
                           env={**env, "PYTHONPATH": str(tmp_path / "site")}).stdout  # fmt: skip
    assert f"-DGPUACCEPT_HPL_NCCL -I{wheel}/include" in found
    none = subprocess.run(make, capture_output=True, text=True, check=True, env=env).stdout
    assert "GPUACCEPT_HPL_NCCL" not in none
    refused = subprocess.run([*make[:3], *make[4:], "HPL_NCCL=1"], capture_output=True, text=True, check=False,
                             env=env)  # fmt: skip
    assert refused.returncode != 0 and "HPL_NCCL=1: NCCL not found" in refused.stdout


def test_the_finder_asks_this_interpreter_first(tmp_path, env):
    """gpuaccept.probe.nccl_home passes its own interpreter (the tool environment's) as the first --python."""
    site = tmp_path / "site"
    wheel = fake_nccl(site / "nvidia" / "nccl")
    wrapper = tmp_path / "python-with-nccl"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    assert nccl_home.find(pythons=[str(wrapper)], env=env) == str(wheel)
