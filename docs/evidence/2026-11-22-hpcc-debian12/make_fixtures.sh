#!/bin/bash
# Real hpcc 1.5.0 (Debian 12 package, OpenBLAS, HPL 2.0 inside) runs on the CI-like development machine (no GPU),
# recorded as fixtures of HPL's real output format: a passing run from gpuaccept.hpl_dat's hpccinf.txt, and the
# same input with the residual threshold set to 0.0 and -1.0 (gpuaccept.hpl_dat refuses those, so sed writes them):
# HPL then prints neither the threshold line nor the residual line. Run from this directory with the repository's
# venv: bash make_fixtures.sh
set -eu
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ROOT=$(git rev-parse --show-toplevel)
for case in passed threshold0 threshold-neg; do
  rm -rf $case; mkdir $case
  "$ROOT/.venv/bin/python" -m gpuaccept.hpl_dat --ranks 1 --n 400 --nb 80 --format hpcc --output $case/hpccinf.txt
  # hpcc's HPL writes to hpccoutf.txt (device out 8 = file)
  sed -i 's/^6            device out/8            device out/' $case/hpccinf.txt
  [ $case = threshold0 ] && sed -i 's/^16.0         threshold/0.0          threshold/' $case/hpccinf.txt
  [ $case = threshold-neg ] && sed -i 's/^16.0         threshold/-1.0         threshold/' $case/hpccinf.txt
  (cd $case && hpcc > hpcc.stdout 2>&1; echo "exit $?" >> hpcc.stdout)
done
uname -a > machine.txt; dpkg -l hpcc libopenblas0-pthread 2>/dev/null | tail -2 >> machine.txt; date -u >> machine.txt
