#!/usr/bin/env bash
# Checks of gpuaccept's Ansible side, none of which needs a GPU:
#   1. ansible-playbook --syntax-check of every playbook against both inventories;
#   2. yamllint -s . and ansible-lint (production profile) on the playbooks and roles;
#   3. against this host (inventories/local): a check-mode run of playbooks/commission.yml, then a real run of
#      everything but the suite run (--skip-tags gpuaccept_suite_run), then the same real run again, which
#      must report changed=0 (idempotency).
# The runs use a scratch project root (GPUACCEPT_CI_SCRATCH, default a new directory under $TMPDIR or /tmp,
# removed at the end unless given): the toolenv role copies the checkout there and installs a fresh tool
# environment in it, so the checkout and its .venv are not touched. Reference values: the checkout's, plus
# ci_no_gpu.yaml (a node without GPUs, judged on nothing) so that a CI machine without GPU has a node type.
# Extra variables for the runs: GPUACCEPT_CI_EXTRA_VARS (one -e argument: "k=v k2=v2", JSON, or @file), e.g.
#   GPUACCEPT_CI_EXTRA_VARS="gpuaccept_toolenv_wheelhouse=$PWD/wheelhouse" tests/ansible/run_checks.sh .venv
# Usage: tests/ansible/run_checks.sh VENV_DIR   (a venv with ansible-core, ansible-lint and yamllint)
set -euo pipefail

venv=${1:?usage: $0 VENV_DIR (a virtual environment with ansible-core, ansible-lint and yamllint)}
venv=$(cd "$venv" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
export PATH="$venv/bin:$PATH" LC_ALL=C.UTF-8 ANSIBLE_CONFIG="$repo/ansible.cfg" ANSIBLE_NOCOLOR=1
unset ANSIBLE_INVENTORY ANSIBLE_ROLES_PATH

if [[ -n ${GPUACCEPT_CI_SCRATCH:-} ]]; then
  scratch=$GPUACCEPT_CI_SCRATCH
  mkdir -p "$scratch"
else
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpuaccept-ansible.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
fi
scratch=$(cd "$scratch" && pwd)
logs=$scratch/logs
mkdir -p "$logs" "$scratch/reference_values"

step() { printf '\n=== %s\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }

step "syntax check: every playbook, both inventories"
for playbook in playbooks/*.yml; do
  for inventory in inventories/local inventories/example; do
    run ansible-playbook -i "$inventory" --syntax-check "$playbook"
  done
done

step "yamllint (strict)"
run yamllint -s .

step "ansible-lint (production profile)"
run ansible-lint --profile production playbooks roles

step "reference values for the runs: the checkout's, and ci_no_gpu.yaml"
cp -R reference_values/. "$scratch/reference_values/"  # both layers: node types and gpus/
cat > "$scratch/reference_values/ci_no_gpu.yaml" <<'YAML'
# A machine without NVIDIA GPUs, such as CI: lets tests/ansible/run_checks.sh configure ReFrame there.
# Nothing is judged against it; it is never used to accept a node.
schema: gpuaccept.references/1
node_type: ci_no_gpu
description: A machine without NVIDIA GPUs (tests/ansible/run_checks.sh only; judges nothing)
match:
  gpu_count: 0
sources:
  ci:
    kind: synthetic
    date: "2026-11-22"
    reference: none; a machine without GPUs is not judged
checks:
  cpu_gemm:
    dgemm_gflops:
      unit: GFLOP/s
      source: ci
      informational: a machine without GPUs is not judged
YAML
ls "$scratch/reference_values"

vars=(-e "gpuaccept_root=$scratch/root" -e "gpuaccept_reframe_reference_dir=$scratch/reference_values")
if [[ -n ${GPUACCEPT_CI_EXTRA_VARS:-} ]]; then
  vars+=(-e "$GPUACCEPT_CI_EXTRA_VARS")
fi
playbook=(ansible-playbook -i inventories/local playbooks/commission.yml "${vars[@]}")

step "check mode against this host (scratch root $scratch/root)"
run "${playbook[@]}" --check 2>&1 | tee "$logs/check.log"

step "real run against this host, without the suite run"
run "${playbook[@]}" --skip-tags gpuaccept_suite_run 2>&1 | tee "$logs/run1.log"

step "the same real run again: it must change nothing"
run "${playbook[@]}" --skip-tags gpuaccept_suite_run 2>&1 | tee "$logs/run2.log"
recap=$(sed -n '/^PLAY RECAP/,$p' "$logs/run2.log" | grep -E ' : ok=[0-9]+ ')
if [[ -z $recap ]] || grep -vqE ' changed=0 ' <<<"$recap"; then
  echo "FAIL: the second run changed something (not idempotent); tasks that changed:" >&2
  awk '/^TASK \[/ { task = $0 } /^changed: / { print task; print }' "$logs/run2.log" >&2
  exit 1
fi
echo "idempotent: $recap"

step "the nightly timer (playbooks/nightly_timer.yml): check mode, a real run, a second run that changes nothing"
timer=(ansible-playbook -i inventories/local playbooks/nightly_timer.yml "${vars[@]}"
       -e "gpuaccept_nightly_timer_unit_dir=$scratch/systemd" -e "gpuaccept_nightly_timer_textfile_dir=$scratch/textfile"
       -e gpuaccept_nightly_timer_enabled=false)
run "${timer[@]}" --check 2>&1 | tee "$logs/timer-check.log"
run "${timer[@]}" 2>&1 | tee "$logs/timer-run1.log"
run bash -n "$scratch/root/bin/gpuaccept-nightly"
run "${timer[@]}" 2>&1 | tee "$logs/timer-run2.log"
recap=$(sed -n '/^PLAY RECAP/,$p' "$logs/timer-run2.log" | grep -E ' : ok=[0-9]+ ')
if [[ -z $recap ]] || grep -vqE ' changed=0 ' <<<"$recap"; then
  echo "FAIL: the timer's second run changed something (not idempotent)" >&2
  awk '/^TASK \[/ { task = $0 } /^changed: / { print task; print }' "$logs/timer-run2.log" >&2
  exit 1
fi
echo "idempotent: $recap"
step "all Ansible checks passed"
