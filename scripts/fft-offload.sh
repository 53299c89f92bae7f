#!/bin/bash
# FFT offload and its crossover against the host's FFT (docs/checks/fft-offload.md): builds
# gpuaccept-fft (or takes a built one), runs it on one GPU with the host FFT on every CPU, and runs
# gpuaccept annotate fft over its document.
#
#   scripts/fft-offload.sh OUT_DIR
#
# Environment (all optional):
#   FFT_TOOL     a built gpuaccept-fft (default: built here into BUILD_DIR with make fft FFT=$FFT MKLROOT=$MKLROOT)
#   FFT, MKLROOT for that build (Makefile: mkl, mkl-static or fftw)
#   FFT_ARGS     extra options for gpuaccept-fft (default none: the default sweep, a few minutes)
#   GPU          the device index (default 0); CUDA_ARCH, BUILD_DIR (default /tmp/gpuaccept-fft-build)
#   PYTHON       a Python with gpuaccept's dependencies (default python3; e.g. the checkout's .venv/bin/python)
# Exit status: 0 when every step succeeded, else the first failing step's.
set -uo pipefail
B=${BUILD_DIR:-/tmp/gpuaccept-fft-build}
# shellcheck source=scripts/offload-steps.sh
. "$(dirname "$0")/offload-steps.sh"  # OUT_DIR: OUT, ROOT, step and build_tool
if [ -z "${FFT_TOOL:-}" ]; then
  FFT_TOOL=$B/gpuaccept-fft
  build_tool gpuaccept-fft FFT="${FFT:-mkl}" MKLROOT="${MKLROOT:-}"
fi
# shellcheck disable=SC2086  # FFT_ARGS is a list of options
step "gpuaccept-fft" "$FFT_TOOL" --gpu "${GPU:-0}" ${FFT_ARGS:-} --output "$OUT/fft.json" 2> "$OUT/fft.err"
tail -n 80 "$OUT/fft.err"
if [ -s "$OUT/fft.json" ]; then
  step "crossover" env PYTHONPATH="$ROOT/src" "${PYTHON:-python3}" -m gpuaccept annotate fft "$OUT/fft.json" \
    --output "$OUT/fft-crossover.json" > "$OUT/crossover.txt" 2>&1
  cat "$OUT/crossover.txt"
fi
exit "$rc"
