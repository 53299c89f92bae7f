#!/usr/bin/env bash
# Accept this node: tool environment, then the suite's playbook (default commission) against the inventory
# (default inventories/local), then the verdict table, once, and where the run's files are.
#   scripts/accept.sh [SUITE [INVENTORY]] [ansible-playbook options, e.g. -e gpuaccept_node_type=h100_sxm5_80gb]
#   GPUACCEPT_BURNIN_MINUTES=N: the burnin suite's length (default 30 minutes)
#   GPUACCEPT_REPEAT=N: run the suite N times (ReFrame --repeat; default: the playbook's, 5 for evaluation, else 1);
#   GPUACCEPT_REPEAT=1 make accept SUITE=evaluation is the quick evaluation (docs/running.md)
# Exit status (docs/exit-status.md), the same words as gpuaccept run's:
#   0 accepted   1 rejected (the table says why)   3 cannot judge (no usable GPU or driver, the tool environment or
#   the playbook failed before a verdict, the suite did not run to the end)   4 bad input (suite, inventory, node type)
# The last line says which, for `make accept`, which exits 0 once it is printed. The tool environment's and Ansible's
# own output go to results/accept-<time>-<suite>.log, named in that line; the terminal gets the checks' progress,
# the verdict table and the line.
set -uo pipefail
cd "$(dirname "$0")/.."
SUITES=(commission nightly evaluation burnin)
suite=${1:-commission}
inventory=${2:-inventories/local}
shift 2 2>/dev/null || shift $#
VENV=${VENV:-.venv}
REFERENCE_DIR=${GPUACCEPT_REFERENCE_DIR:-reference_values}

log=""  # the tool environment's and Ansible's output, once they have started
finish() {  # finish STATUS [WHY]: the closing line (naming the playbook's log where it ran), then exit
  local words=([0]=accepted [1]=rejected [3]="cannot judge" [4]="bad input")
  echo "accept: exit $1 (${words[$1]:-unknown})${2:+: $2}${log:+ (details: $log)}"
  exit "$1"
}

listed() {  # listed DIR: the names of its *.yaml files, or none
  local names
  names=$(find "$1" -maxdepth 1 -name '*.yaml' -printf '%f\n' 2>/dev/null | sed 's/\.yaml$//' | sort | paste -sd, - | sed 's/,/, /g')
  echo "${names:-none}"
}
# Whether a node type exists: gpuaccept.references.node_type_exists's rule (the tool environment may not
# be there yet): its reference file, or <sku>_x<count> (count 1 to 9999) of a known GPU SKU (gpus/<sku>.yaml).
node_type_exists() {
  [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$ ]] || return 1
  [ -e "$REFERENCE_DIR/$1.yaml" ] && return 0
  [[ $1 =~ ^(.+)_x([1-9][0-9]{0,3})$ ]] && [ -e "$REFERENCE_DIR/gpus/${BASH_REMATCH[1]}.yaml" ]
}

# Bad input stops here, before anything slow.
[[ " ${SUITES[*]} " == *" $suite "* ]] ||
  finish 4 "unknown suite '$suite': the suites are ${SUITES[*]} (make accept SUITE=nightly)"
