"""XIDs and SXIDs as actions (docs/checks/health.md, "XIDs"): each XID event of the kernel log mapped to the
immediate action NVIDIA's XID catalogue gives for it (gpuaccept/judge/xid_catalogue.yaml: the rows read there,
with the source and the date read), and judged by that action:

- ``none`` and ``restart_application``: the node stays in service; a warning (a note), not a finding;
- ``reset_gpu``, ``reboot_node``, ``hardware_inspection``, ``update_software``, ``follow_workflow`` (a WORKFLOW_
  bucket: XID 48, 74, 144-150) and XID 45 alone (its workflow: restart the fabric manager): a finding that names
  the action;
- an XID the table does not list: a finding with the action ``unknown: investigate`` (never a guessed action).

SXIDs (NVSwitch errors) are judged only on a node whose NVLink links end at an NVSwitch; elsewhere they are not
applicable (and the health check says so).
"""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.judge.rules.finding import Finding, finding

CATALOGUE = Path(__file__).with_name("xid_catalogue.yaml")
UNKNOWN = "unknown: investigate"
#: Actions after which the node stays in service: the event is a warning.
WARN_ONLY = ("none", "restart_application")
WORKFLOW_XID_45_WORDS = "workflow_xid_45"
ACTION_WORDS = {
    "none": "none",
    "restart_application": "restart the application",
    "reset_gpu": "reset the GPU",
    "reboot_node": "reboot the node",
    "hardware_inspection": "hardware inspection / contact the vendor",
    "update_software": "update the driver or firmware",
    "follow_workflow": "follow the catalogue's workflow for it",
    "restart_fabric_manager": "restart the fabric manager",
    WORKFLOW_XID_45_WORDS: "the catalogue's workflow for XID 45: alone, restart the fabric manager; with another XID, "
    "follow that XID",
    UNKNOWN: "unknown: investigate (not a row of the XID catalogue as read)",
}
FIX_ACTION = {
    "reset_gpu": "drain the node, stop its GPU processes and reset the GPU (nvidia-smi -r -i N)",
    "reboot_node": "drain the node and reboot it",
    "hardware_inspection": "drain the node and send it to hardware inspection (the vendor's support)",
    "update_software": "drain the node and update the driver or the GPU firmware",
    "follow_workflow": "drain the node and follow the XID catalogue's workflow for this XID",
    "restart_fabric_manager": "drain the node and restart the fabric manager (systemctl restart nvidia-fabricmanager)",
    UNKNOWN: "drain the node and look the XID up in NVIDIA's XID catalogue",
}
#: XID 45's workflow (the catalogue's investigatory column): alone, restart the fabric manager; with another XID of
#: the same GPU, ignore it (that XID is judged).
WORKFLOW_XID_45 = WORKFLOW_XID_45_WORDS


@functools.cache
def table(path: Path = CATALOGUE) -> dict[str, Any]:
    """The catalogue's rows as read (``xids``, ``sxids``, ``buckets``, ``source``)."""
    doc = textinput.load_yaml(path, "the XID catalogue", ValueError)
    if doc.get("schema") != "gpuaccept.xid_catalogue/1":
        raise ValueError(f"{path}: not a gpuaccept.xid_catalogue/1 file")
    for key, row in (doc.get("xids") or {}).items():
        if not isinstance(key, int) or row.get("bucket") not in doc["buckets"]:
            known = ", ".join(sorted(doc["buckets"]))
            raise ValueError(f"{path}: XID {key!r}: bucket {row.get('bucket')!r} is not one of {known}")
    return doc


def source_line() -> str:
    src = table()["source"]
    return f"{src['publisher']}, \"{src['title']}\" ({src['year']}), read {src['read']}"


def action_of(xid: int, kind: str = "xids") -> tuple[str, dict[str, Any] | None]:
    """(the action, the catalogue's row) of an XID (``kind`` "xids") or SXID ("sxids"); UNKNOWN, None where the
    table does not list it. XID 45's action depends on the other events (``judge_xids``): WORKFLOW_XID_45."""
    doc = table()
    row = (doc.get(kind) or {}).get(xid)
    if row is None:
        return UNKNOWN, None
    return doc["buckets"][row["bucket"]], row


