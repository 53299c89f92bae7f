"""The health rules (docs/checks/health.md): a health probe's observations (``gpuaccept.probe.health``) judged
against the node type's ``health:`` expectations and the GPU counts the inventory and node type promise, with
the NVLink rules (gpuaccept.judge.nvlink_rules: links up, links that went down and error counters that grew
between the node facts before and after the suite) and the configuration the node type pins
(gpuaccept.judge.config_drift). Every finding names the GPU (index, bus id, serial) and the fix an operator
would try.

The probe records; these rules decide, here and nowhere else: re-judging a recorded health document against
today's references gives today's answer.
"""

from __future__ import annotations

from typing import Any

from gpuaccept.judge import config_drift, nvlink_rules, pcie_rules, xid_actions
from gpuaccept.judge.config_drift import version_allowed
from gpuaccept.judge.rules.finding import Finding, finding, gpu_label
from gpuaccept.references import NodeType, ReferenceError, _fail

# ------------------------------------------------------------------------------------------------
# Expectations: the ``health:`` section of a reference file (docs/reference-values.md).

HEALTH_KEYS = {
    "driver_versions",
    "cuda_versions",
    "ecc",
    "persistence_mode",
    "nvlink_links_up",
    "nvlink_speed_mbps",
    "nvlink_crc_growth_max",
    "nvlink_crc_rate_max",
    "nvlink_informational",
    "vbios_versions",
    "inforom_image_versions",
    "power_limit_w",
    "mig_mode",
    "pins_source",
    "pcie_gen",
    "pcie_width",
    "retired_pages_max",
    "source",
    "note",
}


def expectations(node_type: NodeType) -> dict[str, Any]:
    """The node type's health expectations, validated; a node type without them is an error."""
    doc = node_type.extra.get("health")
    path = node_type.path
    if doc is None:
        raise ReferenceError(
            f"{path}: node type {node_type.name!r} has no 'health:' section: add the allowed driver and CUDA "
            "versions, ECC and persistence mode expectations (docs/reference-values.md)"
        )
    if not isinstance(doc, dict):
        raise _fail(path, doc, None, "health must be a mapping")
    unknown = set(doc) - HEALTH_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise _fail(path, doc, key, f"health: unknown key {key!r} (known: {', '.join(sorted(HEALTH_KEYS))})")
    for key in ("driver_versions", "cuda_versions"):
        value = doc.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise _fail(path, doc, key if key in doc else None, f"health.{key} must be a non-empty list of strings")
    if not isinstance(doc.get("ecc"), bool):
        raise _fail(path, doc, "ecc" if "ecc" in doc else None, "health.ecc must be true or false")
    if doc.get("persistence_mode", "any") not in ("enabled", "disabled", "any"):
        raise _fail(path, doc, "persistence_mode", "health.persistence_mode must be enabled, disabled or any")
    for key in ("nvlink_links_up", "nvlink_speed_mbps", "nvlink_crc_growth_max", "nvlink_crc_rate_max", "pcie_gen",
                "pcie_width", "retired_pages_max"):  # fmt: skip
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise _fail(path, doc, key, f"health.{key} must be an integer >= 0")
    if "nvlink_informational" in doc and not (isinstance(doc["nvlink_informational"], str)
                                              and doc["nvlink_informational"].strip()):  # fmt: skip
        raise _fail(path, doc, "nvlink_informational", "health.nvlink_informational must be the reason, a text")
    _check_pins(node_type, doc)
    source = doc.get("source")
    if source not in node_type.sources:
        raise _fail(path, doc, "source" if "source" in doc else None, "health.source must name an entry of 'sources'")
    out = dict(doc)
    out.setdefault("persistence_mode", "any")
    out.setdefault("nvlink_links_up", 0)
    out.setdefault("retired_pages_max", 60)
    out.setdefault("pcie_gen", node_type.match.get("pcie_gen"))
    out.setdefault("pcie_width", node_type.match.get("pcie_width"))
    return out


