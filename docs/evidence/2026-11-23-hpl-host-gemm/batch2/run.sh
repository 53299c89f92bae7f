#!/bin/bash
# Final batch (issue 15, host GEMM + HPL), 120 s:
#  1. host GEMM: MKL (static) 5 runs, MKL through the subset library (BLAS=mkl-subset) once at n=4096 (the tool's new default), 16 threads (the metric's thread
#     count); Debian's OpenBLAS 0.3.21 at n=4096, 16 threads, its own core choice and OPENBLAS_CORETYPE=SkylakeX
#  2. HPL 2.3 built here with this machine's mpicc (host: MKL subset; HPL-CUDA: NVBLAS in front of it)
#  3. HPL-CUDA N=16384 and N=20480 (1 rank, NVBLAS without autopin: batch 1 showed higher GPU use without it;
#     its N=32768 runs did not finish in 60 s), then the host HPL, 16 ranks x 1 thread, N=20480, with what is left
set -u
# Every step is cut to what is left of BUDGET.
T0=$(date +%s)
BUDGET=${BUDGET:-116}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
mkdir -p "$O"/gemm "$O"/hpl "$O"/facts
exec > >(tee "$O/run.log") 2>&1
echo "start $(date -u +%FT%TZ) host $(hostname)"
W=/tmp/gpuaccept-hpl-w
rm -rf "$W"; mkdir -p "$W"
tar xJf "$P/blobs.tar.xz" -C "$W"
L=$W/lib; B=$W/bin
export PYTHONPATH=$P/src
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LC_ALL=C

# ---- facts
{
  nproc; lscpu; free -g; uname -a; cat /etc/os-release | head -3
  echo "--- cpufreq"; ls /sys/devices/system/cpu/cpu0/cpufreq 2>&1; cat /sys/devices/system/cpu/cpu0/cpufreq/base_frequency 2>&1
  echo "--- mpi"; which mpicc mpirun mpiexec; mpirun --version 2>&1 | head -3; mpicc -show 2>&1
  echo "--- blas libraries"; ldconfig -p | grep -i -E "openblas|libblas|gfortran|nvblas|mkl" 
  echo "--- cuda"; ls /usr/local/cuda/lib64/libnvblas* /usr/local/cuda/lib64/libcublas.so* 2>&1
  nvidia-smi --query-gpu=name,memory.total,power.limit,clocks.max.sm --format=csv
} > "$O/facts/machine.txt" 2>&1
grep -m1 -A27 '^processor' /proc/cpuinfo > "$O/facts/cpuinfo-cpu0.txt"
CUDA_LIB=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libnvblas.so" ] && { CUDA_LIB=$d; break; }
done
echo "CUDA_LIB=${CUDA_LIB:-none (carried libnvblas.so.13)}"

# ---- 1. host GEMM
gemm() {  # name, env..., -- args
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== gemm $name: ${envs[*]} gpuaccept-cpugemm $*"
  echo "${envs[*]} $*" > "$O/gemm/$name.cmd"
  env "${envs[@]}" timeout 30 "$@" --output "$O/gemm/$name.json" > "$O/gemm/$name.log" 2>&1
  echo "rc=$?" >> "$O/gemm/$name.log"; tail -3 "$O/gemm/$name.log"
}
PIN=(OMP_PROC_BIND=close OMP_PLACES=cores)
for k in 1 2 3 4 5; do
  gemm mkl-n4096-t16-run$k "${PIN[@]}" -- "$B/gpuaccept-cpugemm-mkl" --threads 16
done
gemm mklsubset-n4096-t16 "${PIN[@]}" "LD_LIBRARY_PATH=$L" -- "$B/gpuaccept-cpugemm-mklsubset" --threads 16
LD_LIBRARY_PATH=$L ldd "$B/gpuaccept-cpugemm-openblas" > "$O/gemm/openblas-ldd.txt" 2>&1
gemm openblas-auto-n4096-t16 "LD_LIBRARY_PATH=$L" -- "$B/gpuaccept-cpugemm-openblas" --threads 16
gemm openblas-skylakex-n4096-t16 "LD_LIBRARY_PATH=$L" OPENBLAS_CORETYPE=SkylakeX -- "$B/gpuaccept-cpugemm-openblas" --threads 16
echo "gemm done at $(( $(date +%s) - T0 ))s"

# ---- 2. HPL builds (both at once)
build() {  # dir, LAlib
  local dir=$1 lalib=$2
  mkdir -p "$dir"; tar xzf "$P/hpl-2.3-icl-utk-edu.tar.gz" -C "$dir"
  cp "$P/Make.gpuaccept" "$dir/hpl-2.3/"
  ( cd "$dir/hpl-2.3" && make arch=gpuaccept TOPdir="$dir/hpl-2.3" CC=mpicc "LAlib=$lalib" ) > "$dir.log" 2>&1
  echo "rc=$?" >> "$dir.log"
}
XH=$B/xhpl-host-debian; XC=$B/xhpl-cuda-debian; HPL_LDPATH=$L
if command -v mpicc > /dev/null; then
  NVB="-L$L -lnvblas"; [ -n "$CUDA_LIB" ] && NVB="-L$CUDA_LIB -Wl,-rpath,$CUDA_LIB -lnvblas"
  build "$W/host" "-L$L -Wl,-rpath,$L -lgpuaccept-mklblas" & BH=$!
  build "$W/cuda" "$NVB -L$L -Wl,-rpath,$L -lgpuaccept-mklblas" & BC=$!
  wait "$BH" "$BC"
  cp "$W/host.log" "$O/hpl/build-host.log"; cp "$W/cuda.log" "$O/hpl/build-cuda.log"
  tail -n 2 "$O/hpl/build-host.log" "$O/hpl/build-cuda.log"
  [ -x "$W/host/hpl-2.3/bin/gpuaccept/xhpl" ] && XH=$W/host/hpl-2.3/bin/gpuaccept/xhpl
  [ -x "$W/cuda/hpl-2.3/bin/gpuaccept/xhpl" ] && XC=$W/cuda/hpl-2.3/bin/gpuaccept/xhpl
