"""gpuaccept-nccl --multi-process without a GPU: the host logic's unit tests (tests/native/test_nccl_net.cpp), the
options, and whole runs of several ranks started by the emulation launcher (gpuaccept.nccl_emulate) on loopback.
With no GPU every rank fails at its device; what must still hold is the bootstrap, the gathering to rank 0 and
the one document it writes, naming every rank's host and error (NOT RUN, exit 1), and a rank that never comes
being named. The launcher's own plan (environments, GPUs, CPU pinning) is checked with a stand-in tool."""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from gpuaccept import nccl_emulate

SRC = ROOT / "reframe_checks" / "src"
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tool(nccl_tool: Path) -> Path:
    return nccl_tool


def test_host_logic_unit_tests(tmp_path):
    binary = tmp_path / "test_nccl_net"
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pthread", f"-I{SRC / 'nccl'}",
                    f"-I{SRC / 'common'}", str(ROOT / "tests" / "native" / "test_nccl_net.cpp"), "-o", str(binary)],
                   check=True)
    res = subprocess.run([str(binary), str(free_port())], capture_output=True, text=True, check=False, timeout=60)
    assert res.returncode == 0, res.stderr


def run_tool(tool: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GPUACCEPT_", "OMPI_", "SLURM_", "PMI_"))}
    return subprocess.run([str(tool), *args], capture_output=True, text=True, check=False, timeout=60,
                          env={**clean, **env})


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--comm", "groups:0-1,1-2"], {}, "--comm 'groups:0-1,1-2': rank 1 is in two groups"),
    (["--comm", "ring"], {}, "world, rail or groups:"),
    (["--gpus", "0"], {}, "--gpus: not with --multi-process"),
    (["--latency-bytes", "6"], {}, "--latency-bytes"),
    ([], {}, "no rank in the environment"),
    ([], {"GPUACCEPT_RANK": "0", "GPUACCEPT_SIZE": "2"}, "set GPUACCEPT_BOOTSTRAP=HOST:PORT"),
    (["--comm", "groups:0-2"], {"GPUACCEPT_RANK": "0", "GPUACCEPT_SIZE": "2", "GPUACCEPT_BOOTSTRAP": "h:1"},
     "rank 2 given, but the world has 2 ranks"),
    (["--ring"], {"GPUACCEPT_RANK": "0", "GPUACCEPT_SIZE": "1", "NCCL_ALGO": "Tree"}, "NCCL_ALGO=Tree"),
    ([], {"GPUACCEPT_RANK": "0", "GPUACCEPT_SIZE": "1", "NCCL_NVLS_ENABLE": "1"}, "--allow-nvls"),
    (["--nccl-log-dir", "/nonexistent/logs"], {"GPUACCEPT_RANK": "0", "GPUACCEPT_SIZE": "1"},
     "--nccl-log-dir /nonexistent/logs: not a directory"),
], ids=["overlap", "layout", "gpus", "latency", "no-rank", "no-bootstrap", "rank-range", "ring-vs-algo", "nvls",
        "log-dir"])
def test_bad_multi_process_input_is_named(tool, args, env, message):
    res = run_tool(tool, "--multi-process", *args, **env)
    assert res.returncode == 3 and message in res.stderr, res.stderr


def test_multi_process_options_need_the_mode(tool):
    res = run_tool(tool, "--comm", "rail")
    assert res.returncode == 3 and "--comm" in res.stderr


