"""The NVLink rules of the health check (docs/checks/health.md, "NVLink"): the links the health probe saw up
against the node type's ``health.nvlink_links_up`` and ``nvlink_speed_mbps``, and the NVLink readings of the
node facts taken before the suite (``node-facts.json``) against those taken after it (``node-facts-end.json``):
a link that went down, and error counters that grew.

Why a replay or a recovery fails at once: on a node under acceptance the links carried the suite's traffic for
minutes; a replay (a flit sent again) or a recovery (the link retrained) in that time is a link that is not clean,
and DCGM's own health watch fails a GPU on one replay or recovery error (DCGM_LIMIT_MAX_NVLINK_ERROR, 1). CRC errors
are detected and corrected on the link, and a healthy link counts some under load: DCGM's health watch fails a link
whose CRC errors grow by more than 100 per second (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR), and a healthy 4 x H200 HGX node
measured here counted 28-86 data CRC errors per link over a 75 s nightly suite (docs/evidence/2026-11-27-multigpu). So
a link fails when its CRC errors grow faster than ``health.nvlink_crc_rate_max`` per second over the time between
the two snapshots (default 100, DCGM's limit), or by more than ``health.nvlink_crc_growth_max`` where a site sets
an absolute bound; without the snapshots' times, the absolute bound alone (default 0) applies.
"""

from __future__ import annotations

from typing import Any

from gpuaccept.judge.rules.finding import Finding, finding, gpu_label
from gpuaccept.probe import nvlink

NO_END_SNAPSHOT = (
    "no NVLink reading after the suite (node-facts-end.json: gpuaccept run writes it on the node after ReFrame; "
    "a run given --facts, or a Slurm run, has none)"
)
NO_NVLINK = "no NVLink on this node"
FIX_LINK = (
    "check nvidia-smi nvlink -s and -e, the fabric manager (systemctl status nvidia-fabricmanager) and the NVSwitch "
    "trays; reset the GPU (nvidia-smi -r) and run the suite again; reseat or RMA the board if the link stays down"
)
FIX_ERRORS = (
    "a marginal link: look at nvidia-smi nvlink -e for the link, reset the GPU and run the suite again; if the "
    "counter grows again, reseat the GPU board or the NVSwitch tray, else RMA"
)
REPLAY_RECOVERY = ("replay", "recovery")
#: CRC errors per second and link that fail it (DCGM's DCGM_LIMIT_MAX_NVLINK_CRC_ERROR).
CRC_RATE_MAX = 100


