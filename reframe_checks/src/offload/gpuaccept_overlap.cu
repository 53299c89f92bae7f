// gpuaccept-overlap: compute/transfer overlap (van Werkhoven et al., "Performance Models for CPU-GPU Data
// Transfers", CCGrid 2014). Data that starts and ends in pinned host memory goes through a kernel of tunable
// arithmetic intensity, moved each of the ways the paper compares:
//   sync        cudaMemcpy H2D, kernel, cudaMemcpy D2H on the legacy default stream (no overlap)
//   streams_<n> the data split into n chunks, chunk i's cudaMemcpyAsync H2D, kernel and cudaMemcpyAsync D2H on
//               stream i (n non-blocking streams)
//   mapped      zero-copy: the kernel reads and writes the pinned host buffers (cudaHostAllocMapped) directly
//   managed     cudaMallocManaged buffers: cudaMemPrefetchAsync of the input to the GPU, kernel, prefetch of
//               the output back to the host (not run where the device lacks concurrent managed access)
// and, for the model (src/gpuaccept/probe/overlap.py), in the same run: the kernel alone on device-resident
// data per intensity, one full-size H2D copy alone, one D2H alone, both at once (bidirectional), the 1-byte
// copy time (L+o) and the gap g between back-to-back 1-byte copies per direction, and the device's
// asyncEngineCount. Every method's output is checked on the host at sampled elements. Times: cudaEvent pairs,
// median of --reps repetitions after one warm-up. The JSON document (docs/benchmark-json.md,
// docs/checks/overlap.md) is written to --output FILE, or to stdout without --output.

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "tool_main.h"

using namespace gpuaccept;

namespace {

constexpr const char* kTool = "gpuaccept-overlap";
constexpr int kBlock = 256;                 // threads per block
constexpr int kBlocksPerSm = 16;            // grid: at most this many blocks per SM (grid-stride loop)
constexpr float kFmaA = 0.999f;             // the kernel: v = fma(v, a, b), `iters` times per element
constexpr float kFmaB = 0.001f;
constexpr int kFlopsPerIter = 2;            // one FMA
constexpr int kBytesPerElement = 8;         // 4 bytes in (H2D) and 4 bytes out (D2H)
constexpr int kSamples = 1024;              // verification: evenly spaced elements, plus every chunk's ends
constexpr int kSmallReps = 50;              // 1-byte copies: repetitions for L+o and g
constexpr int kGapN = 16;                   // g: n back-to-back 1-byte copies, g = (T(n) - T(1)) / (n - 1)
constexpr unsigned char kPoisonByte = 0xFF; // outputs are set to this (a NaN pattern) before each method
constexpr long kMaxMib = 16384;

// ---------------------------------------------------------------------------------------------
// Options.
struct Options {
  std::string gpus = "all";
  long mib = 256;
  std::vector<double> intensities;
  std::vector<int> streams;
  int reps = 9;
  bool quick = false, mapped = true, managed = true;
  std::string output;
};

const char* kUsage =
    "usage: gpuaccept-overlap [options]\n"
    "Compute/transfer overlap (after van Werkhoven et al. 2014): a kernel of tunable arithmetic intensity over\n"
    "data that starts and ends in pinned host memory, moved by synchronous copies, asynchronous copies in n\n"
    "streams, mapped (zero-copy) host memory and managed memory with prefetch; plus the pieces the model needs\n"
    "(kernel alone, H2D, D2H, bidirectional, 1-byte copies and their gap g). Every method's output verified at\n"
    "sampled elements.\n"
    "  --gpus all|LIST      CUDA device indices, measured one after the other (default all visible)\n"
    "  --mib N              size of the input (and of the output) in MiB (default 256, --quick 64)\n"
    "  --intensities LIST   flop per byte moved over PCIe (input + output bytes), multiples of 0.25\n"
    "                       (default 0.25,1,4,16,64,256,1024,4096; --quick 0.25,16,1024)\n"
    "  --streams LIST       stream counts for the streamed method (default 1,2,4,8,16)\n"
    "  --reps N             timed repetitions per measurement, the median is kept (default 9, --quick 5)\n"
    "  --no-mapped, --no-managed   skip a method\n"
    "  --quick              nightly: 64 MiB, three intensities, 5 repetitions (explicit options still win)\n";
const UsageTail kUsageTail{23, true, nullptr, "CUDA call failed or no GPU"};

std::vector<double> parse_double_list(const std::string& opt, const std::string& text) {
  std::vector<double> out;
  auto parts = split_csv(text);
  if (parts.empty()) throw std::invalid_argument("option --" + opt + ": empty list");
  for (const auto& s : parts) out.push_back(Args::number(opt, s));
  return out;
}

Options parse_options(Args& a) {
  Options o;
  o.quick = a.flag("quick");
  o.mapped = !a.flag("no-mapped");
  o.managed = !a.flag("no-managed");
  o.gpus = a.get_gpus();
  o.mib = a.get_long("mib", o.quick ? 64 : 256);
  if (o.mib < 1 || o.mib > kMaxMib) throw std::invalid_argument("option --mib: must be in 1..16384");
  o.intensities = parse_double_list(
      "intensities", a.get("intensities", o.quick ? "0.25,16,1024" : "0.25,1,4,16,64,256,1024,4096"));
  for (double x : o.intensities) {
    double iters = x * kBytesPerElement / kFlopsPerIter;
    if (!(x > 0) || !(iters <= 1e6) || std::fabs(iters - std::round(iters)) > 1e-9)
      throw std::invalid_argument("option --intensities: " + std::to_string(x) +
                                  " is not a positive multiple of 0.25 flop/byte up to 250000");
  }
  for (const auto& s : split_csv(a.get("streams", "1,2,4,8,16"))) {
    const long n = Args::whole_number("streams", s);
    if (n < 1 || n > 256) throw std::invalid_argument("option --streams: " + s + " is not in 1..256");
    if (std::find(o.streams.begin(), o.streams.end(), static_cast<int>(n)) == o.streams.end())
      o.streams.push_back(static_cast<int>(n));
  }
  if (o.streams.empty()) throw std::invalid_argument("option --streams: empty list");
  long reps = a.get_long("reps", o.quick ? 5 : 9);
  if (reps < 1 || reps > 1000) throw std::invalid_argument("option --reps: must be in 1..1000");
  o.reps = static_cast<int>(reps);
  o.output = a.get("output", "");
  a.reject_unknown();
  return o;
}

int iters_of(double intensity) { return static_cast<int>(std::lround(intensity * kBytesPerElement / kFlopsPerIter)); }

// ---------------------------------------------------------------------------------------------
// The kernel and its host twin: out[i] = in[i] after `iters` steps of v = fma(v, a, b). fmaf is correctly
// rounded on both sides, so the host's value is the device's.
__global__ void fma_kernel(const float* __restrict__ in, float* __restrict__ out, size_t n, int iters, float a,
                           float b) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = in[i];
#pragma unroll 8
    for (int k = 0; k < iters; ++k) v = fmaf(v, a, b);
    out[i] = v;
  }
}

