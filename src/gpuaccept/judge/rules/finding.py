"""A finding: one rule that failed, as data. Every rule of the judge reports in this one form (the document's
rules, health with NVLink, PCIe and the pinned configuration, DCGM, the fabric, the burn-in), so the rule, the GPU
and the fix can be read apart by whoever shows them (the verdict's reason, ``gpuaccept health``, the passive health
check's record) and ``text`` gives the one line the verdict has always printed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Finding:
    """``rule``: the rule's name (a check rule's finer name where it has one: ``xid``, ``port_state``); ``message``:
    what was seen, with the GPU's label where a GPU's rule names one; ``fix``: what an operator tries first (None:
    the rule gives none, and ``text`` shows no arrow); ``gpu``: the node facts' index of the GPU it is about (None:
    the node, a port or the document); ``file``: the document's file name ("" none); ``key``: the field or counter it
    is about ("" none); ``scope``, ``where``: what the text names before the message (the part of the check, then
    the port or file). ``pci_bus_id``, ``serial``: the GPU's, where a GPU's rule names it; ``action``: an XID's
    catalogue action; ``value``, ``expected``: the reading and what it should be, where a rule compares them."""

    rule: str
    message: str
    fix: str | None = None
    gpu: int | None = None
    file: str = ""
    key: str = ""
    scope: str = ""
    where: str = ""
    pci_bus_id: str | None = None
    serial: str | None = None
    action: str = ""
    value: Any = None
    expected: str = ""

    def text(self) -> str:
        """The finding as one line: "scope: where: message -> fix", each part only where it is set."""
        head = "".join(f"{part}: " for part in (self.scope, self.where) if part)
        return head + self.message + ("" if self.fix is None else f" -> {self.fix}")

    def record(self) -> dict[str, Any]:
        """The finding as the passive health check's record writes it (docs/checks/health.md): rule, GPU index,
        bus id, serial, message and fix, and the XID's action where it has one."""
        out = {"rule": self.rule, "gpu": self.gpu, "pci_bus_id": self.pci_bus_id, "serial": self.serial,
               "message": self.message, "fix": self.fix}  # fmt: skip
        return {**out, "action": self.action} if self.action else out

    def summary(self) -> dict[str, Any]:
        """The finding as verdict.json's check row holds it (``findings``): rule, GPU index (None: the node, a port or
        the document), the fix, the file and field where set, and the whole line (``text``)."""
        out: dict[str, Any] = {"rule": self.rule, "gpu": self.gpu, "fix": self.fix}
        out.update({k: v for k, v in (("file", self.file), ("key", self.key), ("action", self.action)) if v})
        return {**out, "text": self.text()}

    def with_action(self, action: str) -> Finding:
        return dataclasses.replace(self, action=action)


def gpu_label(g: dict[str, Any]) -> str:
    """A GPU as every finding names it: index, bus id and serial."""
    return f"GPU {g.get('index')} (bus {g.get('pci_bus_id')}, serial {g.get('serial') or 'unknown'})"


def finding(rule: str, g: dict[str, Any] | None, message: str, fix: str) -> Finding:
    """A finding about GPU ``g`` (a GPU's reading with ``index``, ``pci_bus_id``, ``serial``), its message led by
    the GPU's label; ``g`` None: about the node."""
    if g is None:
        return Finding(rule, message, fix)
    return Finding(rule, f"{gpu_label(g)}: {message}", fix, gpu=g.get("index"), pci_bus_id=g.get("pci_bus_id"),
                   serial=g.get("serial"))  # fmt: skip


def of_document(rule: str, problems: list[str], path: Path) -> list[Finding]:
    """The problems a rule over a benchmark document wrote as lines (each naming the file or the GPU it is about),
    as findings of ``rule`` about that file."""
    return [Finding(rule, p, file=path.name) for p in problems]
