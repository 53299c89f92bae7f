#!/usr/bin/env bash
# The test suite: what CI runs (.ci/run) and what `make test` runs. Needs no GPU.
#   0. the Debian packages the tests need (scripts/deps.sh: apt-get as root or through sudo, or one message
#      listing what is missing);
#   1. the tool environment with the test tools and Intel MKL (GPUACCEPT_MKL=0: OpenBLAS only);  2. ruff;
#   3. pytest on every core (pytest-xdist): unit tests on outputs recorded on the GPU machine, every CUDA source
#   compiled, the host GEMM check run for real through ReFrame; tests that read a third-party input
#   (tests/inputs.toml: HPL's source, the APOA1 inputs, NAMD 3.0's logs) find it under $GPUACCEPT_INPUTS (default:
#   shared/ beside the clone), and where one is absent the summary says what it skipped and where to get it;
#   4. Ansible: syntax, yamllint, ansible-lint, check mode and a real run on localhost, idempotency.
# Every stage runs even when one before it fails (ruff's findings do not hide pytest's, nor pytest's the Ansible
# stage's); a summary line per stage closes the output, and the exit status is 1 when any stage failed. Only
# a failed tool environment stops the stages that need it (they are listed as not run).
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
start=$SECONDS
summary=()
failed=0
stage() {  # stage NAME COMMAND...: run it, record "NAME: ok|FAILED (exit N)" and its time
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "== $name"
  "$@" || rc=$?
  if [ "$rc" = 0 ]; then
    summary+=("$(printf '%-18s ok (%d s)' "$name" $((SECONDS - t0)))")
  else
    summary+=("$(printf '%-18s FAILED (exit %d, %d s)' "$name" "$rc" $((SECONDS - t0)))")
    failed=1
  fi
  return "$rc"
}
skip() { summary+=("$(printf '%-18s not run (%s)' "$1" "$2")"); failed=1; }
pytest_counts() {  # pytest's closing count, after the Ansible output: pytest's own summary is far above
  [ -s build/pytest.xml ] || return 0
  python3 - <<'PY'
import xml.etree.ElementTree as ET
s = ET.parse("build/pytest.xml").getroot().find("testsuite")
n, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
print(f"{n - f - e - k} passed, {f + e} failed, {k} skipped")
PY
}

if [ "$(id -u)" != 0 ]; then
  echo "test.sh: not root: tests/test_slurm.py (slurmd runs jobs as root) fails and the node_exporter role's package path is skipped; run make test as root for the whole suite" >&2
fi
stage "system packages" scripts/deps.sh
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
if stage "tool environment" scripts/venv.sh test; then
  export PATH="$PWD/$VENV/bin:$PATH" LC_ALL=C.UTF-8
  stage ruff ruff check src tests reframe_checks
  mkdir -p build
  rm -f build/pytest.xml
  # pytest-xdist: one worker per core (GPUACCEPT_TEST_WORKERS=N: N, 0: none), each module's tests on one worker,
  # so that its module-scoped builds and services are made once; the 25 slowest tests are listed.
  stage pytest pytest -q -n "${GPUACCEPT_TEST_WORKERS:-auto}" --dist loadfile --durations=25 \
    --junitxml=build/pytest.xml tests
  counts=$(pytest_counts)
  [ -z "$counts" ] || summary[${#summary[@]}-1]+=": $counts"
  # One line per third-party input that was absent: what it skipped and where to get it (tests/inputs.toml).
  while IFS= read -r line; do
    [ -z "$line" ] || summary+=("  $line")
  done < <([ -s build/pytest.xml ] && python3 tests/inputs.py summary build/pytest.xml)
  stage ansible tests/ansible/run_checks.sh "$PWD/$VENV"
else
  for name in ruff pytest ansible; do skip "$name" "no tool environment: see scripts/venv.sh's message above"; done
fi

echo
echo "== make test: summary"
printf '  %s\n' "${summary[@]}"
verdict=$([ "$failed" = 0 ] && echo passed || echo FAILED)
echo "make test: $verdict in $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
exit "$failed"
