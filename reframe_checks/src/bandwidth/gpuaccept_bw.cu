// gpuaccept-bw: host<->GPU, GPU-internal and GPU<->GPU copy bandwidth, every copy verified.
//
// Phases (each can be switched off):
//   sweep   per GPU, thread and host buffers bound to the GPU's NUMA node: a NetPIPE-style size sweep
//           (2^k bytes, every --size-step-th k, and 2^k +- --perturbation) of the test cases in kCases;
//           repetitions per trial calibrated to --target-ms from the previous size, minimum over --trials
//           trials; every (case, size) verified once after its trials. The cases that copy to or from the host
//           run one GPU at a time (GPUs under one PCIe switch or root port share its bandwidth), up to
//           --host-max-bytes; the device-local copy (d2d_oneway) on every GPU at once, one thread each, up to
//           --max-bytes (each GPU's memory is its own). Then the LogGP-style PCIe model per GPU and
//           direction (fit of the pinned one-way sweep, plus n back-to-back 1-byte copies for g).
//   matrix  every NUMA node (or every core) x every GPU at --matrix-bytes: pinned/pageable H2D/D2H and
//           bidirectional pinned, thread bound to the node's CPUs, host buffers bound to its memory.
//   peer    every ordered GPU pair with peer access: write, read and bidirectional cudaMemcpyPeerAsync.
// Pinned and device copies are timed with a cudaEvent pair around nrepeat cudaMemcpyAsync calls on one
// non-blocking stream; pageable copies (host-synchronous in cudaMemcpyAsync) with the host steady clock
// around the loop and a cudaStreamSynchronize. The JSON document is described in docs/benchmark-json.md;
// the method in docs/checks/bandwidth.md. Each GPU's own figure of the per-GPU metrics goes to "gpu_metrics".

#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "tool_main.h"

using namespace gpuaccept;

namespace {

constexpr const char* kTool = "gpuaccept-bw";
constexpr long kMaxRepeat = 100000;                // repetitions per trial: at most this many ...
constexpr int kLargeMinTrials = 3;                 // ... and where one transfer exceeds --target-ms, at least
                                                   // this many trials (fewer than --trials; see calibrate())
constexpr size_t kFitMinBytes = 64 * 1024;         // model: least-squares fit over sizes >= 64 KiB
constexpr int kGapMaxN = 16;                       // model: g from n = 1..16 back-to-back 1-byte copies
constexpr size_t kWarmBytes = 4u << 20;            // warm-up: one copy at min(--max-bytes, 4 MiB)
constexpr int kWarmCalib = 16;                     // warm-up: calibration loop length at the first size
constexpr unsigned char kPoison = 0xA5;            // destinations are set to this before timed copies
constexpr size_t kParallelMinBytes = 4u << 20;     // host fill/compare: threads from this size ...
constexpr size_t kMaxHostThreads = 16;             // ... at most this many
constexpr unsigned long long kMaxOptionBytes = 1ull << 34;  // --max-bytes/--matrix-bytes at most 16 GiB
constexpr uint64_t kTagSweep = 1, kTagMatrix = 2, kTagPeer = 3;

// Linux memory-policy constants (numaif.h is not used: no libnuma).
constexpr int kMpolDefault = 0;
constexpr int kMpolBind = 2;
constexpr unsigned long kMpolFNode = 1;  // get_mempolicy: return the node ...
constexpr unsigned long kMpolFAddr = 2;  // ... of the page at addr
constexpr size_t kNodeMaskLongs = 16;    // node masks of 1024 bits

// ---------------------------------------------------------------------------------------------
// Small helpers.

// "256 MiB", "4 KiB", "13 B": for descriptions and progress lines.
std::string human_bytes(unsigned long long n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  unsigned long long v = n;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Least-squares line y = a + b x, each point weighted by w (all 1 when w is empty); false with fewer than
// two distinct x.
bool fit_line(const std::vector<double>& x, const std::vector<double>& y, double& a, double& b,
              const std::vector<double>& w = {}) {
  size_t n = x.size();
  if (n < 2 || y.size() != n || (!w.empty() && w.size() != n)) return false;
  double sw = 0, mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    double wi = w.empty() ? 1.0 : w[i];
    sw += wi;
    mx += wi * x[i];
    my += wi * y[i];
  }
  if (!(sw > 0)) return false;
  mx /= sw;
  my /= sw;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    double wi = w.empty() ? 1.0 : w[i];
    sxx += wi * (x[i] - mx) * (x[i] - mx);
    sxy += wi * (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0)) return false;
  b = sxy / sxx;
  a = my - b * mx;
  return true;
}

// ---------------------------------------------------------------------------------------------
// CPU and memory binding (raw syscalls; the calling thread only).

// CPUs this process may run on (its affinity at start, before any binding).
std::vector<int> process_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& allowed) {
  std::vector<int> out;
  for (int c : a)
    if (allowed.empty() || std::find(allowed.begin(), allowed.end(), c) != allowed.end()) out.push_back(c);
  return out;
}

// Binds the calling thread to `cpus`; "" or the reason it failed.
std::string bind_cpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = 0;
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) {
      CPU_SET(c, &set);
      ++n;
    }
  if (n == 0) return "no CPU of this node is in the process's affinity mask";
  int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  return rc == 0 ? std::string() : std::string(std::strerror(rc));
}

// set_mempolicy(MPOL_BIND, {node}) for the calling thread: its new pages come from `node` only.
std::string bind_memory(int node) {
  if (node < 0 || node >= static_cast<int>(kNodeMaskLongs * 64)) return "NUMA node out of range";
  unsigned long mask[kNodeMaskLongs] = {0};
  mask[node / 64] |= 1UL << (node % 64);
  // maxnode is one more than the number of bits, as libnuma passes it (the kernel drops the last bit).
  long rc = syscall(SYS_set_mempolicy, kMpolBind, mask, static_cast<unsigned long>(kNodeMaskLongs * 64 + 1));
  return rc == 0 ? std::string() : std::string(std::strerror(errno));
}

// Back to MPOL_DEFAULT (local allocation).
std::string unbind_memory() {
  long rc = syscall(SYS_set_mempolicy, kMpolDefault, nullptr, 0UL);
  return rc == 0 ? std::string() : std::string(std::strerror(errno));
}

// NUMA node of the (resident) page at addr, or -1 where the kernel does not say (e.g. driver mappings).
int page_node(const void* addr) {
  int node = -1;
  long rc = syscall(SYS_get_mempolicy, &node, nullptr, 0UL, const_cast<void*>(addr), kMpolFNode | kMpolFAddr);
  return rc == 0 ? node : -1;
}

// "ok" or "failed: cpu: ...; memory: ..." for the JSON "binding" field.
std::string binding_text(const std::string& cpu_err, const std::string& mem_err) {
  if (cpu_err.empty() && mem_err.empty()) return "ok";
  std::string s = "failed:";
  if (!cpu_err.empty()) s += " cpu: " + cpu_err;
  if (!cpu_err.empty() && !mem_err.empty()) s += ";";
  if (!mem_err.empty()) s += " memory: " + mem_err;
  return s;
}

// Runs fn on a fresh thread and waits: CPU affinity and memory policy set there die with the thread.
// A CallError (or other exception) in fn is rethrown here.
void run_in_thread(const std::function<void()>& fn) {
  std::string call_err, other_err;
  std::thread t([&] {
    try {
      fn();
    } catch (const CallError& e) {
      call_err = e.what();
    } catch (const std::exception& e) {
      other_err = e.what();
    }
  });
  t.join();
  if (!call_err.empty()) throw CallError(call_err);
  if (!other_err.empty()) throw std::runtime_error(other_err);
}

// ---------------------------------------------------------------------------------------------
// Host-side fill, poison and compare, split over helper threads bound to `cpus` (for big buffers).
uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The pattern of one copy depends on its size (and phase), so a stale buffer of another size never matches.
uint64_t pattern_seed(size_t bytes, uint64_t tag) { return mix64(static_cast<uint64_t>(bytes) ^ mix64(tag * 7919)); }

class HostOps {
 public:
  explicit HostOps(std::vector<int> cpus) : cpus_(std::move(cpus)) {}

  // f(begin, end) over [0, n) in chunks aligned to `align`.
  template <typename F>
  void parallel(size_t n, size_t align, F&& f) const {
    size_t nt = n < kParallelMinBytes ? 1 : std::min(kMaxHostThreads, std::max<size_t>(1, cpus_.size()));
    if (nt <= 1) {
      f(size_t{0}, n);
      return;
    }
    size_t chunk = (n + nt - 1) / nt;
    chunk = (chunk + align - 1) / align * align;
    std::vector<std::thread> ts;
    try {
      for (size_t b = 0; b < n; b += chunk) {
        size_t e = std::min(n, b + chunk);
        ts.emplace_back([this, b, e, &f] {
          bind_cpus(cpus_);  // best effort: inherits the caller's affinity otherwise
          f(b, e);
        });
      }
    } catch (...) {  // no thread left unjoined if creating one fails
      for (auto& t : ts) t.join();
      throw;
    }
    for (auto& t : ts) t.join();
  }

  void fill(void* p, size_t n, uint64_t seed) const {
    unsigned char* c = static_cast<unsigned char*>(p);
    parallel(n, 8, [c, seed](size_t b, size_t e) {
      size_t i = b;  // b is a multiple of 8, so word i/8 is the same whatever the split
      for (; i + 8 <= e; i += 8) {
        uint64_t w = mix64(seed + (i / 8) * 0xd1b54a32d192ed03ull);
        std::memcpy(c + i, &w, 8);
      }
      if (i < e) {
        uint64_t w = mix64(seed + (i / 8) * 0xd1b54a32d192ed03ull);
        std::memcpy(c + i, &w, e - i);
      }
    });
    // A 1-byte pattern equal to the poison would hide a copy that never happened.
    for (size_t i = 0; i < std::min<size_t>(n, 16); ++i)
      if (c[i] == kPoison) c[i] = static_cast<unsigned char>(~kPoison);
  }

