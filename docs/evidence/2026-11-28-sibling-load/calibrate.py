"""What the duty load costs a GEMM on the same GPU: FP64 and BF16 matrix products (torch.matmul, cuBLAS), timed
with CUDA events, median of 15 timed calls of 3 products each, with no load and with duty loads started in another
process on the same GPU. Writes one JSON document.

    CUDA_VISIBLE_DEVICES=<gpu> python3 calibrate.py --duties 0.03 0.05 0.08 --output calibrate.json
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def gemm_tflops(dtype: torch.dtype, n: int) -> float:
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(15):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 3 / 1000)
    return 2 * n**3 / statistics.median(times) / 1e12


def measure() -> dict[str, float]:
    return {"fp64_tflops": gemm_tflops(torch.float64, 8192), "bf16_tflops": gemm_tflops(torch.bfloat16, 8192)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duties", type=float, nargs="+", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    doc = {"gpu": torch.cuda.get_device_name(0), "method": __doc__.strip(), "runs": []}
    base = measure()
    doc["runs"].append({"duty": 0.0, **base})
    for duty in args.duties:
        load = subprocess.Popen([sys.executable, str(HERE / "duty_load.py"), "--duty", str(duty), "--seconds", "60"],
                                stdout=subprocess.PIPE, text=True)
        print(load.stdout.readline().strip(), flush=True)
        time.sleep(1)
        m = measure()
        load.terminate()
        load.wait()
        doc["runs"].append({"duty": duty, **m, **{f"{k}_loss": round(1 - m[k] / base[k], 4) for k in m}})
        print(doc["runs"][-1], flush=True)
    Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
