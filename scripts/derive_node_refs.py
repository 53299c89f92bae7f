"""A measured multi-GPU node type's node layer from every healthy `make accept` run recorded on it: rewrites the
value, tolerance and band of each judged node-level entry of reference_values/<node type>.yaml in place (the rest
of the file as it is), or prints what it would change.

    .venv/bin/python scripts/derive_node_refs.py --node-type h200_x4 RUN_OR_FOLDER... [--write]

Each argument is a run directory (results/<node>/<run>, with its verdict.json) or a folder of them. Every run
given must be ACCEPTED and of that node type: a rejected or foreign run is refused, not skipped. The figures are
those each verdict recorded (its rows without a GPU), so the derivation does not depend on today's references.
HPL-CUDA's rate also takes the type's recorded scaling run (PROFILES below: HPL-CUDA on the node's 1 x N grid at
N=184320, beside the commission suite's runs, whose N is sized from memory).

Rules, as for the other measured types (docs/reference-values.md): the value is the median; three runs or more: the
floor halfway between the lowest run and the highest made 10 % worse (gpuaccept baseline's catch_band), so that it
passes every healthy run and fails a 10 % loss of each; two runs: the same bound over the two; power-capped
figures (FP8 GEMM with every GPU busy, the HPL-style LU's GFLOP/s per watt): the floor at 0.90 of the median, which
passes every healthy run seen and fails a loss of more than 10 %.

tests/test_node_refs_derivation.py runs it on the recorded runs (tests/fixtures) and requires the shipped files to
be what it writes."""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import textwrap
from pathlib import Path