def _check_pins(node_type: NodeType, doc: dict[str, Any]) -> None:
    """The configuration pins (gpuaccept.judge.config_drift): their types, and ``pins_source`` naming an entry of
    ``sources`` wherever one is set (a pinned VBIOS comes from a qualification, not from the GPU's datasheet)."""
    path = node_type.path
    for key in config_drift.VERSION_PINS:
        value = doc.get(key)
        if value is not None and (not isinstance(value, list) or not value
                                  or not all(isinstance(v, str) and v for v in value)):  # fmt: skip
            raise _fail(path, doc, key, f"health.{key} must be a non-empty list of strings")
    power = doc.get("power_limit_w")
    if power is not None and (isinstance(power, bool) or not isinstance(power, (int, float)) or power <= 0):
        raise _fail(path, doc, "power_limit_w", "health.power_limit_w must be a number of watts above 0")
    if doc.get("mig_mode", "any") not in ("enabled", "disabled", "any"):
        raise _fail(path, doc, "mig_mode", "health.mig_mode must be enabled, disabled or any")
    pinned = [k for k in config_drift.PIN_KEYS if doc.get(k) not in (None, "any")]
    if pinned and doc.get("pins_source") not in node_type.sources:
        raise _fail(path, doc, "pins_source" if "pins_source" in doc else pinned[0],
                    f"health.pins_source must name an entry of 'sources' (the source of {', '.join(pinned)})")



# What an operator tries after the catalogue's immediate action (gpuaccept.judge.xid_actions), by XID.
XID_FIXES = {
    13: "graphics engine exception: usually the application; rerun the suite, and if it recurs on this GPU only, "
    "reset it (nvidia-smi -r -i N) and run the GEMM check",
    31: "GPU memory page fault: usually the application; if it recurs with known-good code, drain and reset the GPU",
    43: "GPU stopped processing: the application was stopped; rerun, and reset the GPU if it recurs",
    45: "preemptive cleanup after an earlier error: look at the XID before it",
    48: "double-bit ECC error: drain the node, reset the GPU or reboot so the row is remapped; RMA if it recurs",
    63: "ECC page retirement or row remapping event: reset the GPU or reboot to apply it",
    64: "ECC page retirement or row remapping failure: drain the node and RMA the GPU",
    74: "NVLink error: check the NVLink/NVSwitch cabling and fabric manager, reset the GPU",
    79: "GPU has fallen off the bus: reseat the GPU, check its power cables and slot, update the firmware",
    92: "high single-bit ECC error rate: watch the ECC counters, RMA if it keeps rising",
    94: "contained ECC error: the application was stopped; reset the GPU",
    95: "uncontained ECC error: drain the node and reset the GPU or reboot",
    109: "context switch timeout: usually the application; reset the GPU if it recurs",
    119: "GSP RPC timeout: reset the GPU or reboot; update the driver if it recurs",
    120: "GSP error: reset the GPU or reboot; update the driver if it recurs",
}
XID_DEFAULT_FIX = "look the XID up in NVIDIA's XID catalogue; reset the GPU (nvidia-smi -r -i N) or reboot"

# ------------------------------------------------------------------------------------------------
# Judging.


def _pci_prefix(bus_id: str | None) -> str:
    """NVML's "00000000:2A:00.0" and the XID's "0000:2a:00" to one key: "0000:2a:00"."""
    if not bus_id:
        return ""
    domain, _, rest = bus_id.partition(":")
    return f"{int(domain, 16):04x}:{rest.split('.')[0].lower()}"


def judge(
    obs: dict[str, Any],
    expect: dict[str, Any],
    expected_gpus: list[tuple[int, str]],
    xids: list[dict[str, Any]] | None,
    facts: dict[str, Any] | None = None,
    facts_end: dict[str, Any] | None = None,
    sxids: Any = ...,
) -> tuple[list[Finding], list[str]]:
    """Findings (failures) and notes. ``expected_gpus``: (count, who says so); ``xids``: None = unreadable, each
    judged by its XID catalogue action (gpuaccept.judge.xid_actions); ``facts``, ``facts_end``: the node facts
    before and after the suite (the NVLink and PCIe counters' growth; None: not compared); ``sxids``: the NVSwitch
    events (None: not read; left out: a document that predates them)."""
    findings: list[Finding] = []
    notes: list[str] = []
    gpus = obs.get("gpus") or []
    for count, who in expected_gpus:
        if len(gpus) != count:
            findings.append(
                finding(
                    "gpu_count",
                    None,
                    f"{len(gpus)} GPUs found ({', '.join(str(g.get('pci_bus_id')) for g in gpus) or 'none'}), "
                    f"{who} says {count}",
                    "compare nvidia-smi -L with lspci -d 10de:; reseat or power the missing GPU and look for XID 79 "
                    "in the kernel log, or correct the inventory",
                )
            )
    driver, cuda = obs.get("driver_version"), obs.get("cuda_version")
    if not version_allowed(driver, expect["driver_versions"]):
        findings.append(
            finding(
                "driver_version",
                None,
                f"driver {driver} is not one the node type allows ({', '.join(expect['driver_versions'])})",
                "install an allowed driver (or add this version to the node type's health.driver_versions "
                "once it has been qualified)",
            )
        )
    if not version_allowed(cuda, expect["cuda_versions"]):
        findings.append(
            finding(
                "cuda_version",
                None,
                f"CUDA {cuda} (driver API) is not one the node type allows ({', '.join(expect['cuda_versions'])})",
                "install a driver with an allowed CUDA version",
            )
        )
    load = obs.get("pcie_load") or {}
    for g in gpus:
        _judge_gpu(g, expect, load, findings, notes)
    nvlink_rules.links_up(gpus, expect, findings, notes)
    if facts is not None:
        nvlink_rules.growth(facts, facts_end, expect, findings, notes)
        pcie_rules.growth(facts, facts_end, findings, notes)
    findings += pin_findings(gpus, expect)[0]
    by_pci = {_pci_prefix(g.get("pci_bus_id")): g for g in gpus}
    if xids is None:
        notes.append("kernel log unreadable: XID events not checked")
    else:
        xid_actions.judge_xids(xids, by_pci, XID_FIXES, XID_DEFAULT_FIX, findings, notes)
    if sxids is not ...:
        xid_actions.judge_sxids(sxids, gpus, findings, notes)
    return findings, notes


