#!/usr/bin/env bash
# The evaluation report, baseline proposal and fleet comparison made from the GPU machines' runs recorded
# here (2026-11-22-h100-accept, -h100-integrated/fourth (HPL-style, health and power), -h100-degraded, -h200,
# -h200-hpl, -h200x2). Runs on the controller, not on a GPU node:
# needs the test environment (scripts/venv.sh test: matplotlib, Pillow) and Debian's chromium.
# Usage, from the repository root: docs/evidence/make_report.sh   (writes docs/evidence/2026-11-22-report/)
set -euo pipefail
cd "$(dirname "$0")/../.."
E=docs/evidence
OUT=$E/2026-11-22-report
GA=.venv/bin/gpuaccept
mkdir -p "$OUT"
export LC_ALL=C
{
  echo "# $(date -u +%FT%TZ) gpuaccept $(git rev-parse --short HEAD) $(chromium --version 2>/dev/null)"
  set -x
  # H100 against H200 (one and two GPUs), ratios to the H100.
  $GA report --title "gpuaccept evaluation: H100 80GB HBM3 vs H200 (device tool machines, 2026-11-22)" \
    --generated 2026-11-22 --baseline h100_sxm5_80gb --output "$OUT/report.html" --pdf "$OUT/report.pdf" \
    "h100_sxm5_80gb=$E/2026-11-22-h100-accept/results,$E/2026-11-22-h100-integrated/fourth/results" \
    "h200=$E/2026-11-22-h200/runs,$E/2026-11-22-h200-hpl/repeat" "2xH200=$E/2026-11-22-h200x2"
  # The H100's five good runs and the degraded one: the degraded run is rejected as an outlier.
  $GA baseline --reference-dir reference_values --node-type h100_sxm5_80gb --description "H100 80GB HBM3, 5 good runs and a degraded one" \
    --machine "device tool nvidia-h100-x1" --evidence "$E/2026-11-22-h100-accept, $E/2026-11-22-h100-degraded" \
    --source-id h100-device-2026-11-22 --date 2026-11-22 \
    --facts "$E/2026-11-22-h100-accept/results/20261122T052346Z-commission/node-facts.json" \
    --output "$OUT/h100-with-degraded.proposal.yaml" --force \
    "$E/2026-11-22-h100-accept/results" "$E/2026-11-22-h100-degraded"
  # The "fleet": the newest run of each node against the shipped references (exit 1: the degraded node).
  $GA compare --reference-dir reference_values --json "$OUT/compare.json" "$E/2026-11-22-h100-accept/results" "$E/2026-11-22-h100-degraded" \
    "$E/2026-11-22-h200/runs/eval-1" || echo "compare exit status $?"
  set +x
} > "$OUT/commands.log" 2>&1
# The screenshot: the page's height is measured from a first, tall rendering, then rendered at that height.
.venv/bin/python - "$OUT" <<'PY'
import sys
from pathlib import Path
from PIL import Image, ImageOps
from gpuaccept import report
out = Path(sys.argv[1])
tall = report.screenshot(out / "report.html", out / "report.png", 1400, 16000)
bottom = ImageOps.invert(Image.open(tall).convert("L")).getbbox()[3]
report.screenshot(out / "report.html", out / "report.png", 1400, bottom + 40)
print(f"screenshot {out / 'report.png'}: 1400 x {bottom + 40}")
PY