float host_expected(float x, int iters) {
  float v = x;
  for (int k = 0; k < iters; ++k) v = std::fma(v, kFmaA, kFmaB);
  return v;
}

// The input pattern: values in [0, 1), different from element to element.
float input_value(size_t i) { return static_cast<float>((i * 2654435761ull) % 1000003ull) / 1000003.0f; }

// ---------------------------------------------------------------------------------------------
// Resources that free themselves (errors on release are ignored).
struct HostBuf : CudaOwned<void*, cudaFreeHost> {  // pinned, portable, mapped into the device address space
  void alloc(size_t n) { CUDA_CHECK(cudaHostAlloc(&p, n, cudaHostAllocPortable | cudaHostAllocMapped)); }
  float* f() const { return static_cast<float*>(p); }
};

struct DevBuf : CudaOwned<void*, cudaFree> {  // cudaMalloc or cudaMallocManaged, freed on its device
  void alloc(int d, size_t n) {
    dev = d;
    CUDA_CHECK(cudaMalloc(&p, n));
  }
  void alloc_managed(int d, size_t n) {
    dev = d;
    CUDA_CHECK(cudaMallocManaged(&p, n, cudaMemAttachGlobal));
  }
  float* f() const { return static_cast<float*>(p); }
};

struct StreamSet {  // non-blocking streams, each with an event (no timing) that marks its end
  int dev = 0;
  std::vector<cudaStream_t> s;
  std::vector<cudaEvent_t> done;
  StreamSet() = default;
  StreamSet(const StreamSet&) = delete;
  StreamSet& operator=(const StreamSet&) = delete;
  ~StreamSet() {
    cudaSetDevice(dev);
    for (auto e : done) cudaEventDestroy(e);
    for (auto x : s) cudaStreamDestroy(x);
  }
  void create(int d, int n) {
    dev = d;
    for (int i = 0; i < n; ++i) {
      cudaStream_t x = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
      s.push_back(x);
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      done.push_back(e);
    }
  }
};

