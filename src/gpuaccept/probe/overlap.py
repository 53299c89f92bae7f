"""The model of compute/transfer overlap of van Werkhoven et al., "Performance Models for CPU-GPU Data Transfers"
(CCGrid 2014), set against what ``gpuaccept-overlap`` measured.

The PCIe model per direction (LogGP-style, the paper's section V): one transfer of ``k`` bytes takes
``T(k) = (L + o) + k G``; ``n`` back-to-back transfers that together carry ``k`` bytes take
``(L + o) + k G + g (n - 1)``. Its parameters come from ``gpuaccept-overlap``'s own document (``L + o``: one
1-byte copy; ``g``: 16 back-to-back 1-byte copies, ``(T16 - T1) / 15``; ``G``: one copy of the whole buffer,
``(T - (L + o)) / k``), or, with :func:`links_from_bandwidth`, from the bandwidth check's fit (``gpuaccept-bw``'s
``results.model``: ``lo_us``, ``G_s_per_byte``, ``g_us``).

The predictions (the paper's figure 7; ``B`` bytes each way, ``tE`` the kernel alone on device-resident data,
``n`` streams, ``Thd(b) = (L+o)hd + b Ghd`` and ``Tdh(b)`` likewise, ``ghd``/``gdh`` the gaps):

- ``sync`` (the paper's "Explicit", no overlap): ``Thd(B) + tE + Tdh(B)``.
- ``streams_<n>`` with 2 or more copy engines (equation 5)::

      max(Thd(B) + ghd (n-1) + tE/n + Tdh(B/n),
          Thd(B/n) + tE + Tdh(B/n),
          Thd(B/n) + tE/n + Tdh(B) + gdh (n-1))

- ``streams_<n>`` with 1 copy engine (equations 3 and 4, no implicit synchronisation): the paper gives one
  formula for a dominant kernel and one for dominant transfers and no rule to choose; each is a lower bound of
  the other scenario's schedule too (the first chunk in, every kernel, the last chunk out; every transfer on the
  one engine), so the larger of the two is used. With no copy engine (``asyncEngineCount`` 0, outside the paper)
  nothing overlaps: ``Thd(B) + ghd (n-1) + tE + Tdh(B) + gdh (n-1)``.
- ``mapped`` (equation 6, every component overlapped at warp granularity, only the latencies exposed):
  ``max((L+o)hd + B Ghd + (L+o)dh, (L+o)hd + tE + (L+o)dh, (L+o)hd + (L+o)dh + B Gdh)``.
- ``managed``: the paper has no formula. Predicted as ``sync`` (prefetch in, kernel, prefetch out, in stream
  order): what page migration costs beyond a copy is not modelled, so its error measures that cost.

The paper's equations 1 and 2 (GPUs with implicit synchronisation, Fermi and older) are not used: every GPU the
benchmark is built for (compute capability 8.0 and newer) has none. The paper also notes that transfers in both
directions at once have their own G (its table II); ``bidir`` predictions repeat each formula with the G that
the simultaneous H2D + D2H copy gave (``(T_bidir - (L+o)) / B`` per direction).

:func:`annotate` adds ``results.model`` (per GPU and intensity: measured and predicted time, relative error,
Kendall's tau between the measured and the predicted order, the fastest method measured and predicted) and the
informational metrics ``model_rel_error_max`` and ``model_rank_tau_min`` to the document
(docs/checks/overlap.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

#: Measured times closer than this (relative) count as a tie when comparing orders.
TIE_REL = 0.02
#: A fraction of the one-way time overlapped (:func:`duplex`) from which H2D and D2H count as full duplex.
FULL_DUPLEX_MIN = 0.8


class OverlapError(ValueError):
    """The document lacks what the model needs; the message names the key."""


@dataclass(frozen=True)
class Link:
    """One direction of the PCIe model: ``lo_s`` = L + o (s), ``G`` (s/byte), ``g_s`` the gap (s)."""

    lo_s: float
    G: float
    g_s: float

    def time(self, nbytes: float, transfers: int = 1) -> float:
        """``transfers`` back-to-back transfers carrying ``nbytes`` in all: (L + o) + k G + g (n - 1)."""
        return self.lo_s + nbytes * self.G + self.g_s * (transfers - 1)


@dataclass(frozen=True)
class Inputs:
    """What one prediction needs: both directions, bytes each way, the kernel time, the copy engines."""

    h2d: Link
    d2h: Link
    bytes_h2d: float
    bytes_d2h: float
    kernel_s: float
    copy_engines: int


def predict_sync(p: Inputs) -> float:
    return p.h2d.time(p.bytes_h2d) + p.kernel_s + p.d2h.time(p.bytes_d2h)


def predict_streams(p: Inputs, n: int) -> float:
    """The paper's equation 5 (2+ copy engines) or the larger of equations 3 and 4 (1 copy engine)."""
    if n < 1:
        raise ValueError(f"streams must be at least 1, not {n}")
    hd_all = p.h2d.lo_s + p.bytes_h2d * p.h2d.G + p.h2d.g_s * (n - 1)
    dh_all = p.d2h.lo_s + p.bytes_d2h * p.d2h.G + p.d2h.g_s * (n - 1)
    hd_one = p.h2d.lo_s + p.bytes_h2d / n * p.h2d.G
    dh_one = p.d2h.lo_s + p.bytes_d2h / n * p.d2h.G
    te, te_n = p.kernel_s, p.kernel_s / n
    if p.copy_engines < 1:  # no copy engine: copies cannot overlap kernels (outside the paper), chunk after chunk
        return hd_all + te + dh_all
    if p.copy_engines >= 2:  # equation 5
        return max(hd_all + te_n + dh_one, hd_one + te + dh_one, hd_one + te_n + dh_all)
    dominant_kernel = hd_one + te + dh_one  # equation 3
    dominant_transfers = max(hd_all + dh_all, hd_all + te_n + dh_one, hd_one + te_n + dh_all)  # equation 4
    return max(dominant_kernel, dominant_transfers)


