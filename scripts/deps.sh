#!/usr/bin/env bash
# The system packages `make test` needs (Debian 12 / Ubuntu names), installed with apt-get: directly as root,
# through sudo otherwise. Where it cannot install (no apt-get, no root and no sudo, or --check), it prints
# every missing package in one message with the command that installs them, and exits 2.
# The Python packages are not here: scripts/venv.sh installs them into the tool environment.
#   scripts/deps.sh           install what is missing (what `make test` and .ci/run do first)
#   scripts/deps.sh --check   only list what is missing (exit 0 when nothing is)
#   scripts/deps.sh --list    print the package list
# To add a package: one line in PACKAGES below, with the test or tool that needs it.
set -euo pipefail

PACKAGES=(
  # The build and the tool environment
  make                      # make test itself; every benchmark's Makefile
  gcc                       # the C benchmarks and tests/native
  g++                       # the CUDA benchmarks' host code (nvcc calls it)
  git                       # the git revision in benchmark documents; tests/test_bundle.py
  ca-certificates           # pip over HTTPS (scripts/venv.sh)
  python3-venv              # Debian's python3 -m venv (scripts/venv.sh)
  python3-apt               # Ansible's apt module (tests/test_provision_roles.py, node_exporter role)
  systemd                   # systemd-analyze security on the nightly unit (tests/ansible/run_checks.sh)
  util-linux                # setpriv: the nightly runner as its unprivileged user (tests/ansible/run_checks.sh)
  # Host benchmarks
  libopenblas-dev           # the host GEMM's fallback BLAS (tests/test_build.py, with and without MKL)
  hpcc                      # the host HPL (tests/test_hpl.py, tests/test_reframe_cpu.py)
  openmpi-bin               # mpirun: the MPI check with several ranks on one host (tests/test_mpi.py)
  libopenmpi-dev            # mpicc and mpi.h for the MPI benchmark (tests/test_mpi.py)
  # Fabric
  perftest                  # ib_write_bw: the fabric runner against the real binary (tests/test_fabric.py); a
                            # Soft-RoCE loopback where the kernel has rdma_rxe (tests/test_fabric_softroce.py)
  # Metrics
  prometheus                # promtool and a real Prometheus (tests/test_exporter.py, test_prometheus_*.py)
  prometheus-node-exporter  # its textfile collector reads gpuaccept.prom (tests/test_exporter.py)
  prometheus-pushgateway    # the push for nodes without node_exporter (tests/test_pushgateway.py)
  # Reports
  chromium                  # the HTML report rendered headless, and --pdf (tests/test_report_browser.py)
  fonts-dejavu-core         # a font for Chromium to lay the report out with
  poppler-utils             # pdftotext: the printed report's first page read back (tests/test_report_browser.py)
  # Slurm
  slurmctld                 # a real Slurm on localhost for reframe --distribute (tests/test_slurm.py, as root)
  slurmd                    # its compute daemon (tests/test_slurm.py)
  slurm-client              # sinfo, sbatch, scontrol (tests/test_slurm.py)
)

case "${1:-}" in
  --list) printf '%s\n' "${PACKAGES[@]}"; exit 0 ;;
  --check | "") ;;
  *) echo "usage: scripts/deps.sh [--check | --list]" >&2; exit 2 ;;
esac

missing=()
if command -v dpkg-query >/dev/null; then
  for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
    [[ $status == ii* ]] || missing+=("$pkg")
  done
else
  missing=("${PACKAGES[@]}")
fi

# The CUDA toolkit is not a Debian package that gpuaccept can pin: it is NVIDIA's, installed by the site
# (or playbooks/provision.yml). Every CUDA source is compiled by the tests, so without nvcc they fail.
cuda_note=""
cuda=${CUDA_HOME:-/usr/local/cuda}
if ! command -v nvcc >/dev/null && [ ! -x "$cuda/bin/nvcc" ]; then
  cuda_note="no nvcc on PATH or in $cuda/bin: the tests compile every CUDA source, so install NVIDIA's CUDA toolkit (https://developer.nvidia.com/cuda-downloads, or playbooks/provision.yml) first"
fi

need_cuda() {
  if [ -n "$cuda_note" ]; then
    echo "deps.sh: $cuda_note" >&2
    exit 2
  fi
}

nvcc_path=$(command -v nvcc || echo "$cuda/bin/nvcc")
if [ ${#missing[@]} -eq 0 ]; then
  need_cuda
  echo "deps.sh: all ${#PACKAGES[@]} Debian packages the tests need are installed; CUDA toolkit: $nvcc_path"
  exit 0
fi

cannot_install() {  # $1: why
  echo "deps.sh: $1; missing ${#missing[@]} package(s): ${missing[*]}" >&2
  echo "deps.sh: install them with: sudo apt-get update && sudo apt-get install --no-install-recommends ${missing[*]}" >&2
  [ -z "$cuda_note" ] || echo "deps.sh: also $cuda_note" >&2
  exit 2
}

[ "${1:-}" != --check ] || cannot_install "--check"
command -v apt-get >/dev/null || cannot_install "no apt-get here (gpuaccept's tests are made on Debian 12)"
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
  sudo=(sudo)
else
  cannot_install "not root and no sudo to install with"
fi

log=$(mktemp "${TMPDIR:-/tmp}/gpuaccept-deps.XXXXXX")
echo "deps.sh: installing ${#missing[@]} Debian package(s) with apt-get: ${missing[*]} (log: $log)"
export DEBIAN_FRONTEND=noninteractive
if ! { "${sudo[@]}" apt-get update -q && "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
  >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  echo "deps.sh: apt-get failed (the whole log: $log)" >&2
  exit 2
fi
rm -f "$log"
need_cuda
echo "deps.sh: installed ${#missing[@]} package(s); all ${#PACKAGES[@]} the tests need are here; CUDA toolkit: $nvcc_path"
