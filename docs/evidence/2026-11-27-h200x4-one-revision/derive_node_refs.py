"""h200_x4's node layer from every healthy 4 x H200 run recorded: the ten of this folder (main at 764587a, two
machine starts) and the three healthy `make accept` runs of docs/evidence/2026-11-27-multigpu (1622e11), plus, for
HPL-CUDA, that folder's scaling run on a 1 x 4 grid. Prints what it would change; --write rewrites the value,
tolerance and band of each judged node-level entry of reference_values/h200_x4.yaml in place (the rest of the file
as it is).

    python3 docs/evidence/2026-11-27-h200x4-one-revision/derive_node_refs.py RUNS_DIR [--write]

RUNS_DIR holds the thirteen run directories (unpacked from the results.tar.gz of each call). Rules, as for the
other measured types (docs/reference-values.md): the value is the median; three runs or more: the floor halfway
between the lowest run and the highest made 10 % worse (gpuaccept baseline's catch_band), so that it passes every
healthy run and fails a 10 % loss of each; two runs: the same bound over the two; power-capped figures (FP8 GEMM
with every GPU busy, the HPL-style LU's GFLOP/s per watt): the floor at 0.90 of the median, which passes every
healthy H200 seen (one of a 2 x H200 node ran FP8 at 1127 TFLOP/s) and fails a loss of more than 10 %."""

from __future__ import annotations

import json
import re
import statistics
import sys
import textwrap
from pathlib import Path

from gpuaccept.results import baseline

ROOT = Path(__file__).resolve().parents[3]
REFS = ROOT / "reference_values" / "h200_x4.yaml"
LOSS = 0.10
#: HPL-CUDA on a 1 x 4 grid at N=184320 (docs/evidence/2026-11-27-multigpu, hpl/summary.txt; tests/fixtures/
#: multigpu_h200x4/hpl_scaling/hpl_cuda-scale-1x4-n184320-r1.json), beside the commission suite's runs.
SCALING_1X4 = ("hpl_cuda", "tflops", 180.43)
JUDGED = {
    "bandwidth": ["p2p_write_min", "p2p_read_min", "p2p_bidir_min"],
    "gemm": [f"{p}_concurrent_tflops_min" for p in ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")],
    "hplstyle": ["tflops_sum", "gflops_per_watt"],
    "hpl_cuda": ["tflops"],
    "nccl": [f"{c}_busbw_gbps_max" for c in ("allreduce", "allgather", "reducescatter", "broadcast")],
}
POWER_CAPPED = {("gemm", "fp8_concurrent_tflops_min"), ("hplstyle", "gflops_per_watt")}


def node_values(runs: Path) -> dict[tuple[str, str], list[float]]:
    """Each judged node-level figure of every run, as its verdict recorded it (rows without a GPU)."""
    out: dict[tuple[str, str], list[float]] = {}
    for run in sorted(p for p in runs.iterdir() if (p / "verdict.json").is_file()):
        doc = json.loads((run / "verdict.json").read_text())
        assert doc["verdict"] == "pass" and doc["node_type"] == "h200_x4", run
        for row in doc["rows"]:
            key = (row["check"], row.get("metric"))
            if row.get("gpu") is None and key[1] in JUDGED.get(key[0], ()) and row.get("value") is not None:
                out.setdefault(key, []).append(float(row["value"]))
    out.setdefault(SCALING_1X4[:2], []).append(SCALING_1X4[2])
    return out


def band(check: str, metric: str, values: list[float]) -> tuple[float, float, str]:
    """(value, lower tolerance, the band's reason)."""
    med, lo, hi = statistics.median(values), min(values), max(values)
    what = {"gemm": "healthy runs, every GPU busy,",
            "hpl_cuda": "healthy runs (two of the commission suite, N sized from memory; the scaling run at N=184320), "
                        "1 x 4 grid, panel by NCCL, TFLOP/s"}.get(check, "healthy runs")  # fmt: skip
    if (check, metric) in POWER_CAPPED:
        gemm = check == "gemm"
        extra = ", and an H200 of a 2 x H200 node at 1127 alone" if gemm else ""
        passes = "every healthy H200 seen" if gemm else "both"
        return med, LOSS, (
            f"power-capped: {len(values)} {what} {lo:.4g}-{hi:.4g}{extra}: the floor, 0.90 of the median "
            f"({(1 - LOSS) * med:.4g}), passes {passes} and fails a loss of more than 10 % from the median")
    if len(values) >= 3:
        caught = baseline.catch_band(values, "higher", LOSS, what)
        assert caught, (check, metric, values)
        return med, caught[0], caught[1]
    floor = (lo + (1 - LOSS) * hi) / 2
    return med, round(1 - floor / med, 4), (
        f"{len(values)} {what} {lo:.4g}-{hi:.4g}: the floor {floor:.4g} passes the lowest and fails each 10% "
        f"lower (at most {(1 - LOSS) * hi:.4g}); widen it with more runs")


def rewrite(text: str, check: str, metric: str, value: float, lower: float, why: str) -> str:
    """The entry ``checks.<check>.<metric>`` with its value, lower and band replaced."""
    section = re.search(rf"(?m)^  {check}:\n(?:(?:    |\n).*\n?)*", text)
    assert section, check
    body = section.group(0)
    entry = re.search(rf"(?m)^    {metric}:\n(?:      .*\n|        .*\n)*", body)
    assert entry, (check, metric)
    lines = entry.group(0).splitlines(keepends=True)
    kept = []
    skipping = False
    for line in lines[1:]:
        if line.startswith("        ") and skipping:
            continue
        skipping = line.startswith(("      value:", "      lower:", "      band:"))
        if not skipping:
            kept.append(line)
    quoted = "'" + why.replace("'", "''") + "'"
    wrapped = textwrap.wrap(f"band: {quoted}", width=112, subsequent_indent="  ", break_on_hyphens=False)
    new = [lines[0], f"      value: {value:.6g}\n"]
    for line in kept:
        new.append(line)
        if line.startswith("      unit:"):
            new.append(f"      lower: {lower}\n")
        if line.startswith("      source:"):
            new.extend(f"      {w}\n" for w in wrapped)
    body = body.replace(entry.group(0), "".join(new), 1)
    return text.replace(section.group(0), body, 1)


def main(argv: list[str]) -> int:
    runs = Path(argv[0])
    values = node_values(runs)
    text = REFS.read_text()
    for check, metrics in JUDGED.items():
        for metric in metrics:
            vals = values.get((check, metric), [])
            value, lower, why = band(check, metric, vals)
            print(f"{check}.{metric}: {value:.6g} lower {lower}: {why}")
            text = rewrite(text, check, metric, value, lower, why)
    if "--write" in argv:
        REFS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
