"""The fabric's counters over the suite (docs/checks/fabric.md, "Over the suite"): a reading before and one after,
port by port. A counter that went down was reset (``perfquery -R``, a driver reload, an HCA reset): its growth over
the suite cannot be known, and that fails, as the check could not look. The error counters of
gpuaccept.judge.fabric_expect.COUNTER_LIMITS fail when they grew past their thresholds, and a port's net device
that changed carrier (``carrier_changes``) flapped."""

from __future__ import annotations

from typing import Any

from gpuaccept.judge.fabric_expect import COUNTER_LIMITS
from gpuaccept.judge.fabric_rules import finding
from gpuaccept.judge.rules.finding import Finding
from gpuaccept.probe import fabric


def window(doc: dict[str, Any], facts: dict[str, Any] | None, facts_end: dict[str, Any] | None
           ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:  # fmt: skip
    """(reading before, reading after, which window): the node facts' where they hold a fabric reading, else the
    check's own readings around its ib_write_bw runs."""
    results = doc.get("results") if isinstance(doc.get("results"), dict) else {}
    start = (facts or {}).get("fabric")
    end = (facts_end or {}).get("fabric")
    start_ok, end_ok = isinstance(start, dict) and start.get("hcas"), isinstance(end, dict) and end.get("hcas")
    before = start if start_ok else results.get("before")
    after = end if end_ok else results.get("after")
    which = ("the suite (node facts before and after it)" if start_ok and end_ok else
             "from before the suite (node facts) to the fabric check's end" if start_ok else
             "the fabric check's own run (no fabric reading in the node facts before and after the suite)")  # fmt: skip
    return before, after, which


def _port_key(hca: dict[str, Any], port: dict[str, Any]) -> tuple[str, int]:
    return str(hca.get("name")), int(port.get("port") or 0)


def growth(before: dict[str, Any], after: dict[str, Any], expect: dict[str, Any], notes: list[str]
           ) -> tuple[list[Finding], int]:  # fmt: skip
    """(findings, the total growth of the error counters with a threshold) from ``before`` to ``after``."""
    out: list[Finding] = []
    total = 0
    later = {_port_key(h, p): p for h, p in fabric.ports(after)}
    flaps_max = expect.get("carrier_changes_max", 0)
    for h, p in fabric.ports(before):
        where = f"{h.get('name')} port {p.get('port')}"
        q = later.get(_port_key(h, p))
        if q is None:
            out.append(finding("port_missing", where, "read before the suite, not after it"))
            continue
        reset = []
        for group in ("counters", "hw_counters"):
            c0, c1 = p.get(group) or {}, q.get(group) or {}
            reset += [f"{group}/{n} {c0[n]} -> {c1[n]}" for n in sorted(set(c0) & set(c1)) if c1[n] < c0[n]]
        if reset:
            out.append(finding("counter_reset", where, "counters went down over the suite: " + ", ".join(reset[:6])
                               + (f" and {len(reset) - 6} more" if len(reset) > 6 else "")))  # fmt: skip
            continue
        c0, c1 = p.get("counters") or {}, q.get("counters") or {}
        for lim in COUNTER_LIMITS:
            if lim.counter not in c0 or lim.counter not in c1:
                continue
            delta = c1[lim.counter] - c0[lim.counter]
            total += delta
            if c0[lim.counter]:
                notes.append(f"{where}: {lim.counter} was {c0[lim.counter]} before the suite (since the driver "
                             "loaded or the counters were last reset)")  # fmt: skip
            if delta > lim.limit:
                out.append(finding("port_counters", where, f"{lim.counter} ({lim.pma_name}) grew by {delta} over "
                                   f"the suite, more than {lim.limit}: {lim.meaning}"))  # fmt: skip
        k0, k1 = p.get("carrier_changes"), q.get("carrier_changes")
        if isinstance(k0, int) and isinstance(k1, int):
            if k1 < k0:
                out.append(finding("counter_reset", where, f"carrier_changes of {p.get('netdev')} went from {k0} to "
                                   f"{k1}: the net device was re-created"))  # fmt: skip
            elif k1 - k0 > flaps_max:
                out.append(finding("link_flap", where, f"{p.get('netdev')} changed carrier {k1 - k0} times over "
                                   f"the suite (allowed {flaps_max}): the link flapped"))  # fmt: skip
    return out, total
