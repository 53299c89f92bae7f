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
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class Difference:
    """One field of one GPU (``gpu`` None: of the node) that is not what it should be. ``value`` None: the
    field could not be read, so the pin could not be checked."""

    field: str
    value: Any
    expected: str  # what it should be, in words
    why: str  # "pin" (the node type's), "majority" (the fleet's), "split" (no majority to compare with)


def power_limit(config: dict[str, Any]) -> float | None:
    """The power limit in force: NVML's enforced limit, else the one software set."""
    value = config.get("power_enforced_limit_w")
    return value if value is not None else config.get("power_limit_w")


def pin_differences(config: dict[str, Any] | None, expect: dict[str, Any]) -> list[Difference]:
    """Where one GPU's configuration is not what the node type pins (``config`` None: nothing was read)."""
    config = config or {}
    out = []
    for key, field in VERSION_PINS.items():
        allowed = expect.get(key)
        if allowed and not version_allowed(config.get(field), allowed):
            out.append(Difference(field, config.get(field), "one of " + ", ".join(allowed), "pin"))
    want = expect.get("power_limit_w")
    if want is not None:
        have = power_limit(config)
        if have is None or abs(have - float(want)) > POWER_TOLERANCE_W:
            out.append(Difference("power_enforced_limit_w", have, f"{float(want):g} W", "pin"))
    mig = expect.get("mig_mode", "any")
    if mig != "any" and config.get("mig_mode_current") != mig:
        out.append(Difference("mig_mode_current", config.get("mig_mode_current"), mig, "pin"))
    return out


def majority_differences(readings: list[tuple[Any, Any]]) -> list[tuple[Any, Difference]]:
    """``readings``: (who, value) of one field across a fleet (None values are unknown and left out). Each
    reading that differs from a strict majority, or every reading when no value holds more than half of them
    (``split``), as (who, Difference) with the field left empty for the caller to fill in."""
    known = [(who, v) for who, v in readings if v is not None]
    counts = Counter(v for _, v in known)
    if len(counts) < 2:
        return []
    value, n = counts.most_common(1)[0]
    if n * 2 > len(known):
        return [(who, Difference("", v, f"{value} (the majority: {n} of {len(known)})", "majority"))
                for who, v in known if v != value]  # fmt: skip
    spread = ", ".join(f"{v} x{c}" for v, c in counts.most_common())
    return [(who, Difference("", v, f"no majority ({spread})", "split")) for who, v in known]
