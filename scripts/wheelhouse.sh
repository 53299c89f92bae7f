#!/usr/bin/env bash
# On a connected machine: downloads every wheel that `make accept` and `make test` install, for Python 3.11
# and 3.12 on x86_64 Linux, into DIR (default wheelhouse/), then checks that both install offline from it.
# Carry DIR to the air-gapped site and run: WHEELHOUSE=DIR make accept
# pip checks every download against the sha256 in requirements/*.txt (hash-checking mode: scripts/lock.sh), and
# at the end every wheel in DIR is checked again against them, so a wheel from elsewhere in DIR is refused too.
#   MKL=1 also fetches requirements/mkl.txt (about 0.3 GB of wheels); MD=1 requirements/md.txt (OpenMM with its
#   CUDA platform and NVIDIA's CUDA 13 runtime wheels).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-wheelhouse}
mkdir -p "$dir"
PYTHON=${PYTHON:-python3}
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_34_x86_64 --platform manylinux_2_24_x86_64)
for py in 3.11 3.12; do
  echo "== wheels for Python $py"
  "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    "${plat[@]}" --require-hashes -d "$dir" -r requirements/tools.txt
  "$PYTHON" -m pip download --quiet --only-binary=:all: --python-version "$py" --implementation cp \
    "${plat[@]}" --require-hashes -d "$dir" -r requirements/test.txt -r requirements/report.txt
  if [ "${MD:-0}" = 1 ]; then
    "$PYTHON" -m pip download --quiet --only-binary=:all: --python-version "$py" --implementation cp \
      "${plat[@]}" --require-hashes -d "$dir" -r requirements/md.txt
  fi
  if [ "${MKL:-0}" = 1 ]; then
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
      "${plat[@]}" --require-hashes -d "$dir" -r requirements/mkl.txt
  fi
done
scripts/lock.sh --check-wheels "$dir"
(cd "$dir" && sha256sum ./*.whl > SHA256SUMS)
echo "$(ls "$dir"/*.whl | wc -l) wheels in $dir ($(du -sh "$dir" | cut -f1)); checksums in $dir/SHA256SUMS"