def predict_mapped(p: Inputs) -> float:
    """The paper's equation 6."""
    lo_hd, lo_dh = p.h2d.lo_s, p.d2h.lo_s
    return max(
        lo_hd + p.bytes_h2d * p.h2d.G + lo_dh,
        lo_hd + p.kernel_s + lo_dh,
        lo_hd + lo_dh + p.bytes_d2h * p.d2h.G,
    )


def predict(method: str, p: Inputs) -> float:
    """The predicted time of one method (``sync``, ``streams_<n>``, ``mapped``, ``managed``)."""
    if method in ("sync", "managed"):
        return predict_sync(p)
    if method == "mapped":
        return predict_mapped(p)
    if method.startswith("streams_"):
        try:
            n = int(method.removeprefix("streams_"))
        except ValueError:
            raise OverlapError(f"method {method!r}: no stream count after 'streams_'") from None
        return predict_streams(p, n)
    raise OverlapError(f"unknown method {method!r} (sync, streams_<n>, mapped, managed)")


def modelled(method: str) -> bool:
    """Whether the method's prediction is one of the paper's formulas (``managed``'s is not: its error is not the
    model's)."""
    return method in ("sync", "mapped") or method.startswith("streams_")


def kendall_tau(measured: list[float], predicted: list[float], tie_rel: float = TIE_REL) -> float:
    """Kendall's tau-a between two orders of the same methods: +1 same order, -1 reversed. A pair whose measured
    times are within ``tie_rel`` of each other counts as a tie (neither concordant nor discordant)."""
    if len(measured) != len(predicted):
        raise ValueError("measured and predicted differ in length")
    n = len(measured)
    if n < 2:
        return math.nan
    score = 0
    for i in range(n):
        for j in range(i + 1, n):
            dm = measured[i] - measured[j]
            if abs(dm) <= tie_rel * max(measured[i], measured[j]):
                continue
            dp = predicted[i] - predicted[j]
            score += 1 if dm * dp > 0 else -1 if dm * dp < 0 else 0
    return score / (n * (n - 1) / 2)


def duplex(h2d_s: float, d2h_s: float, bidir_s: float) -> dict[str, Any]:
    """How far H2D and D2H of the same size overlap when run at once: ``fraction_overlapped`` is
    ``(Thd + Tdh - Tbidir) / min(Thd, Tdh)``, 1 when the pair takes as long as the slower alone (full duplex), 0
    when it takes the sum (one direction at a time)."""
    total, slower, faster = h2d_s + d2h_s, max(h2d_s, d2h_s), min(h2d_s, d2h_s)
    fraction = (total - bidir_s) / faster if faster > 0 else math.nan
    return {
        "h2d_s": h2d_s,
        "d2h_s": d2h_s,
        "bidir_s": bidir_s,
        "bidir_over_sum": bidir_s / total if total > 0 else math.nan,
        "bidir_over_max": bidir_s / slower if slower > 0 else math.nan,
        "fraction_overlapped": fraction,
        "full_duplex": bool(fraction >= FULL_DUPLEX_MIN),
    }


def _num(obj: dict[str, Any], key: str, where: str) -> float:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise OverlapError(f"{where}.{key}: {v!r} is not a finite number")
    return float(v)


