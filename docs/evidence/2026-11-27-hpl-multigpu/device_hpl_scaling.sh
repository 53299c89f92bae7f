#!/bin/bash
# HPL-CUDA over the GPUs of one node (a 4-GPU machine): builds HPL 2.3 with gpuaccept's GPU-resident solver and
# NCCL (found by reframe_checks/src/find-nccl.sh, the project's one place for it), checks the P x Q grid at small N,
# then runs the scaling set: 1 GPU (1 x 1), 2 GPUs (1 x 2), 4 GPUs (1 x 4 and 2 x 2), twice each while time allows.
# NVLink SHARP stays off: NCCL_NVLS_ENABLE=0 before anything that may start NCCL, passed to every rank (mpirun -x),
# and set again by gpuaccept-hpl-rank.sh and by xhpl itself.
#
# Sizes: the matrix takes MEM_GIB (64) GiB of each GPU's memory on every GPU count (at most 0.8 of the smallest GPU,
# and what the kernel lets each rank reserve for HPL's untouched host array), so that the per-GPU rate compares
# like with like (it falls at small N): N = the largest multiple of NB x lcm(P, Q) with N^2 x 8 / GPUs <= MEM, the
# same N for 1 x 4 and 2 x 2. At 64 GiB and NB 1024: N = 92160, 131072, 184320 (about 12, 16 and 24 s of solve on
# H100s), so the set runs in about 2 minutes and twice within the call's 8 minutes with the build and the checks.
#
# Carried (the lead's folder, default .devq/): HPL_TARBALL (hpl-2.3-icl-utk-edu.tar.gz, sha256 checked) and
# BLAS_LIB (a Fortran BLAS for HPL's own host code: scripts/mkl-blas-subset.sh's libgpuaccept-mklblas.so; else the
# machine's OpenBLAS or reference BLAS when it has one).
# Usage, from the repository root:
#   OUT=$OUT bash docs/evidence/2026-11-27-hpl-multigpu/device_hpl_scaling.sh
# Options (environment): MEM_GIB (64), NB (1024), REPEATS (2), BUDGET_S (400: no run starts after it), CHECKS
#   (1; 0 leaves out the small-N checks after the first scaling set),
#   HPL_TARBALL, BLAS_LIB.
# Outputs under $OUT: console.log, summary.txt (every run's row and residual, the scaling table with each count's
# fraction of ideal), gpu.csv, topo.txt, build.log, docs/hpl_cuda-*.json (HPL-CUDA's documents of the scaling runs,
# gpuaccept.probe.hpl.to_document, for `gpuaccept report` and gpuaccept.results.scaling), runs.tar.gz (each run's
# HPL.dat, HPL.out, stderr.txt, cmd, rc, nvidia-smi.csv).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
MEM_GIB=${MEM_GIB:-64}; NB=${NB:-1024}; REPEATS=${REPEATS:-2}; BUDGET_S=${BUDGET_S:-400}
HPL_TARBALL=${HPL_TARBALL:-.devq/hpl-2.3-icl-utk-edu.tar.gz}; BLAS_LIB=${BLAS_LIB:-.devq/libgpuaccept-mklblas.so}
HPL_SHA256=d09c2c708becc4eaa9bd652115243f603fc4f715483bf26dd6b1bd07259ef459
REPO=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/runs" "$OUT/docs"
export PYTHONPATH=$REPO/src
exec > >(tee -a "$OUT/console.log") 2>&1
T0=$SECONDS
echo "== $(date -u +%FT%TZ) $(cat .devq/gitrev 2>/dev/null || git -C "$REPO" rev-parse --short HEAD) NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
nvidia-smi --query-gpu=index,name,serial,pci.bus_id,memory.total,power.limit,clocks.max.sm,compute_cap,driver_version --format=csv | tee "$OUT/gpu.csv"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
lscpu | head -20 > "$OUT/lscpu.txt"; free -g > "$OUT/free.txt"; cat /proc/sys/vm/overcommit_memory > "$OUT/overcommit.txt"
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[ "$GPUS" -ge 4 ] || { echo "this script wants 4 GPUs; nvidia-smi shows $GPUS"; exit 1; }
SM=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')

