#!/usr/bin/env bash
# Degraded-node proof on a lent GPU machine: a foreign process keeps FP64 matrix products running on GPU 0
# while the commissioning suite's GEMM check runs; the node must be rejected. Run after device_accept.sh
# (reuses .venv). Read-only towards the GPU's settings; the foreign process is stopped afterwards.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=/tmp/obl/usr/lib/x86_64-linux-gnu:/tmp/obl/usr/lib/x86_64-linux-gnu/openblas-pthread
timeout 400 python3 -c '
import torch
a = torch.rand(8192, 8192, device="cuda", dtype=torch.float64)
while True:
    a @ a
' &
hog=$!
sleep 8
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv | tee "$OUT/foreign-process.csv"
printf 'gpuaccept_suite_reframe_args: [-n, GpuGemm]\n' > /tmp/only-gemm.yml
WHEELHOUSE=.whl make accept ANSIBLE_ARGS='-e @/tmp/only-gemm.yml' > "$OUT/degraded.log" 2>&1
echo "make accept with a foreign process: exit $?" | tee -a "$OUT/degraded.log"
kill "$hog"; wait "$hog" 2>/dev/null
grep -E "fp64_tflops_min|REJECTED|ACCEPTED" "$OUT/degraded.log" | tail -4
