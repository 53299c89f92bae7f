"""Netlib's HPL 2.3 builds from its source tarball with the gpuaccept_hpl role's Make.gpuaccept against the
host BLAS (MKL from the test environment's wheels, OpenBLAS where Debian's is installed), runs on two MPI
ranks (Debian's Open MPI) at a small N, and its output goes through gpuaccept.hpl's parser and HPL's residual
rule: a run passes, and a run whose threshold no residual can meet fails with the reason.

The tarball comes from the shared artifacts beside the repository's clone (../shared/artifacts, or
$GPUACCEPT_SHARED/artifacts), checked against its sha256 as the role checks it.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT

from gpuaccept import hpl, hpl_dat

SHARED = Path(os.environ.get("GPUACCEPT_SHARED", ROOT.parent / "shared"))
TARBALL = SHARED / "artifacts" / "hpl-2.3-icl-utk-edu.tar.gz"
# ../shared/artifacts/README.md: a git archive of icl-utk-edu/hpl at 9edeab5e (HPL 2.3).
TARBALL_SHA256 = "d09c2c708becc4eaa9bd652115243f603fc4f715483bf26dd6b1bd07259ef459"
MAKE_ARCH = ROOT / "roles" / "gpuaccept_hpl" / "files" / "Make.gpuaccept"
VENV = Path(sys.prefix)
OPENBLAS = Path("/usr/lib/x86_64-linux-gnu/openblas-pthread")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "LC_ALL": "C"}


def lalib() -> tuple[str, str]:
    """The BLAS to link (Make.gpuaccept's LAlib): MKL's wheels first, as the role does."""
    if (VENV / "lib" / "libmkl_rt.so.3").exists():
        lib = VENV / "lib"
        return "mkl", f"-L{lib} -Wl,-rpath,{lib} -l:libmkl_rt.so.3"
    if (OPENBLAS / "libopenblas.so").exists():
        return "openblas", f"-L{OPENBLAS} -Wl,-rpath,{OPENBLAS} -lopenblas"
    pytest.fail("neither MKL (GPUACCEPT_MKL=1 scripts/venv.sh test) nor OpenBLAS (libopenblas-dev) is installed")


@pytest.fixture(scope="module")
def xhpl(tmp_path_factory) -> Path:
    if not TARBALL.is_file():
        pytest.skip(f"HPL's source tarball {TARBALL} is absent (the shared artifacts beside the clone)")
    for tool in ("mpicc", "mpirun", "make"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} not found: CI installs openmpi-bin and libopenmpi-dev")
    digest = hashlib.sha256(TARBALL.read_bytes()).hexdigest()
    assert digest == TARBALL_SHA256, f"{TARBALL}: sha256 {digest}, expected {TARBALL_SHA256}"
    top = tmp_path_factory.mktemp("hpl")
    with tarfile.open(TARBALL) as tar:
        tar.extractall(top, filter="data")
    tree = top / "hpl-2.3"
    shutil.copy(MAKE_ARCH, tree / "Make.gpuaccept")
    _, libs = lalib()
    # HPL's own makefiles are not parallel-safe at the top: one job, as the role runs it.
    res = subprocess.run(["make", "arch=gpuaccept", f"TOPdir={tree}", "CC=mpicc", f"LAlib={libs}"], cwd=tree,
                         capture_output=True, text=True, check=False, timeout=600)
    binary = tree / "bin" / "gpuaccept" / "xhpl"
    assert res.returncode == 0 and binary.is_file(), res.stdout[-3000:] + res.stderr[-3000:]
    return binary


def run_hpl(binary: Path, work: Path, dat_text: str) -> hpl.HplOutput:
    work.mkdir()
    (work / "HPL.dat").write_text(dat_text)
    res = subprocess.run(["mpirun", "--oversubscribe", "-np", "2", str(binary)], cwd=work, capture_output=True,
                         text=True, check=False, timeout=300, env={**os.environ, **MPI_ENV})
    (work / "HPL.out").write_text(res.stdout)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return hpl.parse_file(work / "HPL.out")


def test_hpl_23_builds_runs_and_passes_its_residual_check(xhpl, tmp_path):
    p, q = hpl_dat.grid(2)
    dat = hpl_dat.render(hpl_dat.HplDat(n=1536, nb=128, p=p, q=q))
    out = run_hpl(xhpl, tmp_path / "pass", dat)
    assert hpl.judge(out, 1) == []
    (run,) = out.runs
    assert (run.n, run.nb, run.p, run.q) == (1536, 128, 1, 2)
    assert run.gflops > 0 and run.residual is not None and run.residual < 16.0
    doc = hpl.to_document(out, "hpl_host", 2, unit="GFLOP/s", per_gpu=False, backend={"blas": lalib()[0]})
    assert doc["verification"]["passed"] and doc["metrics"]["gflops"]["value"] == run.gflops
    assert doc["parameters"]["backend"] == {"blas": lalib()[0]}


def test_a_residual_over_the_threshold_fails(xhpl, tmp_path):
    p, q = hpl_dat.grid(2)
    dat = hpl_dat.render(hpl_dat.HplDat(n=512, nb=64, p=p, q=q))
    # A threshold no floating-point residual meets: HPL prints FAILED and the rule reports it.
    dat = "\n".join("1e-30        threshold" if line.split()[1:2] == ["threshold"] else line
                    for line in dat.splitlines()) + "\n"
    out = run_hpl(xhpl, tmp_path / "fail", dat)
    problems = hpl.judge(out, 1)
    assert out.runs and out.runs[0].residual_verdict == "FAILED"
    assert any("residual" in p for p in problems), problems
    assert not hpl.to_document(out, "hpl_host", 2, unit="GFLOP/s", per_gpu=False)["verification"]["passed"]


def test_timed_problem_size_caps_by_memory_and_time():
    # 16 cores at 40 GFLOP/s for 60 s: about 37,900, in whole 256 x lcm(4, 4) blocks.
    assert hpl_dat.timed_problem_size(128 << 30, 0.5, 640, 60, 256, 4, 4) == 37888
    # A small memory caps it first.
    assert hpl_dat.timed_problem_size(1 << 30, 0.5, 640, 60, 256, 1, 1) == hpl_dat.problem_size(1 << 30, 1, 0.5, 256)
    with pytest.raises(ValueError, match="positive"):
        hpl_dat.timed_problem_size(1 << 30, 0.5, 0, 60, 256)
