"""NVLink health and configuration drift (docs/checks/health.md, "NVLink" and "Configuration"; docs/fleet.md).

Recorded: the ``nvidia-smi -q`` of the H100, the H200 and the 2 x H200 machine (tests/fixtures/recorded), whose
configuration (VBIOS, InfoROM, ECC, persistence, power limits, MIG) is read here as the facts read it; and the
2 x H200 machine's node facts (its GPUs' identities).

Built in the test, and said so where they are: the NVML answers the NVLink reader is fed (no NVLink reading of a
multi-GPU machine is recorded yet: docs/evidence/2026-11-27-nvlink/device_nvlink.sh records one), the NVLink
snapshots before and after a suite made from them, every changed field (a VBIOS, a power limit, a counter that
grew, a link that went down), and the fleet laid out from the recorded files with one field changed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pynvml
import pytest
import yaml
from conftest import RECORDED, REFERENCE_DIR

from gpuaccept import references
from gpuaccept.judge import config_drift, health_rules, nvlink_rules, pcie_rules
from gpuaccept.probe import gpuconfig, health, nvlink
from gpuaccept.probe.nvml import Nvml
from gpuaccept.results import fleet, health_expect

H200X2 = RECORDED / "2026-11-22-h200x2"
H100_Q = RECORDED / "2026-11-22-h100-power" / "nvidia-smi-q-idle.txt"
H200_Q = RECORDED / "2026-11-22-h200" / "runs" / "smoke" / "nvidia-smi-q.txt"
# An accepted H200 nightly run (its verdict stands for each node of the fleet laid out below).
H200_RUN = RECORDED / "2026-11-25-trust" / "results" / "h200-c" / "vm" / "20261125T120149Z-nightly"
GPUACCEPT = [sys.executable, "-m", "gpuaccept"]


# ------------------------------------------------------------------------------------------------
# The configuration of the recorded GPUs.


def smi_config(path):
    return [gpuconfig.from_smi_q(g) for g in health.parse_smi_q(path.read_text())["GPUs"].values()]


def test_the_recorded_gpus_configuration_as_nvidia_smi_q_gives_it():
    (h100,) = smi_config(H100_Q)
    assert (h100["vbios_version"], h100["inforom_image_version"]) == ("96.00.DA.00.0C", "G520.0200.00.05")
    assert (h100["inforom_oem_version"], h100["inforom_power_version"]) == ("2.1", None)
    assert h100["power_limit_w"] == h100["power_default_limit_w"] == h100["power_enforced_limit_w"] == 700.0
    assert (h100["ecc_mode_current"], h100["ecc_mode_pending"], h100["persistence_mode"]) == ("enabled",) * 3
    assert (h100["mig_mode_current"], h100["mig_mode_pending"]) == ("disabled", "disabled")
    assert h100["unavailable"] == {"inforom_power_version": "nvidia-smi -q: N/A or absent"}
    pair = smi_config(H200X2 / "nvidia-smi-q.txt")
    assert [c["vbios_version"] for c in pair] == ["96.00.A5.00.1A", "96.00.A5.00.1A"]
    assert [c["inforom_image_version"] for c in pair] == ["G520.0282.02.02"] * 2
    assert [c["inforom_ecc_version"] for c in pair] == ["7.16"] * 2
    assert smi_config(H200_Q)[0]["vbios_version"] == "96.00.A5.00.1A"


# ------------------------------------------------------------------------------------------------
# Pins: the node type's health: section against the probe's configuration reading.


@pytest.fixture
def pair_obs():
    """The health probe's observations of the 2 x H200 machine, from its recorded nvidia-smi -q (idle, so the
    same text stands for the reading under load)."""
    text = (H200X2 / "nvidia-smi-q.txt").read_text()
    return health.observe_smi_q(text, text)


PINS = {"vbios_versions": ["96.00.A5"], "inforom_image_versions": ["G520.0282.02.02"], "power_limit_w": 700,
        "mig_mode": "disabled", "pins_source": "nvidia-h200-datasheet"}  # fmt: skip


def pinned(name="h200_x2", **pins):
    nt = references.load_node_type(REFERENCE_DIR, name)
    return dataclasses.replace(nt, extra={**nt.extra, "health": {**nt.extra["health"], **pins}})


def test_a_node_on_its_pins_has_no_finding(pair_obs):
    expect = health_rules.expectations(pinned(**PINS))
    findings, _ = health_rules.judge(pair_obs, expect, [(2, "the inventory")], [])
    assert findings == []


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("vbios_version", "96.00.B0.00.01", "vbios_version is 96.00.B0.00.01, the node type pins one of 96.00.A5"),
        ("inforom_image_version", "G520.0282.01.01", "inforom_image_version is G520.0282.01.01"),
        ("power_enforced_limit_w", 500.0, "power_enforced_limit_w is 500.0, the node type pins 700 W"),
        ("mig_mode_current", "enabled", "mig_mode_current is enabled, the node type pins disabled"),
    ],
)
def test_a_gpu_off_a_pin_fails_naming_the_gpu_and_the_field(pair_obs, field, value, says):
    bad = copy.deepcopy(pair_obs)
    bad["gpus"][1]["config"][field] = value  # changed in the test
    expect = health_rules.expectations(pinned(**PINS))
    findings, _ = health_rules.judge(bad, expect, [], [])
    (f,) = findings
    assert f.rule == "config_drift" and f.gpu == 1 and f.serial == "1654024031095"
    assert f.message.startswith("GPU 1 (bus 00000000:00:07.0, serial 1654024031095): ") and says in f.message


def test_the_config_drift_metric_counts_fields_off_the_pins_driver_among_them(pair_obs):
    nt = pinned(**PINS)
    bad = copy.deepcopy(pair_obs)
    bad["driver_version"] = "570.86.15"  # changed in the test
    bad["gpus"][0]["config"]["vbios_version"] = "96.00.B0.00.01"
    doc = {"results": {"observations": bad, "kernel_log": {"xid_events": []}}}
    findings, _, not_run = health_rules.assess(doc, nt, None)
    assert not_run is None and sorted(f.rule for f in findings) == ["config_drift", "driver_version"]
    metrics, waived = health_rules.judged_metrics(doc, findings, health_rules.expectations(nt), {}, None)
    assert metrics["config_drift"] == {"value": 2, "unit": "count"}
    assert waived == dict.fromkeys(("nvlink_error_growth", "pcie_replay_growth", "pcie_aer_growth"),
                                   "no GPU in the node facts")


def test_a_pinned_field_that_cannot_be_read_is_not_run_not_passed(pair_obs):
    bad = copy.deepcopy(pair_obs)
    bad["gpus"][0]["config"]["vbios_version"] = None  # as when NVML answers Not Supported
    doc = {"results": {"observations": bad, "kernel_log": {"xid_events": []}}}
    findings, _, not_run = health_rules.assess(doc, pinned(**PINS), None)
    assert findings == [] and "could not check the configuration the node type pins" in not_run
    assert "GPU 0 (bus 00000000:00:06.0, serial 1654024032609): vbios_version could not be read" in not_run
    # A health document written before the probe recorded the configuration: the same, when something is pinned.
    for g in bad["gpus"]:
        del g["config"]
    assert "no configuration recorded" in health_rules.assess(doc, pinned(**PINS), None)[2]
    assert health_rules.assess(doc, pinned(), None)[2] is None  # nothing pinned: nothing to read


@pytest.mark.parametrize(
    ("pins", "says"),
    [
        ({"vbios_versions": ["96.00.A5"]}, "health.pins_source must name an entry of 'sources'"),
        ({"power_limit_w": -1, "pins_source": "nvidia-h200-datasheet"}, "power_limit_w must be a number"),
        ({"mig_mode": "sometimes"}, "health.mig_mode must be enabled, disabled or any"),
        ({"vbios_versions": "96.00.A5", "pins_source": "nvidia-h200-datasheet"}, "non-empty list of strings"),
        ({"nvlink_informational": " "}, "nvlink_informational must be the reason"),
        ({"nvlink_crc_growth_max": -1}, "nvlink_crc_growth_max must be an integer >= 0"),
    ],
)
def test_a_bad_pin_is_refused_naming_the_key(pins, says):
    with pytest.raises(references.ReferenceError, match=says):
        health_rules.expectations(pinned(**pins))


def test_ecc_pending_disabled_fails(pair_obs):
    bad = copy.deepcopy(pair_obs)
    bad["gpus"][0]["ecc_pending_enabled"] = False  # changed in the test
    expect = health_rules.expectations(references.load_node_type(REFERENCE_DIR, "h200_x2"))
    (f,) = health_rules.judge(bad, expect, [], [])[0]
    assert f.rule == "ecc_mode" and "disabled at the next reset" in f.message


# ------------------------------------------------------------------------------------------------
# The NVLink reader, on NVML answers built here.


class FakeError(pynvml.NVMLError):
    def __init__(self, value):
        self.value = value

    def __str__(self):
        return {2: "Invalid Argument", 3: "Not Supported"}.get(self.value, str(self.value))


def field_value(fid, scope, value, ret=0):
    fv = pynvml.c_nvmlFieldValue_t()
    fv.fieldId, fv.scopeId, fv.nvmlReturn, fv.valueType = fid, scope, ret, pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    fv.value.ullVal = value
    return fv


def fake_lib(links=18, down=(), counters=None, counter_call=True, speed=25781, nvlink=True):
    """NVML as a GPU with ``links`` NVLink links answers it (built for the test): states, a peer NVSwitch, the
    speed as a per-link field value, the error counters through nvmlDeviceGetNvLinkErrorCounter
    (``counter_call``) or, where that is Not Supported, as per-link field values. ``counters``: {(link, name): n}."""
    counters = counters or {}
    names = {pynvml.NVML_NVLINK_ERROR_DL_REPLAY: "replay", pynvml.NVML_NVLINK_ERROR_DL_RECOVERY: "recovery",
             pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT: "crc_flit", pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA: "crc_data"}
    fields = {pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY: "replay", pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY:
              "recovery", pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_CRC: "crc"}  # fmt: skip

    def state(h, link):
        if not nvlink:
            raise FakeError(3)
        if link >= links:
            raise FakeError(2)
        return 0 if link in down else pynvml.NVML_FEATURE_ENABLED

    def error_counter(h, link, counter):
        if not counter_call:
            raise FakeError(3)
        return counters.get((link, names[counter]), 0)

    def field_values(h, wanted):
        out = []
        for fid, scope in wanted:
            if fid == pynvml.NVML_FI_DEV_NVLINK_GET_SPEED:
                out.append(field_value(fid, scope, speed))
            else:
                out.append(field_value(fid, scope, counters.get((scope, fields[fid]), 0)))
        return out

    return SimpleNamespace(
        **{k: getattr(pynvml, k) for k in dir(pynvml) if k.startswith("NVML_")},
        nvmlDeviceGetNvLinkState=state,
        nvmlDeviceGetNvLinkVersion=lambda h, link: pynvml.NVML_NVLINK_VERSION_4_0,
        nvmlDeviceGetNvLinkRemotePciInfo=lambda h, link: SimpleNamespace(busId=b"00000000:0A:00.0"),
        nvmlDeviceGetNvLinkRemoteDeviceType=lambda h, link: pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH,
        nvmlDeviceGetNvLinkErrorCounter=error_counter,
        nvmlDeviceGetFieldValues=field_values,
    )


class FakeNvml(Nvml):
    """An NVML session over a fake library (Nvml.__init__ would load the driver)."""

    def __init__(self, lib):
        self.lib, self.error = lib, pynvml.NVMLError


def read(**kw):
    return nvlink.read_gpu(FakeNvml(fake_lib(**kw)), object())


def test_the_reader_records_every_link_with_its_peer_speed_and_counters():
    r = read(down=(7,), counters={(3, "replay"): 2})
    assert r["supported"] is True and r["why"] is None and len(r["links"]) == 18
    assert nvlink.summary(r) == (18, 17)
    ln = r["links"][3]
    assert ln == {"link": 3, "state": "up", "version": pynvml.NVML_NVLINK_VERSION_4_0, "speed_mbps": 25781,
                  "remote_pci_bus_id": "00000000:0A:00.0", "remote_type": "switch",
                  "counters": {"replay": 2, "recovery": 0, "crc_flit": 0, "crc_data": 0},
                  "counters_unavailable": {}}  # fmt: skip
    assert r["links"][7]["state"] == "down"


def test_counters_come_from_field_values_where_the_call_is_not_supported():
    ln = read(counter_call=False, counters={(0, "crc"): 5})["links"][0]
    assert ln["counters"] == {"replay": 0, "recovery": 0, "crc": 5}
    assert ln["counters_unavailable"]["replay"] == "NVML: Not Supported (3)"


def test_a_gpu_without_nvlink_is_not_supported_with_nvmls_reason():
    assert read(nvlink=False) == {"supported": False, "why": "no NVLink link readable (NVML: Not Supported (3))",
                                  "links": []}  # fmt: skip


def test_nvml_and_nvidia_smi_give_the_same_configuration():
    """NVML's answers for GPU 0 of the 2 x H200 machine, built here from its recorded nvidia-smi -q (power in
    milliwatts, modes as 0/1, the power InfoROM object Not Supported, MIG mode from a nvidia-ml-py without it)."""

    def inforom(h, obj):
        if obj == pynvml.NVML_INFOROM_POWER:
            raise FakeError(3)
        return {pynvml.NVML_INFOROM_OEM: b"2.1", pynvml.NVML_INFOROM_ECC: b"7.16"}[obj]

    lib = SimpleNamespace(
        NVML_INFOROM_OEM=pynvml.NVML_INFOROM_OEM, NVML_INFOROM_ECC=pynvml.NVML_INFOROM_ECC,
        NVML_INFOROM_POWER=pynvml.NVML_INFOROM_POWER,
        nvmlDeviceGetVbiosVersion=lambda h: "96.00.A5.00.1A",
        nvmlDeviceGetInforomImageVersion=lambda h: "G520.0282.02.02",
        nvmlDeviceGetInforomVersion=inforom,
        nvmlDeviceGetEccMode=lambda h: [1, 1],
        nvmlDeviceGetPersistenceMode=lambda h: 1,
        nvmlDeviceGetPowerManagementLimit=lambda h: 700000,
        nvmlDeviceGetPowerManagementDefaultLimit=lambda h: 700000,
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700000,
    )  # fmt: skip
    nvml = gpuconfig.from_nvml(FakeNvml(lib), object())
    smi = smi_config(H200X2 / "nvidia-smi-q.txt")[0]
    differ = {f for f in gpuconfig.FIELDS if nvml[f] != smi[f]}
    assert differ == {"mig_mode_current", "mig_mode_pending"}  # the MIG mode NVML could not give here
    assert nvml["unavailable"] == {"inforom_power_version": "NVML: Not Supported (3)",
                                   "mig_mode": "nvidia-ml-py has no nvmlDeviceGetMigMode"}  # fmt: skip


# ------------------------------------------------------------------------------------------------
# The NVLink rules: the probe's reading, and the facts before and after the suite.


def snapshot(per_gpu=None):
    """The 2 x H200 machine's recorded facts (identities), each GPU with an NVLink reading built here
    (``per_gpu``: {GPU index: fake_lib's arguments})."""
    facts = json.loads((H200X2 / "facts.json").read_text())
    for g in facts["gpus"]:
        g["nvlink"] = read(**(per_gpu or {}).get(g["index"], {}))
    return facts


def growth(before, after, expect=None):
    findings, notes = [], []
    total, why = nvlink_rules.growth(before, after, expect or {}, findings, notes)
    return total, why, findings, notes


def test_clean_links_before_and_after_pass_with_zero_growth():
    total, why, findings, _ = growth(snapshot(), snapshot())
    assert (total, why, findings) == (0, "", [])


def test_a_replay_error_during_the_suite_fails_naming_the_gpu_and_link():
    total, _, findings, _ = growth(snapshot(), snapshot({1: {"counters": {(5, "replay"): 3}}}))
    (f,) = findings
    assert total == 3 and f.rule == "nvlink_errors" and f.gpu == 1
    assert f.message == ("GPU 1 (bus 00000000:00:07.0, serial 1654024031095): NVLink link 5: 3 replay errors "
                            "during the suite (0 -> 3)")  # fmt: skip


def test_crc_growth_fails_above_the_node_types_allowance_only():
    after = snapshot({0: {"counters": {(2, "crc_flit"): 4}}})
    assert [f.rule for f in growth(snapshot(), after)[2]] == ["nvlink_errors"]
    assert growth(snapshot(), after, {"nvlink_crc_growth_max": 10})[2] == []
    # Recovery errors are never allowed, whatever the CRC allowance.
    after = snapshot({0: {"counters": {(2, "recovery"): 1}}})
    assert len(growth(snapshot(), after, {"nvlink_crc_growth_max": 10})[2]) == 1


def timed(facts, when):
    facts["gathered_unix"] = when
    return facts


def test_crc_growth_is_judged_as_a_rate_over_the_suite_where_the_snapshots_have_times():
    """CRC errors a healthy link counts under load (28-86 per link in 75 s on the lent 4 x H200 node) pass;
    faster than DCGM's 100 per second fails; replays still fail at one."""
    before = timed(snapshot(), 1000.0)
    assert growth(before, timed(snapshot({0: {"counters": {(3, "crc_data"): 86}}}), 1075.0))[2] == []
    (f,) = growth(before, timed(snapshot({0: {"counters": {(3, "crc_data"): 7600}}}), 1075.0))[2]
    assert "7600 crc_data errors" in f.message and "(allowed: 7500: 100 per second over the 75 s" in f.message
    assert len(growth(before, timed(snapshot({0: {"counters": {(3, "replay"): 1}}}), 1075.0))[2]) == 1
    slower = {"nvlink_crc_rate_max": 1}
    assert len(growth(before, timed(snapshot({0: {"counters": {(3, "crc_data"): 86}}}), 1075.0), slower)[2]) == 1


def test_counts_before_the_suite_are_noted():
    before = snapshot({0: {"counters": {(1, "crc_data"): 7}}})
    after = snapshot({0: {"counters": {(1, "crc_data"): 7}}})
    total, _, findings, notes = growth(before, after)
    assert findings == [] and total == 0
    assert any("NVLink link 1: 7 crc_data errors before the suite" in n for n in notes)


def test_a_counter_that_went_back_is_a_reset_and_fails():
    """A reset during the suite hides the errors counted before it: their growth cannot be known."""
    before = snapshot({0: {"counters": {(1, "crc_data"): 7}}})
    total, _, findings, _notes = growth(before, snapshot())
    (f,) = findings
    assert f.rule == "nvlink_errors" and f.gpu == 0 and total == 0
    assert "link 1: the crc_data counter went from 7 to 0 during the suite: reset" in f.message


def test_a_link_that_went_down_during_the_suite_fails():
    findings = growth(snapshot(), snapshot({1: {"down": (11,)}}))[2]
    assert [(f.rule, f.gpu) for f in findings] == [("nvlink", 1)]
    assert "NVLink link 11 went down during the suite (up before it)" in findings[0].message


def test_nvlink_unreadable_after_the_suite_fails():
    (f,) = growth(snapshot(), snapshot({0: {"nvlink": False}}))[2]
    assert f.rule == "nvlink" and f.gpu == 0 and "NVLink read before the suite, not after it" in f.message


def test_a_gpu_missing_after_the_suite_fails():
    after = snapshot()
    after["gpus"] = after["gpus"][:1]
    (f,) = growth(snapshot(), after)[2]
    assert f.rule == "gpu_count" and f.gpu == 1 and "not found after it" in f.message


@pytest.mark.parametrize(
    ("before", "after", "why"),
    [
        ("nvlink", None, "no NVLink reading after the suite (node-facts-end.json"),
        ("none", "none", "no NVLink on this node: no NVLink link readable (NVML: Not Supported (3))"),
        ("old", "nvlink", "the node facts hold no NVLink reading"),
    ],
)
def test_the_growth_row_is_waived_with_the_reason_where_it_cannot_compare(before, after, why):
    def facts(kind):
        if kind is None:
            return None
        if kind == "old":
            return json.loads((H200X2 / "facts.json").read_text())  # recorded before NVLink was read
        return snapshot({0: {"nvlink": False}, 1: {"nvlink": False}} if kind == "none" else None)

    total, got, findings, _ = growth(facts(before), facts(after))
    assert total is None and got.startswith(why) and findings == []


NVLINK_TYPE = {"nvlink_links_up": 18}  # a node type with NVLink: its counters must be read


@pytest.mark.parametrize(
    ("before", "after", "says"),
    [
        ("nvlink", None, "no NVLink reading after the suite (node-facts-end.json"),
        ("old", "nvlink", "the node facts hold no NVLink reading"),
        ("nvlink", "gpu 1 unread", "NVLink read before the suite, not after it"),
        ("gpu 0 unread", "nvlink", "NVLink not read before the suite"),
        ("nvlink", "link 3 gone", "NVLink link 3 read before the suite, not after it"),
        ("nvlink", "replay unread", "the replay counter was read before the suite only"),
    ],
)
def test_on_a_node_type_with_nvlink_counters_that_cannot_be_compared_fail(before, after, says):
    """Where the node type has NVLink, what the counters' growth cannot be told for fails health with the reason
    (elsewhere it is waived: the test above)."""
    def facts(kind):
        if kind is None:
            return None
        if kind == "old":
            return json.loads((H200X2 / "facts.json").read_text())
        f = snapshot({1: {"nvlink": False}} if kind == "gpu 1 unread" else
                     {0: {"nvlink": False}} if kind == "gpu 0 unread" else None)  # fmt: skip
        links = f["gpus"][1]["nvlink"]["links"]
        if kind == "link 3 gone":
            f["gpus"][1]["nvlink"]["links"] = [ln for ln in links if ln["link"] != 3]
        if kind == "replay unread":
            links[0]["counters"].pop("replay")
            links[0]["counters_unavailable"]["replay"] = "NVML: Not Supported (3)"
        return f

    findings, notes = [], []
    nvlink_rules.growth(facts(before), facts(after), NVLINK_TYPE, findings, notes)
    assert any(says in f.message for f in findings), findings
    assert all(f.rule in ("nvlink", "nvlink_unread") for f in findings)
    # the same readings on a node type without NVLink links to count: waived, nothing fails for it
    if before != "gpu 0 unread" and after in (None, "nvlink"):
        findings = []
        nvlink_rules.growth(facts(before), facts(after), {}, findings, [])
        assert findings == []


def probe_gpus(per_gpu=None):
    return [{"index": g["index"], "pci_bus_id": g["pci_bus_id"], "serial": g["serial"], "nvlink": g["nvlink"]}
            for g in snapshot(per_gpu)["gpus"]]  # fmt: skip


def test_links_up_against_the_node_type_name_the_links_down():
    findings, notes = [], []
    nvlink_rules.links_up(probe_gpus({0: {"down": (2, 9)}}), {"nvlink_links_up": 18}, findings, notes)
    (f,) = findings
    assert f.gpu == 0 and "16 NVLink links up (down: link 2, 9), the node type has 18" in f.message
    findings = []
    nvlink_rules.links_up(probe_gpus(), {"nvlink_links_up": 18, "nvlink_speed_mbps": 26000}, findings, notes)
    assert len(findings) == 36 and "runs at 25781 MB/s, the node type expects 26000 MB/s" in findings[0].message


def test_an_informational_expectation_notes_instead_of_failing():
    expect = health_rules.expectations(references.load_node_type(REFERENCE_DIR, "h200_x2"))
    assert expect["nvlink_links_up"] == 18 and expect["nvlink_informational"]
    findings, notes = [], []
    nvlink_rules.links_up(probe_gpus({0: {"down": (2,)}}), expect, findings, notes)
    assert findings == [] and len(notes) == 1 and "(informational: each H200 SXM GPU has 18" in notes[0]


def test_judged_metrics_give_the_growth():
    doc = {"results": {"observations": {"gpus": []}}}
    after = snapshot({1: {"counters": {(5, "replay"): 3, (6, "crc_flit"): 1}}})
    metrics, waived = health_rules.judged_metrics(doc, [], {}, snapshot(), after)
    assert metrics == {"nvlink_error_growth": {"value": 4, "unit": "count"}}
    # These snapshots hold no PCIe counter reading (as facts of an older gpuaccept): waived, never counted as 0.
    assert waived == {"config_drift": "no GPU read", "pcie_replay_growth": pcie_rules.NO_READING,
                      "pcie_aer_growth": pcie_rules.NO_READING}


def test_the_probes_metric_min_links_up_or_waived_without_nvlink():
    obs = {"gpus": probe_gpus({1: {"down": (0,)}}), "pcie_load": {"error": "x"}}
    metrics, waived = health.metrics_of(obs, [])
    assert metrics["nvlink_links_up_min"]["value"] == 17 and "nvlink_links_up_min" not in waived
    obs = {"gpus": probe_gpus({0: {"nvlink": False}, 1: {"nvlink": False}}), "pcie_load": {}}
    assert health.metrics_of(obs, [])[1]["nvlink_links_up_min"].startswith("no NVLink on this node: ")


# ------------------------------------------------------------------------------------------------
# Deriving a node type's expectations from a good node's facts.


def facts_with_config():
    """The 2 x H200 machine's recorded facts, with the configuration of its recorded nvidia-smi -q and NVLink
    readings built here (18 links up each)."""
    facts = snapshot()
    configs = health.parse_smi_q((H200X2 / "nvidia-smi-q.txt").read_text())["GPUs"]
    for g in facts["gpus"]:
        g["config"] = gpuconfig.from_smi_q(configs[g["pci_bus_id"]])
    return facts


def test_the_health_section_a_good_node_shows_loads_as_a_reference(tmp_path):
    facts = facts_with_config()
    section = health_expect.derive(facts, "h200x2-facts")
    assert section == {
        "driver_versions": ["580.159.04"], "cuda_versions": ["13.0"], "ecc": True, "persistence_mode": "enabled",
        "nvlink_links_up": 18, "nvlink_speed_mbps": 25781, "vbios_versions": ["96.00.A5.00.1A"],
        "inforom_image_versions": ["G520.0282.02.02"], "power_limit_w": 700.0, "mig_mode": "disabled",
        "source": "h200x2-facts", "pins_source": "h200x2-facts",
    }  # fmt: skip
    path = tmp_path / "node-facts.json"
    path.write_text(json.dumps(facts))
    out = subprocess.run([*GPUACCEPT, "health-expectations", "--facts", str(path), "--source-id", "h200x2-facts"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr
    derived = yaml.safe_load(out.stdout)
    # Into the node type's file: the reference loads, and the node it came from passes it.
    refs = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, refs)
    doc = yaml.safe_load((refs / "h200_x2.yaml").read_text())
    doc["sources"].update(derived["sources"])
    doc["health"] = derived["health"]
    (refs / "h200_x2.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    expect = health_rules.expectations(references.load_node_type(refs, "h200_x2"))
    obs = health.observe_smi_q((H200X2 / "nvidia-smi-q.txt").read_text(), (H200X2 / "nvidia-smi-q.txt").read_text())
    for g, f in zip(obs["gpus"], facts["gpus"], strict=True):
        g["nvlink"] = f["nvlink"]
    assert health_rules.judge(obs, expect, [(2, "the inventory")], [])[0] == []


def test_facts_without_gpus_cannot_give_a_section(tmp_path):
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"gpus": [], "gpu_error": "no NVIDIA GPU found"}))
    out = subprocess.run([*GPUACCEPT, "health-expectations", "--facts", str(path), "--source-id", "x"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert out.returncode == 4 and f"{path}: no GPU in the facts (no NVIDIA GPU found)" in out.stderr


# ------------------------------------------------------------------------------------------------
# The fleet: three 2 x H200 nodes laid out from the recorded verdict, facts and nvidia-smi -q.


@pytest.fixture
def fleet_tree(tmp_path):
    """Three nodes, each with a recorded accepted H200 verdict and the 2 x H200 facts with their recorded
    configuration; node c's GPU 1 has another VBIOS (changed in the test)."""
    root = tmp_path / "results"
    for node in ("h200-a", "h200-b", "h200-c"):
        run = root / node / H200_RUN.name
        run.mkdir(parents=True)
        shutil.copy(H200_RUN / "verdict.json", run / "verdict.json")
        facts = facts_with_config()
        if node == "h200-c":
            facts["gpus"][1]["config"]["vbios_version"] = "96.00.A5.00.1B"
        (run / "node-facts.json").write_text(json.dumps(facts))
    return root


def test_the_fleet_names_the_gpu_off_the_majority(fleet_tree):
    entries = fleet.collect(fleet_tree)
    rows, notes = fleet.drift(fleet_tree, entries, REFERENCE_DIR)
    assert notes == [] and len(rows) == 1
    r = rows[0]
    assert (r.node, r.gpu, r.serial, r.field, r.value, r.why) == (
        "h200-c", 1, "1654024031095", "vbios_version", "96.00.A5.00.1B", "majority")
    assert r.expected == "96.00.A5.00.1A (the majority: 5 of 6)"
    # Every node's own verdict is ACCEPTED; the fleet, whose GPUs differ, is not.
    assert all(e.verdict == "pass" for e in entries) and fleet.all_accepted(entries)
    assert not fleet.all_accepted(entries, rows)


def test_the_fleet_command_says_so_and_exits_1(fleet_tree, tmp_path):
    out = tmp_path / "fleet.json"
    proc = subprocess.run([*GPUACCEPT, "fleet", str(fleet_tree), "--output", str(out)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "configuration drift: 1 field(s) on 1 node(s) (h200-c) differ from the fleet's majority" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("h200-c ") and "vbios_version" in x)
    assert "96.00.A5.00.1B" in line and "majority" in line
    doc = json.loads(out.read_text())
    assert doc["accepted"] is False and doc["config_drift_nodes"] == ["h200-c"]
    assert doc["config_drift"][0]["field"] == "vbios_version"


def test_the_fleet_checks_each_nodes_pins(fleet_tree, tmp_path):
    refs = tmp_path / "refs"
    shutil.copytree(REFERENCE_DIR, refs)
    doc = yaml.safe_load((refs / "h200.yaml").read_text())
    doc["health"].update(power_limit_w=600, pins_source="nvidia-h200-datasheet")  # a pin set in the test
    (refs / "h200.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    rows, _ = fleet.drift(fleet_tree, fleet.collect(fleet_tree), refs)
    pins = [r for r in rows if r.why == "pin"]
    assert len(pins) == 6 and {(r.field, r.value, r.expected) for r in pins} == {
        ("power_enforced_limit_w", 700.0, "600 W")}


def test_a_fleet_of_one_value_per_field_has_no_drift_and_split_values_name_every_node(fleet_tree):
    c = fleet_tree / "h200-c"
    shutil.rmtree(c)
    assert fleet.drift(fleet_tree, fleet.collect(fleet_tree))[0] == []
    facts_path = next((fleet_tree / "h200-b").rglob("node-facts.json"))
    facts = json.loads(facts_path.read_text())
    facts["driver_version"] = "580.95.05"  # changed in the test: one node of two
    facts_path.write_text(json.dumps(facts))
    rows = fleet.drift(fleet_tree, fleet.collect(fleet_tree))[0]
    assert {(r.node, r.field, r.why) for r in rows} == {("h200-a", "driver_version", "split"),
                                                        ("h200-b", "driver_version", "split")}  # fmt: skip


def test_majority_differences_leave_unknown_values_out():
    got = config_drift.majority_differences([("a", "1"), ("b", "1"), ("c", None), ("d", "2")])
    assert [(who, d.value, d.rule) for who, d in got] == [("d", "2", "majority")]
