#!/usr/bin/env bash
# The passive GPU health check as a scheduler runs it (docs/fleet.md, "The node's lifecycle in Slurm";
# docs/checks/health.md, "node-problem-detector"): Slurm's HealthCheckProgram, Prolog and Epilog, and
# node-problem-detector's custom plugin all run a program without arguments, so the settings come from a file:
#   ${GPUACCEPT_HEALTH_CHECK_ENV:-/etc/gpuaccept/health-check.env}, shell assignments:
#     GPUACCEPT_VENV=/opt/gpuaccept/.venv     the tool environment (gpuaccept installed)
#     GPUACCEPT_NODE_TYPE=h200_x8             the node type (reference_values/<node type>.yaml)
#     GPUACCEPT_REFERENCE_DIR=...             optional: the reference files (default: the tool's own)
#     GPUACCEPT_STATE_DIR=/var/lib/gpuaccept/health-check   optional
#     GPUACCEPT_SLURM=1                       drain and resume the node in Slurm (gpuaccept health-check --slurm)
#     GPUACCEPT_HEALTH_CHECK_ARGS="..."       optional: more options (--expected-gpus 8, --first-since 24h)
# Exit status: the check's (0 ok, 1 problem, 2 unknown: node-problem-detector's contract), except with
# GPUACCEPT_SLURM=1, where it is 0 once the node's state says the outcome: slurmd drains a node whose Prolog or
# Epilog fails with a reason of its own ("Prolog error"), which gpuaccept would then never resume.
set -uo pipefail
conf=${GPUACCEPT_HEALTH_CHECK_ENV:-/etc/gpuaccept/health-check.env}
if [ -r "$conf" ]; then
  # shellcheck disable=SC1090  # the site's settings file
  . "$conf"
else
  echo "gpuaccept health-check: UNKNOWN: no settings file $conf (see scripts/health-check.sh)"
  exit 2
fi
: "${GPUACCEPT_VENV:?set in $conf}" "${GPUACCEPT_NODE_TYPE:?set in $conf}"
args=(health-check --node-type "$GPUACCEPT_NODE_TYPE")
[ -n "${GPUACCEPT_REFERENCE_DIR:-}" ] && args+=(--reference-dir "$GPUACCEPT_REFERENCE_DIR")
[ -n "${GPUACCEPT_STATE_DIR:-}" ] && args+=(--state-dir "$GPUACCEPT_STATE_DIR")
[ "${GPUACCEPT_SLURM:-0}" = 1 ] && args+=(--slurm)
# shellcheck disable=SC2206  # GPUACCEPT_HEALTH_CHECK_ARGS: options, one word each
args+=(${GPUACCEPT_HEALTH_CHECK_ARGS:-})
"$GPUACCEPT_VENV/bin/gpuaccept" "${args[@]}"
status=$?
if [ "${GPUACCEPT_SLURM:-0}" = 1 ] && [ "$status" -le 2 ]; then exit 0; fi
exit "$status"
