"""When a GEMM pays for its trip to the GPU: ``gpuaccept-xgemm``'s transfer-inclusive rates set against the
host's BLAS (after Allada et al., 2009).

``gpuaccept-xgemm`` times square n x n GEMMs on the GPU three ways (the kernel alone on device-resident data; the
whole offload, H2D of A and B, GEMM, D2H of C, from pinned and from pageable host memory). The host's rate at the
same n and precision comes from ``gpuaccept-cpugemm`` documents (one per size: ``--size N --threads T``); where
several rows share a precision and size (thread counts, documents) the fastest verified one is used: the host at
its best. A list of ``(n, precision, seconds)`` timings can stand in for the documents
(:func:`host_rates_from_timings`).

The host has no TF32 or BF16 GEMM of its own in the BLAS the harness uses (``cblas_sgemm``/``cblas_dgemm``), so
those GPU precisions are set against the host's SGEMM: the FP32 call an offload at reduced input precision would
replace (:data:`HOST_PRECISION`).

Crossover, per GPU precision and per offload mode (pinned, pageable): over the sizes both sides measured, the
smallest n from which the GPU, transfers included, beats the host at every larger size of the sweep. Between the
last sweep point where the host is at least as fast and the next one, ``ln(gpu / host)`` is interpolated linearly in
``ln n`` to zero. Where the GPU wins at every size measured the answer is "at or below the smallest size"; where the
host wins at the largest, "none in the sweep".

:func:`annotate` writes ``results.crossover`` into the xgemm document and the informational metrics
``<precision>_crossover_n_pinned`` / ``_pageable`` (or waives them with the reason). docs/checks/offload-gemm.md
says what each figure means.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpuaccept.probe.overlap import Link

#: The host GEMM each GPU precision is compared with.
HOST_PRECISION = {"dgemm": "dgemm", "sgemm": "sgemm", "tf32": "sgemm", "bf16": "sgemm"}
#: The offload modes of a gpuaccept-xgemm case that a crossover is computed for.
MODES = ("pinned", "pageable")


class OffloadError(ValueError):
    """An input lacks what the analysis needs; the message names the document and key."""


@dataclass(frozen=True)
class HostRate:
    precision: str
    n: int
    gflops: float
    threads: int | None
    source: str


def flops(n: int) -> float:
    return 2.0 * float(n) ** 3


def predicted_offload_s(kernel_s: float, h2d_bytes: float, d2h_bytes: float, h2d: Link, d2h: Link,
                        h2d_transfers: int = 2) -> float:
    """One offload as gpuaccept-xgemm and gpuaccept-fft time it, by van Werkhoven et al. (2014)'s PCIe
    model (gpuaccept.probe.overlap): ``h2d_transfers`` H2D copies back to back (``(L + o) + k G + g`` per extra one;
    xgemm's A and B, fft's one input), the kernel alone, then one D2H (``(L + o) + k G``: C, the FFT's output),
    in stream order, nothing overlapped. ``h2d``/``d2h``: the links of pinned copies (the bandwidth check's fit)."""
    return h2d.time(h2d_bytes, transfers=h2d_transfers) + kernel_s + d2h.time(d2h_bytes)


def host_rates(docs: Iterable[tuple[str, dict[str, Any]]]) -> dict[tuple[str, int], HostRate]:
    """The fastest verified host rate per (precision, n) over ``(name, gpuaccept-cpugemm document)`` pairs."""
    best: dict[tuple[str, int], HostRate] = {}
    for name, doc in docs:
        if doc.get("tool") != "gpuaccept-cpugemm":
            raise OffloadError(f"{name}: not a gpuaccept-cpugemm document (tool {doc.get('tool')!r})")
        rows = (doc.get("results") or {}).get("cpu_gemm")
        if not isinstance(rows, list):
            raise OffloadError(f"{name}: no results.cpu_gemm list")
        for i, row in enumerate(rows):
            try:
                prec, n, gf = str(row["precision"]), int(row["n"]), row["gflops_median"]
            except (KeyError, TypeError, ValueError) as err:
                raise OffloadError(f"{name}: results.cpu_gemm[{i}] lacks precision, n or gflops_median") from err
            if not row.get("verified") or not isinstance(gf, (int, float)) or not math.isfinite(gf) or gf <= 0:
                continue
            key = (prec, n)
            if key not in best or gf > best[key].gflops:
                best[key] = HostRate(prec, n, float(gf), row.get("threads"), name)
    return best


def host_rates_from_timings(timings: Iterable[tuple[int, str, float]], source: str = "timings"
                            ) -> dict[tuple[str, int], HostRate]:
    """Host rates from ``(n, precision, seconds)`` triples (the fastest per precision and n)."""
    best: dict[tuple[str, int], HostRate] = {}
    for n, prec, seconds in timings:
        if not seconds > 0:
            raise OffloadError(f"{source}: {prec} n={n}: seconds must be positive, not {seconds!r}")
        rate = HostRate(prec, int(n), flops(n) / seconds / 1e9, None, source)
        if (prec, int(n)) not in best or rate.gflops > best[(prec, int(n))].gflops:
            best[(prec, int(n))] = rate
    return best


def crossover(points: list[tuple[int, float, float]], size: str = "n") -> dict[str, Any]:
    """``points``: ``(n, gpu_rate, host_rate)`` over the sweep (any rate: GFLOP/s, or 1 / seconds). Returns
    ``status`` (``crossover``, ``gpu_wins_everywhere``, ``none_in_sweep`` or ``no_data``), ``n`` (the interpolated
    crossover, for ``crossover``), ``between`` (the two sweep sizes around it) and ``text``, which names the size
    ``size`` (``n``; gpuaccept.probe.fft: ``points``)."""
    pts = sorted(points)
    if not pts:
        return {"status": "no_data", "n": None, "between": None, "text": "no size measured on both sides"}
    d = [math.log(g / h) for _, g, h in pts]
    losing = [i for i, x in enumerate(d) if x <= 0]
    if not losing:
        return {"status": "gpu_wins_everywhere", "n": None, "between": None,
                "text": f"GPU wins at every size in the sweep (from {size}={pts[0][0]})"}
    k = losing[-1]
    if k == len(pts) - 1:
        return {"status": "none_in_sweep", "n": None, "between": None,
                "text": f"none in the sweep: the host is at least as fast at the largest size ({size}={pts[-1][0]})"}
    n0, n1 = pts[k][0], pts[k + 1][0]
    frac = (0.0 - d[k]) / (d[k + 1] - d[k])
    n_star = math.exp(math.log(n0) + frac * (math.log(n1) - math.log(n0)))
    return {"status": "crossover", "n": n_star, "between": [n0, n1],
            "text": f"{size} = {n_star:.0f} (between {n0} and {n1}, interpolated in log {size})"}


def _cases(doc: dict[str, Any], name: str, tool: str = "gpuaccept-xgemm") -> list[dict[str, Any]]:
    """``results.cases`` of a ``tool`` document (gpuaccept-xgemm, gpuaccept-fft)."""
    if doc.get("tool") != tool:
        raise OffloadError(f"{name}: not a {tool} document (tool {doc.get('tool')!r})")
    cases = (doc.get("results") or {}).get("cases")
    if not isinstance(cases, list):
        raise OffloadError(f"{name}: no results.cases list")
    return cases


def _gflops(case: dict[str, Any], mode: str, name: str) -> float:
    try:
        v = case[mode]["gflops"]
    except (KeyError, TypeError) as err:
        raise OffloadError(f"{name}: case {case.get('precision')} n={case.get('n')} lacks {mode}.gflops") from err
    return float(v) if isinstance(v, (int, float)) else math.nan


def analyse(doc: dict[str, Any], host: dict[tuple[str, int], HostRate], name: str = "xgemm document",
            no_host: str = "") -> dict[str, Any]:
    """Per GPU precision of the document: the table rows (kernel, pinned and pageable GFLOP/s, their ratios, the
    host's GFLOP/s and who wins) and the crossover per offload mode. ``no_host``: why the host was not timed at
    all (no host GEMM tool on the node); each crossover is then ``no_host_data`` with that reason."""
    cases = _cases(doc, name)
    precisions = list(dict.fromkeys(str(c.get("precision")) for c in cases))
    out: dict[str, Any] = {}
    for prec in precisions:
        hprec = HOST_PRECISION.get(prec)
        if hprec is None:
            raise OffloadError(f"{name}: unknown precision {prec!r} (known: {', '.join(HOST_PRECISION)})")
        rows, notes = [], []
        points: dict[str, list[tuple[int, float, float]]] = {m: [] for m in MODES}
        for c in cases:
            if c.get("precision") != prec:
                continue
            n = int(c["n"])
            if not c.get("run"):
                notes.append(f"n={n} not run on the GPU: {c.get('not_run', 'no reason given')}")
                continue
            if not c.get("verified"):
                notes.append(f"n={n} left out: the GPU's result failed verification")
                continue
            hr = host.get((hprec, n))
            row: dict[str, Any] = {
                "n": n,
                "kernel_gflops": _gflops(c, "kernel", name),
                "pinned_gflops": _gflops(c, "pinned", name),
                "pageable_gflops": _gflops(c, "pageable", name),
                "pinned_over_kernel": c.get("pinned_over_kernel"),
                "pageable_over_kernel": c.get("pageable_over_kernel"),
                "host_gflops": hr.gflops if hr else None,
                "host_threads": hr.threads if hr else None,
            }
            for m in MODES:
                g = row[f"{m}_gflops"]
                if hr and math.isfinite(g) and g > 0:
                    row[f"{m}_winner"] = "gpu" if g > hr.gflops else "host"
                    points[m].append((n, g, hr.gflops))
                else:
                    row[f"{m}_winner"] = None
            if hr is None and not no_host:
                notes.append(f"n={n}: the host documents have no verified {hprec} timing at this size")
            rows.append(row)
        have_host = any(h.precision == hprec for h in host.values())
        result: dict[str, Any] = {"host_precision": hprec, "rows": rows, "notes": notes}
        for m in MODES:
            if no_host:
                result[m] = {"status": "no_host_data", "n": None, "between": None, "text": no_host}
            elif not have_host:
                result[m] = {"status": "no_host_data", "n": None, "between": None,
                             "text": f"the host documents have no verified {hprec} timing (needed for {prec})"}
            else:
                result[m] = crossover(points[m])
        out[prec] = result
    return out


def record_crossovers(doc: dict[str, Any], analysis: dict[str, dict[str, Any]], unit: str, describe: str) -> None:
    """Writes each case's crossovers (``analysis[case][mode]``, from :func:`crossover`, for every mode of
    ``MODES``) into ``doc`` as the informational metrics ``<case>_crossover_<unit>_<mode>`` (lower is better), or,
    where there is none, waives the metric with the reason. ``describe`` is the metrics' description, formatted
    with ``case``, ``mode``, the sweep sizes ``lo`` and ``hi`` the crossover lies between, and the case's
    results (e.g. ``host_precision``)."""
    metrics = doc.setdefault("metrics", {})
    waived = doc.setdefault("waived", {})
    for case, res in analysis.items():
        for m in MODES:
            key, cx = f"{case}_crossover_{unit}_{m}", res[m]
            if cx["status"] == "crossover":
                text = describe.format(case=case, mode=m, lo=cx["between"][0], hi=cx["between"][1], **res)
                metrics[key] = {"value": cx["n"], "unit": unit, "better": "lower", "description": text}
            else:
                waived[key] = cx["text"]


def crossover_lines(heading: str, per_case: dict[str, dict[str, Any]], label: Callable[[str, dict[str, Any]], str],
                    modes: tuple[tuple[str, str], ...] = (("pinned", "pinned"), ("pageable", "pageable"))) -> list[str]:
    """The summary's closing lines: ``heading``, then per case ``label(case, result)`` with the crossover text of
    each ``(name, mode)`` of ``modes``, and the case's notes."""
    lines = [heading]
    for case, res in per_case.items():
        found = "; ".join(f"{name} {res[m]['text']}" for name, m in modes)
        lines.append(f"  {label(case, res)}: {found}")
        lines.extend(f"    note: {note}" for note in res["notes"])
    return lines


def annotate(doc: dict[str, Any], host: dict[tuple[str, int], HostRate], source: str = "",
             name: str = "xgemm document", no_host: str = "") -> dict[str, Any]:
    """The xgemm document with ``results.crossover`` and the informational metrics
    ``<precision>_crossover_n_<mode>`` added (waived, with the reason, where there is no crossover; with
    ``no_host``, the reason the host was not timed, every crossover waived with it)."""
    analysis = analyse(doc, host, name, no_host)
    doc.setdefault("results", {})["crossover"] = {
        "host_source": None if no_host else source or "host timings",
        "no_host": no_host or None,
        "host_precision": HOST_PRECISION,
        "method": "smallest n from which GPU (transfers included) GFLOP/s > host GFLOP/s at every larger size of the "
        "sweep; ln(gpu/host) interpolated linearly in ln n between the two sweep sizes around the sign change",
        "per_precision": analysis,
    }
    record_crossovers(doc, analysis, "n", "smallest square size from which {case} offloaded from {mode} host memory "
                      "(H2D of A and B, GEMM, D2H of C) beats the host's {host_precision}, interpolated in log n "
                      "between n={lo} and n={hi} (informational)")
    return doc


def _fmt(v: Any, spec: str = ".1f") -> str:
    return format(v, spec) if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def summary(doc: dict[str, Any]) -> str:
    """A table per precision and n, then the crossovers."""
    cx = doc["results"]["crossover"]["per_precision"]
    if not cx:
        errors = "; ".join(str(e) for e in doc.get("errors") or []) or "none recorded"
        return f"the xgemm document has no case to compare (its errors: {errors})"
    head = (f"{'prec':5} {'n':>6} {'kernel':>9} {'pinned':>9} {'pageable':>9} {'pin/k':>6} {'page/k':>6} "
            f"{'host':>9} {'host prec':>9}  winner (pinned/pageable)")
    lines = ["GFLOP/s (2 n^3 / t); pin/k and page/k: transfer-inclusive over kernel-only", head]
    for prec, res in cx.items():
        for r in res["rows"]:
            win = f"{r['pinned_winner'] or '-'}/{r['pageable_winner'] or '-'}"
            lines.append(
                f"{prec:5} {r['n']:>6} {_fmt(r['kernel_gflops']):>9} {_fmt(r['pinned_gflops']):>9} "
                f"{_fmt(r['pageable_gflops']):>9} {_fmt(r['pinned_over_kernel'], '.3f'):>6} "
                f"{_fmt(r['pageable_over_kernel'], '.3f'):>6} {_fmt(r['host_gflops']):>9} "
                f"{res['host_precision']:>9}  {win}"
            )
    lines += crossover_lines("crossover (GPU with transfers beats the host from):", cx,
                             lambda prec, res: f"{prec} vs host {res['host_precision']}")
    return "\n".join(lines)
