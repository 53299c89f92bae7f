#!/bin/bash
# Builds HPL 2.3 with gpuaccept's GPU-resident HPL (reframe_checks/src/hpl/gpuaccept_hpl_gpu.cu: 1 x Q grid, one
# rank per GPU, residual check on the GPU) on the GPU machine and runs it through HPL's own driver:
#   1. correctness at small N: 1, 2, 3 and 4 ranks (sharing the GPUs there are: GPUACCEPT_HPL_GPUS), depth 0 and 1,
#      N a multiple of NB x Q and not (b in a block of its own, uneven columns);
#   2. an NB sweep at SWEEP_N on RANKS ranks (depth 1, threshold -1: timing only, as GpuHplCuda's sweep);
#   3. the largest N that FRACTION of the GPUs' memory holds (gpuaccept.probe.hpl_dat.problem_size, 1 x RANKS),
#      at the sweep's fastest NB, twice, with GPU power sampled by nvidia-smi every 500 ms.
# Carried: .devq/hpl-2.3-icl-utk-edu.tar.gz (../shared/artifacts), .devq/libgpuaccept-mklblas.so
# (scripts/mkl-blas-subset.sh on PyPI's mkl-static 2024.2.2: the host BLAS HPL's own code links).
# HPL_NCCL=1 builds the panel broadcast GPU to GPU by NCCL (NCCL_HOME: default the torch environment's
# nvidia-nccl wheel); MPI_TOO=1 then also runs the big size once with GPUACCEPT_HPL_BCAST=mpi (through host memory).
# BUILD_ONLY=1 stops after the build (xhpl in /tmp/hplgpu/hpl/bin/gpuaccept: device_reframe_hpl.sh).
# Usage: RANKS=1 GPUS=0 SWEEP_N=40960 SWEEP_NBS="1024 1280" FRACTION=0.92 bash device_hpl_grid.sh
# (every run's files end in $OUT/runs.tar.gz: the device tool brings back few files)
set -uo pipefail
RANKS=${RANKS:-1}; GPUS=${GPUS:-0}; SWEEP_N=${SWEEP_N:-40960}; SWEEP_NBS=${SWEEP_NBS:-"1024 1280"}
FRACTION=${FRACTION:-0.92}; SMALL=${SMALL:-1}; BIG_RUNS=${BIG_RUNS:-2}; SHARED_N=${SHARED_N:-0}
REPO=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/runs"
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(cat .devq/gitrev 2>/dev/null || git -C "$REPO" rev-parse --short HEAD) RANKS=$RANKS GPUS=$GPUS"
nvidia-smi --query-gpu=index,name,serial,pci.bus_id,memory.total,power.limit,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.csv"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
lscpu | head -20 > "$OUT/lscpu.txt"; free -g > "$OUT/free.txt"; cat /proc/sys/vm/overcommit_memory > "$OUT/overcommit.txt"
B=/tmp/hplgpu; rm -rf $B; mkdir -p $B/hpl $B/lib
tar xzf .devq/hpl-2.3-icl-utk-edu.tar.gz -C $B/hpl --strip-components=1
cp .devq/libgpuaccept-mklblas.so $B/lib/
cp roles/gpuaccept_hpl/files/Make.gpuaccept $B/hpl/
t0=$SECONDS
NCCLFLAGS=""; NCCLLIB=""
if [ "${HPL_NCCL:-0}" = 1 ]; then
  NCCL_HOME=${NCCL_HOME:-$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])")}
  echo "NCCL: $NCCL_HOME"; ls "$NCCL_HOME/include/nccl.h" "$NCCL_HOME"/lib/libnccl.so.2 || exit 1
  NCCLFLAGS="-DGPUACCEPT_HPL_NCCL -I$NCCL_HOME/include"; NCCLLIB="-L$NCCL_HOME/lib -Wl,-rpath,$NCCL_HOME/lib -l:libnccl.so.2"
fi
nvcc -O3 -std=c++17 -arch=sm_90 $NCCLFLAGS -DOMPI_SKIP_MPICXX -DAdd_ -DF77_INTEGER=int -DStringSunStyle -I$B/hpl/include \
  $(mpicc --showme:compile) -c reframe_checks/src/hpl/gpuaccept_hpl_gpu.cu -o $B/gpuaccept_hpl_gpu.o || exit 1
