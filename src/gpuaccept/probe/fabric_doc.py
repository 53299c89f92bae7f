"""The fabric check's document and command line (docs/checks/fabric.md).

``python -m gpuaccept.probe.fabric_doc probe --output fabric.json``: the fabric read (gpuaccept.probe.fabric), each
HCA's ib_write_bw loopback (gpuaccept.probe.perftest), the fabric read again; one gpuaccept.bench/1 document with
both readings, the runs and two figures (``ports_active``, ``ib_write_bw_min_gbps``). The judge decides
(gpuaccept.judge.fabric_rules), comparing the counters of the node facts before the suite (or, without them, the
first reading here) with those after it (or the second reading here).

``python -m gpuaccept.probe.fabric_doc snapshot --output F``: one reading alone, for a site that reads the fabric
before and after its own workload; ``gpuaccept run`` keeps one in the node facts before and after the suite.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from gpuaccept.atomic import OutputError, write_text_atomic
from gpuaccept.probe import document, fabric, perftest

TOOL = "gpuaccept-fabric"
TIMING = "sysfs read before and after each HCA's ib_write_bw loopback (the average of perftest's iterations)"


def gpu_count(proc: Path = Path("/proc/driver/nvidia/gpus")) -> int:
    """The NVIDIA GPUs the driver lists (one folder per GPU); 0 without the driver."""
    try:
        return sum(1 for _ in proc.iterdir())
    except OSError:
        return 0


def metrics_of(after: dict[str, Any], bw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``ports_active`` (ports in state ACTIVE) and ``ib_write_bw_min_gbps`` (the slowest HCA), or why not."""
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    if after["hcas"]:
        active = sum(1 for _, p in fabric.ports(after) if p.get("state") == "ACTIVE")
        metrics["ports_active"] = {"value": active, "unit": "count", "better": "higher"}
    else:
        waived["ports_active"] = after["why"] or "no HCA"
    figures = [r["gbps"] for r in bw.get("runs") or []]
    if figures and all(isinstance(f, (int, float)) for f in figures):
        metrics["ib_write_bw_min_gbps"] = {"value": min(figures), "unit": "Gb/s", "better": "higher"}
    else:
        failed = [f"{r['hca']}: {r['error']}" for r in bw.get("runs") or [] if r.get("gbps") is None]
        waived["ib_write_bw_min_gbps"] = "; ".join(failed) or bw.get("why") or after["why"] or "not run"
    return metrics, waived


def probe(argv: list[str], sysfs: Path, proc_modules: Path, run_bw: bool, gpus: int, size: int) -> dict[str, Any]:
    t0, started = time.monotonic(), document.utc_iso()
    before = fabric.read(sysfs, proc_modules)
    if not before["hcas"]:
        bw: dict[str, Any] = {"available": False, "why": before["why"], "runs": []}
    elif run_bw:
        bw = perftest.run_all(before, gpus, size)
    else:
        bw = {"available": False, "why": "not run (--no-ib-write-bw, or the quick mode)", "runs": []}
    after = fabric.read(sysfs, proc_modules)
    metrics, waived = metrics_of(after, bw)
    return {
        **document.header(TOOL, argv, started, TIMING, time.monotonic() - t0),
        "parameters": {"sysfs": str(sysfs), "ib_write_bw": run_bw, "message_bytes": size, "gpus": gpus},
        "results": {"before": before, "after": after, "ib_write_bw": bw},
        "metrics": metrics,
        "waived": waived,
        "verification": {"passed": True, "failures": []},
        "errors": [],
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m gpuaccept.probe.fabric_doc", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("probe", "snapshot"))
    ap.add_argument("--output", required=True, help="the JSON document to write (atomically)")
    ap.add_argument("--sysfs", default="/sys", help="the sysfs root (default /sys)")
    ap.add_argument("--proc-modules", default="/proc/modules")
    ap.add_argument("--no-ib-write-bw", action="store_true", help="read sysfs only")
    ap.add_argument("--quick", action="store_true", help="as --no-ib-write-bw (the nightly mode)")
    ap.add_argument("--gpus", type=int, default=None, help="GPUs for --use_cuda (default: the driver's count)")
    ap.add_argument("--size", type=int, default=perftest.MESSAGE_BYTES, help="ib_write_bw message size, bytes")
    args = ap.parse_args(argv)
    sysfs, modules = Path(args.sysfs), Path(args.proc_modules)
    if args.what == "snapshot":
        doc: dict[str, Any] = {"schema": fabric.SNAPSHOT_SCHEMA, **fabric.read(sysfs, modules)}
    else:
        gpus = gpu_count() if args.gpus is None else args.gpus
        doc = probe([sys.executable, "-m", "gpuaccept.probe.fabric_doc", *argv], sysfs, modules,
                    not (args.no_ib_write_bw or args.quick), gpus, args.size)  # fmt: skip
    try:
        write_text_atomic(args.output, json.dumps(doc, indent=1) + "\n")
    except OutputError as err:
        print(f"gpuaccept fabric: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
