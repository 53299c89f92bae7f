"""Completeness is judged, not believed (docs/judge.md, "Every GPU, once"): a document that says which GPUs it
measured must name each GPU of the node exactly once, by the identities the node facts record for it, and the
GPUs of one node must agree with each other.

- ``facts_problems``: two GPUs of the node facts with the same PCI bus id, serial or UUID (a facts file that
  lists one GPU twice counts it twice);
- ``disagreement``: a configuration field (power limit in force, MIG mode, VBIOS, InfoROM, ECC mode) that not
  every GPU of the node shares, naming the GPU that differs (the odd one out; every GPU where no value holds a
  majority), whether or not the node type pins the field;
- ``document_problems``: a per-GPU document's ``devices`` (and ``gpu_metrics``) against the node facts: every
  device identified (bus id; UUID and serial where the tool writes them) as a GPU of the node, no identity twice,
  no GPU of the node left out;
- ``records_problems``: a tool's own per-GPU records (the memory test's, the burn-in's ``results.per_gpu``):
  one per GPU of the document, none twice.

Each problem names the GPU (index, bus id, serial) and the file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from gpuaccept.judge.config_drift import majority_differences, power_limit
from gpuaccept.judge.pergpu import bus_key

#: Checks whose document lists the GPUs without an identity: HPL-CUDA's is HPL's own output, which names no GPU
#: (its GPU count is judged against the node's instead: gpuaccept.judge.consistency).
ANONYMOUS_DEVICES = frozenset({"hpl_cuda"})

#: The configuration fields every GPU of one node must share (gpuaccept.probe.gpuconfig writes them).
AGREED_FIELDS = (
    "power_enforced_limit_w",
    "mig_mode_current",
    "mig_mode_pending",
    "vbios_version",
    "inforom_image_version",
    "inforom_oem_version",
    "inforom_ecc_version",
    "ecc_mode_current",
    "ecc_mode_pending",
)


def _label(g: dict[str, Any]) -> str:
    return f"GPU {g.get('index')} (bus {g.get('pci_bus_id') or 'unknown'}, serial {g.get('serial') or 'unknown'})"


def _gpus(facts: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for g in facts.get("gpus") or [] if isinstance(g, dict)]


def _twice(values: list[tuple[dict[str, Any], Any]], what: str, where: str) -> list[str]:
    """One problem per value (a non-empty identity) held by more than one record, naming the records."""
    counts = Counter(v for _, v in values if v)
    out = []
    for value, n in counts.items():
        if n > 1:
            who = ", ".join(_label(g) for g, v in values if v == value)
            out.append(f"{where}: {what} {value} is given to {n} GPUs ({who}): one GPU counted twice, or a "
                       "forged record")  # fmt: skip
    return out


def facts_problems(facts: dict[str, Any]) -> list[str]:
    """Two GPUs of the node facts with one identity (bus id, serial or UUID)."""
    gpus = _gpus(facts)
    out = _twice([(g, bus_key(g.get("pci_bus_id"))) for g in gpus], "PCI bus id", "the node facts")
    for key in ("serial", "uuid"):
        out += _twice([(g, g.get(key)) for g in gpus], key, "the node facts")
    return out


def disagreement(facts: dict[str, Any]) -> list[str]:
    """The configuration fields the GPUs of the node do not share, each naming the GPU that differs."""
    gpus = [g for g in _gpus(facts) if isinstance(g.get("config"), dict)]
    out = []
    for field in AGREED_FIELDS:
        readings = [(g, power_limit(g["config"]) if field == "power_enforced_limit_w" else g["config"].get(field))
                    for g in gpus]  # fmt: skip
        for g, diff in majority_differences(readings):
            out.append(f"{_label(g)}: {field} {diff.value} differs from the node's other GPUs ({diff.expected}): "
                       "the GPUs of one node run one configuration (set it with nvidia-smi, or update the "
                       "firmware of the odd GPU)")  # fmt: skip
    return out


def _matching(device: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any] | None:
    key = bus_key(device.get("pci_bus_id"))
    return next((g for g in gpus if key and bus_key(g.get("pci_bus_id")) == key), None)


def document_problems(check: str, doc: dict[str, Any], path: Path, facts: dict[str, Any],
                      every: bool = True) -> list[str]:
    """A GPU check's ``devices`` against the node facts' GPUs: each identified, each once, none left out (``every``
    False: a check that measures one GPU by design, whose other GPUs are not expected in it)."""
    gpus = _gpus(facts)
    devices = doc.get("devices")
    if not gpus or not isinstance(devices, list):
        return []  # no GPU to compare with (the GPU count rule says so), or no list (document_problems says so)
    out: list[str] = []
    indices = [d.get("index") for d in devices if isinstance(d, dict)]
    for index, n in Counter(indices).items():
        if n > 1:
            out.append(f"{path.name}: devices lists GPU index {index} {n} times")
    if check in ANONYMOUS_DEVICES:
        return out
    matched: list[dict[str, Any]] = []
    for d in devices:
        if not isinstance(d, dict):
            continue
        g = _matching(d, gpus)
        if g is None:
            out.append(f"{path.name}: device {d.get('index')} (bus {d.get('pci_bus_id') or 'not given'}) is no GPU "
                       "of the node facts: the document does not say which GPU it measured")  # fmt: skip
            continue
        for key in ("uuid", "serial"):
            if d.get(key) and g.get(key) and d[key] != g[key]:
                out.append(f"{path.name}: device {d.get('index')} at bus {d.get('pci_bus_id')} has {key} {d[key]}, "
                           f"the node facts give {_label(g)} {key} {g[key]}")  # fmt: skip
        matched.append(g)
    for g in gpus:
        n = sum(m is g for m in matched)
        if n > 1:
            out.append(f"{path.name}: {_label(g)} is listed {n} times among its devices (measured once, counted "
                       f"{n} times)")  # fmt: skip
        elif n == 0 and every:
            out.append(f"{path.name}: {_label(g)} is not among its devices: never measured")
    entries = doc.get("gpu_metrics")
    if isinstance(entries, list):
        have = Counter(e.get("gpu") for e in entries if isinstance(e, dict))
        for d in devices:
            if isinstance(d, dict) and have.get(d.get("index"), 0) == 0:
                g = _matching(d, gpus)
                out.append(f"{path.name}: gpu_metrics has no figures of "
                           f"{_label(g) if g else 'device ' + str(d.get('index'))}")  # fmt: skip
    return out


def records_problems(records: list[Any], what: str, path: Path, doc: dict[str, Any]) -> list[str]:
    """A tool's per-GPU records (``what``: where they are, ``results.per_gpu``) against the document's
    ``devices``: one record per device (by its ``gpu`` index, and bus id where both give one), none twice."""
    devices = {d.get("index"): d for d in doc.get("devices") or [] if isinstance(d, dict)}
    seen = Counter(r.get("gpu") for r in records if isinstance(r, dict))
    out = []
    for index, n in seen.items():
        if n > 1:
            out.append(f"{path.name}: {what} holds GPU {index} {n} times")
        elif index not in devices:
            out.append(f"{path.name}: {what} holds GPU {index}, which is not among its devices")
    for index, d in devices.items():
        if seen.get(index, 0) == 0:
            out.append(f"{path.name}: {what} holds no record of GPU {index} (bus {d.get('pci_bus_id')}): "
                       "never tested")  # fmt: skip
    for r in records:
        d = devices.get(r.get("gpu")) if isinstance(r, dict) else None
        if d is not None and r.get("pci_bus_id") and bus_key(r["pci_bus_id"]) != bus_key(d.get("pci_bus_id")):
            out.append(f"{path.name}: {what} says GPU {r.get('gpu')} is at bus {r['pci_bus_id']}, its devices "
                       f"list it at {d.get('pci_bus_id')}")  # fmt: skip
    return out