[ -e "$inventory" ] || finish 4 "no inventory $inventory (make accept INVENTORY=inventories/local)"
# The node type the operator gives through ansible-playbook's -e (ANSIBLE_ARGS).
node_type=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    -e | --extra-vars) vars=${args[i + 1]:-} ;;
    -e*) vars=${args[i]#-e} ;;
    --extra-vars=*) vars=${args[i]#--extra-vars=} ;;
    *) continue ;;
  esac
  for kv in $vars; do
    case $kv in
      gpuaccept_node_type=*) node_type=${kv#*=} ;;
    esac
  done
done
if [ -n "$node_type" ] && [ "$node_type" != auto ] && ! node_type_exists "$node_type"; then
  finish 4 "unknown node type '$node_type': no $REFERENCE_DIR/$node_type.yaml; known node types: $(listed "$REFERENCE_DIR"); <sku>_x<count> for the known GPU SKUs: $(listed "$REFERENCE_DIR/gpus") (or auto)"
fi
extra=()
[ -n "${WHEELHOUSE:-}" ] && extra+=(-e "gpuaccept_toolenv_wheelhouse=$(realpath "$WHEELHOUSE")")
[ -n "${GPUACCEPT_BURNIN_MINUTES:-}" ] && extra+=(-e "gpuaccept_burnin_minutes=$GPUACCEPT_BURNIN_MINUTES")
if [ -n "${GPUACCEPT_REPEAT:-}" ]; then
  [[ $GPUACCEPT_REPEAT =~ ^[1-9][0-9]?$ ]] ||
    finish 4 "GPUACCEPT_REPEAT='$GPUACCEPT_REPEAT': give how many times to run the suite, 1 to 99"
  extra+=(-e "gpuaccept_suite_repeat=$GPUACCEPT_REPEAT")
fi

# The progress lines of the runs this call starts (gpuaccept run writes <run>/progress.log as each check starts
# and ends), printed as they come; once more at the end for the last lines.
show_progress() {
  local f n
  declare -A shown=()
  while :; do
    while IFS= read -r f; do
      n=$(wc -l <"$f")
      [ "$n" -gt "${shown[$f]:-0}" ] && tail -n "+$(( ${shown[$f]:-0} + 1 ))" "$f" | head -n "$(( n - ${shown[$f]:-0} ))"
      shown[$f]=$n
    done < <(find results -newer "$marker" -name progress.log 2>/dev/null | sort)
    [ -e "$marker.done" ] && return
    sleep 2
  done
}

mkdir -p results
log=results/accept-$(date -u +%Y%m%dT%H%M%SZ)-$suite.log
scripts/venv.sh >"$log" 2>&1 || finish 3 "the tool environment could not be made (scripts/venv.sh)"
marker=$(mktemp)
trap 'rm -f "$marker" "$marker.done"' EXIT
show_progress &
follower=$!
LC_ALL=C.UTF-8 ANSIBLE_CONFIG=ansible.cfg "$VENV/bin/ansible-playbook" -i "$inventory" "playbooks/$suite.yml" \
  -e "gpuaccept_toolenv_venv=$(realpath "$VENV")" "${extra[@]}" "$@" >>"$log" 2>&1
rc=$?
touch "$marker.done"
wait "$follower"

# Each run leaves its exit status beside its verdict (gpuaccept run): rejected beats cannot judge beats accepted.
statuses=$(find results -newer "$marker" -name exit-status -exec cut -d' ' -f1 {} + 2>/dev/null | sort -u)
if [ -n "$statuses" ]; then
  echo
  "$VENV/bin/gpuaccept" show --newer-than "$marker" results
fi
why=$(grep -o -e 'no NVIDIA GPU/driver on [^"]*install the driver with playbooks/provision.yml, or run on a GPU node' \
  -e 'no datasheet for [^"]*(docs/reference-values.md)' "$log" | head -1)
if grep -qx 1 <<<"$statuses"; then finish 1; fi
if grep -qx 3 <<<"$statuses"; then finish 3 "$why"; fi
if grep -qx 4 <<<"$statuses"; then finish 4 "gpuaccept run refused its input"; fi
if [ -n "$statuses" ] && [ "$rc" -eq 0 ]; then finish 0; fi
if [ -n "$why" ]; then finish 3 "$why"; fi
unknown=$(grep -o "unknown node type '[^']*'[^\"]*(or auto: detect it)" "$log" | head -1)
[ -z "$unknown" ] || finish 4 "$unknown"
if [ -n "$statuses" ]; then finish 3 "the playbook failed after the verdict (exit $rc)"; fi
finish 3 "the playbook stopped before a verdict (exit $rc)"
