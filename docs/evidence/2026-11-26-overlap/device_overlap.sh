#!/bin/bash
# Issue 27 item 3 on the GPU machine: gpuaccept-overlap (reframe_checks/src/offload) on GPU 0, gpuaccept-bw on GPU 0
# (its fitted PCIe model), then seed 002's model twice (python -m gpuaccept.probe.overlap: the overlap run's own
# copies, and the bandwidth check's fit). Also FP64 DGEMM through PyTorch (cuBLAS) at the sizes HPL-CUDA's updates
# use, for HPL-CUDA's ceiling (issue 28). Everything under $OUT.
# Usage: bash docs/evidence/2026-11-26-overlap/device_overlap.sh (files in $OUT/results.tar.gz)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; B=/tmp/ob
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(cat .devq/gitrev 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=index,name,serial,pci.bus_id,memory.total,power.limit,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.csv"
lscpu | head -20 > "$OUT/lscpu.txt"
make -C reframe_checks/src BUILD_DIR=$B CUDA_ARCH=-arch=sm_90 $B/gpuaccept-overlap $B/gpuaccept-bw > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
s=$SECONDS; timeout 240 $B/gpuaccept-overlap --gpus 0 --output "$OUT/overlap.json" 2> "$OUT/overlap.err"; echo "gpuaccept-overlap rc=$? in $((SECONDS - s)) s"
tail -5 "$OUT/overlap.err"
s=$SECONDS; timeout 240 $B/gpuaccept-bw --gpus 0 --output "$OUT/bandwidth.json" 2> "$OUT/bandwidth.err"; echo "gpuaccept-bw rc=$? in $((SECONDS - s)) s"
PYTHONPATH=src python3 -m gpuaccept.probe.overlap "$OUT/overlap.json" --output "$OUT/overlap-model.json" > "$OUT/model.txt" 2>&1; echo "model rc=$?"
PYTHONPATH=src python3 -m gpuaccept.probe.overlap "$OUT/overlap.json" --bandwidth "$OUT/bandwidth.json" --output "$OUT/overlap-model-bw.json" > "$OUT/model-bw.txt" 2>&1; echo "model (bandwidth fit) rc=$?"
cat "$OUT/model.txt" | head -60
python3 - <<'PY' 2>&1 | tee "$OUT/dgemm.txt"
import statistics, torch
print("torch", torch.__version__, "cuBLAS via torch; FP64 C = A B, 2 n^2 k flops, cudaEvent per call, median of 10 after 2 warm-ups")
for m, n, k in ((16384, 16384, 16384), (32768, 32768, 1024), (65536, 65536, 1024), (98304, 49152, 1280)):
    a = torch.rand(m, k, dtype=torch.float64, device="cuda"); b = torch.rand(k, n, dtype=torch.float64, device="cuda")
    c = torch.empty(m, n, dtype=torch.float64, device="cuda")
    times = []
    for i in range(12):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); torch.matmul(a, b, out=c); e1.record(); torch.cuda.synchronize()
        if i >= 2: times.append(e0.elapsed_time(e1) / 1e3)
    t = statistics.median(times)
    print(f"m={m} n={n} k={k}: median {t * 1e3:.2f} ms, {2 * m * n * k / t / 1e12:.2f} TFLOP/s (min time {2 * m * n * k / min(times) / 1e12:.2f})")
    del a, b, c; torch.cuda.empty_cache()
PY
echo "== done $(date -u +%FT%TZ)"
# the device tool brings back few files: everything in one archive beside the console
cd "$OUT" && tar czf /tmp/results.tar.gz --exclude=console.log . && mv /tmp/results.tar.gz . && find . -mindepth 1 ! -name results.tar.gz ! -name console.log -delete
