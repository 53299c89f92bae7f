#!/usr/bin/env bash
# On a lent GPU machine (no network): the gpuaccept_cuda_samples role for real, through ansible-playbook on
# localhost: archives checked against their sha256, unpacked, nvbandwidth and p2pBandwidthLatencyTest built with
# CMake, then the cross-check beside gpuaccept-bw; a second run without the cross-check must change nothing; a
# third full run repeats the cross-check. Differences from a site install, all through role variables: Boost comes
# from Debian 12's .debs unpacked into /tmp (the machine has no Boost and no network; install_deps false), the
# CUDA samples archive is a subset of the v13.0 tag (Common/ and the sample, made with git archive: the local
# mirror of the repository lacks a blob of an unrelated sample) with its own sha256, and gpuaccept runs from the
# source tree (python3 -m gpuaccept) with the carried wheels. Read-only towards the GPU.
# Carried: .whl (cp312 wheels of requirements/tools.txt), XC (default .xc: the archives and boost/*.deb).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
XC=$(cd "${XC:-.xc}" && pwd)
exec > >(tee "$OUT/role.log") 2>&1
date -u; echo "revision $(cat .gitrev 2>/dev/null)"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PATH=/tmp/site/bin:$PATH LC_ALL=C.UTF-8 ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_NOCOLOR=1
rm -rf /tmp/xc && mkdir -p /tmp/xc/boost && for d in "$XC"/boost/*.deb; do dpkg -x "$d" /tmp/xc/boost; done
t0=$SECONDS
make -C reframe_checks/src -j 16 BUILD_DIR=/tmp/xc/b-bw GIT_REV="$(cat .gitrev 2>/dev/null || echo unknown)" \
  CUDA_ARCH=-gencode=arch=compute_90,code=sm_90 /tmp/xc/b-bw/gpuaccept-bw >/tmp/xc/bw-build.log 2>&1
echo "gpuaccept-bw build rc=$? ($((SECONDS - t0)) s)"
cat > /tmp/xc/vars.json <<JSON
{"gpuaccept_test_role": "gpuaccept_cuda_samples", "gpuaccept_root": "/tmp/g6",
 "gpuaccept_cuda_samples_install_deps": false,
 "gpuaccept_cuda_samples_cmake_args": ["-DCMAKE_PREFIX_PATH=/tmp/xc/boost/usr"],
 "gpuaccept_cuda_samples_cuda_architectures": "90",
 "gpuaccept_cuda_samples_nvbandwidth_archive": "$XC/nvbandwidth-0.8.tar.gz",
 "gpuaccept_cuda_samples_samples_archive": "$XC/cuda-samples-13.0-p2p.tar.gz",
 "gpuaccept_cuda_samples_samples_sha256": "4c4cf585c4da6002df52d94453c94bd4678c646aefc638fdf9252c5067f60e1b",
 "gpuaccept_cuda_samples_bw_bin": "/tmp/xc/b-bw/gpuaccept-bw",
 "gpuaccept_cuda_samples_gpuaccept": ["python3", "-m", "gpuaccept"]}
JSON
pb=(ansible-playbook -i inventories/local tests/ansible/apply_role.yml -e @/tmp/xc/vars.json)
for step in "1 full" "2 skip-run" "3 full"; do
  t0=$SECONDS
  if [ "${step#* }" = skip-run ]; then "${pb[@]}" --skip-tags gpuaccept_cuda_samples_run; else "${pb[@]}"; fi
  echo "run ${step}: exit $?, wall $((SECONDS - t0)) s"
done
(cd /tmp/g6 && tar czf "$OUT/role-results.tar.gz" results)
date -u
