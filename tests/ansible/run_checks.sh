#!/usr/bin/env bash
# Checks of gpuaccept's Ansible side, none of which needs a GPU:
#   1. ansible-playbook --syntax-check of every playbook against both inventories;
#   2. yamllint -s . and ansible-lint (production profile) on the playbooks and roles (1 and 2 only read the
#      checkout: they run in the background beside 3, their output printed and their status checked at the end);
#   3. against this host (inventories/local): a check-mode run of playbooks/commission.yml, then a real run of
#      everything but the suite run (--skip-tags gpuaccept_suite_run), then the same real run again, which
#      must report changed=0 (idempotency); the nightly timer the same way, its unit rated by systemd-analyze
#      security (2.5 or better), and its runner run as the unprivileged user the unit runs it as (setpriv: the
#      same user, groups, environment and umask, no capability), its result files checked for owner and mode.
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

remove_scratch=""
if [[ -n ${GPUACCEPT_CI_SCRATCH:-} ]]; then
  scratch=$GPUACCEPT_CI_SCRATCH
  mkdir -p "$scratch"
else
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpuaccept-ansible.XXXXXX")
  remove_scratch=1
fi
lint_pid=""
on_exit() {  # the lints' background job, if the script stops before waiting for it; the scratch directory
  if [[ -n $lint_pid ]]; then
    pkill -P "$lint_pid" 2>/dev/null || true
    kill "$lint_pid" 2>/dev/null || true
  fi
  if [[ -n $remove_scratch ]]; then
    rm -rf "$scratch"
  fi
}
trap on_exit EXIT
scratch=$(cd "$scratch" && pwd)
logs=$scratch/logs
mkdir -p "$logs" "$scratch/reference_values"

# Each step's time, printed as it ends and together at the end (where the stage spends its time).
step_name="" step_t0=$SECONDS times=()
step() {
  if [[ -n $step_name ]]; then
    times+=("$(printf '%5d s  %s' $((SECONDS - step_t0)) "$step_name")")
    printf '(%s)\n' "${times[-1]}"
  fi
  step_name=$* step_t0=$SECONDS
  printf '\n=== %s\n' "$*"
}
run() { printf '+ %s\n' "$*"; "$@"; }

# The lints only read the checkout: they run in the background beside the playbook runs below (which keep one
# core busy at a time), their output kept in $logs/lint.log, printed and its status checked before the end.
lint() {
  local playbook inventory
  step_name="" times=()
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
  step "lints passed"
  printf '%s\n' "${times[@]}"
}
step "syntax check, yamllint and ansible-lint: started in the background (their output at the end)"
lint > "$logs/lint.log" 2>&1 &
lint_pid=$!

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
# The distribution's Python for the tool environment, as on a node: the nightly runner's unprivileged user must be
# able to run it (a Python under /root, such as pyenv's, is not).
if [[ -x /usr/bin/python3 ]]; then
  vars+=(-e gpuaccept_toolenv_python=/usr/bin/python3)
fi
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

step "the nightly unit's hardening: systemd-analyze security --offline, exposure 2.5 or better"
run systemd-analyze security --offline=true --threshold=25 "$scratch/systemd/gpuaccept-nightly.service" \
  | tee "$logs/unit-security.log" | tail -n 1

step "the nightly runner as the unit runs it: root's kernel-log step, then the runner as the unprivileged user"
# No systemd as PID 1 here (systemd-run cannot start the unit): setpriv gives the runner what the unit gives it:
# its user and groups, no capability (bounding and inheritable sets empty), no new privileges, the unit's
# EnvironmentFile and UMask. The user must reach <root> through the scratch directory (mktemp made it 0700).
user=gpuaccept
chmod 0755 "$scratch"
kernel_log=/run/gpuaccept-nightly-kernel.log
run "$scratch/root/bin/gpuaccept-kernel-log" "$kernel_log" "$user"
mapfile -t unit_env < <(grep -v '^#' "$scratch/root/etc/gpuaccept-nightly.env")
set +e
run setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs --inh-caps=-all --bounding-set=-all \
  env -i "${unit_env[@]}" sh -c 'umask 0027; exec "$0"' "$scratch/root/bin/gpuaccept-nightly" 2>&1 \
  | tee "$logs/nightly-as-user.log"
