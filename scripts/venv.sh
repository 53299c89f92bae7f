#!/usr/bin/env bash
# Creates or updates the tool environment: $VENV (default .venv) with requirements/tools.txt pinned and
# complete (installed --no-deps), gpuaccept itself (editable), and with "test" also requirements/test.txt;
# "test" or "report" also installs requirements/report.txt (matplotlib, for gpuaccept report).
# Offline: WHEELHOUSE=DIR installs with pip --no-index --find-links DIR. GPUACCEPT_MKL=1 adds Intel MKL,
# GPUACCEPT_MD=1 OpenMM (requirements/md.txt, with its dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
pip_opts=(--disable-pip-version-check --quiet)
if [ -n "${WHEELHOUSE:-}" ]; then
  [ -d "$WHEELHOUSE" ] || { echo "venv.sh: WHEELHOUSE=$WHEELHOUSE is not a directory (build one with 'make wheelhouse')" >&2; exit 2; }
  pip_opts+=(--no-index --find-links "$WHEELHOUSE")
fi
"$PYTHON" - <<'PY' || { echo "venv.sh: gpuaccept needs Python >= 3.11 (set PYTHON=...)" >&2; exit 2; }
import sys; sys.exit(sys.version_info < (3, 11))
PY
if [ ! -x "$VENV/bin/python" ]; then
  echo "Creating the tool environment in $VENV ($("$PYTHON" --version))"
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install "${pip_opts[@]}" --no-deps -r requirements/tools.txt
"$VENV/bin/python" -m pip install "${pip_opts[@]}" --no-deps --no-build-isolation -e .
if [ "${1:-}" = test ]; then
  "$VENV/bin/python" -m pip install "${pip_opts[@]}" -r requirements/test.txt
fi
if [ "${1:-}" = test ] || [ "${1:-}" = report ]; then
  "$VENV/bin/python" -m pip install "${pip_opts[@]}" -r requirements/report.txt
fi
if [ "${GPUACCEPT_MD:-0}" = 1 ]; then
  "$VENV/bin/python" -m pip install "${pip_opts[@]}" -r requirements/md.txt
fi
if [ "${GPUACCEPT_MKL:-0}" = 1 ]; then
  "$VENV/bin/python" -m pip install "${pip_opts[@]}" --no-deps -r requirements/mkl.txt
fi
