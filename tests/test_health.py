"""The health probe's parsers and rules (gpuaccept.health) on outputs recorded on the H100 and the H200.

Failing cases are derived from the recorded outputs by changing one field in the test (a x8 link, an
uncorrectable ECC count, a pending row remapping, ...), never by editing files under docs/evidence. No XID
happened on the lent machines: the XID line is built in the test in the kernel's format (``NVRM: Xid
(PCI:dddd:bb:dd): N, pid=..., name=..., text``, as NVIDIA's XID catalogue and public kernel logs show it)
and appended to the recorded dmesg.
"""

import argparse
import copy
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RECORDED, REFERENCE_DIR

from gpuaccept import cli_probes, references
from gpuaccept.judge import health_rules
from gpuaccept.probe import health

POWER = RECORDED / "2026-11-22-h100-power"
H200_Q = RECORDED / "2026-11-22-h200" / "runs" / "smoke" / "nvidia-smi-q.txt"
GPUACCEPT = [sys.executable, "-m", "gpuaccept"]


@pytest.fixture(scope="module")
def h100():
    return health_rules.expectations(references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb"))


@pytest.fixture(scope="module")
def obs():
    """nvidia-smi -q at idle and 3 s into an FP64 GEMM on the H100."""
    idle = (POWER / "nvidia-smi-q-idle.txt").read_text()
    load = (POWER / "nvidia-smi-q-load.txt").read_text()
    return health.observe_smi_q(idle, load)


def rules(findings):
    return [f.rule for f in findings]


def test_recorded_h100_is_healthy(obs, h100):
    g = obs["gpus"][0]
    assert obs["driver_version"] == "580.159.04" and obs["cuda_version"] == "13.0"
    assert (g["pcie_gen_loaded"], g["pcie_width_loaded"], g["pcie_gen_max"], g["pcie_width_max"]) == (5, 16, 5, 16)
    assert g["ecc_enabled"] is True and g["persistence_mode"] is True
    assert g["ecc_uncorrectable_volatile"] == 0
    assert g["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert g["retired_pages"] is None  # N/A on Hopper: row remapping replaces page retirement
    assert g["serial"] == "1752824029119" and g["pci_bus_id"] == "00000000:00:06.0"
    xids = health.parse_xids((POWER / "dmesg.txt").read_text(), since=0.0, boot=0.0)
    findings, _notes = health_rules.judge(obs, h100, [(1, "the inventory")], xids)
    assert xids == [] and findings == []
    metrics, waived = health.metrics_of(obs, xids)
    assert metrics["pcie_gen_min"]["value"] == 5 and metrics["pcie_width_min"]["value"] == 16
    assert metrics["xid_events"]["value"] == 0
    assert waived == {"nvlink_links_up_min": "NVLink not read: nvidia-smi -q lists no link states (NVML could not be "
                      "loaded)"}  # fmt: skip


def test_recorded_h200_is_healthy():
    expect = health_rules.expectations(references.load_node_type(REFERENCE_DIR, "h200"))
    o = health.observe_smi_q(H200_Q.read_text(), H200_Q.read_text())
    findings, _ = health_rules.judge(o, expect, [(1, "the inventory")], [])
    assert o["gpus"][0]["name"] == "NVIDIA H200" and findings == []


def one(findings, rule):
    (f,) = [f for f in findings if f.rule == rule]
    assert f.gpu == 0 and f.pci_bus_id == "00000000:00:06.0" and f.serial == "1752824029119"
    assert f.message.startswith("GPU 0 (bus 00000000:00:06.0, serial 1752824029119): ")
    assert f.fix
    return f


@pytest.mark.parametrize(
    ("field", "value", "rule", "says"),
    [
        ("pcie_width_loaded", 8, "pcie_link", "PCIe link at x8 under load, expected x16"),
        ("pcie_gen_loaded", 4, "pcie_link", "PCIe link at Gen4 under load, expected Gen5"),
        ("pcie_gen_loaded", None, "pcie_link", "PCIe link not measured under load"),
        ("ecc_uncorrectable_volatile", 2, "ecc_uncorrectable", "2 uncorrectable ECC errors since the driver loaded"),
        ("ecc_enabled", False, "ecc_mode", "ECC is disabled"),
        ("persistence_mode", False, "persistence_mode", "persistence mode is disabled"),
        ("remapped_rows.pending", True, "row_remapping", "a row remapping is pending"),
        ("remapped_rows.failure", True, "row_remapping", "a row remapping failed"),
        ("retired_pages", {"single_bit": 40, "double_bit": 30, "pending": False}, "retired_pages", "70 retired pages"),
        ("retired_pages", {"single_bit": 0, "double_bit": 1, "pending": True}, "retired_pages", "is pending"),
    ],
)
def test_a_changed_field_fails_naming_the_gpu_and_the_fix(obs, h100, field, value, rule, says):
    bad = copy.deepcopy(obs)
    target, _, sub = field.partition(".")
    if sub:
        bad["gpus"][0][target][sub] = value
    else:
        bad["gpus"][0][target] = value
    findings, _ = health_rules.judge(bad, h100, [(1, "the inventory")], [])
    assert rules(findings) == [rule]
    assert says in one(findings, rule).message


def test_the_recorded_gemm_process_is_a_foreign_process(h100):
    """The second nvidia-smi -q was taken while gpuaccept-gemm ran: seen from a suite, a foreign process."""
    loaded = health.observe_smi_q((POWER / "nvidia-smi-q-load.txt").read_text(), None)
    assert [p["pid"] for p in loaded["gpus"][0]["processes"]] == [1965]
    loaded["gpus"][0]["pcie_gen_loaded"], loaded["gpus"][0]["pcie_width_loaded"] = 5, 16
    findings, _ = health_rules.judge(loaded, h100, [], [])
    f = one(findings, "foreign_process")
    assert "compute process pid 1965" in f.message and "kill 1965" in f.fix


def test_gpu_count_driver_and_cuda_versions(obs, h100):
    bad = copy.deepcopy(obs)
    bad["driver_version"], bad["cuda_version"] = "570.86.15", "12.8"
    findings, _ = health_rules.judge(bad, h100, [(8, "the inventory"), (1, "node type h100_sxm5_80gb")], [])
    assert rules(findings) == ["gpu_count", "driver_version", "cuda_version"]
    assert "1 GPUs found (00000000:00:06.0), the inventory says 8" in findings[0].message
    assert "driver 570.86.15 is not one the node type allows (580)" in findings[1].message


def test_nvlink_links_expected_by_the_node_type(obs, h100):
    findings, _ = health_rules.judge(obs, {**h100, "nvlink_links_up": 18}, [], [])
    assert "NVLink not read (nvidia-smi -q lists no link states), the node type expects 18 links up" in one(
        findings, "nvlink").message


XID = "NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def test_an_xid_line_after_the_given_time_fails(obs, h100):
    text = (POWER / "dmesg.txt").read_text() + f"[ 5000.123456] {XID}\n"
    boot = 1_700_000_000.0
    xids = health.parse_xids(text, since=boot + 4000, boot=boot)
    assert [(e["xid"], e["pci"], e["time_unix"]) for e in xids] == [(79, "0000:00:06", boot + 5000.123456)]
    findings, _ = health_rules.judge(obs, h100, [], xids)
    f = one(findings, "xid")
    assert "XID 79 (GPU has fallen off the bus) at 2023-11-14T23:36:40Z" in f.message
    assert "reseat the GPU" in f.fix
    assert "immediate action: reboot the node (the catalogue's RESTART_BM)" in f.message
    # The same line before the window is not counted.
    assert health.parse_xids(text, since=boot + 6000, boot=boot) == []


def test_xid_lines_from_journalctl_short_unix():
    text = f"1763795400.250000 node01 kernel: {XID}\n1763795300.000000 node01 kernel: NVRM: loading\n"
    (e,) = health.parse_xids(text, since=1763795000.0, boot=0.0)
    assert e["time_unix"] == 1763795400.25 and e["xid"] == 79
    assert health.parse_xids(text, since=1763795500.0, boot=0.0) == []


def test_an_unreadable_kernel_log_is_noted_and_waived(obs, h100):
    findings, notes = health_rules.judge(obs, h100, [], None)
    assert findings == [] and "kernel log unreadable" in notes[0]
    metrics, waived = health.metrics_of(obs, None)
    assert "xid_events" not in metrics and waived["xid_events"] == "kernel log unreadable"


def test_an_unreadable_kernel_log_makes_the_health_check_not_run(obs):
    """The judge does not pass a health check that could not look for XID events: NOT RUN, with the fix."""
    node_type = references.load_node_type(REFERENCE_DIR, "h100_sxm5_80gb")
    unreadable = {"xid_events": None, "unreadable": "dmesg: read kernel buffer failed: Operation not permitted",
                  "fix": health.KERNEL_LOG_FIX}  # fmt: skip
    doc = {"results": {"observations": obs, "kernel_log": unreadable}, "errors": []}
    findings, _notes, not_run = health_rules.assess(doc, node_type, 1)
    assert findings == [] and not_run.startswith("could not look for XID events: kernel log unreadable (dmesg")
    assert "CAP_SYSLOG" in not_run
    doc["results"]["kernel_log"] = {"read_with": "dmesg", "xid_events": []}
    assert health_rules.assess(doc, node_type, 1) == ([], [], None)


def test_since_and_versions():
    now = 1_763_800_000.0
    assert health.parse_since("24h", now=now) == now - 86400
    assert health.parse_since("30m", now=now) == now - 1800
    assert health.parse_since("boot", now=now, boot=123.0) == 123.0
    assert health.parse_since("1763795400") == 1763795400.0
    assert health.parse_since("2026-11-22T06:00:00Z") == 1795327200.0
    with pytest.raises(ValueError, match="--xid-since 'yesterday'"):
        health.parse_since("yesterday")
    allowed = health_rules.version_allowed
    assert allowed("580.159.04", ["580"]) and allowed("580.159.04", ["580.159.04"])
    assert not health_rules.version_allowed("5800.1", ["580"]) and not health_rules.version_allowed(None, ["580"])
    assert health.boot_time("100.5 200.0\n", now=1000.0) == 899.5


def test_smi_q_lists_every_process_of_a_gpu():
    text = (POWER / "nvidia-smi-q-load.txt").read_text()
    start = text.index("        Process ID")
    block = text[start : text.index("    Capabilities")]
    doubled = text.replace(block, block + block.replace("1965", "2001"))
    o = health.observe_smi_q(doubled, None)
    assert [p["pid"] for p in o["gpus"][0]["processes"]] == [1965, 2001]


def test_health_expectations_are_validated_with_file_and_line(tmp_path):
    src = (REFERENCE_DIR / "h100_sxm5_80gb.yaml").read_text()
    shutil.copytree(REFERENCE_DIR / "gpus", tmp_path / "gpus")  # the per-GPU layer the node type names
    bad = tmp_path / "h100_sxm5_80gb.yaml"
    bad.write_text(src.replace("  persistence_mode: enabled\n", "  persistence_mode: sometimes\n"))
    line = bad.read_text().splitlines().index("  persistence_mode: sometimes") + 1
    with pytest.raises(references.ReferenceError, match=rf"h100_sxm5_80gb.yaml:{line}: health.persistence_mode"):
        health_rules.expectations(references.load_file(bad))
    assert "  cuda_versions:\n    - '13.0'\n" in src
    bad.write_text(src.replace("  cuda_versions:\n    - '13.0'\n", ""))
    with pytest.raises(references.ReferenceError, match=r"health\.cuda_versions must be a non-empty list"):
        health_rules.expectations(references.load_file(bad))
    bad.write_text(src[: src.index("# Health expectations")])
    with pytest.raises(references.ReferenceError, match="has no 'health:' section"):
        health_rules.expectations(references.load_file(bad))
    res = subprocess.run(
        [*GPUACCEPT, "references", "--reference-dir", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0  # no health section: the references command itself does not demand one


def test_health_command_without_gpus_exits_1_and_waives(tmp_path):
    out = tmp_path / "health.json"
    res = subprocess.run(
        [*GPUACCEPT, "health", "--node-type", "h100_sxm5_80gb", "--output", str(out), "--xid-since", "boot"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    assert doc["tool"] == "gpuaccept-health" and doc["verification"]["passed"] is False
    assert "cannot read the GPUs" in doc["errors"][0]
    assert {"pcie_gen_min", "pcie_width_min"} <= set(doc["waived"])
    assert "pcie_gen_min" not in doc["metrics"]


def test_health_command_rejects_a_bad_since(tmp_path):
    res = subprocess.run(
        [*GPUACCEPT, "health", "--node-type", "h100_sxm5_80gb", "--output", str(tmp_path / "h.json"),
         "--xid-since", "last week"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 4 and "--xid-since 'last week'" in res.stderr
    assert not (tmp_path / "h.json").exists()


def test_a_secret_on_a_foreign_processs_command_line_never_reaches_a_file(tmp_path, monkeypatch, capsys, h100):
    """A real foreign process with a token in its arguments, on the recorded GPU: the document, the findings and
    what the command prints name it by pid, user and executable name only."""
    secret = "s3cr3t-token-4c1a"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"--api-key={secret}"])
    try:
        text = (POWER / "nvidia-smi-q-load.txt").read_text().replace("1965", str(proc.pid))
        loaded = health.observe_smi_q(text, None)
        loaded["gpus"][0]["pcie_gen_loaded"], loaded["gpus"][0]["pcie_width_loaded"] = 5, 16
        monkeypatch.setattr(health, "observe", lambda load_s, exempt: (loaded, []))
        monkeypatch.setattr(health, "read_kernel_log", lambda since: ("", "journalctl -k -o short-unix", []))
        out = tmp_path / "health.json"
        args = argparse.Namespace(
            load_s=0.0, quick=True, xid_since="boot", reference_dir=REFERENCE_DIR, node_type="h100_sxm5_80gb",
            expected_gpus=None, exempt_pid=[], output=out,
        )
        assert cli_probes.cmd_health(args) == 2  # probe, then the judge's rules: unhealthy
    finally:
        proc.kill()
        proc.wait()
    written, printed = out.read_text(), capsys.readouterr().out
    assert secret not in written and secret not in printed and "api-key" not in written + printed
    [p] = json.loads(written)["results"]["observations"]["gpus"][0]["processes"]
    exe = Path(os.path.realpath(sys.executable)).name
    assert p == {"pid": proc.pid, "user": pwd.getpwuid(os.getuid()).pw_name, "name": exe, "used_memory_bytes": None}
    assert f"compute process pid {proc.pid} of user {p['user']} ({exe}) runs on it" in printed


def test_a_foreign_process_without_a_readable_executable_is_named_by_comm(tmp_path):
    """Another user's /proc/PID/exe is unreadable without privilege: the kernel's comm names it; the command line
    (world-readable, with its secret) is never read."""
    pid_dir = tmp_path / "4242"
    pid_dir.mkdir()
    (pid_dir / "status").write_text("Name:\tjob\nUid:\t0\t0\t0\t0\n")
    (pid_dir / "comm").write_text("train.py\n")
    (pid_dir / "cmdline").write_bytes(b"python3\0train.py\0--password=hunter2\0")
    info = health.process_info(4242, proc=tmp_path)
    assert info == {"pid": 4242, "user": "root", "name": "train.py"}
    assert "hunter2" not in json.dumps(info)


def test_the_kernel_log_written_by_the_units_root_step_is_read(tmp_path, monkeypatch):
    """Run unprivileged, the probe reads the file the nightly unit's root step wrote (GPUACCEPT_KERNEL_LOG), with
    the tool that wrote it; a missing file is unreadable, not empty."""
    log = tmp_path / "kernel.log"
    log.write_text(
        f"{health.KERNEL_LOG_HEADER} journalctl -k -b -o short-unix\n"
        "1763900000.000000 gpu1 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=0, GPU has fallen off the bus.\n"
    )
    monkeypatch.setenv("GPUACCEPT_KERNEL_LOG", str(log))
    text, how, why = health.read_kernel_log(0.0)
    assert how == f"{log} (journalctl -k -b -o short-unix)" and why == []
    assert [e["xid"] for e in health.parse_xids(text, 0.0, 0.0)] == [79]
    log.unlink()
    text, how, why = health.read_kernel_log(0.0)
    assert text is None and "GPUACCEPT_KERNEL_LOG" in why[0] and "No such file" in why[0]
