"""The judge of ``gpuaccept health-check`` (docs/checks/health.md, "The passive health check"): one passive
reading of the node judged by the health rules (gpuaccept.judge.health_rules, the suite's, with the PCIe link read
at idle), the counters' growth since the last check (NVLink: gpuaccept.judge.nvlink_rules; PCIe replays and AER:
gpuaccept.judge.pcie_rules), SXIDs where the node has NVSwitches, and a GPU that is busy but draws idle power.

The outcome is node-problem-detector's custom plugin contract and the Slurm health check's: ``ok`` (exit 0),
``problem`` (exit 1: a finding), ``unknown`` (exit 2: the check could not look, and found nothing wrong).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuaccept.judge import health_rules, nvlink_rules, pcie_rules, xid_actions
from gpuaccept.judge.rules.finding import Finding, finding, gpu_label
from gpuaccept.references import NodeType, ReferenceError

EXIT = {"ok": 0, "problem": 1, "unknown": 2}
#: A GPU whose kernels ran this share of NVML's last sample period (``nvmlDeviceGetUtilizationRates``: the percent
#: of time one or more kernels executed) while it draws no more than its idle power bound is not computing: a hang
#: (a kernel spinning on a flag, a collective waiting for a dead peer). gpuaccept's choice: a GPU at work and
#: computing draws well above its idle figure; 90 % leaves out a GPU between two short kernels.
HANG_UTILIZATION_MIN = 90
FIX_HANG = (
    "a GPU busy without drawing power is hung: look at the job on it (py-spy/cuda-gdb, NCCL's debug log), end it; "
    "reset the GPU (nvidia-smi -r -i N) if it stays busy with no process"
)


@dataclass
class Outcome:
    status: str = "ok"
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    sxid: str = ""

    @property
    def exit_status(self) -> int:
        return EXIT[self.status]


def _idle_bound(node_type: NodeType) -> tuple[float | None, str]:
    """The idle power bound of the node type's GPU (the power check's ``idle_power_max_w``), or None and why."""
    try:
        ref = node_type.metric("power", "idle_power_max_w")
    except ReferenceError as err:
        return None, str(err)
    if not ref.judged or ref.upper_bound is None:
        why = ref.informational or "no bound"
        return None, f"{ref.where or node_type.name}: idle_power_max_w is not judged ({why})"
    return ref.upper_bound, ""


def hangs(gpus: list[dict[str, Any]], node_type: NodeType, findings: list, notes: list[str]) -> None:
    """A GPU busy (utilization at least HANG_UTILIZATION_MIN) at no more than its idle power bound."""
    bound, why = _idle_bound(node_type)
    if bound is None:
        notes.append(f"hang rule not applied: {why}")
        return
    for g in gpus:
        util, power = g.get("utilization_gpu_pct"), g.get("power_w")
        if util is None or power is None:
            notes.append(f"{gpu_label(g)}: hang rule not applied (utilization or power not read)")
        elif util >= HANG_UTILIZATION_MIN and power <= bound:
            findings.append(finding("gpu_hang", g, f"busy ({util} % utilization) but drawing {power:g} W, no more "
                                    f"than its idle bound ({bound:g} W): hung", FIX_HANG))  # fmt: skip


def _as_facts(reading: dict[str, Any]) -> dict[str, Any]:
    return {"gpus": reading.get("gpus") or [], "gathered_unix": reading.get("checked_unix")}


def since_last(previous: dict[str, Any] | None, now: dict[str, Any], expect: dict[str, Any], findings: list,
               notes: list[str]) -> None:  # fmt: skip
    """The NVLink and PCIe counters' growth since the last check (``previous``, the state it kept)."""
    if previous is None:
        notes.append("first check here: the NVLink and PCIe counters' growth is judged from the next check on")
        return
    before, after = _as_facts(previous), _as_facts(now)
    if any(isinstance(g.get("nvlink"), dict) for g in before["gpus"]):
        nvlink_rules.growth(before, after, expect, findings, notes)
    for name, (value, why) in pcie_rules.compare(before["gpus"], after["gpus"], findings, notes,
                                                 "since the last check").items():  # fmt: skip
        if value is None:
            notes.append(f"{name}: {why}")


def assess(doc: dict[str, Any], node_type: NodeType, expected_gpus: int | None,
           previous: dict[str, Any] | None, now: dict[str, Any]) -> Outcome:  # fmt: skip
    """One passive reading judged (see the module). ``previous``/``now``: the counters kept by the last check and
    read by this one (``{"checked_unix", "gpus": [{index, uuid, pci_bus_id, nvlink, pcie_counters}]}``)."""
    out = Outcome()
    obs = (doc.get("results") or {}).get("observations")
    if not isinstance(obs, dict):
        errors = "; ".join(map(str, doc.get("errors") or ["no observations"]))
        out.findings.append(finding("gpu_count", None, f"cannot read the GPUs ({errors}); node type "
                                    f"{node_type.name} has {node_type.gpu_count}", "look at nvidia-smi and the "
                                    "driver (dmesg | grep -i nvrm); reseat or power the GPUs"))  # fmt: skip
        out.status = "problem"
        return out
    findings, notes, not_run = health_rules.assess(doc, node_type, expected_gpus)
    expect = health_rules.expectations(node_type)
    since_last(previous, now, expect, findings, notes)
    hangs(obs.get("gpus") or [], node_type, findings, notes)
    kernel_log = (doc.get("results") or {}).get("kernel_log") or {}
    out.sxid = xid_actions.judge_sxids(kernel_log.get("sxid_events"), obs.get("gpus") or [], [], [])
    out.findings, out.warnings = findings, notes
    out.not_run = [not_run] if not_run else []
    out.status = "problem" if findings else "unknown" if not_run else "ok"
    return out


def reason(out: Outcome, limit: int = 200) -> str:
    """What failed, short, as a Slurm drain reason after ``gpuaccept: `` and node-problem-detector's message: each
    rule with its GPUs, and an XID's action."""
    parts: list[str] = []
    for f in out.findings:
        what = f.rule + (f" GPU {f.gpu}" if f.gpu is not None else "")
        if f.action:
            what += f" ({f.action})"
        if what not in parts:
            parts.append(what)
    text = "; ".join(parts)
    return text if len(text) <= limit else text[: limit - 3] + "..."