def _match(gpu: dict[str, Any], others: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The same GPU in another snapshot: by UUID, else bus id, else index."""
    for key in ("uuid", "pci_bus_id", "index"):
        if gpu.get(key) is not None:
            for o in others:
                if o.get(key) == gpu.get(key):
                    return o
    return None


def _down(reading: dict[str, Any]) -> list[int]:
    return [ln["link"] for ln in reading.get("links") or [] if ln.get("state") != "up"]


def links_up(
    gpus: list[dict[str, Any]], expect: dict[str, Any], findings: list, notes: list[str]
) -> None:
    """The health probe's reading of each GPU against ``nvlink_links_up`` and ``nvlink_speed_mbps``; with
    ``nvlink_informational`` set, what falls short is a note, not a finding."""
    want, speed = expect.get("nvlink_links_up") or 0, expect.get("nvlink_speed_mbps")
    informational = expect.get("nvlink_informational")
    out: list[Finding] = []
    for g in gpus:
        reading = g.get("nvlink")
        up = nvlink.summary(reading)[1] if isinstance(reading, dict) else g.get("nvlink_up")
        if want and up is None:
            out.append(finding("nvlink", g, f"NVLink not read (nvidia-smi -q lists no link states), the node type "
                               f"expects {want} links up", FIX_LINK))  # fmt: skip
        elif want and up < want:
            down = _down(reading) if isinstance(reading, dict) else []
            which = f" (down: link {', '.join(map(str, down))})" if down else ""
            why = f" ({reading['why']})" if isinstance(reading, dict) and reading.get("why") else ""
            out.append(finding("nvlink", g, f"{up} NVLink links up{which}{why}, the node type has {want}", FIX_LINK))
        for ln in (reading or {}).get("links") or [] if speed else []:
            if ln.get("state") == "up" and ln.get("speed_mbps") is not None and ln["speed_mbps"] < speed:
                out.append(finding("nvlink", g, f"NVLink link {ln['link']} runs at {ln['speed_mbps']} MB/s, the "
                                   f"node type expects {speed} MB/s", FIX_LINK))  # fmt: skip
    if informational:
        notes += [f"{f.message} (informational: {informational})" for f in out]
    else:
        findings += out


def _elapsed(facts: dict[str, Any], facts_end: dict[str, Any] | None) -> float | None:
    """Seconds between the snapshot before the suite and the one after it; None when either has no time."""
    t0, t1 = facts.get("gathered_unix"), (facts_end or {}).get("gathered_unix")
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in (t0, t1)):
        return None
    return t1 - t0 if t1 > t0 else None


def _over(seconds: float | None, rate: float, expect: dict[str, Any]) -> str:
    if expect.get("nvlink_crc_growth_max") is not None or not seconds:
        return ""
    return f": {rate:g} per second over the {seconds:.0f} s between the readings"


def _counters(link: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in (link.get("counters") or {}).items() if isinstance(v, int)}


def required(expect: dict[str, Any]) -> bool:
    """Whether the node type has NVLink links whose counters must be read (``nvlink_links_up`` set and not
    ``nvlink_informational``: a type whose links nobody has counted on a good node yet, which a board or VM may not
    show at all): then a counter that cannot be compared fails instead of being waived. Counters that grew fail on
    every type."""
    return bool(expect.get("nvlink_links_up")) and not expect.get("nvlink_informational")


def growth(
    facts: dict[str, Any], facts_end: dict[str, Any] | None, expect: dict[str, Any], findings: list, notes: list[str]
) -> tuple[int | None, str]:
    """Links that went down and counters that grew between the snapshot before the suite (``facts``) and the one
    after it (``facts_end``). Returns (the total growth of every counter of every link, or None) and why there
    is no total (no NVLink, no snapshot after the suite, readings without counters). On a node type that has
    NVLink (:func:`required`) what could not be compared is a finding: a GPU or link not read before or after
    the suite, a counter not read both times, no reading after the suite; and a counter that went down anywhere
    is one (a reset during the suite hides the errors counted before it)."""
    unread: list[tuple[dict[str, Any] | None, str]] = []
    total, why = _growth(facts, facts_end, expect, findings, notes, unread)
    if required(expect):
        if why and not unread:
            unread.append((None, why))
        for g, what in unread:
            findings.append(finding("nvlink_unread", g, f"NVLink error counters not judged: {what}; node type has "
                                    f"{expect.get('nvlink_links_up')} links per GPU whose errors must be counted",
                                    FIX_UNREAD))  # fmt: skip
    return total, why


FIX_UNREAD = (
    "run the suite through `gpuaccept run` (it reads the counters before and after the suite), as a user NVML lets "
    "read them; check nvidia-smi nvlink -e on the GPU, and reset it if NVML cannot read its links"
)


def _growth(
    facts: dict[str, Any], facts_end: dict[str, Any] | None, expect: dict[str, Any], findings: list, notes: list[str],
    unread: list[tuple[dict[str, Any] | None, str]],
) -> tuple[int | None, str]:
    start = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    readings = [g.get("nvlink") for g in start]
    if not start:
        return None, "no GPU in the node facts"
    if not all(isinstance(r, dict) for r in readings):
        return None, "the node facts hold no NVLink reading (gathered through nvidia-smi, or by an older gpuaccept)"
    if not any(r.get("supported") for r in readings):
        whys = "; ".join(sorted({str(r.get("why")) for r in readings}))
        if any(r.get("supported") is None for r in readings):
            return None, f"NVLink not read before the suite ({whys})"
        return None, f"{NO_NVLINK}: {whys}"
    if facts_end is None:
        return None, NO_END_SNAPSHOT
    end = [g for g in facts_end.get("gpus") or [] if isinstance(g, dict)]
    seconds = _elapsed(facts, facts_end)
    crc_rate = expect.get("nvlink_crc_rate_max", CRC_RATE_MAX)
    crc_max = expect.get("nvlink_crc_growth_max")
    if crc_max is None:
        crc_max = int(crc_rate * seconds) if seconds else 0
    total, compared = 0, 0
    for g in start:
        before = g["nvlink"]
        if not before.get("supported"):
            unread.append((g, f"NVLink not read before the suite ({before.get('why') or 'no reading'})"))
            continue
        after_gpu = _match(g, end)
        if after_gpu is None:
            error = facts_end.get("gpu_error")
            findings.append(finding("gpu_count", g, "present before the suite, not found after it"
                                    + (f" ({error})" if error else ""),
                                    "look for XID 79 in the kernel log; reseat the GPU, check its power; "
                                    "nvidia-smi -L against lspci -d 10de:"))  # fmt: skip
            continue
        after = after_gpu.get("nvlink") if isinstance(after_gpu.get("nvlink"), dict) else {}
        if not after.get("supported"):
            findings.append(finding("nvlink", g, "NVLink read before the suite, not after it "
                                    f"({after.get('why') or 'no reading'})", FIX_LINK))  # fmt: skip
            continue
        after_links = {ln.get("link"): ln for ln in after.get("links") or []}
        for ln in before.get("links") or []:
            k = ln.get("link")
            later = after_links.get(k)
            if later is None:
                unread.append((g, f"NVLink link {k} read before the suite, not after it"))
                continue
            if ln.get("state") == "up" and later.get("state") != "up":
                findings.append(finding("nvlink", g, f"NVLink link {k} went down during the suite (up before it)",
                                        FIX_LINK))  # fmt: skip
            c0, c1 = _counters(ln), _counters(later)
            for name in sorted(set(c0) ^ set(c1)):
                unread.append((g, f"NVLink link {k}: the {name} counter was read "
                               f"{'before' if name in c0 else 'after'} the suite only"))  # fmt: skip
            for name in sorted(set(c0) & set(c1)):
                delta = c1[name] - c0[name]
                compared += 1
                if c0[name]:
                    notes.append(f"{gpu_label(g)}: NVLink link {k}: {c0[name]} {name} errors before the suite "
                                 "(counted since the driver loaded)")  # fmt: skip
                if delta < 0:
                    findings.append(finding("nvlink_errors", g, f"NVLink link {k}: the {name} counter went from "
                                            f"{c0[name]} to {c1[name]} during the suite: reset (a driver reload or "
                                            "GPU reset), so the errors counted before the reset cannot be known",
                                            FIX_ERRORS))  # fmt: skip
                    continue
                total += delta
                limit = 0 if name in REPLAY_RECOVERY else crc_max
                if delta > limit:
                    allowed = f" (allowed: {limit}{_over(seconds, crc_rate, expect)})" if limit else ""
                    findings.append(finding("nvlink_errors", g, f"NVLink link {k}: {delta} {name} errors during "
                                            f"the suite ({c0[name]} -> {c1[name]}){allowed}", FIX_ERRORS))  # fmt: skip
    if not compared:
        return None, "no NVLink error counter could be read both before and after the suite"
    return total, ""
