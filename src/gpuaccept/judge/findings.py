"""A health finding: one rule that failed on one GPU (or on the node), named by index, bus id and serial, with
the fix an operator would try first. The health, NVLink and configuration rules (gpuaccept.judge.health_rules,
nvlink_rules, config_drift) all report in this form."""

from __future__ import annotations

from typing import Any


def gpu_label(g: dict[str, Any]) -> str:
    return f"GPU {g.get('index')} (bus {g.get('pci_bus_id')}, serial {g.get('serial') or 'unknown'})"


def finding(rule: str, g: dict[str, Any] | None, message: str, fix: str) -> dict[str, Any]:
    return {
        "rule": rule,
        "gpu": None if g is None else g.get("index"),
        "pci_bus_id": None if g is None else g.get("pci_bus_id"),
        "serial": None if g is None else g.get("serial"),
        "message": (f"{gpu_label(g)}: " if g is not None else "") + message,
        "fix": fix,
    }
