"""The Prometheus textfile: promtool-clean, accepted by Debian's real node_exporter, base units, no timestamps.
Judged from the nightly run recorded on the H100 (docs/evidence/2026-11-22-h100-suites: every check of the
suite, health and power included)."""

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import RECORDED, RECORDED_CHECKS, REFERENCE_DIR, references_as_recorded
from prometheus_client.parser import text_string_to_metric_families

from gpuaccept import references
from gpuaccept.judge import exporter, verdict

RUN = RECORDED / "2026-11-22-h100-suites" / "run2" / "results" / "localhost" / "20261122T070352Z-nightly"
NEED_TOOLS = "CI installs Debian's prometheus and prometheus-node-exporter (.ci/run)"


def recorded_verdict(node_type="h100_sxm5_80gb", reference_dir=REFERENCE_DIR) -> verdict.Verdict:
    report = verdict.load_report(RUN / "reframe-report.json")
    facts = json.loads((RUN / "node-facts.json").read_text())
    return verdict.build(report, facts, reference_dir, node_type, "nightly", run_dir=RUN)


def tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        pytest.fail(f"{name} not found: {NEED_TOOLS}")
    return path


def test_textfile_is_promtool_clean_and_in_base_units(tmp_path):
    refs = references_as_recorded(tmp_path, (*RECORDED_CHECKS, "health", "power"))
    text = exporter.render(recorded_verdict(reference_dir=refs))
    res = subprocess.run([tool("promtool"), "check", "metrics"], input=text, capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    parsed = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert parsed and all(s.timestamp is None for s in parsed), "a sample carries a timestamp"
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    h2d = next(line for line in samples if line.startswith("gpuaccept_result_bytes_per_second{")
               and 'metric="h2d_pinned_min"' in line)
    assert float(h2d.rsplit(" ", 1)[1]) > 1e10  # tens of GB/s, in bytes per second
    assert re.search(r'^gpuaccept_node_accepted\{node_type="h100_sxm5_80gb",suite="nightly"\} 1\.0$', text, re.M)
    watts = next(line for line in samples if line.startswith("gpuaccept_result_watts{") and "load_power_min_w" in line)
    assert 600 < float(watts.rsplit(" ", 1)[1]) <= 700
    assert any(line.startswith("gpuaccept_result_flops_per_watt{") for line in samples)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_node_exporter_reads_the_textfile(tmp_path):
    exporter.write(recorded_verdict(), tmp_path / "run", tmp_path / "textfile")
    port = free_port()
    proc = subprocess.Popen([tool("prometheus-node-exporter"), f"--web.listen-address=127.0.0.1:{port}",
                             "--collector.disable-defaults", "--collector.textfile",
                             f"--collector.textfile.directory={tmp_path / 'textfile'}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        body = ""
        for _ in range(50):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                    body = resp.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert "node_textfile_scrape_error 0" in body, body[-2000:]
        assert 'gpuaccept_check_status{check="gemm",node_type="h100_sxm5_80gb",status="pass",suite="nightly"} 1' \
            in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_degraded_gpu_fails_in_the_textfile():
    v = recorded_verdict()
    # Another process on the GPU halves DGEMM: the recorded value, halved, must fail its reference.
    row = next(r for r in v.rows if r.metric == "fp64_tflops_min")
    ref = references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb")
    assert ref.metric("gemm", "fp64_tflops_min").assess(row.value)[0] == "pass"
    assert ref.metric("gemm", "fp64_tflops_min").assess(row.value / 2)[0] == "fail"
