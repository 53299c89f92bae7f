#!/bin/bash
# gemm/nccl final batch (<= 120 s): NCCL one-GPU self-test; the GEMM cross-check against PyTorch in the same
# session (our burst sizes 4096, 8192, 16384 after a 0.5 s cool-down, then PyTorch's the same way), the peak
# fractions added by `gpuaccept peaks`, and a second gpuaccept-gemm run when time allows. Binaries built on the
# queue machine (nvcc 13.0, sm_90, revision in REV); NCCL from the torch environment's nvidia-nccl-cu13 wheel.
# Clocks and power all along (nvidia-smi, read-only). Nothing changes a GPU setting.
set -u
export LC_ALL=C NCCL_NVLS_ENABLE=0
T0=$(date +%s)
cd "$O"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$O/steps.log"; }
log "start on $(hostname), payload revision $(cat "$P/REV")"
nvidia-smi --query-gpu=name,pci.device_id,pci.bus_id,driver_version,power.limit,clocks.max.sm,clocks.max.mem,persistence_mode,ecc.mode.current --format=csv > "$O/gpu.csv" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,temperature.gpu,clocks_event_reasons.active --format=csv -lms 200 > "$O/nvidia-smi-clocks.csv" 2>/dev/null &
SMI=$!
W=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
log "nccl wheel: $W"
GEMM="$P/bin/gpuaccept-gemm"; NCCL="$P/bin/gpuaccept-nccl"
peaks() { PYTHONPATH="$P/py" python3 -m gpuaccept peaks "$1" --reference-dir "$P/py/reference_values" > "$1.peaks.txt" 2>&1; log "peaks $1 rc=$?"; }

mkdir -p "$O/nccl" "$O/gemm"
"$NCCL" --output "$O/nccl/nccl.json" > "$O/nccl/nccl.txt" 2> "$O/nccl/nccl.err"; log "nccl rc=$?"
"$NCCL" --quick --inject-error --output "$O/nccl/nccl_inject.json" > "$O/nccl/nccl_inject.txt" 2>&1; log "nccl inject rc=$? (2 expected)"

XC=(--series 4096,8192 --large 16384 --metric-size 8192 --window-s 1 --cooldown-s 0.5)
log "xcheck: gpuaccept-gemm ${XC[*]}"
"$GEMM" "${XC[@]}" --output "$O/gemm/xcheck1-gemm.json" > "$O/gemm/xcheck1-gemm.txt" 2> "$O/gemm/xcheck1-gemm.err"
log "xcheck gemm rc=$?"
python3 "$P/crosscheck_gemm_torch.py" --cooldown-s 0.5 --sizes 4096,8192,16384 --gemm-json "$O/gemm/xcheck1-gemm.json" > "$O/gemm/xcheck1-torch.json" 2> "$O/gemm/xcheck1-torch.err"
log "xcheck torch rc=$? (0: every size within 2%)"
peaks "$O/gemm/xcheck1-gemm.json"
# A second gpuaccept-gemm run, compared with the same PyTorch figures, when at least 45 s remain of 120.
if [ $(( $(date +%s) - T0 )) -lt 75 ]; then
  "$GEMM" "${XC[@]}" --output "$O/gemm/xcheck2-gemm.json" > "$O/gemm/xcheck2-gemm.txt" 2> "$O/gemm/xcheck2-gemm.err"
  log "second gemm rc=$?"
fi
kill $SMI 2>/dev/null
log "done after $(( $(date +%s) - T0 )) s"
echo "==== summary"
python3 - "$O/gemm/xcheck1-torch.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = d.get("comparison", {})
print(sys.argv[1], "passed:", c.get("passed"))
for r in c.get("rows", []):
    if r.get("compared"):
        print(f"  {r['precision']:5s} {r['n']:6d} ours {r['gpuaccept_tflops']:8.1f} torch {r['torch_tflops']:8.1f} ratio {r['ratio']:.3f}")
EOF
cat "$O/gemm/xcheck1-gemm.json.peaks.txt"
