"""The optional push to a Pushgateway, against Debian's real prometheus-pushgateway: the verdict recorded on
the H100 with a degraded GPU, pushed under the node's name; a push that fails says where and keeps the files."""

import json
import os
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


@pytest.mark.parametrize("form", ["http://user:{s}@127.0.0.1:{p}", "http://127.0.0.1:{p}/?token={s}",
                                  "http://127.0.0.1:{p}/#{s}"])
def test_a_pushgateway_url_with_credentials_is_never_echoed(tmp_path, form):
    """Credentials in the Pushgateway URL (user:password@, a token in the query) reach no message and no file."""
    secret = "pw-7f3e9a"
    facts = tmp_path / "node-facts.json"
    facts.write_text(json.dumps({"hostname": "n7", "gpus": [], "gpu_error": "no NVIDIA GPU found"}))
    url = form.format(s=secret, p=free_port())
    res = subprocess.run(
        [*GPUACCEPT, "summarize", "--run-dir", str(tmp_path), "--node-type", "a100_sxm4_80gb", "--suite", "nightly",
         "--facts", str(facts), "--reference-dir", str(REFERENCE_DIR), "--pushgateway", url],
        capture_output=True, text=True, check=False,
    )
    assert res.returncode == 4 and "could not push to the Pushgateway at http://" in res.stderr, res.stderr
    assert "127.0.0.1" in res.stderr and "<redacted>" in res.stderr
    for text in (res.stdout, res.stderr, *(p.read_text() for p in tmp_path.iterdir())):
        assert secret not in text


def test_the_pushgateway_url_can_come_from_the_environment(gateway, tmp_path):
    """GPUACCEPT_PUSHGATEWAY keeps a URL with credentials off the command line (the suite role passes it so)."""
    facts = tmp_path / "node-facts.json"
    facts.write_text(json.dumps({"hostname": "n8", "gpus": [], "gpu_error": "no NVIDIA GPU found"}))
    res = subprocess.run(
        [*GPUACCEPT, "summarize", "--run-dir", str(tmp_path), "--node-type", "a100_sxm4_80gb", "--suite", "nightly",
         "--facts", str(facts), "--reference-dir", str(REFERENCE_DIR)],
        capture_output=True, text=True, check=False, env={**os.environ, "GPUACCEPT_PUSHGATEWAY": gateway},
    )
    assert res.returncode == 1, res.stderr
    assert 'gpuaccept_node_accepted{instance="n8",job="gpuaccept"' in get(f"{gateway}/metrics").decode()
