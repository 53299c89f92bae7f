"""The optional push to a Pushgateway, against Debian's real prometheus-pushgateway: the verdict recorded on
the H100 with a degraded GPU, pushed under the node's name; a push that fails says where and keeps the files."""

import json
import subprocess
import sys

import pytest
from conftest import H100_DEGRADED, REFERENCE_DIR
from prom_stack import Stack, free_port, get, tool

from gpuaccept.judge import pushgateway, verdict

GPUACCEPT = [sys.executable, "-m", "gpuaccept"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    base = tmp_path_factory.mktemp("pushgateway")
    port = free_port()
    stack = Stack(base)
    try:
        stack.start(
            [tool("prometheus-pushgateway"), f"--web.listen-address=127.0.0.1:{port}"],
            f"http://127.0.0.1:{port}/metrics",
            "pushgateway",
        )
        yield f"http://127.0.0.1:{port}"
    finally:
        stack.stop()


def test_a_verdict_is_pushed_under_the_nodes_name(gateway):
    # The degraded run kept its report and verdict, not its documents: push the verdict the judge gave it.
    v = verdict.Verdict.from_json(json.loads((H100_DEGRADED / "verdict.json").read_text()))
    grouping = pushgateway.push(v, gateway, "gpu-h100-02")
    assert grouping == {"instance": "gpu-h100-02", "suite": "commission"}
    body = get(f"{gateway}/metrics").decode()
    labels = 'instance="gpu-h100-02",job="gpuaccept",node_type="h100_sxm5_80gb",suite="commission"'
    assert f"gpuaccept_node_accepted{{{labels}}} 0" in body
    assert 'gpuaccept_result_flops{check="gemm",instance="gpu-h100-02",job="gpuaccept",metric="fp64_tflops_min"' in body


def test_summarize_pushes_and_a_failed_push_is_named(gateway, tmp_path):
    facts = tmp_path / "node-facts.json"
    facts.write_text(json.dumps({"hostname": "n7", "gpus": [], "gpu_error": "no NVIDIA GPU found"}))
    args = [
        "summarize",
        "--run-dir",
        str(tmp_path),
        "--node-type",
        "a100_sxm4_80gb",
        "--suite",
        "nightly",
        "--facts",
        str(facts),
        "--reference-dir",
        str(REFERENCE_DIR),
    ]
    res = subprocess.run([*GPUACCEPT, *args, "--pushgateway", gateway], capture_output=True, text=True, check=False)
    assert res.returncode == 1, res.stderr  # rejected: no GPUs, no report
    assert 'gpuaccept_node_accepted{instance="n7",job="gpuaccept",node_type="a100_sxm4_80gb",suite="nightly"} 0' in (
        get(f"{gateway}/metrics").decode()
    )
    dead = f"http://127.0.0.1:{free_port()}"
    (tmp_path / "verdict.json").unlink()
    res = subprocess.run([*GPUACCEPT, *args, "--pushgateway", dead], capture_output=True, text=True, check=False)
    assert res.returncode == 4
    assert f"could not push to the Pushgateway at {dead}" in res.stderr
    assert json.loads((tmp_path / "verdict.json").read_text())["verdict"] == "fail"  # written before the push
