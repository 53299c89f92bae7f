#!/bin/bash
# Issue 26 item 7, second pass: the native tools before (c9deeb2, the build ../2026-11-26-native-dedup compared with
# c60e4c6) and after the usage text's common end, Json::kv_objects, one_gpu_tool_main and alloc_each (carried as
# .devq/src-old.tar and .devq/src-new.tar: `git archive <rev> reframe_checks/src`). First
# ../2026-11-26-native-dedup/device_dedup.sh as it is (bw, gemm, hplstyle, nccl, overlap, xgemm, old and new
# alternating, ROUNDS rounds, the error and output paths), then gpuaccept-fft, which needs a host FFT: both
# revisions built on the developer machine against Debian 12's FFTW 3.3.10 (FFT=fftw, stripped) and carried with
# its libraries in .devq/d2.tar.xz; each runs the check's quick sweep (points 2^12..2^22, cubes 16-128, 3
# repetitions, FFTW's planning held to 2 s a plan), old and new alternating, and compare_skeleton.py compares them.
# Usage: OUT=... ROUNDS=2 bash docs/evidence/2026-11-26-native-dedup2/device_dedup2.sh
#   (carry .devq/src-old.tar, .devq/src-new.tar, .devq/gitrev, .devq/d2.tar.xz)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; REPO=$PWD; ROUNDS=${ROUNDS:-2}
OUT=$OUT ROUNDS=$ROUNDS bash docs/evidence/2026-11-26-native-dedup/device_dedup.sh > /dev/null 2>&1
echo "device_dedup.sh: exit $?"
exec > >(tee -a "$OUT/console-fft.log") 2>&1
tar xJf .devq/d2.tar.xz -C .devq || exit 1
export LD_LIBRARY_PATH=$REPO/.devq/d2/lib LC_ALL=C
FFT_OPTS=(--gpu 0 --points 4096,16384,65536,262144,1048576,4194304 --cubes 16,32,64,128 --reps 3 --plan-time-limit-s 2)
for round in $(seq 1 "$ROUNDS"); do
  for rev in old new; do
    o="$OUT/fft-round$round/$rev"; mkdir -p "$o"
    .devq/d2/gpuaccept-fft-$rev "${FFT_OPTS[@]}" --output "$o/fft.json" > "$o/fft.out" 2> "$o/fft.err"
    echo "fft-round$round $rev fft rc=$?" | tee -a "$OUT/rc.txt"
  done
done
for rev in old new; do
  mkdir -p "$OUT/paths/$rev"
  CUDA_VISIBLE_DEVICES= .devq/d2/gpuaccept-fft-$rev --cubes 16 --output "$OUT/paths/$rev/nogpu_fft.json" > /dev/null 2>&1
  echo "paths $rev fft no visible GPU rc=$? (1 expected)" | tee -a "$OUT/rc.txt"
done
COMPARE="$REPO/docs/evidence/2026-11-26-native-skeleton/compare_skeleton.py"
for dir in $(cd "$OUT" && ls -d fft-round*); do
  echo "#### $dir" | tee -a "$OUT/compare.txt"
  python3 "$COMPARE" "$OUT/$dir/old" "$OUT/$dir/new" | tee -a "$OUT/compare.txt"
done
echo "#### paths (fft)" | tee -a "$OUT/compare.txt"
python3 "$COMPARE" "$OUT/paths/old" "$OUT/paths/new" | grep -A3 "nogpu_fft" | tee -a "$OUT/compare.txt"
echo "== done $(date -u +%FT%TZ)"
cd "$OUT" && tar czf /tmp/results2.tar.gz fft-round* paths && mv /tmp/results2.tar.gz "$OUT/results-fft.tar.gz" && rm -rf fft-round* paths