def links_from_overlap(gpu_result: dict[str, Any]) -> tuple[Link, Link]:
    """(H2D, D2H) from one ``results.per_gpu[]`` entry of a gpuaccept-overlap document (its own copies)."""
    where = f"results.per_gpu[gpu={gpu_result.get('gpu')}].copies"
    copies = gpu_result.get("copies") or {}
    out = []
    for d in ("h2d", "d2h"):
        c = copies.get(d)
        if not isinstance(c, dict):
            raise OverlapError(f"{where}.{d}: missing")
        w = f"{where}.{d}"
        out.append(Link(_num(c, "lo_us", w) * 1e-6, _num(c, "G_s_per_byte", w), _num(c, "g_us", w) * 1e-6))
    return out[0], out[1]


def links_from_bandwidth(bw_doc: dict[str, Any], gpu: int) -> tuple[Link, Link]:
    """(H2D, D2H) of one GPU from a gpuaccept-bw document's ``results.model`` (the PCIe model's L+o from the 1-byte
    transfer, ``lo_us``, else the fitted intercept ``lo_fit_us``; G from the sweep's fit; g)."""
    rows = (bw_doc.get("results") or {}).get("model") or []
    out = {}
    for row in rows:
        if isinstance(row, dict) and row.get("gpu") == gpu and row.get("direction") in ("h2d", "d2h"):
            w = f"results.model[gpu={gpu}, direction={row['direction']}]"
            lo_key = "lo_us" if isinstance(row.get("lo_us"), (int, float)) else "lo_fit_us"
            out[row["direction"]] = Link(_num(row, lo_key, w) * 1e-6, _num(row, "G_s_per_byte", w),
                                         _num(row, "g_us", w) * 1e-6)  # fmt: skip
    missing = [d for d in ("h2d", "d2h") if d not in out]
    if missing:
        raise OverlapError(f"the bandwidth document has no results.model row for gpu {gpu}, {', '.join(missing)}")
    return out["h2d"], out["d2h"]


def bidir_links(h2d: Link, d2h: Link, bytes_each: float, bidir_s: float) -> tuple[Link, Link]:
    """The same links with the G that both directions at once gave: (T_bidir - (L+o)) / B per direction."""
    return (
        replace(h2d, G=(bidir_s - h2d.lo_s) / bytes_each),
        replace(d2h, G=(bidir_s - d2h.lo_s) / bytes_each),
    )


def model_gpu(gpu_result: dict[str, Any], links: tuple[Link, Link] | None = None) -> dict[str, Any]:
    """The model's rows for one ``results.per_gpu[]`` entry: per intensity, each measured method with its
    predictions (one-way G and bidirectional G), relative errors and the orders compared."""
    gpu = gpu_result.get("gpu")
    where = f"results.per_gpu[gpu={gpu}]"
    h2d, d2h = links or links_from_overlap(gpu_result)
    nbytes = _num(gpu_result, "bytes", where)
    engines = int(_num(gpu_result.get("device") or {}, "async_engine_count", f"{where}.device"))
    bidir_s = _num((gpu_result.get("copies") or {}).get("bidir") or {}, "seconds", f"{where}.copies.bidir")
    bh2d, bd2h = bidir_links(h2d, d2h, nbytes, bidir_s)
    copies = gpu_result.get("copies") or {}
    rows = []
    for k, ir in enumerate(gpu_result.get("intensities") or []):
        iw = f"{where}.intensities[{k}]"
        p = Inputs(h2d, d2h, nbytes, nbytes, _num(ir, "kernel_s", iw), engines)
        pb = replace(p, h2d=bh2d, d2h=bd2h)
        methods = []
        for m in ir.get("methods") or []:
            if not m.get("run"):
                methods.append({"method": m.get("method"), "run": False, "not_run": m.get("not_run")})
                continue
            name = str(m.get("method"))
            measured = _num(m, "seconds", f"{iw}.methods[{name}]")
            pred, pred_b = predict(name, p), predict(name, pb)
            methods.append({
                "method": name,
                "run": True,
                "modelled": modelled(name),
                "measured_s": measured,
                "predicted_s": pred,
                "rel_error": (pred - measured) / measured,
                "predicted_bidir_g_s": pred_b,
                "rel_error_bidir_g": (pred_b - measured) / measured,
                "verified": bool(m.get("verified")),
            })  # fmt: skip
        ranked = [m for m in methods if m.get("run") and m["modelled"]]
        meas = [m["measured_s"] for m in ranked]
        pred = [m["predicted_s"] for m in ranked]
        rows.append({
            "flop_per_byte": ir.get("flop_per_byte"),
            "kernel_s": p.kernel_s,
            "methods": methods,
            "rank_tau": kendall_tau(meas, pred),
            "rank_tau_bidir_g": kendall_tau(meas, [m["predicted_bidir_g_s"] for m in ranked]),
            "best_measured": ranked[meas.index(min(meas))]["method"] if ranked else None,
            "best_predicted": ranked[pred.index(min(pred))]["method"] if ranked else None,
        })  # fmt: skip
    h2d_s = _num(copies.get("h2d") or {}, "full_s", f"{where}.copies.h2d")
    d2h_s = _num(copies.get("d2h") or {}, "full_s", f"{where}.copies.d2h")
    return {
        "gpu": gpu,
        "copy_engines": engines,
        "links": {
            d: {"lo_us": lk.lo_s * 1e6, "G_s_per_byte": lk.G, "g_us": lk.g_s * 1e6}
            for d, lk in (("h2d", h2d), ("d2h", d2h))
        },
        "bidir_G_s_per_byte": {"h2d": bh2d.G, "d2h": bd2h.G},
        "duplex": duplex(h2d_s, d2h_s, bidir_s),
        "intensities": rows,
    }


