"""gpuaccept crosscheck: parsers and comparison on the outputs recorded on the H100 (tests/fixtures/recorded/
2026-11-22-h100-crosscheck/first-run, copied from docs/evidence: gpuaccept-bw, nvbandwidth v0.8 -j and the CUDA
samples' v13.0 p2pBandwidthLatencyTest, run side by side at 256 MiB)."""

from __future__ import annotations

import copy
import json
import stat
from pathlib import Path

import pytest
from conftest import RECORDED

from gpuaccept import cli
from gpuaccept.probe import crosscheck
from gpuaccept.probe.crosscheck import CrosscheckInputError

FIRST_RUN = RECORDED / "2026-11-22-h100-crosscheck" / "first-run"
RUN = FIRST_RUN / "run1"
H200X2_BW = RECORDED / "2026-11-22-h200x2" / "bandwidth.json"


def _bw() -> dict:
    return json.loads((RUN / "gpuaccept-bw.json").read_text())


def _nvb() -> dict[str, crosscheck.NvbTestcase]:
    return crosscheck.parse_nvbandwidth((RUN / "nvbandwidth.json").read_text(), "nvbandwidth.json")


def _p2p() -> dict[str, list[list[float]]]:
    return crosscheck.parse_p2p((RUN / "p2pBandwidthLatencyTest.txt").read_text(), "p2p.txt")


def test_parse_nvbandwidth_recorded():
    cases = _nvb()
    assert cases["host_to_device_memcpy_ce"].matrix == [[53.4579]]
    assert cases["device_to_host_memcpy_ce"].status == "Passed"
    assert cases["device_local_copy"].matrix[0][0] == pytest.approx(1491.31)
    # One GPU: nvbandwidth waives the peer test cases.
    assert cases["device_to_device_memcpy_write_ce"].status == "Waived"
    assert cases["device_to_device_memcpy_write_ce"].matrix == []


def test_parse_p2p_recorded():
    m = _p2p()
    assert m["unidir_p2p_disabled"] == [[2974.05]]
    assert m["unidir_p2p_writes"] == [[2984.21]]
    assert m["bidir_p2p_enabled"] == [[3024.61]]
    assert m["latency_p2p_disabled_gpu"] == [[2.18]]
    assert m["latency_p2p_disabled_cpu"] == [[6.40]]


CROSSCHECK = FIRST_RUN.parent
ALL_RUNS = sorted(
    [*CROSSCHECK.glob("first-run/run*"), *CROSSCHECK.glob("second-run/run*"),
     *CROSSCHECK.glob("role/results/*/*-crosscheck")]
)


def test_every_recorded_run_agrees():
    assert len(ALL_RUNS) == 8
    for run in ALL_RUNS:
        doc = crosscheck.compare_files(
            str(run / "gpuaccept-bw.json"), str(run / "nvbandwidth.json"), str(run / "p2pBandwidthLatencyTest.txt")
        )
        assert doc["verdict"] == "PASS", (run, doc["reason"])
        assert [(c["what"], c["tool"]) for c in doc["comparisons"]] == [
            ("h2d_pinned", "nvbandwidth"),
            ("d2h_pinned", "nvbandwidth"),
            ("d2d", "nvbandwidth"),
            ("d2d", "p2pBandwidthLatencyTest"),
        ]
        assert all(abs(c["deviation"]) < 0.05 for c in doc["comparisons"])
        assert {"what": "p2p", "reason": "one GPU: no peers"} in doc["not_compared"]


def test_p2p_sample_diagonal_is_halved():
    """The sample counts read + write of a copy inside one GPU: 2974 GB/s printed, 1487 GB/s copied."""
    doc = crosscheck.compare(_bw(), _nvb(), _p2p())
    (entry,) = [c for c in doc["comparisons"] if c["tool"] == "p2pBandwidthLatencyTest"]
    assert entry["theirs_printed_gb_per_s"] == pytest.approx(2974.05)
    assert entry["theirs_gb_per_s"] == pytest.approx(1487.025)
    assert entry["theirs_scale"] == 0.5


