#!/bin/bash
# HPL-CUDA once more (issue 15; the lead's cut of the hpl helper's final batch script): HPL 2.3 built here with
# this machine's mpicc, NVBLAS in front of the MKL subset library, 1 rank, N=16384 with a 110 s limit (the final
# batch's 30 s limit stopped it after its result row, before the residual line). Read-only towards the GPU.
set -u
# Every step is cut to what is left of BUDGET.
T0=$(date +%s)
BUDGET=${BUDGET:-170}
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
# ---- 2. HPL builds (both at once)
build() {  # dir, LAlib
  local dir=$1 lalib=$2
  mkdir -p "$dir"; tar xzf "$P/hpl-2.3-icl-utk-edu.tar.gz" -C "$dir"
  cp "$P/Make.gpuaccept" "$dir/hpl-2.3/"
  ( cd "$dir/hpl-2.3" && make arch=gpuaccept TOPdir="$dir/hpl-2.3" CC=mpicc "LAlib=$lalib" ) > "$dir.log" 2>&1
  echo "rc=$?" >> "$dir.log"
}
mkdir -p "$O/hpl"
XC=""
HPL_LDPATH=$L
if command -v mpicc > /dev/null; then
  NVB="-L$L -lnvblas"; [ -n "$CUDA_LIB" ] && NVB="-L$CUDA_LIB -Wl,-rpath,$CUDA_LIB -lnvblas"
  build "$W/cuda" "$NVB -L$L -Wl,-rpath,$L -lgpuaccept-mklblas"
  cp "$W/cuda.log" "$O/hpl/build-cuda.log"; tail -n 2 "$O/hpl/build-cuda.log"
  [ -x "$W/cuda/hpl-2.3/bin/gpuaccept/xhpl" ] && XC=$W/cuda/hpl-2.3/bin/gpuaccept/xhpl
fi
[ -n "$XC" ] || XC=$B/xhpl-cuda-debian
echo "XC=$XC built at $(( $(date +%s) - T0 ))s"
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
hplrun cuda-n16384 1 16384 1024 110 "${CU_ENV[@]}" -- "$XC"
echo "== summary (elapsed $(( $(date +%s) - T0 ))s)"
python3 - "$O" <<'PY'
import glob, os, sys
from gpuaccept import hpl
for f in sorted(glob.glob(os.path.join(sys.argv[1], "hpl", "*.out"))):
    out = hpl.parse_file(f)
    runs = [(r.n, r.nb, r.p, r.q, round(r.seconds, 2), round(r.gflops, 1), r.residual, r.residual_verdict) for r in out.runs]
    print(os.path.basename(f), runs, "problems:", hpl.judge(out, 1))
PY
echo "end $(date -u +%FT%TZ)"
