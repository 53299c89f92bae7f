"""``gpuaccept health-check`` (the passive check a scheduler runs) on the output recorded on the H200: its exit
status and one line (node-problem-detector's custom plugin contract: 0 ok, 1 problem, else unknown), the JSON
record, XIDs judged by the XID catalogue's immediate action and kept open until a reboot or --clear-xids, the PCIe
replay and AER counters' growth, a hang, SXIDs only where NVSwitches are.

Failing cases change one field of the recorded output in the test; the XID and SXID lines are built in the
kernel's format (``NVRM: Xid (PCI:dddd:bb:dd): N, ...``; ``nvidia-nvswitchN: SXid (PCI:...): N, Fatal, ...``) and
the AER files in the kernel's layout (``/sys/bus/pci/devices/<function>/aer_dev_*``: one ``NAME COUNT`` line per
error, then ``TOTAL_ERR_*``), as no fault happened on the lent machines.
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import RECORDED, REFERENCE_DIR, ROOT

from gpuaccept import cli, references
from gpuaccept.judge import health_rules, pcie_rules, xid_actions
from gpuaccept.probe import health, pcie

H200_Q = RECORDED / "2026-11-22-h200" / "runs" / "smoke" / "nvidia-smi-q.txt"
BUS = "0000:00:06"  # the recorded H200's bus, as the XID line spells it
GPUACCEPT = [sys.executable, "-m", "gpuaccept"]


class Node:
    """A node as the health check sees it: a `nvidia-smi -q` output, a kernel log and an AER tree, built in tmp."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp, self.smi, self.log = tmp, tmp / "smi-q.txt", tmp / "kernel.log"
        self.smi.write_text(H200_Q.read_text())
        self.log.write_text(f"{health.KERNEL_LOG_HEADER} journalctl -k -o short-unix\n")
        self.sysfs = tmp / "sys"
        monkeypatch.setenv(health.KERNEL_LOG_ENV, str(self.log))
        monkeypatch.setenv(pcie.SYSFS_ENV, str(self.sysfs))
        self.state = tmp / "state"

    def edit(self, old: str, new: str) -> None:
        text = self.smi.read_text()
        assert old in text, old
        self.smi.write_text(text.replace(old, new, 1))

    def kernel(self, line: str, when: float | None = None) -> None:
        with self.log.open("a") as f:
            f.write(f"{time.time() if when is None else when:.6f} node kernel: {line}\n")

    def aer(self, correctable: int = 0, nonfatal: int = 0, fatal: int = 0) -> None:
        dev = self.sysfs / "0000:00:06.0"
        dev.mkdir(parents=True, exist_ok=True)
        (dev / "aer_dev_correctable").write_text(f"RxErr 0\nBadTLP {correctable}\nTOTAL_ERR_COR {correctable}\n")
        (dev / "aer_dev_nonfatal").write_text(f"Undefined 0\nCmpltTO {nonfatal}\nTOTAL_ERR_NONFATAL {nonfatal}\n")
        (dev / "aer_dev_fatal").write_text(f"Undefined 0\nSurpDown {fatal}\nTOTAL_ERR_FATAL {fatal}\n")

    def check(self, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, str, dict]:
        status = cli.main(["health-check", "--node-type", "h200", "--state-dir", str(self.state),
                           "--from-smi-q", str(self.smi), *extra])  # fmt: skip
        out = capsys.readouterr().out
        return status, out, json.loads((self.state / "health-check.json").read_text())


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path, monkeypatch)


XID = "NVRM: Xid (PCI:0000:00:06): {xid}, pid=1234, name=python3, {what}"


def test_a_healthy_recorded_node_is_ok_in_one_line_and_a_record(node, capsys):
    node.aer()
    status, out, record = node.check(capsys)
    assert status == 0 and out == "gpuaccept health-check: OK: 1 GPUs healthy (node type h200)\n"
    assert record["status"] == "ok" and record["findings"] == [] and record["line"] == out.strip()
    gpu = record["observations"]["results"]["observations"]["gpus"][0]
    assert gpu["pcie_counters"] == {"replay": 0, "replay_why": None,
                                    "aer": {"correctable": 0, "nonfatal": 0, "fatal": 0}, "aer_why": None}
    assert "first check here" in record["warnings"][0]
    assert "Analyzing Xid Errors with the Xid Catalog" in record["xid_catalogue"]