# Flags of the GPU memory's self-repair that NVML reports (the reading, its flag, the rule, what it means, the
# fix), in the order they are reported.
_MEMORY_FLAGS = (
    ("remapped_rows", "pending", "row_remapping", "a row remapping is pending",
     "reset the GPU (nvidia-smi -r) or reboot to apply the remapping"),
    ("remapped_rows", "failure", "row_remapping", "a row remapping failed (no spare rows left in a bank)",
     "drain the node and RMA the GPU"),
    ("retired_pages", "pending", "retired_pages", "a page retirement is pending",
     "reset the GPU (nvidia-smi -r) or reboot to retire the page"),
)


def _pcie_link(g: dict[str, Any], expect: dict[str, Any], load: dict[str, Any], findings: list[Finding]) -> None:
    """The GPU's PCIe link under the probe's load (generation and width), or at idle in a passive check."""
    gen_want = expect.get("pcie_gen") or g.get("pcie_gen_max")
    width_want = expect.get("pcie_width") or g.get("pcie_width_max")
    gen, width = g.get("pcie_gen_loaded"), g.get("pcie_width_loaded")
    if load.get("passive"):
        findings += _passive_link(g, gen_want, width_want)
    elif gen is None or width is None:
        findings.append(
            finding(
                "pcie_link",
                g,
                f"PCIe link not measured under load ({load.get('error') or 'no reading'})",
                "make libcuda loadable for the probe (driver installed, device nodes present) and rerun",
            )
        )
    else:
        if gen_want and gen < gen_want:
            findings.append(
                finding(
                    "pcie_link",
                    g,
                    f"PCIe link at Gen{gen} under load, expected Gen{gen_want} (link max Gen{g.get('pcie_gen_max')})",
                    "reseat the GPU or its riser/retimer, check the slot's link speed in the BIOS; "
                    f"lspci -vv -s {g.get('pci_bus_id')} shows LnkSta against LnkCap",
                )
            )
        if width_want and width < width_want:
            findings.append(
                finding(
                    "pcie_link",
                    g,
                    f"PCIe link at x{width} under load, expected x{width_want} (link max x{g.get('pcie_width_max')})",
                    "reseat the GPU or its riser/cable (a lane is down); "
                    f"lspci -vv -s {g.get('pci_bus_id')} shows LnkSta against LnkCap",
                )
            )


def _memory(g: dict[str, Any], expect: dict[str, Any], findings: list[Finding], notes: list[str]) -> None:
    """The GPU's memory: ECC on (and staying on), no uncorrectable error since the driver loaded, no remapping
    failure or pending, retired pages within the limit."""
    if expect["ecc"] and g.get("ecc_enabled") is not True:
        state = {None: "unknown", False: "disabled"}[g.get("ecc_enabled")]
        findings.append(
            finding(
                "ecc_mode",
                g,
                f"ECC is {state}, the node type expects it enabled",
                f"enable it (nvidia-smi -i {g.get('index')} -e 1) and reset the GPU or reboot",
            )
        )
    elif expect["ecc"] and g.get("ecc_pending_enabled") is False:
        findings.append(
            finding(
                "ecc_mode",
                g,
                "ECC is enabled now and disabled at the next reset (a pending change)",
                f"enable it again before the reset (nvidia-smi -i {g.get('index')} -e 1)",
            )
        )
    for key, what in (("ecc_uncorrectable_volatile", "since the driver loaded"),):
        count = g.get(key)
        if count:
            findings.append(
                finding(
                    "ecc_uncorrectable",
                    g,
                    f"{count} uncorrectable ECC errors {what}",
                    "drain the node and reset the GPU (nvidia-smi -r) or reboot so the rows are remapped; "
                    "RMA the GPU if they come back",
                )
            )
    if g.get("ecc_uncorrectable_aggregate"):
        notes.append(
            f"{gpu_label(g)}: {g['ecc_uncorrectable_aggregate']} uncorrectable ECC errors over its lifetime "
            "(aggregate; remapped rows/retired pages show whether they were handled)"
        )
    for reading, flag, rule, what, fix in _MEMORY_FLAGS:
        if (g.get(reading) or {}).get(flag):
            findings.append(finding(rule, g, what, fix))
    pages = g.get("retired_pages")
    if pages:
        total = (pages.get("single_bit") or 0) + (pages.get("double_bit") or 0)
        if total > expect["retired_pages_max"]:
            findings.append(
                finding(
                    "retired_pages",
                    g,
                    f"{total} retired pages (limit {expect['retired_pages_max']})",
                    "RMA the GPU: it is near the end of its spare pages",
                )
            )


