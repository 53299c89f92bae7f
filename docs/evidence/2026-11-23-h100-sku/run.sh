#!/usr/bin/env bash
# nodetypes (issue 16): the GPU SKU as NVML reports it, and the node type the two-layer detection picks.
# Read-only: NVML and nvidia-smi queries only; nothing changes a GPU setting. About 10 s.
set -u
export LC_ALL=C.UTF-8 NCCL_NVLS_ENABLE=0
cd "$P"
{
  echo "# machine: $(hostname) $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# python: $(python3 --version 2>&1)"
  echo "# git revision of the carried src: $(cat "$P/REVISION")"
} | tee "$O/machine.txt"
# jsonschema for the reference validator (the tool environment pins it; this machine may not have it).
SITE=/tmp/nodetypes-site
if ! python3 -c "import jsonschema" 2>/dev/null; then
  python3 -m pip install --quiet --no-index --no-deps --target "$SITE" "$P"/wheels/*.whl >"$O/pip.log" 2>&1
  echo "installed jsonschema from carried wheels into $SITE" | tee -a "$O/machine.txt"
fi
export PYTHONPATH="$P/src:$SITE"
run() {  # run NAME CMD...: log the command, stdout and stderr, and the exit status
  local name=$1; shift
  echo "\$ $*" >"$O/$name.cmd"
  "$@" >"$O/$name.out" 2>"$O/$name.err"; local rc=$?
  echo "$rc" >"$O/$name.rc"
  echo "== $name (rc $rc): $*"; cat "$O/$name.out"; tail -5 "$O/$name.err"
}
run nvml_raw python3 "$P/nvml_raw.py"
run smi nvidia-smi --query-gpu=index,name,pci.device_id,pci.sub_device_id,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv
run facts python3 -m gpuaccept facts --output "$O/facts.json"
run references python3 -m gpuaccept references --reference-dir "$P/reference_values"
run detect python3 -m gpuaccept detect --facts "$O/facts.json" --reference-dir "$P/reference_values"
run detect_expect python3 -m gpuaccept detect --facts "$O/facts.json" --reference-dir "$P/reference_values" --expect h100_sxm5_80gb
run sku python3 "$P/sku_report.py" "$O/facts.json" "$P/reference_values"
echo
echo "== summary"
cat "$O/sku.out"
