// gpuaccept-nccl: NCCL collective bandwidth between the GPUs of one node: all-reduce (sum), all-gather,
// reduce-scatter (sum) and broadcast (root 0) over a size sweep, float32, out of place, every result verified.
//
// One communicator over the chosen GPUs (ncclCommInitAll in this process), one host thread per GPU driving its
// rank; the threads meet at a barrier before each (collective, size). Per (collective, size): warm-up calls,
// then timed calls, each between its own cudaEvent pair on the rank's stream; an iteration's time is the
// longest of the ranks' times for it, and the figure is the median over the iterations.
//
// Sizes and bandwidths follow the published definitions of NVIDIA's nccl-tests (docs/checks/nccl.md):
//   size   all-reduce, broadcast: the buffer each rank holds; all-gather: the gathered (receive) buffer;
//          reduce-scatter: the (send) buffer that is scattered. All multiples of ranks x 4 bytes.
//   algbw  size / time;  busbw = algbw x factor, factor = 2(n-1)/n (all-reduce), (n-1)/n (all-gather,
//          reduce-scatter), 1 (broadcast), n = ranks.
// With one GPU there are no peers: a one-rank communicator still runs and verifies every collective (the
// self-test; its figures are informational) and every metric is waived.

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
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
#include "tool_main.h"

using namespace gpuaccept;

#define NCCL_CHECK(call)                                                                                   \
  GPUACCEPT_CHECK(#call, call, ncclSuccess, [](ncclResult_t r) {                                           \
    return std::string(ncclGetErrorString(r)) + " (" + ncclGetLastError(nullptr) + ")";                    \
  })

namespace {

constexpr const char* kTool = "gpuaccept-nccl";
constexpr const char* kOneGpu = "one GPU: no peers (a one-rank self-test ran every collective; results.self_test)";

enum class Coll { allreduce, allgather, reducescatter, broadcast };

struct CollInfo {
  Coll c;
  const char* key;
  const char* call;
  const char* size_is;
};

const CollInfo kColls[] = {
    {Coll::allreduce, "allreduce", "ncclAllReduce(ncclFloat, ncclSum), out of place", "each rank's buffer"},
    {Coll::allgather, "allgather", "ncclAllGather(ncclFloat), out of place", "the gathered buffer (ranks x each rank's part)"},
    {Coll::reducescatter, "reducescatter", "ncclReduceScatter(ncclFloat, ncclSum), out of place",
     "the buffer scattered (ranks x each rank's result)"},
    {Coll::broadcast, "broadcast", "ncclBroadcast(ncclFloat, root 0), out of place", "the broadcast buffer"},
};

// nccl-tests' bus bandwidth factor.
double bus_factor(Coll c, int n) {
  switch (c) {
    case Coll::allreduce: return 2.0 * (n - 1) / n;
    case Coll::allgather:
    case Coll::reducescatter: return static_cast<double>(n - 1) / n;
    case Coll::broadcast: return 1.0;
  }
  return NAN;
}

// ---------------------------------------------------------------------------------------------
// Data and verification. Rank r's element i is a small integer, so every sum over up to 2^16 ranks is exact in
// float and a result is either right or wrong.
__host__ __device__ inline float value(int rank, size_t i) {
  return static_cast<float>(static_cast<int>(i % 251) + 1 + 3 * rank);
}

__global__ void fill_kernel(float* p, size_t count, int rank, size_t offset) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = value(rank, offset + i);
}

// Counts the elements of `out` that differ from what the collective must give on rank `rank` of `n`.
// allreduce: sum_r value(r, i); allgather: value(i / count, i % count); reducescatter: sum_r value(r, rank*count+i);
// broadcast: value(0, i).
__global__ void check_kernel(const float* out, size_t count, int coll, int rank, int n, size_t part,
                             unsigned long long* bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float want = 0.0f;
    if (coll == 0) {
      for (int r = 0; r < n; ++r) want += value(r, i);
    } else if (coll == 1) {
      want = value(static_cast<int>(i / part), i % part);
    } else if (coll == 2) {
      for (int r = 0; r < n; ++r) want += value(r, static_cast<size_t>(rank) * part + i);
    } else {
      want = value(0, i);
    }
    if (!(out[i] == want)) ++local;  // NaN (the poison) never equals
  }
  if (local) atomicAdd(bad, local);
}

