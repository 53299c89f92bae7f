"""The bands of the shipped reference files (issue 24): every entry gets its owner (metric_table.owner), host
figures become informational, link figures a fraction of the link's rate, and each judged GPU figure with
recorded healthy runs a band that catches a 10 % loss of any of them.

Rule for a figure where higher is better, over the healthy runs recorded under docs/evidence (verdict.json rows;
a run with a foreign process, the degraded runs and the GEMM figures of the nightly suite's former 1 s window
left out, see README.md): floor = halfway between the lowest healthy run and 90 % of the highest, so that every
healthy run passes and every healthy run 10 % lower fails; value = the median; lower = 1 - floor / median.
Where lower is better the same with a ceiling halfway between the highest run and 110 % of the lowest. A figure
whose runs spread too far for such a floor keeps its band and says so. Run from the repository root:
    python3 docs/evidence/2026-11-25-bands/derive_bands.py [--write]
Prints each band and the runs it rests on; --write rewrites reference_values/ in place (text edit: comments and
layout kept).
"""

from __future__ import annotations

import collections
import glob
import json
import re
import statistics
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, "src")
from gpuaccept import metric_table  # noqa: E402
from gpuaccept.results import baseline  # noqa: E402

LOSS = 0.10
LINK_FRACTION = {"h2d_pinned_min": 0.80, "d2h_pinned_min": 0.80, "bidir_pinned_min": 0.50}
LINK_BAND = {
    "h2d_pinned_min": "0.80 of the link's rate per direction (Gen5 x16: 50.4 GB/s): healthy H100 and H200 runs "
    "moved 50.95-55.5 GB/s, so a 10 % loss of any of them (at most 49.97) fails; Azure's node health checks gate "
    "at 48",
    "d2h_pinned_min": "0.80 of the link's rate per direction (Gen5 x16: 50.4 GB/s): healthy runs 54.7-55.4 GB/s, "
    "a 10 % loss (at most 49.9) fails",
    "bidir_pinned_min": "0.50 of the link's rate in both directions (Gen5 x16: 63.0 GB/s, one direction's full "
    "rate): healthy runs moved 72.5-101 GB/s on the same link (host memory and the moment), so the gate is "
    "loose and catches a link trained down to half width or one generation",
}
HOST_REASON = (
    "a host figure (the host, the VM and the moment give it: {what}): reported, judged only against this node's "
    "own baseline (gpuaccept baseline --node-baseline)"
)
WHAT = {
    "bandwidth": "copies through pageable memory, per-call latency and the PCIe model's fixed cost moved by up to "
    "90 % between healthy runs of one GPU",
    "gemm": "the host<->GPU copies inside the rate",
    "cpu_gemm": "the host's cores and BLAS",
    "hpl_host": "the host's cores and BLAS",
    "hpl_cuda": "NVBLAS runs HPL's panels on the host's cores and moves every tile over PCIe from pageable memory",
    "power": "the host's own power reading",
    "md_apoa1": "OpenMM's CPU platform on the host's cores",
    "md_apoa1_x12": "OpenMM's CPU platform on the host's cores",
    "namd_apoa1": "NAMD on the host's cores",
    "namd_stmv": "NAMD on the host's cores",
}


def healthy_runs() -> dict[tuple[str, str, str], list[float]]:
    """(sku or node type, check, metric) -> values of healthy recorded runs."""
    data: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    for f in sorted(glob.glob("docs/evidence/**/verdict.json", recursive=True)):
        if "degraded" in f or "154539Z" in f:  # degraded on purpose; the run with a foreign process on the GPU
            continue
        v = json.loads(Path(f).read_text())
        nightly_1s = v["suite"] == "nightly" and f < "docs/evidence/2026-11-25"
        old_nightly_bw = "2026-11-22-h100-suites" in f  # the nightly sweep then stopped at 64 MiB
        for r in v["rows"]:
            if not r.get("metric") or not isinstance(r.get("value"), (int, float)):
                continue
            if r["check"] == "gemm" and nightly_1s:
                continue
            if r["check"] == "bandwidth" and old_nightly_bw:
                continue
            data[(v["node_type"], r["check"], r["metric"])].append(float(r["value"]))
    # The 2 x H200 machine's direct runs (benchmark documents, no verdict): per-GPU minima of two more H200s.
    for name in ("bandwidth", "gemm"):
        doc = json.loads(Path(f"docs/evidence/2026-11-22-h200x2/{name}.json").read_text())
        for metric, m in doc["metrics"].items():
            if isinstance(m.get("value"), (int, float)):
                data[("h200", name, metric)].append(float(m["value"]))
    return data


def band(values: list[float], better: str) -> tuple[float, float, str] | None:
    """(value, tolerance, why) by gpuaccept baseline's rule (baseline.catch_band); None when it gives none."""
    caught = baseline.catch_band(values, better, LOSS)
    if caught is None:
        return None
    tol, why = caught
    return statistics.median(values), tol, why.replace(" runs ", " healthy runs ", 1)


