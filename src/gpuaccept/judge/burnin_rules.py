"""The burn-in's rules (docs/checks/burnin.md): a gpuaccept-burnin document's timelines, turns and events judged, GPU
by GPU. Each finding names the GPU (index, bus id, serial), when it happened (seconds into the burn-in and UTC),
what was seen and what an operator tries first. The probe (gpuaccept.probe.burnin) records; these rules decide,
here and nowhere else.

The rules, in the order they are applied to each GPU:

- NVML answered for the whole burn-in: no GPU lost mid-run, no stretch of more than ``MAX_GAP_S`` without a
  sample;
- no XID event (NVML's event set, else the kernel log);
- no uncorrectable ECC error counted during the burn-in, no row remapping pending or failed;
- no clock-event (throttle) reason other than the software power cap (and idle, between turns): thermal
  slowdowns, HW slowdown, the power brake, sync boost, clock settings;
- GPU temperature below NVML's slowdown threshold, memory (HBM) temperature below its maximum operating
  temperature (the GPU's slowdown threshold where NVML gives none for the memory); where NVML gives no slowdown
  threshold at all, the thermal slowdown reasons of the throttle rule stand for it;
- no compute process that the burn-in did not start;
- the last GEMM window's median rate at least ``LAST_OVER_FIRST_MIN`` of the first's.

A burn-in that could not look (no XID source, no ECC counter, no GPU temperature or throttle reasons) is NOT RUN
with the reason, never passed.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from gpuaccept.judge import xid_actions
from gpuaccept.judge.health_rules import XID_DEFAULT_FIX, XID_FIXES
from gpuaccept.judge.rules.document import FAULT_REASONS
from gpuaccept.judge.rules.finding import Finding
from gpuaccept.probe import burnin
from gpuaccept.probe import burnin_timeline as tl

#: The last GEMM window's median rate must be at least this fraction of the first's, on every GPU. A window's median
#: over thousands of back-to-back calls moves by 1-3 % from run to run on the test H100 and H200 at the power cap,
#: although single FP64 calls there vary by up to 16 % (docs/reference-values.md); the first window runs on the
#: coolest GPU. A GPU that throttles once hot, or that shares its SMs with another process, loses more than 10 %.
LAST_OVER_FIRST_MIN = 0.9
#: The longest stretch without a sample that still counts as watched (the sampler reads every second).
MAX_GAP_S = 10.0
#: A burn-in must have run its planned length less at most one GEMM window (its schedule ends on a window).
#: The shortest burn-in the judge accepts, whatever was asked: a minute, the shortest ``gpuaccept burnin`` runs
#: (two GEMM windows of 10 s and a memory-test turn per GPU, so the last window can be compared with the first);
#: docs/checks/burnin.md says why the commissioning default is 30 minutes and what a shorter one proves.
MIN_DURATION_S = burnin.MIN_MINUTES * 60.0

# What an operator tries first for a clock-event reason the power check does not name (rules.FAULT_REASONS does).
OTHER_REASON_FIXES = {
    "sync_boost": "clocks held to a sync-boost group's slowest GPU: look at the group (nvidia-smi -q -d PERFORMANCE) "
    "and the GPU that holds it back",
    "applications_clocks_setting": "application clocks are set below the maximum: reset them (nvidia-smi -rac) if "
    "that was not intended",
    "display_clock_setting": "clocks held by the display clock setting: a compute node should drive no display",
}


def _finding(rule: str, gpu: int | None, message: str, fix: str) -> Finding:
    """A burn-in finding: ``message`` says what and when (led by the GPU's label where ``gpu`` is set)."""
    return Finding(rule, message, fix, gpu=gpu)


def _utc(started_unix: float | None, t_s: float | None) -> str:
    if started_unix is None or t_s is None:
        return "time unknown"
    return dt.datetime.fromtimestamp(started_unix + t_s, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _label(g: dict[str, Any]) -> str:
    return f"GPU {g.get('gpu')} (bus {g.get('pci_bus_id')}, serial {g.get('serial') or 'unknown'})"


class _Gpu:
    """One GPU's record in the document, with its label and a clock that says 'at 312 s (2026-...Z)'."""

    def __init__(self, g: dict[str, Any], started_unix: float | None) -> None:
        self.g = g
        self.index = g.get("gpu")
        self.label = _label(g)
        self.started = started_unix
        self.timeline = tl.check(g.get("timeline"))

    def moment(self, t_s: float | None) -> str:
        """'312 s (2026-...Z)' into the run; 'an unknown time' without one."""
        if t_s is None:
            return "an unknown time"
        return f"{t_s:.0f} s ({_utc(self.started, t_s)})"

    def at(self, t_s: float | None) -> str:
        return f"at {self.moment(t_s)}"

    def finding(self, rule: str, message: str, fix: str) -> Finding:
        return _finding(rule, self.index, f"{self.label}: {message}", fix)


def _watched(gpu: _Gpu, elapsed_s: float) -> list[Finding]:
    out = []
    lost = tl.first_lost(gpu.timeline)
    if lost is not None:
        out.append(
            gpu.finding(
                "lost",
                f"stopped answering NVML {gpu.at(lost)} (no clock, temperature or power)",
                "look for XID 79 (fallen off the bus) in the kernel log; reseat the GPU, check its "
                "power cables, slot and firmware",
            )
        )
    gap, start = tl.largest_gap(gpu.timeline, elapsed_s)
    if gap > MAX_GAP_S:
        out.append(
            gpu.finding(
                "sampling",
                f"no sample for {gap:.0f} s from {gpu.moment(start)}: the burn-in did not watch the GPU then",
                "look at the node's load (the sampler is one Python thread) and rerun",
            )
        )
    return out


def _xid_fix(xid: Any) -> str:
    """The XID catalogue's immediate action, then what to try. Every XID fails a burn-in, a RESTART_APP one too:
    the application the catalogue would restart is the burn-in's own load (gpuaccept.judge.xid_actions)."""
    action, row = xid_actions.action_of(xid) if isinstance(xid, int) else (xid_actions.UNKNOWN, None)
    bucket = f" (the catalogue's {row['bucket']})" if row else ""
    return f"immediate action: {xid_actions.ACTION_WORDS[action]}{bucket}; {XID_FIXES.get(xid, XID_DEFAULT_FIX)}"


def _xids(gpu: _Gpu) -> list[Finding]:
    out = []
    for e in gpu.g.get("xid_events") or []:
        xid = e.get("xid")
        out.append(
            gpu.finding(
                "xid", f"XID {xid} {gpu.at(e.get('t_s'))} ({e.get('source')})", _xid_fix(xid)
            )
        )
    return out


def _memory(gpu: _Gpu) -> list[Finding]:
    out = []
    rise = tl.first_rise(gpu.timeline, "ecc_uncorrected")
    if rise is not None:
        t, before, after = rise
        new = tl.rise(gpu.timeline, "ecc_uncorrected")
        out.append(
            gpu.finding(
                "ecc",
                f"{new:g} uncorrectable ECC errors during the burn-in, the first {gpu.at(t)} "
                f"(volatile count {before:g} -> {after:g})",
                "drain the node and reset the GPU "
                "(nvidia-smi -r) or reboot so the rows are remapped; RMA the GPU if they come back",
            )
        )
    for column, what, fix in (
        (
            "remap_pending",
            "a row remapping is pending",
            "reset the GPU (nvidia-smi -r) or reboot to apply the remapping, then burn it in again",
        ),
        ("remap_failure", "a row remapping failed (no spare rows left in a bank)", "drain the node and RMA the GPU"),
    ):
        seen = tl.first_at_or_above(gpu.timeline, column, 1)
        if seen is not None:
            at_start = seen[0] == gpu.timeline["t_s"][0]
            when = f"already at the first sample, {gpu.at(seen[0])}" if at_start else f"from {gpu.moment(seen[0])}"
            out.append(gpu.finding("row_remapping", f"{what} {when}", fix))
    return out


def _throttle(gpu: _Gpu) -> list[Finding]:
    out = []
    for e in tl.episodes(gpu.timeline):
        if e.reason in tl.POWER_CAP_OR_IDLE:
            continue
        hot = tl.peak(gpu.timeline, "gpu_temp_c")
        fix = FAULT_REASONS.get(e.reason) or OTHER_REASON_FIXES.get(e.reason) or "look the reason bit up in NVML"
        out.append(
            gpu.finding(
                "throttle",
                f"clocks held back by {e.reason} {gpu.at(e.start_s)} for {e.seconds:.0f} s "
                f"({e.samples} samples; hottest {hot[0] if hot else '?'} C)",
                fix,
            )
        )
    return out


def _temperatures(gpu: _Gpu) -> list[Finding]:
    thresholds = gpu.g.get("thresholds_c") or {}
    out = []
    slowdown = thresholds.get("gpu_slowdown_c")
    memory_max = thresholds.get("memory_max_operating_c") or slowdown
    for column, limit, what, which in (
        ("gpu_temp_c", slowdown, "GPU temperature", "its slowdown threshold"),
        (
            "mem_temp_c",
            memory_max,
            "memory (HBM) temperature",
            "its maximum operating temperature"
            if thresholds.get("memory_max_operating_c")
            else "the GPU's slowdown threshold (NVML gives none for the memory)",
        ),
    ):
        if limit is None:
            continue
        seen = tl.first_at_or_above(gpu.timeline, column, limit)
        if seen is not None:
            hot = tl.peak(gpu.timeline, column)
            out.append(
                gpu.finding(
                    "temperature",
                    f"{what} {seen[1]:g} C {gpu.at(seen[0])}, at or above {which} "
                    f"{limit:g} C (NVML); hottest {hot[0] if hot else seen[1]:g} C",
                    "check the fans, "
                    "airflow, liquid loop and inlet temperature, and that nothing blocks the GPU's "
                    "heatsink",
                )
            )
    return out


def _foreign(gpu: _Gpu) -> list[Finding]:
    out = []
    for p in gpu.g.get("foreign_processes") or []:
        out.append(
            gpu.finding(
                "foreign_process",
                f"compute process pid {p.get('pid')} of user {p.get('user') or 'unknown'}"
                f" ({p.get('name') or 'executable unknown'}), not started by the burn-in, ran on it from "
                f"{gpu.moment(p.get('first_s'))} to {p.get('last_s', 0):.0f} s",
                f"stop it (kill {p.get('pid')}) and burn the node in again: a shared GPU's figures are not the GPU's",
            )
        )
    return out


def _performance(gpu: _Gpu) -> list[Finding]:
    windows = gpu.g.get("windows") or []
    rated = tl.gemm_windows(windows)
    ratio = tl.windows_ratio(windows)
    if ratio is None:
        return [
            gpu.finding(
                "performance",
                f"{len(rated)} GEMM windows measured a rate: the last cannot be compared with the first",
                "burn in for longer (at least a minute), and see the turns' problems",
            )
        ]
    first, last, r = ratio
    if r >= LAST_OVER_FIRST_MIN:
        return []
    floor = LAST_OVER_FIRST_MIN * first["tflops_median"]
    drop = next((w for w in rated if w["tflops_median"] < floor), last)
    return [
        gpu.finding(
            "performance",
            f"the last GEMM window ({last['start_s']:.0f}-{last.get('end_s') or 0:.0f} s) "
            f"ran {last['tflops_median']:.4g} TFLOP/s, {r:.3f} of the first ({first['tflops_median']:.4g} "
            f"TFLOP/s), below {LAST_OVER_FIRST_MIN:g}; first below {gpu.at(drop['start_s'])} (window "
            f"{drop.get('index')}: {drop['tflops_median']:.4g} TFLOP/s, SM "
            f"{drop.get('sm_mhz_median') or '?'} MHz)",
            "see the other findings for this GPU (throttling, "
            "temperature, a foreign process); else run the gemm and power checks on it alone",
        )
    ]


def _cannot_look(g: dict[str, Any], gpu: _Gpu, doc: dict[str, Any]) -> list[str]:
    why = []
    if not g.get("xid_source"):
        xid = (doc.get("results") or {}).get("xid") or {}
        why.append(
            f"{gpu.label}: XID events could not be watched ({xid.get('why_not_nvml') or 'no source'}); fix: "
            "run the suite as root, or give its user CAP_SYSLOG, or set kernel.dmesg_restrict=0"
        )
    for column, what in (
        ("ecc_uncorrected", "the ECC counters"),
        ("gpu_temp_c", "the GPU temperature"),
        ("reasons", "the clock-event reasons"),
    ):
        if tl.length(gpu.timeline) and all(v is None for v in gpu.timeline[column]):
            why.append(f"{gpu.label}: NVML never reported {what}" + (" (is ECC enabled?)" if "ECC" in what else ""))
    return why


def _duration(planned: Any, elapsed: Any, window: Any) -> list[Finding]:
    """The burn-in lasted what was asked (less at most its last GEMM window) and at least MIN_DURATION_S."""
    rerun = "see the document's errors (a signal, a time limit) and rerun"
    if not _number(window):  # an older document: the window its schedule gave
        window = burnin.WINDOW_S_MAX
    if not _number(planned) or not _number(elapsed):
        return [_finding("duration", None, f"the document does not say how long the burn-in was asked to run and ran "
                        f"(duration_s {planned!r}, elapsed_s {elapsed!r}, window_s {window!r})", rerun)]  # fmt: skip
    out = []
    # The window the schedule gives a burn-in of that length (gpuaccept.probe.burnin), whatever the document says.
    window = min(window, burnin.WINDOW_S_MAX, max(burnin.WINDOW_S_MIN, planned / 6.0))
    if elapsed < planned - window:
        out.append(_finding("duration", None, f"the burn-in ran {elapsed:.0f} s of the {planned:g} s asked", rerun))
    if planned < MIN_DURATION_S:
        out.append(_finding("duration", None, f"the burn-in was asked for {planned:g} s: shorter than the "
                           f"{MIN_DURATION_S:g} s any burn-in must last",
                           "run it for at least a minute (30 minutes to commission a node)"))  # fmt: skip
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


RULES = (_xids, _memory, _throttle, _temperatures, _foreign, _performance)


def assess(doc: dict[str, Any]) -> tuple[list[Finding], str | None]:
    """A burn-in document judged: (findings, why it could not look). The second is set when a GPU's XID events,
    ECC counters, GPU temperature or throttle reasons could not be read: the check is then NOT RUN with the reason
    (unless a finding already fails it)."""
    results = doc.get("results") if isinstance(doc.get("results"), dict) else {}
    started = results.get("started_unix")
    elapsed = results.get("elapsed_s")
    params = doc.get("parameters") or {}
    planned, window = params.get("duration_s"), params.get("window_s")
    findings: list[Finding] = []
    cannot: list[str] = []
    per_gpu = results.get("per_gpu")
    if not isinstance(per_gpu, list) or not per_gpu:
        return [_finding("document", None, "the burn-in recorded no GPU", "see the document's errors")], None
    findings += _duration(planned, elapsed, window)
    for g in per_gpu:
        try:
            gpu = _Gpu(g, started)
        except tl.TimelineError as err:
            findings.append(_finding("document", g.get("gpu"), f"{_label(g)}: {err}", "rerun the burn-in"))
            continue
        findings += _watched(gpu, elapsed if _number(elapsed) else 0.0)
        for rule in RULES:
            findings += rule(gpu)
        cannot += _cannot_look(g, gpu, doc)
    for e in (results.get("xid") or {}).get("unplaced_events") or []:
        findings.append(
            _finding(
                "xid",
                None,
                f"XID {e.get('xid')} on a GPU NVML does not list ({e.get('text')}) at {e.get('t_s')} s",
                _xid_fix(e.get("xid")),
            )
        )
    return findings, ("; ".join(cannot) or None)
