"""Figures for issue 6 (fleet side), measured on the CPU machine this runs on; run by figures.sh beside it.

1. Time to convert a run report of 10,000 results into metrics: the commissioning run recorded on the H100
   (docs/evidence/2026-11-22-h100-accept), its test cases' performance values replicated under new metric names
   until the report holds 10,000 results, with a reference file that names every one of them (the values and
   bounds are the recorded ones). Timed: `gpuaccept summarize` end to end (a new Python process: reading the
   report and references, judging, verdict.json, the textfile), and in-process the two steps it is made of
   (verdict.build, exporter.render). Median of 5 runs each.
2. Series per node: the samples in the textfile of the real recorded runs, per suite, and for a node that keeps
   commission + nightly + evaluation files in node_exporter's directory.
"""

from __future__ import annotations

import copy
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "src"))
from gpuaccept import exporter, verdict  # noqa: E402

RUN = ROOT / "docs/evidence/2026-11-22-h100-accept/results/20261122T052346Z-commission"
NTYPE = "h100_sxm5_80gb"
TARGET = 10_000
REPEATS = 5


def synthetic_run(base: Path) -> tuple[Path, Path, int]:
    report = json.loads((RUN / "reframe-report.json").read_text())
    refs = yaml.safe_load((ROOT / "reference_values" / f"{NTYPE}.yaml").read_text())
    cases = [tc for r in report["runs"] for tc in r["testcases"] if not tc.get("fixture") and tc.get("perfvalues")]
    per_copy = sum(len(tc["perfvalues"]) for tc in cases)
    copies = -(-TARGET // per_copy)
    total = 0
    for tc in cases:
        key = tc["check_key"]
        original = dict(tc["perfvalues"])
        tc["perfvalues"] = {}
        ref_check = refs["checks"][key]
        originals = dict(ref_check)
        for i in range(copies):
            for perf_key, entry in original.items():
                if total >= TARGET:
                    break
                name = perf_key.rsplit(":", 1)[-1]
                new = f"{name}_r{i:04d}"
                tc["perfvalues"][perf_key.rsplit(":", 1)[0] + ":" + new] = entry
                if name in originals:
                    ref_check[new] = originals[name]
                total += 1
        tc["outputdir"] = str(
            RUN / "reframe/output" / Path(tc["outputdir"]).relative_to(report["session_info"]["prefix_output"])
        )
    run_dir = base / "run"
    run_dir.mkdir()
    (run_dir / "reframe-report.json").write_text(json.dumps(report))
    (run_dir / "node-facts.json").write_text((RUN / "node-facts.json").read_text())
    ref_dir = base / "refs"
    ref_dir.mkdir()
    (ref_dir / f"{NTYPE}.yaml").write_text(yaml.safe_dump(refs, sort_keys=False))
    return run_dir, ref_dir, total


def median_time(fn, n=REPEATS) -> tuple[float, list[float]]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def series(text: str) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def main() -> None:
    out: dict = {
        "machine": {
            "python": platform.python_version(),
            "cpus": len(__import__("os").sched_getaffinity(0)),
            "cpu": next(
                (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?"
            ),
            "kernel": platform.release(),
        }
    }
    with tempfile.TemporaryDirectory() as tmp:
        run_dir, ref_dir, total = synthetic_run(Path(tmp))
        facts = json.loads((run_dir / "node-facts.json").read_text())
        report = verdict.load_report(run_dir / "reframe-report.json")
        build_s, build_all = median_time(
            lambda: verdict.build(report, facts, ref_dir, NTYPE, "commission", run_dir=run_dir)
        )
        v = verdict.build(report, facts, ref_dir, NTYPE, "commission", run_dir=run_dir)
        render_s, render_all = median_time(lambda: exporter.render(v))
        text = exporter.render(v)
        cmd = [
            sys.executable,
            "-m",
            "gpuaccept",
            "summarize",
            "--run-dir",
            str(run_dir),
            "--node-type",
            NTYPE,
            "--suite",
            "commission",
            "--facts",
            str(run_dir / "node-facts.json"),
            "--reference-dir",
            str(ref_dir),
            "--textfile-dir",
            str(Path(tmp) / "textfile"),
        ]

        def cli():
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            assert res.returncode in (0, 1), res.stderr

        cli_s, cli_all = median_time(cli)
        judged = sum(1 for r in v.rows if r.metric and r.status in ("pass", "fail"))
        out["convert_10000_results"] = {
            "results_in_report": total,
            "verdict_rows": len(v.rows),
            "judged_rows": judged,
            "textfile_series": series(text),
            "textfile_bytes": len(text.encode()),
            "verdict_build_s_median": round(build_s, 4),
            "exporter_render_s_median": round(render_s, 4),
            "summarize_cli_s_median": round(cli_s, 3),
            "all_s": {
                "build": [round(t, 4) for t in build_all],
                "render": [round(t, 4) for t in render_all],
                "cli": [round(t, 3) for t in cli_all],
            },
            "statistic": f"median of {REPEATS} runs",
        }
    per_suite = {}
    for run in sorted((ROOT / "docs/evidence/2026-11-22-h100-accept/results").iterdir()):
        report = verdict.load_report(run / "reframe-report.json")
        facts = json.loads((run / "node-facts.json").read_text())
        suite = run.name.split("-", 1)[1]
        v = verdict.build(report, facts, ROOT / "reference_values", NTYPE, suite, run_dir=run)
        per_suite[f"{run.name}"] = series(exporter.render(v))
    out["series_per_node"] = {
        "per_run_textfile": per_suite,
        "note": "one textfile per suite (gpuaccept_<suite>.prom); a node with commission and evaluation files "
        "exposes the sum; nightly runs the two GPU checks in quick mode (no cpu_gemm) and writes fewer",
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
