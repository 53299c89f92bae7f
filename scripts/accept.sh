#!/usr/bin/env bash
# Accept this node: tool environment, then the suite's playbook (default commission) against the inventory
# (default inventories/local), then the verdict table and where the run's files are.
# Exit status: 0 accepted, 1 rejected (the verdict table says why), other: the playbook failed before a verdict.
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
"$VENV/bin/gpuaccept" show --newer-than "$marker" results
shown=$?
rm -f "$marker"
# The verdict decides: 0 accepted, 1 rejected (also a node without GPUs or node type: its table says why). With
# no verdict (show exits 4), or a verdict but a playbook that failed elsewhere, the playbook's status.
if [ "$shown" -eq 1 ] || { [ "$shown" -eq 0 ] && [ "$rc" -eq 0 ]; }; then exit "$shown"; fi
exit "$rc"