def _when(event: dict[str, Any]) -> str:
    t = event.get("time_unix")
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if t else "time unknown"


def _action(e: dict[str, Any], events: list[dict[str, Any]]) -> tuple[str, str | None, dict[str, Any] | None]:
    """(the action, the catalogue's bucket, its row) of one event among ``events`` (XID 45's workflow looks at the
    others)."""
    action, row = action_of(e["xid"])
    bucket = row["bucket"] if row else None
    if action == WORKFLOW_XID_45:
        alone = not any(o is not e and o["xid"] != e["xid"] and o.get("pci") == e.get("pci") for o in events)
        action = "restart_fabric_manager" if alone else "none"
        bucket = f"{bucket}: {'solo, RESTART_FM' if alone else 'not solo, IGNORE (the other XID is judged)'}"
    return action, bucket, row


def judge_xids(
    xids: list[dict[str, Any]], by_pci: dict[str, dict[str, Any]], fixes: dict[int, str], default_fix: str,
    findings: list[Finding], notes: list[str],
) -> None:
    """Each XID event judged by its catalogue action (see the module): a finding, or a note for an XID after
    which the node stays in service. ``fixes``: what an operator tries after the action, by XID."""
    for e in xids:
        g = by_pci.get(e["pci"])
        label = "" if g else f"PCI {e['pci']} (not a GPU of this node's list): "
        action, bucket, row = _action(e, xids)
        what = row.get("description") or row.get("mnemonic") if row else None
        said = f"{ACTION_WORDS[action]} (the catalogue's {bucket})" if bucket else ACTION_WORDS[action]
        message = (f"{label}XID {e['xid']}{f' ({what})' if what else ''} at {_when(e)}: {e['text']}; "
                   f"immediate action: {said}")  # fmt: skip
        e["action"] = action
        if action in WARN_ONLY:
            notes.append(f"{message} (a warning: the node stays in service)")
            continue
        fix = f"{FIX_ACTION[action]}; then: {fixes.get(e['xid'], default_fix)}"
        findings.append(finding("xid", g, message, fix).with_action(action))


def has_nvswitch(gpus: list[dict[str, Any]]) -> bool | None:
    """Whether any GPU's NVLink link ends at an NVSwitch; None where NVLink was not read on every GPU."""
    readings = [g.get("nvlink") for g in gpus]
    if not gpus or not all(isinstance(r, dict) for r in readings):
        return None
    return any(ln.get("remote_type") == "switch" for r in readings for ln in r.get("links") or [])


def judge_sxids(
    sxids: list[dict[str, Any]] | None, gpus: list[dict[str, Any]], findings: list[Finding], notes: list[str]
) -> str:
    """SXID events judged where the node has NVSwitches; returns what was judged, in words (the health check's
    record): "not applicable (...)", "not read (...)" or the count."""
    switch = has_nvswitch(gpus)
    if switch is False:
        return "not applicable: no NVLink link of this node ends at an NVSwitch"
    if sxids is None:
        return "not read (the kernel log was not read, or the document predates SXID reading)"
    if switch is None and not sxids:
        return "no SXID event (NVSwitch presence unknown: NVLink not read)"
    for e in sxids:
        action, _row = action_of(e["sxid"], "sxids")
        message = (f"NVSwitch {e['pci']}: SXID {e['sxid']} ({e.get('severity') or 'severity not given'}) at "
                   f"{_when(e)}: {e['text']}; immediate action: {ACTION_WORDS[action]}")  # fmt: skip
        if action in WARN_ONLY:
            notes.append(message)
            continue
        fix = ("look the SXID up in NVIDIA's Fabric Manager User Guide; check the fabric manager "
               "(systemctl status nvidia-fabricmanager) and the NVSwitch trays")  # fmt: skip
        findings.append(finding("sxid", None, message, fix).with_action(action))
    return f"{len(sxids)} SXID event(s)"