struct EventPair {
  int dev = 0;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    cudaSetDevice(dev);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
  }
  void create(int d) {
    dev = d;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
  }
};

// ---------------------------------------------------------------------------------------------
// Results.
struct MethodResult {
  std::string key;        // sync, streams_<n>, mapped, managed
  int streams = 0;        // streams (and chunks) used; 1 for sync, mapped and managed
  double seconds = NAN;   // median of the repetitions
  std::vector<double> samples_s;
  bool run = false;
  std::string not_run;    // why not, where !run
  bool verified = false;
  long checked = 0;       // elements compared
};

struct IntensityResult {
  double intensity = 0;   // flop per byte moved over PCIe
  int iters = 0;          // FMAs per element
  double kernel_s = NAN;  // the kernel alone on device-resident data, median
  std::vector<double> kernel_samples_s;
  std::vector<MethodResult> methods;
};

struct DirResult {  // one direction's copies
  double lo_s = NAN;     // one 1-byte copy (L+o), median of kSmallReps
  double gap_n_s = NAN;  // kGapN back-to-back 1-byte copies, median of kSmallReps
  double g_s = NAN;      // (gap_n_s - lo_s) / (kGapN - 1)
  double full_s = NAN;   // one copy of the whole buffer, median of --reps
  double G = NAN;        // (full_s - lo_s) / bytes
  std::vector<double> full_samples_s;
};

struct GpuResult {
  int gpu = 0;
  int async_engine_count = -1, concurrent_kernels = -1, can_map_host_memory = -1, managed_memory = -1,
      concurrent_managed_access = -1, unified_addressing = -1;
  size_t bytes = 0;  // of the input, and of the output
  DirResult h2d, d2h;
  double bidir_s = NAN;  // H2D and D2H of the whole buffer at once, on two streams, median
  std::vector<double> bidir_samples_s;
  std::vector<IntensityResult> intensities;
  bool complete = false;
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<GpuResult> gpus;
};

// ---------------------------------------------------------------------------------------------
// Timing: `issue` enqueues the work; the event pair brackets it on stream s (0: the legacy default stream).
template <typename Issue>
double time_on(cudaStream_t s, const EventPair& ev, Issue&& issue) {
  CUDA_CHECK(cudaEventRecord(ev.e0, s));
  issue();
  CUDA_CHECK(cudaEventRecord(ev.e1, s));
  CUDA_CHECK(cudaEventSynchronize(ev.e1));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, ev.e0, ev.e1));
  return ms * 1e-3;
}

// Work on the first n streams of ss: they all start after e0 (recorded on stream 0 of the set) and e1 is
// recorded once every one of them is done. issue(i, stream) enqueues stream i's part.
template <typename Issue>
double time_streams(const StreamSet& ss, int n, const EventPair& ev, Issue&& issue) {
  cudaStream_t s0 = ss.s[0];
  CUDA_CHECK(cudaEventRecord(ev.e0, s0));
  for (int i = 1; i < n; ++i) CUDA_CHECK(cudaStreamWaitEvent(ss.s[i], ev.e0, 0));
  for (int i = 0; i < n; ++i) issue(i, ss.s[i]);
  for (int i = 1; i < n; ++i) {
    CUDA_CHECK(cudaEventRecord(ss.done[i], ss.s[i]));
    CUDA_CHECK(cudaStreamWaitEvent(s0, ss.done[i], 0));
  }
  CUDA_CHECK(cudaEventRecord(ev.e1, s0));
  CUDA_CHECK(cudaEventSynchronize(ev.e1));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, ev.e0, ev.e1));
  return ms * 1e-3;
}

