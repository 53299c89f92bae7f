#!/usr/bin/env bash
# On a lent GPU machine (no network): build NVIDIA's nvbandwidth v0.8 and the CUDA samples' (v13.0)
# p2pBandwidthLatencyTest from source archives checked against pinned sha256, and gpuaccept-bw from this tree,
# the way the cuda_samples role does (cmake; Boost program_options from Debian 12's packages, unpacked with
# dpkg -x since the machine has no Boost and no network), then run `gpuaccept crosscheck` RUNS times.
# Carried: XC (default .xc): nvbandwidth-0.8.tar.gz, cuda-samples-13.0-p2p.tar.gz, boost/*.deb.
# Read-only towards the GPU.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
XC=${XC:-.xc}; RUNS=${RUNS:-3}
exec > >(tee "$OUT/crosscheck.log") 2>&1
echo "== machine"; date -u; nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.draw,clocks.sm,pcie.link.gen.current,pcie.link.width.current --format=csv
echo "revision $(cat .gitrev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"; nproc; cmake --version | head -1
ls /usr/local/cuda/include/nvml.h
echo "== archives"
( cd "$XC" && sha256sum -c - ) <<'SUMS' || exit 1
b3622945eb7fce2b4e1aea7d13de04f415f4d998db602893201a904320cf2d39  nvbandwidth-0.8.tar.gz
4c4cf585c4da6002df52d94453c94bd4678c646aefc638fdf9252c5067f60e1b  cuda-samples-13.0-p2p.tar.gz
SUMS
rm -rf /tmp/xc && mkdir -p /tmp/xc/src /tmp/xc/boost
for d in "$XC"/boost/*.deb; do dpkg -x "$d" /tmp/xc/boost; done
tar xzf "$XC/nvbandwidth-0.8.tar.gz" -C /tmp/xc/src && tar xzf "$XC/cuda-samples-13.0-p2p.tar.gz" -C /tmp/xc/src
echo "== build"
t0=$SECONDS
cmake -S /tmp/xc/src/nvbandwidth-0.8 -B /tmp/xc/b-nvb -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH=/tmp/xc/boost/usr -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >/tmp/xc/nvb-cmake.log 2>&1 \
  && cmake --build /tmp/xc/b-nvb -j 16 >/tmp/xc/nvb-build.log 2>&1; echo "nvbandwidth build rc=$? ($((SECONDS - t0)) s)"
tail -3 /tmp/xc/nvb-build.log
t0=$SECONDS
cmake -S /tmp/xc/src/cuda-samples-13.0/Samples/5_Domain_Specific/p2pBandwidthLatencyTest -B /tmp/xc/b-p2p \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >/tmp/xc/p2p-cmake.log 2>&1 \
  && cmake --build /tmp/xc/b-p2p -j 16 >/tmp/xc/p2p-build.log 2>&1; echo "p2p build rc=$? ($((SECONDS - t0)) s)"
tail -3 /tmp/xc/p2p-build.log
t0=$SECONDS
make -C reframe_checks/src -j 16 BUILD_DIR=/tmp/xc/b-bw GIT_REV="$(cat .gitrev 2>/dev/null || echo unknown)" \
  CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 /tmp/xc/b-bw/gpuaccept-bw >/tmp/xc/bw-build.log 2>&1
echo "gpuaccept-bw build rc=$? ($((SECONDS - t0)) s)"; tail -3 /tmp/xc/bw-build.log
cp /tmp/xc/*.log "$OUT/" 2>/dev/null
/tmp/xc/b-nvb/nvbandwidth -l > "$OUT/nvbandwidth-list.txt" 2>&1
echo "== cross-check x $RUNS"
for i in $(seq 1 "$RUNS"); do
  t0=$SECONDS
  PYTHONPATH=$PWD/src python3 -m gpuaccept.crosscheck --bw-bin /tmp/xc/b-bw/gpuaccept-bw \
    --nvbandwidth-bin /tmp/xc/b-nvb/nvbandwidth --p2p-bin /tmp/xc/b-p2p/p2pBandwidthLatencyTest \
    --out-dir "/tmp/xc/run$i"
  echo "run $i: exit $?, wall $((SECONDS - t0)) s"
done
# nvbandwidth's plain text too (the same test cases), for the record.
/tmp/xc/b-nvb/nvbandwidth -b 256 -t host_to_device_memcpy_ce device_to_host_memcpy_ce device_local_copy \
  > /tmp/xc/run1/nvbandwidth.txt 2>&1
(cd /tmp/xc && tar czf "$OUT/runs.tar.gz" run*)
date -u
