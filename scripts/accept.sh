#!/usr/bin/env bash
# Accept this node: tool environment, then the suite's playbook (default commission) against the inventory
# (default inventories/local), then the verdict table and where the run's files are.
# Exit status: 0 accepted, non-zero rejected or not run.
set -uo pipefail
cd "$(dirname "$0")/.."
suite=${1:-commission}
inventory=${2:-inventories/local}
shift 2 2>/dev/null || shift $#
VENV=${VENV:-.venv}
scripts/venv.sh || exit $?
extra=()
[ -n "${WHEELHOUSE:-}" ] && extra+=(-e "gpuaccept_toolenv_wheelhouse=$(realpath "$WHEELHOUSE")")
marker=$(mktemp)
LC_ALL=C.UTF-8 ANSIBLE_CONFIG=ansible.cfg "$VENV/bin/ansible-playbook" -i "$inventory" "playbooks/$suite.yml" \
  -e "gpuaccept_toolenv_venv=$(realpath "$VENV")" "${extra[@]}" "$@"
rc=$?
echo
"$VENV/bin/gpuaccept" show --newer-than "$marker" results || true
rm -f "$marker"
exit $rc
