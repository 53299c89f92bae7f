// gpuaccept-memtest: a GPU memory test on every GPU at once, one host thread per GPU.
//
// Per GPU:
//   1. size: what cudaMemGetInfo says is free once the GPU's context exists, less a margin (--margin-mib, 256,
//      plus 2 % of the GPU's memory), times --fraction (1.0), in whole 2 MiB; a GPU with less than 64 MiB to test
//      is refused (an error, exit 1). Allocated with plain cudaMalloc (never managed memory) in chunks of
//      --chunk-mib (1024; halved down to 64 MiB where the driver refuses one);
//   2. wait until every GPU has allocated (a start line), so that all are tested at once;
//   3. passes: each runs every pattern of --patterns (memtest_patterns.h: moving inversions with zeros/ones and
//      with a walking pattern, address in address, random) over all of the GPU's chunks; each pattern is a few
//      sweeps (fill; check and write the complement; check or restore), rising or falling through the
//      addresses. The kernels compare every word they read with the value it must hold, computed again from the
//      word's address and index (no copy), count the bad words on the GPU and record the first few (offset,
//      address, expected, found);
//   4. budget: passes until one more would end after --seconds (20; --quick 5), at least one; or --passes N;
//   5. with --inject-error: one bit of one word flipped (a kernel of its own) between the first pattern's fill
//      and its check, in the first pass: the run must end with exit 2 naming that word.
// NVML's ECC counters and retired pages / remapped rows are read before and after (reported, not judged here).
// Timing: one cudaEvent pair per GPU around each run of a pattern (all of its sweeps over all chunks); bytes
// tested per second = bytes written + read by the pattern's sweeps / the elapsed time between the events.
// The JSON document (--output) is described in docs/benchmark-json.md and the method in docs/checks/memtest.md.

#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "memtest_ecc.h"
#include "memtest_patterns.h"
#include "tool_main.h"

using namespace gpuaccept;
using namespace gpuaccept::memtest;

namespace {

constexpr const char* kTool = "gpuaccept-memtest";
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;  // 2048 resident threads per SM: enough loads in flight to saturate HBM
constexpr double kDefaultSeconds = 20.0, kQuickSeconds = 5.0;
constexpr uint64_t kMinChunkBytes = 64ull << 20;
constexpr double kGiB = 1073741824.0;

// ---------------------------------------------------------------------------------------------
// Kernels.

__device__ void record_bad(ErrorLog* log, const BadWord& w) {
  const unsigned long long slot = atomicAdd(&log->taken, 1ull);
  if (slot < kMaxRecords) log->first[slot] = w;
}

// One sweep over one chunk of `pairs` 16-byte pairs of words starting at `words`, word number `first_index` of the
// GPU's tested words: each thread takes pairs j, j + stride, ... (pair pairs-1-j where the sweep falls), checks
// and/or writes both words (memtest_patterns.h: word_step), and adds its bad words to `log` once at the end.
template <Fill F, bool kCheck, bool kWrite>
__global__ void __launch_bounds__(kThreads)
    sweep_kernel(unsigned long long* words, unsigned long long pairs, unsigned long long first_index, Sweep s,
                 unsigned long long param, int sweep, ErrorLog* log) {
  Tally t;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long j = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; j < pairs;
       j += stride) {
    const unsigned long long k = s.down ? pairs - 1 - j : j;
    ulonglong2* p = reinterpret_cast<ulonglong2*>(words) + k;
    ulonglong2 v = make_ulonglong2(0, 0);
    if (kCheck) v = __ldcg(p);  // L2 only: nothing of a sweep is read twice
    const uint64_t index = first_index + 2 * k;
    const uint64_t address = reinterpret_cast<uint64_t>(words + 2 * k);
    uint64_t e0, e1, w0, w1;
    const bool ok0 = word_step<F>(s, param, address, index, v.x, &e0, &w0);
    const bool ok1 = word_step<F>(s, param, address + 8, index + 1, v.y, &e1, &w1);
    if (kCheck && !ok0 && t.add(index)) record_bad(log, BadWord{index, address, e0, v.x, sweep, 0});
    if (kCheck && !ok1 && t.add(index + 1)) record_bad(log, BadWord{index + 1, address + 8, e1, v.y, sweep, 0});
    if (kWrite) __stcg(p, make_ulonglong2(w0, w1));
  }
  if (t.bad) {
    atomicAdd(&log->mismatches, static_cast<unsigned long long>(t.bad));
    atomicMin(&log->lowest, static_cast<unsigned long long>(t.lowest));
    atomicMax(&log->highest, static_cast<unsigned long long>(t.highest));
  }
}

// Self-test (--inject-error): one bit of one word flipped in device memory.
__global__ void flip_bit_kernel(unsigned long long* word, unsigned long long mask) { *word ^= mask; }