// ---------------------------------------------------------------------------------------------
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> l(m_);
    unsigned long gen = gen_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    cv_.wait(l, [&] { return gen_ != gen; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, arrived_ = 0;
  unsigned long gen_ = 0;
};

struct Options {
  std::vector<size_t> sizes;
  int warmup = 5, iters = 20;
  double timeout_s = 300.0;
  std::string gpus = "all";
  bool quick = false, allow_nvls = false, inject_error = false;
  std::string output;
};

struct Row {
  Coll c = Coll::allreduce;
  size_t bytes = 0, count = 0;  // count: elements each rank sends (allreduce, allgather, broadcast) or receives
  int iters = 0;
  double sec_median = NAN, sec_min = NAN, sec_max = NAN, algbw = NAN, busbw = NAN;
  unsigned long long mismatches = 0;
  bool verified = false;
};

// Per rank.
struct Rank {
  int rank = 0, dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  unsigned long long* bad = nullptr;
  std::vector<cudaEvent_t> events;
  std::vector<double> sec;  // this rank's iteration times for the current (collective, size)
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<Row> rows;
};

// Element counts of one (collective, size) on n ranks: the send count and the receive count per rank.
void counts(Coll c, size_t bytes, int n, size_t& send, size_t& recv) {
  size_t elems = bytes / sizeof(float);
  switch (c) {
    case Coll::allreduce:
    case Coll::broadcast: send = recv = elems; break;
    case Coll::allgather: send = elems / n; recv = send * n; break;
    case Coll::reducescatter: recv = elems / n; send = recv * n; break;
  }
}

void launch(Rank& rk, Coll c, size_t send_count, size_t recv_count) {
  switch (c) {
    case Coll::allreduce:
      NCCL_CHECK(ncclAllReduce(rk.send, rk.recv, send_count, ncclFloat, ncclSum, rk.comm, rk.stream));
      break;
    case Coll::allgather: NCCL_CHECK(ncclAllGather(rk.send, rk.recv, send_count, ncclFloat, rk.comm, rk.stream)); break;
    case Coll::reducescatter:
      NCCL_CHECK(ncclReduceScatter(rk.send, rk.recv, recv_count, ncclFloat, ncclSum, rk.comm, rk.stream));
      break;
    case Coll::broadcast: NCCL_CHECK(ncclBroadcast(rk.send, rk.recv, send_count, ncclFloat, 0, rk.comm, rk.stream)); break;
  }
}

// Set when a rank fails: every rank waiting in wait_for aborts its communicator and stops.
std::atomic<bool> g_abort{false};

// Waits for the rank's stream like cudaStreamSynchronize, but polls NCCL's asynchronous error and the other ranks'
// failures, and gives up after `timeout_s`: a rank whose peer failed, or whose link hangs, would otherwise wait
// inside the collective for ever. Giving up aborts this rank's communicator (ncclCommAbort, from its own thread,
// which ends its kernels) and throws.
void wait_for(Rank& rk, double timeout_s, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    cudaError_t q = cudaStreamQuery(rk.stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    ncclResult_t async = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(rk.comm, &async));
    std::string why;
    if (async != ncclSuccess && async != ncclInProgress)
      why = std::string("NCCL asynchronous error: ") + ncclGetErrorString(async);
    else if (g_abort)
      why = "another rank failed";
    else if (std::chrono::steady_clock::now() > deadline)
      why = "not finished after --timeout-s " + std::to_string(timeout_s) + " s";
    if (!why.empty()) {
      g_abort = true;
      ncclCommAbort(rk.comm);
      rk.comm = nullptr;
      throw CallError(std::string(what) + ": " + why + "; communicator aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// One rank's part of one (collective, size): fill, warm up, poison, time, verify. Returns its mismatches.
unsigned long long run_rank(Rank& rk, const Options& o, Coll c, size_t bytes, int n) {
  size_t sc = 0, rc = 0;
  counts(c, bytes, n, sc, rc);
  CUDA_CHECK(cudaSetDevice(rk.dev));
  fill_kernel<<<1024, 256, 0, rk.stream>>>(rk.send, sc, rk.rank, 0);
  CUDA_CHECK_LAST();
  for (int i = 0; i < o.warmup; ++i) launch(rk, c, sc, rc);
  CUDA_CHECK(cudaMemsetAsync(rk.recv, 0xFF, rc * sizeof(float), rk.stream));  // NaN: a call that writes nothing fails
  while (rk.events.size() < 2 * static_cast<size_t>(o.iters)) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreate(&e));
    rk.events.push_back(e);
  }
  for (int i = 0; i < o.iters; ++i) {
    CUDA_CHECK(cudaEventRecord(rk.events[2 * i], rk.stream));
    launch(rk, c, sc, rc);
    CUDA_CHECK(cudaEventRecord(rk.events[2 * i + 1], rk.stream));
  }
  wait_for(rk, o.timeout_s, "timed calls");
  rk.sec.assign(o.iters, 0.0);
  for (int i = 0; i < o.iters; ++i) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, rk.events[2 * i], rk.events[2 * i + 1]));
    rk.sec[i] = ms * 1e-3;
  }
  if (o.inject_error && rc > 0) {
    float wrong = 1e30f;
    CUDA_CHECK(cudaMemcpyAsync(rk.recv + rc / 2, &wrong, sizeof wrong, cudaMemcpyHostToDevice, rk.stream));
  }
  CUDA_CHECK(cudaMemsetAsync(rk.bad, 0, sizeof *rk.bad, rk.stream));
  int coll = c == Coll::allreduce ? 0 : c == Coll::allgather ? 1 : c == Coll::reducescatter ? 2 : 3;
  size_t part = c == Coll::allgather ? sc : rc;
  check_kernel<<<1024, 256, 0, rk.stream>>>(rk.recv, rc, coll, rk.rank, n, part, rk.bad);
  CUDA_CHECK_LAST();
  unsigned long long bad = 0;
  CUDA_CHECK(cudaMemcpyAsync(&bad, rk.bad, sizeof bad, cudaMemcpyDeviceToHost, rk.stream));
  CUDA_CHECK(cudaStreamSynchronize(rk.stream));
  return bad;
}

