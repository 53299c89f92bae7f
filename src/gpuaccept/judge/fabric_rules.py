"""The fabric rules (docs/checks/fabric.md): a fabric document (gpuaccept.probe.fabric_doc) judged against the node
type's ``fabric:`` expectations (gpuaccept.judge.fabric_expect) and the counters' thresholds, here and nowhere else.

What the rules look at, in order: whether there is a fabric at all (no ``/sys/class/infiniband``: NOT RUN with that
reason, or a failure where the node type expects ``ports``); the ports of the expected link layer, their count,
state (ACTIVE), physical state (LinkUp; Polling is a port with no link to the switch), rate and width; a full-member
partition key (and the node type's own); GPUDirect RDMA; each HCA's ib_write_bw loopback against the floor; and
over the suite, the port counters (a counter that went down was reset: its growth cannot be known, which fails),
the error counters' growth against Azure's thresholds and the net device's carrier changes (link flaps).

The window of the counters: from the node facts gathered before the suite (``node-facts.json``, key ``fabric``) to
those gathered after it (``node-facts-end.json``); where a run has either not, the check's own readings before and
after its ib_write_bw runs stand in, and a note says which window was judged.
"""

from __future__ import annotations

from typing import Any

from gpuaccept.judge.fabric_expect import FULL_MEMBER
from gpuaccept.judge.rules.finding import Finding
from gpuaccept.probe import fabric

#: The rules, each a closed name with what it means (a finding's rule is one of these).
RULES = {
    "no_fabric": "the node type expects a fabric and the node has no HCA",
    "port_count": "fewer ports of the expected link layer than the node type has",
    "port_state": "a port not ACTIVE",
    "phys_state": "a port's physical link not LinkUp",
    "port_rate": "a port slower than the node type's rate",
    "port_width": "a port narrower or wider than the node type's width",
    "pkey": "no full-member partition key, or not the node type's",
    "gpudirect": "no GPUDirect RDMA where the node type expects it",
    "ib_write_bw": "an HCA's loopback below the floor, or failed",
    "port_missing": "a port read before the suite and not after it",
    "counter_reset": "a counter went down over the suite: it was reset, its growth cannot be known",
    "port_counters": "an error counter grew past its threshold over the suite",
    "link_flap": "the port's net device changed carrier over the suite",
}
FIX = {
    "no_fabric": "check that the HCAs are seated and their driver (mlx5_core, mlx5_ib) loaded: ibv_devinfo, lspci",
    "port_count": "ibstat for the missing ports; reseat the HCA or its cable; check the driver loaded every HCA and "
    "each port's link type (mlxconfig LINK_TYPE_P1)",
    "port_state": "a port not ACTIVE: check the subnet manager sees it (ibstat, sminfo); reseat or replace the cable",
    "phys_state": "check the cable and the switch port (ibstat, iblinkinfo); reseat or replace the cable or "
    "transceiver; a port in Polling has no link to the switch",
    "port_rate": "the link trained down: reseat or replace the cable or transceiver, check the switch port's "
    "speed (ibportstate)",
    "port_width": "a lane is down: reseat or replace the cable or transceiver",
    "pkey": "give the port a full-member key in the subnet manager's partition configuration (e.g. 0x8001)",
    "gpudirect": "load nvidia_peermem (modprobe nvidia_peermem, and at boot), or use NVIDIA's open kernel module "
    "with DMA-BUF",
    "ib_write_bw": "run the loopback by hand (docs/checks/fabric.md); check the HCA's PCIe link (lspci -vv), its "
    "NUMA placement and GPUDirect; replace the cable or the HCA if it stays low",
    "port_missing": "the HCA or its driver went away during the suite: look at the kernel log (mlx5_core)",
    "counter_reset": "run the suite again without resetting the counters (perfquery -R, a driver reload or an HCA "
    "reset during the suite)",
    "port_counters": "a marginal link: look at the counters (perfquery -x), reseat or replace the cable or "
    "transceiver, and run the suite again",
    "link_flap": "look for 'lost carrier' lines in the kernel log; reseat or replace the cable or transceiver",
}


def finding(rule: str, where: str, message: str) -> Finding:
    """A fabric finding: ``where`` the port ("mlx5_ib0 port 1"), the HCA ("mlx5_ib0") or "" (the node); its text
    "fabric: <where>: <message> -> <the rule's FIX>"."""
    if rule not in RULES:
        raise ValueError(f"unknown fabric rule {rule!r}")
    return Finding(rule, message, FIX[rule], scope="fabric", where=where, key=where)


def _where(hca: dict[str, Any], port: dict[str, Any] | None = None) -> str:
    return f"{hca.get('name')} port {port.get('port')}" if port else str(hca.get("name"))