def _judge_gpu(
    g: dict[str, Any], expect: dict[str, Any], load: dict[str, Any], findings: list, notes: list[str]
) -> None:
    """One GPU's rules, in order: its PCIe link, its memory (ECC, remapping, retired pages), its persistence mode
    and processes on it."""
    _pcie_link(g, expect, load, findings)
    _memory(g, expect, findings, notes)
    want = expect["persistence_mode"]
    mode = g.get("persistence_mode")
    if want != "any" and mode is not (want == "enabled"):
        state = {None: "unknown", True: "enabled", False: "disabled"}[mode]
        findings.append(
            finding(
                "persistence_mode",
                g,
                f"persistence mode is {state}, the node type expects it {want}",
                "start nvidia-persistenced (systemctl enable --now nvidia-persistenced)"
                if want == "enabled"
                else "stop nvidia-persistenced",
            )
        )
    # A passive check runs beside the jobs (gpuaccept health-check): their processes are no finding there.
    for p in [] if load.get("passive") else g.get("processes") or []:
        findings.append(
            finding(
                "foreign_process",
                g,
                f"compute process pid {p['pid']} of user {p.get('user') or 'unknown'} "
                f"({p.get('name') or 'executable unknown'}) runs on it",
                f"stop it (kill {p['pid']}) or wait for it: the suite's results are not valid while it shares the "
                "GPU (a stray process halves GEMM throughput)",
            )
        )


def _passive_link(g: dict[str, Any], gen_want: int | None, width_want: int | None) -> list[Finding]:
    """The PCIe link of a passive check (``gpuaccept health-check``: no load, and an idle link trains its speed
    down): the generation the GPU and the slot can reach together (NVML's maximum "possible with this device and
    system") against the node type's, and the width at idle against the link's maximum (an idle link keeps its
    lanes). A link that trains down only under load is the suite's health check's to find."""
    out = []
    gen_max, width, width_max = g.get("pcie_gen_max"), g.get("pcie_width_idle"), g.get("pcie_width_max")
    bus = g.get("pci_bus_id")
    if gen_max is None or width is None:
        out.append(finding("pcie_link", g, "PCIe link not read (NVML/nvidia-smi gave no link generation or width)",
                           "look at nvidia-smi -q -d PCIE; the driver may not answer for this GPU"))  # fmt: skip
        return out
    if gen_want and gen_max < gen_want:
        out.append(finding("pcie_link", g, f"PCIe link can reach Gen{gen_max} only (GPU and slot together), "
                           f"expected Gen{gen_want}", "check the slot's link speed in the BIOS and the riser/retimer; "
                           f"lspci -vv -s {bus} shows LnkCap against LnkSta"))  # fmt: skip
    want = max(w for w in (width_want, width_max) if w) if (width_want or width_max) else None
    if want and width < want:
        out.append(finding("pcie_link", g, f"PCIe link at x{width} at idle, expected x{want} (link max "
                           f"x{width_max})", "reseat the GPU or its riser/cable (a lane is down); "
                           f"lspci -vv -s {bus} shows LnkSta against LnkCap"))  # fmt: skip
    return out


