"""The gpuaccept_hpl role builds netlib's HPL 2.3 from its source tarball (sha256 checked) with Make.gpuaccept
against the host BLAS (MKL from the test environment's wheels, as CI has them with GPUACCEPT_MKL=1; OpenBLAS
otherwise) and, where nvcc is (CI has the toolkit), HPL-CUDA too: gpuaccept's GPU-resident HPL_pdmatgen and
HPL_pdgesv linked in front of libhpl.a (linked only: no GPU here), with its matrix generator checked against
netlib's entry by entry. The
host xhpl runs on two MPI ranks (Debian's Open MPI) at a small N and its output goes through gpuaccept.hpl's
parser and HPL's residual rule: a run passes, and a run whose threshold no residual can meet fails with the
reason. A second run of the role changes nothing; a tarball with another sha256 is refused.

The tarball is the third-party input hpl-2.3 (tests/inputs.toml: under $GPUACCEPT_INPUTS, its sha256 checked before the
role checks it again); without it these tests are skipped, naming it.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import inputs as third_party
import pytest
from conftest import INPUTS, ROOT, hpl_judged, needs_input
from rfm_support import render_config, run_reframe
from test_provision_roles import failed_with, play, recap

from gpuaccept.probe import facts as node_facts
from gpuaccept.probe import hpl, hpl_dat, nccl_home

HPL_SOURCE = third_party.load()["hpl-2.3"]  # a git archive of icl-utk-edu/hpl at 9edeab5e (HPL 2.3)
TARBALL = third_party.where(HPL_SOURCE, INPUTS)
TARBALL_SHA256 = HPL_SOURCE.files[""]
NVCC = Path("/usr/local/cuda/bin/nvcc")
VENV = Path(sys.prefix)
OPENBLAS = Path("/usr/lib/x86_64-linux-gnu/openblas-pthread")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "LC_ALL": "C"}


def blas() -> str:
    """The BLAS the role links: MKL's wheels first, as on the nodes."""
    if (VENV / "lib" / "libmkl_rt.so.3").exists():
        return "mkl"
    if (OPENBLAS / "libopenblas.so.0").exists():
        return "openblas"
    pytest.fail("neither MKL (GPUACCEPT_MKL=1 scripts/venv.sh test) nor OpenBLAS (libopenblas-dev) is installed")


