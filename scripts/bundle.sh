#!/usr/bin/env bash
# The air-gapped bundle. On a connected machine, one command builds DIR (default bundle/) with everything the
# playbooks install, each file checked against a pinned sha256, and DIR/SHA256SUMS over all of it:
#   wheelhouse/   every wheel of requirements/tools.txt and test.txt (+ mkl.txt with MKL=1), Python 3.11 and 3.12,
#                 each checked against the sha256 in requirements/*.txt (scripts/lock.sh)
#   sources/      NVIDIA's nvbandwidth and CUDA samples release archives (pins: roles/gpuaccept_cuda_samples),
#                 node_exporter's release archive (pin: roles/gpuaccept_node_exporter)
#   keys/         the signing keys of NVIDIA's CUDA repositories (pin: roles/gpuaccept_nvidia_driver)
#   packages/<distro>/  .deb or .rpm packages with a flat repository index (Packages / repodata), made with this
#                 machine's apt or dnf: only for the distribution this machine runs (see docs/airgapped.md)
#   gpuaccept-<rev>.tar.gz   this checkout (git archive), to unpack on the air-gapped controller
#   gpuaccept-bundle.yml     Ansible variables that point every role at the bundle (-e @DIR/gpuaccept-bundle.yml)
# On the air-gapped side: scripts/bundle.sh --verify DIR checks every file against DIR/SHA256SUMS.
#
# Usage: scripts/bundle.sh [DIR]            build (or complete) the bundle
#        scripts/bundle.sh --verify DIR     check it
# Environment: MKL=1 adds MKL's wheels; SOURCES_FROM=DIR takes the archives and keys from a local mirror instead of
# the internet; DEB_PACKAGES / RPM_PACKAGES the packages to mirror (default: the build dependencies, node_exporter;
# add NVIDIA's driver and toolkit packages with NVIDIA=1, which needs NVIDIA's repository configured here);
# SKIP="wheelhouse packages sources keys project" leaves parts out; TARBALL=1 also writes DIR.tar.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "bundle.sh: $*" >&2; exit 1; }
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }

if [ "${1:-}" = --verify ]; then
  dir=${2:?usage: $0 --verify DIR}
  [ -f "$dir/SHA256SUMS" ] || die "$dir/SHA256SUMS not found: not a bundle, or an unfinished one"
  if (cd "$dir" && sha256sum --quiet --strict -c SHA256SUMS); then
    echo "bundle $dir: $(wc -l < "$dir/SHA256SUMS") files, all match SHA256SUMS"
  else
    die "$dir: the files above do not match SHA256SUMS (damaged or changed in transit): copy the bundle again"
  fi
  # SHA256SUMS was written with the bundle; the wheels are also checked against this checkout's own pins.
  if [ -d "$dir/wheelhouse" ]; then
    scripts/lock.sh --check-wheels "$dir/wheelhouse" || die "$dir/wheelhouse holds wheels this checkout does not pin"
  fi
  exit 0
fi

dir=${1:-bundle}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# A pinned value from a role's defaults/main.yml (flat "name: value" lines).
pin() {
  local role=$1 name=$2 v
  v=$(sed -n "s/^${name}: *\"\{0,1\}\([^\"]*\)\"\{0,1\} *$/\1/p" "roles/$role/defaults/main.yml")
  [ -n "$v" ] || [ "${3:-}" = optional ] || die "no $name in roles/$role/defaults/main.yml"
  printf '%s' "$v"
}

# fetch URL FILE SHA256: download (or take from SOURCES_FROM) and check against the pin; never keep a bad file.
fetch() {
  local url=$1 out=$2 want=$3 got
  if [ -f "$out" ] && [ "$(sha256sum "$out" | cut -d' ' -f1)" = "$want" ]; then
    echo "  $(basename "$out"): present, checksum ok"
    return
  fi
  if [ -n "${SOURCES_FROM:-}" ]; then
    [ -f "$SOURCES_FROM/$(basename "$out")" ] || die "$SOURCES_FROM/$(basename "$out") not found (SOURCES_FROM)"
    cp "$SOURCES_FROM/$(basename "$out")" "$out.part"
  else
    curl -fsSL --retry 3 -o "$out.part" "$url" || die "cannot download $url"
  fi
  got=$(sha256sum "$out.part" | cut -d' ' -f1)
  if [ "$got" != "$want" ]; then
    rm -f "$out.part"
    die "$(basename "$out") from ${SOURCES_FROM:-$url} has sha256 $got, not the pinned $want: the mirror holds another file, or it was damaged; nothing kept"
  fi
  mv "$out.part" "$out"
  echo "  $(basename "$out"): sha256 $got ok"
}

