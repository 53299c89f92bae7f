#!/bin/bash
# Transfer-inclusive GEMM and its crossover against the host's BLAS (docs/checks/offload-gemm.md):
# builds gpuaccept-xgemm, runs it on one GPU, times the host's DGEMM/SGEMM with gpuaccept-cpugemm at each size
# (all physical cores, pinned close), and runs gpuaccept annotate offload over the documents.
#
#   scripts/xgemm-crossover.sh OUT_DIR
#
# Environment (all optional):
#   CPUGEMM      a built gpuaccept-cpugemm (default: built here into BUILD_DIR with make BLAS=$BLAS MKLROOT=$MKLROOT)
#   BLAS, MKLROOT  for that build (Makefile: mkl, mkl-static, mkl-subset or openblas)
#   HOST_SIZES   sizes for the host (default 256 512 1024 2048 4096 8192: at 16384 one host DGEMM call takes
#                seconds, and gpuaccept-cpugemm makes at least four per precision)
#   XGEMM_ARGS   extra options for gpuaccept-xgemm (default none: the default sweep, about a minute)
#   GPU          the device index (default 0); CUDA_ARCH, BUILD_DIR (default /tmp/gpuaccept-xgemm-build)
#   PYTHON       a Python with gpuaccept's dependencies (default python3; e.g. the checkout's .venv/bin/python)
# Exit status: 0 when every step succeeded, else the first failing step's.
set -uo pipefail
B=${BUILD_DIR:-/tmp/gpuaccept-xgemm-build}
GPU=${GPU:-0}
HOST_SIZES=${HOST_SIZES:-256 512 1024 2048 4096 8192}
# shellcheck source=scripts/offload-steps.sh
. "$(dirname "$0")/offload-steps.sh"  # OUT_DIR: OUT, ROOT, step and build_tool
build_tool gpuaccept-xgemm
if [ -z "${CPUGEMM:-}" ]; then
  CPUGEMM=$B/gpuaccept-cpugemm
  build_tool gpuaccept-cpugemm BLAS="${BLAS:-mkl}" MKLROOT="${MKLROOT:-}"
fi

# shellcheck disable=SC2086  # XGEMM_ARGS is a list of options
step "gpuaccept-xgemm" "$B/gpuaccept-xgemm" --gpu "$GPU" ${XGEMM_ARGS:-} --output "$OUT/xgemm.json" \
  2> "$OUT/xgemm.err"
tail -n 40 "$OUT/xgemm.err"

cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
hosts=()
for n in $HOST_SIZES; do
  step "gpuaccept-cpugemm n=$n, $cores threads" env OMP_PROC_BIND=close OMP_PLACES=cores \
    "$CPUGEMM" --size "$n" --threads "$cores" --window-s 0.5 --output "$OUT/cpugemm-n$n.json" \
    > "$OUT/cpugemm-n$n.log" 2>&1
  tail -n 2 "$OUT/cpugemm-n$n.log"
  [ -s "$OUT/cpugemm-n$n.json" ] && hosts+=("$OUT/cpugemm-n$n.json")
done

if [ -s "$OUT/xgemm.json" ] && [ ${#hosts[@]} -gt 0 ]; then
  step "crossover" env PYTHONPATH="$ROOT/src" "${PYTHON:-python3}" -m gpuaccept annotate offload "$OUT/xgemm.json" \
    --host "${hosts[@]}" --output "$OUT/xgemm-crossover.json" > "$OUT/crossover.txt" 2>&1
  cat "$OUT/crossover.txt"
fi
exit "$rc"