struct Launch {
  dim3 grid;
  cudaStream_t stream;
  ErrorLog* log;
};

template <Fill F>
void launch_fill(const Launch& l, const Sweep& s, int sweep, unsigned long long* words, uint64_t pairs,
                 uint64_t first_index, uint64_t param) {
  if (s.check && s.write)
    sweep_kernel<F, true, true><<<l.grid, kThreads, 0, l.stream>>>(words, pairs, first_index, s, param, sweep, l.log);
  else if (s.check)
    sweep_kernel<F, true, false><<<l.grid, kThreads, 0, l.stream>>>(words, pairs, first_index, s, param, sweep, l.log);
  else
    sweep_kernel<F, false, true><<<l.grid, kThreads, 0, l.stream>>>(words, pairs, first_index, s, param, sweep, l.log);
}

void launch_sweep(const Launch& l, Fill f, const Sweep& s, int sweep, unsigned long long* words, uint64_t pairs,
                  uint64_t first_index, uint64_t param) {
  switch (f) {
    case Fill::zeros: launch_fill<Fill::zeros>(l, s, sweep, words, pairs, first_index, param); break;
    case Fill::walking: launch_fill<Fill::walking>(l, s, sweep, words, pairs, first_index, param); break;
    case Fill::address: launch_fill<Fill::address>(l, s, sweep, words, pairs, first_index, param); break;
    case Fill::random: launch_fill<Fill::random>(l, s, sweep, words, pairs, first_index, param); break;
  }
  CUDA_CHECK_LAST();
}

// ---------------------------------------------------------------------------------------------
// Device memory, streams and events that free themselves.
class DeviceChunk : CudaOwned<void*, cudaFree> {
 public:
  // cudaMalloc of `bytes` on device `d`; false (the runtime's error cleared) where the device has no room for it.
  bool alloc(int d, size_t bytes) {
    dev = d;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      p = nullptr;
      return false;
    }
    GPUACCEPT_CHECK("cudaMalloc(chunk)", e, cudaSuccess, cudaGetErrorString);
    return true;
  }
  unsigned long long* words() const { return static_cast<unsigned long long*>(p); }
};

class Stream : CudaOwned<cudaStream_t, cudaStreamDestroy> {
 public:
  explicit Stream(int d) {
    dev = d;
    CUDA_CHECK(cudaStreamCreateWithFlags(&p, cudaStreamNonBlocking));
  }
  cudaStream_t get() const { return p; }
};

class Event : CudaOwned<cudaEvent_t, cudaEventDestroy> {
 public:
  explicit Event(int d) {
    dev = d;
    CUDA_CHECK(cudaEventCreate(&p));
  }
  cudaEvent_t get() const { return p; }
};

// ---------------------------------------------------------------------------------------------
// Options.
struct Options {
  std::string gpus = "all";
  double seconds = kDefaultSeconds;
  long passes = 0;  // 0: by --seconds
  double fraction = 1.0;
  long margin_mib = 256;
  long chunk_mib = 1024;
  unsigned long long seed = 1;
  std::vector<int> patterns;  // indices into kPatterns
  bool quick = false, inject_error = false;
  std::string output;
};

const char* kUsage =
    "usage: gpuaccept-memtest [options]\n"
    "GPU memory test on every GPU at once: moving inversions (zeros/ones, walking bits), address in address and\n"
    "random patterns over nearly all free memory, every word checked on the GPU (docs/checks/memtest.md).\n"
    "  --seconds S        passes until one more would end after S seconds, at least one (default 20; --quick 5)\n"
    "  --passes N         exactly N passes instead of --seconds\n"
    "  --quick            a short pass: --seconds 5 unless given\n"
    "  --fraction F       share of the free memory (less the margin) to test, in (0, 1] (default 1)\n"
    "  --margin-mib M     left free besides 2 % of the GPU's memory, at least 128 (default 256)\n"
    "  --chunk-mib C      allocation size, even, 64..16384 (default 1024)\n"
    "  --patterns LIST    comma list of moving_inversions_ones_zeros, moving_inversions_walking,\n"
    "                     address_in_address, random, or 'all' (default all)\n"
    "  --seed S           seed of the random pattern (default 1)\n"
    "  --gpus all|LIST    CUDA device indices (default all visible)\n";
const UsageTail kUsageTail{21, false,
    "self-test: flip one bit on each GPU between the first fill and its check (expect exit 2 naming the word)",
    "CUDA call failed, no GPU, or too little free memory to test", "",
    "verification failed (a word did not hold what was written, or an uncorrectable ECC error)"};

