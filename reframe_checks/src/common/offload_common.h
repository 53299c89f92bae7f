// What the offload tools (gpuaccept-xgemm, gpuaccept-fft) share: host and device buffers that free themselves, a
// stream with the event pair that times work on it, the median of repetitions after a warm-up, the document's
// "cases", and the host's MemAvailable. CUDA only (include after cuda_runtime.h and bench_common.h).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"

namespace gpuaccept {

// Page-locked host memory (cudaHostAlloc); errors on release are ignored.
struct PinnedBuf : CudaOwned<void*, cudaFreeHost> {
  void alloc(size_t n) { CUDA_CHECK(cudaHostAlloc(&p, n, cudaHostAllocDefault)); }
};

// Ordinary (pageable) host memory, 64-byte aligned (vector loads), its pages touched before any timing.
struct PageableBuf {
  void* p = nullptr;
  PageableBuf() = default;
  PageableBuf(const PageableBuf&) = delete;
  PageableBuf& operator=(const PageableBuf&) = delete;
  ~PageableBuf() { std::free(p); }
  void alloc(size_t n) {
    p = std::aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) throw CallError("aligned_alloc(" + std::to_string(n) + ") of a pageable host buffer failed");
    std::memset(p, 0, n);
  }
};

// Device memory (cudaMalloc).
struct DevBuf : CudaOwned<void*, cudaFree> {
  void alloc(size_t n) { CUDA_CHECK(cudaMalloc(&p, n)); }
};

// Allocates `bytes` for each of `bufs` (PinnedBuf, PageableBuf, DevBuf), in order.
template <typename... Bufs>
void alloc_each(size_t bytes, Bufs&... bufs) {
  (bufs.alloc(bytes), ...);
}

// One timed mode: the median of the repetitions, and the host's steady_clock around the same (median).
struct Timed {
  bool run = false;
  double seconds = NAN;
  double wall_seconds = NAN;
  std::vector<double> samples_s;
};

// A non-blocking stream and the event pair that times work on it (create()), destroyed with it.
class TimedStream {
 public:
  void create() {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_.p, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&e0_.p));
    CUDA_CHECK(cudaEventCreate(&e1_.p));
  }
  cudaStream_t stream() const { return stream_.p; }
  // One repetition: the event pair around issue(); returns the event time, sets `wall` to the host's steady_clock
  // time up to the end event's completion.
  template <typename Issue>
  double time(double& wall, Issue&& issue) {
    const double w0 = now_s();
    CUDA_CHECK(cudaEventRecord(e0_.p, stream_.p));
    issue();
    CUDA_CHECK(cudaEventRecord(e1_.p, stream_.p));
    CUDA_CHECK(cudaEventSynchronize(e1_.p));
    wall = now_s() - w0;
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0_.p, e1_.p));
    return ms * 1e-3;
  }

 private:
  CudaOwned<cudaStream_t, cudaStreamDestroy> stream_;
  CudaOwned<cudaEvent_t, cudaEventDestroy> e0_, e1_;
};

// One untimed warm-up, then `reps` repetitions of `once(wall)` (which returns the repetition's time and sets its
// wall-clock time) into `m`.
template <typename Once>
void repeat_median(int reps, Timed& m, Once&& once) {
  double wall = 0;
  once(wall);
  std::vector<double> walls;
  for (int r = 0; r < reps; ++r) {
    m.samples_s.push_back(once(wall));
    walls.push_back(wall);
  }
  m.seconds = median(m.samples_s);
  m.wall_seconds = median(walls);
  m.run = true;
}

// The document's "cases": each case's object, with the keys that name it (`head(j, case)`) and its "run", then
// either "not_run" (why, or that the run stopped before the case) or the rest of its keys (`body(j, case)`).
template <typename Case, typename Head, typename Body>
void write_cases(Json& j, const std::vector<Case>& cases, Head head, Body body) {
  j.kv_objects("cases", cases, [&](const auto& c) {
    head(j, c);
    j.kv("run", c.run);
    if (c.run) body(j, c);
    else j.kv("not_run", c.not_run.empty() ? std::string("the run stopped before this case") : c.not_run);
  });
}

// The host's MemAvailable in bytes (/proc/meminfo), -1 where it cannot be read.
inline long mem_available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %ld kB", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

}  // namespace gpuaccept