vars=()   # lines of gpuaccept-bundle.yml

if ! skip wheelhouse; then
  echo "== wheelhouse"
  MKL=${MKL:-0} scripts/wheelhouse.sh "$dir/wheelhouse"
  vars+=("gpuaccept_toolenv_wheelhouse: \"{{ gpuaccept_bundle_dir }}/wheelhouse\"")
fi

if ! skip sources; then
  echo "== sources"
  mkdir -p "$dir/sources"
  v=$(pin gpuaccept_cuda_samples gpuaccept_cuda_samples_nvbandwidth_version)
  fetch "https://github.com/NVIDIA/nvbandwidth/archive/refs/tags/v$v.tar.gz" "$dir/sources/nvbandwidth-$v.tar.gz" \
    "$(pin gpuaccept_cuda_samples gpuaccept_cuda_samples_nvbandwidth_sha256)"
  vars+=("gpuaccept_cuda_samples_nvbandwidth_archive: \"{{ gpuaccept_bundle_dir }}/sources/nvbandwidth-$v.tar.gz\"")
  v=$(pin gpuaccept_cuda_samples gpuaccept_cuda_samples_samples_version)
  fetch "https://github.com/NVIDIA/cuda-samples/archive/refs/tags/v$v.tar.gz" "$dir/sources/cuda-samples-$v.tar.gz" \
    "$(pin gpuaccept_cuda_samples gpuaccept_cuda_samples_samples_sha256)"
  vars+=("gpuaccept_cuda_samples_samples_archive: \"{{ gpuaccept_bundle_dir }}/sources/cuda-samples-$v.tar.gz\"")
  # node_exporter: the role's pin (or NODE_EXPORTER_SHA256, a sha256 you checked); never the release's own
  # sha256sums.txt, which comes over the same channel as the archive and so proves nothing.
  v=$(pin gpuaccept_node_exporter gpuaccept_node_exporter_binary_version)
  ne=node_exporter-$v.linux-amd64.tar.gz
  want=${NODE_EXPORTER_SHA256:-$(pin gpuaccept_node_exporter gpuaccept_node_exporter_binary_sha256 optional)}
  [ -n "$want" ] || die "no pinned sha256 for $ne: set gpuaccept_node_exporter_binary_sha256 in roles/gpuaccept_node_exporter/defaults/main.yml (or NODE_EXPORTER_SHA256) to the sha256 you checked against the release's signed checksums, or SKIP=sources"
  fetch "https://github.com/prometheus/node_exporter/releases/download/v$v/$ne" "$dir/sources/$ne" "$want"
  vars+=("gpuaccept_node_exporter_binary_archive: \"{{ gpuaccept_bundle_dir }}/sources/$ne\""
         "gpuaccept_node_exporter_binary_sha256: $want")
fi

if ! skip keys; then
  echo "== NVIDIA repository keys"
  mkdir -p "$dir/keys"
  # The key's sha256 from the repository (gpuaccept_nvidia_driver_repo_key_sha256) or NVIDIA_KEY_SHA256: set it once
  # you have checked the key's fingerprint (gpg --show-keys; NVIDIA publishes it). A key is never trusted because
  # it was the first download.
  key=3bf863cc.pub
  want=${NVIDIA_KEY_SHA256:-$(pin gpuaccept_nvidia_driver gpuaccept_nvidia_driver_repo_key_sha256 optional)}
  [ -n "$want" ] || die "no pinned sha256 for NVIDIA's key $key: check its fingerprint, then set gpuaccept_nvidia_driver_repo_key_sha256 in roles/gpuaccept_nvidia_driver/defaults/main.yml (or NVIDIA_KEY_SHA256), or SKIP=keys"
  fetch "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/$key" "$dir/keys/$key" "$want"
  sum=$(sha256sum "$dir/keys/$key" | cut -d' ' -f1)
  for role in gpuaccept_nvidia_driver gpuaccept_cuda_toolkit; do
    vars+=("${role}_repo_key: \"{{ gpuaccept_bundle_dir }}/keys/$key\"" "${role}_repo_key_sha256: $sum")
  done
fi