def role_vars(prefix: Path, sha: str = TARBALL_SHA256) -> dict:
    return {
        "gpuaccept_hpl_prefix": str(prefix),
        "gpuaccept_hpl_source_path": str(TARBALL),
        "gpuaccept_hpl_source_sha256": sha,
        "gpuaccept_hpl_source_blas": blas(),
        "gpuaccept_hpl_mkl_root": str(VENV),
        "gpuaccept_hpl_openblas_lib": str(OPENBLAS),
        "gpuaccept_hpl_cuda_home": "/usr/local/cuda",
        "gpuaccept_hpl_gpu_src_dir": str(ROOT / "reframe_checks" / "src"),
        # one architecture: the object is compiled, never run, here
        "gpuaccept_hpl_cuda_arch": "-gencode=arch=compute_90,code=sm_90",
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    needs_input("hpl-2.3")
    for tool in ("mpicc", "mpirun", "make"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} not found: CI installs openmpi-bin and libopenmpi-dev")
    base = tmp_path_factory.mktemp("hpl-role")
    prefix = base / "hpl"
    rc, out = play(base, "gpuaccept_hpl", role_vars(prefix))
    assert rc == 0, out[-4000:]
    return prefix


@pytest.fixture(scope="module")
def xhpl(built) -> Path:
    desc = json.loads((built / "gpuaccept-hpl-host.json").read_text())
    binary = Path(desc["binary"])
    assert binary.is_file() and desc["command"][-1] == str(binary) and "{ranks}" in desc["command"]
    assert desc["blas"] == blas() and desc["sha256"] == TARBALL_SHA256 and desc["env"] == {}
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
    assert hpl_judged(out, 1) == []
    (run,) = out.runs
    assert (run.n, run.nb, run.p, run.q) == (1536, 128, 1, 2)
    assert run.gflops > 0 and run.residual is not None and run.residual < 16.0
    doc = hpl.to_document(out, "hpl_host", 2, unit="GFLOP/s", per_gpu=False, backend={"blas": blas()})
    assert doc["verification"]["passed"] and doc["metrics"]["gflops"]["value"] == run.gflops
    assert doc["parameters"]["backend"] == {"blas": blas()}


def test_a_residual_over_the_threshold_fails(xhpl, tmp_path):
    p, q = hpl_dat.grid(2)
    dat = hpl_dat.render(hpl_dat.HplDat(n=512, nb=64, p=p, q=q))
    # A threshold no floating-point residual meets: HPL prints FAILED and the rule reports it.
    dat = "\n".join("1e-30        threshold" if line.split()[1:2] == ["threshold"] else line
                    for line in dat.splitlines()) + "\n"
    out = run_hpl(xhpl, tmp_path / "fail", dat)
    problems = hpl_judged(out, 1)
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


@pytest.mark.skipif(not NVCC.exists(), reason="no CUDA toolkit (nvcc) here: HPL-CUDA is not built")
def test_role_builds_hpl_cuda_with_the_gpu_resident_solver(built):
    desc = json.loads((built / "gpuaccept-hpl-cuda.json").read_text())
    binary = Path(desc["binary"])
    assert binary.is_file() and desc["command"][-2:] == [str(built / "gpuaccept-hpl-rank.sh"), str(binary)]
    assert "GPU-resident" in desc["hpl"]
    # NVLink SHARP off in every rank: the descriptor's environment, passed through the launcher.
    assert desc["env"] == {"NCCL_NVLS_ENABLE": "0"} and desc["nccl_nvls"] is False
    assert desc["command"][:5] == ["mpirun", "--bind-to", "none", "-x", "NCCL_NVLS_ENABLE"]
    # gpuaccept's HPL_pdgesv and HPL_pdmatgen took the place of netlib's: HPL's own solver is not linked in.
    symbols = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    defined = {line.split()[-1] for line in symbols.splitlines() if " T " in line}
    assert {"HPL_pdgesv", "HPL_pdmatgen"} <= defined and "HPL_pdgesv0" not in defined and "HPL_pdgesvK2" not in defined
    assert "swap_rows" in symbols and "gather_rows" in symbols  # the row-interchange kernels' host stubs
    needed = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = [line.split("[", 1)[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line]
    assert any(lib.startswith("libcusolver") for lib in libs) and any(lib.startswith("libcublas.") for lib in libs)
    assert not any("nvblas" in lib for lib in libs), libs
    # NCCL by default wherever find-nccl.sh finds it (here: the CUDA installation's).
    found = nccl_home.find(env={**os.environ, "CUDA_HOME": "/usr/local/cuda"})
    assert desc["nccl_home"] == found and desc["panel_broadcast"] == ("nccl" if found else "mpi")
    assert ("libnccl.so.2" in libs) is bool(found)


MATGEN_PROBE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "hpl.h"
#include "gpuaccept_hpl_lcg.h"
/* netlib's HPL_pdmatgen on a P x Q grid (P from argv[1], Q = the ranks / P) against gpuaccept_hpl_lcg.h and its
   block-cyclic map, rows and columns, entry by entry on every rank; on one rank HPL_dmatgen too. */
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int ranks = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int p = atoi(argv[1]), q = ranks / p;
  HPL_T_grid grid;
  HPL_grid_init(MPI_COMM_WORLD, HPL_ROW_MAJOR, p, q, &grid);
  MPI_Comm_rank(grid.all_comm, &me);
  const int seeds[3] = {100, 42, -7};
  const int m = 97, n = 45, nb = 8, lda = 101, cols = HPL_numroc(n, nb, nb, grid.mycol, 0, q);
  const int rows = HPL_numroc(m, nb, nb, grid.myrow, 0, p);
  double *a = malloc(sizeof(double) * lda * n), *b = malloc(sizeof(double) * lda * n);
  long bad = 0, seen = 0;
  for (int s = 0; s < 3; ++s) {
    HPL_pdmatgen(&grid, m, n, nb, a, lda, seeds[s]);
    if (ranks == 1) HPL_dmatgen(m, n, b, lda, seeds[s]);
    const uint64_t first = gpuaccept_hpl_first(seeds[s]);
    for (int jl = 0; jl < cols; ++jl) {
      const long long j = gpuaccept_hpl_global_col(jl, nb, grid.mycol, q);
      for (int il = 0; il < rows; ++il, ++seen) {
        const long long i = gpuaccept_hpl_global_col(il, nb, grid.myrow, p);
        const double v = gpuaccept_hpl_value(gpuaccept_hpl_jump(first, (uint64_t)j * m + (uint64_t)i));
        if (v != a[il + (size_t)jl * lda] || (ranks == 1 && v != b[il + (size_t)jl * lda])) ++bad;
      }
    }
  }
  long all[2] = {seen, bad};
  MPI_Allreduce(MPI_IN_PLACE, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) printf("entries %ld mismatches %ld\n", all[0], all[1]);
  HPL_grid_exit(&grid);
  MPI_Finalize();
  return all[1] != 0;
}
"""


@pytest.mark.parametrize(("p", "q"), [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 2)])
def test_the_gpu_generator_draws_hpls_matrix_entry_by_entry(built, tmp_path, p, q):
    """gpuaccept_hpl_lcg.h (what the GPU's HPL_pdmatgen computes per entry, and which global row and column each
    local one is on a P x Q grid) against netlib's own HPL_pdmatgen on that grid, and on one rank HPL_dmatgen, from
    the role's host build: every entry equal on every rank, for three seeds (HPL's 100, another, a negative one)."""
    tree = next(built.glob("build-*/host"))
    (tmp_path / "probe.c").write_text(MATGEN_PROBE)
    desc = json.loads((built / "gpuaccept-hpl-host.json").read_text())
    cpu_blas = Path(desc["cpu_blas"])
    subprocess.run(
        ["mpicc", "-O2", "-DAdd_", "-DF77_INTEGER=int", "-DStringSunStyle", f"-I{tree / 'include'}",
         f"-I{ROOT / 'reframe_checks' / 'src' / 'hpl'}", "-o", str(tmp_path / "probe"), str(tmp_path / "probe.c"),
         str(tree / "lib" / "gpuaccept" / "libhpl.a"), f"-L{cpu_blas.parent}", f"-Wl,-rpath,{cpu_blas.parent}",
         f"-l:{cpu_blas.name}", "-lm"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    env = {**os.environ, **MPI_ENV, "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    res = subprocess.run(["mpirun", "-np", str(p * q), str(tmp_path / "probe"), str(p)], capture_output=True,
                         text=True, timeout=120, check=False, env=env)  # fmt: skip
    assert res.stdout.strip() == f"entries {3 * 97 * 45} mismatches 0", res.stdout + res.stderr


GPU_SOURCE = ROOT / "reframe_checks" / "src" / "hpl" / "gpuaccept_hpl_gpu.cu"
HOST_STANDINS = ROOT / "tests" / "native" / "cuda_host"


@pytest.fixture(scope="module")
def xhpl_on_cpu(built, tmp_path_factory) -> dict[str, Path]:
    """HPL-CUDA's solver on the CPU: gpuaccept_hpl_gpu.cu compiled as plain C++ against the host stand-ins of
    tests/native/cuda_host (CUDA, cuBLAS and cuSOLVER calls run on the CPU, NCCL's as MPI), once with its NCCL
    path and once without, each linked as the role links HPL-CUDA (before libhpl.a, --wrap for the residual check)
    with the host tree's driver: HPL's driver, timer and residual check around the GPU solver's own code."""
    tree = next(built.glob("build-*/host"))
    cpu_blas = Path(json.loads((built / "gpuaccept-hpl-host.json").read_text())["cpu_blas"])
    mpi_flags = subprocess.run(["mpicc", "--showme:compile"], capture_output=True, text=True, check=True).stdout
    driver = sorted(str(o) for o in (tree / "testing" / "ptest" / "gpuaccept").glob("HPL_pd*.o"))
    assert len(driver) == 3, driver
    out = tmp_path_factory.mktemp("hpl-on-cpu")
    binaries = {}
    for name, defs in (("nccl", ["-DGPUACCEPT_HPL_NCCL"]), ("mpi", [])):
        obj = out / f"gpuaccept_hpl_gpu-{name}.o"
        subprocess.run(
            ["g++", "-x", "c++", "-std=c++17", "-O1", "-w", *defs, f"-I{HOST_STANDINS}", f"-I{GPU_SOURCE.parent}",
             "-DOMPI_SKIP_MPICXX", "-DAdd_", "-DF77_INTEGER=int", "-DStringSunStyle", f"-I{tree / 'include'}",
             *mpi_flags.split(), "-c", str(GPU_SOURCE), "-o", str(obj)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        binaries[name] = out / f"xhpl-{name}"
        subprocess.run(
            ["mpicc", "-o", str(binaries[name]), *driver, str(obj), str(tree / "lib" / "gpuaccept" / "libhpl.a"),
             "-Wl,--wrap=HPL_pdlange,--wrap=HPL_dgemv", f"-L{cpu_blas.parent}", f"-Wl,-rpath,{cpu_blas.parent}",
             f"-l:{cpu_blas.name}", "-lstdc++", "-lm"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    return binaries


def run_on_cpu(binary: Path, work: Path, dat_text: str, ranks: int, env: dict) -> tuple[hpl.HplOutput, str]:
    work.mkdir()
    (work / "HPL.dat").write_text(dat_text)
    res = subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), str(binary)], cwd=work, capture_output=True,
                         text=True, check=False, timeout=300, env={**os.environ, **MPI_ENV, **env})  # fmt: skip
    (work / "HPL.out").write_text(res.stdout)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return hpl.parse_file(work / "HPL.out"), res.stderr


# (name, N, NB, P, Q, depth, build, environment, what rank 0 says carries the data)
GRIDS_ON_CPU = [
    ("2x2", 600, 64, 2, 2, 1, "nccl", {}, "nccl (GPU to GPU)"),
    ("2x2-depth-0", 600, 64, 2, 2, 0, "nccl", {}, "nccl (GPU to GPU)"),
    ("3x2-uneven", 1000, 48, 3, 2, 1, "nccl", {}, "nccl (GPU to GPU)"),
    ("2x1-nb-33", 777, 33, 2, 1, 1, "nccl", {}, "nccl (GPU to GPU)"),
    ("2x2-n-below-nb-p", 100, 64, 2, 2, 1, "nccl", {}, "nccl (GPU to GPU)"),
    ("2x2-built-without-nccl", 600, 64, 2, 2, 1, "mpi", {}, "mpi (through host memory: built without NCCL)"),
    ("2x2-bcast-mpi", 600, 64, 2, 2, 1, "nccl", {"GPUACCEPT_HPL_BCAST": "mpi"},
     "mpi (through host memory: GPUACCEPT_HPL_BCAST=mpi)"),
    ("2x2-one-gpu", 600, 64, 2, 2, 1, "nccl", {"GPUACCEPT_HOST_GPUS": "1"},
     "mpi (through host memory: ranks share a GPU)"),
    ("1x3", 1000, 48, 1, 3, 1, "nccl", {}, "nccl (GPU to GPU)"),
    ("1x2-depth-0", 600, 64, 1, 2, 0, "mpi", {}, "mpi (through host memory: built without NCCL)"),
]


@pytest.mark.parametrize(("name", "n", "nb", "p", "q", "depth", "build", "env", "carrier"), GRIDS_ON_CPU,
                         ids=[g[0] for g in GRIDS_ON_CPU])  # fmt: skip
def test_hpl_cuda_solves_on_every_grid_on_the_cpu(xhpl_on_cpu, tmp_path, name, n, nb, p, q, depth, build, env,
                                                   carrier):
    """The GPU solver's code, run on the CPU through the host stand-ins under HPL's own driver: on 1 x Q and on
    P x Q grids (P > 1: the panel gathered on the diagonal block's rank, rows exchanged between process rows, U down
    the process columns, the 2-D back-solve), with and without look-ahead, N not a multiple of NB or of NB x P, over
    NCCL's calls and through host memory, HPL's residual check passes, and rank 0 says what carried the data and
    that NVLink SHARP was off."""
    dat = hpl_dat.render(hpl_dat.HplDat(n=n, nb=nb, p=p, q=q, depth=depth))
    out, err = run_on_cpu(xhpl_on_cpu[build], tmp_path / name, dat, p * q, env)
    assert hpl_judged(out, 1) == [], err[-2000:]
    (run,) = out.runs
    assert (run.n, run.nb, run.p, run.q, run.tv[2]) == (n, nb, p, q, str(depth))
    assert f"gpuaccept HPL: grid {p} x {q}, panel broadcast {carrier}, NCCL_NVLS_ENABLE=0\n" in err, err[-2000:]


def test_hpl_cuda_runs_several_grids_nbs_and_depths_from_one_hpl_dat_on_the_cpu(xhpl_on_cpu, tmp_path):
    """One xhpl run over 1 x 4, 2 x 2 and 4 x 1 grids, two NBs and both depths (HPL.dat lists them all): each grid
    gets communicators of its own, and all twelve rows pass HPL's residual check."""
    lines = hpl_dat.render(hpl_dat.HplDat(n=500, nb=64, p=1, q=4)).splitlines()
    values = {6: "2", 7: "64 40", 9: "3", 10: "1 2 4", 11: "4 2 1", 23: "2", 24: "0 1"}  # 0-based HPL.dat lines
    dat = "\n".join(f"{values[i]:<12} {line.split(None, 1)[1]}" if i in values else line
                    for i, line in enumerate(lines)) + "\n"  # fmt: skip
    out, _ = run_on_cpu(xhpl_on_cpu["nccl"], tmp_path / "multi", dat, 4, {})
    assert hpl_judged(out, 12) == []
    assert sorted({(r.p, r.q) for r in out.runs}) == [(1, 4), (2, 2), (4, 1)]


@pytest.mark.parametrize(
    ("env", "said", "warned"),
    [
        ({"NCCL_NVLS_ENABLE": "1"}, "NCCL_NVLS_ENABLE=0", True),
        ({"NCCL_NVLS_ENABLE": "1", "GPUACCEPT_HPL_NVLS": "1"}, "NCCL_NVLS_ENABLE=1", False),
        ({"GPUACCEPT_HPL_NVLS": "1"}, "NCCL_NVLS_ENABLE=unset", False),
    ],
)
def test_hpl_cuda_keeps_nvlink_sharp_off_unless_asked(xhpl_on_cpu, tmp_path, env, said, warned):
    """NCCL_NVLS_ENABLE is 0 in the process before NCCL starts unless GPUACCEPT_HPL_NVLS=1; a 1 in the environment
    without it is overridden, with a line saying so; rank 0 reports the value in effect."""
    dat = hpl_dat.render(hpl_dat.HplDat(n=300, nb=32, p=2, q=1))
    out, err = run_on_cpu(xhpl_on_cpu["nccl"], tmp_path / "nvls", dat, 2, env)
    assert hpl_judged(out, 1) == []
    assert f"gpuaccept HPL: grid 2 x 1, panel broadcast nccl (GPU to GPU), {said}\n" in err, err[-2000:]
    assert ("set to 0 (GPUACCEPT_HPL_NVLS=1 lets NCCL use NVLink SHARP)" in err) is warned


def test_role_a_second_time_changes_nothing(built, tmp_path):
    rc, out = play(tmp_path, "gpuaccept_hpl", role_vars(built))
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] == 0, out[-3000:]


def test_role_refuses_a_tarball_with_another_sha256(tmp_path):
    needs_input("hpl-2.3")
    rc, out = play(tmp_path, "gpuaccept_hpl", role_vars(tmp_path / "hpl", "0" * 64))
    assert rc != 0
    failed_with(out, f"has sha256 {TARBALL_SHA256}, not {'0' * 64}")


REF_HOST_HPL = """\
schema: gpuaccept.references/1
node_type: ci_hpl
description: CI host without GPUs (synthetic test references for the host HPL 2.3)
match: {gpu_count: 0}
sources:
  synthetic: {kind: synthetic, date: 2026-11-23, reference: "tests/test_hpl_build.py: plumbing test"}
checks:
  hpl_host:
    gflops: {value: 1.0, unit: GFLOP/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}
    residual_max: {informational: judged by HPL's rule in the output, unit: ratio, source: synthetic}
"""


def test_host_hpl_check_runs_the_role_built_hpl_through_reframe(built, tmp_path, monkeypatch):
    # The HostHpl check with the role's descriptor: netlib's HPL 2.3 (not hpcc), two ranks, N given.
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_hpl.yaml").write_text(REF_HOST_HPL)
    facts = node_facts.gather()
    facts_file = tmp_path / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    config = render_config(tmp_path / "settings.py", "ci_hpl", refs, facts, facts_file)
    monkeypatch.setenv("GPUACCEPT_HPL_HOST_DESCRIPTOR", str(built / "gpuaccept-hpl-host.json"))
    monkeypatch.setenv("OMPI_MCA_rmaps_base_oversubscribe", "1")
    proc = run_reframe(config, tmp_path, "commission", "-n", "^HostHpl$", "-S", "HostHpl.hpl_n=1536",
                       "-S", "HostHpl.ranks_per_node=2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (doc_path,) = (tmp_path / "reframe" / "output").rglob("hpl_host.json")
    doc = json.loads(doc_path.read_text())
    backend = doc["parameters"]["backend"]
    assert backend["hpl"] == "netlib HPL 2.3" and backend["ranks"] == 2 and backend["n"] == 1536
    assert backend["command"][-1].endswith("/bin/gpuaccept/xhpl") and doc["verification"]["passed"]
    assert doc["metrics"]["gflops"]["value"] > 0 and doc["metrics"]["residual_max"]["value"] < 16


def test_role_installs_an_hpc_benchmarks_tarball_and_writes_hpl_dat_and_descriptor(tmp_path, monkeypatch):
    """The NVIDIA HPC-Benchmarks path end to end up to the run: a tarball with its launch script, checked by
    sha256, extracted, and configure.yml's HPL.dat written by the tool environment's python (the module path it
    names must import: gpuaccept.hpl_dat had moved to gpuaccept.probe.hpl_dat and this task failed) from what a
    fake nvidia-smi on PATH reports: two GPUs of 81559 MiB."""
    bench = tmp_path / "hpl-linux-x86_64"
    bench.mkdir()
    (bench / "hpl.sh").write_text("#!/bin/sh\necho stand-in for NVIDIA's hpl.sh\n")
    (bench / "hpl.sh").chmod(0o755)
    artifact = tmp_path / "hpc-benchmarks.tar"
    with tarfile.open(artifact, "w") as tar:
        tar.add(bench, arcname="hpl-linux-x86_64")
    smi_dir = tmp_path / "bin"
    smi_dir.mkdir()
    smi = smi_dir / "nvidia-smi"
    smi.write_text('#!/bin/sh\n[ "$1" = --query-gpu=memory.total ] || exit 9\nprintf "81559\\n81559\\n"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi_dir}:{os.environ['PATH']}")
    prefix = tmp_path / "hpl"
    extra = {
        "gpuaccept_hpl_prefix": str(prefix),
        "gpuaccept_hpl_venv": str(VENV),
        "gpuaccept_hpl_artifact_path": str(artifact),
        "gpuaccept_hpl_artifact_sha256": hashlib.sha256(artifact.read_bytes()).hexdigest(),
        "gpuaccept_hpl_memory_fraction": 0.85,
        "gpuaccept_hpl_nb": 1024,
    }
    rc, out = play(tmp_path, "gpuaccept_hpl", extra)
    assert rc == 0, out[-4000:]
    p, q = hpl_dat.grid(2)
    n = hpl_dat.problem_size(81559 * 1048576, 2, 0.85, 1024, p, q)
    assert (prefix / "HPL.dat").read_text() == hpl_dat.render(hpl_dat.HplDat(n=n, nb=1024, p=p, q=q))
    desc = json.loads((prefix / "gpuaccept-hpl.json").read_text())
    assert desc["command"][-3:-1] == [str(next(prefix.glob("hpc-benchmarks-*")) / "hpl-linux-x86_64/hpl.sh"), "--dat"]
    assert desc["command"][:3] == ["mpirun", "--bind-to", "none"] and "{ranks}" in desc["command"]
    # NVIDIA's xhpl uses NCCL too: NVLink SHARP off, passed to every rank
    assert desc["command"][3:5] == ["-x", "NCCL_NVLS_ENABLE"] and desc["env"] == {"NCCL_NVLS_ENABLE": "0"}
    rc, out = play(tmp_path, "gpuaccept_hpl", extra)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]


REF_HPL_CUDA = """\
schema: gpuaccept.references/1
node_type: ci_hpl_cuda
description: CI host with one synthetic GPU (synthetic test references for HPL-CUDA's sizing path)
match: {gpu_model: NVIDIA Test GPU, gpu_count: 1}
sources:
  synthetic: {kind: synthetic, date: 2026-11-25, reference: "tests/test_hpl_build.py: plumbing test"}
checks:
  hpl_cuda:
    tflops: {informational: the host's netlib HPL stands in for HPL-CUDA here, unit: TFLOP/s, source: synthetic}
    tflops_per_gpu: {informational: the same, unit: TFLOP/s, source: synthetic}
    residual_max: {informational: judged by HPL's rule in the output, unit: ratio, source: synthetic}
"""


@pytest.mark.parametrize("gpus", [1, 2])
def test_hpl_cuda_check_sweeps_nb_and_depth_then_runs_the_chosen_setting_through_reframe(
    built, tmp_path, monkeypatch, gpus
):
    """GpuHplCuda's own path on a CPU: the sweep (every NB with every depth, no residual check), the choice
    written into HPL.dat by gpuaccept.probe.hpl_dat, then the checked run, and the document recording what the
    sweep measured and what ran; one rank per GPU of the node facts on a 1 x ranks grid. The role's host xhpl
    stands in for the GPU build (same driver, same output, the same grid), so the check's commands, files and
    parsing are the ones a GPU node runs."""
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_hpl_cuda.yaml").write_text(REF_HPL_CUDA)
    facts = node_facts.gather()
    facts["gpus"] = [{"index": i, "name": "NVIDIA Test GPU", "memory_bytes": 85520809984} for i in range(gpus)]
    facts_file = tmp_path / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    config = render_config(tmp_path / "settings.py", "ci_hpl_cuda", refs, facts, facts_file)
    monkeypatch.setenv("GPUACCEPT_HPL_CUDA_DESCRIPTOR", str(built / "gpuaccept-hpl-host.json"))
    monkeypatch.setenv("OMPI_MCA_rmaps_base_oversubscribe", "1")
    proc = run_reframe(config, tmp_path, "commission", "-n", "^GpuHplCuda$", "-S", "GpuHplCuda.sample_power=false",
                       "-S", "GpuHplCuda.hpl_n=768", "-S", "GpuHplCuda.sweep_n=512",
                       "-S", "GpuHplCuda.sweep_nbs=32,64", "-S", "GpuHplCuda.sweep_depths=0,1")  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (doc_path,) = (tmp_path / "reframe" / "output").rglob("hpl_cuda.json")
    doc = json.loads(doc_path.read_text())
    sizing = doc["parameters"]["backend"]["sizing"]
    rows = sizing["rows"]
    assert sorted((r["nb"], r["depth"]) for r in rows) == [(32, 0), (32, 1), (64, 0), (64, 1)]
    best = max(rows, key=lambda r: r["gflops"])
    assert sizing["chosen"] == {"nb": best["nb"], "depth": best["depth"]}
    assert sizing["run"] == {"n": 768, "nb": best["nb"], "depth": best["depth"]}
    assert doc["verification"]["passed"] and doc["metrics"]["residual_max"]["value"] < 16
    kept = doc_path.parent
    assert "-1.0         threshold" in (kept / "HPL.sweep.dat").read_text()
    assert len(hpl.parse_file(kept / "HPL.sweep.out").runs) == 4
    assert (kept / "HPL.dat").read_text().splitlines()[7].split()[0] == str(best["nb"])
    for name in ("HPL.dat", "HPL.sweep.dat"):  # P = 1, Q = the GPUs, in the sweep and the run
        assert [line.split()[0] for line in (kept / name).read_text().splitlines()[10:12]] == ["1", str(gpus)]
    backend = doc["parameters"]["backend"]
    assert (backend["ranks"], backend["grid"], backend["gpus_used"]) == (gpus, f"1 x {gpus}", gpus)
    assert {r.q for r in hpl.parse_file(kept / "HPL.sweep.out").runs} == {gpus}
    # netlib's xhpl says nothing of NCCL: the document keeps the build's transport and the environment's NVLS value.
    assert backend["nccl_nvls_enable"] == "0" and backend["transport"].startswith("not reported by xhpl")
    assert backend["grid_choice"] == "auto"


@pytest.mark.parametrize(("grid", "p", "q"), [("PxQ", 2, 2), ("auto", 1, 4)])
def test_hpl_cuda_check_runs_the_gpu_solver_on_the_grid_it_chooses_through_reframe(
    built, xhpl_on_cpu, tmp_path, monkeypatch, grid, p, q
):
    """GpuHplCuda on a node of four (synthetic) GPUs with the GPU solver itself on the CPU (xhpl_on_cpu, NCCL's
    calls as MPI) behind a descriptor this test writes as the role would: ``grid`` decides the sweep's and the
    run's P x Q (auto: 1 x 4; PxQ: 2 x 2), the run passes HPL's residual check, and the document's backend records
    the grid and what xhpl's rank 0 reported: the panel by NCCL, NVLink SHARP off."""
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_hpl_cuda.yaml").write_text(REF_HPL_CUDA.replace("gpu_count: 1", "gpu_count: 4"))
    facts = node_facts.gather()
    facts["gpus"] = [{"index": i, "name": "NVIDIA Test GPU", "memory_bytes": 85520809984} for i in range(4)]
    facts_file = tmp_path / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    descriptor = tmp_path / "gpuaccept-hpl-cuda.json"
    descriptor.write_text(json.dumps({
        "kind": "source", "variant": "cuda", "panel_broadcast": "nccl", "nccl_home": "(host stand-ins)",
        "nccl_nvls": False, "env": {"NCCL_NVLS_ENABLE": "0"}, "blas": blas(),
        "hpl": "netlib HPL 2.3 driver + gpuaccept's GPU solver on the CPU (tests/native/cuda_host)",
        "command": ["mpirun", "--oversubscribe", "-x", "NCCL_NVLS_ENABLE", "-np", "{ranks}", str(xhpl_on_cpu["nccl"])],
    }))  # fmt: skip
    config = render_config(tmp_path / "settings.py", "ci_hpl_cuda", refs, facts, facts_file)
    monkeypatch.setenv("GPUACCEPT_HPL_CUDA_DESCRIPTOR", str(descriptor))
    proc = run_reframe(config, tmp_path, "commission", "-n", "^GpuHplCuda$", "-S", "GpuHplCuda.sample_power=false",
                       "-S", f"GpuHplCuda.grid={grid}", "-S", "GpuHplCuda.hpl_n=640", "-S", "GpuHplCuda.sweep_n=384",
                       "-S", "GpuHplCuda.sweep_nbs=32,64", "-S", "GpuHplCuda.sweep_depths=1")  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (doc_path,) = (tmp_path / "reframe" / "output").rglob("hpl_cuda.json")
    doc = json.loads(doc_path.read_text())
    assert doc["verification"]["passed"] and doc["metrics"]["residual_max"]["value"] < 16
    backend = doc["parameters"]["backend"]
    assert (backend["grid"], backend["grid_choice"]) == (f"{p} x {q}", grid)
    assert (backend["panel_broadcast"], backend["panel_broadcast_why"]) == ("nccl", "GPU to GPU")
    assert (backend["nccl_nvls_enable"], backend["transport"]) == ("0", "reported by xhpl")
    kept = doc_path.parent
    for name in ("HPL.dat", "HPL.sweep.dat"):
        assert [line.split()[0] for line in (kept / name).read_text().splitlines()[10:12]] == [str(p), str(q)]
    assert {(r.p, r.q) for r in hpl.parse_file(kept / "HPL.sweep.out").runs} == {(p, q)}


def test_hpl_cuda_grid_is_checked():
    assert hpl_dat.gpu_grid(4) == (1, 4) and hpl_dat.gpu_grid(4, "1xQ") == (1, 4)
    assert hpl_dat.gpu_grid(4, "PxQ") == (2, 2) and hpl_dat.gpu_grid(8, "PxQ") == (2, 4)
    assert hpl_dat.gpu_grid(2, "PxQ") == (1, 2) and hpl_dat.gpu_grid(1, "auto") == (1, 1)
    with pytest.raises(ValueError, match="one of auto, 1xQ, PxQ, not 'square'"):
        hpl_dat.gpu_grid(4, "square")


def test_role_links_hpl_cuda_without_nccl_when_told_and_with_it_again(built, tmp_path):
    """gpuaccept_hpl_nccl_home: '' builds the GPU-resident object without GPUACCEPT_HPL_NCCL (cuda-object/) and relinks
    an xhpl that does not need libnccl.so.2 (everything through host memory by MPI); a directory given is checked by
    find-nccl.sh and used; a directory without NCCL stops the role with the reason; auto again links NCCL where it is
    found. Last in this module: it relinks the shared build."""
    nccl = nccl_home.find(env={**os.environ, "CUDA_HOME": "/usr/local/cuda"})
    if not nccl:
        pytest.skip("find-nccl.sh finds no NCCL here")
    (xhpl,) = built.glob("build-*/cuda/bin/gpuaccept/xhpl")

    def linked() -> tuple[bool, bool]:
        needed = subprocess.run(["readelf", "-d", str(xhpl)], capture_output=True, text=True, check=True).stdout
        symbols = subprocess.run(["nm", "-u", str(xhpl)], capture_output=True, text=True, check=True).stdout
        return "libnccl.so.2" in needed, "ncclBroadcast" in symbols

    def descriptor() -> dict:
        return json.loads((built / "gpuaccept-hpl-cuda.json").read_text())

    try:
        rc, out = play(tmp_path, "gpuaccept_hpl", {**role_vars(built), "gpuaccept_hpl_nccl_home": ""})
        assert rc == 0, out[-3000:]
        assert recap(out)["changed"] > 0 and linked() == (False, False)
        assert next(built.glob("build-*/cuda-object/gpuaccept_hpl_gpu.o")).is_file()
        assert descriptor()["panel_broadcast"] == "mpi" and descriptor()["nccl_home"] == ""
        failed = tmp_path / "no-nccl"
        failed.mkdir()
        rc, out = play(tmp_path, "gpuaccept_hpl", {**role_vars(built), "gpuaccept_hpl_nccl_home": str(failed)})
        assert rc != 0
        failed_with(out, f"gpuaccept_hpl_nccl_home={failed} on localhost: find-nccl.sh: the directory {failed} has no",
                    "or set it to auto")  # fmt: skip
        rc, out = play(tmp_path, "gpuaccept_hpl", {**role_vars(built), "gpuaccept_hpl_nccl_home": nccl})
        assert rc == 0, out[-3000:]
        assert linked() == (True, True) and descriptor()["nccl_home"] == nccl
    finally:
        rc, out = play(tmp_path, "gpuaccept_hpl", role_vars(built))
    assert rc == 0, out[-3000:]
    assert linked() == (True, True)
    assert next(built.glob("build-*/cuda-object-nccl/gpuaccept_hpl_gpu.o")).is_file()
    assert descriptor()["panel_broadcast"] == "nccl"
