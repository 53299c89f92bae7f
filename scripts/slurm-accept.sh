#!/usr/bin/env bash
# Run a suite across a fleet through Slurm (docs/fleet.md), from a login node whose file systems the compute
# nodes share (this checkout, the tool environment, the results directory):
#   1. the ReFrame configuration, generated from the inventory (one partition per node type, jobs sent to its
#      Slurm partition and, for commissioning, its reservation);
#   2. each node's facts, gathered on the node with srun;
#   3. `gpuaccept run --distribute`: the suite with `reframe --distribute`, one job per node of each partition,
#      then one verdict per node (results/<node>/<run id>/); with --drain, the failed nodes drained with a reason
#      starting "gpuaccept:", the accepted ones gpuaccept had drained resumed, other drains left alone (the rule the
#      health check shares: docs/fleet.md, "The node's lifecycle in Slurm");
#   4. the fleet summary.
# Usage: scripts/slurm-accept.sh INVENTORY [SUITE] [--drain] [-- REFRAME OPTIONS...]
# Environment: VENV (.venv), RESULTS (results), REFERENCE_DIR (reference_values), SCHEDULER (ReFrame's Slurm
# backend: squeue, or slurm where accounting (sacct) records each job's nodes), SLURM_CONF as Slurm wants.
# Exit status: 0 every node accepted, 1 a node rejected or missing, other: the run could not be made.
set -euo pipefail
cd "$(dirname "$0")/.."
checks=$PWD/reframe_checks
inventory=${1:?usage: scripts/slurm-accept.sh INVENTORY [SUITE] [--drain] [-- REFRAME OPTIONS...]}
suite=${2:-commission}
shift $(( $# < 2 ? $# : 2 ))
drain=()
if [ "${1:-}" = --drain ]; then drain=(--drain); shift; fi
[ "${1:-}" = -- ] && shift
VENV=$(realpath "${VENV:-.venv}")
RESULTS=$(realpath -m "${RESULTS:-results}")
REFERENCE_DIR=$(realpath "${REFERENCE_DIR:-reference_values}")
export LC_ALL=C.UTF-8 RFM_REPORT_JUNIT=""
run_id="$(date -u +%Y%m%dT%H%M%SZ)-$suite-slurm"
work="$RESULTS/_slurm/$run_id"
mkdir -p "$work"
inv_json="$work/inventory.json"
"$VENV/bin/ansible-inventory" -i "$inventory" --list > "$inv_json"

# The multinode suite's checks span nodes (MPI through srun): one job for several nodes, not one per node.
config_args=() distribute=(--distribute)
if [ "$suite" = multinode ]; then config_args=(--mpi --launcher srun) distribute=(); fi
echo "== ReFrame configuration from $inventory"
"$VENV/bin/gpuaccept" slurm-config --inventory "$inv_json" --reference-dir "$REFERENCE_DIR" \
  --output "$work/reframe_settings.py" --scheduler "${SCHEDULER:-squeue}" "${config_args[@]}"

echo "== node facts, gathered on each node"
"$VENV/bin/python" - "$inv_json" <<'PY' > "$work/nodes.txt"
import sys
from gpuaccept.results import slurm
try:
    inventory = slurm.load_inventory(sys.argv[1])  # read strictly (gpuaccept.textinput)
except slurm.SlurmError as err:
    sys.exit(f"slurm-accept.sh: {err}")
for p in slurm.partitions(inventory):
    for host in p.hosts:
        print(host, *p.access_options)
PY
while read -r node access; do
  mkdir -p "$RESULTS/$node/$run_id"
  # shellcheck disable=SC2086  # access: sbatch options, one word each
  srun $access --nodelist="$node" --nodes=1 --ntasks=1 --time=5 \
    "$VENV/bin/gpuaccept" facts --output "$RESULTS/$node/$run_id/node-facts.json" \
    || echo "$node: could not gather its facts (its verdict will say so)" >&2
done < "$work/nodes.txt"

# gpuaccept run owns ReFrame's command line (the suite's tag and options, the time limit) and judges: one
# verdict per node in $RESULTS/<node>/$run_id/, and with --drain each node's Slurm state set by its verdict.
"$VENV/bin/gpuaccept" run --suite "$suite" --slurm-inventory "$inv_json" --reframe-config "$work/reframe_settings.py" \
  --run-dir "$work" --reference-dir "$REFERENCE_DIR" --checks-dir "$checks" "${distribute[@]}" "${drain[@]}" \
  -- "$@" || true
echo
"$VENV/bin/gpuaccept" fleet "$RESULTS" --suite "$suite" --inventory "$inv_json" --output "$work/fleet.json"