else
  echo "no mpicc: using the Debian-built xhpl binaries"
fi
echo "XH=$XH XC=$XC"
LD_LIBRARY_PATH=$HPL_LDPATH ldd "$XH" > "$O/hpl/ldd-host.txt" 2>&1
LD_LIBRARY_PATH=$HPL_LDPATH ldd "$XC" > "$O/hpl/ldd-cuda.txt" 2>&1

# ---- 3. HPL runs
hplrun() {  # name, ranks, n, nb, limit, env..., -- binary
  local name=$1 ranks=$2 n=$3 nb=$4 lim=$5; shift 5
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local l; l=$(left); [ "$l" -lt 20 ] && { echo "== hpl $name: skipped (budget)"; return; }
  [ "$lim" -gt $((l - 10)) ] && lim=$((l - 10))
  local d="$W/run-$name"; mkdir -p "$d"
  python3 -m gpuaccept.hpl_dat --ranks "$ranks" --n "$n" --nb "$nb" --output "$d/HPL.dat"
  cp "$d/HPL.dat" "$O/hpl/$name.HPL.dat"
  local cmd=(mpirun -np "$ranks" "${MPIARGS[@]}" "$1")
  echo "== hpl $name (limit ${lim}s): ${envs[*]} ${cmd[*]}" | tee "$O/hpl/$name.cmd"
  local s; s=$(date +%s)
  local smi=""
  if [[ $name == cuda* ]]; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw,clocks.sm,memory.used --format=csv -lms 1000 \
      > "$O/hpl/$name.nvidia-smi.csv" 2>&1 & smi=$!
  fi
  ( cd "$d" && env LD_LIBRARY_PATH="$HPL_LDPATH" "${envs[@]}" timeout "$lim" "${cmd[@]}" ) > "$O/hpl/$name.out" 2>&1
  echo "rc=$? wall=$(( $(date +%s) - s ))s" | tee -a "$O/hpl/$name.cmd"
  [ -n "$smi" ] && kill "$smi" 2>/dev/null
  [ -f "$d/nvblas.log" ] && cp "$d/nvblas.log" "$O/hpl/$name.nvblas.log"
  grep -E "^W[RC]|PASSED|FAILED" "$O/hpl/$name.out" | head -4
}
nvconf() {  # file, extra lines
  local f=$1; shift
  { echo "NVBLAS_LOGFILE nvblas.log"; echo "NVBLAS_CPU_BLAS_LIB $L/libgpuaccept-mklblas.so"
    echo "NVBLAS_GPU_LIST 0"; echo "NVBLAS_TILE_DIM 2048"; for x in "$@"; do echo "$x"; done; } > "$f"
}
nvconf "$W/nvblas-plain.conf"
cp "$W"/nvblas-*.conf "$O/hpl/"
CU_ENV=(OMP_NUM_THREADS=16 OMP_PROC_BIND=close OMP_PLACES=cores NVBLAS_CONFIG_FILE="$W/nvblas-plain.conf")
MPIARGS=(--bind-to none)
hplrun cuda-n16384 1 16384 1024 30 "${CU_ENV[@]}" -- "$XC"
hplrun cuda-n20480 1 20480 1024 40 "${CU_ENV[@]}" -- "$XC"
MPIARGS=(--bind-to core --map-by core)
hplrun host-16x1-n20480 16 20480 256 30 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 -- "$XH"

# ---- summary
echo "== summary (elapsed $(( $(date +%s) - T0 ))s)"
python3 - "$O" <<'EOF'
import glob, json, os, sys
from gpuaccept import hpl
o = sys.argv[1]
for f in sorted(glob.glob(os.path.join(o, "gemm", "*.json"))):
    d = json.load(open(f))
    m = {k: round(v["value"], 3) for k, v in d["metrics"].items()}
    m["usable_cpus"] = d["parameters"]["usable_cpus"]
    b = d["results"]["blas"]
    print(f"{os.path.basename(f):28s} core={b.get('core')} peak={d['results']['cpu_peak']['dp_peak_gflops']:.0f} {m}")
for f in sorted(glob.glob(os.path.join(o, "hpl", "*.out"))):
    out = hpl.parse_file(f)
    runs = [(r.n, r.nb, r.p, r.q, round(r.seconds, 2), round(r.gflops, 1), r.residual) for r in out.runs]
    print(f"{os.path.basename(f):28s} {runs} problems={hpl.judge(out, 1)}")
EOF
echo "end $(date -u +%FT%TZ)"
