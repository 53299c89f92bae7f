"""Second opinion on the same GPU, through PyTorch (which calls cuBLAS and the CUDA copy engines itself):
DGEMM and BF16 GEMM at 8192^3, burst (median of 10 after 3 warm-ups) and sustained (median over a 3 s window,
one event pair per call, as gpuaccept-gemm times), and pinned H2D/D2H copies of 256 MiB (min of 7 trials of
10 copies). Prints one JSON document. Read-only towards the GPU's settings."""

import json
import statistics
import time

import torch

N = 8192


def timed_calls(fn, count=None, window_s=None):
    times = []
    start = time.perf_counter()
    while True:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        times.append((a, b))
        if count is not None and len(times) >= count:
            break
        if window_s is not None and time.perf_counter() - start >= window_s and len(times) >= 5:
            break
    torch.cuda.synchronize()
    return [x.elapsed_time(y) / 1e3 for x, y in times]


def gemm(dtype):
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.rand(N, N, device="cuda", dtype=dtype, generator=g) * 2 - 1
    b = torch.rand(N, N, device="cuda", dtype=dtype, generator=g) * 2 - 1
    c = torch.empty(N, N, device="cuda", dtype=dtype)
    fn = lambda: torch.matmul(a, b, out=c)  # noqa: E731
    timed_calls(fn, count=3)
    burst = timed_calls(fn, count=10)
    timed_calls(fn, window_s=0.5)
    window = timed_calls(fn, window_s=3.0)
    flop = 2.0 * N**3
    return {"burst_tflops_median": flop / statistics.median(burst) / 1e12,
            "window_tflops_median": flop / statistics.median(window) / 1e12, "window_samples": len(window)}


def copy(direction):
    n = 256 << 20
    host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    fn = (lambda: dev.copy_(host, non_blocking=True)) if direction == "h2d" else (
        lambda: host.copy_(dev, non_blocking=True))
    timed_calls(fn, count=3)
    best = min(sum(timed_calls(fn, count=10)) / 10 for _ in range(7))
    return {"gb_per_s": n / best / 1e9}


print(json.dumps({
    "torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
    "fp64": gemm(torch.float64), "bf16": gemm(torch.bfloat16),
    "h2d_pinned_256MiB": copy("h2d"), "d2h_pinned_256MiB": copy("d2h"),
}, indent=2))
