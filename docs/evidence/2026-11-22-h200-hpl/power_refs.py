"""The power metrics of the 5 ReFrame runs on the H200 (repeat/verdict.json rows: the sampler's energy_j, power_avg_w,
power_peak_w and the check's gflops_per_watt), summarised with gpuaccept.baseline's rule (median, tolerance
= max(unit floor, 1.5 x largest deviation), capped at 30%). Run from the repository root:
    .venv/bin/python docs/evidence/2026-11-22-h200-hpl/power_refs.py"""
import json
import statistics
from pathlib import Path

from gpuaccept.baseline import tolerance

rows = json.loads(Path(__file__).with_name("repeat").joinpath("verdict.json").read_text())["rows"]
for metric, unit in (("energy_j", "J"), ("power_avg_w", "W"), ("power_peak_w", "W"), ("gflops_per_watt", "GFLOP/s")):
    values = [r["value"] for r in rows if r["check"] == "hplstyle" and r["metric"] == metric]
    print(f"{metric}: runs={len(values)} median={statistics.median(values):.6g} min={min(values):.6g} "
          f"max={max(values):.6g} tolerance={tolerance(values, unit)}")