std::vector<size_t> sweep(size_t lo, size_t hi, size_t factor) {
  std::vector<size_t> out;
  for (size_t s = lo; s <= hi; s *= factor) {
    out.push_back(s);
    if (factor < 2 || s > hi / factor) break;
  }
  return out;
}

const char* kUsage =
    "usage: gpuaccept-nccl [options]\n"
    "NCCL all-reduce, all-gather, reduce-scatter and broadcast bus bandwidth between this node's GPUs, one\n"
    "thread per GPU, every result verified. With one GPU: a one-rank self-test, metrics waived.\n"
    "  --min-bytes N      smallest size (default 1024; --quick 1048576)\n"
    "  --max-bytes N      largest size (default 1073741824 = 1 GiB; --quick 268435456)\n"
    "  --factor F         size step factor (default 4)\n"
    "  --warmup N         untimed calls per size (default 5)\n"
    "  --iters N          timed calls per size, median reported (default 20; --quick 10)\n"
    "  --gpus all|LIST    CUDA device indices (default all visible)\n"
    "  --allow-nvls       do not set NCCL_NVLS_ENABLE=0 (the default turns NVLink SHARP/multicast off)\n"
    "  --timeout-s S      abort the communicators when one size of one collective takes longer (default 300)\n"
    "  --quick            nightly: 1 MiB .. 256 MiB, 10 timed calls\n";
const UsageTail kUsageTail{21, false,
    "self-test: corrupt one received element before every verification (expect exit 2)",
    "CUDA/NCCL call failed or no GPU", "Sizes are rounded down to a multiple of ranks x 4 bytes.\n"};