def test_disagreement_fails_and_names_the_figure():
    """The recorded document with its D2D figure lowered by 10% (as a broken benchmark would report it)."""
    bw = _bw()
    for entry in bw["results"]["sweep"]:
        if entry["case"] == "d2d_oneway":
            for point in entry["points"]:
                point["gb_per_s"] *= 0.9
    doc = crosscheck.compare(bw, _nvb(), _p2p())
    assert doc["verdict"] == "FAIL"
    assert "d2d GPU 0" in doc["reason"] and "device_local_copy" in doc["reason"] and "tolerance 5%" in doc["reason"]
    assert [c["agree"] for c in doc["comparisons"]] == [True, True, False, False]


def test_tolerance_is_respected():
    # h2d differs by about 1% in run1: a 0.5% tolerance fails it, 5% passes it.
    assert crosscheck.compare(_bw(), _nvb(), _p2p(), 0.005)["verdict"] == "FAIL"
    assert crosscheck.compare(_bw(), _nvb(), _p2p(), 0.05)["verdict"] == "PASS"
    with pytest.raises(ValueError, match="tolerance"):
        crosscheck.compare(_bw(), _nvb(), _p2p(), 5)


def test_nothing_compared_is_not_run():
    doc = crosscheck.compare(_bw(), None, None, not_run={"nvbandwidth": "exited 1", "p2p": "not found"})
    assert doc["verdict"] == "NOT RUN"
    assert "nvbandwidth: exited 1" in doc["reason"]
    assert doc["comparisons"] == []


def test_one_tool_missing_still_compares_the_other():
    doc = crosscheck.compare(_bw(), _nvb(), None, not_run={"p2p": "exited 1"})
    assert doc["verdict"] == "PASS"
    assert len(doc["comparisons"]) == 3
    assert any("p2pBandwidthLatencyTest did not run: exited 1" in s["reason"] for s in doc["not_compared"])


def test_peers_are_compared_where_both_have_them():
    """Two GPUs: our recorded H200 x2 document against an nvbandwidth matrix made up for this test (no run of
    NVIDIA's tools on two GPUs is recorded): the matrix orientation [src][dst] and the N/A diagonal."""
    bw = json.loads(H200X2_BW.read_text())
    write = {p["src"]: p["write_gb_per_s"] for p in bw["results"]["peer"]}
    nvb = {
        "device_to_device_memcpy_write_ce": crosscheck.NvbTestcase(
            "device_to_device_memcpy_write_ce", "Passed", [[None, write[0] * 1.01], [write[1] * 0.8, None]]
        )
    }
    doc = crosscheck.compare(bw, nvb, None)
    peers = [c for c in doc["comparisons"] if c["what"] == "p2p_write"]
    assert [(c["src"], c["dst"], c["agree"]) for c in peers] == [(0, 1, True), (1, 0, False)]
    assert doc["verdict"] == "FAIL" and "p2p_write GPU 1->0" in doc["reason"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no JSON document"),
        ('{"nvbandwidth": {"testcases": [', "not valid JSON at line 1"),
        ('{"other": 1}', "no 'nvbandwidth' object"),
        ('{"nvbandwidth": {"error": "cuInit failed"}}', "nvbandwidth reported an error: cuInit failed"),
        ('{"nvbandwidth": {"testcases": []}}', "no test cases"),
        (
            '{"nvbandwidth": {"testcases": [{"name": "x", "bandwidth_matrix": [["fast"]]}]}}',
            "x: bandwidth_matrix[0][0] = 'fast' is not a number",
        ),
    ],
)
def test_nvbandwidth_bad_input(text: str, message: str):
    with pytest.raises(CrosscheckInputError, match=r"^nvb\.json: .*" + __import__("re").escape(message)):
        crosscheck.parse_nvbandwidth(text, "nvb.json")


def test_p2p_bad_input():
    recorded = (RUN / "p2pBandwidthLatencyTest.txt").read_text()
    cut = recorded.replace("     0 2974.05 \n", "")
    with pytest.raises(CrosscheckInputError, match=r"p2p\.txt: line \d+: matrix 'unidir_p2p_disabled' has 0 rows"):
        crosscheck.parse_p2p(cut, "p2p.txt")
    extra = recorded.replace("     0 2974.05 \n", "     0 2974.05 12.0 \n")
    with pytest.raises(CrosscheckInputError, match="2 values in a row of matrix 'unidir_p2p_disabled' with 1 GPUs"):
        crosscheck.parse_p2p(extra, "p2p.txt")
    with pytest.raises(CrosscheckInputError, match="no bandwidth matrix found"):
        crosscheck.parse_p2p("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nCuda failure p2p.cu:60\n", "p2p.txt")


