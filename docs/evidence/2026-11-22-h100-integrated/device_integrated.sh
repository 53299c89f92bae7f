#!/usr/bin/env bash
# On a 1 x H100 80 GB SXM5 VM, from the repository root, after issues 3-7 were merged: the
# commissioning suite as a new user runs it (`make accept SUITE=commission`, offline from the carried wheelhouse
# .whl, Debian's OpenBLAS from .deb for the host checks), then the nightly suite twice on the node it left
# (what the nightly timer sees), with wall times. Read-only towards the GPU settings.
set -uo pipefail
OUT=${OUT:-/tmp/out}; D=$OUT/integrated; mkdir -p "$D"
exec > >(tee "$D/device_integrated.log") 2>&1
export LC_ALL=C.UTF-8
mkdir -p /tmp/obl; for d in .deb/*.deb; do dpkg -x "$d" /tmp/obl; done
export LD_LIBRARY_PATH=/tmp/obl/usr/lib/x86_64-linux-gnu:/tmp/obl/usr/lib/x86_64-linux-gnu/openblas-pthread
OBL=/tmp/obl/usr
cat > /tmp/openblas.yml <<YML
gpuaccept_reframe_openblas_inc: $OBL/include/x86_64-linux-gnu/openblas-pthread
gpuaccept_reframe_openblas_lib: $OBL/lib/x86_64-linux-gnu/openblas-pthread
YML
echo "revision $(cat .gitrev 2>/dev/null)"; date -u
nvidia-smi --query-gpu=index,name,pci.bus_id,power.draw,power.limit,clocks.sm,persistence_mode,ecc.mode.current --format=csv
wall() { python3 -c "print(round($2 - $1, 1))"; }
n=0
for suite in ${SUITES:-commission nightly nightly}; do
  n=$((n + 1)); t0=$(date +%s.%N)
  WHEELHOUSE=.whl timeout "${LIMIT:-480}" make accept SUITE="$suite" ANSIBLE_ARGS="-e @/tmp/openblas.yml" 2>&1 | tee "$D/$suite-$n.log"
  rc=${PIPESTATUS[0]}; t1=$(date +%s.%N)
  echo "make accept SUITE=$suite (run $n): exit $rc, wall $(wall "$t0" "$t1") s" | tee -a "$D/walls.txt"
done
cat "$D/walls.txt"
# Every run directory (JSON documents, logs, verdicts, textfiles, failed checks' stage dirs); build trees left out.
tar czf "$OUT/results.tar.gz" --exclude='*Build*/*.o' --exclude='*/stage/*/*Build*' results
tar czf "$OUT/integrated.tar.gz" -C "$OUT" integrated && rm -rf "$D"
ls -la "$OUT"