if ! skip packages; then
  echo "== packages"
  # shellcheck disable=SC1091
  . /etc/os-release
  distro=$ID${VERSION_ID%%.*}
  if command -v apt-get >/dev/null; then
    pkgs=${DEB_PACKAGES:-libboost-program-options-dev cmake g++ make prometheus-node-exporter}
    [ "${NVIDIA:-0}" = 1 ] && pkgs+=" nvidia-driver-pinning-$(pin gpuaccept_nvidia_driver gpuaccept_nvidia_driver_branch) nvidia-open cuda-toolkit-$(pin gpuaccept_cuda_toolkit gpuaccept_cuda_toolkit_version | tr . -)"
    mkdir -p "$dir/packages/$distro"
    # The packages and everything they depend on (apt verified the archives' signatures when it downloaded them).
    # shellcheck disable=SC2086
    deps=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
      --no-enhances $pkgs | grep -E '^[a-zA-Z0-9]' | sort -u)
    # shellcheck disable=SC2086
    (cd "$dir/packages/$distro" && apt-get download $deps >/dev/null) || die "apt-get download failed (apt-get update?)"
    (cd "$dir/packages/$distro" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null > Packages \
      && gzip -9nkf Packages)
    echo "  $(find "$dir/packages/$distro" -name '*.deb' | wc -l) packages for $distro (flat repository: Packages)"
    if [ "${NVIDIA:-0}" = 1 ]; then
      for role in gpuaccept_nvidia_driver gpuaccept_cuda_toolkit; do
        vars+=("${role}_repo_url: \"file://{{ gpuaccept_bundle_dir }}/packages/$distro\"" "${role}_repo_trusted: true")
      done
    fi
  elif command -v dnf >/dev/null; then
    pkgs=${RPM_PACKAGES:-boost-devel boost-static cmake gcc-c++ make golang-github-prometheus-node-exporter}
    mkdir -p "$dir/packages/$distro"
    # shellcheck disable=SC2086
    dnf download -q --resolve --alldeps --destdir "$dir/packages/$distro" $pkgs || die "dnf download failed"
    createrepo_c -q "$dir/packages/$distro" || die "createrepo_c not found (dnf install createrepo_c)"
  else
    echo "  neither apt-get nor dnf here: no packages (build the bundle on the nodes' distribution)"
  fi
  echo "  (serve them to the nodes as a file:// or http:// repository: docs/airgapped.md)"
fi

if ! skip project; then
  echo "== project"
  rev=$(git rev-parse --short HEAD 2>/dev/null || cat .gitrev 2>/dev/null || echo unknown)
  if git rev-parse --git-dir >/dev/null 2>&1; then
    git -c tar.tar.gz.command="gzip -cn" archive --format=tar.gz --prefix="gpuaccept-$rev/" -o "$dir/gpuaccept-$rev.tar.gz" HEAD
    [ -z "$(git status --porcelain --untracked-files=no)" ] || echo "  note: uncommitted changes are not in gpuaccept-$rev.tar.gz"
  else
    tar czf "$dir/gpuaccept-$rev.tar.gz" --exclude=./bundle --exclude=./.venv --transform "s,^\.,gpuaccept-$rev," .
  fi
  echo "  gpuaccept-$rev.tar.gz"
fi

{
  echo "---"
  echo "# Written by scripts/bundle.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ): every role pointed at the bundle."
  echo "# Use: ansible-playbook ... -e @$(basename "$dir")/gpuaccept-bundle.yml -e gpuaccept_bundle_dir=/path/of/the/bundle"
  echo "# (the same path on the controller and on the nodes: docs/airgapped.md)."
  for line in "${vars[@]}"; do echo "$line"; done
} > "$dir/gpuaccept-bundle.yml"

echo "== SHA256SUMS"
(cd "$dir" && find . -type f ! -name SHA256SUMS ! -name '*.part' -print0 | sort -z | xargs -0 sha256sum > ../.SHA256SUMS.$$ \
  && mv ../.SHA256SUMS.$$ SHA256SUMS)
echo "bundle $dir: $(wc -l < "$dir/SHA256SUMS") files, $(du -sh "$dir" | cut -f1)"
if [ "${TARBALL:-0}" = 1 ]; then
  tar cf "$dir.tar" -C "$(dirname "$dir")" "$(basename "$dir")"
  echo "tarball: $dir.tar (sha256 $(sha256sum "$dir.tar" | cut -d' ' -f1))"
fi
