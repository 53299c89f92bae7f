#!/usr/bin/env bash
# The evaluation suite timed end to end on a lent GPU machine, as an operator runs it: `make accept
# SUITE=evaluation` from a bare machine (the tool environment from a carried wheelhouse, every build, the suite,
# the verdict), with HPL 2.3's source, Intel MKL (the BLAS subset of scripts/mkl-blas-subset.sh), OpenMM and
# NAMD's APOA1 input set given, so that every check that can run there runs (NAMD itself is not carried: its
# licence forbids it, so namd_apoa1 and namd_stmv are NOT RUN, as on any node without NAMD installed).
# The suite outlives one call of the device tool (600 s), so it runs in the background and later calls wait:
#
#   OUT=... bash docs/evidence/2026-11-28-evaluation/device_evaluation.sh PHASE...
#
# Phases:
#   setup   the node's description, the tool environment's MKL BLAS subset and headers, OpenMM 8.6.1 (with the
#           machine's numpy and the CUDA 13 runtime, NVRTC and cuFFT of the machine's PyTorch wheels, as
#           docs/evidence/2026-11-23-h100-evaluation/setup.sh did), the playbook's extra variables
#   start   GPUACCEPT_REPEAT=${REPEAT:-1} make accept SUITE=evaluation, detached (setsid), with nvidia-smi's
#           1 s readings beside it; its console in $W/evaluation.log, its wall time in $W/walls.txt at the end
#   wait    until it ends or BUDGET (seconds, default 560) is spent; prints the newest progress lines
#   pack    the logs and the run directory (stage trees left out) into $OUT
# Read-only towards the GPUs' settings; NCCL_NVLS_ENABLE=0 in this environment, inherited by every process.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; BUDGET=${BUDGET:-560}; T0=$SECONDS
R=$PWD; W=/tmp/gpuaccept-w; mkdir -p "$W"
export LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_DEVICE_ORDER=PCI_BUS_ID
left() { echo $(( BUDGET - (SECONDS - T0) )); }
step() { echo "[$(date -u +%T) +$((SECONDS - T0))s] $*"; }
REV=$(cat .carry/gitrev 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
HPL_SHA256=d09c2c708becc4eaa9bd652115243f603fc4f715483bf26dd6b1bd07259ef459
APOA1_SHA256=fe30322cc94d93dff6c4e517d28584c48d0d0a1a7b23e2cd74cdb36d03863b22

phase_setup() {
  { echo "revision $REV; $(date -u +%FT%TZ)"; uname -r; nproc; free -g | head -2
    grep -m1 "model name" /proc/cpuinfo; systemd-detect-virt 2>/dev/null || true
    nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id,serial,vbios_version,driver_version,power.limit,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max,persistence_mode,ecc.mode.current --format=csv
    nvidia-smi topo -m; } > "$W/machine.txt" 2>&1
  cp .carry/gitrev .gitrev 2>/dev/null
  echo "$HPL_SHA256  .carry/hpl-2.3-icl-utk-edu.tar.gz" | sha256sum -c - || return 1
  echo "$APOA1_SHA256  .carry/apoa1.tar.gz" | sha256sum -c - || return 1
  [ -x .venv/bin/python ] || python3 -m venv .venv
  mkdir -p .venv/lib .venv/include
  [ -f .venv/lib/libgpuaccept-mklblas.so ] || xz -dc .carry/libgpuaccept-mklblas.so.xz > .venv/lib/libgpuaccept-mklblas.so
  [ -f .venv/include/mkl.h ] || tar xJf .carry/mkl-include.tar.xz -C .venv
  # OpenMM: its two wheels, the machine's numpy (a .pth naming a folder that holds only numpy) and NVIDIA's CUDA 13
  # runtime, NVRTC and cuFFT from the machine's PyTorch wheels (a folder of links to those libraries alone)
  local site nv
  site=$(python3 -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
  nv=$site/nvidia; mkdir -p "$W/mdlib" "$W/npsite"
  for pat in 'libcudart.so*' 'libnvrtc*.so*' 'libcufft.so*' 'libnvJitLink.so*'; do
    find "$nv" -name "$pat" -exec ln -sf {} "$W/mdlib/" \;
  done
  ln -sfn "$site/numpy" "$W/npsite/numpy"
  [ -d "$site/numpy.libs" ] && ln -sfn "$site/numpy.libs" "$W/npsite/numpy.libs"
  .venv/bin/python -m pip install -q --no-index --no-deps .carry/openmm-*.whl .carry/openmm_cuda_13-*.whl
  echo "$W/npsite" > "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/gpuaccept-machine-numpy.pth"
  LD_LIBRARY_PATH=$W/mdlib .venv/bin/python -c 'import numpy, openmm as o; print("numpy", numpy.__version__, "openmm", o.__version__, [o.Platform.getPlatform(i).getName() for i in range(o.Platform.getNumPlatforms())], o.Platform.getPluginLoadFailures())' >> "$W/machine.txt" 2>&1
  cat > "$W/extra-vars.yml" <<YML
gpuaccept_hpl_source_path: $R/.carry/hpl-2.3-icl-utk-edu.tar.gz
gpuaccept_hpl_source_sha256: $HPL_SHA256
gpuaccept_hpl_source_blas: custom
gpuaccept_hpl_custom_blas_lib: $R/.venv/lib/libgpuaccept-mklblas.so
gpuaccept_md_apoa1_archive:
  src: $R/.carry/apoa1.tar.gz
  sha256: $APOA1_SHA256
gpuaccept_md_required: true
YML
  echo "GPUACCEPT_REPEAT=${REPEAT:-1} WHEELHOUSE=.whl LD_LIBRARY_PATH=<the OpenMM libraries> make accept SUITE=evaluation 'ANSIBLE_ARGS=-e @extra-vars.yml'" > "$W/command.txt"
  tail -2 "$W/machine.txt"
}

phase_start() {
  [ -f "$W/extra-vars.yml" ] || { echo "run setup first"; return 1; }
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw,clocks.sm,memory.used,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > "$W/nvidia-smi.csv" 2>&1 &
  echo $! > "$W/smi.pid"
  date +%s.%N > "$W/t0"
  setsid nohup env LD_LIBRARY_PATH="$W/mdlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GPUACCEPT_REPEAT="${REPEAT:-1}" \
    WHEELHOUSE=.whl bash -c "make accept SUITE=evaluation 'ANSIBLE_ARGS=-e @$W/extra-vars.yml' > $W/evaluation.log 2>&1; \
    echo \"\$(date -u +%FT%TZ) make accept SUITE=evaluation (GPUACCEPT_REPEAT=${REPEAT:-1}): wall \$(python3 -c \"import time; print(round(time.time() - \$(cat $W/t0), 1))\") s; \$(tail -1 $W/evaluation.log)\" >> $W/walls.txt; \
    kill \$(cat $W/smi.pid) 2>/dev/null; touch $W/done" > /dev/null 2>&1 < /dev/null &
  step "started (pid $!)"
}

phase_wait() {
  while [ ! -f "$W/done" ] && [ "$(left)" -gt 15 ]; do sleep 10; done
  find results -name progress.log -newer "$W/t0" -exec tail -n 4 {} \; 2>/dev/null
  ls -ld md/apoa1 hpl 2>&1 | head -3
  if [ -f "$W/done" ]; then cat "$W/walls.txt"; else step "still running"; fi
}

phase_pack() {
  local tag; tag=$(date -u +%H%M%S)
  nvidia-smi -q > "$W/nvidia-smi-q-after.txt" 2>&1
  tar czf "$OUT/results-$tag.tar.gz" --exclude='*/stage/*' results 2>/dev/null
  tar czf "$OUT/logs-$tag.tar.gz" -C "$W" --exclude=mdlib --exclude=npsite --exclude='*.pid' --exclude=t0 .
  ls -la "$OUT"
}

for p in "$@"; do
  step "$p"
  case $p in
    setup) phase_setup ;; start) phase_start ;; wait) phase_wait ;; pack) phase_pack ;;
    *) echo "unknown phase $p"; exit 4 ;;
  esac
done
step "done"
