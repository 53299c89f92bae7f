"""What the fabric rules hold a node to (docs/checks/fabric.md): the node type's ``fabric:`` section, validated, and
the thresholds that are not the node type's, each with its source.

A node type's ``fabric:`` section (docs/reference-values.md), every key optional but ``source``::

    fabric:
      ports: 8                   # ports of the link layer below, each ACTIVE and LinkUp; a node with fewer fails,
                                 # and one with no HCA at all fails (without 'ports': no HCA is NOT RUN)
      link_layer: InfiniBand     # or Ethernet (RoCE); ports of the other layer are listed, not judged
      rate_gbps: 400             # each port's rate at least this (sysfs 'rate', "400 Gb/sec (4X NDR)")
      width: 4X                  # each port's width exactly this
      pkey: "0x8001"             # this full-member partition key in each port's P_Key table
      gpudirect: true            # GPUDirect RDMA: a peer-memory module loaded, or a DMA-BUF transfer that ran
      ib_write_bw_floor_gbps: 360  # each HCA's ib_write_bw loopback at least this (Gb/s)
      carrier_changes_max: 0     # carrier changes of a port's net device over the suite
      source: <an entry of sources>

A node type with a ``fabric:`` section must also list ``checks: fabric:`` (a node type expects exactly the checks
it has references for: without it the check is skipped as not expected and the section would never be applied).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpuaccept.references import NodeType, ReferenceError, _fail

#: Azure's IB validation guide: the port counters ``perfquery -x`` reads and the values that fail a port.
AZURE_IB_GUIDE = (
    "Microsoft Azure's InfiniBand validation guide for its HPC/AI VMs (port counters read with perfquery -x): "
    "SymbolErrorCounter > 0 (cable), LinkErrorRecoveryCounter > 0 (flapping), LinkDownedCounter > 0, "
    "PortRcvErrors > 100, PortXmitDiscards > 1000"
)
AZURE_HEALTH_CHECKS = (
    "Microsoft Azure, azurehpc-health-checks (Azure/azurehpc-health-checks on GitHub): ND H100 v5 / ND H200 v5 "
    "expect 8 ports at 400 Gb/s (check_hw_ib), an ib_write_bw GPU-memory loopback per HCA of at least 380 Gb/s "
    "(H100) or 360 Gb/s (H200), 180 Gb/s (A100), and fail five or more 'lost carrier' lines per device in 24 h"
)
GPUD = "leptonai/gpud (GitHub): InfiniBand ports LinkUp at the expected rate; a port in Polling has lost its link"


@dataclass(frozen=True)
class CounterLimit:
    """A port counter (its sysfs name under ``counters/``) whose growth over the suite fails above ``limit``."""

    counter: str
    pma_name: str  # its name in the InfiniBand PortCounters attribute (perfquery)
    limit: int
    meaning: str
    source: str = AZURE_IB_GUIDE


COUNTER_LIMITS = (
    CounterLimit("symbol_error", "SymbolErrorCounter", 0, "symbol errors on a lane: a bad cable or transceiver"),
    CounterLimit("link_error_recovery", "LinkErrorRecoveryCounter", 0, "the link retrained: it is flapping"),
    CounterLimit("link_downed", "LinkDownedCounter", 0, "the link went down"),
    CounterLimit("port_rcv_errors", "PortRcvErrors", 100, "packets received with errors"),
    CounterLimit("port_xmit_discards", "PortXmitDiscards", 1000, "packets discarded: the port was down or congested"),
)
#: Carrier changes of a port's net device over the suite that fail it. Azure fails five 'lost carrier' lines in
#: 24 hours; a suite lasts minutes, and a link that lost its carrier while the node was under acceptance is not
#: clean, so here any change fails (a node type may allow some with ``carrier_changes_max``).
CARRIER_CHANGES_MAX = 0
#: Full membership of a partition: the P_Key's top bit (InfiniBand Architecture Specification, P_Key format).
FULL_MEMBER = 0x8000

KEYS = {"ports", "link_layer", "rate_gbps", "width", "pkey", "gpudirect", "ib_write_bw_floor_gbps",
        "carrier_changes_max", "source", "note"}  # fmt: skip
LINK_LAYERS = ("InfiniBand", "Ethernet")


def _number(path: Any, doc: dict[str, Any], key: str, integer: bool, minimum: float) -> None:
    value = doc.get(key)
    if value is None:
        return
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < minimum:
        what = "an integer" if integer else "a number"
        raise _fail(path, doc, key, f"fabric.{key} must be {what} >= {minimum:g}")


def expectations(node_type: NodeType) -> dict[str, Any] | None:
    """The node type's ``fabric:`` section, validated (None where it has none); ReferenceError names file, line
    and key."""
    doc = node_type.extra.get("fabric")
    path = node_type.path
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise _fail(path, doc, None, "fabric must be a mapping")
    unknown = sorted(set(doc) - KEYS)
    if unknown:
        raise _fail(path, doc, unknown[0], f"fabric: unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
    _number(path, doc, "ports", True, 1)
    _number(path, doc, "carrier_changes_max", True, 0)
    for key in ("rate_gbps", "ib_write_bw_floor_gbps"):
        _number(path, doc, key, False, 1e-9)
    if doc.get("link_layer") is not None and doc["link_layer"] not in LINK_LAYERS:
        raise _fail(path, doc, "link_layer", f"fabric.link_layer must be one of {', '.join(LINK_LAYERS)}")
    if doc.get("width") is not None and not re.fullmatch(r"\d+X", str(doc["width"])):
        raise _fail(path, doc, "width", "fabric.width must be a link width such as 4X")
    if doc.get("gpudirect") is not None and not isinstance(doc["gpudirect"], bool):
        raise _fail(path, doc, "gpudirect", "fabric.gpudirect must be true or false")
    pkey = doc.get("pkey")
    if pkey is not None and (not isinstance(pkey, str) or not re.fullmatch(r"0x[0-9a-fA-F]{1,4}", pkey)
                             or not int(pkey, 16) & FULL_MEMBER):  # fmt: skip
        raise _fail(path, doc, "pkey", "fabric.pkey must be a full-member P_Key in hex with its top bit set, "
                    "such as \"0x8001\" or \"0xffff\"")  # fmt: skip
    if doc.get("source") not in node_type.sources:
        raise _fail(path, doc, "source" if "source" in doc else None, "fabric.source must name an entry of 'sources'")
    if "fabric" not in node_type.checks:
        raise ReferenceError(f"{path}: node type {node_type.name!r} has a 'fabric:' section but no 'checks: fabric:' "
                             "references, so the check would be skipped as not expected: add one (e.g. "
                             "ib_write_bw_min_gbps, informational; docs/reference-values.md)")  # fmt: skip
    out = dict(doc)
    out.setdefault("carrier_changes_max", CARRIER_CHANGES_MAX)
    return out
