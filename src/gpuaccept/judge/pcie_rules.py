"""The PCIe counter rules of the health check (docs/checks/health.md, "PCIe counters"): each GPU's PCIe replay
counter and Linux AER counts (gpuaccept.probe.pcie) read twice, and what grew between the two readings judged:
in a suite, the node facts before it (``node-facts.json``) against those after it (``node-facts-end.json``),
the burn-in included; in ``gpuaccept health-check``, the last check's reading against this one's.

- replays: more than ``REPLAY_GROWTH_MAX`` new replays on one GPU fail it. 80 is the limit of the PCIe test of
  NVIDIA's Data Center GPU Manager (DCGM documentation, diagnostics, "PCIe - GPU Bandwidth Plugin": the test fails
  a GPU whose replay counter grows by more than its max_pcie_replays, 80 by default);
- AER: a new non-fatal or fatal (uncorrectable) error on the GPU's PCI function fails it; new correctable errors
  are reported (a note with the count), not failed.

A counter that could not be read is not judged and its figure is waived with the reason; a document without the
readings (gathered by an older gpuaccept) waives the figures and fails nothing.
"""

from __future__ import annotations

from typing import Any

from gpuaccept.judge.rules.finding import finding, gpu_label

#: New PCIe replays on one GPU between two readings that fail it (DCGM's PCIe test default; see the module).
REPLAY_GROWTH_MAX = 80
FIX_REPLAY = (
    "a marginal PCIe link: reseat the GPU or its riser/retimer and cable, check the slot in the BIOS; "
    "lspci -vv -s BUS shows the link and its AER status; RMA if the count keeps growing"
)
FIX_AER = "an uncorrectable PCIe error on the GPU's link: drain the node, read the AER lines of the kernel log " \
          "(journalctl -k | grep -i aer), reseat the GPU or its riser; RMA if it recurs"
NO_READING = "the node facts hold no PCIe counter reading (gathered by an older gpuaccept)"
NO_END = "no PCIe counter reading after the suite (node-facts-end.json; a run given --facts, or a Slurm run, has none)"
FIGURES = ("pcie_replay_growth", "pcie_aer_growth")


def _match(g: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any] | None:
    for key in ("uuid", "pci_bus_id", "index"):
        if g.get(key) is not None:
            for o in others:
                if o.get(key) == g.get(key):
                    return o
    return None


def compare(
    before: list[dict[str, Any]], after: list[dict[str, Any]], findings: list, notes: list[str], between: str
) -> dict[str, tuple[int | None, str]]:
    """Each GPU's counters in ``before`` against ``after`` (GPU readings with ``pcie_counters``); ``between``
    says over what, for the messages. Returns per figure (total growth over the GPUs, or None and why)."""
    replay_total: int | None = 0
    aer_total: int | None = 0
    replay_why: list[str] = []
    aer_why: list[str] = []
    for g in before:
        later = _match(g, after)
        c0, c1 = g.get("pcie_counters") or {}, (later or {}).get("pcie_counters") or {}
        if later is None:
            replay_why.append(f"{gpu_label(g)} not read the second time")
            aer_why.append(replay_why[-1])
            continue
        r0, r1 = c0.get("replay"), c1.get("replay")
        if isinstance(r0, int) and isinstance(r1, int):
            delta = r1 - r0
            if delta < 0:
                notes.append(f"{gpu_label(g)}: PCIe replay counter went from {r0} to {r1} (reset: a driver reload)")
            elif delta > REPLAY_GROWTH_MAX:
                findings.append(finding("pcie_replay", g, f"{delta} PCIe replays {between} ({r0} -> {r1}; allowed "
                                        f"{REPLAY_GROWTH_MAX}, DCGM's PCIe test limit)", FIX_REPLAY))  # fmt: skip
            replay_total = None if replay_total is None else replay_total + max(delta, 0)
        else:
            replay_why.append(f"{gpu_label(g)}: {c1.get('replay_why') or c0.get('replay_why') or 'not read'}")
        a0, a1 = c0.get("aer"), c1.get("aer")
        if isinstance(a0, dict) and isinstance(a1, dict):
            grown = {k: a1.get(k, 0) - a0.get(k, 0) for k in ("correctable", "nonfatal", "fatal")}
            bad = {k: v for k, v in grown.items() if k != "correctable" and v > 0}
            if bad:
                what = ", ".join(f"{v} {k}" for k, v in bad.items())
                findings.append(finding("pcie_aer", g, f"new uncorrectable PCIe AER errors {between}: {what}",
                                        FIX_AER))  # fmt: skip
            if grown["correctable"] > 0:
                notes.append(f"{gpu_label(g)}: {grown['correctable']} new correctable PCIe AER errors {between}")
            aer_total = None if aer_total is None else aer_total + sum(max(v, 0) for v in grown.values())
        else:
            aer_why.append(f"{gpu_label(g)}: {c1.get('aer_why') or c0.get('aer_why') or 'not read'}")
    out: dict[str, tuple[int | None, str]] = {}
    out["pcie_replay_growth"] = (None, "NOT RUN: " + "; ".join(replay_why)) if replay_why else (replay_total, "")
    out["pcie_aer_growth"] = (None, "NOT RUN: " + "; ".join(aer_why)) if aer_why else (aer_total, "")
    return out


def growth(
    facts: dict[str, Any], facts_end: dict[str, Any] | None, findings: list, notes: list[str]
) -> dict[str, tuple[int | None, str]]:
    """The counters of the node facts before the suite against those after it (see the module)."""
    start = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    if not start:
        return dict.fromkeys(FIGURES, (None, "no GPU in the node facts"))
    if not all("pcie_counters" in g for g in start):
        return dict.fromkeys(FIGURES, (None, NO_READING))
    if facts_end is None:
        return dict.fromkeys(FIGURES, (None, NO_END))
    end = [g for g in facts_end.get("gpus") or [] if isinstance(g, dict)]
    return compare(start, end, findings, notes, "during the suite")