Options parse_options(Args& a) {
  Options o;
  o.quick = a.flag("quick");
  o.allow_nvls = a.flag("allow-nvls");
  o.inject_error = a.flag("inject-error");
  long lo = a.get_long("min-bytes", o.quick ? (1l << 20) : 1024);
  long hi = a.get_long("max-bytes", o.quick ? (256l << 20) : (1l << 30));
  long f = a.get_long("factor", 4);
  if (lo < 64) throw std::invalid_argument("option --min-bytes: at least 64 bytes");
  if (hi < lo || hi > (16l << 30)) throw std::invalid_argument("option --max-bytes: from --min-bytes to 16 GiB");
  if (f < 2 || f > 1024) throw std::invalid_argument("option --factor: 2..1024");
  o.sizes = sweep(static_cast<size_t>(lo), static_cast<size_t>(hi), static_cast<size_t>(f));
  o.warmup = static_cast<int>(a.get_long("warmup", 5));
  if (o.warmup < 0 || o.warmup > 1000) throw std::invalid_argument("option --warmup: 0..1000");
  o.iters = static_cast<int>(a.get_long("iters", o.quick ? 10 : 20));
  if (o.iters < 1 || o.iters > 10000) throw std::invalid_argument("option --iters: 1..10000");
  o.timeout_s = a.get_double("timeout-s", 300.0);
  if (!(o.timeout_s >= 1.0 && o.timeout_s <= 86400.0)) throw std::invalid_argument("option --timeout-s: 1..86400 seconds");
  o.gpus = a.get_gpus();
  o.output = a.get("output", "");
  a.reject_unknown();
  return o;
}

const char* kTiming =
    "per (collective, size): warm-up calls, then timed calls each between a cudaEvent pair on every rank's stream "
    "(one host thread per rank, a barrier before each size); an iteration's time is the longest rank's; figures are "
    "the median over the timed calls (min and max kept). algbw = size / time, busbw = algbw x nccl-tests' factor "
    "(all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n, broadcast 1); GB/s = 1e9 bytes/s";

std::string document(State& st, const Options& o, const Invocation& run,
                     const std::vector<DeviceInfo>& devices, int nranks, const std::string& nvls_note) {
  std::vector<Metric> metrics;
  Waived waived;
  const bool measured = st.errors.empty() && !st.rows.empty();
  if (measured) {
    for (const auto& ci : kColls) {
      std::string name = std::string(ci.key) + "_busbw_gbps_max";
      if (nranks < 2) {
        waived.push_back({name, kOneGpu});
        continue;
      }
      double best = NAN;
      size_t at = 0;
      for (const auto& r : st.rows)
        if (r.c == ci.c && r.verified && std::isfinite(r.busbw) && !(r.busbw <= best)) {
          best = r.busbw;
          at = r.bytes;
        }
      if (std::isfinite(best))
        metrics.push_back({name, "GB/s", "higher",
                           std::string("largest ") + ci.key + " bus bandwidth over the size sweep (nccl-tests' busbw, "
                           "median of the timed calls; reached at " + std::to_string(at) + " bytes) across " +
                           std::to_string(nranks) + " GPUs",
                           best});
    }
    if (nranks < 2) {
      waived.push_back({"allreduce_latency_us", kOneGpu});
    } else {
      const Row* smallest = nullptr;
      for (const auto& r : st.rows)
        if (r.c == Coll::allreduce && r.verified && (!smallest || r.bytes < smallest->bytes)) smallest = &r;
      if (smallest)
        metrics.push_back({"allreduce_latency_us", "us", "lower",
                           "median all-reduce time at the smallest size (" + std::to_string(smallest->bytes) +
                               " bytes) across " + std::to_string(nranks) + " GPUs",
                           smallest->sec_median * 1e6});
    }
  }

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, [](Json& c) {
    int nv = 0;
    if (ncclGetVersion(&nv) == ncclSuccess) c.kv("nccl_version", nv); else c.kv_null("nccl_version");
    c.kv("nccl_version_built", NCCL_VERSION_CODE);
  });

  j.key("parameters").begin_object();
  j.kv("ranks", nranks).kv("self_test", nranks < 2);
  j.kv("process_model", "one process, ncclCommInitAll, one host thread per GPU (rank = position in --gpus)");
  j.key("sizes_bytes").begin_array();
  for (size_t s : o.sizes) j.value(static_cast<unsigned long long>(s));
  j.end_array();
  j.kv("warmup_calls", o.warmup).kv("timed_calls", o.iters).kv("datatype", "float32").kv("timeout_s", o.timeout_s);
  j.kv("quick", o.quick).kv("inject_error", o.inject_error).kv("allow_nvls", o.allow_nvls).kv("nvls", nvls_note);
  j.key("collectives").begin_object();
  for (const auto& ci : kColls)
    j.key(ci.key).begin_object().kv("call", ci.call).kv("size_is", ci.size_is).kv("bus_factor", bus_factor(ci.c, nranks)).end_object();
  j.end_object();
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
                     "NCCL_IB_DISABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG", "NCCL_MIN_NCHANNELS",
                     "NCCL_MAX_NCHANNELS", "NCCL_CUMEM_ENABLE"});
  j.kv("self_test", nranks < 2);
  j.kv_objects("collectives", st.rows, [&](const auto& r) {
    j.kv("collective", kColls[static_cast<int>(r.c)].key).kv("bytes", static_cast<unsigned long long>(r.bytes));
    j.kv("count", static_cast<unsigned long long>(r.count)).kv("ranks", nranks).kv("iters", r.iters);
    j.kv("time_us_median", r.sec_median * 1e6).kv("time_us_min", r.sec_min * 1e6).kv("time_us_max", r.sec_max * 1e6);
    j.kv("algbw_gbps", r.algbw).kv("busbw_gbps", r.busbw);
    j.kv("mismatches", r.mismatches).kv("verified", r.verified);
  });
  return end_results(j, metrics, waived, st.passed(), st);
}

}  // namespace

