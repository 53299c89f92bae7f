"""Each GPU's configuration as the node facts record it (docs/checks/health.md, "Configuration"): VBIOS, InfoROM,
ECC mode, persistence mode, power limits and MIG mode, read through NVML or from ``nvidia-smi -q``.

These are what a fleet should hold the same on every GPU of a model (``gpuaccept fleet`` names the ones that
differ) and what a node type may pin (``health:`` in its reference file). Read-only. A field NVML or nvidia-smi
cannot give is None, with the reason under ``unavailable``.
"""

from __future__ import annotations

import re
from typing import Any

#: The configuration fields of one GPU, in the order the fleet summary lists them.
FIELDS = (
    "vbios_version",
    "inforom_image_version",
    "inforom_oem_version",
    "inforom_ecc_version",
    "inforom_power_version",
    "ecc_mode_current",
    "ecc_mode_pending",
    "persistence_mode",
    "power_limit_w",
    "power_default_limit_w",
    "power_enforced_limit_w",
    "mig_mode_current",
    "mig_mode_pending",
)


def _mode(value: Any) -> str | None:
    """NVML's 0/1 (or nvidia-smi's Enabled/Disabled) as ``enabled``/``disabled``."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        return text if text in ("enabled", "disabled") else None
    return "enabled" if value else "disabled"


def _watts(milliwatts: Any) -> float | None:
    return None if milliwatts is None else round(milliwatts / 1000.0, 2)


def from_nvml(nv: Any, handle: Any) -> dict[str, Any]:
    """One GPU's configuration through an open NVML session (gpuaccept.probe.nvml.Nvml)."""
    lib = nv.lib
    config: dict[str, Any] = {"source": "nvml"}
    unavailable: dict[str, str] = {}

    def read(field: str, name: str, *args) -> Any:
        value, why = nv.call(name, handle, *args)
        if why:
            unavailable[field] = why
        return value

    config["vbios_version"] = read("vbios_version", "nvmlDeviceGetVbiosVersion")
    config["inforom_image_version"] = read("inforom_image_version", "nvmlDeviceGetInforomImageVersion")
    for name, obj in (("oem", "NVML_INFOROM_OEM"), ("ecc", "NVML_INFOROM_ECC"), ("power", "NVML_INFOROM_POWER")):
        field = f"inforom_{name}_version"
        config[field] = read(field, "nvmlDeviceGetInforomVersion", getattr(lib, obj, None))
    ecc = read("ecc_mode", "nvmlDeviceGetEccMode")
    config["ecc_mode_current"], config["ecc_mode_pending"] = (None, None) if ecc is None else map(_mode, ecc[:2])
    config["persistence_mode"] = _mode(read("persistence_mode", "nvmlDeviceGetPersistenceMode"))
    config["power_limit_w"] = _watts(read("power_limit_w", "nvmlDeviceGetPowerManagementLimit"))
    config["power_default_limit_w"] = _watts(read("power_default_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit"))
    config["power_enforced_limit_w"] = _watts(read("power_enforced_limit_w", "nvmlDeviceGetEnforcedPowerLimit"))
    mig = read("mig_mode", "nvmlDeviceGetMigMode")
    config["mig_mode_current"], config["mig_mode_pending"] = (None, None) if mig is None else map(_mode, mig[:2])
    config["unavailable"] = unavailable
    return config


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or value.strip() in ("", "N/A", "[N/A]", "Unknown"):
        return None
    return value.strip()


def _w(value: Any) -> float | None:
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*W\s*$", value) if isinstance(value, str) else None
    return float(m.group(1)) if m else None


def from_smi_q(gpu: dict[str, Any]) -> dict[str, Any]:
    """One GPU's configuration from its section of ``nvidia-smi -q`` (gpuaccept.probe.smi_q.parse_smi_q).

    The power limits by nvidia-smi's labels: ``Requested Power Limit`` (``Power Limit`` before driver 535) is
    the limit software set (``power_limit_w``), ``Current Power Limit`` (``Enforced Power Limit``) the one in
    force (``power_enforced_limit_w``), ``Default Power Limit`` the board's default."""
    inforom = gpu.get("Inforom Version") if isinstance(gpu.get("Inforom Version"), dict) else {}
    power = gpu.get("GPU Power Readings") or gpu.get("Power Readings") or {}
    ecc = gpu.get("ECC Mode") if isinstance(gpu.get("ECC Mode"), dict) else {}
    mig = gpu.get("MIG Mode") if isinstance(gpu.get("MIG Mode"), dict) else {}
    config: dict[str, Any] = {
        "source": "nvidia-smi -q",
        "vbios_version": _text(gpu.get("VBIOS Version")),
        "inforom_image_version": _text(inforom.get("Image Version")),
        "inforom_oem_version": _text(inforom.get("OEM Object")),
        "inforom_ecc_version": _text(inforom.get("ECC Object")),
        "inforom_power_version": _text(inforom.get("Power Management Object") or inforom.get("PWR Object")),
        "ecc_mode_current": _mode(_text(ecc.get("Current"))),
        "ecc_mode_pending": _mode(_text(ecc.get("Pending"))),
        "persistence_mode": _mode(_text(gpu.get("Persistence Mode"))),
        "power_limit_w": _w(power.get("Requested Power Limit") or power.get("Power Limit")),
        "power_default_limit_w": _w(power.get("Default Power Limit")),
        "power_enforced_limit_w": _w(power.get("Current Power Limit") or power.get("Enforced Power Limit")),
        "mig_mode_current": _mode(_text(mig.get("Current"))),
        "mig_mode_pending": _mode(_text(mig.get("Pending"))),
    }
    config["unavailable"] = {f: "nvidia-smi -q: N/A or absent" for f in FIELDS if config[f] is None}
    return config
