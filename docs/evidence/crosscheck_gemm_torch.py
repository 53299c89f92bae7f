"""PyTorch's GEMM rates beside gpuaccept-gemm's burst figures, on the same GPU in the same session.

For each precision (fp64, fp32, tf32, bf16, fp16, and fp8 through torch._scaled_mm) and size, PyTorch's
matmul is timed as gpuaccept-gemm times its brief ("burst") sizes: --cooldown-s idle (default 0.25, as the
tool's), 2 untimed calls, then 10 calls, each between its own CUDA event pair, all read after one
synchronisation; the figure is the median, TFLOP/s = 2 n^3 / s / 1e12. Inputs uniform in [-1, 1) like
gpuaccept-gemm's. PyTorch's own defaults are kept (its cuBLAS/cuBLASLt choice, its workspace, reduced-precision
reductions for BF16/FP16) and recorded; FP32 is run with TF32 off and TF32 with it on.

With --gemm-json (gpuaccept-gemm's document from the same session), every size both measured is compared:
ratio = gpuaccept / torch, within --tolerance (default 2%) below PyTorch passes (faster never fails). With
--gemm-bin the script runs gpuaccept-gemm itself, --rounds times, alternating with PyTorch's timings, and each
side's figure is the best of its rounds' medians: at 16384 a 10-call burst lasts long enough for the power cap
to act inside it, so one burst of either side is not repeatable to 2%.
Prints one JSON document; exits 1 when a comparison fails. Read-only towards the GPU's settings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

WARMUP, CALLS = 2, 10


def set_fp32(tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32" if tf32 else "ieee"
    except (AttributeError, RuntimeError, ValueError):
        pass


def timed(fn, cooldown_s: float) -> list[float]:
    torch.cuda.synchronize()
    time.sleep(cooldown_s)
    for _ in range(WARMUP):
        fn()
    pairs = []
    for _ in range(CALLS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return [x.elapsed_time(y) / 1e3 for x, y in pairs]


def rate(prec: str, n: int, cooldown_s: float) -> dict:
    g = torch.Generator(device="cuda").manual_seed(n)
    dtype = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
             "fp16": torch.float16, "fp8": torch.bfloat16}[prec]
    a = torch.rand(n, n, device="cuda", dtype=dtype, generator=g) * 2 - 1
    b = torch.rand(n, n, device="cuda", dtype=dtype, generator=g) * 2 - 1
    if prec in ("fp32", "tf32"):
        set_fp32(prec == "tf32")
    if prec == "fp8":
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()  # column-major, as _scaled_mm wants
        one = torch.ones((), device="cuda", dtype=torch.float32)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)

        def fn():
            torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=c)
    else:
        c = torch.empty(n, n, device="cuda", dtype=dtype)

        def fn():
            torch.matmul(a, b, out=c)
    sec = timed(fn, cooldown_s)
    set_fp32(False)
    return {"seconds_median": statistics.median(sec), "tflops_median": 2.0 * n**3 / statistics.median(sec) / 1e12,
            "tflops_max": 2.0 * n**3 / min(sec) / 1e12, "calls": len(sec), "warmup_calls": WARMUP}


def ours(doc: dict) -> dict[tuple[str, int], float]:
    """gpuaccept-gemm's burst rates: the brief rows (series, large) of the solo mode."""
    out = {}
    for r in doc["results"]["gemm"]:
        if r.get("mode") == "solo" and r.get("phase") in ("series", "large") and "tflops_median" in r:
            out[(r["precision"], int(r["n"]))] = float(r["tflops_median"])
    return out


