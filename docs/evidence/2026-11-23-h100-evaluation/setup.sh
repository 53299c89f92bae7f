# Sourced by a.sh and b.sh: the tool environment and the site files for `make accept` on the lent GPU machine.
#   - the tool environment from the carried cp312 wheelhouse (requirements/tools.txt, every sha256 checked), and
#     OpenMM 8.6.1 (openmm, openmm-cuda-13 wheels); OpenMM uses the machine's numpy 2 (a .pth file naming a
#     folder that holds only numpy) and NVIDIA's CUDA 13 runtime, NVRTC and cuFFT libraries of the machine's torch
#     wheels (a folder of links to those libraries alone on LD_LIBRARY_PATH, so that the benchmarks keep the
#     toolkit's cuBLAS): NVIDIA's wheels of requirements/md.txt are too large to carry;
#   - Intel MKL as the BLAS subset scripts/mkl-blas-subset.sh links from PyPI's mkl-static 2024.2.2 (in
#     <venv>/lib) with mkl-include 2024.2.2's headers (in <venv>/include): the host GEMM and HPL 2.3 link it;
#   - HPL 2.3's source (shared/artifacts, sha256-pinned) for the gpuaccept_hpl role (host HPL and HPL-CUDA);
#   - the APOA1 input set (shared/data, sha256-pinned) for the gpuaccept_md role;
#   - NCCL from the machine's nvidia-nccl-cu13 wheel for gpuaccept-nccl.
# Read-only towards the GPU's settings.
set -u
R=$PWD; C=$R/.devq/a; BUDGET=${BUDGET:-580}
W=/tmp/w; mkdir -p "$W"
T0=$SECONDS; left() { echo $(( BUDGET - (SECONDS - T0) )); }
export LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step() { echo "[$(date -u +%T) +$((SECONDS - T0))s] $*"; }
pack() { tar czf "$OUT/out.tar.gz" --exclude='*/stage/*' -C "$W" . 2>/dev/null; }
[ -d .git ] && mv .git /tmp/stale-git.$$   # a stale copy may be left there: the carried revision file counts
cp "$C/gitrev" .gitrev
nvidia-smi --query-gpu=timestamp,utilization.gpu,power.draw,clocks.sm,memory.used,temperature.gpu,clocks_event_reasons.active --format=csv -l 1 > "$W/nvidia-smi.csv" 2>&1 &
SMI=$!
{
  echo "revision $(cat .gitrev)"; date -u; uname -a; nproc; free -g | head -2
  nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id,driver_version,power.limit,clocks.max.sm,persistence_mode,ecc.mode.current --format=csv
  command -v python3; python3 --version; command -v mpicc mpirun; ls /usr/local/cuda/lib64/libnvblas.so*
} > "$W/machine.txt" 2>&1
SITE=$(python3 -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))')
NV=$SITE/nvidia
mkdir -p /tmp/mdlib /tmp/npsite
for pat in 'libcudart.so*' 'libnvrtc*.so*' 'libcufft.so*' 'libnvJitLink.so*'; do
  find "$NV" -name "$pat" -exec ln -sf {} /tmp/mdlib/ \;
done
ln -sf "$SITE/numpy" /tmp/npsite/numpy
[ -d "$SITE/numpy.libs" ] && ln -sf "$SITE/numpy.libs" /tmp/npsite/numpy.libs
NCCL=$(find "$NV" -name nccl.h -path '*include*' | head -1); NCCL=${NCCL%/include/nccl.h}
export LD_LIBRARY_PATH=/tmp/mdlib:$NCCL/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 -m venv .venv
.venv/bin/python -m pip install -q --no-index --no-deps "$C"/whl/openmm-*.whl "$C"/whl/openmm_cuda_13-*.whl
echo /tmp/npsite > "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/gpuaccept-machine-numpy.pth"
mkdir -p .venv/lib .venv/include /tmp/mklinc
xz -dc "$C/mklblas.so.xz" > .venv/lib/libgpuaccept-mklblas.so
python3 -m zipfile -e "$C"/mkl_include-2024.2.2-*.whl /tmp/mklinc
cp -r /tmp/mklinc/mkl_include-2024.2.2.data/data/include/. .venv/include/
{
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ls -l /tmp/mdlib /tmp/npsite
  sha256sum .venv/lib/libgpuaccept-mklblas.so "$C"/*.tar.gz "$C"/*.whl
  .venv/bin/python -c 'import numpy, openmm as o, openmm.app; print("numpy", numpy.__version__, "openmm", o.__version__, [o.Platform.getPlatform(i).getName() for i in range(o.Platform.getNumPlatforms())], o.Platform.getPluginLoadFailures())'
} >> "$W/machine.txt" 2>&1
cat > "$W/extra-vars.yml" <<YML
gpuaccept_hpl_source_path: $C/hpl-2.3-icl-utk-edu.tar.gz
gpuaccept_hpl_source_sha256: d09c2c708becc4eaa9bd652115243f603fc4f715483bf26dd6b1bd07259ef459
gpuaccept_hpl_source_blas: custom
gpuaccept_hpl_custom_blas_lib: $R/.venv/lib/libgpuaccept-mklblas.so
gpuaccept_md_apoa1_archive:
  src: $C/apoa1.tar.gz
  sha256: fe30322cc94d93dff6c4e517d28584c48d0d0a1a7b23e2cd74cdb36d03863b22
gpuaccept_md_required: true
gpuaccept_bench_nccl_home: $NCCL
gpuaccept_suite_repeat: 1
YML
step "set-up done"; tail -3 "$W/machine.txt"