from gpuaccept.judge import readback
from gpuaccept.layout import VERDICT_FILE
from gpuaccept.results import baseline

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference_values"
LOSS = 0.10
JUDGED = {
    "bandwidth": ["p2p_write_min", "p2p_read_min", "p2p_bidir_min"],
    "gemm": [f"{p}_concurrent_tflops_min" for p in ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")],
    "hplstyle": ["tflops_sum", "gflops_per_watt"],
    "hpl_cuda": ["tflops"],
    "nccl": [f"{c}_busbw_gbps_max" for c in ("allreduce", "allgather", "reducescatter", "broadcast")],
}
POWER_CAPPED = {("gemm", "fp8_concurrent_tflops_min"), ("hplstyle", "gflops_per_watt")}
#: What each measured type adds to its runs, and what its bands say of healthy nodes seen elsewhere.
PROFILES = {
    "h200_x2": {
        # docs/evidence/2026-11-26-hpl-grid (h200x2-call3-nccl): 1 x 2 at N=184320, panel by NCCL, PASSED
        "scaling": (92.13, "the scaling run at N=184320 of 2026-11-26"),
        "fp8_seen": ", and the 2 x H200 machine of 2026-11-22 at 1219",
        "fp8_passes": "every healthy 2 x H200 seen",
    },
    "h200_x4": {
        # docs/evidence/2026-11-27-multigpu, hpl/summary.txt; tests/fixtures/multigpu_h200x4/hpl_scaling/
        # hpl_cuda-scale-1x4-n184320-r1.json
        "scaling": (180.43, "the scaling run at N=184320"),
        "fp8_seen": ", and an H200 of a 2 x H200 node at 1127 alone",
        "fp8_passes": "every healthy H200 seen",
    },
}
WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def run_dirs(paths: list[Path]) -> list[Path]:
    """Each path that is a run directory, and the run directories inside each one that is not."""
    runs: list[Path] = []
    for path in paths:
        runs.extend([path] if (path / VERDICT_FILE).is_file()
                    else sorted(p for p in path.iterdir() if (p / VERDICT_FILE).is_file()))  # fmt: skip
    if not runs:
        raise SystemExit(f"no run directory (with a verdict.json) in {', '.join(map(str, paths))}")
    return runs


def node_values(runs: list[Path], node_type: str) -> tuple[dict[tuple[str, str], list[float]], int]:
    """Each judged node-level figure of every run, as its verdict recorded it (rows without a GPU), with
    HPL-CUDA's scaling run added; and how many runs gave HPL-CUDA's rate."""
    out: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        # read strictly, and ACCEPTED by the judge's own rule over the rows, never by the 'verdict' field beside them
        doc = readback.read(run / VERDICT_FILE, SystemExit)
        if doc.get("node_type") != node_type or not readback.accepted(doc) or readback.disagreement(doc):
            said = "ACCEPTED" if readback.accepted(doc) else "REJECTED"
            raise SystemExit(f"{run}: {said} by its rows for node type {doc.get('node_type')!r}"
                             f"{'; ' + readback.disagreement(doc) if readback.disagreement(doc) else ''}; "
                             f"only ACCEPTED runs of {node_type} give its references")  # fmt: skip
        for row in doc["rows"]:
            key = (row["check"], row.get("metric"))
            if row.get("gpu") is None and key[1] in JUDGED.get(key[0], ()) and row.get("value") is not None:
                out.setdefault(key, []).append(float(row["value"]))
    suite_runs = len(out.get(("hpl_cuda", "tflops"), []))
    out.setdefault(("hpl_cuda", "tflops"), []).append(PROFILES[node_type]["scaling"][0])
    return out, suite_runs


def band(node_type: str, gpus: int, hpl_runs: int, check: str, metric: str,
         values: list[float]) -> tuple[float, float, str]:  # fmt: skip
    """(value, lower tolerance, the band's reason)."""
    profile = PROFILES[node_type]
    med, lo, hi = statistics.median(values), min(values), max(values)
    hpl = (f"healthy runs ({WORDS.get(hpl_runs, hpl_runs)} of the commission suite, N sized from memory; "
           f"{profile['scaling'][1]}), 1 x {gpus} grid, panel by NCCL, TFLOP/s")  # fmt: skip
    what = {"gemm": "healthy runs, every GPU busy,", "hpl_cuda": hpl}.get(check, "healthy runs")
    if (check, metric) in POWER_CAPPED:
        gemm = check == "gemm"
        extra = profile["fp8_seen"] if gemm else ""
        passes = profile["fp8_passes"] if gemm else ("both" if len(values) == 2 else "every one")
        return med, LOSS, (
            f"power-capped: {len(values)} {what} {lo:.4g}-{hi:.4g}{extra}: the floor, 0.90 of the median "
            f"({(1 - LOSS) * med:.4g}), passes {passes} and fails a loss of more than 10 % from the median")
    if len(values) >= 3:
        caught = baseline.catch_band(values, "higher", LOSS, what)
        if not caught:
            raise SystemExit(f"{check}.{metric}: runs {lo:.4g}-{hi:.4g} spread too far for a band that passes "
                             f"every one and fails a {LOSS:.0%} loss; look at the lowest before deriving")  # fmt: skip
        return med, caught[0], caught[1]
    if len(values) < 2:
        raise SystemExit(f"{check}.{metric}: {len(values)} run(s); at least two are needed")
    floor = (lo + (1 - LOSS) * hi) / 2
    return med, round(1 - floor / med, 4), (
        f"{len(values)} {what} {lo:.4g}-{hi:.4g}: the floor {floor:.4g} passes the lowest and fails each 10% "
        f"lower (at most {(1 - LOSS) * hi:.4g}); widen it with more runs")


def rewrite(text: str, check: str, metric: str, value: float, lower: float, why: str) -> str:
    """The entry ``checks.<check>.<metric>`` with its value, lower and band replaced."""
    section = re.search(rf"(?m)^  {check}:\n(?:(?:    |\n).*\n?)*", text)
    if not section:
        raise SystemExit(f"no checks.{check} section")
    body = section.group(0)
    entry = re.search(rf"(?m)^    {metric}:\n(?:      .*\n|        .*\n)*", body)
    if not entry:
        raise SystemExit(f"no checks.{check}.{metric} entry")
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


def derive(node_type: str, runs: list[Path], text: str) -> tuple[str, list[str]]:
    """The reference file's text with its node layer derived from ``runs``, and a line per entry."""
    gpus = int(re.search(r"(?m)^gpu_count: (\d+)$", text).group(1))
    values, hpl_runs = node_values(runs, node_type)
    lines = []
    for check, metrics in JUDGED.items():
        for metric in metrics:
            value, lower, why = band(node_type, gpus, hpl_runs, check, metric, values.get((check, metric), []))
            lines.append(f"{check}.{metric}: {value:.6g} lower {lower}: {why}")
            text = rewrite(text, check, metric, value, lower, why)
    return text, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node-type", required=True, choices=sorted(PROFILES))
    parser.add_argument("--reference-dir", type=Path, default=REFERENCE_DIR)
    parser.add_argument("--write", action="store_true", help="rewrite the reference file in place")
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    refs = args.reference_dir / f"{args.node_type}.yaml"
    text, lines = derive(args.node_type, run_dirs(args.runs), refs.read_text())
    print("\n".join(lines))
    if args.write:
        tmp = refs.with_suffix(".yaml.tmp")
        tmp.write_text(text)
        tmp.replace(refs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
