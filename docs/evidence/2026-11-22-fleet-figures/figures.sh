#!/usr/bin/env bash
# Issue 6 figures (fleet side), measured on the CPU machine this runs on (no GPU needed):
#   1. wall time of a second (idempotent) playbook run on localhost: playbooks/commission.yml against
#      inventories/local, everything but the suite run (--skip-tags gpuaccept_suite_run, which runs benchmarks
#      and so always changes something), in a scratch project root as tests/ansible/run_checks.sh does; the first
#      run installs the tool environment, the second must change nothing; both timed, three second runs;
#   2. and 3.: figures.py (10,000 results into metrics; series per node).
# Usage: docs/evidence/2026-11-22-fleet-figures/figures.sh [VENV]   (writes its outputs beside itself)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
venv=$(cd "${1:-$repo/.venv}" && pwd)
cd "$repo"
export PATH="$venv/bin:$PATH" LC_ALL=C.UTF-8 ANSIBLE_CONFIG="$repo/ansible.cfg" ANSIBLE_NOCOLOR=1
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpuaccept-figures.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/reference_values"
cp reference_values/*.yaml "$scratch/reference_values/"
# The machine has no GPU: the same GPU-less node type as tests/ansible/run_checks.sh.
sed -n "/^cat > \"\$scratch\/reference_values\/ci_no_gpu.yaml\" <<'YAML'$/,/^YAML$/p" tests/ansible/run_checks.sh \
  | sed '1d;$d' > "$scratch/reference_values/ci_no_gpu.yaml"
playbook=(ansible-playbook -i inventories/local playbooks/commission.yml -e "gpuaccept_root=$scratch/root"
          -e "gpuaccept_reframe_reference_dir=$scratch/reference_values" --skip-tags gpuaccept_suite_run)
{
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -r)"
  echo "ansible: $(ansible-playbook --version | head -1)"
  echo "command: ${playbook[*]}"
  t0=$(date +%s.%N); "${playbook[@]}" > "$here/run1.log" 2>&1; t1=$(date +%s.%N)
  echo "run 1 (installs the tool environment): $(echo "$t1 - $t0" | bc) s; $(grep -E ' : ok=' "$here/run1.log")"
  for i in 2 3 4; do
    t0=$(date +%s.%N); "${playbook[@]}" > "$here/run$i.log" 2>&1; t1=$(date +%s.%N)
    echo "run $i (idempotent): $(echo "$t1 - $t0" | bc) s; $(grep -E ' : ok=' "$here/run$i.log")"
  done
} | tee "$here/playbook_runs.txt"
sed -i "s|$scratch|<scratch>|g" "$here"/run*.log "$here/playbook_runs.txt"
"$venv/bin/python" "$here/figures.py" | tee "$here/figures.json"
