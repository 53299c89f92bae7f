"""A foreign load that costs one GPU a small, set share of its time: a burst of BF16 matrix products every period,
busy for ``--duty`` of it, idle for the rest (time-sliced with whatever else runs on the GPU). It changes no
clock, power limit or other setting of the GPU; pin it with CUDA_VISIBLE_DEVICES.

    CUDA_VISIBLE_DEVICES=1 python3 duty_load.py --duty 0.05 --period-ms 10 --seconds 300

``--measure PRECISION`` instead times a GEMM (fp64 or bf16, n = 8192) for ``--seconds`` and prints its TFLOP/s:
the calibration phase of device_fleet.sh runs it with and without the load to report the load's real cost.
"""

from __future__ import annotations

import argparse
import time

import torch


def load(duty: float, period_s: float, seconds: float) -> None:
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    print(f"duty load on {torch.cuda.get_device_name(0)}: {duty:.1%} of every {period_s * 1e3:g} ms", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        while time.monotonic() - start < duty * period_s:  # a burst: small products until its share is spent
            a @ a
            torch.cuda.synchronize()
        rest = period_s - (time.monotonic() - start)
        if rest > 0:
            time.sleep(rest)


def measure(precision: str, seconds: float) -> float:
    dtype = {"fp64": torch.float64, "bf16": torch.bfloat16}[precision]
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):  # warm-up
        a @ b
    torch.cuda.synchronize()
    count, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        for _ in range(5):
            a @ b
        torch.cuda.synchronize()
        count += 5
    return 2.0 * n**3 * count / (time.monotonic() - start) / 1e12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duty", type=float, default=0.05, help="the share of each period the load is busy")
    ap.add_argument("--period-ms", type=float, default=10.0, help="the period of the bursts (ms)")
    ap.add_argument("--seconds", type=float, default=300.0, help="how long to run")
    ap.add_argument("--measure", choices=("fp64", "bf16"), help="time a GEMM instead of loading the GPU")
    args = ap.parse_args()
    if args.measure:
        print(f"{args.measure} {measure(args.measure, args.seconds):.2f} TFLOP/s", flush=True)
    else:
        load(args.duty, args.period_ms / 1e3, args.seconds)


if __name__ == "__main__":
    main()
