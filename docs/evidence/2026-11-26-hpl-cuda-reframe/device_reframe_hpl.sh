#!/bin/bash
# HPL-CUDA the way an operator without Ansible runs it: `gpuaccept run --suite commission -- -n '^GpuHplCuda$'`
# on the GPU machine, with the xhpl that device_hpl_grid.sh builds (BUILD_ONLY=1) standing for the gpuaccept_hpl
# role's build (same sources, same Make.gpuaccept, same link) and a descriptor written as the role writes it.
# The check sweeps NB and depth, sizes N from the GPUs' memory, runs xhpl one rank per GPU, and gpuaccept judges
# the run against the node type's references. Carried: .devq/ (HPL's tarball, the MKL subset) and .devq/whl/
# (cp312 wheels of reframe-hpc 4.10.4 and its dependencies, pinned as in requirements/tools.txt).
# Usage: NODE_TYPE=h100_sxm5_80gb bash docs/evidence/2026-11-26-hpl-cuda-reframe/device_reframe_hpl.sh
set -uo pipefail
REPO=$PWD; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; NODE_TYPE=${NODE_TYPE:-auto}
exec > >(tee -a "$OUT/console.log") 2>&1
echo "== $(date -u +%FT%TZ) $(cat .devq/gitrev 2>/dev/null)"
BUILD_ONLY=1 OUT=$OUT/build bash docs/evidence/2026-11-26-hpl-grid/device_hpl_grid.sh > /dev/null || { echo "build failed"; tail -20 "$OUT/build/build.log"; exit 1; }
XHPL=/tmp/hplgpu/hpl/bin/gpuaccept/xhpl
python3 -m pip install --quiet --no-index --no-deps --target /tmp/rfm .devq/whl/*.whl || exit 1
export PYTHONPATH=/tmp/rfm:$REPO/src PATH=/tmp/rfm/bin:$PATH LC_ALL=C.UTF-8
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
python3 - "$XHPL" "$REPO" > /tmp/gpuaccept-hpl-cuda.json <<'PY'
import json, sys
xhpl, repo = sys.argv[1], sys.argv[2]
print(json.dumps({"kind": "source", "variant": "cuda", "blas": "custom", "cpu_blas": "/tmp/hplgpu/lib/libgpuaccept-mklblas.so",
                  "binary": xhpl, "env": {},
                  "hpl": "netlib HPL 2.3 driver + gpuaccept GPU-resident HPL_pdmatgen/HPL_pdgesv (cuSOLVER, cuBLAS)",
                  "command": ["mpirun", "--bind-to", "none", "-np", "{ranks}", f"{repo}/roles/gpuaccept_hpl/files/gpuaccept-hpl-rank.sh", xhpl]},
                 indent=2))
PY
export GPUACCEPT_HPL_CUDA_DESCRIPTOR=/tmp/gpuaccept-hpl-cuda.json
python3 -m gpuaccept facts --output /tmp/facts.json 2>/dev/null || python3 -m gpuaccept facts > /tmp/facts.json
python3 -m gpuaccept reframe-config --output /tmp/settings.py --node-type "$NODE_TYPE" --facts /tmp/facts.json --bench-dir /tmp/bench
s=$SECONDS
python3 -m gpuaccept run --suite commission --results "$OUT/results" --node-type "$NODE_TYPE" --facts /tmp/facts.json \
  --reframe-config /tmp/settings.py --reframe /tmp/rfm/bin/reframe -- -n '^GpuHplCuda$'
echo "gpuaccept run: exit $? in $((SECONDS - s)) s"
for d in "$OUT"/results/*/*/; do
  python3 -c "
import json, sys
v = json.load(open(sys.argv[1] + 'verdict.json'))
for r in v['rows']:
    if r['check'] == 'hpl_cuda': print(r['check'], r.get('metric'), r['status'], r.get('value'), r.get('reason', '')[:200])
" "$d" 2>&1 | head -20
  find "$d" -name 'HPL*.out' -path '*output*' | while read -r f; do echo "-- $f"; grep -E '^WR|PASSED|FAILED' "$f"; done
done
echo "== done $(date -u +%FT%TZ)"
cd "$OUT" && tar czf /tmp/results.tar.gz --exclude='*/stage/*' results build && mv /tmp/results.tar.gz . && rm -rf results build
