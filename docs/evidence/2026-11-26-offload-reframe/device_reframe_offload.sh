#!/bin/bash
# The offload checks the way an operator without Ansible runs them: `gpuaccept run --suite evaluation` filtered to
# GpuBandwidth (the fitted PCIe model the report's model lines use), GpuOverlap, GpuOffloadGemm and GpuFftOffload,
# on the GPU machine. Standing for the gpuaccept_bench role's build in extras.bench_dir: gpuaccept-bw, -overlap and
# -xgemm built here with make, and two host-linked tools built on the developer machine from the same commit and
# carried in .devq/eval/: gpuaccept-cpugemm (BLAS=mkl-static, PyPI's mkl-static 2024.2.2) and gpuaccept-fft
# (FFT=fftw, Debian 12's FFTW 3.3.10, its shared libraries in .devq/eval/lib). ReFrame 4.10.4 from carried wheels
# (.devq/whl). FFTW's planning is held to 2 s a plan (-S GpuFftOffload.executable_opts), as the FFTW evidence run did 3.
# Usage: OUT=... bash docs/evidence/2026-11-26-offload-reframe/device_reframe_offload.sh
#   (carry .devq/whl and .devq/eval, or .devq/eval.tar.xz holding eval/: `tar cJf .devq/eval.tar.xz -C .devq eval`, to
#   keep the carry under the device tool's 64 MiB)
set -uo pipefail
REPO=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; NODE_TYPE=${NODE_TYPE:-auto}
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(cat .devq/gitrev 2>/dev/null)"
nvidia-smi --query-gpu=index,name,serial,pci.bus_id,power.limit,driver_version --format=csv
lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node\(s\))'
B=/tmp/bench; mkdir -p $B
[ -d .devq/eval ] || tar xJf .devq/eval.tar.xz -C .devq || exit 1
s=$SECONDS
make -j8 -C reframe_checks/src BUILD_DIR=$B CUDA_ARCH=-arch=sm_90 GIT_REV="$(cat .devq/gitrev 2>/dev/null || echo unknown)" \
  $B/gpuaccept-bw $B/gpuaccept-overlap $B/gpuaccept-xgemm > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - s)) s"
cp .devq/eval/gpuaccept-cpugemm .devq/eval/gpuaccept-fft $B/
export LD_LIBRARY_PATH=$REPO/.devq/eval/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ldd $B/gpuaccept-fft | grep -i fftw
python3 -m pip install --quiet --no-index --no-deps --target /tmp/rfm .devq/whl/*.whl || exit 1
export PYTHONPATH=/tmp/rfm:$REPO/src PATH=/tmp/rfm/bin:$PATH LC_ALL=C.UTF-8
python3 -m gpuaccept facts --output /tmp/facts.json 2>/dev/null || python3 -m gpuaccept facts > /tmp/facts.json
python3 -m gpuaccept reframe-config --output /tmp/settings.py --node-type "$NODE_TYPE" --facts /tmp/facts.json --bench-dir $B
s=$SECONDS
python3 -m gpuaccept run --suite evaluation --results "$OUT/results" --node-type "$NODE_TYPE" --facts /tmp/facts.json \
  --reframe-config /tmp/settings.py --reframe /tmp/rfm/bin/reframe -- \
  -n '^(GpuBandwidth|GpuOverlap|GpuOffloadGemm|GpuFftOffload)$' -S GpuFftOffload.executable_opts=--plan-time-limit-s,2
echo "gpuaccept run: exit $? in $((SECONDS - s)) s"
for d in "$OUT"/results/*/*/; do
  python3 -c "
import json, sys
v = json.load(open(sys.argv[1] + 'verdict.json'))
print(v.get('verdict'), v.get('node_type'))
for r in v['rows']:
    if r['check'] in ('overlap', 'offload_gemm', 'fft_offload', 'bandwidth'):
        print(r['check'], r.get('metric'), r['status'], r.get('value'), (r.get('reason') or '')[:160])
" "$d" 2>&1 | head -80
done
echo "== done $(date -u +%FT%TZ)"
cd "$OUT" && tar czf /tmp/results.tar.gz --exclude='*/stage/*' results && mv /tmp/results.tar.gz . && rm -rf results
