#!/usr/bin/env bash
# On a lent GPU machine (no network): README command 1, `make accept`, offline from the carried wheelhouse,
# then the evaluation suite (the same checks repeated: the runs reference values are derived from), then the
# cuBLAS cross-check through PyTorch. Run from the repository root with .whl (cp312 wheels of
# requirements/tools.txt), .deb (Debian's OpenBLAS: MKL's wheels, ~1 GB, exceed what can be carried) and
# .gitrev carried. Read-only towards the GPU.
#   REPEAT=N  evaluation repeats (default 3; 0 skips)     SKIP_ACCEPT=1  evaluation only
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
REPEAT=${REPEAT:-3}
mkdir -p /tmp/obl; for d in .deb/*.deb; do dpkg -x "$d" /tmp/obl; done
export LD_LIBRARY_PATH=/tmp/obl/usr/lib/x86_64-linux-gnu:/tmp/obl/usr/lib/x86_64-linux-gnu/openblas-pthread
OBL=/tmp/obl/usr
ARGS="-e gpuaccept_reframe_openblas_inc=$OBL/include/x86_64-linux-gnu/openblas-pthread -e gpuaccept_reframe_openblas_lib=$OBL/lib/x86_64-linux-gnu/openblas-pthread"
echo "revision $(cat .gitrev 2>/dev/null)"; nvidia-smi --query-gpu=index,name,pci.bus_id,power.draw,clocks.sm --format=csv
python3 docs/evidence/crosscheck_torch.py | tee "$OUT/crosscheck_torch.json"
if [ "${SKIP_ACCEPT:-0}" != 1 ]; then
  t0=$SECONDS
  WHEELHOUSE=.whl make accept ANSIBLE_ARGS="$ARGS" 2>&1 | tee "$OUT/accept.log"
  echo "make accept: exit ${PIPESTATUS[0]}, wall $((SECONDS - t0)) s" | tee -a "$OUT/accept.log"
  tar czf "$OUT/results-accept.tar.gz" --exclude='*/stage/*' results
fi
if [ "$REPEAT" -gt 0 ]; then
  t0=$SECONDS
  WHEELHOUSE=.whl make accept SUITE=evaluation ANSIBLE_ARGS="$ARGS -e gpuaccept_suite_repeat=$REPEAT" 2>&1 \
    | tee "$OUT/evaluation.log"
  echo "evaluation: exit ${PIPESTATUS[0]}, wall $((SECONDS - t0)) s" | tee -a "$OUT/evaluation.log"
fi
# Keep every run directory (JSON, logs, outputs); stage directories (build trees) are left out.
tar czf "$OUT/results.tar.gz" --exclude='*/stage/*' results
ls -la results/*/
