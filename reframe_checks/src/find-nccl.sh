#!/bin/sh
# Where NCCL is on this node: the one place gpuaccept looks for it (this directory's Makefile for the nccl and
# hpl-gpu targets, the gpuaccept_reframe, gpuaccept_bench and gpuaccept_hpl roles, gpuaccept.rfmconfig). NCCL is a
# directory HOME with include/nccl.h and libnccl.so.2 in HOME/lib64, HOME/lib or HOME/lib/<multiarch>.
#
#   find-nccl.sh [--libdir] [--python PYTHON]... [HOME]
#
# HOME given (the operator's choice), or else NCCL_HOME set: that directory, checked; exit 2 with the reason when it
# lacks either file. Otherwise the first of, in order: CUDA_HOME (default /usr/local/cuda), /usr (NVIDIA's
# libnccl-dev), and the nvidia.nccl package (PyPI's nvidia-nccl-cu12/cu13 wheels, which torch installs) of each
# Python interpreter: the --python ones, those in GPUACCEPT_NCCL_PYTHONS (colon-separated), python3 on PATH.
# Prints HOME (with --libdir: the directory of its libnccl.so.2) and exits 0; finds none: prints nothing, says on
# stderr where it looked, exits 1.
set -u

libdir=0 home="" pythons=""
while [ $# -gt 0 ]; do
  case $1 in
    --libdir) libdir=1 ;;
    --python)
      [ $# -ge 2 ] || { echo "find-nccl.sh: --python needs an interpreter" >&2; exit 2; }
      pythons="$pythons:$2"
      shift ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "find-nccl.sh: unknown option $1 (--libdir, --python PYTHON, HOME)" >&2; exit 2 ;;
    *) home=$1 ;;
  esac
  shift
done

# The directory of HOME's libnccl.so.2; nothing (and false) when it has none.
lib_of() {
  for d in "$1/lib64" "$1/lib" "$1/lib/x86_64-linux-gnu" "$1/lib/aarch64-linux-gnu" "$1/lib/powerpc64le-linux-gnu"; do
    if [ -e "$d/libnccl.so.2" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

holds_nccl() { [ -f "$1/include/nccl.h" ] && lib_of "$1" > /dev/null; }

answer() {
  if [ "$libdir" = 1 ]; then lib_of "$1"; else echo "$1"; fi
  exit 0
}

# The operator's directory: used if it holds NCCL, else an error naming what is missing.
given() {
  holds_nccl "$1" && answer "$1"
  missing=""
  [ -f "$1/include/nccl.h" ] || missing="include/nccl.h"
  lib_of "$1" > /dev/null || missing="${missing:+$missing and }libnccl.so.2 in lib64/, lib/ or lib/<multiarch>/"
  echo "find-nccl.sh: $2 $1 has no $missing: point it at NCCL's directory (include/nccl.h, lib*/libnccl.so.2)" >&2
  exit 2
}

[ -n "$home" ] && given "$home" "the directory"
[ -n "${NCCL_HOME:-}" ] && given "$NCCL_HOME" "NCCL_HOME="

looked=""
for h in "${CUDA_HOME:-/usr/local/cuda}" /usr; do
  holds_nccl "$h" && answer "$h"
  looked="$looked $h,"
done

old_ifs=$IFS
IFS=:
for py in ${pythons#:} ${GPUACCEPT_NCCL_PYTHONS:-} python3; do
  IFS=$old_ifs
  [ -n "$py" ] || continue
  command -v "$py" > /dev/null 2>&1 || continue
  h=$("$py" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2> /dev/null) || h=""
  [ -n "$h" ] && holds_nccl "$h" && answer "$h"
  looked="$looked $py's nvidia.nccl,"
done
IFS=$old_ifs

echo "find-nccl.sh: no NCCL (include/nccl.h and libnccl.so.2) in${looked%,}: set NCCL_HOME or install it" >&2
exit 1