def test_cli_exit_status_and_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "crosscheck.json"
    args = ["crosscheck", "--bw", str(RUN / "gpuaccept-bw.json"), "--nvbandwidth", str(RUN / "nvbandwidth.json")]
    assert cli.main([*args, "--p2p", str(RUN / "p2pBandwidthLatencyTest.txt"), "--output", str(out)]) == 0
    assert json.loads(out.read_text())["verdict"] == "PASS"
    assert "cross-check: PASS" in capsys.readouterr().out
    assert cli.main([*args, "--tolerance", "0.001"]) == 1
    assert cli.main(["crosscheck", "--bw", str(RUN / "gpuaccept-bw.json")]) == 3
    assert cli.main(["crosscheck", "--bw", str(tmp_path / "missing.json")]) == 4
    assert "missing.json: the gpuaccept-bw document is missing" in capsys.readouterr().err
    assert cli.main(["crosscheck", "--bw", str(RUN / "nvbandwidth.json")]) == 4
    assert "not a gpuaccept-bw document" in capsys.readouterr().err


def _replay(path: Path, recorded: Path, rc: int = 0, also_json: bool = False) -> str:
    """A stand-in for a tool that prints a recorded output (the runner's plumbing is what is tested here)."""
    lines = ["#!/bin/sh", f"cat '{recorded}'"]
    if also_json:  # gpuaccept-bw: copy the recorded document to the --output argument
        lines.append(f'while [ $# -gt 1 ]; do [ "$1" = --output ] && cp \'{recorded}\' "$2"; shift; done')
        lines[1] = "echo gpuaccept-bw table"
    lines.append(f"exit {rc}")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_runner_keeps_raw_outputs_and_reports_a_failed_tool(tmp_path: Path):
    bw = _replay(tmp_path / "bw", RUN / "gpuaccept-bw.json", also_json=True)
    nvb = _replay(tmp_path / "nvb", RUN / "nvbandwidth.json")
    p2p = _replay(tmp_path / "p2p", RUN / "p2pBandwidthLatencyTest.txt", rc=1)
    doc = crosscheck.run_and_compare(bw, nvb, p2p, tmp_path / "out")
    assert doc["verdict"] == "PASS"
    assert doc["not_run"]["p2p"].startswith(f"{p2p} exited 1")
    assert doc["commands"]["nvbandwidth"][:4] == [nvb, "-j", "-b", "256"]
    assert doc["commands"]["p2p"] == [p2p, "--numElems=67108864"]
    for name in ("gpuaccept-bw.json", "nvbandwidth.json", "p2pBandwidthLatencyTest.txt", "crosscheck.json"):
        assert (tmp_path / "out" / name).is_file(), name
    assert json.loads((tmp_path / "out" / "crosscheck.json").read_text())["verdict"] == "PASS"


def test_runner_without_our_figures_is_not_run_and_bad_copies_fail(tmp_path: Path):
    nvb = _replay(tmp_path / "nvb", RUN / "nvbandwidth.json")
    p2p = _replay(tmp_path / "p2p", RUN / "p2pBandwidthLatencyTest.txt")
    doc = crosscheck.run_and_compare(str(tmp_path / "no-such-bw"), nvb, p2p, tmp_path / "a")
    assert doc["verdict"] == "NOT RUN" and "not found" in doc["reason"]
    bad = _replay(tmp_path / "bw", RUN / "gpuaccept-bw.json", rc=2, also_json=True)
    doc = crosscheck.run_and_compare(bad, nvb, p2p, tmp_path / "b")
    assert doc["verdict"] == "FAIL" and "verification failed" in doc["reason"]


def test_sizes_must_be_whole_mebibytes():
    with pytest.raises(ValueError, match="multiple of 1 MiB"):
        crosscheck.tool_commands("a", "b", "c", Path("."), 1000)
    assert crosscheck._size("256MiB") == 256 << 20
    commands = copy.deepcopy(crosscheck.tool_commands("a", "b", "c", Path("o"), 1 << 30))
    assert commands["p2p"] == ["c", "--numElems=268435456"]