def annotate(doc: dict[str, Any], bw_doc: dict[str, Any] | None = None, source: str = "") -> dict[str, Any]:
    """The gpuaccept-overlap document with ``results.model`` and the metrics ``model_rel_error_max`` (the
    largest |predicted - measured| / measured over GPUs, intensities and the methods the paper models) and
    ``model_rank_tau_min`` (the smallest Kendall's tau between measured and predicted order) added, or waived
    with the reason. With ``bw_doc`` (a gpuaccept-bw document of the same node) its fitted links are used."""
    if doc.get("tool") != "gpuaccept-overlap":
        raise OverlapError(f"not a gpuaccept-overlap document (tool {doc.get('tool')!r})")
    metrics = doc.setdefault("metrics", {})
    waived = doc.setdefault("waived", {})
    gpus = [g for g in (doc.get("results") or {}).get("per_gpu") or [] if g.get("complete")]
    model = []
    for g in gpus:
        links = links_from_bandwidth(bw_doc, g.get("gpu")) if bw_doc is not None else None
        model.append(model_gpu(g, links))
    src = source or ("the bandwidth document's fit" if bw_doc is not None else "gpuaccept-overlap's own copies")
    doc.setdefault("results", {})["model"] = {"links_from": src, "tie_rel": TIE_REL, "per_gpu": model}
    errors = [
        abs(m["rel_error"])
        for g in model
        for row in g["intensities"]
        for m in row["methods"]
        if m.get("run") and m["modelled"]
    ]
    taus = [row["rank_tau"] for g in model for row in g["intensities"] if math.isfinite(row["rank_tau"])]
    why = ("no GPU completed its measurements" if not gpus
           else "no method modelled by van Werkhoven et al. (2014) was measured")

    def record(name: str, value: float | None, better: str, description: str) -> None:
        if value is None:
            waived[name] = why
        else:
            metrics[name] = {"value": value, "unit": "ratio", "better": better, "description": description}

    record(
        "model_rel_error_max",
        max(errors) if errors else None,
        "lower",
        "max over GPUs, intensities and methods (sync, streams_<n>, mapped) of |predicted - "
        f"measured| / measured, van Werkhoven et al. (2014)'s formulas with links from {src}",
    )
    record(
        "model_rank_tau_min",
        min(taus) if taus else None,
        "higher",
        "min over GPUs and intensities of Kendall's tau between the measured and the predicted "
        f"order of the methods (1 same order; measured times within {TIE_REL:.0%} count as ties)",
    )
    return doc


def summary(doc: dict[str, Any]) -> str:
    """A few lines for a terminal: per GPU the duplex figures, per intensity the order and each method's measured
    and predicted time, then the model's metrics."""
    lines = []
    for g in doc["results"]["model"]["per_gpu"]:
        d = g["duplex"]
        lines.append(
            f"gpu {g['gpu']}: {g['copy_engines']} copy engines; H2D+D2H at once {d['bidir_s'] * 1e3:.2f} ms, one way "
            f"{d['h2d_s'] * 1e3:.2f} / {d['d2h_s'] * 1e3:.2f} ms: {d['fraction_overlapped']:.2f} overlapped "
            f"({'full duplex' if d['full_duplex'] else 'NOT full duplex'})"
        )
        for row in g["intensities"]:
            times = ", ".join(
                f"{m['method']} {m['measured_s'] * 1e3:.2f}/{m['predicted_s'] * 1e3:.2f} ms ({m['rel_error']:+.0%})"
                for m in row["methods"]
                if m.get("run")
            )
            lines.append(
                f"  {row['flop_per_byte']:g} flop/B: tau {row['rank_tau']:.2f}, best measured {row['best_measured']}, "
                f"predicted {row['best_predicted']}; measured/predicted: {times}"
            )
    for name in ("model_rel_error_max", "model_rank_tau_min"):
        if name in doc["metrics"]:
            lines.append(f"{name}: {doc['metrics'][name]['value']:.3f}")
        else:
            lines.append(f"{name}: waived: {doc['waived'][name]}")
    return "\n".join(lines)