Options parse_options(Args& a) {
  Options o;
  o.quick = a.flag("quick");
  const std::string seconds = a.get("seconds", "");
  o.passes = a.get_long("passes", 0);
  if (!seconds.empty() && o.passes != 0) throw std::invalid_argument("option --passes: give --seconds or --passes, not both");
  if (o.passes < 0 || o.passes > 1000000) throw std::invalid_argument("option --passes: must be in 1..1000000");
  o.seconds = seconds.empty() ? (o.quick ? kQuickSeconds : kDefaultSeconds) : Args::number("seconds", seconds);
  if (!(o.seconds > 0.0 && o.seconds <= 86400.0)) throw std::invalid_argument("option --seconds: must be in (0, 86400]");
  o.fraction = a.get_double("fraction", 1.0);
  if (!(o.fraction > 0.0 && o.fraction <= 1.0)) throw std::invalid_argument("option --fraction: must be in (0, 1]");
  o.margin_mib = a.get_long("margin-mib", 256);
  if (o.margin_mib < 128 || o.margin_mib > (1l << 20))
    throw std::invalid_argument("option --margin-mib: must be in 128..1048576 (less leaves too little for the "
                                "driver and the CUDA context)");
  o.chunk_mib = a.get_long("chunk-mib", 1024);
  if (o.chunk_mib < 64 || o.chunk_mib > 16384 || o.chunk_mib % 2 != 0)
    throw std::invalid_argument("option --chunk-mib: must be even and in 64..16384");
  const long seed = a.get_long("seed", 1);
  if (seed < 0) throw std::invalid_argument("option --seed: must be >= 0");
  o.seed = static_cast<unsigned long long>(seed);
  const std::string patterns = a.get("patterns", "all");
  if (patterns == "all") {
    for (int i = 0; i < kNumPatterns; ++i) o.patterns.push_back(i);
  } else {
    auto parts = split_csv(patterns);
    if (parts.empty()) throw std::invalid_argument("option --patterns: empty list");
    std::vector<int> chosen;
    for (const auto& s : parts) {
      const int i = pattern_index(s);
      if (i < 0) {
        std::string known;
        for (const auto& p : kPatterns) known += std::string(known.empty() ? "" : ",") + p.key;
        throw std::invalid_argument("option --patterns: unknown pattern '" + s + "' (known: " + known + ",all)");
      }
      if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
    }
    for (int i = 0; i < kNumPatterns; ++i)  // registry order, whatever the list's
      if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) o.patterns.push_back(i);
  }
  o.inject_error = a.flag("inject-error");
  o.gpus = a.get_gpus();
  o.output = a.get("output", "");
  a.reject_unknown();
  return o;
}

// ---------------------------------------------------------------------------------------------
// What one GPU's test found.
struct PatternResult {
  int runs = 0;
  double seconds = 0.0, bytes_moved = 0.0;
  unsigned long long mismatches = 0, lowest = kAllOnes, highest = 0;
  bool records_dropped = false;  // more bad words than recorded
  std::vector<BadWord> first;    // the first kMaxRecords, in the order found
};

struct Injected {
  bool done = false;
  int chunk = -1, bit = -1;
  uint64_t index = 0, address = 0;
  bool reported = false;  // among the bad words the check recorded
};

struct GpuRun {
  int gpu = -1;
  DeviceInfo info;
  Sizing sizing;
  uint64_t tested_bytes = 0;
  std::vector<uint64_t> chunk_bytes, chunk_address;
  int passes = 0;
  double seconds = 0.0;  // from the start line to the end of the last pass
  std::vector<PatternResult> patterns;  // one per --patterns entry
  Injected injected;
  EccCounters ecc_before, ecc_after;
  std::string stopped;  // why the GPU stopped before its budget was spent
  std::string doing;    // the pattern and pass under way (for an error's message)

  double kernel_seconds() const {
    double s = 0;
    for (const auto& p : patterns) s += p.seconds;
    return s;
  }
  double bytes_moved() const {
    double b = 0;
    for (const auto& p : patterns) b += p.bytes_moved;
    return b;
  }
  unsigned long long mismatches() const {
    unsigned long long n = 0;
    for (const auto& p : patterns) n += p.mismatches;
    return n;
  }
  double throughput_gbps() const { return kernel_seconds() > 0 ? bytes_moved() / kernel_seconds() / 1e9 : NAN; }
  double tested_fraction() const {
    return sizing.total_bytes ? static_cast<double>(tested_bytes) / static_cast<double>(sizing.total_bytes) : NAN;
  }
  bool complete() const { return passes > 0 && tested_bytes > 0 && stopped.empty(); }
  std::string label() const { return "GPU " + std::to_string(gpu) + " (bus " + info.pci_bus_id + ")"; }
  // The chunk holding word `index`, and the word's byte offset in it.
  std::pair<int, uint64_t> chunk_of(uint64_t index) const {
    uint64_t offset = index * 8;
    for (size_t c = 0; c < chunk_bytes.size(); ++c) {
      if (offset < chunk_bytes[c]) return {static_cast<int>(c), offset};
      offset -= chunk_bytes[c];
    }
    return {-1, offset};
  }
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<GpuRun> runs;
  bool nvml_ok = false;
  std::string nvml_why_not = "not read: the test did not start";
};