def pin_findings(gpus: list[dict[str, Any]], expect: dict[str, Any]) -> tuple[list[Finding], list[str]]:
    """Where a GPU's configuration (the probe's ``config`` reading) is not what the node type pins: findings
    (rule ``config_drift``), and why a pinned field could not be checked (not read: the check cannot look)."""
    pinned = [k for k in config_drift.PIN_KEYS if expect.get(k) not in (None, "any")]
    if not pinned:
        return [], []
    findings, unread = [], []
    for g in gpus:
        config = g.get("config")
        if not isinstance(config, dict):
            unread.append(f"{gpu_label(g)}: no configuration recorded (a health document of an older gpuaccept)")
            continue
        for d in config_drift.pin_differences(config, expect):
            if d.value is None:
                why = (config.get("unavailable") or {}).get(d.key) or "not read"
                unread.append(f"{gpu_label(g)}: {d.key} could not be read ({why}), the node type pins {d.expected}")
            else:
                findings.append(finding("config_drift", g, d.message, str(d.fix)))
    return findings, unread


#: The rules whose findings are configuration drift: the node against its node type's pins.
DRIFT_RULES = ("driver_version", "cuda_version", "config_drift")


def judged_metrics(
    doc: dict[str, Any], findings: list[Finding], expect: dict[str, Any], facts: dict[str, Any],
    facts_end: dict[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The figures the judge adds to a health document's (docs/checks/health.md): ``config_drift``, the fields
    that differ from the node type's pins (driver, CUDA, and each GPU's pinned configuration), and
    ``nvlink_error_growth``, every NVLink error counter's growth over the suite, and the PCIe counters' growth
    (gpuaccept.judge.pcie_rules: ``pcie_replay_growth``, ``pcie_aer_growth``); each waived, with the reason, where it
    cannot be counted."""
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    results = doc.get("results") if isinstance(doc.get("results"), dict) else {}
    gpus = (results.get("observations") or {}).get("gpus") if isinstance(results.get("observations"), dict) else None
    if not gpus:
        waived["config_drift"] = "no GPU read"
    elif not all(isinstance(g.get("config"), dict) for g in gpus):
        waived["config_drift"] = "the health document records no GPU configuration (written by an older gpuaccept)"
    else:
        metrics["config_drift"] = {"value": sum(f.rule in DRIFT_RULES for f in findings), "unit": "count"}
    total, why = nvlink_rules.growth(facts, facts_end, expect, [], [])
    if total is None:
        waived["nvlink_error_growth"] = why
    else:
        metrics["nvlink_error_growth"] = {"value": total, "unit": "count"}
    for name, (value, reason) in pcie_rules.growth(facts, facts_end, [], []).items():
        if value is None:
            waived[name] = reason
        else:
            metrics[name] = {"value": value, "unit": "count"}
    return metrics, waived


def assess(
    doc: dict[str, Any],
    node_type: NodeType,
    expected_gpus: int | None,
    facts: dict[str, Any] | None = None,
    facts_end: dict[str, Any] | None = None,
) -> tuple[list[Finding], list[str], str | None]:
    """A health document judged: (findings, notes, why it could not look). The last is set when the probe could
    not read the GPUs or the kernel log, or a field the node type pins: the check is then NOT RUN with that reason
    and its fix, never a pass. ``facts``, ``facts_end``: the node facts before and after the suite (NVLink
    counters), None where not known (``gpuaccept health`` alone)."""
    expect = expectations(node_type)
    results = doc.get("results") if isinstance(doc.get("results"), dict) else {}
    obs = results.get("observations")
    kernel_log = results.get("kernel_log") if isinstance(results.get("kernel_log"), dict) else {}
    xids = kernel_log.get("xid_events")
    claims = [(node_type.match["gpu_count"], f"node type {node_type.name}")]
    if expected_gpus is not None:
        claims.insert(0, (expected_gpus, "the inventory"))
    if not isinstance(obs, dict):
        errors = "; ".join(map(str, doc.get("errors") or ["no observations"]))
        return [], [], f"the probe could not read the GPUs: {errors}"
    sxids = kernel_log.get("sxid_events", ...)  # absent: a document written before SXIDs were read
    findings, notes = judge(obs, expect, claims, xids if isinstance(xids, list) else None, facts, facts_end,
                            sxids if sxids is ... or isinstance(sxids, list) else None)  # fmt: skip
    cannot_look = []
    unread = pin_findings(obs.get("gpus") or [], expect)[1]
    if unread:
        cannot_look.append("could not check the configuration the node type pins: " + "; ".join(unread))
    if not isinstance(xids, list):
        why = kernel_log.get("unreadable") or "the kernel log was not read"
        fix = kernel_log.get("fix") or (
            "run the suite as root, or give its user CAP_SYSLOG, or set kernel.dmesg_restrict=0"
        )
        cannot_look.append(f"could not look for XID events: kernel log unreadable ({why}); fix: {fix}")
    return findings, notes, "; ".join(cannot_look) or None
