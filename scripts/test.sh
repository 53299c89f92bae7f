#!/usr/bin/env bash
# The test suite: what CI runs (.ci/run) and what `make test` runs. Needs no GPU.
#   0. the Debian packages the tests need (scripts/deps.sh: apt-get as root or through sudo, or one message
#      listing what is missing);
#   1. the tool environment with the test tools and Intel MKL (GPUACCEPT_MKL=0: OpenBLAS only);  2. ruff;
#   3. pytest (unit tests on outputs recorded on the GPU machine, every CUDA source compiled, the host GEMM
#   check run for real through ReFrame);
#   4. Ansible: syntax, yamllint, ansible-lint, check mode and a real run on localhost, idempotency.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
start=$SECONDS
if [ "$(id -u)" != 0 ]; then
  echo "test.sh: not root: tests/test_slurm.py (slurmd runs jobs as root) fails and the node_exporter role's package path is skipped; run make test as root for the whole suite" >&2
fi
echo "== system packages (scripts/deps.sh)"
scripts/deps.sh
# With everything installed, a missing tool is a failure, never a skip: the report's browser test too.
export GPUACCEPT_REQUIRE_CHROMIUM=1
if [ -z "${GPUACCEPT_MKL:-}" ]; then
  GPUACCEPT_MKL=1   # the host GEMM tests run with Intel MKL (requirements/mkl.txt), as on the nodes
  if [ -n "${WHEELHOUSE:-}" ] && ! compgen -G "$WHEELHOUSE/mkl-*.whl" >/dev/null; then
    echo "test.sh: no Intel MKL wheels in $WHEELHOUSE (MKL=1 make wheelhouse adds them): testing with OpenBLAS"
    GPUACCEPT_MKL=0
  fi
fi
export GPUACCEPT_MKL
echo "== tool environment (scripts/venv.sh test, GPUACCEPT_MKL=$GPUACCEPT_MKL)"
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
echo "make test: $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