// Every GPU's thread arrives once, ready (arrive_and_wait: waits for the others) or not (leave: its destructor,
// where it failed before); the tests start together.
class StartLine {
 public:
  explicit StartLine(int n) : left_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> l(m_);
    if (--left_ <= 0) cv_.notify_all();
    cv_.wait(l, [&] { return left_ <= 0; });
  }
  void leave() {
    std::lock_guard<std::mutex> l(m_);
    if (--left_ <= 0) cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int left_;
};

class Arrival {
 public:
  explicit Arrival(StartLine& line) : line_(line) {}
  ~Arrival() {
    if (!arrived_) line_.leave();
  }
  void wait() {
    arrived_ = true;
    line_.arrive_and_wait();
  }

 private:
  StartLine& line_;
  bool arrived_ = false;
};

// A bad word of pattern `p` as a failure line and stderr say it.
std::string describe(const GpuRun& g, const PatternDef& p, const BadWord& w) {
  const auto where = g.chunk_of(w.index);
  const uint64_t x = w.expected ^ w.found;
  const std::vector<int> flipped = bits_of(x);
  std::string bits;
  for (int b : flipped) bits += (bits.empty() ? "" : ",") + std::to_string(b);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "offset %s (%.3f GiB, chunk %d), address %s, expected %s, found %s, xor %s (bit%s %s), pass %d, "
                "sweep %s",
                hex64(w.index * 8).c_str(), w.index * 8 / kGiB, where.first, hex64(w.address).c_str(),
                hex64(w.expected).c_str(), hex64(w.found).c_str(), hex64(x).c_str(), flipped.size() == 1 ? "" : "s",
                bits.c_str(), w.pass, w.sweep >= 0 && w.sweep < p.sweeps ? p.sweep[w.sweep].key : "?");
  return buf;
}

// ---------------------------------------------------------------------------------------------
// One GPU's test.

// The chunks: cudaMalloc of --chunk-mib each until the target is reached, halving the size (to 64 MiB) where
// the driver refuses one.
void allocate(State& st, const Options& o, GpuRun& g, std::vector<std::unique_ptr<DeviceChunk>>& chunks) {
  uint64_t remaining = g.sizing.target_bytes, chunk = static_cast<uint64_t>(o.chunk_mib) << 20;
  while (remaining > 0) {
    const uint64_t want = std::min(chunk, remaining);
    auto c = std::make_unique<DeviceChunk>();
    if (c->alloc(g.gpu, want)) {
      g.chunk_bytes.push_back(want);
      g.chunk_address.push_back(reinterpret_cast<uint64_t>(c->words()));
      g.tested_bytes += want;
      remaining -= want;
      chunks.push_back(std::move(c));
    } else if (chunk > kMinChunkBytes) {
      chunk = std::max(kMinChunkBytes, round_down(chunk / 2, kAllocGranularity));
    } else {
      break;
    }
  }
  if (remaining > 0)
    st.note(g.label() + ": cudaMalloc gave " + mib_text(g.tested_bytes) + " of the " + mib_text(g.sizing.target_bytes) +
            " planned (another allocation on the GPU?): only that is tested");
}

