#!/bin/bash
# gemm/nccl batch: cuBLASLt GEMM with algorithm choice and NVML clocks; PyTorch cross-check in the same session;
# gpuaccept-nccl one-GPU self-test (built here against PyPI's nvidia-nccl-cu13 wheel, and the carried build).
# Read-only towards the GPU's settings. Everything goes to $O.
# (Run as `bash run.sh` by the device queue, P = the payload: src.tar.gz = reframe_checks/src at e6aebed..7e07ab1,
#  bin/ = the same built here, crosscheck_gemm_torch.py = docs/evidence/crosscheck_gemm_torch.py of 7e07ab1.)
set -u
export LC_ALL=C NCCL_NVLS_ENABLE=0
cd "$O"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$O/steps.log"; }
exec 2> >(tee -a "$O/stderr.log" >&2)
log "start on $(hostname)"
nvidia-smi -q > "$O/nvidia-smi-q.txt" 2>&1
nvidia-smi --query-gpu=name,pci.device_id,pci.bus_id,driver_version,power.limit,clocks.max.sm,clocks.max.mem,persistence_mode,ecc.mode.current --format=csv > "$O/gpu.csv" 2>&1
# Clocks and power all along, read-only, every 200 ms.
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,temperature.gpu,clocks_event_reasons.active --format=csv -lms 200 > "$O/nvidia-smi-clocks.csv" 2>/dev/null &
SMI=$!

# NCCL from PyPI's wheel (the torch environment's nvidia-nccl-cu13).
W=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>>"$O/steps.log")
log "nccl wheel: $W"; ls -la "$W" "$W/lib" "$W/include" >> "$O/steps.log" 2>&1
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ls -la /usr/local/cuda/lib64/libnccl* /usr/include/nccl.h /usr/local/cuda/include/nccl.h >> "$O/steps.log" 2>&1

# Build here from the carried sources: gemm (sm_90) and nccl against the wheel.
mkdir -p /tmp/gw && tar xzf "$P/src.tar.gz" -C /tmp/gw
( cd /tmp/gw/src && time make BUILD_DIR="$O/build" GIT_REV=batch CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 -j8 \
    "$O/build/gpuaccept-gemm" nccl NCCL_HOME="$W" ) > "$O/build.log" 2>&1
log "build rc=$? ($(ls "$O/build" 2>/dev/null | tr '\n' ' '))"
GEMM="$O/build/gpuaccept-gemm"; [ -x "$GEMM" ] || GEMM="$P/bin/gpuaccept-gemm"
NCCL="$O/build/gpuaccept-nccl"; [ -x "$NCCL" ] || NCCL="$P/bin/gpuaccept-nccl"
ldd "$NCCL" | grep -i nccl >> "$O/steps.log"

# 1. GEMM cross-check pair: ours (burst sizes 4096, 8192, 16384), then PyTorch, same sizes.
log "gemm xcheck run"
"$GEMM" --series 4096,8192 --large 16384 --metric-size 8192 --window-s 1 --output "$O/gemm_xcheck.json" > "$O/gemm_xcheck.txt" 2> "$O/gemm_xcheck.err"
log "gemm xcheck rc=$?"
python3 "$P/crosscheck_gemm_torch.py" --sizes 4096,8192,16384 --gemm-json "$O/gemm_xcheck.json" > "$O/crosscheck_torch.json" 2> "$O/crosscheck_torch.err"
log "torch xcheck rc=$?"

# 3. NCCL self-test (one GPU): defaults, the carried build too, and the verifier's own self-test.
log "nccl"
"$NCCL" --output "$O/nccl.json" > "$O/nccl.txt" 2> "$O/nccl.err"; log "nccl rc=$?"
LD_LIBRARY_PATH="$W/lib" "$P/bin/gpuaccept-nccl" --quick --output "$O/nccl_carried_quick.json" > "$O/nccl_carried_quick.txt" 2>&1; log "nccl carried quick rc=$?"
"$NCCL" --quick --inject-error --output "$O/nccl_inject.json" > "$O/nccl_inject.txt" 2>&1; log "nccl inject rc=$? (2 expected)"
"$GEMM" --precisions bf16 --quick --inject-error --output "$O/gemm_inject.json" > "$O/gemm_inject.txt" 2>&1; log "gemm inject rc=$? (2 expected)"

# 2. The tool's defaults (what the commission check runs).
log "gemm default run"
"$GEMM" --output "$O/gemm_default.json" > "$O/gemm_default.txt" 2> "$O/gemm_default.err"
log "gemm default rc=$?"

kill $SMI 2>/dev/null
log "done"
echo "==== summary"; cat "$O/gemm_xcheck.txt"; python3 - "$O/crosscheck_torch.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d.get("comparison", {}).get("rows", []):
    print(r)
PYEOF
tail -n 50 "$O/nccl.txt"
