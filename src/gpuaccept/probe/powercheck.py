"""The power check (after Kozin and Cable, 2010): idle power, power under a sustained GEMM load against the cap,
energy to solution and GFLOP/s per watt of that load, and clock throttling other than the power cap
(docs/checks/power.md).

``gpuaccept powercheck --gemm PATH --output power_check.json``: samples the idle node (initialised: NVML
loaded, nothing running), then runs ``gpuaccept-gemm`` on one precision for a sustained window under the sampler,
reads host power through IPMI DCMI where the node has it, and writes one gpuaccept.bench/1 document. Read-only:
no power limit or clock is set.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from gpuaccept import textinput
from gpuaccept.atomic import write_text_atomic
from gpuaccept.probe import document, power

TOOL = "gpuaccept-powercheck"
EXIT_OK, EXIT_ERROR, EXIT_FAILED = 0, 1, 2
# Clock-event reasons that are a fault under load; the power cap (the goal of the load), idle, application clock
# settings, sync boost and display clock are not.
IPMI_DEVICES = ("/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0")
IPMI_RE = re.compile(r"Instantaneous power reading:\s*(\d+(?:\.\d+)?)\s*Watts", re.IGNORECASE)


def parse_dcmi(text: str) -> float | None:
    """Watts from ``ipmitool dcmi power reading``."""
    m = IPMI_RE.search(text)
    return float(m.group(1)) if m else None


def host_power_reading() -> tuple[float | None, str]:
    """(watts, how) through IPMI DCMI; (None, why not) where the node has no BMC reachable this way."""
    ipmitool = shutil.which("ipmitool")
    if not ipmitool:
        return None, "not available: ipmitool not installed"
    if not any(Path(d).exists() for d in IPMI_DEVICES):
        return None, "not available: no IPMI device (/dev/ipmi0)"
    out = subprocess.run(
        [ipmitool, "dcmi", "power", "reading"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )
    watts = parse_dcmi(out.stdout)
    if out.returncode != 0 or watts is None:
        return None, f"not available: ipmitool dcmi power reading exited {out.returncode}: {out.stderr.strip()[:200]}"
    return watts, "ipmitool dcmi power reading"


def settle(max_s: float, window_s: float = 2.0, tolerance: float = 0.05) -> dict[str, Any]:
    """Wait until every GPU's power is steady (max - min over the last ``window_s`` within ``tolerance`` of the
    mean) or ``max_s`` has passed: a GPU that just ran a GEMM takes seconds to come down to idle."""
    t0 = time.monotonic()
    try:
        backend, _ = power.open_backend("nvml")
    except power.SamplerError as err:
        time.sleep(min(max_s, 3.0))
        return {"waited_s": round(time.monotonic() - t0, 2), "settled": None, "why": f"fixed wait: {err}"}
    history: list[tuple[float, list[float | None]]] = []
    try:
        while True:
            now = time.monotonic() - t0
            history.append((now, [r.power_w for r in backend.read(0, now)]))
            recent = [w for t, w in history if t >= now - window_s]
            if now >= window_s and all(
                None not in col and max(col) - min(col) <= tolerance * (sum(col) / len(col))  # type: ignore[operator]
                for col in zip(*recent, strict=True)
            ):
                return {"waited_s": round(now, 2), "settled": True, "why": None}
            if now >= max_s:
                return {"waited_s": round(now, 2), "settled": False, "why": f"power still changing after {max_s:g} s"}
            time.sleep(0.2)
    finally:
        backend.close()


def gemm_command(gemm: str, precision: str, load_s: float, outputs: list[str]) -> list[str]:
    """One GEMM process per GPU, all at once (every GPU loaded together, as DCGM's targeted power does), with
    CUDA's device order set to the PCI order that NVML uses; exits with the first non-zero status."""
    one = [gemm, "--precisions", precision, "--series", "none", "--large", "none", "--window-s", f"{load_s:g}"]
    lines = ["export CUDA_DEVICE_ORDER=PCI_BUS_ID", "pids="]
    for gpu, out in enumerate(outputs):
        args = " ".join(shlex.quote(a) for a in [*one, "--gpus", str(gpu), "--output", out])
        lines.append(f'{args} & pids="$pids $!"')
    lines += ["rc=0", 'for p in $pids; do wait "$p" || { s=$?; [ "$rc" -eq 0 ] && rc=$s; }; done', "exit $rc"]
    return ["sh", "-c", "\n".join(lines)]


def _window(gemm_doc: dict[str, Any], gpu: int, precision: str) -> dict[str, Any] | None:
    for r in (gemm_doc.get("results") or {}).get("gemm") or []:
        if r.get("gpu") == gpu and r.get("precision") == precision and r.get("mode") == "solo":
            if r.get("phase", "window") == "window":
                return r
    return None


def measure(
    idle: dict[str, Any],
    load: dict[str, Any],
    gemm_docs: dict[int, dict[str, Any]],
    precision: str,
    host: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, str], list[str], list[dict[str, Any]]]:
    """Metrics, waived metrics, failures and per-GPU rows from the two sampler documents and the GEMM's. The
    failures are what this tool could verify itself (nothing, here: the sampling and the GEMM's own verification
    are added by ``run``); throttling is judged from the rows' ``throttled_s`` by gpuaccept.judge.rules."""
    metrics: dict[str, Any] = {}
    waived: dict[str, str] = {}
    failures: list[str] = []
    rows: list[dict[str, Any]] = []

    def put(name: str, value: float, unit: str, better: str, description: str) -> None:
        metrics[name] = {"value": value, "unit": unit, "better": better, "description": description}

    idle_gpus = {g["gpu"]: g for g in (idle.get("results") or {}).get("per_gpu") or []}
    load_gpus = {g["gpu"]: g for g in (load.get("results") or {}).get("per_gpu") or []}
    for gpu in sorted(load_gpus):
        i, g = idle_gpus.get(gpu) or {}, load_gpus[gpu]
        w = _window(gemm_docs.get(gpu) or {}, gpu, precision)
        tflops = w.get("tflops_median") if w else None
        row = {
            "gpu": gpu,
            "idle_median_w": i.get("median_w"),
            "idle_avg_w": i.get("avg_w"),
            "load_median_w": g.get("median_w"),
            "load_peak_w": g.get("peak_w"),
            "power_limit_w": g.get("power_limit_w"),
            "load_energy_j": g.get("energy_j"),
            "tflops_median": tflops,
            "seconds_per_call": w.get("seconds_median") if w else None,
            "gflops_per_watt": tflops * 1000.0 / g["median_w"] if tflops and g.get("median_w") else None,
            "gemm_energy_j": g["median_w"] * w["seconds_median"] if w and g.get("median_w") else None,
            "throttled_s": g.get("throttled_s") or {},
            "sm_mhz_median": g.get("sm_mhz_median"),
            "temp_c_max": g.get("temp_c_max"),
        }
        rows.append(row)
    idle_w = [r["idle_median_w"] for r in rows]
    if rows and all(v is not None for v in idle_w):
        put("idle_power_max_w", max(idle_w), "W", "lower", "max over GPUs of the median idle power")
    else:
        waived["idle_power_max_w"] = "idle power not measured: " + "; ".join(idle.get("errors") or ["no sample"])
    load_w = [r["load_median_w"] for r in rows]
    if rows and all(v is not None for v in load_w):
        put("load_power_min_w", min(load_w), "W", "higher", "min over GPUs of the median power under the GEMM load")
        put("load_power_max_w", max(load_w), "W", "lower", "max over GPUs of the median power under the GEMM load")
    else:
        for m in ("load_power_min_w", "load_power_max_w"):
            waived[m] = "load power not measured: " + "; ".join(load.get("errors") or ["no sample"])
    if "energy_j" in (load.get("metrics") or {}):
        put(
            "load_energy_j",
            load["metrics"]["energy_j"]["value"],
            "J",
            "lower",
            "energy of all GPUs over the whole GEMM run (NVML energy counter)",
        )
    else:
        waived["load_energy_j"] = (load.get("waived") or {}).get("energy_j", "not measured")
    eff = [r["gflops_per_watt"] for r in rows]
    joules = [r["gemm_energy_j"] for r in rows]
    if rows and all(v is not None for v in eff):
        put(
            "gflops_per_watt",
            min(eff),
            "GFLOP/s/W",
            "higher",
            f"min over GPUs of the {precision} GEMM's median GFLOP/s per watt of median load power",
        )
        put(
            "gemm_energy_j",
            max(joules),
            "J",
            "lower",
            f"max over GPUs of the energy of one {precision} GEMM call at the metric size "
            "(median load power x median call time)",
        )
    else:
        why = "no GEMM rate" if gemm_docs else "the GEMM left no document"
        waived["gflops_per_watt"] = waived["gemm_energy_j"] = why
    if host.get("load_w") is not None:
        put("host_power_load_w", host["load_w"], "W", "lower", "host power (IPMI DCMI) in the middle of the load")
    else:
        waived["host_power_load_w"] = host.get("how") or "not available"
    return metrics, waived, failures, rows


