#!/usr/bin/env bash
# Issues 14 and 15 on the lent H100: README command 1, `make accept SUITE=evaluation`, offline (set-up: setup.sh),
# judged against the references of revision .gitrev; then the GEMM cross-check against PyTorch with what time is
# left (gpuaccept-gemm as the role built it, alternating with PyTorch: 2 rounds, or 1).
source .devq/a/setup.sh
exec > >(tee "$W/console.log") 2>&1
cmd=(make accept SUITE=evaluation "ANSIBLE_ARGS=-e @$W/extra-vars.yml")
echo "WHEELHOUSE=$C/whl ${cmd[*]}" > "$W/accept.cmd"
step "${cmd[*]}"
WHEELHOUSE=$C/whl timeout -k 10 $(( $(left) - 25 )) "${cmd[@]}" > "$W/accept.log" 2>&1
echo "make accept SUITE=evaluation: exit $?, wall $((SECONDS - T0)) s since the script began" | tee -a "$W/accept.log"
cp -a results "$W/results"; pack
rounds=0; [ "$(left)" -gt 65 ] && rounds=1; [ "$(left)" -gt 130 ] && rounds=2
if [ "$rounds" -gt 0 ]; then
  mkdir -p "$W/xcheck"
  c=(python3 docs/evidence/crosscheck_gemm_torch.py --gemm-bin build/bench/gpuaccept-gemm --rounds "$rounds" --cooldown-s 0.5 --out-dir "$W/xcheck")
  echo "${c[*]}" > "$W/xcheck/crosscheck.cmd"; step "${c[*]}"
  timeout -k 5 $(( $(left) - 6 )) "${c[@]}" > "$W/xcheck/crosscheck.json" 2> "$W/xcheck/crosscheck.err"
  echo "cross-check: exit $?" | tee -a "$W/xcheck/crosscheck.err"
fi
kill "$SMI" 2>/dev/null; step end; cp "$W/console.log" "$OUT/console.log"; pack
