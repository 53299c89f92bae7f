"""The PCIe link a GPU sits on, as NVML reports it: its rate per direction, from which the link figures are judged.

A copy between host and GPU is bounded by the link, not by the GPU model: an H100 on a PCIe Gen5 x16 link and
the same H100 on Gen4 x16 move data at different rates and both are healthy. So the pinned copy figures are
judged as a fraction of the link's own rate (reference files: ``link_fraction``), the way public fleet checks
gate them (Azure's node health checks: 48 GB/s host<->GPU on PCIe Gen5 x16, about 0.76 of the link).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gpuaccept.references.model import MetricReference, NodeType

# Per lane and direction, in GB/s (1e9 bytes/s), after the line encoding: Gen1 and Gen2 8b/10b, Gen3 to Gen5
# 128b/130b, Gen6 FLIT mode (242 of 256 bytes carry data).
_LANE_GBPS = {
    1: 2.5 * 8 / 10 / 8,
    2: 5.0 * 8 / 10 / 8,
    3: 8.0 * 128 / 130 / 8,
    4: 16.0 * 128 / 130 / 8,
    5: 32.0 * 128 / 130 / 8,
    6: 64.0 * 242 / 256 / 8,
}


def pcie_gbps(gen: Any, width: Any) -> float | None:
    """The link's rate per direction in GB/s (Gen5 x16: 63.0), or None when NVML did not say or the generation
    is one this table does not know."""
    if isinstance(gen, bool) or isinstance(width, bool) or not isinstance(gen, int) or not isinstance(width, int):
        return None
    if gen not in _LANE_GBPS or width <= 0:
        return None
    return _LANE_GBPS[gen] * width


def node_link(facts: dict[str, Any]) -> tuple[float | None, str]:
    """The slowest GPU link of the node (rate per direction in GB/s) and how it reads ('PCIe Gen5 x16, 63.0
    GB/s'); (None, why) when the facts hold no GPU or NVML did not report a GPU's link. The copy metrics are the
    minimum over GPUs, so the slowest link is the one they are judged against."""
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    if not gpus:
        return None, "no GPU in the node facts"
    links = []
    for g in gpus:
        gen, width = g.get("pcie_gen_max"), g.get("pcie_width_max")
        rate = pcie_gbps(gen, width)
        if rate is None:
            return None, f"NVML reported no PCIe link for GPU {g.get('index')} (generation {gen!r}, width {width!r})"
        links.append((rate, gen, width))
    rate, gen, width = min(links)
    return rate, f"PCIe Gen{gen} x{width}, {rate:.1f} GB/s per direction"


def bind_link(node_type: NodeType, facts: dict[str, Any]) -> NodeType:
    """The node type with its link gates bound to the node's slowest PCIe link as the facts report it
    (gpuaccept.references.link); where NVML reported no link, the gates stay unbound and say why (NOT RUN)."""
    rate, label = node_link(facts)
    checks: dict[str, dict[str, MetricReference]] = {}
    for check, refs in node_type.checks.items():
        checks[check] = {}
        for name, ref in refs.items():
            bound = ref
            if ref.needs_link:
                why = f"cannot judge against the PCIe link: {label}"
                bound = ref.for_link(rate, label) if rate else dataclasses.replace(ref, band=why)
            checks[check][name] = bound
    return dataclasses.replace(node_type, checks=checks)