# --- build: HPL 2.3 + gpuaccept_hpl_gpu.o (the project Makefile's hpl-gpu target) with NCCL
echo "$HPL_SHA256  $HPL_TARBALL" | sha256sum -c - || { echo "HPL_TARBALL=$HPL_TARBALL: missing or not HPL 2.3's"; exit 1; }
if [ ! -f "$BLAS_LIB" ]; then
  BLAS_LIB=$(ldconfig -p | awk '/libopenblas\.so\.0 |libblas\.so\.3 / {print $NF; exit}')
  [ -n "$BLAS_LIB" ] || { echo "no Fortran BLAS: carry scripts/mkl-blas-subset.sh's library as BLAS_LIB"; exit 1; }
fi
NCCL_HOME=$(sh reframe_checks/src/find-nccl.sh --python python3) || { echo "find-nccl.sh found no NCCL"; exit 1; }
NCCL_LIB=$(sh reframe_checks/src/find-nccl.sh --libdir "$NCCL_HOME")
echo "NCCL: $NCCL_HOME (library in $NCCL_LIB), $(grep -m1 -o 'NCCL_VERSION_CODE [0-9]*' "$NCCL_HOME/include/nccl.h")"
echo "BLAS for HPL's host code: $BLAS_LIB; GPUs: sm_$SM"
B=/tmp/hplmulti; rm -rf $B; mkdir -p $B/hpl $B/obj $B/lib
tar xzf "$HPL_TARBALL" -C $B/hpl --strip-components=1
cp roles/gpuaccept_hpl/files/Make.gpuaccept $B/hpl/
cp "$BLAS_LIB" $B/lib/
BLAS_NAME=$(basename "$BLAS_LIB")
{ make -C reframe_checks/src hpl-gpu BUILD_DIR=$B/obj HPL_TOP=$B/hpl HPL_NCCL=1 NCCL_HOME="$NCCL_HOME" \
    NVCC=/usr/local/cuda/bin/nvcc "CUDA_ARCH=-gencode=arch=compute_$SM,code=sm_$SM" &&
  (cd $B/hpl && make arch=gpuaccept TOPdir=$B/hpl CC=mpicc GPUobj=$B/obj/gpuaccept_hpl_gpu.o \
    LAlib="-L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcusolver -lcublas -lcudart -lstdc++ -L$NCCL_LIB -Wl,-rpath,$NCCL_LIB -l:libnccl.so.2 -L$B/lib -Wl,-rpath,$B/lib -l:$BLAS_NAME"); } \
  > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
XHPL=$B/hpl/bin/gpuaccept/xhpl; WRAP=$REPO/roles/gpuaccept_hpl/files/gpuaccept-hpl-rank.sh
ldd $XHPL | grep -E "nccl|cublas|cusolver|$BLAS_NAME" >> "$OUT/build.log"
echo "built in $((SECONDS - T0)) s"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# --- one HPL run: name n nb p q depth gpus(list) timeout [env assignments...]
run() {
  local name=$1 n=$2 nb=$3 p=$4 q=$5 depth=$6 gpus=$7 limit=$8; shift 8
  local d="$OUT/runs/$name" ranks=$((p * q)); mkdir -p "$d"
  python3 -c "from gpuaccept.probe.hpl_dat import HplDat, render; print(render(HplDat(n=$n, nb=$nb, p=$p, q=$q, depth=$depth)), end='')" > "$d/HPL.dat"
  local threads=$(( $(nproc) / ranks )); [ $threads -lt 1 ] && threads=1
  local cmd="env $* GPUACCEPT_HPL_GPUS=$gpus OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads timeout $limit mpirun -np $ranks --bind-to none -x NCCL_NVLS_ENABLE $WRAP $XHPL"
  echo "cd $d && $cmd" > "$d/cmd"
  nvidia-smi --query-gpu=timestamp,index,power.draw,clocks.sm,utilization.gpu,memory.used,temperature.gpu --format=csv -lms 500 > "$d/nvidia-smi.csv" &
  local smi=$! s=$SECONDS
  (cd "$d" && $cmd > HPL.out 2> stderr.txt); echo "rc=$?" > "$d/rc"
  kill $smi; wait $smi 2>/dev/null
  echo "$name: wall $((SECONDS - s)) s $(cat "$d/rc") | $(grep -E '^W[RC]' "$d/HPL.out" | head -1) | $(grep -oE '(PASSED|FAILED)' "$d/HPL.out" | head -1) | $(grep -h 'gpuaccept HPL: grid' "$d/stderr.txt" | cut -d: -f2-)"
}
passed() { grep -q "PASSED" "$OUT/runs/$1/HPL.out" 2>/dev/null && grep -q "rc=0" "$OUT/runs/$1/rc"; }
time_left() { [ $((SECONDS - T0)) -lt "$BUDGET_S" ]; }

