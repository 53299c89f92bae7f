# shellcheck shell=bash
# Sourced by scripts/xgemm-crossover.sh and scripts/fft-offload.sh with their arguments and B (the build folder)
# set: their one argument OUT_DIR (OUT; ROOT the checkout), each step's status and time, the first failing status
# in rc, and building one tool of reframe_checks/src into $B.
if [ $# -ne 1 ]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
OUT=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT" "$B"
export LC_ALL=C
rc=0
step() {  # name, command...: runs it, keeps the first failure's status
  local name=$1; shift
  local t0=$SECONDS
  "$@"
  local s=$?
  echo "== $name: rc=$s in $((SECONDS - t0)) s"
  [ "$rc" -eq 0 ] && [ "$s" -ne 0 ] && rc=$s
  return "$s"
}
build_tool() {  # tool, make variables...: $B/tool with CUDA_ARCH where set, the log in $OUT/build-<tool>.log; exits on failure
  local tool=$1; shift
  local log="$OUT/build-${tool#gpuaccept-}.log" arch=()
  [ -n "${CUDA_ARCH:-}" ] && arch=("CUDA_ARCH=$CUDA_ARCH")
  step "build $tool" make -C "$ROOT/reframe_checks/src" BUILD_DIR="$B" "$@" "${arch[@]}" "$B/$tool" > "$log" 2>&1 \
    || { tail -20 "$log"; exit 1; }
}
