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
//
// --multi-process runs the same measurements with one rank per process across hosts, adding all-to-all
// (nccl_multi.cuh); this file keeps the single-process mode, nccl_core.cuh what both share.

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
#include "nccl_core.cuh"
#include "nccl_multi.cuh"
#include "tool_main.h"

using namespace gpuaccept;

using namespace gpuaccept::nccl;

namespace {

constexpr const char* kTool = "gpuaccept-nccl";
constexpr const char* kOneGpu = "one GPU: no peers (a one-rank self-test ran every collective; results.self_test)";


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
    case Coll::alltoall: return static_cast<double>(n - 1) / n;
  }
  return NAN;
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


struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<Row> rows;
};

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
    "  --quick            nightly: 1 MiB .. 256 MiB, 10 timed calls\n"
    "Across processes and hosts (docs/checks/nccl.md), one rank per process, one GPU per rank:\n"
    "  --multi-process    rank and size from the launcher (GPUACCEPT_RANK/_SIZE/_LOCAL_RANK, OMPI_COMM_WORLD_*,\n"
    "                     SLURM_PROCID/NTASKS/LOCALID, PMI_RANK/PMI_SIZE); rank 0 listens at GPUACCEPT_BOOTSTRAP=\n"
    "                     HOST:PORT (set in every rank) and writes the one document; adds all-to-all\n"
    "  --comm LAYOUT      world (default), rail (one communicator per local GPU index across the hosts) or\n"
    "                     groups:0-1,2+5,... (disjoint groups at once; ranks and ranges joined by +)\n"
    "  --device N         this rank's CUDA device (default: its local rank)\n"
    "  --ring             set NCCL_ALGO=Ring before NCCL starts (to measure the network)\n"
    "  --latency-bytes N  the all-reduce size of allreduce_latency_us (default 8)\n"
    "  --bootstrap-timeout-s S  how long ranks wait for each other at the bootstrap (default 120)\n"
    "  --nccl-log-dir DIR keep each rank's NCCL INFO lines there (default: a temporary file, removed)\n";
const UsageTail kUsageTail{21, false,
    "self-test: corrupt one received element before every verification (expect exit 2)",
    "CUDA/NCCL call failed or no GPU", "Sizes are rounded down to a multiple of ranks x 4 bytes.\n"};

// The options of --multi-process (without it they are unknown options).
void parse_multi_options(Args& a, Options& o) {
  o.comm = a.get("comm", "world");
  ncclnet::parse_comm(o.comm);  // throws naming the option
  o.device = static_cast<int>(a.get_long("device", -1));
  if (o.device < -1 || o.device > 1023) throw std::invalid_argument("option --device: a CUDA device index 0..1023");
  o.ring = a.flag("ring");
  long lat = a.get_long("latency-bytes", 8);
  if (lat < 4 || lat > (1l << 30) || lat % 4) throw std::invalid_argument("option --latency-bytes: a multiple of 4 from 4 to 1 GiB");
  o.latency_bytes = static_cast<size_t>(lat);
  o.bootstrap_timeout_s = a.get_double("bootstrap-timeout-s", 120.0);
  if (!(o.bootstrap_timeout_s >= 1.0 && o.bootstrap_timeout_s <= 86400.0))
    throw std::invalid_argument("option --bootstrap-timeout-s: 1..86400 seconds");
  o.nccl_log_dir = a.get("nccl-log-dir", "");
}

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
  o.multi = a.flag("multi-process");
  if (o.multi && o.gpus != "all") throw std::invalid_argument("option --gpus: not with --multi-process (use --device)");
  if (o.multi) parse_multi_options(a, o);
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
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, [](const Options& o, const Invocation& run) {
    return o.multi ? run_multi(o, run) : run_tool(o, run);
  });
}
