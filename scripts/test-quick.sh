#!/usr/bin/env bash
# The quick tier (`make test-quick`), for the edit-test loop: ruff, then the judge's tests and every recorded GPU
# run judged again, on every core (pytest-xdist), in under 3 minutes on a 2-core machine. It is a subset: `make
# test` (what CI runs) runs these tests and every other one, the builds, ReFrame, Slurm and the Ansible checks.
# Needs the tool environment that `make test` makes (scripts/venv.sh test); nothing is installed here.
# Usage: scripts/test-quick.sh [PYTEST ARGS...]   (e.g. -x, -k NAME; GPUACCEPT_TEST_WORKERS=N as in test.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
# The judge (rules, references, verdict, its mutants' catalogue) and the recorded runs judged again.
QUICK=(
  tests/test_judge.py
  tests/test_judge_rules_fail.py
  tests/test_judge_registry.py
  tests/test_judge_status.py
  tests/test_verdict_table.py
  tests/test_pergpu.py
  tests/test_references.py
  tests/test_node_types.py
  tests/test_unfoolable.py
  tests/test_trust.py
  tests/test_recorded_outputs.py
  tests/test_recorded_suites.py
  tests/test_recorded_gemm_nccl.py
  tests/test_multigpu_one_revision.py
  tests/test_multigpu_h200x2.py
  tests/test_multigpu_h200x4.py
  tests/test_h100_burnin_commission.py
  tests/test_dcgm_recorded.py
  tests/test_node_refs_derivation.py
  tests/test_one_reader.py
  tests/test_node_type_file.py
  tests/test_evaluation_recorded.py
  tests/test_code_shape.py
)
if [ ! -x "$VENV/bin/pytest" ] || ! "$VENV/bin/python" -c 'import xdist' 2>/dev/null; then
  echo "test-quick.sh: no test tool environment in $VENV (pytest and pytest-xdist): run 'make test' once, or" \
    "scripts/venv.sh test" >&2
  exit 2
fi
export PATH="$PWD/$VENV/bin:$PATH" LC_ALL=C.UTF-8
start=$SECONDS
failed=0
echo "== ruff"
ruff check src tests reframe_checks || failed=1
echo "== pytest (the judge and the recorded runs: ${#QUICK[@]} modules)"
pytest -q -n "${GPUACCEPT_TEST_WORKERS:-auto}" --dist loadfile "${QUICK[@]}" "$@" || failed=1
verdict=$([ "$failed" = 0 ] && echo passed || echo FAILED)
echo "make test-quick: $verdict in $((SECONDS - start)) s (a subset: make test runs every test)"
exit "$failed"