(cd $B/hpl && make arch=gpuaccept TOPdir=$B/hpl CC=mpicc GPUobj=$B/gpuaccept_hpl_gpu.o \
  LAlib="-L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcusolver -lcublas -lcudart -lstdc++ $NCCLLIB -L$B/lib -Wl,-rpath,$B/lib -lgpuaccept-mklblas" \
  > "$OUT/build.log" 2>&1) || { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - t0)) s"; XHPL=$B/hpl/bin/gpuaccept/xhpl; WRAP=$REPO/roles/gpuaccept_hpl/files/gpuaccept-hpl-rank.sh
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
dat() {  # n nb q depth threshold -> HPL.dat text (gpuaccept.probe.hpl_dat: render, or render_sweep for -1), 1 x q
  if [ "$5" = -1 ]; then
    PYTHONPATH=src python3 -c "from gpuaccept.probe.hpl_dat import render_sweep; print(render_sweep($1, [$2], [$4], 1, $3), end='')"
  else
    PYTHONPATH=src python3 -c "from gpuaccept.probe.hpl_dat import HplDat, render; print(render(HplDat(n=$1, nb=$2, p=1, q=$3, depth=$4, threshold=$5)), end='')"
  fi
}
run() {  # name n nb ranks depth gpus [threshold]
  local d="$OUT/runs/$1"; mkdir -p "$d"; dat "$2" "$3" "$4" "$5" "${7:-16}" > "$d/HPL.dat"
  local threads=$(( $(nproc) / $4 )); [ $threads -lt 1 ] && threads=1
  echo "cd $d && GPUACCEPT_HPL_BCAST=${BCAST:-} GPUACCEPT_HPL_GPUS=$6 OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads mpirun -np $4 --bind-to none $WRAP $XHPL" > "$d/cmd"
  nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,utilization.gpu,memory.used,temperature.gpu --format=csv -lms 500 > "$d/nvidia-smi.csv" &
  local smi=$!; local s=$SECONDS
  (cd "$d" && GPUACCEPT_HPL_BCAST=${BCAST:-} GPUACCEPT_HPL_GPUS=$6 OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads timeout 400 mpirun -np $4 --bind-to none $WRAP $XHPL > HPL.out 2> stderr.txt); echo "rc=$?" > "$d/rc"
  kill $smi; echo "$1: wall $((SECONDS - s)) s $(cat $d/rc)"; grep -E "^WR|PASSED|FAILED|abort|rror|broadcast" "$d/HPL.out" "$d/stderr.txt" | head -8
}
if [ "$SMALL" = 1 ]; then
  run check-r1-n8192-d1 8192 512 1 1 0
  run check-r2-n8192-d0 8192 512 2 0 0,0
  run check-r2-n8192-d1 8192 512 2 1 0,0
  run check-r3-n8000-d1 8000 384 3 1 0,0,0
  run check-r4-n8192-d1 8192 256 4 1 0,0,0,0
  [ "$GPUS" != 0 ] && run check-own-r$RANKS-n16384-d1 16384 512 $RANKS 1 $GPUS
fi
for nb in $SWEEP_NBS; do run sweep-r$RANKS-n$SWEEP_N-nb$nb-d1 $SWEEP_N $nb $RANKS 1 $GPUS -1; done
BIG_NB=$(for f in "$OUT"/runs/sweep-*/HPL.out; do awk '/^WR/ {print $7, $3}' "$f"; done | sort -g | tail -1 | cut -d' ' -f2)
echo "fastest NB of the sweep: $BIG_NB"
BIG_N=$(PYTHONPATH=src python3 -c "
import os, torch; from gpuaccept.probe.hpl_dat import problem_size
total = min(torch.cuda.mem_get_info(i)[1] for i in range(torch.cuda.device_count()))
from gpuaccept.probe.hpl_dat import host_reservable_bytes
# as GpuHplCuda: one rank's (untouched) host array must pass the kernel's overcommit check
host = host_reservable_bytes($RANKS)
memory = total if host is None else min(total, int(host * 0.95 / $FRACTION))
print(problem_size(memory, $RANKS, $FRACTION, $BIG_NB, 1, $RANKS))")
echo "big N=$BIG_N ($FRACTION of the smallest GPU (capped by what the host lets a rank reserve) x $RANKS ranks, NB $BIG_NB)"
for r in $(seq 1 $BIG_RUNS); do run big-r$RANKS-n$BIG_N-nb$BIG_NB-d1-$r $BIG_N $BIG_NB $RANKS 1 $GPUS; done
[ "${MPI_TOO:-0}" = 1 ] && BCAST=mpi run big-r$RANKS-n$BIG_N-nb$BIG_NB-d1-mpi $BIG_N $BIG_NB $RANKS 1 $GPUS
[ -n "${SINGLE_N:-}" ] && run single-r1-n$SINGLE_N-nb$BIG_NB $SINGLE_N $BIG_NB 1 1 0
if [ "$SHARED_N" -gt 0 ]; then  # the multi-rank path's cost on one GPU: 1 rank against 2 ranks sharing it
  run shared-r1-n$SHARED_N $SHARED_N $BIG_NB 1 1 0
  run shared-r2-n$SHARED_N $SHARED_N $BIG_NB 2 1 0,0
fi
echo "== done $(date -u +%FT%TZ)"
tar czf "$OUT/runs.tar.gz" -C "$OUT" runs && rm -rf "$OUT/runs"