def test_emulated_ranks_without_a_gpu_reach_rank_0_and_are_not_run(tool, tmp_path):
    out = tmp_path / "nccl.json"
    argv = ["--ranks", "3", "--gpus", "2", "--timeout-s", "60", "--", str(tool), "--comm", "rail", "--ring",
            "--quick", "--bootstrap-timeout-s", "20", "--output", str(out)]
    proc = subprocess.run([sys.executable, "-m", "gpuaccept.nccl_emulate", *argv], capture_output=True, text=True,
                          check=False, timeout=90, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 1, proc.stderr
    assert "exit status by rank: 0:1 1:1 2:1" in proc.stderr
    doc = json.loads(out.read_text())
    p = doc["parameters"]
    assert (p["mode"], p["ranks"], p["comm"], p["rank_source"]) == ("multi_process", 3, "rail", "GPUACCEPT_RANK")
    assert p["ring"] is True and p["algo_requested"] == "Ring" and p["nvls"] == "off (NCCL_NVLS_ENABLE=0)"
    assert p["environment"]["NCCL_P2P_DISABLE"] == "1" and p["environment"]["NCCL_NVLS_ENABLE"] == "0"
    assert p["collectives"]["alltoall"]["bus_factor"] == "(n-1)/n"
    assert p["environment"]["GPUACCEPT_EMULATION"].startswith("3 ranks as 3 emulated hosts on one machine")
    ranks = doc["results"]["ranks"]
    assert [(r["rank"], r["host"], r["local_rank"]) for r in ranks] == [(0, "emuhost0", 0), (1, "emuhost1", 0),
                                                                        (2, "emuhost2", 0)]
    assert all("no CUDA device found" in r["errors"][0] for r in ranks)
    assert [e.split(":")[0] for e in doc["errors"]] == ["rank 0", "rank 1 (emuhost1)", "rank 2 (emuhost2)"]
    # Every rank is local rank 0 of its own emulated host: one rail of all three.
    (group,) = doc["results"]["groups"]
    assert group["label"] == "0@emuhost0+1@emuhost1+2@emuhost2" and group["rail"] == 0
    assert group["collectives"] == [] and doc["metrics"] == {} and doc["verification"]["passed"] is False


def test_a_rank_that_never_comes_is_named(tool, tmp_path):
    out = tmp_path / "nccl.json"
    env = {"GPUACCEPT_SIZE": "3", "GPUACCEPT_BOOTSTRAP": f"127.0.0.1:{free_port()}"}
    args = ["--multi-process", "--bootstrap-timeout-s", "2"]
    rank1 = subprocess.Popen([str(tool), *args], env={**os.environ, **env, "GPUACCEPT_RANK": "1"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    res = run_tool(tool, *args, "--output", str(out), **env, GPUACCEPT_RANK="0")
    _, err1 = rank1.communicate(timeout=30)
    assert res.returncode == 1 and rank1.returncode == 1
    assert "2 of 3 ranks never came" not in res.stderr and "1 of 3 ranks never came: rank 2 " in res.stderr
    assert "rank 0 did not answer or closed its connection" in err1
    assert any("never came: rank 2" in e for e in json.loads(out.read_text())["errors"])


# The launcher's plan, with a stand-in tool that notes what it was given.
STAND_IN = """\
import json, os, sys
json.dump({"argv": sys.argv[1:], "env": dict(os.environ), "cpus": sorted(os.sched_getaffinity(0))},
          open(os.path.join(sys.argv[1], os.environ["GPUACCEPT_RANK"] + ".json"), "w"))
"""


def test_the_launcher_gives_each_rank_its_host_gpu_and_environment(tmp_path):
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    rc = nccl_emulate.main(["--ranks", "4", "--gpus", "2", "--hosts", "2", "--", sys.executable, str(script),
                            str(tmp_path)])
    assert rc == 0
    seen = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(4)]
    assert [s["env"]["NCCL_HOSTID"] for s in seen] == ["emuhost0", "emuhost0", "emuhost1", "emuhost1"]
    assert [s["env"]["GPUACCEPT_LOCAL_RANK"] for s in seen] == ["0", "1", "0", "1"]
    assert [s["argv"][-2:] for s in seen] == [["--device", "0"], ["--device", "1"]] * 2
    assert all("--multi-process" in s["argv"] for s in seen)
    for s in seen:
        env = s["env"]
        assert {k: env[k] for k in nccl_emulate.EMULATION_ENV} == nccl_emulate.EMULATION_ENV
        assert env["GPUACCEPT_SIZE"] == "4" and env["GPUACCEPT_BOOTSTRAP"] == seen[0]["env"]["GPUACCEPT_BOOTSTRAP"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning the slow rank apart needs two CPUs")
def test_the_slow_rank_shares_one_cpu_with_the_burners_and_the_others_keep_off_it(tmp_path):
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    rc = nccl_emulate.main(["--ranks", "2", "--gpus", "1", "--slow-rank", "1", "--burners", "1", "--",
                            sys.executable, str(script), str(tmp_path)])
    assert rc == 0
    cpus = [json.loads((tmp_path / f"{r}.json").read_text())["cpus"] for r in range(2)]
    slow = max(os.sched_getaffinity(0))
    assert cpus[1] == [slow] and slow not in cpus[0]


def test_the_launcher_refuses_a_bad_plan(capsys):
    with pytest.raises(SystemExit) as e:
        nccl_emulate.main(["--ranks", "4", "--gpus", "2", "--hosts", "3", "--slow-rank", "4", "--", "tool"])
    assert e.value.code == 3
    err = capsys.readouterr().err
    assert "--hosts 3 does not divide --ranks 4" in err and "--slow-rank 4 is not a rank" in err