  void set(void* p, unsigned char v, size_t n) const {
    unsigned char* c = static_cast<unsigned char*>(p);
    parallel(n, 4096, [c, v](size_t b, size_t e) { std::memset(c + b, v, e - b); });
  }

  void copy(void* dst, const void* src, size_t n) const {
    unsigned char* d = static_cast<unsigned char*>(dst);
    const unsigned char* s = static_cast<const unsigned char*>(src);
    parallel(n, 4096, [d, s](size_t b, size_t e) { std::memcpy(d + b, s + b, e - b); });
  }

  // Index of the first differing byte, or SIZE_MAX when equal.
  size_t first_difference(const void* got, const void* want, size_t n) const {
    const unsigned char* g = static_cast<const unsigned char*>(got);
    const unsigned char* w = static_cast<const unsigned char*>(want);
    std::mutex m;
    size_t first = SIZE_MAX;
    parallel(n, 4096, [&](size_t b, size_t e) {
      if (std::memcmp(g + b, w + b, e - b) == 0) return;
      size_t i = b;
      while (i < e && g[i] == w[i]) ++i;
      std::lock_guard<std::mutex> l(m);
      first = std::min(first, i);
    });
    return first;
  }

 private:
  std::vector<int> cpus_;
};

// ---------------------------------------------------------------------------------------------
// Buffers, streams and events that free themselves (errors on release are ignored).
class PinnedBuffer : CudaOwned<void*, cudaFreeHost> {
 public:
  // Portable: pinned for every device's context, not only the current one.
  void alloc(size_t n) { CUDA_CHECK(cudaHostAlloc(&p, std::max<size_t>(n, 1), cudaHostAllocPortable)); }
  unsigned char* get() const { return static_cast<unsigned char*>(p); }
};

class PageableBuffer {
 public:
  PageableBuffer() = default;
  PageableBuffer(const PageableBuffer&) = delete;
  PageableBuffer& operator=(const PageableBuffer&) = delete;
  ~PageableBuffer() { std::free(p_); }
  // Page-aligned malloc memory, first-touched (by the caller's thread policy) so its pages exist.
  void alloc(size_t n, const HostOps& ops) {
    size_t rounded = (std::max<size_t>(n, 1) + 4095) / 4096 * 4096;
    p_ = std::aligned_alloc(4096, rounded);
    if (!p_) throw std::runtime_error("aligned_alloc of " + std::to_string(rounded) + " bytes failed");
    ops.set(p_, 0, rounded);
  }
  unsigned char* get() const { return static_cast<unsigned char*>(p_); }

 private:
  void* p_ = nullptr;
};

class DeviceBuffer : CudaOwned<void*, cudaFree> {
 public:
  void alloc(int d, size_t n) {
    dev = d;
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1)));
  }
  unsigned char* get() const { return static_cast<unsigned char*>(p); }
};

class Stream : CudaOwned<cudaStream_t, cudaStreamDestroy> {
 public:
  explicit Stream(int d) {
    dev = d;
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaStreamCreateWithFlags(&p, cudaStreamNonBlocking));
  }
  cudaStream_t get() const { return p; }
};

class Event : CudaOwned<cudaEvent_t, cudaEventDestroy> {
 public:
  explicit Event(int d) {
    dev = d;
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaEventCreate(&p));  // timing enabled
  }
  cudaEvent_t get() const { return p; }
};

// ---------------------------------------------------------------------------------------------
// Test cases of the sweep (stable keys, docs/benchmark-json.md).
enum BufId { kHostSrc, kHostDst, kPageSrc, kPageDst, kDevSrc, kDevDst, kNoBuf };

// The buffers of one GPU's sweep: pinned and pageable host buffers on the GPU's NUMA node, device buffers
// on the GPU. Sources hold the size's pattern; destinations are poisoned before each point.
struct Bufs {
  unsigned char* p[6] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  unsigned char* operator[](BufId id) const { return p[id]; }
};

constexpr bool on_device(BufId id) { return id == kDevSrc || id == kDevDst; }

