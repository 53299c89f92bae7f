#!/usr/bin/env bash
# On the lent H100 (no network): the md_openmm check through ReFrame (reframe_checks/md_checks.py, suite
# evaluation, --repeat 2), its configuration rendered from the gpuaccept_reframe role's template
# (tests/rfm_support.py), judged against reference_values/h100_sxm5_80gb.yaml, then `gpuaccept summarize`.
# Carried: .whl (cp312 wheels of requirements/tools.txt) and .ommwhl (openmm, openmm-cuda-13 8.6.1); the CUDA 13
# libraries OpenMM loads are those of the machine's PyTorch. Run from the repository root. Read-only towards the GPU.
set -uo pipefail
OUT=${OUT:-/tmp/out}; R=/tmp/mdrfm; mkdir -p "$R" "$OUT"
repo=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl .ommwhl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$repo/src PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 LC_ALL=C.UTF-8 RFM_REPORT_JUNIT=
NV=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])')
LD_LIBRARY_PATH=$(ls -d "$NV"/*/lib | tr '\n' ':')${LD_LIBRARY_PATH:-}; export LD_LIBRARY_PATH
python3 -m gpuaccept facts --output "$R/node-facts.json"
python3 - "$R" <<'PY' || exit 1
import json, sys
from pathlib import Path
sys.path.insert(0, "tests")
from rfm_support import render_config
run = Path(sys.argv[1])
facts = json.loads((run / "node-facts.json").read_text())
render_config(run / "settings.py", "h100_sxm5_80gb", Path("reference_values").resolve(), facts, run / "node-facts.json")
PY
cd "$R" || exit 1
t0=$SECONDS
reframe -C settings.py -c "$repo/reframe_checks/md_checks.py" -n MdOpenmm --tag evaluation --repeat 2 \
  --prefix "$R/reframe" --report-file "$R/reframe-report.json" --save-log-files -r 2>&1 | tee "$R/reframe.out"
echo "reframe: exit ${PIPESTATUS[0]}, wall $((SECONDS - t0)) s" | tee -a "$R/reframe.out"
python3 -m gpuaccept summarize --run-dir "$R" --node-type h100_sxm5_80gb --suite evaluation \
  --facts "$R/node-facts.json" --reference-dir "$repo/reference_values" 2>&1 | tee "$R/summary.txt"
tar czf "$OUT/mdrfm.tar.gz" --exclude='*/stage/*' -C /tmp mdrfm
