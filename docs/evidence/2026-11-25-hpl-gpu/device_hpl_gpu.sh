#!/bin/bash
# Builds HPL 2.3 with gpuaccept's GPU-resident HPL_pdmatgen/HPL_pdgesv (reframe_checks/src/hpl/gpuaccept_hpl_gpu.cu)
# on the GPU machine and runs it: a correctness pass at a small N with and without look-ahead, an NB sweep at a
# middle N, then the largest N that fits about 87 % of the GPU's memory. Everything under $OUT.
# Carried: .devq/hpl-2.3-icl-utk-edu.tar.gz (../shared/artifacts), .devq/libgpuaccept-mklblas.so
# (scripts/mkl-blas-subset.sh on PyPI's mkl-static 2024.2.2: the host BLAS HPL's own code links).
# Usage: bash docs/evidence/2026-11-25-hpl-gpu/device_hpl_gpu.sh "SWEEP_N" "SWEEP_NBS" "BIG_NB|best" [FRACTION]
# (every run's files end in $OUT/runs.tar.gz: the device tool brings back few files)
set -uo pipefail
SWEEP_N=${1:-40960}; SWEEP_NBS=${2:-"512 768 1024"}; BIG_NB=${3:-1024}; FRACTION=${4:-0.87}
REPO=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/runs"
exec > >(tee "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || cat .devq/gitrev)"
nvidia-smi --query-gpu=name,serial,pci.bus_id,memory.total,power.limit,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.csv"
lscpu | head -20 > "$OUT/lscpu.txt"; free -g > "$OUT/free.txt"
B=/tmp/hplgpu; rm -rf $B; mkdir -p $B/hpl $B/lib
tar xzf .devq/hpl-2.3-icl-utk-edu.tar.gz -C $B/hpl --strip-components=1
cp .devq/libgpuaccept-mklblas.so $B/lib/
cp roles/gpuaccept_hpl/files/Make.gpuaccept $B/hpl/
t0=$SECONDS
nvcc -O3 -std=c++17 -arch=sm_90 -DOMPI_SKIP_MPICXX -DAdd_ -DF77_INTEGER=int -DStringSunStyle -I$B/hpl/include \
  $(mpicc --showme:compile) -c reframe_checks/src/hpl/gpuaccept_hpl_gpu.cu -o $B/gpuaccept_hpl_gpu.o || exit 1
(cd $B/hpl && make arch=gpuaccept TOPdir=$B/hpl CC=mpicc GPUobj=$B/gpuaccept_hpl_gpu.o \
  LAlib="-L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcusolver -lcublas -lcudart -lstdc++ -L$B/lib -Wl,-rpath,$B/lib -lgpuaccept-mklblas" \
  > "$OUT/build.log" 2>&1) || { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - t0)) s"; XHPL=$B/hpl/bin/gpuaccept/xhpl
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=16 MKL_NUM_THREADS=16
dat() {  # n nb depth -> HPL.dat text (gpuaccept.probe.hpl_dat.render, one process)
  PYTHONPATH=src python3 -c "from gpuaccept.probe.hpl_dat import HplDat, render; print(render(HplDat(n=$1, nb=$2, p=1, q=1, depth=$3)), end='')"
}
run() {  # name n nb depth
  local d="$OUT/runs/$1"; mkdir -p "$d"; dat "$2" "$3" "$4" > "$d/HPL.dat"
  echo "cd $d && mpirun -np 1 --bind-to none $XHPL" > "$d/cmd"
  nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,utilization.gpu,temperature.gpu --format=csv -lms 500 > "$d/nvidia-smi.csv" &
  local smi=$!; local s=$SECONDS
  (cd "$d" && timeout 300 mpirun -np 1 --bind-to none $XHPL > HPL.out 2> stderr.txt); echo "rc=$?" > "$d/rc"
  kill $smi; echo "$1: wall $((SECONDS - s)) s $(cat $d/rc)"; grep -E "^WR|PASSED|FAILED" "$d/HPL.out"
}
run check-n8192-nb512-d0 8192 512 0
run check-n8192-nb512-d1 8192 512 1
for nb in $SWEEP_NBS; do run sweep-n$SWEEP_N-nb$nb-d1 $SWEEP_N $nb 1; done
if [ "$BIG_NB" = best ]; then  # the sweep's fastest NB among the runs that PASSED
  BIG_NB=$(for f in "$OUT"/runs/sweep-*/HPL.out; do grep -q PASSED "$f" && awk '/^WR/ {print $7, $3}' "$f"; done | sort -g | tail -1 | cut -d' ' -f2)
  echo "best NB of the sweep: $BIG_NB"
fi
BIG_N=$(python3 -c "
import torch; free, total = torch.cuda.mem_get_info(); nb = $BIG_NB
n = int(($FRACTION * total / 8) ** 0.5) // nb * nb; print(n)")
echo "big N=$BIG_N (fraction $FRACTION of the GPU's memory, NB $BIG_NB)"
for r in 1 2; do run big-n$BIG_N-nb$BIG_NB-d1-r$r $BIG_N $BIG_NB 1; done
echo "== done $(date -u +%FT%TZ)"
tar czf "$OUT/runs.tar.gz" -C "$OUT" runs && rm -rf "$OUT/runs"
