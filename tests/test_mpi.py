"""The MPI check (seed 004), on one host with several ranks through Debian's Open MPI: the benchmark itself
(verified messages, a corrupted byte caught, an odd rank count refused), and the check run for real through
ReFrame with the mpirun launcher, judged in the multinode suite. GPU buffers are waived here: Debian's Open MPI
is not CUDA-aware and this machine has no GPU; the GPU-buffer build is compiled, not run."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from rfm_support import render_config, run_reframe

from gpuaccept.probe import facts as node_facts

SRC = ROOT / "reframe_checks" / "src"
GPUACCEPT = [sys.executable, "-m", "gpuaccept"]
# Open MPI refuses root (CI's user) unless told; two ranks on a two-core machine need no oversubscription, but
# CI machines vary.
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}
QUICK = ["--quick", "--size", "262144", "--window", "8"]
REF = """\
schema: gpuaccept.references/1
node_type: ci_mpi
description: CI host, two ranks over shared memory (synthetic test references)
match: {{gpu_count: 0}}
sources:
  synthetic: {{kind: synthetic, date: 2026-11-22, reference: "tests/test_mpi.py: plumbing test"}}
checks:
  mpi:
    host_latency_max: {{value: {lat}, unit: us, upper: 0.0, source: synthetic}}
    host_bw_min: {{value: 0.01, unit: GB/s, lower: 0.9, wide_tolerance: CI test, source: synthetic}}
    gpu_latency_max: {{unit: us, source: synthetic, informational: Debian's Open MPI is not CUDA-aware}}
    gpu_bw_min: {{unit: GB/s, source: synthetic, informational: Debian's Open MPI is not CUDA-aware}}
"""


def mpirun() -> str:
    path = shutil.which("mpirun")
    if path is None:
        pytest.fail("mpirun not found: CI installs Debian's openmpi-bin and libopenmpi-dev (.ci/run)")
    return path


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    build = tmp_path_factory.mktemp("mpi-build")
    res = subprocess.run(
        ["make", "-C", str(SRC), f"BUILD_DIR={build}", "GIT_REV=test", "mpi"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    return build / "gpuaccept-mpi"


def run_mpi(binary: Path, ranks: int, out: Path, *opts: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [mpirun(), "-np", str(ranks), str(binary), "--output", str(out), *opts],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, **MPI_ENV},
    )


def test_two_ranks_measure_and_verify(binary, tmp_path):
    res = run_mpi(binary, 2, tmp_path / "mpi.json", *QUICK)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    doc = json.loads((tmp_path / "mpi.json").read_text())
    assert doc["schema"] == "gpuaccept.bench/1" and doc["tool"] == "gpuaccept-mpi"
    assert doc["verification"]["passed"] and doc["verification"]["checked"] > 1000 and not doc["errors"]
    (pair,) = doc["results"]["host_pairs"]
    assert pair["ranks"] == [0, 1] and pair["latency_us"]["samples"] == 7
    m = doc["metrics"]
    assert m["host_latency_max"]["unit"] == "us" and 0 < m["host_latency_max"]["value"] < 1e4
    assert m["host_bw_min"]["unit"] == "GB/s" and m["host_bw_min"]["value"] > 0
    assert set(doc["waived"]) == {"gpu_latency_max", "gpu_bw_min"}
    assert "built without CUDA" in doc["waived"]["gpu_bw_min"]
    assert "Open MPI" in doc["results"]["mpi_library"]


def test_four_ranks_make_two_pairs(binary, tmp_path):
    res = run_mpi(binary, 4, tmp_path / "mpi.json", *QUICK, "--samples", "3", "--lat-iters", "50")
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    doc = json.loads((tmp_path / "mpi.json").read_text())
    assert [p["ranks"] for p in doc["results"]["host_pairs"]] == [[0, 2], [1, 3]]


def test_a_corrupted_message_fails_verification(binary, tmp_path):
    res = run_mpi(binary, 2, tmp_path / "mpi.json", *QUICK, "--inject-error")
    assert res.returncode != 0
    doc = json.loads((tmp_path / "mpi.json").read_text())
    assert doc["verification"]["passed"] is False
    assert any(
        "host bandwidth: rank 1 received a wrong message from rank 0" in f for f in doc["verification"]["failures"]
    )


def test_an_odd_rank_count_is_refused(binary, tmp_path):
    res = run_mpi(binary, 3, tmp_path / "mpi.json", *QUICK)
    assert res.returncode != 0
    doc = json.loads((tmp_path / "mpi.json").read_text())
    assert doc["errors"] == ["gpuaccept-mpi needs an even number of ranks, at least 2 (got 3)"]


def test_the_gpu_buffer_build_compiles(tmp_path):
    if not Path("/usr/local/cuda/include/cuda_runtime.h").exists():
        pytest.fail("the CUDA toolkit is not in /usr/local/cuda (CI's image has it)")
    res = subprocess.run(
        ["make", "-C", str(SRC), f"BUILD_DIR={tmp_path}", "mpi-cuda"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "gpuaccept-mpi-cuda").exists()


@pytest.mark.parametrize("lat_ref, verdict", [(1.0e4, "pass"), (0.01, "fail")])
def test_mpi_check_through_reframe(tmp_path, monkeypatch, lat_ref, verdict):
    """The ReFrame check on a partition with the mpi feature and the mpirun launcher, two ranks on this host;
    a latency reference it cannot meet fails it."""
    mpirun()
    for k, v in MPI_ENV.items():
        monkeypatch.setenv(k, v)
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "ci_mpi.yaml").write_text(REF.format(lat=lat_ref))
    facts = node_facts.gather()
    facts_file = tmp_path / "node-facts.json"
    facts_file.write_text(json.dumps(facts))
    config = render_config(tmp_path / "settings.py", "ci_mpi", refs, facts, facts_file)
    text = config.read_text()
    assert '"launcher": "local"' in text and '"features": []' in text
    config.write_text(
        text.replace('"launcher": "local"', '"launcher": "mpirun"').replace('"features": []', '"features": ["mpi"]')
    )
    proc = run_reframe(
        config, tmp_path, "multinode", "-S", "ranks_per_node=2", "-S", "bench_opts=--quick,--size,262144,--window,8"
    )
    summary = subprocess.run(
        [
            *GPUACCEPT,
            "summarize",
            "--run-dir",
            str(tmp_path),
            "--node-type",
            "ci_mpi",
            "--suite",
            "multinode",
            "--facts",
            str(facts_file),
            "--reference-dir",
            str(refs),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    doc = json.loads((tmp_path / "verdict.json").read_text())
    rows = {(r["check"], r["metric"]): r for r in doc["rows"]}
    assert doc["verdict"] == verdict, proc.stdout[-4000:] + summary.stdout
    if verdict == "pass":
        assert proc.returncode == 0 and summary.returncode == 0
        assert rows[("mpi", "host_bw_min")]["status"] == "pass"
        assert rows[("mpi", "gpu_bw_min")]["status"] in ("waived", "info")
        script = next((tmp_path / "reframe").rglob("rfm_job.sh")).read_text()
        assert "mpirun -np 2" in script
    else:
        # ReFrame records the run (it holds no thresholds); the judge rejects it.
        assert proc.returncode == 0 and summary.returncode == 1
        assert rows[("mpi", "host_latency_max")]["status"] == "fail"
