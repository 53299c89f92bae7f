#!/usr/bin/env bash
# issue 17 (security): the GPU benchmarks and the health probe run unprivileged on the H100, with no capability;
# the kernel log comes from the unit's root step; a secret on a foreign GPU process's command line reaches no file.
set -u
exec > >(tee "$O/run.log") 2>&1
echo "== who and what"
id; uname -r; date -u
ls -l /dev/nvidia* 2>&1
grep -i nvidia /proc/devices
sysctl kernel.dmesg_restrict 2>&1
command -v journalctl dmesg setpriv python3
W=/tmp/sec-unpriv
rm -rf "$W"; mkdir -p "$W/out"
cp -r "$P/bin" "$P/src" "$P/reference_values" "$P/gpuaccept-kernel-log" "$W/"
chmod -R a+rX "$W"; chmod 0777 "$W/out"
# The unit's user: here nobody (uid 65534), with the groups that own /dev/nvidia* (none where they are 0666),
# no capability in any set, no new privileges: what gpuaccept-nightly.service gives its user.
groups=$(stat -c %g /dev/nvidia* 2>/dev/null | sort -u | grep -vx 0 | paste -sd, -)
if [ "$(id -u)" = 0 ]; then
  U=(setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all)
  [ -n "$groups" ] && U=(setpriv --reuid=65534 --regid=65534 "--groups=$groups" --no-new-privs --inh-caps=-all --bounding-set=-all)
else
  U=()
  echo "note: run.sh is not root here; everything below already runs unprivileged"
fi
echo "unprivileged runner: ${U[*]:-(already unprivileged)}"
"${U[@]}" sh -c 'id; grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb)" /proc/self/status; grep NoNewPrivs /proc/self/status'
echo "== the kernel log, unprivileged (dmesg_restrict) vs the root step"
"${U[@]}" dmesg 2>&1 | tail -n 2; echo "dmesg as the user: exit ${PIPESTATUS[0]}"
"${U[@]}" journalctl -k -b -n 2 --no-pager 2>&1 | tail -n 3
if [ "$(id -u)" = 0 ]; then
  sh "$W/gpuaccept-kernel-log" /tmp/sec-kernel.log 65534; echo "root step: exit $?"
  ls -l /tmp/sec-kernel.log; head -n 1 /tmp/sec-kernel.log; wc -l < /tmp/sec-kernel.log
fi
echo "== a foreign process (root) on the GPU with a secret in its arguments"
python3 -c 'import ctypes as C, time
c = C.CDLL("libcuda.so.1"); d = C.c_int(); x = C.c_void_p(); p = C.c_void_p()
assert c.cuInit(0) == 0 and c.cuDeviceGet(C.byref(d), 0) == 0 and c.cuDevicePrimaryCtxRetain(C.byref(x), d) == 0
assert c.cuCtxSetCurrent(x) == 0 and c.cuMemAlloc_v2(C.byref(p), C.c_size_t(1 << 26)) == 0
print("foreign process ready", flush=True); time.sleep(40)' --api-key=SECRETTOKEN-17c0de &
fpid=$!
for _ in $(seq 1 30); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qw "$fpid" && break; sleep 0.5; done
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
echo "== gpuaccept health as the user"
"${U[@]}" env -i PATH=/usr/bin:/bin LC_ALL=C.UTF-8 HOME=/tmp PYTHONPATH="$W/src" GPUACCEPT_KERNEL_LOG=/tmp/sec-kernel.log \
  sh -c 'umask 0027; cd /tmp && timeout 60 python3 -m gpuaccept health --reference-dir "$0/reference_values" --node-type h100_sxm5_80gb --quick --output "$0/out/health.json"' "$W"
echo "health exit $?"
echo "== the benchmarks as the user"
"${U[@]}" env -i PATH=/usr/bin:/bin:/usr/local/cuda/bin LC_ALL=C HOME=/tmp sh -c 'umask 0027; timeout 60 "$0/bin/gpuaccept-gemm" --quick --precisions fp64,bf16 --output "$0/out/gemm.json"' "$W" 2>&1 | tail -n 8
echo "gemm exit ${PIPESTATUS[0]}"
"${U[@]}" env -i PATH=/usr/bin:/bin LC_ALL=C HOME=/tmp sh -c 'umask 0027; timeout 60 "$0/bin/gpuaccept-bw" --quick --no-matrix --no-peer --cases h2d_pinned_oneway,d2h_pinned_oneway --output "$0/out/bw.json"' "$W" 2>&1 | tail -n 6
echo "bw exit ${PIPESTATUS[0]}"
kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null
echo "== the files: owner, mode; the secret nowhere"
ls -ln "$W/out"
if grep -rl SECRETTOKEN "$W/out" /tmp/sec-kernel.log; then echo "SECRET FOUND"; else echo "secret in no output file: ok"; fi
cp "$W"/out/*.json "$O/" 2>/dev/null
chmod a+r "$O"/*.json 2>/dev/null
python3 - "$W/out/health.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"]
print("kernel_log read_with:", r["kernel_log"]["read_with"], "| xid events:", len(r["kernel_log"]["xid_events"] or []))
for g in r["observations"]["gpus"]:
    print("processes:", g["processes"])
for f in r["findings"]:
    print("finding:", f["rule"], "|", f["message"])
print("metrics:", {k: v.get("value") for k, v in d["metrics"].items()})
PY
for f in gemm bw; do
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], {k: (v.get("value"), v.get("unit")) for k, v in d["metrics"].items()})' "$W/out/$f.json" 2>&1 | cut -c1-400
done
rm -f /tmp/sec-kernel.log
