#!/usr/bin/env bash
# On a 1 x H100 80 GB SXM5 VM: runs the power sampler (`gpuaccept sample`) through NVML and
# through its nvidia-smi fall-back, at idle and around an FP64 GEMM load, and records the raw tool outputs the
# power and health tests parse (nvidia-smi -q at idle and under load, a streaming nvidia-smi query, the kernel
# log). Read-only towards the GPU: it queries settings and never changes them. Run from the repository root.
set -uo pipefail
OUT=${OUT:-/tmp/out}; D=$OUT/power; mkdir -p "$D"
exec > >(tee "$D/device_power.log") 2>&1
export PYTHONPATH=$PWD/src LC_ALL=C.UTF-8
step() { echo "== $* ($(date -u +%H:%M:%S))"; }
step machine; date -u; uname -r; nproc
nvidia-smi --query-gpu=index,name,pci.bus_id,serial,driver_version,persistence_mode,ecc.mode.current,power.draw,power.limit,enforced.power.limit,power.max_limit,clocks.sm,clocks.max.sm --format=csv
python3 -c 'import importlib.metadata as m; print("nvidia-ml-py", m.version("nvidia-ml-py"))'
step records
nvidia-smi -q > "$D/nvidia-smi-q-idle.txt"
nvidia-smi --help-query-gpu > "$D/nvidia-smi-help-query-gpu.txt"
nvidia-smi --query-remapped-rows=gpu_bus_id,gpu_serial,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure --format=csv > "$D/remapped-rows.csv" 2>&1; echo "remapped rows rc=$?"
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$D/compute-apps-idle.csv" 2>&1
nvidia-smi nvlink -s > "$D/nvlink-s.txt" 2>&1; echo "nvlink -s rc=$?"
dmesg > "$D/dmesg.txt" 2>&1; echo "dmesg rc=$? lines=$(wc -l < "$D/dmesg.txt")"
journalctl -k -o short-iso --no-pager > "$D/journalctl-k.txt" 2>&1; echo "journalctl rc=$? lines=$(wc -l < "$D/journalctl-k.txt")"
grep -ci 'xid' "$D/dmesg.txt"; grep -i 'nvrm' "$D/dmesg.txt" | head -5
step build
time make -s -C reframe_checks/src -j 8 BUILD_DIR=/tmp/b GIT_REV="$(git rev-parse --short HEAD 2>/dev/null || echo issue-4)" \
  CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 gpu
G="/tmp/b/gpuaccept-gemm --precisions fp64 --series none --large none"
step "idle, NVML"
time python3 -m gpuaccept sample --output "$D/idle-nvml.json" -- sleep 5; echo "rc=$?"
step "fp64 GEMM 8 s window, NVML"
time python3 -m gpuaccept sample --output "$D/gemm-nvml.json" -- $G --window-s 8 --output "$D/gemm-nvml-bench.json"; echo "rc=$?"
step "nvidia-smi -q under load"
$G --window-s 6 --output /tmp/g.json > /dev/null & pid=$!
sleep 3; nvidia-smi -q > "$D/nvidia-smi-q-load.txt"; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$D/compute-apps-load.csv"
wait $pid
step "fp64 GEMM 3 s window, nvidia-smi back end"
time python3 -m gpuaccept sample --backend nvidia-smi --output "$D/gemm-smi.json" -- $G --window-s 3 --output "$D/gemm-smi-bench.json"; echo "rc=$?"
step "raw streaming query around a GEMM"
nvidia-smi --query-gpu=index,power.draw,clocks.sm,clocks.mem,temperature.gpu,clocks_event_reasons.active --format=csv,noheader,nounits -lms 100 > "$D/smi-stream.csv" & spid=$!
sleep 1; $G --window-s 2 --output /tmp/g2.json > /dev/null; sleep 1; kill $spid; wait $spid 2>/dev/null
step "exit status pass-through (must print rc=3)"
python3 -m gpuaccept sample --output /tmp/x.json -- sh -c 'exit 3'; echo "rc=$?"
step "quick benchmark walls (nightly budget)"
time /tmp/b/gpuaccept-gemm --quick --output "$D/gemm-quick.json" > /dev/null; echo "rc=$?"
time /tmp/b/gpuaccept-bw --quick --output "$D/bw-quick.json" > /dev/null; echo "rc=$?"
step done
