#!/usr/bin/env bash
# The test suite: what CI runs (.ci/run) and what `make test` runs. Needs no GPU.
#   1. the tool environment with the test tools;  2. ruff;  3. pytest (unit tests on outputs recorded on the
#   GPU machine, every CUDA source compiled, the host GEMM check run for real through ReFrame);
#   4. Ansible: syntax, yamllint, ansible-lint, check mode and a real run on localhost, idempotency.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
scripts/venv.sh test
export PATH="$PWD/$VENV/bin:$PATH" LC_ALL=C.UTF-8
echo "== ruff"
ruff check src tests reframe_checks
echo "== pytest"
pytest -q tests
echo "== ansible"
tests/ansible/run_checks.sh "$PWD/$VENV"