// One run of pattern `pi` (an index into o.patterns) in pass `pass` over every chunk, timed by an event pair; its
// bad words added to the GPU's results.
void run_pattern(const Options& o, GpuRun& g, std::vector<std::unique_ptr<DeviceChunk>>& chunks,
                 size_t pi, int pass, const Launch& l, Event& start, Event& stop) {
  const PatternDef& p = kPatterns[o.patterns[pi]];
  const uint64_t param = pattern_param(p, o.seed, pass);
  const ErrorLog fresh{};
  CUDA_CHECK(cudaMemcpyAsync(l.log, &fresh, sizeof fresh, cudaMemcpyHostToDevice, l.stream));
  CUDA_CHECK(cudaEventRecord(start.get(), l.stream));
  std::vector<uint64_t> first_index(chunks.size());
  for (size_t c = 1; c < chunks.size(); ++c) first_index[c] = first_index[c - 1] + g.chunk_bytes[c - 1] / 8;
  for (int si = 0; si < p.sweeps; ++si) {
    const Sweep& s = p.sweep[si];
    for (size_t n = 0; n < chunks.size(); ++n) {
      const size_t c = s.down ? chunks.size() - 1 - n : n;
      launch_sweep(l, p.fill, s, si, chunks[c]->words(), g.chunk_bytes[c] / 16, first_index[c], param);
    }
    if (o.inject_error && pass == 0 && pi == 0 && si == 0) {
      Injected& inj = g.injected;
      inj.chunk = static_cast<int>(chunks.size() / 2);
      const uint64_t words = g.chunk_bytes[inj.chunk] / 8, in_chunk = word_hash(o.seed, 0x1) % words;
      inj.bit = static_cast<int>(word_hash(o.seed, 0x2) % 64);
      inj.index = first_index[inj.chunk] + in_chunk;
      inj.address = g.chunk_address[inj.chunk] + in_chunk * 8;
      flip_bit_kernel<<<1, 1, 0, l.stream>>>(chunks[inj.chunk]->words() + in_chunk, 1ull << inj.bit);
      CUDA_CHECK_LAST();
      inj.done = true;
    }
  }
  CUDA_CHECK(cudaEventRecord(stop.get(), l.stream));
  CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  ErrorLog found;
  CUDA_CHECK(cudaMemcpy(&found, l.log, sizeof found, cudaMemcpyDeviceToHost));

  PatternResult& r = g.patterns[pi];
  ++r.runs;
  r.seconds += ms * 1e-3;
  r.bytes_moved += static_cast<double>(traffic_per_byte(p)) * static_cast<double>(g.tested_bytes);
  if (found.mismatches == 0) return;
  r.mismatches += found.mismatches;
  r.lowest = std::min(r.lowest, found.lowest);
  r.highest = std::max(r.highest, found.highest);
  const int recorded = static_cast<int>(std::min<unsigned long long>(found.taken, kMaxRecords));
  r.records_dropped = r.records_dropped || found.taken < found.mismatches;
  for (int i = 0; i < recorded; ++i) {
    BadWord w = found.first[i];
    w.pass = pass;
    if (g.injected.done && w.index == g.injected.index) g.injected.reported = true;
    if (r.first.size() < kMaxRecords) r.first.push_back(w);
    else r.records_dropped = true;
  }
  BadWord first = found.first[0];
  first.pass = pass;
  std::fprintf(stderr, "[gpu %d] %s pass %d: %llu bad word(s), first at %s\n", g.gpu, p.key, pass, found.mismatches,
               describe(g, p, first).c_str());
}

void test_gpu(State& st, const Options& o, GpuRun& g, StartLine& line) {
  Arrival arrival(line);
  g.patterns.assign(o.patterns.size(), PatternResult());
  try {
    CUDA_CHECK(cudaSetDevice(g.gpu));
    CUDA_CHECK(cudaFree(nullptr));  // the context first: what it takes is not free for the test
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    g.sizing = plan_size(free_b, total_b, o.fraction, static_cast<uint64_t>(o.margin_mib));
    if (!g.sizing.refused.empty()) {
      g.stopped = "refused: " + g.sizing.refused;
      st.error(g.label() + ": " + g.sizing.refused);
      return;
    }
    std::vector<std::unique_ptr<DeviceChunk>> chunks;  // freed last (declared before what uses them)
    allocate(st, o, g, chunks);
    if (g.tested_bytes < kMinTestBytes) {
      g.stopped = "cudaMalloc gave only " + mib_text(g.tested_bytes);
      st.error(g.label() + ": " + g.stopped + " (at least " + mib_text(kMinTestBytes) + " needed)");
      return;
    }
    DeviceChunk log;
    if (!log.alloc(g.gpu, sizeof(ErrorLog))) throw CallError(g.label() + ": no room for the error log");
    Stream stream(g.gpu);
    Event start(g.gpu), stop(g.gpu);
    const Launch l{dim3(static_cast<unsigned>(g.info.sm_count * kBlocksPerSm)), stream.get(),
                   reinterpret_cast<ErrorLog*>(log.words())};
    std::fprintf(stderr, "[gpu %d] %s: testing %.2f GiB in %zu chunks (%.2f GiB free, margin %.2f GiB)\n", g.gpu,
                 g.info.name.c_str(), g.tested_bytes / kGiB, chunks.size(), g.sizing.free_bytes / kGiB,
                 g.sizing.margin_bytes / kGiB);
    arrival.wait();
    const double t0 = now_s();
    double said = t0;
    for (int pass = 0;; ++pass) {
      const double tp = now_s();
      for (size_t pi = 0; pi < o.patterns.size(); ++pi) {
        g.doing = std::string(kPatterns[o.patterns[pi]].key) + ", pass " + std::to_string(pass);
        run_pattern(o, g, chunks, pi, pass, l, start, stop);
      }
      g.doing.clear();
      ++g.passes;
      const double end = now_s();
      g.seconds = end - t0;
      if (end - said >= 5.0 || pass == 0) {
        std::fprintf(stderr, "[gpu %d] %d pass(es) in %.1f s, %.0f GB/s, %llu bad word(s)\n", g.gpu, g.passes,
                     g.seconds, g.throughput_gbps(), g.mismatches());
        said = end;
      }
      if (o.passes > 0 ? g.passes >= o.passes : g.seconds + (end - tp) > o.seconds) break;
    }
  } catch (const CallError& e) {
    const std::string what = e.what();
    const bool ecc = what.find(cudaGetErrorString(cudaErrorECCUncorrectable)) != std::string::npos;
    g.stopped = what;
    if (ecc)  // the memory fault the test looks for, reported by the hardware before the comparison
      st.failure(g.label() + ": uncorrectable ECC error during " + (g.doing.empty() ? "the test" : g.doing) + ": " +
                 what);
    else
      st.error(g.label() + ": " + what);
  } catch (const std::exception& e) {
    g.stopped = e.what();
    st.error(g.label() + ": unexpected: " + e.what());
  }
}