W = " " * 16  # the recorded layout's indent of a field under ``PCI`` / ``GPU Link Info``


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        ("ECC Mode\n        Current                                        : Enabled",
         "ECC Mode\n        Current                                        : Disabled", "ecc_mode"),
        (f"Link Width\n{W}Max{' ' * 36}: 16x\n{W}Current{' ' * 32}: 16x",
         f"Link Width\n{W}Max{' ' * 36}: 16x\n{W}Current{' ' * 32}: 8x", "pcie_link"),
    ],
)
def test_a_changed_field_is_a_problem_naming_the_rule_and_gpu(node, capsys, old, new, rule):
    node.edit(old, new)
    status, out, record = node.check(capsys)
    assert status == 1 and out.startswith(f"gpuaccept health-check: PROBLEM: {rule} GPU 0")
    assert [f["rule"] for f in record["findings"]] == [rule]


def test_xids_are_judged_by_the_catalogues_action_and_stay_open_until_cleared(node, capsys):
    node.check(capsys)  # the first check: XIDs from here on
    node.kernel(XID.format(xid=13, what="Graphics Exception: ESR 0x12"))
    status, out, record = node.check(capsys)
    assert status == 0, out  # RESTART_APP in the catalogue: the node stays in service, a warning
    assert any("XID 13 (Graphics Engine Exception)" in w and "restart the application" in w
               for w in record["warnings"])
    node.kernel(XID.format(xid=79, what="GPU has fallen off the bus."))
    status, out, record = node.check(capsys)
    assert status == 1 and "xid GPU 0 (reboot_node)" in out  # RESTART_BM in the catalogue
    (f,) = record["findings"]
    assert f["action"] == "reboot_node" and "reseat the GPU" in f["fix"] and "drain the node and reboot it" in f["fix"]
    status, out, _ = node.check(capsys)  # the next check: still open (no reboot since)
    assert status == 1
    status, out, _ = node.check(capsys, "--clear-xids")
    assert status == 0, out


def test_an_xid_the_catalogue_gives_no_action_is_unknown_investigate_and_xid_45_follows_its_workflow(node, capsys):
    node.check(capsys)
    node.kernel(XID.format(xid=167, what="PCIE_FATAL_TIMEOUT"))  # its row in the catalogue gives no action
    status, out, record = node.check(capsys, "--clear-xids")
    assert status == 1 and "xid GPU 0 (unknown: investigate)" in out
    assert "look the XID up in NVIDIA's XID catalogue" in record["findings"][0]["fix"]
    node.check(capsys, "--clear-xids")
    now = time.time()
    node.kernel(XID.format(xid=45, what="Ch 00000010, engmask 00000101"), now)  # alone: restart the fabric manager
    status, out, record = node.check(capsys)
    assert status == 1 and "xid GPU 0 (restart_fabric_manager)" in out, out
    assert "WORKFLOW_XID_45: solo, RESTART_FM" in record["findings"][0]["message"]
    node.check(capsys, "--clear-xids")
    node.kernel(XID.format(xid=94, what="Contained: SM (0x1)"), now + 1)  # with XID 94: 45 ignored, 94 judged
    node.kernel(XID.format(xid=45, what="Ch 00000010"), now + 2)
    status, out, record = node.check(capsys)
    assert status == 0, out  # XID 94: RESTART_APP, a warning; XID 45 not solo: IGNORE
    assert sum("not solo, IGNORE" in w for w in record["warnings"]) == 1


def test_an_open_xid_closes_with_a_reboot(node, capsys, monkeypatch):
    node.check(capsys)
    node.kernel(XID.format(xid=2, what="unused"))
    status, _out, record = node.check(capsys)
    assert status == 1 and record["findings"][0]["action"] == "hardware_inspection"
    monkeypatch.setattr(health, "boot_time", time.time)  # the node rebooted after the event
    assert node.check(capsys)[0] == 0


def test_pcie_replays_beyond_dcgms_limit_fail_and_at_it_pass(node, capsys):
    def replays(n: int) -> str:
        return f"Replays Since Reset{' ' * 28}: {n}\n"

    node.edit(replays(0), replays(5))
    node.check(capsys)
    node.edit(replays(5), replays(85))
    status, out, _ = node.check(capsys)
    assert status == 0, out  # 80 new replays: DCGM's PCIe test allows them
    node.edit(replays(85), replays(166))
    status, out, record = node.check(capsys)
    assert status == 1 and "pcie_replay GPU 0" in out
    assert "81 PCIe replays since the last check (85 -> 166; allowed 80" in record["findings"][0]["message"]