rc=${PIPESTATUS[0]}
set -e
rm -f "$kernel_log"
python3 - "$scratch" "$user" "$rc" <<'PY'
import grp, json, os, pwd, stat, sys
from pathlib import Path
scratch, user, rc = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
uid, group = pwd.getpwnam(user).pw_uid, os.environ.get("GPUACCEPT_CI_RESULTS_GROUP", "prometheus")
gid = grp.getgrnam(group).gr_gid
bad = [] if rc in (0, 1) else [f"the runner exited {rc} (0 or 1 is a verdict)"]
runs = sorted((scratch / "root" / "results").glob("*/*-nightly"))
if not runs:
    bad.append("no run directory under results/")
prom = scratch / "textfile" / "gpuaccept_nightly.prom"
files = [prom, *(p for r in runs for p in r.rglob("*"))]
for p in files:
    st = p.lstat()
    if stat.S_ISLNK(st.st_mode):
        continue
    want = 0o750 if stat.S_ISDIR(st.st_mode) else 0o640
    if (st.st_uid, st.st_gid) != (uid, gid) or stat.S_IMODE(st.st_mode) & ~want & ~stat.S_ISGID:
        bad.append(f"{p}: uid {st.st_uid} gid {st.st_gid} mode {oct(stat.S_IMODE(st.st_mode))}, "
                   f"expected {user}:{group} and at most {oct(want)}")
for doc in (r / "verdict.json" for r in runs):
    if doc.exists():
        print(f"{doc}: verdict {json.loads(doc.read_text()).get('verdict')}")
print(f"{len(files)} files and directories checked: {user}:{group}, files 0640, directories 0750 at most")
sys.exit("\n".join(bad[:20]) if bad else 0)
PY
step "the suite role as the unprivileged user (gpuaccept_suite_user, become): gpuaccept run, facts to verdict"
# become through su here (CI has no sudo; su needs a shell, the user has none), the distribution's Python for the
# modules that run as the user (the controller's may be under /root).
run ansible-playbook -i inventories/local tests/ansible/apply_role.yml "${vars[@]}" -e gpuaccept_test_role=gpuaccept_suite \
  -e gpuaccept_suite_user=$user -e gpuaccept_node_type=ci_no_gpu -e gpuaccept_suite_results_dir="$scratch/suite-results" \
  -e gpuaccept_suite_fetch=false \
  -e gpuaccept_suite_fail_on_reject=false -e ansible_become_method=su -e "ansible_become_flags='-s /bin/sh'" \
  -e ansible_python_interpreter=/usr/bin/python3 2>&1 | tee "$logs/suite-as-user.log"
# Every file the user's; the results, host and run directories closed to others (ReFrame's own directories below
# follow its umask, unreachable through them).
bad=$( (find "$scratch/suite-results" -mindepth 1 ! -user "$user"
        find "$scratch/suite-results" -maxdepth 2 -type d -perm -o=x ! -path "*/.*") | head)
if [[ -n $bad ]] || [[ -z $(find "$scratch/suite-results" -name verdict.json -user "$user") ]]; then
  echo "FAIL: the suite's run is not the user's alone (files another user owns, directories others can enter):" >&2
  echo "${bad:-no verdict.json of $user}" >&2
  exit 1
fi
echo "the suite ran as $user: its run directories and files are $user's, no directory open to others"

step "syntax check, yamllint and ansible-lint (run in the background beside the steps above)"
lint_rc=0
wait "$lint_pid" || lint_rc=$?
lint_pid=""
cat "$logs/lint.log"
if [[ $lint_rc != 0 ]]; then
  echo "FAIL: a syntax check or a lint failed (exit $lint_rc; its output above)" >&2
  exit 1
fi

step "all Ansible checks passed"
printf '%s\n' "${times[@]}"