// The verdicts once every GPU is done: one per GPU and pattern (its words all held what was written), and the
// self-test's word reported where one was flipped.
void judge_runs(State& st, const Options& o) {
  for (const auto& g : st.runs) {
    if (g.passes == 0) continue;
    for (size_t pi = 0; pi < o.patterns.size(); ++pi) {
      const PatternResult& r = g.patterns[pi];
      if (r.runs == 0) continue;
      std::string what = g.label() + ": " + kPatterns[o.patterns[pi]].key + ": " + std::to_string(r.mismatches) +
                         " bad 64-bit word(s) in " + std::to_string(r.runs) + " run(s)";
      if (!r.first.empty()) what += ", first at " + describe(g, kPatterns[o.patterns[pi]], r.first[0]);
      st.verdict(r.mismatches == 0, what);
    }
    if (g.injected.done && !g.injected.reported)
      st.error(g.label() + ": self-test: the bit flipped at offset " + hex64(g.injected.index * 8) +
               " was not reported: the test cannot be trusted");
  }
}

// ---------------------------------------------------------------------------------------------
// The document.
const char* kTiming =
    "one cudaEvent pair per GPU around each run of a pattern (all its sweeps over all chunks, kernels only); bytes "
    "tested per second = (bytes written + bytes read by the pattern's sweeps: each sweep reads and/or writes every "
    "tested byte once) summed over the runs of every pattern / the summed elapsed time; throughput_gbps_min = the "
    "slowest GPU's figure; passes until one more would end after --seconds (at least one) or --passes, every GPU at "
    "once after a start line";

void write_sweep(Json& j, const Sweep& s) {
  j.begin_object();
  j.kv("key", s.key).kv("order", s.down ? "falling" : "rising");
  if (s.check) j.kv("checks", s.check_xor ? "complement" : "value"); else j.kv_null("checks");
  if (s.write) j.kv("writes", s.write_xor ? "complement" : "value"); else j.kv_null("writes");
  j.end_object();
}

void write_bad(Json& j, const GpuRun& g, const BadWord& w, const std::vector<std::string>& sweep_keys) {
  const auto where = g.chunk_of(w.index);
  j.begin_object();
  j.kv("offset", static_cast<unsigned long long>(w.index * 8)).kv("address", hex64(w.address));
  j.kv("chunk", where.first).kv("chunk_offset", static_cast<unsigned long long>(where.second));
  j.kv("expected", hex64(w.expected)).kv("found", hex64(w.found)).kv("xor", hex64(w.expected ^ w.found));
  j.kv_array("bits", bits_of(w.expected ^ w.found));
  j.kv("pass", w.pass);
  j.kv("sweep", w.sweep >= 0 && w.sweep < static_cast<int>(sweep_keys.size()) ? sweep_keys[w.sweep] : "?");
  j.end_object();
}