// One warm-up, then `reps` timed runs of `once` (which returns seconds); `before` runs untimed before each.
std::vector<double> repeat(int reps, const std::function<double()>& once,
                           const std::function<void()>& before = nullptr) {
  if (before) before();
  once();
  std::vector<double> out;
  for (int r = 0; r < reps; ++r) {
    if (before) before();
    out.push_back(once());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// One GPU.
struct Ctx {
  int dev = 0;
  int sms = 1;
  size_t n = 0;      // elements
  size_t bytes = 0;  // n * 4
  HostBuf h_in, h_out;
  float* m_in_dev = nullptr;   // device pointers of the mapped host buffers
  float* m_out_dev = nullptr;
  DevBuf d_in, d_out, u_in, u_out;  // device buffers; managed buffers (u_*), where managed runs
  std::string managed_why;  // why the managed buffers could not be allocated ("" where they were)
  StreamSet ss;
  EventPair ev;
};

void launch(const Ctx& c, const float* in, float* out, size_t n, int iters, cudaStream_t s) {
  if (n == 0) return;
  size_t want = (n + kBlock - 1) / kBlock;
  unsigned blocks = static_cast<unsigned>(std::min<size_t>(want, static_cast<size_t>(c.sms) * kBlocksPerSm));
  fma_kernel<<<std::max(1u, blocks), kBlock, 0, s>>>(in, out, n, iters, kFmaA, kFmaB);
  CUDA_CHECK_LAST();
}

// Chunk i of n: elements [begin, end).
std::pair<size_t, size_t> chunk(size_t total, int n, int i) {
  return {total * static_cast<size_t>(i) / static_cast<size_t>(n),
          total * static_cast<size_t>(i + 1) / static_cast<size_t>(n)};
}

// The elements compared: kSamples evenly spaced, and the first and last element of every chunk of n.
std::vector<size_t> sample_indices(size_t total, int nchunks) {
  std::vector<size_t> idx;
  for (int k = 0; k < kSamples; ++k)
    idx.push_back(total <= 1 ? 0 : static_cast<size_t>(static_cast<double>(k) * (total - 1) / (kSamples - 1)));
  for (int i = 0; i < nchunks; ++i) {
    auto [b, e] = chunk(total, nchunks, i);
    if (e > b) {
      idx.push_back(b);
      idx.push_back(e - 1);
    }
  }
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  return idx;
}

// Compares out at the sampled elements with the host's value of the kernel over in; records the outcome.
void verify(State& st, MethodResult& m, int gpu, double intensity, const float* in, const float* out, size_t total,
            int iters, int nchunks) {
  long bad = 0;
  std::string first;
  const auto idx = sample_indices(total, nchunks);
  for (size_t i : idx) {
    float want = host_expected(in[i], iters);
    float got = out[i];
    bool ok = std::isfinite(got) && std::fabs(got - want) <= 1e-5f * std::max(1.0f, std::fabs(want));
    if (!ok && bad++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu: got %.9g, expected %.9g", i, static_cast<double>(got),
                    static_cast<double>(want));
      first = buf;
    }
  }
  m.checked = static_cast<long>(idx.size());
  m.verified = bad == 0;
  st.checked += m.checked;
  if (bad) {
    char head[160];
    std::snprintf(head, sizeof head, "gpu %d, method %s, intensity %g flop/byte: ", gpu, m.key.c_str(), intensity);
    std::string msg = std::string(head) + std::to_string(bad) + " of " + std::to_string(idx.size()) +
                      " sampled elements wrong, first " + first;
    st.failure(msg);
  }
}

void poison_outputs(const Ctx& c) {
  std::memset(c.h_out.p, kPoisonByte, c.bytes);
  CUDA_CHECK(cudaMemset(c.d_out.p, kPoisonByte, c.bytes));
  CUDA_CHECK(cudaDeviceSynchronize());
}

cudaMemLocation device_location(int dev) {
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = dev;
  return loc;
}

cudaMemLocation host_location() {
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeHost;
  loc.id = 0;  // ignored for cudaMemLocationTypeHost
  return loc;
}

// The copy pieces of the model: 1-byte copies (L+o, g), one full-size copy per direction, both at once.
void measure_copies(const Ctx& c, const Options& o, GpuResult& r) {
  cudaStream_t s0 = c.ss.s[0];
  for (int dir = 0; dir < 2; ++dir) {
    DirResult& d = dir == 0 ? r.h2d : r.d2h;
    void* dst = dir == 0 ? c.d_in.p : c.h_out.p;
    const void* src = dir == 0 ? c.h_in.p : c.d_out.p;
    cudaMemcpyKind kind = dir == 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    auto one = [&] { return time_on(s0, c.ev, [&] { CUDA_CHECK(cudaMemcpyAsync(dst, src, 1, kind, s0)); }); };
    auto many = [&] {
      return time_on(s0, c.ev, [&] {
        for (int k = 0; k < kGapN; ++k) CUDA_CHECK(cudaMemcpyAsync(dst, src, 1, kind, s0));
      });
    };
    d.lo_s = median(repeat(kSmallReps, one));
    d.gap_n_s = median(repeat(kSmallReps, many));
    d.g_s = (d.gap_n_s - d.lo_s) / (kGapN - 1);
    d.full_samples_s = repeat(o.reps, [&] {
      return time_on(s0, c.ev, [&] { CUDA_CHECK(cudaMemcpyAsync(dst, src, c.bytes, kind, s0)); });
    });
    d.full_s = median(d.full_samples_s);
    d.G = (d.full_s - d.lo_s) / static_cast<double>(c.bytes);
  }
  r.bidir_samples_s = repeat(o.reps, [&] {
    return time_streams(c.ss, 2, c.ev, [&](int i, cudaStream_t s) {
      if (i == 0) CUDA_CHECK(cudaMemcpyAsync(c.d_in.p, c.h_in.p, c.bytes, cudaMemcpyHostToDevice, s));
      else CUDA_CHECK(cudaMemcpyAsync(c.h_out.p, c.d_out.p, c.bytes, cudaMemcpyDeviceToHost, s));
    });
  });
  r.bidir_s = median(r.bidir_samples_s);
  // d_in again holds the input for the kernel-alone timings.
  CUDA_CHECK(cudaMemcpy(c.d_in.p, c.h_in.p, c.bytes, cudaMemcpyHostToDevice));
}

// A method before it runs: its key and the streams it uses.
MethodResult method(std::string key, int streams) {
  MethodResult m;
  m.key = std::move(key);
  m.streams = streams;
  return m;
}

// A method that does not run, and why, among the intensity's results.
void not_run(IntensityResult& ir, MethodResult m, std::string why) {
  m.not_run = std::move(why);
  ir.methods.push_back(std::move(m));
}

// Runs one method: poisons the outputs, times it (median), verifies the host output of the last repetition.
void run_method(State& st, const Ctx& c, const Options& o, IntensityResult& ir, MethodResult m,
                const std::function<double()>& once, const std::function<void()>& before, const float* host_out) {
  poison_outputs(c);
  m.samples_s = repeat(o.reps, once, before);
  m.seconds = median(m.samples_s);
  m.run = true;
  verify(st, m, c.dev, ir.intensity, c.h_in.f(), host_out, c.n, ir.iters, m.streams);
  ir.methods.push_back(std::move(m));
}

void measure_intensity(State& st, Ctx& c, const Options& o, const GpuResult& r, IntensityResult& ir) {
  const int it = ir.iters;
  cudaStream_t s0 = c.ss.s[0];
  // The kernel alone, on device-resident data.
  ir.kernel_samples_s = repeat(o.reps, [&] {
    return time_on(s0, c.ev, [&] { launch(c, c.d_in.f(), c.d_out.f(), c.n, it, s0); });
  });
  ir.kernel_s = median(ir.kernel_samples_s);

  // (a) Synchronous copies on the legacy default stream.
  run_method(st, c, o, ir, method("sync", 1),
             [&] {
               return time_on(0, c.ev, [&] {
                 CUDA_CHECK(cudaMemcpy(c.d_in.p, c.h_in.p, c.bytes, cudaMemcpyHostToDevice));
                 launch(c, c.d_in.f(), c.d_out.f(), c.n, it, 0);
                 CUDA_CHECK(cudaMemcpy(c.h_out.p, c.d_out.p, c.bytes, cudaMemcpyDeviceToHost));
               });
             },
             nullptr, c.h_out.f());
  // (b) Asynchronous copies in n streams, one chunk per stream.
  for (int ns : o.streams) {
    run_method(st, c, o, ir, method("streams_" + std::to_string(ns), ns),
               [&] {
                 return time_streams(c.ss, ns, c.ev, [&](int i, cudaStream_t s) {
                   auto [b, e] = chunk(c.n, ns, i);
                   if (e <= b) return;
                   size_t len = (e - b) * sizeof(float);
                   CUDA_CHECK(cudaMemcpyAsync(c.d_in.f() + b, c.h_in.f() + b, len, cudaMemcpyHostToDevice, s));
                   launch(c, c.d_in.f() + b, c.d_out.f() + b, e - b, it, s);
                   CUDA_CHECK(cudaMemcpyAsync(c.h_out.f() + b, c.d_out.f() + b, len, cudaMemcpyDeviceToHost, s));
                 });
               },
               nullptr, c.h_out.f());
  }
  // (c) Mapped (zero-copy) host memory.
  if (!o.mapped) {
    not_run(ir, method("mapped", 1), "not asked for (--no-mapped)");
  } else if (r.can_map_host_memory != 1) {
    not_run(ir, method("mapped", 1), "the device cannot map host memory (cudaDevAttrCanMapHostMemory = 0)");
  } else {
    run_method(st, c, o, ir, method("mapped", 1),
               [&] { return time_on(s0, c.ev, [&] { launch(c, c.m_in_dev, c.m_out_dev, c.n, it, s0); }); },
               nullptr, c.h_out.f());
  }
  // (d) Managed memory with prefetch. The input starts on the host and the output buffer on the GPU (as the
  // explicit methods' device buffers do), untimed before each repetition.
  if (!o.managed) {
    not_run(ir, method("managed", 1), "not asked for (--no-managed)");
  } else if (c.u_in.p == nullptr || c.u_out.p == nullptr) {
    not_run(ir, method("managed", 1),
            !c.managed_why.empty()     ? c.managed_why
            : r.managed_memory != 1 ? "the device has no managed memory (cudaDevAttrManagedMemory = 0)"
                                    : "the device cannot prefetch managed memory "
                                      "(cudaDevAttrConcurrentManagedAccess = 0)");
  } else {
    const cudaMemLocation on_gpu = device_location(c.dev), on_host = host_location();
    auto before = [&] {
      CUDA_CHECK(cudaMemPrefetchAsync(c.u_in.p, c.bytes, on_host, 0, s0));
      CUDA_CHECK(cudaMemPrefetchAsync(c.u_out.p, c.bytes, on_gpu, 0, s0));
      CUDA_CHECK(cudaStreamSynchronize(s0));
    };
    std::memset(c.u_out.p, kPoisonByte, c.bytes);  // on the host: the poison travels with the pages
    run_method(st, c, o, ir, method("managed", 1),
               [&] {
                 return time_on(s0, c.ev, [&] {
                   CUDA_CHECK(cudaMemPrefetchAsync(c.u_in.p, c.bytes, on_gpu, 0, s0));
                   launch(c, c.u_in.f(), c.u_out.f(), c.n, it, s0);
                   CUDA_CHECK(cudaMemPrefetchAsync(c.u_out.p, c.bytes, on_host, 0, s0));
                 });
               },
               before, c.u_out.f());
  }
}

void measure_gpu(State& st, const Options& o, int dev) {
  st.gpus.emplace_back();
  GpuResult& r = st.gpus.back();
  r.gpu = dev;
  CUDA_CHECK(cudaSetDevice(dev));
  CUDA_CHECK(cudaFree(nullptr));  // the context, outside any timing
  auto attr = [dev](cudaDeviceAttr a) {
    int v = -1;
    CUDA_CHECK(cudaDeviceGetAttribute(&v, a, dev));
    return v;
  };
  // The capabilities that decide which methods can run (the document's "device"), in this order.
  const std::pair<int*, cudaDeviceAttr> capabilities[] = {
      {&r.async_engine_count, cudaDevAttrAsyncEngineCount},
      {&r.concurrent_kernels, cudaDevAttrConcurrentKernels},
      {&r.can_map_host_memory, cudaDevAttrCanMapHostMemory},
      {&r.managed_memory, cudaDevAttrManagedMemory},
      {&r.concurrent_managed_access, cudaDevAttrConcurrentManagedAccess},
      {&r.unified_addressing, cudaDevAttrUnifiedAddressing},
  };
  for (const auto& [field, a] : capabilities) *field = attr(a);

  Ctx c;
  c.dev = dev;
  c.sms = std::max(1, attr(cudaDevAttrMultiProcessorCount));
  c.bytes = static_cast<size_t>(o.mib) << 20;
  c.n = c.bytes / sizeof(float);
  r.bytes = c.bytes;
  int max_streams = 2;
  for (int ns : o.streams) max_streams = std::max(max_streams, ns);
  c.ss.create(dev, max_streams);
  c.ev.create(dev);
  c.h_in.alloc(c.bytes);
  c.h_out.alloc(c.bytes);
  c.d_in.alloc(dev, c.bytes);
  c.d_out.alloc(dev, c.bytes);
  float* in = c.h_in.f();
  for (size_t i = 0; i < c.n; ++i) in[i] = input_value(i);
  std::memset(c.h_out.p, 0, c.bytes);  // first touch
  CUDA_CHECK(cudaMemset(c.d_out.p, 0, c.bytes));
  CUDA_CHECK(cudaMemcpy(c.d_in.p, c.h_in.p, c.bytes, cudaMemcpyHostToDevice));
  if (r.can_map_host_memory == 1) {
    CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&c.m_in_dev), c.h_in.p, 0));
    CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&c.m_out_dev), c.h_out.p, 0));
  }
  if (o.managed && r.managed_memory == 1 && r.concurrent_managed_access == 1) {
    try {
      c.u_in.alloc_managed(dev, c.bytes);
      c.u_out.alloc_managed(dev, c.bytes);
      std::memcpy(c.u_in.p, c.h_in.p, c.bytes);  // written on the host: the input starts there
    } catch (const CallError& e) {  // an allocation refused: the method is not run, the others are
      cudaGetLastError();
      c.managed_why = std::string("managed memory could not be allocated: ") + e.what();
      st.note("gpu " + std::to_string(dev) + ": " + c.managed_why);
    }
  } else if (o.managed) {
    st.note("gpu " + std::to_string(dev) + ": managed method not run (cudaDevAttrManagedMemory = " +
            std::to_string(r.managed_memory) + ", cudaDevAttrConcurrentManagedAccess = " +
            std::to_string(r.concurrent_managed_access) + ")");
  }

  std::cerr << "[gpu " << dev << "] asyncEngineCount " << r.async_engine_count << ", " << o.mib << " MiB\n";
  measure_copies(c, o, r);
  for (double x : o.intensities) {
    r.intensities.emplace_back();
    IntensityResult& ir = r.intensities.back();
    ir.intensity = x;
    ir.iters = iters_of(x);
    measure_intensity(st, c, o, r, ir);
    std::cerr << "[gpu " << dev << "] intensity " << x << " flop/byte: kernel " << ir.kernel_s * 1e3 << " ms\n";
  }
  r.complete = true;
}

