"""Each GPU's NVLink through NVML: per link its state, version, speed, the device at the other end, and its
error counters (docs/checks/health.md, "NVLink").

Read-only. A reading NVML cannot give (``NVML_ERROR_NOT_SUPPORTED``, a link index past the GPU's last link) is
recorded as not available, with NVML's reason, never as zero: a GPU without NVLink (a PCIe board, one SXM GPU
alone in a VM) has ``supported: false`` and why.

Error counters (the link layer's, since the driver loaded): ``replay`` (a flit sent again after an error),
``recovery`` (the link retrained), ``crc_flit`` and ``crc_data`` (CRC errors in flow-control and data flits),
read with ``nvmlDeviceGetNvLinkErrorCounter``. Where the driver answers that call with Not Supported, the
per-link field values NVML offers instead are read (``NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY``, ``..._RECOVERY``,
``..._CRC``, scoped to the link), and the CRC count is then one figure, ``crc``.

The node facts hold one snapshot before the suite (gpuaccept.probe.facts), ``gpuaccept run`` a second after it
(``node-facts-end.json``); the judge compares the two (gpuaccept.judge.nvlink_rules).
"""

from __future__ import annotations

from typing import Any

#: The counters read through nvmlDeviceGetNvLinkErrorCounter: name -> the pynvml constant's name.
COUNTERS = {
    "replay": "NVML_NVLINK_ERROR_DL_REPLAY",
    "recovery": "NVML_NVLINK_ERROR_DL_RECOVERY",
    "crc_flit": "NVML_NVLINK_ERROR_DL_CRC_FLIT",
    "crc_data": "NVML_NVLINK_ERROR_DL_CRC_DATA",
}
#: The same counters as per-link field values (nvmlDeviceGetFieldValues, scope = the link).
FIELD_COUNTERS = {
    "replay": "NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY",
    "recovery": "NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY",
    "crc": "NVML_FI_DEV_NVLINK_ERROR_DL_CRC",
}
REMOTE_TYPES = {0x00: "gpu", 0x01: "ibmnpu", 0x02: "switch", 0xFF: "unknown"}
# nvmlValueType_t -> the member of nvmlValue_t that holds it.
_VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


def field_values(nv: Any, handle: Any, fields: list[tuple[int | None, int]]) -> list[tuple[Any, str | None]]:
    """``(value, None)`` or ``(None, why)`` for each ``(field id, scope)`` of ``fields``, in one NVML call (a field
    id None: one this nvidia-ml-py does not define)."""
    if not fields:
        return []
    if any(fid is None for fid, _ in fields):
        return [(None, "nvidia-ml-py does not define this NVLink field")] * len(fields)
    values, why = nv.call("nvmlDeviceGetFieldValues", handle, fields)
    if values is None:
        return [(None, why)] * len(fields)
    out: list[tuple[Any, str | None]] = []
    for fv in values:
        ret = int(fv.nvmlReturn)
        if ret != 0:
            out.append((None, f"NVML field value: error {ret}"))
            continue
        member = _VALUE_MEMBERS.get(int(fv.valueType))
        out.append((getattr(fv.value, member), None) if member else (None, f"NVML value type {fv.valueType}"))
    return out


def read_gpu(nv: Any, handle: Any) -> dict[str, Any]:
    """One GPU's NVLink: ``{"supported", "why", "links": [...]}``; each link ``{"link", "state" ("up" or
    "down"), "version", "speed_mbps", "remote_pci_bus_id", "remote_type", "counters", "counters_unavailable"}``."""
    lib = nv.lib
    links: list[dict[str, Any]] = []
    first_why = None
    for link in range(getattr(lib, "NVML_NVLINK_MAX_LINKS", 18)):
        state, why = nv.call("nvmlDeviceGetNvLinkState", handle, link)
        if state is None:
            first_why = first_why or why
            continue
        remote, _ = nv.call("nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        remote_bus = getattr(remote, "busId", None)
        remote_type, _ = nv.call("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link)
        links.append(
            {
                "link": link,
                "state": "up" if state == getattr(lib, "NVML_FEATURE_ENABLED", 1) else "down",
                "version": nv.call("nvmlDeviceGetNvLinkVersion", handle, link)[0],
                "speed_mbps": None,
                "remote_pci_bus_id": remote_bus.decode() if isinstance(remote_bus, bytes) else remote_bus,
                "remote_type": None if remote_type is None else REMOTE_TYPES.get(remote_type, str(remote_type)),
                "counters": {},
                "counters_unavailable": {},
            }
        )
    if not links:
        return {"supported": False, "why": f"no NVLink link readable ({first_why or 'no link'})", "links": []}
    speed_field = getattr(lib, "NVML_FI_DEV_NVLINK_GET_SPEED", None)
    speeds = field_values(nv, handle, [(speed_field, ln["link"]) for ln in links])
    for ln, (speed, _why) in zip(links, speeds, strict=True):
        ln["speed_mbps"] = speed
    _read_counters(nv, handle, links)
    return {"supported": True, "why": None, "links": links}


def _read_counters(nv: Any, handle: Any, links: list[dict[str, Any]]) -> None:
    """Each link's error counters: the error-counter call, else the per-link field values (see the module)."""
    lib = nv.lib
    fallback: list[dict[str, Any]] = []
    for ln in links:
        for name, const in COUNTERS.items():
            value, why = nv.call("nvmlDeviceGetNvLinkErrorCounter", handle, ln["link"], getattr(lib, const, None))
            if value is None:
                ln["counters_unavailable"][name] = why
            else:
                ln["counters"][name] = int(value)
        if not ln["counters"]:
            fallback.append(ln)
    if not fallback:
        return
    wanted = [(ln, name, getattr(lib, const, None)) for ln in fallback for name, const in FIELD_COUNTERS.items()]
    values = field_values(nv, handle, [(fid, ln["link"]) for ln, _name, fid in wanted])
    for (ln, name, _fid), (value, why) in zip(wanted, values, strict=True):
        if value is None:
            ln["counters_unavailable"][f"{name} (field value)"] = why
        else:
            ln["counters"][name] = int(value)


def summary(nvlink: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """(links NVML reports, links up) of one GPU's reading; (None, None) where NVLink was not read."""
    if not isinstance(nvlink, dict):
        return None, None
    links = nvlink.get("links") or []
    return len(links), sum(1 for ln in links if ln.get("state") == "up")
