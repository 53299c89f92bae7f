"""The judge's rules by name (declared in gpuaccept.checks, their functions in gpuaccept.judge.rules.registry and
.table): every key a check names is a declared rule with one function, a misspelt key fails when the checks table
loads, and a finding's text is the line the verdict has always printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuaccept import checks
from gpuaccept.checks import CHECKS, Check
from gpuaccept.judge import config_drift, fabric_rules
from gpuaccept.judge.rules import registry, table
from gpuaccept.judge.rules.finding import Finding, finding


def test_every_declared_rule_has_one_function_and_every_check_key_is_declared():
    assert set(table.RULES) == set(registry.NAMES)
    used = {name for c in CHECKS.values() for name in c.rules}
    assert used == set(registry.NAMES), "a declared rule no check names, or a check naming an undeclared one"


def test_a_misspelt_rule_key_is_refused():
    with pytest.raises(registry.UnknownRuleError, match=r"check 'hpl_cuda': unknown rule\(s\) 'hlp'"):
        Check("hpl_cuda", "HPL", ("commission",), True, "hpl.json", rules=("hlp",))


def test_a_misspelt_rule_key_in_the_checks_table_fails_its_import(tmp_path: Path):
    # The checks table with one key misspelt, loaded in a fresh interpreter: the import itself raises.
    source = Path(checks.__file__)
    text = source.read_text()
    assert text.count('rules=("memtest",)') == 1
    (tmp_path / "checks_misspelt.py").write_text(text.replace('rules=("memtest",)', 'rules=("memtset",)'))
    env = {"PYTHONPATH": f"{tmp_path}:{Path(checks.__file__).parents[1]}"}
    out = subprocess.run([sys.executable, "-c", "import checks_misspelt"], cwd=tmp_path, capture_output=True,
                         check=False, text=True, env=env)  # fmt: skip
    assert out.returncode == 1 and "UnknownRuleError: check 'memtest': unknown rule(s) 'memtset'" in out.stderr


def test_a_rule_registered_twice_or_undeclared_is_refused():
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("hpl")(lambda case: registry.Outcome())
    with pytest.raises(registry.UnknownRuleError, match="'nvlnk'"):
        registry.register("nvlnk")(lambda case: registry.Outcome())


def test_each_form_of_finding_keeps_its_line():
    gpu = {"index": 3, "pci_bus_id": "00000000:1B:00.0", "serial": "1654024031095"}
    f = finding("ecc_mode", gpu, "ECC disabled", "enable it")
    assert f.text() == "GPU 3 (bus 00000000:1B:00.0, serial 1654024031095): ECC disabled -> enable it"
    assert (f.rule, f.gpu, f.fix) == ("ecc_mode", 3, "enable it")
    assert f.with_action("reboot_node").record() == {
        "rule": "ecc_mode", "gpu": 3, "pci_bus_id": "00000000:1B:00.0", "serial": "1654024031095",
        "message": f.message, "fix": "enable it", "action": "reboot_node"}  # fmt: skip
    port = fabric_rules.finding("port_state", "mlx5_ib0 port 1", "state DOWN, not ACTIVE")
    assert port.text() == f"fabric: mlx5_ib0 port 1: state DOWN, not ACTIVE -> {fabric_rules.FIX['port_state']}"
    assert fabric_rules.finding("gpudirect", "", "no GPUDirect RDMA").text().startswith("fabric: no GPUDirect")
    assert Finding("hpl", "hpl.json: no HPL run recorded", file="hpl.json").text() == "hpl.json: no HPL run recorded"
    (pin,) = config_drift.pin_differences({"mig_mode_current": "enabled"}, {"mig_mode": "disabled"})
    assert (pin.rule, pin.key, pin.value, pin.expected) == ("pin", "mig_mode_current", "enabled", "disabled")
    assert pin.message == "mig_mode_current is enabled, the node type pins disabled" and "nvidia-smi" in str(pin.fix)


def test_the_document_rules_give_the_gpu_and_the_fix_apart():
    # Built from the layouts of docs/benchmark-json.md: the power check's per-GPU throttle seconds, the memory test's
    # per-GPU counts.
    from gpuaccept.judge.rules import document  # noqa: PLC0415

    power = {"devices": [{"index": 1, "pci_bus_id": "00000000:1B:00.0", "serial": "1654024031095"}],
             "results": {"per_gpu": [{"gpu": 1, "throttled_s": {"hw_slowdown": 12.0, "sw_power_cap": 30.0},
                                      "temp_c_max": 71}]}}  # fmt: skip
    (f,) = document.throttle_findings(power, Path("power_check.json"))
    assert (f.rule, f.gpu, f.key, f.file) == ("throttle", 1, "hw_slowdown", "power_check.json")
    assert f.fix == document.FAULT_REASONS["hw_slowdown"] and f.text() == document.throttle_problems(
        power, Path("power_check.json"))[0]  # fmt: skip
    memtest = {"devices": [{"index": 0, "pci_bus_id": "00000000:18:00.0", "uuid": "GPU-0"}],
               "parameters": {"passes": 1}, "metrics": {"errors_total": {"value": 3, "unit": "count"}},
               "results": {"per_gpu": [{"gpu": 0, "mismatches": 3, "passes": 1, "tested_bytes": 1 << 30}]}}  # fmt: skip
    (bad,) = document.memtest_findings(memtest, Path("memtest.json"))
    assert (bad.gpu, bad.fix) == (0, document.MEMTEST_FIX) and bad.message.startswith("GPU 0 (bus 00000000:18:00.0")
    assert [x.text() for x in document.memtest_findings(memtest, Path("memtest.json"))] == document.memtest_problems(
        memtest, Path("memtest.json"))  # fmt: skip