// ---------------------------------------------------------------------------------------------
// The document.
const char* kTiming =
    "cudaEvent pair around each repetition (sync: on the legacy default stream around cudaMemcpy, kernel, "
    "cudaMemcpy; streams: recorded on stream 0, the other streams wait on it and stream 0 waits on each stream's "
    "end before the closing event); one untimed warm-up, then the median of parameters.repetitions repetitions; "
    "1-byte copies (L+o, and parameters.gap_copies back to back for g): median of "
    "parameters.small_copy_repetitions; managed: the input prefetched to the host and the output to the GPU "
    "untimed before each repetition";

double fraction_overlapped(const GpuResult& r) {
  // 1: H2D and D2H at once take as long as the slower alone (full duplex); 0: as long as both one after the other.
  double sum = r.h2d.full_s + r.d2h.full_s, mx = std::max(r.h2d.full_s, r.d2h.full_s);
  return (sum - mx) > 0 ? (sum - r.bidir_s) / (sum - mx) : NAN;
}

std::string document(const State& st, const Options& o, const Invocation& run, const std::vector<DeviceInfo>& devices) {
  std::vector<Metric> metrics;
  Waived waived;
  {
    std::vector<double> duplex, speedup;
    for (const auto& r : st.gpus) {
      if (!r.complete) continue;
      duplex.push_back(fraction_overlapped(r));
      for (const auto& ir : r.intensities) {
        double sync = NAN, best = NAN;
        for (const auto& m : ir.methods) {
          if (!m.run) continue;
          if (m.key == "sync") sync = m.seconds;
          else if (m.key.rfind("streams_", 0) == 0 && !(best <= m.seconds)) best = m.seconds;
        }
        if (std::isfinite(sync) && std::isfinite(best) && best > 0) speedup.push_back(sync / best);
      }
    }
    const std::string why = st.errors.empty() ? "no GPU measured" : "the run stopped: " + st.errors.front();
    if (duplex.empty()) waived.emplace_back("duplex_overlap_min", why);
    else
      metrics.push_back({"duplex_overlap_min", "ratio", "higher",
                         "min over GPUs of (T_h2d + T_d2h - T_bidir) / min(T_h2d, T_d2h) for " + std::to_string(o.mib) +
                             " MiB each way: 1 full duplex, 0 the two directions serialised",
                         min_of(duplex)});
    if (speedup.empty()) waived.emplace_back("stream_speedup_min", why);
    else
      metrics.push_back({"stream_speedup_min", "ratio", "higher",
                         "min over GPUs and intensities of the sync time over the best streams_<n> time",
                         min_of(speedup)});
  }

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, [](Json& c) { c.kv_null("cublas_version"); });

  begin_parameters(j, devices);
  j.kv("bytes", static_cast<unsigned long long>(o.mib) << 20).kv("mib", o.mib);
  j.kv_array("intensities_flop_per_byte", o.intensities);
  j.kv_array("streams", o.streams);
  j.kv("repetitions", o.reps).kv("statistic", "median").kv("warmup_repetitions", 1);
  j.kv("small_copy_repetitions", kSmallReps).kv("gap_copies", kGapN);
  j.kv("element", "float32").kv("bytes_per_element_moved", kBytesPerElement).kv("flops_per_fma", kFlopsPerIter);
  j.kv("kernel", "out[i] = in[i] after iters steps of v = fmaf(v, 0.999, 0.001); iters = intensity * 8 / 2");
  j.kv("verification_samples", kSamples).kv("mapped", o.mapped).kv("managed", o.managed).kv("quick", o.quick);
  // CUDA_DEVICE_MAX_CONNECTIONS: hardware queues the streams share (8 by default); more streams than queues can
  // wait on each other's work.
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
                     "CUDA_DEVICE_MAX_CONNECTIONS"});
  j.kv_objects("per_gpu", st.gpus, [&](const auto& r) {
    j.kv("gpu", r.gpu).kv("complete", r.complete).kv("bytes", static_cast<unsigned long long>(r.bytes));
    j.key("device").begin_object();
    j.kv("async_engine_count", r.async_engine_count).kv("concurrent_kernels", r.concurrent_kernels);
    j.kv("can_map_host_memory", r.can_map_host_memory).kv("managed_memory", r.managed_memory);
    j.kv("concurrent_managed_access", r.concurrent_managed_access).kv("unified_addressing", r.unified_addressing);
    j.end_object();
    j.key("copies").begin_object();
    for (int dir = 0; dir < 2; ++dir) {
      const DirResult& d = dir == 0 ? r.h2d : r.d2h;
      j.key(dir == 0 ? "h2d" : "d2h").begin_object();
      j.kv("lo_us", d.lo_s * 1e6).kv("gap_n_us", d.gap_n_s * 1e6).kv("g_us", d.g_s * 1e6);
      j.kv("full_s", d.full_s).kv("G_s_per_byte", d.G).kv("gb_per_s", r.bytes / d.full_s / 1e9);
      j.kv_array("full_samples_s", d.full_samples_s);
      j.end_object();
    }
    j.key("bidir").begin_object();
    j.kv("seconds", r.bidir_s).kv("gb_per_s", 2.0 * r.bytes / r.bidir_s / 1e9);
    j.kv("fraction_overlapped", fraction_overlapped(r));
    j.kv_array("samples_s", r.bidir_samples_s);
    j.end_object();
    j.end_object();
    j.kv_objects("intensities", r.intensities, [&](const auto& ir) {
      j.kv("flop_per_byte", ir.intensity).kv("fma_per_element", ir.iters);
      j.kv("flops", static_cast<double>(ir.iters) * kFlopsPerIter * static_cast<double>(r.bytes / sizeof(float)));
      j.kv("kernel_s", ir.kernel_s);
      j.kv_array("kernel_samples_s", ir.kernel_samples_s);
      j.kv_objects("methods", ir.methods, [&](const auto& m) {
        j.kv("method", m.key).kv("streams", m.streams).kv("run", m.run);
        if (m.run) {
          j.kv("seconds", m.seconds).kv("verified", m.verified).kv("checked", m.checked);
          j.kv_array("samples_s", m.samples_s);
        } else {
          j.kv("not_run", m.not_run);
        }
      });
    });
  });
  return end_results(j, metrics, waived, st.passed(false), st);
}

}  // namespace

int run_tool(const Options& o, const Invocation& run) {
  State st;
  auto doc = [&](const std::vector<DeviceInfo>& devices) { return document(st, o, run, devices); };
  return run_emitting_gpu_tool(st, o.output, o.gpus, doc, [&](const auto& ids, auto& devices) {
    for (int id : ids) devices.push_back(device_info(id));
    for (int id : ids) measure_gpu(st, o, id);
  });
}

int main(int argc, char** argv) {
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
}
