#!/usr/bin/env bash
# The band and the three deviation rules over every recorded run of tests/fixtures (the healthy ones: those today's
# references accept), each judged figure 5 % and 3 % worse on one GPU at a time and on the whole node:
#
#   bash docs/evidence/2026-11-28-fleet-reference/make_sensitivity.sh
#
# writes sensitivity.json and sensitivity.txt beside this script. Run from the repository root.
set -euo pipefail
HERE=docs/evidence/2026-11-28-fleet-reference
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
for archive in tests/fixtures/multigpu_*/*.tar.gz; do
  dest="$TMP/$(basename "$(dirname "$archive")")/$(basename "$archive" .tar.gz)"; mkdir -p "$dest"
  tar xzf "$archive" -C "$dest"
done
mapfile -t RUNS < <( { find tests/fixtures/recorded -name verdict.json -execdir test -f reframe-report.json \; -print
                       find "$TMP" -name verdict.json; } | xargs -n1 dirname | sort)
PYTHONPATH=src ${PYTHON:-.venv/bin/python} -m gpuaccept sensitivity --references --loss 0.05,0.03 \
  --json "$HERE/sensitivity.json" "${RUNS[@]}" > "$HERE/sensitivity.txt"
# the unpacked archives' temporary paths, as the fixture and archive they came from
sed -i "s|$TMP/||g" "$HERE/sensitivity.json" "$HERE/sensitivity.txt"
tail -3 "$HERE/sensitivity.txt"
