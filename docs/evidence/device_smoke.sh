#!/usr/bin/env bash
# First call on a lent GPU machine: record the node's tool outputs (test fixtures), build every benchmark,
# run each once, probe what the tool environment needs. Run from the repository root on the device, with
# .whl (cp312 wheels of requirements/tools.txt) and .deb (Debian's OpenBLAS) carried. Read-only towards the
# GPU: it queries settings and never changes them.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/smoke.log") 2>&1
echo "== machine"; date -u; uname -a; nproc; free -g | head -2; lscpu | grep -E 'Model name|Socket|NUMA'
numactl -H || true
nvidia-smi
nvidia-smi -q > "$OUT/nvidia-smi-q.txt"
nvidia-smi --query-gpu=index,name,uuid,serial,pci.bus_id,memory.total,compute_cap,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current,driver_version --format=csv,noheader,nounits | tee "$OUT/nvidia-smi-query.csv"
nvidia-smi topo -m || true
ldconfig -p | grep -E 'openblas|mkl_rt|libgfortran' || echo "no system OpenBLAS/MKL"
python3 -m venv /tmp/venvprobe && /tmp/venvprobe/bin/python -m pip --version && echo "venv: ok"
echo "== gpuaccept facts"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/src
python3 -m gpuaccept facts | tee "$OUT/facts.json"
echo "== build"
mkdir -p /tmp/obl; for d in .deb/*.deb; do dpkg -x "$d" /tmp/obl; done
export LD_LIBRARY_PATH=/tmp/obl/usr/lib/x86_64-linux-gnu:/tmp/obl/usr/lib/x86_64-linux-gnu/openblas-pthread
time make -C reframe_checks/src -j 8 BUILD_DIR=/tmp/b GIT_REV="$(cat .gitrev 2>/dev/null || echo unknown)" \
  CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 BLAS=openblas \
  OPENBLAS_INC=/tmp/obl/usr/include/x86_64-linux-gnu/openblas-pthread \
  OPENBLAS_LIB=/tmp/obl/usr/lib/x86_64-linux-gnu/openblas-pthread all
echo "== gpuaccept-bw"; time /tmp/b/gpuaccept-bw --output "$OUT/bandwidth.json"; echo "rc=$?"
echo "== gpuaccept-gemm"; time /tmp/b/gpuaccept-gemm --output "$OUT/gemm.json"; echo "rc=$?"
echo "== gpuaccept-gemm --inject-error (self-test: must exit 2)"
/tmp/b/gpuaccept-gemm --precisions fp64 --series none --large 4096 --metric-size 4096 --window-s 0.2 \
  --inject-error --output "$OUT/gemm-inject.json" > /dev/null; echo "rc=$?"
echo "== gpuaccept-cpugemm"
OMP_PROC_BIND=close OMP_PLACES=cores /tmp/b/gpuaccept-cpugemm --output "$OUT/cpu_gemm.json"; echo "rc=$?"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