def _judged_ports(reading: dict[str, Any], expect: dict[str, Any], notes: list[str]) -> list[tuple[dict, dict]]:
    """The (HCA, port) pairs of the expected link layer; others are noted (a host's Ethernet NIC beside the IB)."""
    layer = expect.get("link_layer")
    pairs = fabric.ports(reading)
    others = [_where(h, p) + f" ({p.get('link_layer')})" for h, p in pairs if layer and p.get("link_layer") != layer]
    if others:
        notes.append(f"not judged, not {layer}: {', '.join(others)}")
    return [(h, p) for h, p in pairs if not layer or p.get("link_layer") == layer]


def port_findings(reading: dict[str, Any], expect: dict[str, Any], notes: list[str]) -> list[Finding]:
    """Count, state, physical state, rate, width and partition keys of the judged ports."""
    out: list[Finding] = []
    pairs = _judged_ports(reading, expect, notes)
    want = expect.get("ports")
    if want and len(pairs) < want:
        layer = expect.get("link_layer") or "any"
        out.append(finding("port_count", "", f"{len(pairs)} ports of link layer {layer}, the node type has {want}"))
    for h, p in pairs:
        w = _where(h, p)
        if p.get("state") != "ACTIVE":
            out.append(finding("port_state", w, f"state {p.get('state') or 'unreadable'}, not ACTIVE"))
        phys = p.get("phys_state")
        if phys != "LinkUp":
            lost = ": the link to the switch is lost" if phys == "Polling" else ""
            out.append(finding("phys_state", w, f"physical state {phys or 'unreadable'}{lost}"))
        rate = p.get("rate_gbps")
        if expect.get("rate_gbps") and (rate is None or rate < expect["rate_gbps"]):
            out.append(finding("port_rate", w, f"rate {p.get('rate_text') or 'unreadable'}, the node type "
                               f"expects {expect['rate_gbps']:g} Gb/s"))  # fmt: skip
        if expect.get("width") and p.get("width") != expect["width"]:
            out.append(finding("port_width", w, f"width {p.get('width') or 'unreadable'}, the node type expects "
                               f"{expect['width']}"))  # fmt: skip
        out += _pkey_findings(w, p, expect)
    return out


def _pkey_findings(where: str, port: dict[str, Any], expect: dict[str, Any]) -> list[Finding]:
    """InfiniBand ports only (a RoCE port's table holds the default key alone and partitions are not used)."""
    if port.get("link_layer") != "InfiniBand":
        return []
    keys = port.get("pkeys")
    if keys is None:
        return [finding("pkey", where, "the P_Key table could not be read")]
    values = {int(k, 16) for k in keys}
    out = []
    if not any(v & FULL_MEMBER for v in values):
        out.append(finding("pkey", where, f"no full-member partition key (table: {', '.join(keys) or 'empty'})"))
    want = expect.get("pkey")
    if want and int(want, 16) not in values:
        out.append(finding("pkey", where, f"partition key {want} not in the table ({', '.join(keys) or 'empty'})"))
    return out


def gpudirect_findings(reading: dict[str, Any], bw: dict[str, Any], expect: dict[str, Any]) -> list[Finding]:
    """GPUDirect RDMA where the node type expects it: a peer-memory module, or a DMA-BUF loopback that ran."""
    if not expect.get("gpudirect"):
        return []
    gd = reading.get("gpudirect") or {}
    if gd.get("peermem"):
        return []
    dmabuf_ran = [r["hca"] for r in bw.get("runs") or [] if r.get("gpu") is not None and r.get("gbps") is not None
                  and "--use_cuda_dmabuf" in (r.get("client") or [])]  # fmt: skip
    if dmabuf_ran:
        return []
    return [finding("gpudirect", "", f"no GPUDirect RDMA: {gd.get('why') or 'no peer-memory module'}, and no "
                    "ib_write_bw loopback through DMA-BUF ran")]  # fmt: skip


def bandwidth_findings(bw: dict[str, Any], expect: dict[str, Any]) -> tuple[list[Finding], str | None]:
    """Each HCA's loopback against ``ib_write_bw_floor_gbps``; (findings, why it could not be measured)."""
    floor = expect.get("ib_write_bw_floor_gbps")
    if not floor:
        return [], None
    if not bw.get("available"):
        return [], f"cannot measure the ib_write_bw floor: {bw.get('why') or 'not run'}"
    out = []
    for r in bw.get("runs") or []:
        if r.get("gbps") is None:
            out.append(finding("ib_write_bw", r["hca"], f"ib_write_bw loopback failed: {r.get('error')}"))
        elif r["gbps"] < floor:
            out.append(finding("ib_write_bw", r["hca"], f"ib_write_bw loopback {r['gbps']:g} Gb/s with "
                               f"{r.get('memory')}, below the floor {floor:g} Gb/s"))  # fmt: skip
    return out, None