# --- sizes: MEM_GIB per GPU (capped as said above), one N per GPU count
read -r N1 N2 N4 <<< "$(python3 - <<EOF
import math, torch
from gpuaccept.probe.hpl_dat import host_reservable_bytes
mem = min(int($MEM_GIB * 2**30), int(0.8 * min(torch.cuda.mem_get_info(i)[1] for i in range(torch.cuda.device_count()))))
host = host_reservable_bytes(4)
mem = mem if host is None else min(mem, int(host * 0.95))
def n(gpus, step): return math.isqrt(gpus * mem // 8) // step * step
print(n(1, $NB), n(2, 2 * $NB), n(4, 4 * $NB))
EOF
)"
echo "sizes: N = $N1 (1 GPU), $N2 (2), $N4 (4: 1 x 4 and 2 x 2), NB $NB; $(python3 -c "print(f'{$N1**2*8/2**30:.1f} / {$N2**2*8/2/2**30:.1f} / {$N4**2*8/4/2**30:.1f} GiB of matrix per GPU')")"

# --- the P x Q solver first at a small N (a hang or a wrong answer shows here in seconds)
run check-2x2-n16384-d1 16384 512 2 2 1 0,1,2,3 60
GRID_OK=1; passed check-2x2-n16384-d1 || { GRID_OK=0; echo "2 x 2 did not pass: its large runs are left out"; }

scaling_set() {  # $1: repeat number
  local p q n gpus
  for spec in "1 1 $N1 0" "1 2 $N2 0,1" "1 4 $N4 0,1,2,3" "2 2 $N4 0,1,2,3"; do
    read -r p q n gpus <<< "$spec"
    [ "$p" = 2 ] && [ "$GRID_OK" = 0 ] && continue
    time_left || { echo "time budget ($BUDGET_S s) spent: scale-${p}x$q (repeat $REP) not run"; continue; }
    run "scale-${p}x$q-n$n-r$REP" "$n" "$NB" "$p" "$q" 1 "$gpus" 240
  done
}
REP=1 scaling_set

# --- more of the solver's paths at small N: depth 0, uneven blocks, 4 x 1, 1 x 4, through host memory, shared GPUs
if [ "${CHECKS:-1}" = 1 ]; then
  run check-2x2-n16384-d0 16384 512 2 2 0 0,1,2,3 60
  run check-2x2-n16000-nb384 16000 384 2 2 1 0,1,2,3 60
  run check-4x1-n12288 12288 512 4 1 1 0,1,2,3 60
  run check-1x4-n16384 16384 512 1 4 1 0,1,2,3 60
  run check-2x2-bcast-mpi 16384 512 2 2 1 0,1,2,3 60 GPUACCEPT_HPL_BCAST=mpi
  run check-2x2-two-gpus 16384 512 2 2 1 0,0,1,1 60
fi

for REP in $(seq 2 "$REPEATS"); do scaling_set; done

