#!/bin/bash
# On the device machine, from this branch's tree (carried as .wt/issue-3, with /work/main's .whl beside it at
# ../../.whl): the GpuHplStyle ReFrame check for real, with the power sampler (issue 4's `gpuaccept sample`),
# judged against reference_values/$NODE_TYPE.yaml: 5 repeats at the default size, then one run with
# --inject-error (a failed residual must fail the check). ReFrame configuration rendered from the
# gpuaccept_reframe role's template (as tests/rfm_support.py does), CUDA_ARCH sm_90 only. Results in $OUT/rfm.tar.gz.
#   NODE_TYPE (default h100_sxm5_80gb)  REPEAT (default 5)  INJECT (default 1)  REFDIR (default reference_values)
set -u
ROOT=$PWD; R=/tmp/rfm; mkdir -p $R
NODE_TYPE=${NODE_TYPE:-h100_sxm5_80gb}; REPEAT=${REPEAT:-5}; REFDIR=${REFDIR:-$ROOT/reference_values}
exec > >(tee $R/device.log) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ../../.whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$ROOT/src PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8
date -u; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv
python3 -m gpuaccept facts --output $R/node-facts.json || exit 1
render() { # run_dir
  python3 - "$1" "$NODE_TYPE" "$ROOT" "$R/node-facts.json" "$REFDIR" <<'PY'
import json, sys, jinja2, pathlib
run_dir, node_type, root, facts_file, refdir = sys.argv[1:]
facts = json.load(open(facts_file))
env = jinja2.Environment(undefined=jinja2.StrictUndefined)
env.filters["to_json"] = json.dumps
env.filters["comment"] = lambda t: "\n".join(f"# {l}" for l in str(t).splitlines())
extras = {"node_type": node_type, "reference_dir": refdir, "gpu_count": len(facts["gpus"]),
          "facts_file": facts_file, "cuda_arch": "-gencode=arch=compute_90,code=sm_90", "git_revision": "issue-3"}
text = env.from_string(pathlib.Path(f"{root}/roles/gpuaccept_reframe/templates/reframe_settings.py.j2").read_text()).render(
    ansible_managed="rendered by device_rfm.sh", inventory_hostname="device", _gpuaccept_reframe_node_type=node_type,
    _gpuaccept_reframe_facts_file=facts_file, _gpuaccept_reframe_gpus=facts["gpus"],
    _gpuaccept_reframe_extras=extras, _gpuaccept_reframe_nvcc="nvcc")
pathlib.Path(run_dir, "settings.py").write_text(text)
PY
}
suite() { # name, extra reframe args...
  local name=$1; shift; local d=$R/$name; mkdir -p $d; render $d
  (cd $d && reframe -C settings.py -c $ROOT/reframe_checks/hpl_checks.py -n 'GpuHplStyle|GpuHplNvidia' --prefix $d/reframe \
     --report-file $d/reframe-report.json --save-log-files "$@" -r > $d/reframe.log 2>&1; echo "reframe exit $?")
  python3 -m gpuaccept summarize --run-dir $d --node-type $NODE_TYPE --suite commission --facts $R/node-facts.json \
    --reference-dir $REFDIR --textfile-dir $d/textfile > $d/summary.txt 2>&1; echo "summarize exit $?"
  grep -E "hplstyle|energy|power|gflops_per" $d/summary.txt | head -20
  grep -E "PASSED|FAILED|FAIL|SanityError" $d/reframe.log | head -8
}
suite repeat --repeat $REPEAT
[ "${INJECT:-1}" = 1 ] && suite inject -S "bench_opts=--inject-error,--n,16384"
date -u
rm -rf $R/*/reframe/stage
tar -C /tmp -czf $OUT/rfm.tar.gz rfm
