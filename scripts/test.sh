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
mkdir -p build
pytest -q --junitxml=build/pytest.xml tests
echo "== ansible"
tests/ansible/run_checks.sh "$PWD/$VENV"
# The closing count, after the Ansible output: pytest's own summary is far above.
python3 - <<'PY'
import xml.etree.ElementTree as ET
s = ET.parse("build/pytest.xml").getroot().find("testsuite")
n, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
print(f"pytest: {n - f - e - k} passed, {f + e} failed, {k} skipped")
PY