# --- HPL-CUDA's documents of the scaling runs, and the summary
python3 - "$OUT" "$NCCL_HOME" <<'EOF' > "$OUT/docs.log" 2>&1
import datetime, json, pathlib, re, sys
from gpuaccept.probe import hpl
out, nccl = pathlib.Path(sys.argv[1]), sys.argv[2]

def started(text, path):  # HPL's own "HPL_pdgesv() start time" (local time, as ctime prints it), else the file's
    m = re.search(r"HPL_pdgesv\(\) start time (.*)", text)
    when = (datetime.datetime.strptime(m.group(1).strip(), "%a %b %d %H:%M:%S %Y").astimezone() if m
            else datetime.datetime.fromtimestamp(path.stat().st_mtime).astimezone())
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

for d in sorted((out / "runs").glob("scale-*")):
    parsed = hpl.parse_file(d / "HPL.out")
    if not parsed.runs:
        continue
    run = parsed.runs[0]
    said = hpl.gpu_transport((d / "stderr.txt").read_text(errors="replace"))
    backend = {"hpl": "netlib HPL 2.3 driver + gpuaccept GPU-resident HPL_pdmatgen/HPL_pdgesv (cuSOLVER, cuBLAS)",
               "ranks": run.p * run.q, "gpus_used": run.p * run.q, "grid": f"{run.p} x {run.q}", "nccl_home": nccl,
               "panel_broadcast": said[-1]["panel_broadcast"] if said else None,
               "nccl_nvls_enable": said[-1]["nccl_nvls_enable"] if said else None,
               "command": (d / "cmd").read_text().strip(), "script": "device_hpl_scaling.sh"}
    text = (d / "HPL.out").read_text(errors="replace")
    doc = hpl.to_document(parsed, "hpl_cuda", run.p * run.q, backend=backend, started_utc=started(text, d / "HPL.out"),
                          elapsed_s=run.seconds, command_line=(d / "cmd").read_text().split())
    (out / "docs" / f"hpl_cuda-{d.name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(d.name, "passed" if doc["verification"]["passed"] else doc["verification"]["failures"])
EOF
{
  echo "== every run (HPL's row, its residual check, what carried the data): $OUT/runs/*"
  for d in "$OUT"/runs/*; do
    echo "$(basename "$d"): $(cat "$d/rc") | $(grep -E '^W[RC]' "$d/HPL.out" | head -1 | tr -s ' ') | $(grep -E 'PASSED|FAILED' "$d/HPL.out" | head -1 | awk '{print $2, $4}') | $(grep -h 'gpuaccept HPL: grid' "$d/stderr.txt" | cut -d: -f2- | head -1)"
  done
  echo
  echo "== scaling (the fastest passed row per GPU count and grid; ideal = GPUs x the one-GPU rate)"
  python3 -m gpuaccept.results.scaling --node "$(hostname)" "$OUT"/runs/scale-*/HPL.out
  echo
  python3 - "$OUT" <<'EOF'
import sys, pathlib
from gpuaccept.results import scaling
runs = [r for p in sorted(pathlib.Path(sys.argv[1], "runs").glob("scale-*/HPL.out")) for r in scaling.runs_of_output(p, "node")]
for s in scaling.scale(runs):
    if not s.base:
        print("no passed one-GPU run: no fraction of ideal")
    for r in s.runs:
        if r.gpus == 4 and s.base:
            f = s.fraction(r)
            print(f"4 GPUs, {r.grid}: {r.tflops:.2f} TFLOP/s = {f:.3f} of 4 x the one-GPU {s.base.tflops:.2f} "
                  f"({'meets' if f >= 0.95 else 'misses'} 0.95)")
EOF
  echo "total $((SECONDS - T0)) s"
} | tee "$OUT/summary.txt"
tar czf "$OUT/runs.tar.gz" -C "$OUT" runs && rm -rf "$OUT/runs"
echo "== done $(date -u +%FT%TZ)"