METRIC_RE = re.compile(r"^    ([A-Za-z0-9_]+):\s*$")
CHECK_RE = re.compile(r"^  ([A-Za-z0-9_]+):\s*$")


def rewrite(path: Path, who: str, data: dict, write: bool) -> None:
    lines = path.read_text().splitlines()
    out: list[str] = []
    in_checks, check = False, None
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^[A-Za-z]", line):
            in_checks = line.startswith("checks:")
        m = CHECK_RE.match(line) if in_checks else None
        if m:
            check = m.group(1)
        mm = METRIC_RE.match(line) if in_checks else None
        if not mm:
            out.append(line)
            i += 1
            continue
        metric = mm.group(1)
        block = []
        j = i + 1
        while j < len(lines) and (lines[j].startswith("      ") or not lines[j].strip()):
            block.append(lines[j])
            j += 1
        entry = parse_block(block)
        new = transform(who, check, metric, entry, data, path)
        out.append(line)
        out.extend(new)
        i = j
    text = "\n".join(out) + "\n"
    if write:
        path.write_text(text)


def parse_block(block: list[str]) -> dict[str, str]:
    """key -> raw text (continuation lines joined) of one entry."""
    entry: dict[str, str] = {}
    key = None
    for line in block:
        m = re.match(r"^      ([a-z_]+):(.*)$", line)
        if m:
            key = m.group(1)
            entry[key] = m.group(2).strip()
        elif key:
            entry[key] += "\n" + line
    return entry


def emit(entry: dict[str, str]) -> list[str]:
    out = []
    for key, raw in entry.items():
        first, *rest = raw.split("\n")
        if not rest and first.startswith("'") and len(first) > 100:  # a new quoted text: folded at spaces
            lines = textwrap.wrap(first, 112, break_long_words=False, break_on_hyphens=False)
            out.append(f"      {key}: {lines[0]}")
            out.extend(f"        {line}" for line in lines[1:])
            continue
        out.append(f"      {key}: {first}".rstrip())
        out.extend(rest)
    return out


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def transform(who: str, check: str, metric: str, entry: dict[str, str], data: dict, path: Path) -> list[str]:
    owner = metric_table.owner(check, metric)
    entry.pop("owner", None)
    entry.pop("band", None)
    judged = "informational" not in entry
    if owner == metric_table.HOST and judged:
        value = entry.get("value")
        for k in ("value", "lower", "upper", "wide_tolerance"):
            entry.pop(k, None)
        reason = HOST_REASON.format(what=WHAT.get(check, "the host"))
        if value:
            reason += f"; the reference machine gave {value} {entry['unit']}"
        entry = {"informational": quote(reason), **entry}
        judged = False
    elif owner == metric_table.LINK and judged:
        value = entry.get("value")
        for k in ("value", "lower", "upper", "wide_tolerance"):
            entry.pop(k, None)
        entry = {"link_fraction": str(LINK_FRACTION[metric]), **entry}
        entry["band"] = quote(LINK_BAND[metric])
        if value:
            entry["note"] = quote(f"measured on the reference machine: {value} GB/s")
    elif judged and owner in (metric_table.GPU, metric_table.NODE) and "value" in entry:
        key = "lower" if "lower" in entry else "upper"
        values = data.get((who, check, metric)) or []
        derived = band(values, "higher" if key == "lower" else "lower") if len(values) >= 3 else None
        if derived and check in ("gemm", "bandwidth", "hplstyle", "power") and metric != "load_power_max_w":
            med, tol, why = derived
            entry["value"] = f"{med:.6g}"
            entry[key] = f"{tol:g}"
            entry["band"] = quote(why + " (docs/evidence/2026-11-25-bands)")
        else:
            tol = entry.get(key, "?")
            entry["band"] = quote(f"{key} {tol} as derived with its source"
                                  + (f" ({len(values)} recorded runs)" if values else ""))
    entry["owner"] = owner
    print(f"{path.name:24} {check:10} {metric:34} {owner:5} "
          + (entry.get("band", "").strip("'")[:110] if judged else "informational"))
    return emit(entry)


def main() -> None:
    write = "--write" in sys.argv
    data = healthy_runs()
    # Runs recorded under the node type's name: the SKU files hold the same GPU's per-GPU figures.
    sku_of = {"h100_sxm5_80gb": "h100_sxm5_80gb", "h200": "h200"}
    for path in sorted(Path("reference_values").glob("*.yaml")) + sorted(Path("reference_values/gpus").glob("*.yaml")):
        who = path.stem
        if path.parent.name == "gpus":
            who = {v: k for k, v in sku_of.items()}.get(path.stem, path.stem)
        rewrite(path, who, data, write)


if __name__ == "__main__":
    main()
