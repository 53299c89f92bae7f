"""``nvidia-smi -q``'s text read into nested dicts: what the health probe observes through where NVML cannot be
loaded, and where the node facts take each GPU's configuration from (gpuaccept.probe.gpuconfig.from_smi_q,
gpuaccept.probe.pcie.from_smi_q read one GPU's section of it)."""

from __future__ import annotations

from typing import Any


def parse_smi_q(text: str) -> dict[str, Any]:
    """``nvidia-smi -q`` as nested dicts: ``{"Driver Version": ..., "GPUs": {"00000000:2A:00.0": {...}}}``."""
    root: dict[str, Any] = {"GPUs": {}}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else root
        if indent == 0 and line.startswith("GPU "):
            node: dict[str, Any] = {}
            root["GPUs"][line[4:].strip()] = node
            stack = [(-1, root), (0, node)]
            continue
        key, sep, value = line.partition(":")
        key = key.strip()
        # Repeated keys (one "Process ID" per process): number them.
        name, k = key, 2
        while name in parent:
            name, k = f"{key} #{k}", k + 1
        if sep and value.strip():
            parent[name] = value.strip()
        else:
            child: dict[str, Any] = {}
            parent[name] = child
            stack.append((indent, child))
    return root