def test_aer_uncorrectable_growth_fails_correctable_is_noted_and_absent_files_are_not_run(node, capsys):
    node.aer()
    node.check(capsys)
    node.aer(correctable=3)
    status, _out, record = node.check(capsys)
    assert status == 0 and any("3 new correctable PCIe AER errors" in w for w in record["warnings"])
    node.aer(correctable=3, nonfatal=1)
    status, out, record = node.check(capsys)
    assert status == 1 and "pcie_aer GPU 0" in out and "1 nonfatal" in record["findings"][0]["message"]
    for f in (node.sysfs / "0000:00:06.0").iterdir():
        f.unlink()
    status, _out, record = node.check(capsys)
    assert status == 0
    (why,) = [w for w in record["warnings"] if w.startswith("pcie_aer_growth")]
    assert "NOT RUN" in why and "aer_dev_correctable" in why  # never counted as 0


def test_a_busy_gpu_at_idle_power_is_a_hang(node, capsys):
    node.edit("        GPU                                            : 0 %",
              "        GPU                                            : 100 %")
    node.edit("Instantaneous Power Draw                       : 125.10 W",
              "Instantaneous Power Draw                       : 90.00 W")
    status, out, record = node.check(capsys)
    bound = references.load_node_type(REFERENCE_DIR, "h200").metric("power", "idle_power_max_w").upper_bound
    assert status == 1 and "gpu_hang GPU 0" in out and f"idle bound ({bound:g} W)" in record["findings"][0]["message"]


def test_a_job_on_the_gpus_is_neither_a_foreign_process_nor_a_hang(tmp_path, monkeypatch, capsys):
    """The H100's `nvidia-smi -q` recorded 3 s into an FP64 GEMM (gpuaccept-gemm on the GPU, 100 % busy at load
    power): the passive check runs beside the jobs, so their processes are no finding, and a busy GPU drawing
    power is not hung."""
    node = Node(tmp_path, monkeypatch)
    node.smi.write_text((RECORDED / "2026-11-22-h100-power" / "nvidia-smi-q-load.txt").read_text())
    status = cli.main(["health-check", "--node-type", "h100_sxm5_80gb", "--state-dir", str(node.state),
                       "--from-smi-q", str(node.smi)])  # fmt: skip
    record = json.loads((node.state / "health-check.json").read_text())
    gpu = record["observations"]["results"]["observations"]["gpus"][0]
    assert [p["pid"] for p in gpu["processes"]] == [1965] and gpu["utilization_gpu_pct"] == 100
    assert status == 0, capsys.readouterr().out


def test_an_unreadable_kernel_log_is_unknown(node, capsys, monkeypatch):
    monkeypatch.setenv(health.KERNEL_LOG_ENV, str(node.tmp / "missing.log"))
    status, out, record = node.check(capsys)
    assert status == 2 and out.startswith("gpuaccept health-check: UNKNOWN: could not look for XID events")
    assert record["status"] == "unknown"
    status, _out, record = node.check(capsys, "--slurm", "--slurm-node", "n1")
    assert status == 2 and record["slurm"].startswith("unchanged: the check could not look")  # no scontrol call


def test_sxids_only_where_nvlink_ends_at_an_nvswitch():
    line = "nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 24007, Fatal, Link 44 sourcetrack timeout error (First)"
    (e,) = health.parse_sxids(f"1763900000.000000 n kernel: {line}\n", 0.0, 0.0)
    assert (e["sxid"], e["severity"], e["pci"]) == (24007, "Fatal", "0000:c1:00")
    gpu = {"index": 0, "nvlink": {"supported": True, "links": [{"link": 0, "remote_type": "gpu"}]}}
    findings: list = []
    assert xid_actions.judge_sxids([e], [gpu], findings, []).startswith("not applicable") and findings == []
    gpu["nvlink"]["links"][0]["remote_type"] = "switch"
    assert xid_actions.judge_sxids([e], [gpu], findings, []) == "1 SXID event(s)"
    assert findings[0].rule == "sxid" and "SXID 24007 (Fatal)" in findings[0].message