# The per-GPU metrics of the power check and where each GPU's figure is in its row of results.per_gpu (the metric
# over the GPUs is its min or max): gpu_metrics, so that the judge names the GPU that draws too little or too much.
GPU_FIGURES = {
    "idle_power_max_w": ("idle_median_w", "W", "lower"),
    "load_power_min_w": ("load_median_w", "W", "higher"),
    "load_power_max_w": ("load_median_w", "W", "lower"),
    "gflops_per_watt": ("gflops_per_watt", "GFLOP/s/W", "higher"),
    "gemm_energy_j": ("gemm_energy_j", "J", "lower"),
    "load_energy_j": ("load_energy_j", "J", "lower"),
}


def run(args: Any, argv: list[str]) -> int:
    idle_s = args.idle_s if args.idle_s is not None else (3.0 if args.quick else 5.0)
    load_s = args.load_s if args.load_s is not None else (5.0 if args.quick else 10.0)
    if not (0.5 <= idle_s <= 600 and 1.0 <= load_s <= 600):
        raise ValueError(f"--idle-s {idle_s} / --load-s {load_s}: idle 0.5..600 s, load 1..600 s")
    if not (os.path.isfile(args.gemm) and os.access(args.gemm, os.X_OK)):
        raise ValueError(f"--gemm {args.gemm}: not an executable file (build gpuaccept-gemm first)")
    t0, started = time.monotonic(), document.utc_iso()
    out_dir = Path(args.output).resolve().parent
    settled = settle(15.0 if args.quick else 30.0)
    idle, _ = power.measure(["sleep", f"{idle_s:g}"], args.interval, [*argv, "(idle phase)"])
    gemm_outs = [str(out_dir / f"power_gemm_{d['index']}.json") for d in idle.get("devices") or []]
    host: dict[str, Any] = {}
    host["idle_w"], host["how"] = host_power_reading()

    def mid_load() -> None:
        time.sleep(max(1.0, load_s / 2 + 1.0))
        host["load_w"], _how = host_power_reading()

    reader = threading.Thread(target=mid_load, daemon=True)
    if host["idle_w"] is not None:
        reader.start()
    if not gemm_outs:
        gemm_outs = [str(out_dir / "power_gemm_0.json")]  # no GPU read: run it anyway, it says why it fails
    load, status = power.measure(gemm_command(args.gemm, args.precision, load_s, gemm_outs), args.interval, argv)
    if reader.is_alive():
        reader.join(timeout=30)
    gemm_docs: dict[int, dict[str, Any]] = {}
    for gpu, path in enumerate(gemm_outs):
        try:
            gemm_docs[gpu] = textinput.load_json(Path(path), "the GEMM document", ValueError)
        except ValueError:
            continue
    metrics, waived, failures, rows = measure(idle, load, gemm_docs, args.precision, host)
    errors = [f"idle phase: {e}" for e in idle.get("errors") or []] + [
        f"load phase: {e}" for e in load.get("errors") or []
    ]
    if status != 0:
        errors.append(f"{args.gemm} exited {status}" + (" (verification failed)" if status == 2 else ""))
    for phase, doc in (("idle", idle), ("load", load)):
        failures += [f"{phase} sampling: {f}" for f in doc["verification"]["failures"]]
    for gemm_doc in gemm_docs.values():
        failures += [f"GEMM: {f}" for f in (gemm_doc.get("verification") or {}).get("failures") or []]
    doc = {
        **{k: load[k] for k in ("schema", "tool_version", "git_revision", "host", "cuda", "devices")},
        "tool": TOOL,
        "command_line": argv,
        "started_utc": started,
        "elapsed_s": round(time.monotonic() - t0, 3),
        "timing": f"idle: after the power has settled, the median of the samples over {idle_s:g} s with nothing "
        f"running; load: the sampler around a "
        f"{load_s:g} s sustained {args.precision} GEMM window (gpuaccept-gemm); power under load = median of the "
        f"{args.interval:g} s samples of the whole GEMM run; GFLOP/s per watt = the GEMM's median rate / that power",
        "parameters": {
            "idle_s": idle_s,
            "load_s": load_s,
            "precision": args.precision,
            "interval_s": args.interval,
            "gemm": args.gemm,
            "gemm_documents": gemm_outs,
        },
        "results": {"per_gpu": rows, "settle": settled, "host_power": host, "idle": idle, "load": load},
        "metrics": metrics,
        "gpu_metrics": document.gpu_metrics(rows, metrics, GPU_FIGURES),
        "waived": waived,
        "verification": {"passed": not failures and not errors, "checked": len(rows), "failures": failures},
        "errors": errors,
    }
    write_text_atomic(args.output, document.dumps(doc))
    for r in rows:
        print(
            f"GPU {r['gpu']}: idle {r['idle_median_w']} W, load median {r['load_median_w']} W (limit "
            f"{r['power_limit_w']} W), {r['tflops_median']} TFLOP/s, {r['gflops_per_watt']} GFLOP/s/W, "
            f"throttled {r['throttled_s']}"
        )
    for f in failures:
        print(f"FAILED: {f}")
    for e in errors:
        print(f"error: {e}")
    print(f"host power: {host.get('load_w') if host.get('load_w') is not None else host.get('how')}")
    if errors:
        return EXIT_ERROR
    return EXIT_FAILED if failures else EXIT_OK
