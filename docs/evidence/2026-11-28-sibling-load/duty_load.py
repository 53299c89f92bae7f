"""A foreign load that takes a small share of one GPU's time: every PERIOD_MS it queues one kernel that spins on
the GPU for BURST_MS (torch.cuda._sleep, a busy-wait kernel), then sleeps on the host for the rest of the period.

Without MPS, kernels of two processes do not run on one GPU at the same time: the GPU is time-sliced between the
processes' contexts, so while the burst runs the benchmark's kernels wait. The benchmark loses about
BURST_MS / PERIOD_MS of the GPU's time plus the cost of the context switches. Nothing about the GPU's settings
changes (no clocks, no power limits, no MPS daemon).

    CUDA_VISIBLE_DEVICES=<gpu> python3 duty_load.py --duty 0.05 --period-ms 20 --seconds 300
"""

import argparse
import time

import torch


def spin_cycles_per_ms() -> float:
    """GPU clock cycles that torch.cuda._sleep spins per millisecond on this GPU, measured with CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 2_000_000
    torch.cuda._sleep(cycles)  # warm-up
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    return cycles / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duty", type=float, required=True, help="share of each period the GPU spins (0-1)")
    ap.add_argument("--period-ms", type=float, default=20.0)
    ap.add_argument("--seconds", type=float, required=True)
    args = ap.parse_args()
    per_ms = spin_cycles_per_ms()
    burst_ms = args.duty * args.period_ms
    cycles = int(per_ms * burst_ms)
    print(f"duty load on {torch.cuda.get_device_name(0)}: burst {burst_ms:.2f} ms every {args.period_ms} ms "
          f"({cycles} spin cycles, {per_ms:.0f} cycles/ms)", flush=True)
    end = time.monotonic() + args.seconds
    bursts = 0
    while time.monotonic() < end:
        t0 = time.monotonic()
        torch.cuda._sleep(cycles)
        torch.cuda.synchronize()
        bursts += 1
        rest = args.period_ms / 1000 - (time.monotonic() - t0)
        if rest > 0:
            time.sleep(rest)
    print(f"bursts: {bursts}", flush=True)


if __name__ == "__main__":
    main()