def test_the_suites_health_rule_names_the_action_and_warns_on_restart_app():
    obs = health.observe_smi_q(H200_Q.read_text(), H200_Q.read_text())
    expect = health_rules.expectations(references.load_node_type(REFERENCE_DIR, "h200"))
    xids = health.parse_xids(f"1.0 n kernel: {XID.format(xid=8, what='timeout')}\n"
                             f"2.0 n kernel: {XID.format(xid=79, what='off the bus')}\n", 0.0, 0.0)  # fmt: skip
    findings, notes = health_rules.judge(obs, expect, [], xids)
    assert [(f.rule, f.action) for f in findings] == [("xid", "reboot_node")]
    assert any("XID 8 (GPU stopped processing)" in n for n in notes)


def test_suite_pcie_growth_old_facts_waive_new_unreadable_are_not_run_and_growth_fails():
    old = {"gpus": [{"index": 0, "uuid": "G0"}]}
    assert pcie_rules.growth(old, old, [], []) == dict.fromkeys(pcie_rules.FIGURES, (None, pcie_rules.NO_READING))
    unread = {"replay": None, "replay_why": "NVML: Not Supported (3)", "aer": None, "aer_why": "no AER files"}
    before = {"gpus": [{"index": 0, "uuid": "G0", "pcie_counters": unread}]}
    got = pcie_rules.growth(before, before, [], [])
    assert got["pcie_replay_growth"][0] is None and got["pcie_replay_growth"][1].startswith("NOT RUN: GPU 0")
    counters = {"replay": 1, "replay_why": None, "aer": {"correctable": 0, "nonfatal": 0, "fatal": 0}, "aer_why": None}
    a = {"gpus": [{"index": 0, "uuid": "G0", "pcie_counters": counters}]}
    b = {"gpus": [{"index": 0, "uuid": "G0", "pcie_counters": {**counters, "replay": 82}}]}
    findings: list = []
    assert pcie_rules.growth(a, b, findings, [])["pcie_replay_growth"] == (81, "")
    assert findings[0].rule == "pcie_replay" and "during the suite" in findings[0].message


def test_the_node_problem_detector_plugin_in_the_docs_runs_as_documented(tmp_path):
    """The custom plugin configuration docs/checks/health.md gives: valid JSON, its rule runs the shipped wrapper,
    and the wrapper answers as the plugin contract says (0 ok, 1 problem, other unknown; one line of output)."""
    text = (ROOT / "docs" / "checks" / "health.md").read_text()
    block = re.search(r"<!-- npd-plugin -->\n```json\n(.*?)```", text, re.S)
    assert block, "docs/checks/health.md lost its node-problem-detector configuration block"
    config = json.loads(block.group(1))
    assert config["plugin"] == "custom"
    rules = config["rules"]
    assert {r["type"] for r in rules} == {"permanent"} and rules[0]["path"].endswith("scripts/health-check.sh")
    conf = tmp_path / "health-check.env"
    log = tmp_path / "kernel.log"
    log.write_text(f"{health.KERNEL_LOG_HEADER} journalctl -k -o short-unix\n")
    conf.write_text(f"GPUACCEPT_VENV={sys.prefix}\nGPUACCEPT_NODE_TYPE=h200\nGPUACCEPT_STATE_DIR={tmp_path}/state\n"
                    f"GPUACCEPT_HEALTH_CHECK_ARGS='--from-smi-q {H200_Q}'\n")  # fmt: skip
    env = {**os.environ, "GPUACCEPT_HEALTH_CHECK_ENV": str(conf), health.KERNEL_LOG_ENV: str(log),
           "PYTHONPATH": str(ROOT / "src")}  # fmt: skip

    def plugin() -> subprocess.CompletedProcess:
        return subprocess.run([ROOT / "scripts" / "health-check.sh"], env=env, capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip

    res = plugin()
    assert res.returncode == 0 and res.stdout.count("\n") == 1 and res.stdout.startswith("gpuaccept health-check: OK")
    with log.open("a") as f:
        f.write(f"{time.time():.6f} n kernel: {XID.format(xid=79, what='GPU has fallen off the bus.')}\n")
    res = plugin()
    assert res.returncode == 1 and res.stdout.count("\n") == 1 and "PROBLEM: xid GPU 0" in res.stdout
    env[health.KERNEL_LOG_ENV] = str(tmp_path / "gone.log")
    res = plugin()
    assert res.returncode == 2 and res.stdout.startswith("gpuaccept health-check: UNKNOWN")
    conf.unlink()
    res = plugin()
    assert res.returncode == 2 and "no settings file" in res.stdout