def run_gemm(binary: str, precs: list[str], sizes: list[int], cooldown_s: float, output: str) -> dict:
    """One gpuaccept-gemm run over the same precisions and sizes (the largest as its 'large' size, the others
    as its series; a 1 s window at 8192 is its shortest), its document returned."""
    series = [n for n in sizes if n < max(sizes)] or sizes
    argv = [binary, "--precisions", ",".join(precs), "--series", ",".join(map(str, series)),
            "--large", str(max(sizes)) if len(sizes) > 1 else "none", "--metric-size", "8192", "--window-s", "1",
            "--cooldown-s", str(cooldown_s), "--output", output]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    with open(output, encoding="utf-8") as f:
        return json.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--precisions", default="fp64,fp32,tf32,bf16,fp16,fp8")
    ap.add_argument("--sizes", default="4096,8192,16384")
    ap.add_argument("--gemm-json", action="append", default=[],
                    help="gpuaccept-gemm's document from the same session (repeatable: one per round)")
    ap.add_argument("--gemm-bin", help="run gpuaccept-gemm itself, alternating with PyTorch, --rounds times")
    ap.add_argument("--rounds", type=int, default=1, help="with --gemm-bin: rounds of (gpuaccept-gemm, PyTorch)")
    ap.add_argument("--out-dir", default=".", help="with --gemm-bin: where each round's gpuaccept-gemm document goes")
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--cooldown-s", type=float, default=0.25, help="idle before each size, as gpuaccept-gemm's")
    args = ap.parse_args()
    precs = args.precisions.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    m = torch.backends.cuda.matmul
    doc: dict = {
        "torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
        "method": f"{args.cooldown_s} s idle, {WARMUP} untimed calls, then the median of {CALLS} calls each between "
        "a CUDA event pair; with several rounds (gpuaccept-gemm then PyTorch, alternating), each side's figure is "
        "the best of its rounds' medians",
        "torch_settings": {
            "preferred_blas_library": str(torch.backends.cuda.preferred_blas_library()),
            "allow_fp16_reduced_precision_reduction": m.allow_fp16_reduced_precision_reduction,
            "allow_bf16_reduced_precision_reduction": m.allow_bf16_reduced_precision_reduction,
        },
        "torch_rates": {},
        "rounds": [],
    }
    rounds = args.rounds if args.gemm_bin else max(1, len(args.gemm_json))
    mine: dict[tuple[str, int], list[float]] = {}
    for i in range(rounds):
        rnd: dict = {"round": i + 1}
        if args.gemm_bin:
            out = os.path.join(args.out_dir, f"gemm-round{i + 1}.json")
            gemm_doc = run_gemm(args.gemm_bin, precs, sizes, args.cooldown_s, out)
            rnd["gemm_json"] = os.path.basename(out)
        elif args.gemm_json:
            with open(args.gemm_json[i], encoding="utf-8") as f:
                gemm_doc = json.load(f)
            rnd["gemm_json"] = args.gemm_json[i]
        else:
            gemm_doc = None
        if gemm_doc is not None:
            rates = ours(gemm_doc)
            rnd["gpuaccept_rates"] = {f"{p}/{n}": t for (p, n), t in rates.items()}
            for key, t in rates.items():
                mine.setdefault(key, []).append(t)
        rnd["torch_rates"] = {}
        for p in precs:
            for n in sizes:
                try:
                    rnd["torch_rates"][f"{p}/{n}"] = rate(p, n, args.cooldown_s)
                except (RuntimeError, TypeError) as err:
                    rnd["torch_rates"][f"{p}/{n}"] = {"error": str(err).splitlines()[0]}
                torch.cuda.empty_cache()
        doc["rounds"].append(rnd)
    # Each side's figure: the best of its rounds' medians (the first round's error where none measured).
    for key in doc["rounds"][0]["torch_rates"]:
        measured = [r["torch_rates"][key] for r in doc["rounds"] if "tflops_median" in r["torch_rates"][key]]
        doc["torch_rates"][key] = (max(measured, key=lambda t: t["tflops_median"]) if measured
                                   else doc["rounds"][0]["torch_rates"][key])
    ok = True
    if mine:
        rows = []
        for key, t in doc["torch_rates"].items():
            p, n = key.split("/")
            g = max(mine[(p, int(n))]) if (p, int(n)) in mine else None
            if g is None or "tflops_median" not in t:
                rows.append({"precision": p, "n": int(n), "compared": False,
                             "why": "not measured by both" if "error" not in t else t["error"]})
                continue
            ratio = g / t["tflops_median"]
            passed = ratio >= 1.0 - args.tolerance
            ok = ok and passed
            rows.append({"precision": p, "n": int(n), "compared": True, "gpuaccept_tflops": g,
                         "torch_tflops": t["tflops_median"], "ratio": ratio, "passed": passed,
                         "rounds": len(mine[(p, int(n))])})
        doc["comparison"] = {"tolerance": args.tolerance, "rule": "gpuaccept / torch >= 1 - tolerance",
                             "passed": ok, "rows": rows}
    print(json.dumps(doc, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
