#!/usr/bin/env bash
# Issue 14/15 references on the lent H100: the set-up playbook (make accept SUITE=evaluation without the suite
# and without the benchmarks it does not need), then RUNS runs of md_apoa1_x12 and hpl_cuda through `gpuaccept run`
# (ReFrame, the role's configuration), for `gpuaccept baseline`.
source .devq/a/setup.sh
exec > >(tee "$W/console.log") 2>&1
cmd=(make accept SUITE=evaluation "ANSIBLE_ARGS=-e @$W/extra-vars.yml --skip-tags gpuaccept_suite,gpuaccept_bench")
echo "WHEELHOUSE=$C/whl ${cmd[*]}" > "$W/setup.cmd"
WHEELHOUSE=$C/whl timeout -k 10 240 "${cmd[@]}" > "$W/setup.log" 2>&1
step "set-up playbook: exit $?"; tail -3 "$W/setup.log"; pack
i=0
while [ "$(left)" -gt "${RESERVE:-110}" ] && [ "$i" -lt "${RUNS:-5}" ]; do
  i=$((i + 1))
  c=(.venv/bin/gpuaccept run --suite evaluation --results "$W/results" --reframe-config "$R/build/reframe_settings.py" -- -n 'MdApoa1.*apoa1_x12|GpuHplCuda')
  echo "${c[*]}" >> "$W/runs.cmd"
  step "run $i"
  timeout -k 10 $(( $(left) - 15 )) "${c[@]}" > "$W/run-$i.log" 2>&1
  echo "run $i: exit $?" | tee -a "$W/run-$i.log"; grep -E "^(md_apoa1_x12|hpl_cuda) +(ns_per_day|tflops|-) " "$W/run-$i.log"
  pack
done
kill "$SMI" 2>/dev/null; step end; cp "$W/console.log" "$OUT/console.log"; pack
