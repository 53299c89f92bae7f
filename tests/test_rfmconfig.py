"""gpuaccept.rfmconfig, the one writer of a node's ReFrame configuration: what the gpuaccept_reframe role runs
(``python -m gpuaccept.rfmconfig``) is what ``gpuaccept run`` and the tests write."""

from __future__ import annotations

import json
import subprocess
import sys

from gpuaccept import rfmconfig

EXTRAS = {"node_type": "h100_sxm5_80gb", "reference_dir": "/r", "gpu_count": 2, "facts_file": "/b/node-facts.json",
          "cuda_arch": "-gencode=arch=compute_90,code=sm_90", "blas": "none", "git_revision": "abc1234"}


def load(text: str) -> dict:
    scope: dict = {}
    exec(compile(text, "reframe_settings.py", "exec"), scope)  # as ReFrame loads it
    return scope["site_configuration"]


def test_the_role_s_command_prints_what_the_module_writes():
    argv = ["--host", "gpu01", "--node-type", "h100_sxm5_80gb", "--gpu-count", "2", "--extras", json.dumps(EXTRAS),
            "--nvcc", "/usr/local/cuda/bin/nvcc", "--source", "the gpuaccept_reframe role (Ansible)"]
    proc = subprocess.run([sys.executable, "-m", "gpuaccept.rfmconfig", *argv], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert proc.stdout == rfmconfig.text("gpu01", "h100_sxm5_80gb", 2, EXTRAS, "/usr/local/cuda/bin/nvcc",
                                         "the gpuaccept_reframe role (Ansible)")  # fmt: skip
    config = load(proc.stdout)
    part = config["systems"][0]["partitions"][0]
    assert part["features"] == ["gpu"] and part["devices"] == [{"type": "gpu", "num_devices": 2}]
    assert part["extras"] == EXTRAS
    assert config["environments"][0]["nvcc"] == "/usr/local/cuda/bin/nvcc"
    assert '"node_type": "h100_sxm5_80gb"' in proc.stdout


def test_a_node_without_gpus_gets_no_gpu_feature():
    config = load(rfmconfig.text("cpu01", "", 0, {**EXTRAS, "node_type": "", "gpu_count": 0}, "nvcc"))
    part = config["systems"][0]["partitions"][0]
    assert part["features"] == [] and "devices" not in part
    assert part["descr"] == "unknown node type, 0 GPU(s)"


def test_extras_that_are_not_an_object_are_refused():
    proc = subprocess.run([sys.executable, "-m", "gpuaccept.rfmconfig", "--host", "h", "--gpu-count", "0",
                           "--extras", "[1]"], capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 2 and "--extras: a JSON object expected" in proc.stderr