int run_tool(const Options& o, const Invocation& run) {

  // NVLink SHARP (NVLS, multicast) stays off unless asked for: see docs/checks/nccl.md.
  std::string nvls_note;
  if (o.allow_nvls) {
    const char* v = std::getenv("NCCL_NVLS_ENABLE");
    nvls_note = std::string("left to NCCL (--allow-nvls; NCCL_NVLS_ENABLE=") + (v ? v : "unset") + ")";
  } else if (const char* v = std::getenv("NCCL_NVLS_ENABLE"); v && std::string(v) != "0") {
    std::fprintf(stderr, "%s: NCCL_NVLS_ENABLE=%s in the environment: pass --allow-nvls to measure with NVLS\n", kTool, v);
    return kExitUsage;
  } else {
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    nvls_note = "off (NCCL_NVLS_ENABLE=0)";
  }

  State st;
  std::vector<DeviceInfo> devices;
  int nranks = 0;
  auto write_doc = [&]() {
    return write_document(o.output, kTool,
                          [&] { return document(st, o, run, devices, nranks, nvls_note); });
  };
  std::vector<int> gpu_ids;
  std::vector<Rank> ranks;
  auto measure = [&] {
    nranks = static_cast<int>(gpu_ids.size());
    if (nranks < 2) st.notes.push_back(std::string("self-test: ") + kOneGpu);
    ranks.resize(nranks);
    std::vector<ncclComm_t> comms(nranks, nullptr);
    size_t max_bytes = 0;
    for (size_t s : o.sizes) max_bytes = std::max(max_bytes, s);
    for (int r = 0; r < nranks; ++r) {
      devices.push_back(device_info(gpu_ids[r]));
      std::cerr << "[rank " << r << "] GPU " << gpu_ids[r] << " " << devices.back().name << ", "
                << devices.back().pci_bus_id << "\n";
      Rank& rk = ranks[r];
      rk.rank = r;
      rk.dev = gpu_ids[r];
      CUDA_CHECK(cudaSetDevice(rk.dev));
      CUDA_CHECK(cudaStreamCreateWithFlags(&rk.stream, cudaStreamNonBlocking));
      CUDA_CHECK(cudaMalloc(&rk.send, max_bytes));
      CUDA_CHECK(cudaMalloc(&rk.recv, max_bytes));
      CUDA_CHECK(cudaMalloc(&rk.bad, sizeof *rk.bad));
    }
    NCCL_CHECK(ncclCommInitAll(comms.data(), nranks, gpu_ids.data()));
    for (int r = 0; r < nranks; ++r) ranks[r].comm = comms[r];

    Barrier bar(nranks);
    std::mutex err_m;
    bool failed = false;  // set by a rank's error
    for (const auto& ci : kColls) {
      for (size_t bytes0 : o.sizes) {
        size_t unit = static_cast<size_t>(nranks) * sizeof(float);
        size_t bytes = bytes0 / unit * unit;
        if (bytes == 0) continue;
        std::vector<unsigned long long> bad(nranks, 0);
        std::vector<std::thread> threads;
        for (int r = 0; r < nranks; ++r) {
          threads.emplace_back([&, r] {
            try {
              bar.wait();
              bad[r] = run_rank(ranks[r], o, ci.c, bytes, nranks);
            } catch (const std::exception& e) {
              g_abort = true;  // the peers stop waiting for this rank (wait_for)
              if (ranks[r].comm) {  // what this rank queued can no longer complete
                ncclCommAbort(ranks[r].comm);
                ranks[r].comm = nullptr;
              }
              std::lock_guard<std::mutex> l(err_m);
              failed = true;
              st.error("rank " + std::to_string(r) + " (GPU " + std::to_string(ranks[r].dev) + ") " + ci.key + " " +
                       std::to_string(bytes) + " bytes: " + e.what());
            }
          });
        }
        for (auto& t : threads) t.join();
        if (failed) throw AlreadyRecorded();
        Row row;
        row.c = ci.c;
        row.bytes = bytes;
        size_t sc = 0, rc = 0;
        counts(ci.c, bytes, nranks, sc, rc);
        row.count = ci.c == Coll::reducescatter ? rc : sc;
        row.iters = o.iters;
        std::vector<double> it(o.iters, 0.0);
        for (int i = 0; i < o.iters; ++i)
          for (int r = 0; r < nranks; ++r) it[i] = std::max(it[i], ranks[r].sec[i]);
        row.sec_median = median(it);
        row.sec_min = min_of(it);
        row.sec_max = max_of(it);
        row.algbw = bytes / row.sec_median / 1e9;
        row.busbw = row.algbw * bus_factor(ci.c, nranks);
        for (int r = 0; r < nranks; ++r) row.mismatches += bad[r];
        row.verified = row.mismatches == 0;
        st.checked += nranks;
        if (!row.verified) {
          char buf[300];
          std::snprintf(buf, sizeof buf, "%s %zu bytes on %d ranks: %llu wrong elements%s", ci.key, bytes, nranks,
                        row.mismatches, o.inject_error ? " (--inject-error self-test)" : "");
          st.failure(buf);
        }
        std::fprintf(stderr, "[%s %zu B] %.2f us, algbw %.2f GB/s, busbw %.2f GB/s, %s\n", ci.key, bytes,
                     row.sec_median * 1e6, row.algbw, row.busbw, row.verified ? "ok" : "WRONG");
        st.rows.push_back(row);
      }
    }
  };
  // After the measurements, whether they finished or not: the ranks' resources released, the table printed.
  auto after = [&] {
    for (auto& rk : ranks) {
      if (rk.dev < 0) continue;
      cudaSetDevice(rk.dev);
      if (rk.stream) cudaStreamSynchronize(rk.stream);
      if (rk.comm) ncclCommDestroy(rk.comm);
      for (auto e : rk.events) cudaEventDestroy(e);
      if (rk.bad) cudaFree(rk.bad);
      if (rk.recv) cudaFree(rk.recv);
      if (rk.send) cudaFree(rk.send);
      if (rk.stream) cudaStreamDestroy(rk.stream);
    }

    std::printf("%-14s %12s %10s %12s %12s %12s %s\n", "collective", "bytes", "ranks", "time us", "algbw GB/s",
                "busbw GB/s", "verified");
    for (const auto& r : st.rows)
      std::printf("%-14s %12zu %10d %12.2f %12.2f %12.2f %s\n", kColls[static_cast<int>(r.c)].key, r.bytes, nranks,
                  r.sec_median * 1e6, r.algbw, r.busbw, r.verified ? "yes" : "NO");
  };
  return run_gpu_tool(st, o.gpus, gpu_ids, write_doc, measure, after);
}

int main(int argc, char** argv) {
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
}
