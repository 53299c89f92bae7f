#!/usr/bin/env bash
# The evaluation report of the 4 x H200 node (docs/evidence/2026-11-27-multigpu: its commission run, two healthy
# nightly runs and HPL-CUDA's scaling documents) beside the 1 x H100 runs of docs/evidence/2026-11-25-trust, on the
# project's CPU machine (no GPU), from the repository root, with the copies under tests/fixtures. Writes
# report.pdf (headless Chromium) and page-1.png (pdftoppm, 60 dpi) here; the HTML goes to /tmp.
set -euo pipefail
here=docs/evidence/2026-11-27-report
w=$(mktemp -d)
tar xzf tests/fixtures/multigpu_h200x4/results.tar.gz -C "$w"
R=$w/results/localhost
PYTHONPATH=src .venv/bin/python -m gpuaccept report --output "$w/report.html" --pdf "$here/report.pdf" \
  --title "4 x H200 against 1 x H100" --generated 2026-11-27 \
  "h200_x4=$R/20261127T172659Z-commission,$R/20261127T173454Z-nightly,$R/20261127T174439Z-nightly,tests/fixtures/multigpu_h200x4/hpl_scaling" \
  "h100_sxm5_80gb=tests/fixtures/recorded/2026-11-25-trust/results/h100-a"
pdftoppm -r 60 -png -f 1 -l 1 "$here/report.pdf" "$w/page"
cp "$w"/page-*1.png "$here/page-1.png"
rm -rf "$w"