constexpr cudaMemcpyKind kind_of(BufId src, BufId dst) {
  return on_device(src) ? (on_device(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                        : (on_device(dst) ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
}

template <BufId S, BufId D>
void copy_one(const Bufs& b, size_t n, cudaStream_t s) {
  CUDA_CHECK(cudaMemcpyAsync(b[D], b[S], n, kind_of(S, D), s));
}

// Round trip: H2D then D2H of the same size on the same stream, back to back.
template <BufId S, BufId M, BufId D>
void copy_round(const Bufs& b, size_t n, cudaStream_t s) {
  copy_one<S, M>(b, n, s);
  copy_one<M, D>(b, n, s);
}

using IssueFn = void (*)(const Bufs&, size_t, cudaStream_t);

struct CaseDef {
  const char* key;
  const char* description;
  IssueFn issue;      // one repetition: enqueue the copy (copies) on the stream
  bool host_clock;    // pageable: cudaMemcpyAsync is host-synchronous, timed with the host clock
  int transfers;      // per repetition: 1 one-way, 2 round trip (reported time is per transfer)
  BufId src;          // holds the pattern
  BufId mid;          // round trip: the device buffer in between (poisoned too), else kNoBuf
  BufId dst;          // poisoned before, verified after
};

const CaseDef kCases[] = {
    {"h2d_pinned_oneway", "pinned host -> device", &copy_one<kHostSrc, kDevDst>, false, 1, kHostSrc, kNoBuf,
     kDevDst},
    {"d2h_pinned_oneway", "device -> pinned host", &copy_one<kDevSrc, kHostDst>, false, 1, kDevSrc, kNoBuf,
     kHostDst},
    {"h2d_pageable_oneway", "pageable host -> device", &copy_one<kPageSrc, kDevDst>, true, 1, kPageSrc, kNoBuf,
     kDevDst},
    {"d2h_pageable_oneway", "device -> pageable host", &copy_one<kDevSrc, kPageDst>, true, 1, kDevSrc, kNoBuf,
     kPageDst},
    {"d2d_oneway", "device -> same device (cudaMemcpyDeviceToDevice)", &copy_one<kDevSrc, kDevDst>, false, 1,
     kDevSrc, kNoBuf, kDevDst},
    {"pinned_roundtrip", "pinned host -> device -> pinned host, half the round-trip time",
     &copy_round<kHostSrc, kDevDst, kHostDst>, false, 2, kHostSrc, kDevDst, kHostDst},
    {"pageable_roundtrip", "pageable host -> device -> pageable host, half the round-trip time",
     &copy_round<kPageSrc, kDevDst, kPageDst>, true, 2, kPageSrc, kDevDst, kPageDst},
};
constexpr int kNumCases = sizeof kCases / sizeof kCases[0];
constexpr int kCaseH2dPinned = 0, kCaseD2hPinned = 1, kCaseH2dPageable = 2, kCaseD2hPageable = 3, kCaseD2d = 4;

// ---------------------------------------------------------------------------------------------
// Options.
struct Options {
  std::string gpus = "all";
  unsigned long long max_bytes = 1ull << 30, min_bytes = 1, matrix_bytes = 256ull << 20;
  unsigned long long host_max_bytes = 1ull << 30;  // the largest sweep size of the cases that copy to/from the host
  int size_step = 1;                               // sweep 2^k for every size_step-th k
  long perturbation = 3;
  int trials = 7;
  double target_ms = 5.0;
  std::string affinity = "numa";
  bool quick = false, sweep = true, matrix = true, peer = true;
  std::vector<int> cases;  // indices into kCases, in kCases order
  std::string output;
  std::vector<size_t> sizes;       // the sweep sizes, ascending (the device-local case)
  std::vector<size_t> host_sizes;  // the sweep sizes of the cases that copy to or from the host
};

const char* kUsage =
    "usage: gpuaccept-bw [options]\n"
    "Host<->GPU, device and GPU<->GPU copy bandwidth; every copy verified.\n"
    "  --gpus all|LIST      CUDA device indices (default all visible)\n"
    "  --max-bytes N        largest sweep size, bytes (K/M/G or KiB/MiB/GiB suffixes; default 1GiB, --quick 64MiB)\n"
    "  --host-max-bytes N   largest sweep size of the cases that copy to or from the host (default --max-bytes,\n"
    "                       --quick the smaller of 64MiB and --max-bytes)\n"
    "  --min-bytes N        smallest sweep size (default 1)\n"
    "  --size-step S        sweep 2^k for every S-th k: 1, 2^S, 2^2S... (default 1, --quick 2)\n"
    "  --perturbation P     also sweep 2^k-P and 2^k+P (default 3, --quick 0; 0 = none)\n"
    "  --trials N           trials per point, the minimum time is kept (default 7, --quick 3)\n"
    "  --target-ms T        calibrated length of one trial (default 5, --quick 2)\n"
    "  --matrix-bytes N     size of the matrix and peer copies (default 256MiB, --quick 64MiB)\n"
    "  --affinity numa|cores  matrix rows per NUMA node (default) or per core\n"
    "  --cases LIST         sweep cases, comma list, 'all' or 'metrics' (default all; --quick metrics):\n"
    "                       h2d_pinned_oneway, d2h_pinned_oneway, h2d_pageable_oneway, d2h_pageable_oneway,\n"
    "                       d2d_oneway, pinned_roundtrip, pageable_roundtrip; 'metrics' = the cases metrics come\n"
    "                       from: the pinned one-way cases and d2d_oneway (the pageable and round-trip sweeps\n"
    "                       give none)\n"
    "  --quick              nightly: sizes 4^k to 64 MiB without perturbations, the pinned one-way and\n"
    "                       device-local cases only, 3 trials of 2 ms, matrix and peers at 64 MiB (explicit\n"
    "                       options still win)\n"
    "  --no-sweep, --no-matrix, --no-peer   skip a phase\n";
const UsageTail kUsageTail{23, false, nullptr, "CUDA call failed or no GPU"};

// "1073741824", "64M", "64MiB", "1G", "4K" (binary multiples).
unsigned long long parse_bytes(const std::string& opt, const std::string& text) {
  const std::string bad = "option --" + opt + ": '" + text + "' is not a byte count (e.g. 65536, 64K, 256MiB, 1G)";
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw std::invalid_argument(bad);
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw std::invalid_argument(bad);
  }
  std::string suffix = lower(text.substr(pos));
  unsigned long long mult = 1;
  if (suffix.empty() || suffix == "b") mult = 1;
  else if (suffix == "k" || suffix == "kib") mult = 1ull << 10;
  else if (suffix == "m" || suffix == "mib") mult = 1ull << 20;
  else if (suffix == "g" || suffix == "gib") mult = 1ull << 30;
  else throw std::invalid_argument(bad);
  if (v > kMaxOptionBytes / mult) throw std::invalid_argument("option --" + opt + ": '" + text + "' exceeds 16 GiB");
  return v * mult;
}

// 2^k for k = 0, step, 2 step.., each also at 2^k - p and 2^k + p, within [min, max], ascending and distinct.
std::vector<size_t> sweep_sizes(unsigned long long min_b, unsigned long long max_b, long p, int step = 1) {
  std::vector<size_t> out;
  auto add = [&](long long v) {
    if (v >= 1 && static_cast<unsigned long long>(v) >= min_b && static_cast<unsigned long long>(v) <= max_b)
      out.push_back(static_cast<size_t>(v));
  };
  for (int k = 0; k < 63 && (1ull << k) <= max_b; k += step) {
    long long c = 1ll << k;
    add(c);
    if (p > 0) {
      add(c - p);
      add(c + p);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Options parse_options(Args& a) {
  Options o;
  o.quick = a.flag("quick");
  o.sweep = !a.flag("no-sweep");
  o.matrix = !a.flag("no-matrix");
  o.peer = !a.flag("no-peer");
  o.gpus = a.get_gpus();
  std::string v = a.get("max-bytes", "");
  o.max_bytes = v.empty() ? (o.quick ? 64ull << 20 : 1ull << 30) : parse_bytes("max-bytes", v);
  v = a.get("host-max-bytes", "");
  o.host_max_bytes = !v.empty() ? parse_bytes("host-max-bytes", v)
                     : o.quick  ? std::min<unsigned long long>(o.max_bytes, 64ull << 20)
                                : o.max_bytes;
  v = a.get("min-bytes", "");
  o.min_bytes = v.empty() ? 1 : parse_bytes("min-bytes", v);
  const long step = a.get_long("size-step", o.quick ? 2 : 1);
  if (step < 1 || step > 8) throw std::invalid_argument("option --size-step: must be in 1..8");
  o.size_step = static_cast<int>(step);
  v = a.get("matrix-bytes", "");
  o.matrix_bytes = v.empty() ? (o.quick ? 64ull << 20 : 256ull << 20) : parse_bytes("matrix-bytes", v);
  if (o.max_bytes < 1) throw std::invalid_argument("option --max-bytes: must be at least 1");
  if (o.min_bytes < 1) throw std::invalid_argument("option --min-bytes: must be at least 1");
  if (o.min_bytes > o.max_bytes) throw std::invalid_argument("option --min-bytes: larger than --max-bytes");
  if (o.host_max_bytes < o.min_bytes)
    throw std::invalid_argument("option --host-max-bytes: smaller than --min-bytes");
  if (o.matrix_bytes < 1) throw std::invalid_argument("option --matrix-bytes: must be at least 1");
  o.perturbation = a.get_long("perturbation", o.quick ? 0 : 3);
  if (o.perturbation < 0 || o.perturbation > (1l << 20))
    throw std::invalid_argument("option --perturbation: must be in 0..1048576");
  long trials = a.get_long("trials", o.quick ? 3 : 7);
  if (trials < 1 || trials > 1000) throw std::invalid_argument("option --trials: must be in 1..1000");
  o.trials = static_cast<int>(trials);
  o.target_ms = a.get_double("target-ms", o.quick ? 2.0 : 5.0);
  if (!(o.target_ms > 0.0 && o.target_ms <= 60000.0))
    throw std::invalid_argument("option --target-ms: must be in (0, 60000]");
  o.affinity = a.get("affinity", "numa");
  if (o.affinity != "numa" && o.affinity != "cores")
    throw std::invalid_argument("option --affinity: '" + o.affinity + "' is not numa or cores");
  // 'metrics' (nightly's default, the commission suite's choice): the pinned one-way cases (the PCIe model and the
  // latencies) and the device-local copy; the pageable and round-trip sweeps give no metric (the matrix measures
  // pageable copies).
  std::string cases = a.get("cases", o.quick ? "metrics" : "all");
  if (cases == "metrics") cases = "h2d_pinned_oneway,d2h_pinned_oneway,d2d_oneway";
  std::vector<bool> chosen(kNumCases, cases == "all");
  if (cases != "all") {
    auto parts = split_csv(cases);
    if (parts.empty()) throw std::invalid_argument("option --cases: empty list");
    for (const auto& s : parts) {
      int found = -1;
      for (int i = 0; i < kNumCases; ++i)
        if (s == kCases[i].key) found = i;
      if (found < 0) throw std::invalid_argument("option --cases: unknown case '" + s + "' (see --help)");
      chosen[found] = true;
    }
  }
  for (int i = 0; i < kNumCases; ++i)
    if (chosen[i]) o.cases.push_back(i);
  o.output = a.get("output", "");
  a.reject_unknown();
  o.sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.perturbation, o.size_step);
  o.host_sizes = sweep_sizes(o.min_bytes, std::min(o.host_max_bytes, o.max_bytes), o.perturbation, o.size_step);
  if (o.sweep && (o.sizes.empty() || o.host_sizes.empty()))
    throw std::invalid_argument("option --min-bytes: no sweep size between --min-bytes and --max-bytes");
  return o;
}

// ---------------------------------------------------------------------------------------------
// Devices: bench_common.h's device_info, with the NUMA node the matrix uses as the GPU's local node.
DeviceInfo device_info(int dev, const std::vector<NumaNode>& nodes) {
  DeviceInfo d = gpuaccept::device_info(dev);
  d.node = nodes.empty() ? 0 : nodes.front().id;
  for (const auto& n : nodes)
    if (n.id == d.numa_node) d.node = n.id;
  return d;
}

// ---------------------------------------------------------------------------------------------
// Results.
struct Point {
  size_t bytes = 0;
  double seconds = NAN;  // per transfer (round trips: half the round trip)
  long repetitions = 0;  // per trial
  int trials = 0;
  bool verified = false;
};

struct SweepRow {
  int gpu = 0, case_idx = 0, numa_node = 0;
  std::string binding;
  std::vector<Point> points;
};

struct GapFit {  // n back-to-back 1-byte copies between one event pair
  int gpu = 0;
  int direction = 0;  // 0 h2d, 1 d2h
  std::vector<double> t_us;  // min time for n = 1..kGapMaxN
  double g_us = NAN, t1_us = NAN;
};

struct MatrixRow {
  int gpu = 0, node = 0, core = -1;
  bool local = false;
  std::string binding;
  size_t bytes = 0;
  double h2d_pinned = NAN, d2h_pinned = NAN, h2d_pageable = NAN, d2h_pageable = NAN, bidir_pinned = NAN;
  int pinned_page_node = -1, pageable_page_node = -1;
  bool verified = false;
};

struct PeerRow {
  int src = 0, dst = 0;
  bool access = false;
  double write = NAN, read = NAN, bidir = NAN;
  bool verified = false;
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<SweepRow> sweep;
  std::vector<GapFit> gaps;
  std::vector<MatrixRow> matrix;
  std::vector<PeerRow> peer;
};

// ---------------------------------------------------------------------------------------------
// Timing primitives. Each returns the elapsed seconds of nrep repetitions of `issue`.

// Event pair on stream s around the loop; the stream is idle before (callers synchronise).
double time_events(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, long nrep, const std::function<void()>& issue) {
  CUDA_CHECK(cudaEventRecord(e0, s));
  for (long r = 0; r < nrep; ++r) issue();
  CUDA_CHECK(cudaEventRecord(e1, s));
  CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  return static_cast<double>(ms) * 1e-3;
}

// Host steady clock around the loop and a cudaStreamSynchronize (pageable copies).
double time_host(cudaStream_t s, long nrep, const std::function<void()>& issue) {
  CUDA_CHECK(cudaStreamSynchronize(s));
  double t0 = steady_s();
  for (long r = 0; r < nrep; ++r) issue();
  CUDA_CHECK(cudaStreamSynchronize(s));
  return steady_s() - t0;
}

// Two streams started together: s2 waits for the start event on s1, both loops are issued interleaved,
// s1 waits for s2's end (event `mid`, on s2's device) before the stop event; elapsed start..stop on s1.
double time_bidir(cudaStream_t s1, cudaStream_t s2, cudaEvent_t e0, cudaEvent_t e1, cudaEvent_t mid, long nrep,
                  const std::function<void()>& issue1, const std::function<void()>& issue2) {
  CUDA_CHECK(cudaEventRecord(e0, s1));
  CUDA_CHECK(cudaStreamWaitEvent(s2, e0, 0));
  for (long r = 0; r < nrep; ++r) {
    issue1();
    issue2();
  }
  CUDA_CHECK(cudaEventRecord(mid, s2));
  CUDA_CHECK(cudaStreamWaitEvent(s1, mid, 0));
  CUDA_CHECK(cudaEventRecord(e1, s1));
  CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  return static_cast<double>(ms) * 1e-3;
}

// Repetitions so that one trial lasts about `target_s` when one repetition takes `t_rep` (1..kMaxRepeat).
long repetitions_for(double target_s, double t_rep) {
  double r = t_rep > 0 ? target_s / t_rep : static_cast<double>(kMaxRepeat);
  if (!(r >= 1.0)) r = 1.0;  // also NaN
  if (r > static_cast<double>(kMaxRepeat)) r = static_cast<double>(kMaxRepeat);
  return static_cast<long>(r);
}

// Trials for a point whose one repetition is predicted to take t_rep: --trials, but where one repetition
// alone exceeds the target, only as many as fit in trials x target, and at least kLargeMinTrials.
int trials_for(int trials, double target_s, double t_rep) {
  if (!(t_rep > target_s)) return trials;
  double fit = std::ceil(trials * target_s / t_rep);
  int lo = std::min(kLargeMinTrials, trials);
  return static_cast<int>(std::max<double>(lo, std::min<double>(trials, fit)));
}

double gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : NAN; }

// Verification message: "gpu 0 h2d_pinned_oneway 1048576 bytes: first mismatch at byte 17 (got 0xa5, want 0x3c)".
std::string mismatch_text(const std::string& what, size_t at, const unsigned char* got, const unsigned char* want) {
  char buf[128];
  std::snprintf(buf, sizeof buf, ": first mismatch at byte %zu (got 0x%02x, want 0x%02x)", at, got[at], want[at]);
  return what + buf;
}

// Compares a host buffer with the expected pattern; one verdict.
bool verify_host(State& st, const HostOps& ops, const unsigned char* got, const unsigned char* want, size_t n,
                 const std::string& what) {
  size_t at = ops.first_difference(got, want, n);
  return st.verdict(at == SIZE_MAX, at == SIZE_MAX ? what : mismatch_text(what, at, got, want));
}

// Copies a device buffer back into `check` (pinned host) on stream s and compares; one verdict.
bool verify_device(State& st, const HostOps& ops, const unsigned char* dev_buf, unsigned char* check,
                   const unsigned char* want, size_t n, cudaStream_t s, const std::string& what) {
  // A read-back that wrote nothing must not pass on what an earlier check of the same pattern left in
  // `check`: mark its first 4 KiB, one byte in every later 4 KiB page, and the last byte.
  const unsigned char mark = static_cast<unsigned char>(~kPoison);
  ops.set(check, mark, std::min<size_t>(n, 4096));
  for (size_t i = 4096; i < n; i += 4096) check[i] = mark;
  check[n - 1] = mark;
  CUDA_CHECK(cudaMemcpyAsync(check, dev_buf, n, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return verify_host(st, ops, check, want, n, what);
}

// ---------------------------------------------------------------------------------------------
// Sweep.

bool uses(const Options& o, BufId id) {
  for (int ci : o.cases) {
    const CaseDef& c = kCases[ci];
    if (c.src == id || c.mid == id || c.dst == id) return true;
  }
  return false;
}

bool has_case(const Options& o, int ci) { return std::find(o.cases.begin(), o.cases.end(), ci) != o.cases.end(); }

// Poisons buffer `id` (n bytes): host with memset, device with cudaMemsetAsync on s (caller synchronises).
void poison(const Bufs& b, BufId id, size_t n, cudaStream_t s, const HostOps& ops) {
  if (id == kNoBuf) return;
  if (on_device(id))
    CUDA_CHECK(cudaMemsetAsync(b[id], kPoison, n, s));
  else
    ops.set(b[id], kPoison, n);
}

// The LogGP gap g: n = 1..kGapMaxN back-to-back 1-byte copies between one event pair, min over trials,
// fitted by T(n) = T1 + g (n - 1).
GapFit measure_gap(const Options& o, int dev, int direction, const Bufs& b, cudaStream_t s, cudaEvent_t e0,
                   cudaEvent_t e1) {
  const CaseDef& c = kCases[direction == 0 ? kCaseH2dPinned : kCaseD2hPinned];
  std::function<void()> issue = [&] { c.issue(b, 1, s); };
  GapFit g;
  g.gpu = dev;
  g.direction = direction;
  time_events(s, e0, e1, kGapMaxN, issue);  // warm-up
  const int trials = std::max(o.trials, 10);
  std::vector<double> x, y;
  for (int n = 1; n <= kGapMaxN; ++n) {
    double best = std::numeric_limits<double>::infinity();
    for (int t = 0; t < trials; ++t) best = std::min(best, time_events(s, e0, e1, n, issue));
    g.t_us.push_back(best * 1e6);
    x.push_back(n - 1);
    y.push_back(best * 1e6);
  }
  double a = NAN, slope = NAN;
  if (fit_line(x, y, a, slope)) {
    g.t1_us = a;
    g.g_us = slope;
  }
  return g;
}

// One GPU's sweep with the host buffers in b (bound to the GPU's node by the caller's thread); with `start`, the
// sizes begin once every GPU sharing it has warmed up (false from its wait: another GPU failed, nothing more here).
void sweep_gpu(State& st, const Options& o, const DeviceInfo& d, Bufs b, unsigned char* check, const HostOps& ops,
               const std::string& binding, ThreadBarrier* start = nullptr) {
  const int dev = d.index;
  const size_t maxb = o.sizes.back();
  const double target = o.target_ms * 1e-3;
  CUDA_CHECK(cudaSetDevice(dev));
  DeviceBuffer dsrc, ddst;
  dsrc.alloc(dev, maxb);
  ddst.alloc(dev, maxb);
  b.p[kDevSrc] = dsrc.get();
  b.p[kDevDst] = ddst.get();
  Stream stream(dev);
  Event ev0(dev), ev1(dev);
  cudaStream_t s = stream.get();
  CUDA_CHECK(cudaSetDevice(dev));

  // One trial: nrep repetitions of case c at n bytes; elapsed seconds.
  auto trial = [&](const CaseDef& c, size_t n, long nrep) -> double {
    std::function<void()> issue = [&] { c.issue(b, n, s); };
    return c.host_clock ? time_host(s, nrep, issue) : time_events(s, ev0.get(), ev1.get(), nrep, issue);
  };

  // Warm-up per case: one copy at min(max, 4 MiB), then the first size twice; the second calibrates.
  struct Calib {
    size_t bytes;
    double t_rep;
  };
  std::vector<Calib> cal(kNumCases, Calib{1, NAN});
  const size_t first = o.sizes.front();
  for (int ci : o.cases) {
    const CaseDef& c = kCases[ci];
    trial(c, std::min(maxb, kWarmBytes), 1);
    trial(c, first, kWarmCalib);
    cal[ci] = {first, trial(c, first, kWarmCalib) / kWarmCalib};
  }
  if (start && !start->wait()) return;

  // The rows (and gap fits) go into the state however this function ends, so that a CUDA error part-way
  // still leaves the points measured so far in the document.
  std::vector<SweepRow> rows(o.cases.size());
  std::vector<GapFit> gaps;
  struct Flush {
    State& st;
    std::vector<SweepRow>& rows;
    std::vector<GapFit>& gaps;
    ~Flush() {
      std::lock_guard<std::mutex> l(st.m);
      for (auto& r : rows)
        if (!r.points.empty()) st.sweep.push_back(std::move(r));
      for (auto& g : gaps) st.gaps.push_back(std::move(g));
    }
  } flush{st, rows, gaps};
  for (size_t r = 0; r < o.cases.size(); ++r) {
    rows[r].gpu = dev;
    rows[r].case_idx = o.cases[r];
    rows[r].numa_node = d.node;
    rows[r].binding = binding;
  }
  const bool page_src = uses(o, kPageSrc), dev_src = uses(o, kDevSrc);
  const double t_start = steady_s();
  for (size_t n : o.sizes) {
    // Sources: the size's pattern, once per size for every case.
    ops.fill(b[kHostSrc], n, pattern_seed(n, kTagSweep));
    if (page_src) ops.copy(b[kPageSrc], b[kHostSrc], n);
    if (dev_src) {
      CUDA_CHECK(cudaMemcpyAsync(b[kDevSrc], b[kHostSrc], n, cudaMemcpyHostToDevice, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
    }
    for (size_t r = 0; r < o.cases.size(); ++r) {
      const int ci = o.cases[r];
      const CaseDef& c = kCases[ci];
      poison(b, c.mid, n, s, ops);
      poison(b, c.dst, n, s, ops);
      CUDA_CHECK(cudaStreamSynchronize(s));  // the stream is idle before the first event

      // NetPIPE: the previous size's time per repetition, scaled by the size ratio, predicts this one.
      const double t_pred = cal[ci].t_rep * static_cast<double>(n) / static_cast<double>(cal[ci].bytes);
      Point p;
      p.bytes = n;
      p.repetitions = repetitions_for(target, t_pred);
      p.trials = trials_for(o.trials, target, t_pred);
      double best = std::numeric_limits<double>::infinity();
      for (int t = 0; t < p.trials; ++t) best = std::min(best, trial(c, n, p.repetitions) / p.repetitions);
      cal[ci] = {n, best};
      p.seconds = best / c.transfers;

      const std::string what = "gpu " + std::to_string(dev) + " " + c.key + " " + std::to_string(n) + " bytes";
      p.verified = on_device(c.dst) ? verify_device(st, ops, b[c.dst], check, b[kHostSrc], n, s, what)
                                    : verify_host(st, ops, b[c.dst], b[kHostSrc], n, what);
      rows[r].points.push_back(p);
    }
    if ((n & (n - 1)) == 0 && (n >= (64u << 10) || n == maxb)) {
      std::string line = "[gpu " + std::to_string(dev) + "] " + human_bytes(n) + ":";
      char buf[96];
      for (const auto& row : rows) {
        std::snprintf(buf, sizeof buf, " %s %.2f", kCases[row.case_idx].key,
                      gbps(static_cast<double>(n), row.points.back().seconds));
        line += buf;
      }
      std::snprintf(buf, sizeof buf, " GB/s (%.1f s)", steady_s() - t_start);
      std::cerr << line << buf << "\n";
    }
  }

  if (has_case(o, kCaseH2dPinned)) gaps.push_back(measure_gap(o, dev, 0, b, s, ev0.get(), ev1.get()));
  if (has_case(o, kCaseD2hPinned)) gaps.push_back(measure_gap(o, dev, 1, b, s, ev0.get(), ev1.get()));
}

// The sweep of every GPU whose NUMA node is `node`, on one thread bound to the node: CPU affinity to the
// node's CPUs, MPOL_BIND to its memory while the host buffers are allocated and first touched (once for
// all these GPUs), MPOL_DEFAULT afterwards.
void sweep_node(State& st, const Options& o, const NumaNode& node, const std::vector<int>& allowed,
                const std::vector<const DeviceInfo*>& devs) {
  run_in_thread([&] {
    const std::vector<int> cpus = intersect(node.cpus, allowed);
    const std::string cpu_err = bind_cpus(cpus);
    const HostOps ops(cpus.empty() ? allowed : cpus);
    const std::string mem_err = bind_memory(node.id);
    const size_t maxb = o.sizes.back();
    PinnedBuffer hsrc, hdst, check;
    PageableBuffer psrc, pdst;
    hsrc.alloc(maxb);
    if (uses(o, kHostDst)) hdst.alloc(maxb);
    if (uses(o, kDevDst)) check.alloc(maxb);
    if (uses(o, kPageSrc)) psrc.alloc(maxb, ops);
    if (uses(o, kPageDst)) pdst.alloc(maxb, ops);
    const std::string unbind_err = unbind_memory();
    if (!unbind_err.empty()) st.note("set_mempolicy(MPOL_DEFAULT) failed: " + unbind_err);
    const std::string binding = binding_text(cpu_err, mem_err);
    if (binding != "ok") st.note("sweep on NUMA node " + std::to_string(node.id) + ": binding " + binding);
    Bufs b;
    b.p[kHostSrc] = hsrc.get();
    b.p[kHostDst] = hdst.get();
    b.p[kPageSrc] = psrc.get();
    b.p[kPageDst] = pdst.get();
    for (const DeviceInfo* d : devs) {
      std::cerr << "[gpu " << d->index << "] sweep: " << o.sizes.size() << " sizes x " << o.cases.size()
                << " cases, NUMA node " << node.id << ", binding " << binding << "\n";
      sweep_gpu(st, o, *d, b, check.get(), ops, binding);
    }
  });
}

// The sweep's two parts: the cases that copy to or from the host, one GPU at a time up to --host-max-bytes (GPUs
// under one PCIe switch or root port share its bandwidth: measured together, they would measure the switch), and
// the device-local copy, every GPU at once up to --max-bytes (each GPU's memory and power cap are its own).
Options host_part(const Options& o) {
  Options h = o;
  h.cases.clear();
  for (int ci : o.cases)
    if (ci != kCaseD2d) h.cases.push_back(ci);
  h.sizes = o.host_sizes;
  return h;
}

Options device_part(const Options& o) {
  Options d = o;
  d.cases.clear();
  if (has_case(o, kCaseD2d)) d.cases.push_back(kCaseD2d);
  return d;
}

// The device-local sweep of every GPU at once: one thread per GPU, bound to the GPU's NUMA node (its CPUs, and its
// memory while the host buffers that hold the pattern and the read-back are allocated), the sizes started together
// once every GPU has warmed up. A failed call is recorded and stops the run once every thread has ended.
void sweep_devices(State& st, const Options& o, const std::vector<NumaNode>& nodes, const std::vector<int>& allowed,
                   const std::vector<DeviceInfo>& devs) {
  ThreadBarrier start(static_cast<int>(devs.size()));
  std::vector<std::thread> threads;
  for (const DeviceInfo& dev : devs) {
    threads.emplace_back([&st, &o, &nodes, &allowed, &start, d = &dev] {
      try {
        const NumaNode* node = &nodes.front();
        for (const auto& n : nodes)
          if (n.id == d->node) node = &n;
        const std::vector<int> cpus = intersect(node->cpus, allowed);
        const std::string cpu_err = bind_cpus(cpus);
        const HostOps ops(cpus.empty() ? allowed : cpus);
        const std::string mem_err = bind_memory(node->id);
        PinnedBuffer hsrc, check;
        hsrc.alloc(o.sizes.back());
        check.alloc(o.sizes.back());
        const std::string unbind_err = unbind_memory();
        if (!unbind_err.empty()) st.note("set_mempolicy(MPOL_DEFAULT) failed: " + unbind_err);
        const std::string binding = binding_text(cpu_err, mem_err);
        Bufs b;
        b.p[kHostSrc] = hsrc.get();
        std::cerr << "[gpu " << d->index << "] device-local sweep: " << o.sizes.size() << " sizes, every GPU at "
                  << "once, NUMA node " << node->id << ", binding " << binding << "\n";
        sweep_gpu(st, o, *d, b, check.get(), ops, binding, &start);
      } catch (const CallError& e) {
        st.error(e.what());
        start.abort();
      } catch (const std::exception& e) {
        st.error(std::string("unexpected: gpu ") + std::to_string(d->index) + ": " + e.what());
        start.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!st.errors.empty()) throw AlreadyRecorded();
}

// ---------------------------------------------------------------------------------------------
// Matrix: NUMA node (or core) x GPU at --matrix-bytes.

// Measures one (node or core, GPU) row with the node's host buffers in b; the thread is already bound.
void matrix_row(State& st, const Options& o, MatrixRow& row, const Bufs& b, unsigned char* check,
                const HostOps& ops, cudaStream_t s1, cudaStream_t s2, cudaEvent_t e0, cudaEvent_t e1,
                cudaEvent_t mid) {
  const size_t n = o.matrix_bytes;
  const double target = o.target_ms * 1e-3;
  const std::string where = "gpu " + std::to_string(row.gpu) + " matrix node " + std::to_string(row.node) +
                            (row.core >= 0 ? " core " + std::to_string(row.core) : std::string()) + " ";
  bool ok = true;

  // One-way (a sweep case's copy): warm-up of two single copies (the second calibrates), poison, trials.
  auto oneway = [&](int ci, const char* name) -> double {
    const CaseDef& c = kCases[ci];
    std::function<void()> issue = [&] { c.issue(b, n, s1); };
    auto trial = [&](long nrep) {
      return c.host_clock ? time_host(s1, nrep, issue) : time_events(s1, e0, e1, nrep, issue);
    };
    trial(1);
    const long nrep = repetitions_for(target, trial(1));
    poison(b, c.dst, n, s1, ops);
    CUDA_CHECK(cudaStreamSynchronize(s1));
    double best = std::numeric_limits<double>::infinity();
    for (int t = 0; t < o.trials; ++t) best = std::min(best, trial(nrep) / nrep);
    const std::string what = where + name + " " + std::to_string(n) + " bytes";
    ok = (on_device(c.dst) ? verify_device(st, ops, b[c.dst], check, b[kHostSrc], n, s1, what)
                           : verify_host(st, ops, b[c.dst], b[kHostSrc], n, what)) && ok;
    return gbps(static_cast<double>(n), best);
  };
  row.h2d_pinned = oneway(kCaseH2dPinned, "h2d_pinned");
  row.d2h_pinned = oneway(kCaseD2hPinned, "d2h_pinned");
  row.h2d_pageable = oneway(kCaseH2dPageable, "h2d_pageable");
  row.d2h_pageable = oneway(kCaseD2hPageable, "d2h_pageable");

  // Bidirectional pinned: H2D on s1 and D2H on s2, started together.
  std::function<void()> up = [&] { copy_one<kHostSrc, kDevDst>(b, n, s1); };
  std::function<void()> down = [&] { copy_one<kDevSrc, kHostDst>(b, n, s2); };
  time_bidir(s1, s2, e0, e1, mid, 1, up, down);
  const long nrep = repetitions_for(target, time_bidir(s1, s2, e0, e1, mid, 1, up, down));
  poison(b, kDevDst, n, s1, ops);
  poison(b, kHostDst, n, s1, ops);
  CUDA_CHECK(cudaStreamSynchronize(s1));
  double best = std::numeric_limits<double>::infinity();
  for (int t = 0; t < o.trials; ++t) best = std::min(best, time_bidir(s1, s2, e0, e1, mid, nrep, up, down) / nrep);
  row.bidir_pinned = gbps(2.0 * static_cast<double>(n), best);
  const std::string what = where + "bidir_pinned " + std::to_string(n) + " bytes";
  ok = verify_device(st, ops, b[kDevDst], check, b[kHostSrc], n, s1, what + " (h2d half)") && ok;
  ok = verify_host(st, ops, b[kHostDst], b[kHostSrc], n, what + " (d2h half)") && ok;
  row.verified = ok;
}

// Every GPU's rows for one NUMA node, on one thread: bound to the node's CPUs (or to each core in turn),
// host buffers allocated under MPOL_BIND to the node, MPOL_DEFAULT afterwards.
void matrix_node(State& st, const Options& o, const NumaNode& node, const std::vector<int>& allowed,
                 const std::vector<DeviceInfo>& devs) {
  run_in_thread([&] {
    const std::vector<int> cpus = intersect(node.cpus, allowed);
    const std::string cpu_err = bind_cpus(cpus);
    const HostOps ops(cpus.empty() ? allowed : cpus);
    const std::string mem_err = bind_memory(node.id);
    const size_t n = o.matrix_bytes;
    PinnedBuffer hsrc, hdst, check;
    PageableBuffer psrc, pdst;
    hsrc.alloc(n);
    hdst.alloc(n);
    check.alloc(n);
    psrc.alloc(n, ops);
    pdst.alloc(n, ops);
    const std::string unbind_err = unbind_memory();
    if (!unbind_err.empty()) st.note("set_mempolicy(MPOL_DEFAULT) failed: " + unbind_err);
    const int pinned_node = page_node(hsrc.get()), pageable_node = page_node(psrc.get());
    for (auto pn : {std::make_pair("pinned", pinned_node), std::make_pair("pageable", pageable_node)})
      if (pn.second >= 0 && pn.second != node.id)
        st.note(std::string("matrix: the ") + pn.first + " buffer for NUMA node " + std::to_string(node.id) +
                " has its first page on node " + std::to_string(pn.second));
    ops.fill(hsrc.get(), n, pattern_seed(n, kTagMatrix));
    ops.copy(psrc.get(), hsrc.get(), n);
    std::vector<int> cores;
    if (o.affinity == "cores") {
      cores = cpus;
      if (cores.empty())
        st.note("matrix: NUMA node " + std::to_string(node.id) + " has no CPU in the process's affinity mask");
    } else {
      cores.push_back(-1);
    }
    for (const DeviceInfo& d : devs) {
      const int dev = d.index;
      CUDA_CHECK(cudaSetDevice(dev));
      DeviceBuffer dsrc, ddst;
      dsrc.alloc(dev, n);
      ddst.alloc(dev, n);
      Stream s1(dev), s2(dev);
      Event e0(dev), e1(dev), mid(dev);
      CUDA_CHECK(cudaSetDevice(dev));
      CUDA_CHECK(cudaMemcpyAsync(dsrc.get(), hsrc.get(), n, cudaMemcpyHostToDevice, s1.get()));
      CUDA_CHECK(cudaStreamSynchronize(s1.get()));
      Bufs b;
      b.p[kHostSrc] = hsrc.get();
      b.p[kHostDst] = hdst.get();
      b.p[kPageSrc] = psrc.get();
      b.p[kPageDst] = pdst.get();
      b.p[kDevSrc] = dsrc.get();
      b.p[kDevDst] = ddst.get();
      for (int core : cores) {
        MatrixRow row;
        row.gpu = dev;
        row.node = node.id;
        row.core = core;
        row.local = node.id == d.node;
        row.bytes = n;
        row.binding = binding_text(core >= 0 ? bind_cpus({core}) : cpu_err, mem_err);
        row.pinned_page_node = pinned_node;
        row.pageable_page_node = pageable_node;
        matrix_row(st, o, row, b, check.get(), ops, s1.get(), s2.get(), e0.get(), e1.get(), mid.get());
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "[gpu %d] matrix node %d%s%s: h2d %.2f d2h %.2f h2d_pageable %.2f d2h_pageable %.2f "
                      "bidir %.2f GB/s, binding %s\n",
                      dev, node.id, core >= 0 ? " core " : "", core >= 0 ? std::to_string(core).c_str() : "",
                      row.h2d_pinned, row.d2h_pinned, row.h2d_pageable, row.d2h_pageable, row.bidir_pinned,
                      row.binding.c_str());
        std::cerr << buf;
        std::lock_guard<std::mutex> l(st.m);
        st.matrix.push_back(row);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Peer: every ordered GPU pair at --matrix-bytes.
struct PeerGpu {
  int dev;
  DeviceBuffer src, dst;  // src holds the pattern, dst is poisoned before each measurement
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> e0, e1, mid;
};

void poison_device(int dev, unsigned char* p, size_t n, cudaStream_t s) {
  CUDA_CHECK(cudaSetDevice(dev));
  CUDA_CHECK(cudaMemsetAsync(p, kPoison, n, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
}

void run_peer(State& st, const Options& o, const std::vector<DeviceInfo>& devs, const std::vector<int>& allowed) {
  if (devs.size() < 2) return;
  const size_t n = o.matrix_bytes;
  const double target = o.target_ms * 1e-3;
  const HostOps ops(allowed);
  PinnedBuffer pattern, check;
  pattern.alloc(n);
  check.alloc(n);
  ops.fill(pattern.get(), n, pattern_seed(n, kTagPeer));
  std::vector<std::unique_ptr<PeerGpu>> gs;
  for (const auto& d : devs) {
    auto g = std::make_unique<PeerGpu>();
    g->dev = d.index;
    g->src.alloc(d.index, n);
    g->dst.alloc(d.index, n);
    g->stream = std::make_unique<Stream>(d.index);
    g->e0 = std::make_unique<Event>(d.index);
    g->e1 = std::make_unique<Event>(d.index);
    g->mid = std::make_unique<Event>(d.index);
    CUDA_CHECK(cudaSetDevice(d.index));
    CUDA_CHECK(cudaMemcpyAsync(g->src.get(), pattern.get(), n, cudaMemcpyHostToDevice, g->stream->get()));
    CUDA_CHECK(cudaStreamSynchronize(g->stream->get()));
    gs.push_back(std::move(g));
  }
  // Peer access first for every pair, so that both directions of a bidirectional copy are direct.
  const size_t G = gs.size();
  std::vector<std::vector<int>> can(G, std::vector<int>(G, 0));
  for (size_t i = 0; i < G; ++i)
    for (size_t j = 0; j < G; ++j) {
      if (i == j) continue;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can[i][j], gs[i]->dev, gs[j]->dev));
      if (!can[i][j]) continue;
      CUDA_CHECK(cudaSetDevice(gs[i]->dev));
      cudaError_t e = cudaDeviceEnablePeerAccess(gs[j]->dev, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();  // clear it: already enabled is fine
      else
        CUDA_CHECK(e);
    }

  auto verify_dst = [&](PeerGpu& g, const std::string& what) {
    CUDA_CHECK(cudaSetDevice(g.dev));
    return verify_device(st, ops, g.dst.get(), check.get(), pattern.get(), n, g.stream->get(), what);
  };
  for (size_t i = 0; i < G; ++i)
    for (size_t j = 0; j < G; ++j) {
      if (i == j) continue;
      PeerGpu& a = *gs[i];
      PeerGpu& z = *gs[j];
      PeerRow r;
      r.src = a.dev;
      r.dst = z.dev;
      r.access = can[i][j] != 0;
      if (!r.access) {
        std::lock_guard<std::mutex> l(st.m);
        st.peer.push_back(r);
        continue;
      }
      const std::string where = "gpu " + std::to_string(a.dev) + "->gpu " + std::to_string(z.dev) + " peer ";
      cudaStream_t sa = a.stream->get(), sz = z.stream->get();
      // One direction on the source GPU's stream: warm-up (two single copies, the second calibrates),
      // poison the destination, trials.
      auto one = [&](unsigned char* dst, int ddev, const unsigned char* src, int sdev, PeerGpu& dst_gpu,
                     const std::string& what) -> double {
        std::function<void()> issue = [&] { CUDA_CHECK(cudaMemcpyPeerAsync(dst, ddev, src, sdev, n, sa)); };
        CUDA_CHECK(cudaSetDevice(a.dev));
        time_events(sa, a.e0->get(), a.e1->get(), 1, issue);
        const long nrep = repetitions_for(target, time_events(sa, a.e0->get(), a.e1->get(), 1, issue));
        poison_device(dst_gpu.dev, dst_gpu.dst.get(), n, dst_gpu.stream->get());
        CUDA_CHECK(cudaSetDevice(a.dev));
        double best = std::numeric_limits<double>::infinity();
        for (int t = 0; t < o.trials; ++t) best = std::min(best, time_events(sa, a.e0->get(), a.e1->get(), nrep, issue) / nrep);
        r.verified = verify_dst(dst_gpu, what) && r.verified;
        return gbps(static_cast<double>(n), best);
      };
      r.verified = true;
      r.write = one(z.dst.get(), z.dev, a.src.get(), a.dev, z, where + "write " + std::to_string(n) + " bytes");
      r.read = one(a.dst.get(), a.dev, z.src.get(), z.dev, a, where + "read " + std::to_string(n) + " bytes");

      // Bidirectional: src->dst on the source's stream, dst->src on the destination's stream, started
      // together (as CUDA's p2pBandwidthLatencyTest does); bytes of both over the elapsed time of both.
      std::function<void()> fwd = [&] { CUDA_CHECK(cudaMemcpyPeerAsync(z.dst.get(), z.dev, a.src.get(), a.dev, n, sa)); };
      std::function<void()> bwd = [&] { CUDA_CHECK(cudaMemcpyPeerAsync(a.dst.get(), a.dev, z.src.get(), z.dev, n, sz)); };
      CUDA_CHECK(cudaSetDevice(a.dev));
      time_bidir(sa, sz, a.e0->get(), a.e1->get(), z.mid->get(), 1, fwd, bwd);
      const long nrep = repetitions_for(target, time_bidir(sa, sz, a.e0->get(), a.e1->get(), z.mid->get(), 1, fwd, bwd));
      poison_device(z.dev, z.dst.get(), n, sz);
      poison_device(a.dev, a.dst.get(), n, sa);
      double best = std::numeric_limits<double>::infinity();
      for (int t = 0; t < o.trials; ++t)
        best = std::min(best, time_bidir(sa, sz, a.e0->get(), a.e1->get(), z.mid->get(), nrep, fwd, bwd) / nrep);
      r.bidir = gbps(2.0 * static_cast<double>(n), best);
      r.verified = verify_dst(z, where + "bidir " + std::to_string(n) + " bytes (src->dst half)") && r.verified;
      r.verified = verify_dst(a, where + "bidir " + std::to_string(n) + " bytes (dst->src half)") && r.verified;
      std::fprintf(stderr, "[gpu %d->%d] peer: write %.2f read %.2f bidir %.2f GB/s\n", a.dev, z.dev, r.write, r.read,
                   r.bidir);
      std::lock_guard<std::mutex> l(st.m);
      st.peer.push_back(r);
    }
}

// ---------------------------------------------------------------------------------------------
// PCIe model (LogGP-style) from the pinned one-way sweep and the gap measurement.
struct ModelRow {
  int gpu = 0;
  const char* direction = "h2d";
  size_t lo_bytes = 0;
  double lo_us = NAN, lo_fit_us = NAN, G = NAN, asym_gbps = NAN, g_us = NAN, t1_us = NAN, max_rel_error = NAN;
  int fit_points = 0;
};

std::vector<ModelRow> build_model(const State& st) {
  std::vector<ModelRow> out;
  for (const auto& r : st.sweep) {
    if (r.case_idx != kCaseH2dPinned && r.case_idx != kCaseD2hPinned) continue;
    if (r.points.empty()) continue;
    const int dir = r.case_idx == kCaseH2dPinned ? 0 : 1;
    ModelRow m;
    m.gpu = r.gpu;
    m.direction = dir == 0 ? "h2d" : "d2h";
    m.lo_bytes = r.points.front().bytes;
    m.lo_us = r.points.front().seconds * 1e6;
    // Weighted by 1/T^2, i.e. least squares on relative residuals: unweighted, the absolute noise of the
    // largest sizes (tens of us at 1 GiB) would swamp the intercept L+o (a few us).
    std::vector<double> x, y, w;
    for (const auto& p : r.points)
      if (p.bytes >= kFitMinBytes && std::isfinite(p.seconds) && p.seconds > 0) {
        x.push_back(static_cast<double>(p.bytes));
        y.push_back(p.seconds);
        w.push_back(1.0 / (p.seconds * p.seconds));
      }
    m.fit_points = static_cast<int>(x.size());
    double a = NAN, G = NAN;
    if (fit_line(x, y, a, G, w)) {
      m.lo_fit_us = a * 1e6;
      m.G = G;
      m.asym_gbps = G > 0 ? 1.0 / G / 1e9 : NAN;
      double err = 0;
      for (size_t i = 0; i < x.size(); ++i) err = std::max(err, std::fabs(a + G * x[i] - y[i]) / y[i]);
      m.max_rel_error = err;
    }
    for (const auto& g : st.gaps)
      if (g.gpu == r.gpu && g.direction == dir) {
        m.g_us = g.g_us;
        m.t1_us = g.t1_us;
      }
    out.push_back(m);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Metrics.
double matrix_value(const MatrixRow& r, int which) {
  switch (which) {
    case 0: return r.h2d_pinned;
    case 1: return r.d2h_pinned;
    case 2: return r.h2d_pageable;
    case 3: return r.d2h_pageable;
    default: return r.bidir_pinned;
  }
}

// Median over the matrix rows of (gpu, node) (one row per node; several with --affinity cores); with
// bound_only, only rows whose CPU and memory binding succeeded.
double matrix_cell(const State& st, int gpu, int node, int which, bool bound_only = false) {
  std::vector<double> v;
  for (const auto& r : st.matrix)
    if (r.gpu == gpu && r.node == node && std::isfinite(matrix_value(r, which)) && (!bound_only || r.binding == "ok"))
      v.push_back(matrix_value(r, which));
  return median(v);
}

void compute_metrics(const State& st, const Options& o, const std::vector<DeviceInfo>& devs,
                     const std::vector<NumaNode>& nodes, std::vector<Metric>& metrics, Waived& waived,
                     GpuMetrics& per_gpu) {
  const std::string mb = human_bytes(o.matrix_bytes);
  // A metric without data after an error is waived for that reason, not for the option-based one.
  const bool stopped = !st.errors.empty();
  const std::string stop_why = "not measured: the run stopped at an error (see errors)";
  const char* per_core = o.affinity == "cores" ? " (median over the node's cores)" : "";

  // Matrix, local NUMA node.
  const char* mnames[] = {"h2d_pinned_min", "d2h_pinned_min", "h2d_pageable_min", "d2h_pageable_min",
                          "bidir_pinned_min"};
  const char* mdesc[] = {"H2D pinned", "D2H pinned", "H2D pageable", "D2H pageable",
                         "bidirectional pinned (H2D + D2H at once, bytes of both)"};
  for (int w = 0; w < 5; ++w) {
    if (!o.matrix) {
      waived.emplace_back(mnames[w], "matrix not run (--no-matrix)");
      continue;
    }
    std::vector<double> v;
    for (const auto& d : devs) {
      double x = matrix_cell(st, d.index, d.node, w);
      if (!std::isfinite(x)) continue;
      v.push_back(x);
      per_gpu.push_back({d.index, mnames[w], "GB/s", "higher", x});
    }
    if (v.empty()) {
      waived.emplace_back(mnames[w], stopped ? stop_why : "no matrix row on a GPU's local NUMA node");
      continue;
    }
    metrics.push_back({mnames[w], "GB/s", "higher",
                       std::string("min over GPUs of ") + mdesc[w] + " bandwidth at " + mb + ", local NUMA node" +
                           per_core + ", min time of " + std::to_string(o.trials) + " trials",
                       min_of(v)});
  }

  // Sweep rows by case.
  auto sweep_rows = [&](int ci) {
    std::vector<const SweepRow*> out;
    for (const auto& r : st.sweep)
      if (r.case_idx == ci && !r.points.empty()) out.push_back(&r);
    return out;
  };
  {
    std::vector<double> v;
    size_t bytes = 0;
    for (const SweepRow* r : sweep_rows(kCaseD2d)) {
      if (r->points.back().bytes != o.sizes.back()) continue;  // cut short by an error
      v.push_back(gbps(static_cast<double>(r->points.back().bytes), r->points.back().seconds));
      per_gpu.push_back({r->gpu, "d2d_min", "GB/s", "higher", v.back()});
      bytes = r->points.back().bytes;
    }
    if (v.empty())
      waived.emplace_back("d2d_min", !o.sweep                ? "sweep not run (--no-sweep)"
                                     : has_case(o, kCaseD2d) ? stop_why
                                                             : "d2d_oneway not in --cases");
    else
      metrics.push_back({"d2d_min", "GB/s", "higher",
                         "min over GPUs of device-to-device cudaMemcpyAsync at " + human_bytes(bytes) +
                             " (bytes copied per second; each byte read and written once)",
                         min_of(v)});
  }

  // Peers.
  const char* pnames[] = {"p2p_write_min", "p2p_read_min", "p2p_bidir_min"};
  const char* pdesc[] = {"peer write (cudaMemcpyPeerAsync src->dst on a stream of src)",
                         "peer read (dst->src on a stream of src)",
                         "peer bidirectional (both directions at once, bytes of both)"};
  for (int w = 0; w < 3; ++w) {
    std::string why;
    std::vector<double> v;
    if (!o.peer) why = "peer phase not run (--no-peer)";
    else if (devs.size() < 2) why = "one GPU: no peers";
    else {
      for (const auto& r : st.peer) {
        double x = w == 0 ? r.write : w == 1 ? r.read : r.bidir;
        if (r.access && std::isfinite(x)) v.push_back(x);
      }
      if (v.empty()) why = stopped ? stop_why : "no GPU pair with peer access";
    }
    if (!why.empty())
      waived.emplace_back(pnames[w], why);
    else
      metrics.push_back({pnames[w], "GB/s", "higher",
                         std::string("min over GPU pairs with peer access of ") + pdesc[w] + " at " + mb, min_of(v)});
  }

  // Latency and model.
  const std::vector<ModelRow> model = build_model(st);
  for (int dir = 0; dir < 2; ++dir) {
    const char* dname = dir == 0 ? "h2d" : "d2h";
    std::vector<double> lat, fit;
    size_t lo_bytes = 0;
    const std::string lname = std::string("latency_") + dname + "_max";
    const std::string fname = std::string(dname) + "_fit_lo_max";
    for (const auto& m : model)
      if (std::strcmp(m.direction, dname) == 0) {
        if (std::isfinite(m.lo_us)) {
          lat.push_back(m.lo_us);
          per_gpu.push_back({m.gpu, lname, "us", "lower", m.lo_us});
        }
        if (std::isfinite(m.lo_fit_us)) {
          fit.push_back(m.lo_fit_us);
          per_gpu.push_back({m.gpu, fname, "us", "lower", m.lo_fit_us});
        }
        lo_bytes = m.lo_bytes;
      }
    const std::string why_none = !o.sweep ? std::string("sweep not run (--no-sweep)")
                                 : has_case(o, dir == 0 ? kCaseH2dPinned : kCaseD2hPinned)
                                     ? stop_why
                                     : std::string(dname) + "_pinned_oneway not in --cases";
    if (lat.empty())
      waived.emplace_back(lname, why_none);
    else
      metrics.push_back({lname, "us", "lower",
                         std::string("max over GPUs of the pinned one-way ") + (dir == 0 ? "H2D" : "D2H") +
                             " time per transfer of the smallest sweep size (" + std::to_string(lo_bytes) +
                             " B), back-to-back copies",
                         max_of(lat)});
    if (fit.empty())
      waived.emplace_back(fname, lat.empty()  ? why_none
                                 : stopped    ? stop_why
                                              : "fewer than 2 sweep sizes >= 64 KiB to fit");
    else
      metrics.push_back({fname, "us", "lower",
                         std::string("max over GPUs of L+o fitted to the pinned one-way ") +
                             (dir == 0 ? "H2D" : "D2H") + " sweep, T(k) = L+o + k G by least squares on relative residuals over k >= 64 KiB",
                         max_of(fit)});
  }

  // Far over near NUMA node.
  {
    std::string why;
    std::vector<double> ratios;
    if (!o.matrix) why = "matrix not run (--no-matrix)";
    else if (nodes.size() < 2) why = "one NUMA node: no far node";
    else {
      for (const auto& d : devs)
        for (int w = 0; w < 2; ++w) {
          double near = matrix_cell(st, d.index, d.node, w, true);
          for (const auto& n : nodes) {
            if (n.id == d.node) continue;
            double far = matrix_cell(st, d.index, n.id, w, true);
            if (std::isfinite(near) && near > 0 && std::isfinite(far)) ratios.push_back(far / near);
          }
        }
      if (ratios.empty())
        why = stopped ? stop_why
                      : "no far-node and local-node matrix rows with successful NUMA binding to compare (see "
                        "results.matrix[].binding)";
    }
    if (!why.empty())
      waived.emplace_back("affinity_far_near_min", why);
    else
      metrics.push_back({"affinity_far_near_min", "ratio", "higher",
                         "min over GPUs, far NUMA nodes and directions (H2D, D2H pinned) of far-node over local-node "
                         "bandwidth at " + mb,
                         min_of(ratios)});
  }
}

// ---------------------------------------------------------------------------------------------
// The document.
const char* kTiming =
    "pinned, device-to-device and peer copies: one cudaEvent pair around nrepeat back-to-back cudaMemcpyAsync "
    "(cudaMemcpyPeerAsync) calls on one non-blocking stream, read after cudaEventSynchronize; pageable copies "
    "(cudaMemcpyAsync may be host-synchronous): host steady_clock from an idle stream around the loop plus "
    "cudaStreamSynchronize; after an untimed warm-up per (case, GPU), nrepeat is calibrated NetPIPE-style so one "
    "trial lasts about --target-ms (previous size's time per repetition scaled by the size ratio; matrix and "
    "peer: a timed single warm-up copy; 1..100000); the minimum over --trials trials is kept (sweep sizes whose "
    "one repetition exceeds --target-ms: ceil(trials*target/time) trials, at least 3), divided by nrepeat and, "
    "for round trips, by 2; GB/s = bytes/s/1e9; bidirectional: bytes of both directions over the elapsed time "
    "of both (second stream waits on the start event, stop after both); model g: n = 1..16 back-to-back 1-byte "
    "copies between one event pair, min over max(--trials, 10) trials, least-squares T1 + g (n-1); L+o fit: "
    "least squares on relative residuals over sizes >= 64 KiB; schedule: copies to or from the host (sweep, "
    "matrix) one GPU at a time, the device-local sweep on every GPU at once (started together after each GPU's "
    "warm-up), peer copies one pair at a time";

std::string document(const State& st, const Options& o, const Invocation& run,
                     const std::vector<DeviceInfo>& devices, const std::vector<NumaNode>& nodes) {
  std::vector<Metric> metrics;
  Waived waived;
  GpuMetrics per_gpu;
  if (!devices.empty()) compute_metrics(st, o, devices, nodes, metrics, waived, per_gpu);

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, [](Json& c) { c.kv_null("cublas_version"); });

  begin_parameters(j, devices);
  j.kv("max_bytes", o.max_bytes).kv("host_max_bytes", std::min(o.host_max_bytes, o.max_bytes));
  j.kv("min_bytes", o.min_bytes).kv("size_step", o.size_step).kv("perturbation", o.perturbation);
  j.kv("trials", o.trials).kv("target_ms", o.target_ms).kv("matrix_bytes", o.matrix_bytes);
  j.kv("affinity", o.affinity).kv("quick", o.quick);
  j.key("cases").begin_array();
  for (int ci : o.cases) j.value(kCases[ci].key);
  j.end_array();
  j.kv("sweep", o.sweep).kv("matrix", o.matrix).kv("peer", o.peer);
  j.key("sweep_sizes").begin_array();
  if (o.sweep)
    for (size_t n : o.sizes) j.value(static_cast<unsigned long long>(n));
  j.end_array();
  j.key("host_sweep_sizes").begin_array();
  if (o.sweep)
    for (size_t n : o.host_sizes) j.value(static_cast<unsigned long long>(n));
  j.end_array();
  j.kv("sweep_schedule", "cases to or from the host: one GPU at a time, up to host_max_bytes; d2d_oneway: every GPU "
                         "at once, one thread each, up to max_bytes");
  j.kv("max_repetitions", kMaxRepeat).kv("large_size_min_trials", kLargeMinTrials);
  j.kv("fit_min_bytes", static_cast<unsigned long long>(kFitMinBytes)).kv("gap_max_n", kGapMaxN);
  j.kv("gap_trials", std::max(o.trials, 10));
  j.kv("poison_byte", static_cast<int>(kPoison));
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING"});
  j.kv_objects("sweep", st.sweep, [&](const auto& r) {
    const CaseDef& c = kCases[r.case_idx];
    j.kv("gpu", r.gpu).kv("case", c.key).kv("numa_node", r.numa_node).kv("binding", r.binding);
    j.kv("description", c.description).kv("clock", c.host_clock ? "host steady_clock" : "cudaEvent");
    j.kv_objects("points", r.points, [&](const auto& p) {
      j.kv("bytes", static_cast<unsigned long long>(p.bytes)).kv("seconds", p.seconds);
      j.kv("gb_per_s", gbps(static_cast<double>(p.bytes), p.seconds)).kv("repetitions", p.repetitions);
      j.kv("trials", p.trials).kv("verified", p.verified);
    });
  });

  j.kv_objects("model", build_model(st), [&](const auto& m) {
    j.kv("gpu", m.gpu).kv("direction", m.direction).kv("lo_us", m.lo_us);
    j.kv("lo_bytes", static_cast<unsigned long long>(m.lo_bytes));
    j.kv("lo_fit_us", m.lo_fit_us).kv("G_s_per_byte", m.G).kv("asymptotic_gb_per_s", m.asym_gbps);
    j.kv("g_us", m.g_us).kv("g_t1_us", m.t1_us).kv("max_rel_error", m.max_rel_error);
    j.kv("fit_points", m.fit_points);
  });

  j.kv_objects("matrix", st.matrix, [&](const auto& r) {
    j.kv("gpu", r.gpu).kv("numa_node", r.node);
    if (r.core >= 0) j.kv("core", r.core); else j.kv_null("core");
    j.kv("local", r.local).kv("binding", r.binding).kv("bytes", static_cast<unsigned long long>(r.bytes));
    j.kv("h2d_pinned", r.h2d_pinned).kv("d2h_pinned", r.d2h_pinned);
    j.kv("h2d_pageable", r.h2d_pageable).kv("d2h_pageable", r.d2h_pageable).kv("bidir_pinned", r.bidir_pinned);
    if (r.pinned_page_node >= 0) j.kv("pinned_page_node", r.pinned_page_node); else j.kv_null("pinned_page_node");
    if (r.pageable_page_node >= 0) j.kv("pageable_page_node", r.pageable_page_node);
    else j.kv_null("pageable_page_node");
    j.kv("verified", r.verified);
  });

  j.kv_objects("peer", st.peer, [&](const auto& r) {
    j.kv("src", r.src).kv("dst", r.dst).kv("access", r.access);
    if (r.access) {
      j.kv("bytes", o.matrix_bytes);
      j.kv("write_gb_per_s", r.write).kv("read_gb_per_s", r.read).kv("bidir_gb_per_s", r.bidir);
      j.kv("verified", r.verified);
    } else {
      j.kv("waived", "cudaDeviceCanAccessPeer = 0");
    }
  });
  return end_results(j, metrics, waived, st.passed(false), st, per_gpu);
}

void print_summary(const State& st, const Options& o, const std::vector<DeviceInfo>& devices,
                   const std::vector<NumaNode>& nodes, double elapsed) {
  std::vector<Metric> metrics;
  Waived waived;
  GpuMetrics per_gpu;
  if (!devices.empty()) compute_metrics(st, o, devices, nodes, metrics, waived, per_gpu);
  std::printf("%-24s %12s %-6s %s\n", "metric", "value", "unit", "better");
  for (const auto& m : metrics)
    std::printf("%-24s %12.4g %-6s %s\n", m.name.c_str(), m.value, m.unit.c_str(), m.better.c_str());
  for (const auto& w : waived) std::printf("%-24s %12s        (%s)\n", w.first.c_str(), "waived", w.second.c_str());
  std::printf("verification: %s, %ld checks, %zu failures; errors: %zu; %.1f s\n",
              st.failures.empty() && st.errors.empty() ? "passed" : "FAILED", st.checked, st.failures.size(),
              st.errors.size(), elapsed);
}

}  // namespace

int run_tool(const Options& o, const Invocation& run) {

  State st;
  std::vector<DeviceInfo> devices;
  const std::vector<NumaNode> nodes = numa_nodes();
  const std::vector<int> allowed = process_cpus();
  auto write_doc = [&]() {
    return write_document(o.output, kTool, [&] { return document(st, o, run, devices, nodes); });
  };

  std::vector<int> gpu_ids;
  auto measure = [&] {
    for (int id : gpu_ids) {
      devices.push_back(device_info(id, nodes));
      CUDA_CHECK(cudaSetDevice(id));
      CUDA_CHECK(cudaFree(nullptr));  // create the context here, outside any timing or binding
      const DeviceInfo& d = devices.back();
      if (d.numa_node >= 0 && d.numa_node != d.node)
        st.note("gpu " + std::to_string(id) + ": NUMA node " + std::to_string(d.numa_node) +
                " has no CPUs; using node " + std::to_string(d.node) + " as its local node");
      if (d.numa_node < 0)
        st.note("gpu " + std::to_string(id) + ": no NUMA node in sysfs; using node " + std::to_string(d.node) +
                " as its local node");
      std::cerr << "[gpu " << id << "] " << d.name << ", " << d.pci_bus_id << ", NUMA node "
                << (d.numa_node >= 0 ? std::to_string(d.numa_node) : std::string("unknown (using ") +
                                                                         std::to_string(d.node) + ")")
                << "\n";
    }
    if (o.sweep) {
      const Options host = host_part(o), device = device_part(o);
      for (const auto& node : nodes) {
        std::vector<const DeviceInfo*> local;
        for (const auto& d : devices)
          if (d.node == node.id) local.push_back(&d);
        if (!local.empty() && !host.cases.empty()) sweep_node(st, host, node, allowed, local);
      }
      if (!device.cases.empty()) sweep_devices(st, device, nodes, allowed, devices);
      // Document order: by GPU, then case.
      std::stable_sort(st.sweep.begin(), st.sweep.end(), [](const SweepRow& a, const SweepRow& b) {
        return a.gpu != b.gpu ? a.gpu < b.gpu : a.case_idx < b.case_idx;
      });
      std::cerr << kTool << ": sweep done (" << static_cast<int>(now_s() - run.t0) << " s)\n";
    }
    if (o.matrix) {
      for (const auto& node : nodes) matrix_node(st, o, node, allowed, devices);
      std::cerr << kTool << ": matrix done (" << static_cast<int>(now_s() - run.t0) << " s)\n";
    }
    if (o.peer) {
      run_peer(st, o, devices, allowed);
      std::cerr << kTool << ": peer done (" << static_cast<int>(now_s() - run.t0) << " s)\n";
    }
  };
  return run_gpu_tool(st, o.gpus, gpu_ids, write_doc, measure,
                      [&] { print_summary(st, o, devices, nodes, now_s() - run.t0); });
}

int main(int argc, char** argv) {
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
}