void write_gpu(Json& j, const Options& o, const GpuRun& g) {
  j.begin_object();
  j.kv("gpu", g.gpu).kv("pci_bus_id", g.info.pci_bus_id);
  j.kv("total_bytes", static_cast<unsigned long long>(g.sizing.total_bytes));
  j.kv("free_bytes", static_cast<unsigned long long>(g.sizing.free_bytes));
  j.kv("margin_bytes", static_cast<unsigned long long>(g.sizing.margin_bytes));
  j.kv("target_bytes", static_cast<unsigned long long>(g.sizing.target_bytes));
  j.kv("tested_bytes", static_cast<unsigned long long>(g.tested_bytes));
  j.kv("tested_fraction", g.tested_fraction());
  j.kv("chunks", static_cast<long>(g.chunk_bytes.size()));
  j.kv("passes", g.passes).kv("seconds", g.seconds).kv("kernel_seconds", g.kernel_seconds());
  j.kv("bytes_moved", g.bytes_moved()).kv("throughput_gbps", g.throughput_gbps());
  j.kv("mismatches", g.mismatches());
  if (g.stopped.empty()) j.kv_null("stopped"); else j.kv("stopped", g.stopped);
  j.key("patterns").begin_array();
  for (size_t pi = 0; pi < g.patterns.size(); ++pi) {
    const PatternDef& p = kPatterns[o.patterns[pi]];
    const PatternResult& r = g.patterns[pi];
    std::vector<std::string> sweep_keys;
    for (int s = 0; s < p.sweeps; ++s) sweep_keys.push_back(p.sweep[s].key);
    j.begin_object();
    j.kv("pattern", p.key).kv("runs", r.runs).kv("mismatches", r.mismatches);
    j.kv("seconds", r.seconds).kv("bytes_moved", r.bytes_moved);
    j.kv("throughput_gbps", r.seconds > 0 ? r.bytes_moved / r.seconds / 1e9 : NAN);
    if (r.mismatches) {
      j.kv("lowest_bad_offset", static_cast<unsigned long long>(r.lowest * 8));
      j.kv("highest_bad_offset", static_cast<unsigned long long>(r.highest * 8));
    } else {
      j.kv_null("lowest_bad_offset").kv_null("highest_bad_offset");
    }
    j.kv("records_dropped", r.records_dropped);
    j.key("first_bad").begin_array();
    for (const auto& w : r.first) write_bad(j, g, w, sweep_keys);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("injected");
  if (g.injected.done) {
    const auto where = g.chunk_of(g.injected.index);
    j.begin_object();
    j.kv("pattern", kPatterns[o.patterns[0]].key).kv("pass", 0).kv("after_sweep", kPatterns[o.patterns[0]].sweep[0].key);
    j.kv("offset", static_cast<unsigned long long>(g.injected.index * 8)).kv("address", hex64(g.injected.address));
    j.kv("chunk", where.first).kv("chunk_offset", static_cast<unsigned long long>(where.second));
    j.kv("bit", g.injected.bit).kv("reported", g.injected.reported);
    j.end_object();
  } else {
    j.null();
  }
  j.key("ecc").begin_object();
  j.key("before");
  write_counters(j, g.ecc_before);
  j.key("after");
  write_counters(j, g.ecc_after);
  j.key("change").begin_object();
  kv_delta(j, "corrected_volatile", g.ecc_before.corrected_volatile, g.ecc_after.corrected_volatile);
  kv_delta(j, "uncorrected_volatile", g.ecc_before.uncorrected_volatile, g.ecc_after.uncorrected_volatile);
  kv_delta(j, "retired_pages_single_bit", g.ecc_before.retired_pages_single_bit, g.ecc_after.retired_pages_single_bit);
  kv_delta(j, "retired_pages_double_bit", g.ecc_before.retired_pages_double_bit, g.ecc_after.retired_pages_double_bit);
  kv_delta(j, "remapped_rows_correctable", g.ecc_before.remapped_rows_correctable,
           g.ecc_after.remapped_rows_correctable);
  kv_delta(j, "remapped_rows_uncorrectable", g.ecc_before.remapped_rows_uncorrectable,
           g.ecc_after.remapped_rows_uncorrectable);
  j.end_object();
  j.end_object();
  j.end_object();
}

// The metrics of the node and of each GPU (same names), where every GPU completed at least one pass.
struct Figures {
  double errors, gib, fraction, gbps;
};

Figures figures_of(const GpuRun& g) {
  return {static_cast<double>(g.mismatches()), g.tested_bytes / kGiB, g.tested_fraction(), g.throughput_gbps()};
}

void add_metrics(std::vector<Metric>& m, const Figures& f, bool node) {
  const std::string over = node ? "over every GPU, " : "";
  const std::string min = node ? "min over GPUs of " : "";
  m.push_back({"errors_total", "count", "lower",
               "64-bit words that did not hold what was written, " + over + "every pattern and pass (must be 0)",
               f.errors});
  m.push_back({"bytes_tested_min", "GiB", "higher", min + "the memory tested (allocated and swept by every pattern)",
               f.gib});
  m.push_back({"tested_fraction_min", "ratio", "higher", min + "the memory tested over the GPU's total memory",
               f.fraction});
  m.push_back({"throughput_gbps_min", "GB/s", "higher",
               min + "bytes written + read by the patterns per second of kernel time", f.gbps});
}

std::string document(State& st, const Options& o, const Invocation& run, const std::vector<DeviceInfo>& devices) {
  std::vector<Metric> metrics;
  Waived waived;
  const bool complete =
      !st.runs.empty() && std::all_of(st.runs.begin(), st.runs.end(), [](const GpuRun& g) { return g.complete(); });
  if (complete) {
    Figures node{0.0, INFINITY, INFINITY, INFINITY};
    for (const auto& g : st.runs) {
      const Figures f = figures_of(g);
      node.errors += f.errors;
      node.gib = std::min(node.gib, f.gib);
      node.fraction = std::min(node.fraction, f.fraction);
      node.gbps = std::min(node.gbps, f.gbps);
    }
    add_metrics(metrics, node, true);
  }

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, [](Json&) {});
  j.key("nvml").begin_object();
  j.kv("available", st.nvml_ok);
  if (st.nvml_ok) j.kv_null("why_not"); else j.kv("why_not", st.nvml_why_not);
  j.end_object();
  begin_parameters(j, devices);
  j.key("patterns").begin_array();
  for (int i : o.patterns) j.value(kPatterns[i].key);
  j.end_array();
  if (o.passes > 0) j.kv_null("seconds").kv("passes", o.passes); else j.kv("seconds", o.seconds).kv_null("passes");
  j.kv("quick", o.quick).kv("fraction", o.fraction).kv("margin_mib", o.margin_mib);
  j.kv("margin_percent", static_cast<unsigned long long>(kMarginPercent));
  j.kv("min_test_bytes", static_cast<unsigned long long>(kMinTestBytes));
  j.kv("chunk_mib", o.chunk_mib).kv("seed", o.seed).kv("inject_error", o.inject_error);
  j.kv("threads_per_block", kThreads).kv("blocks_per_sm", kBlocksPerSm).kv("max_records", kMaxRecords);
  j.kv("allocation", "cudaMalloc (device memory, never managed), in chunks");
  j.kv_objects("pattern_definitions", o.patterns, [&](int i) {
    const PatternDef& p = kPatterns[i];
    j.kv("key", p.key).kv("description", p.description).kv("traffic_per_byte", traffic_per_byte(p));
    j.key("sweeps").begin_array();
    for (int s = 0; s < p.sweeps; ++s) write_sweep(j, p.sweep[s]);
    j.end_array();
  });
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"});
  j.key("per_gpu").begin_array();
  for (const auto& g : st.runs) write_gpu(j, o, g);
  j.end_array();
  j.key("notes").begin_array();
  for (const auto& n : st.notes) j.value(n);
  j.end_array();
  j.end_object();
  // Each GPU's figures under the node-level metrics' names, judged per GPU (docs/benchmark-json.md).
  j.key("gpu_metrics").begin_array();
  if (complete) {
    for (const auto& g : st.runs) {
      std::vector<Metric> mine;
      add_metrics(mine, figures_of(g), false);
      j.begin_object().kv("gpu", g.gpu).key("metrics").begin_object();
      for (const auto& m : mine)
        j.key(m.name).begin_object().kv("value", m.value).kv("unit", m.unit).kv("better", m.better).end_object();
      j.end_object().end_object();
    }
  }
  j.end_array();
  return close_document(j, metrics, waived, st.passed(), st.checked, st.failures, st.errors);
}

