"""Configuration drift (docs/checks/health.md, "Configuration"): a GPU's configuration as the node facts record
it (gpuaccept.probe.gpuconfig) against what the node type pins in its ``health:`` section, and a fleet's
readings of one field against the fleet's majority (gpuaccept.results.fleet).

Pins (all optional; a file that sets one names its source in ``pins_source``):

- ``vbios_versions``, ``inforom_image_versions``: allowed versions, each whole or by leading dotted components
  (``96.00.A5`` allows ``96.00.A5.00.1A``), as ``driver_versions`` are;
- ``power_limit_w``: the power limit in force on every GPU (NVML's enforced limit), within 0.5 W;
- ``mig_mode``: ``enabled``, ``disabled`` or ``any``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpuaccept.judge.rules.finding import Finding

#: Pins of lists of allowed versions: the health key -> the configuration field it pins.
VERSION_PINS = {"vbios_versions": "vbios_version", "inforom_image_versions": "inforom_image_version"}
PIN_KEYS = (*VERSION_PINS, "power_limit_w", "mig_mode")
POWER_TOLERANCE_W = 0.5
#: Fields of the node, not of a GPU, that a fleet holds the same (the facts' top level).
NODE_FIELDS = ("driver_version", "cuda_driver_version")


def version_allowed(version: str | None, allowed: list[str]) -> bool:
    """``580.159.04`` is allowed by ``580.159.04``, ``580.159`` or ``580`` (whole dotted components)."""
    if not version:
        return False
    return any(version == a or version.startswith(a.rstrip(".") + ".") for a in allowed)


# What an operator does about a GPU's configuration that is not what the node type pins, by field.
FIX_PINS = {
    "vbios_version": "flash the qualified VBIOS (the vendor's firmware bundle for the board), or add this version to "
    "the node type's health.vbios_versions once it has been qualified",
    "inforom_image_version": "update the InfoROM with the vendor's firmware bundle, or add this version to the node "
    "type's health.inforom_image_versions once it has been qualified",
    "power_enforced_limit_w": "set the limit (nvidia-smi -i N -pl WATTS, persistently through the BMC or the "
    "site's GPU configuration), and look for a lower limit set by the BMC or a power-capping agent",
    "mig_mode_current": "set it (nvidia-smi -i N -mig 0 or 1) and reset the GPU",
}


def difference(why: str, field: str, value: Any, expected: str) -> Finding:
    """One field (``key``) that is not what it should be, as a finding whose ``rule`` says against what: "pin"
    (the node type's), "majority" (the fleet's), "split" (no majority to compare with). ``value`` None: the field
    could not be read, so the pin could not be checked. A fleet's field is named by its caller (``key`` "")."""
    message = f"{field or 'the field'} is {value}, " + ("the node type pins " if why == "pin" else "") + expected
    return Finding(why, message, FIX_PINS.get(field) if why == "pin" else None, key=field, value=value,
                   expected=expected)  # fmt: skip


def power_limit(config: dict[str, Any]) -> float | None:
    """The power limit in force: NVML's enforced limit, else the one software set."""
    value = config.get("power_enforced_limit_w")
    return value if value is not None else config.get("power_limit_w")


def pin_differences(config: dict[str, Any] | None, expect: dict[str, Any]) -> list[Finding]:
    """Where one GPU's configuration is not what the node type pins (``config`` None: nothing was read)."""
    config = config or {}
    out = []
    for key, field in VERSION_PINS.items():
        allowed = expect.get(key)
        if allowed and not version_allowed(config.get(field), allowed):
            out.append(difference("pin", field, config.get(field), "one of " + ", ".join(allowed)))
    want = expect.get("power_limit_w")
    if want is not None:
        have = power_limit(config)
        if have is None or abs(have - float(want)) > POWER_TOLERANCE_W:
            out.append(difference("pin", "power_enforced_limit_w", have, f"{float(want):g} W"))
    mig = expect.get("mig_mode", "any")
    if mig != "any" and config.get("mig_mode_current") != mig:
        out.append(difference("pin", "mig_mode_current", config.get("mig_mode_current"), mig))
    return out


def majority_differences(readings: list[tuple[Any, Any]]) -> list[tuple[Any, Finding]]:
    """``readings``: (who, value) of one field across a fleet (None values are unknown and left out). Each
    reading that differs from a strict majority, or every reading when no value holds more than half of them
    (``split``), as (who, finding) with the field left empty for the caller to name."""
    known = [(who, v) for who, v in readings if v is not None]
    counts = Counter(v for _, v in known)
    if len(counts) < 2:
        return []
    value, n = counts.most_common(1)[0]
    if n * 2 > len(known):
        return [(who, difference("majority", "", v, f"{value} (the majority: {n} of {len(known)})"))
                for who, v in known if v != value]  # fmt: skip
    spread = ", ".join(f"{v} x{c}" for v, c in counts.most_common())
    return [(who, difference("split", "", v, f"no majority ({spread})")) for who, v in known]