void print_table(const State& st) {
  std::printf("%-4s %-14s %10s %9s %7s %10s %12s %s\n", "gpu", "bus", "GiB", "fraction", "passes", "GB/s",
              "bad words", "first bad");
  for (const auto& g : st.runs) {
    std::string first = "-";
    for (const auto& p : g.patterns)
      if (!p.first.empty()) {
        first = hex64(p.first[0].index * 8) + " xor " + hex64(p.first[0].expected ^ p.first[0].found);
        break;
      }
    std::printf("%-4d %-14s %10.2f %9.4f %7d %10.1f %12llu %s\n", g.gpu, g.info.pci_bus_id.c_str(),
                g.tested_bytes / kGiB, g.tested_fraction(), g.passes, g.throughput_gbps(), g.mismatches(),
                g.stopped.empty() ? first.c_str() : ("stopped: " + g.stopped).c_str());
  }
}

}  // namespace

int run_tool(const Options& o, const Invocation& run) {
  State st;
  std::vector<DeviceInfo> devices;
  std::vector<int> gpu_ids;
  auto write_doc = [&] { return write_document(o.output, kTool, [&] { return document(st, o, run, devices); }); };
  auto measure = [&] {
    for (int id : gpu_ids) devices.push_back(device_info(id));
    EccReader ecc;
    st.nvml_ok = ecc.ok();
    st.nvml_why_not = ecc.why_not();
    if (!ecc.ok()) st.note("no ECC counters: " + ecc.why_not());
    st.runs.resize(gpu_ids.size());
    for (size_t k = 0; k < gpu_ids.size(); ++k) {
      st.runs[k].gpu = gpu_ids[k];
      st.runs[k].info = devices[k];
      st.runs[k].ecc_before = ecc.read(devices[k].pci_bus_id);
    }
    StartLine line(static_cast<int>(gpu_ids.size()));
    std::vector<std::thread> threads;
    for (auto& g : st.runs) threads.emplace_back([&st, &o, &g, &line] { test_gpu(st, o, g, line); });
    for (auto& t : threads) t.join();
    for (size_t k = 0; k < st.runs.size(); ++k) st.runs[k].ecc_after = ecc.read(devices[k].pci_bus_id);
    judge_runs(st, o);
  };
  return run_gpu_tool(st, o.gpus, gpu_ids, write_doc, measure, [&] { print_table(st); });
}

int main(int argc, char** argv) {
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
}
