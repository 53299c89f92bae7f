// gpuaccept-mpi: MPI point-to-point latency and bandwidth between pairs of ranks (after Agarwal and Becchi,
// 2014), host buffers and, in the build with GPUACCEPT_MPI_CUDA (make mpi-cuda) on a CUDA-aware MPI, GPU buffers.
//
// Ranks are paired i <-> i + n/2, so that with ranks placed in blocks (one or more per node) each pair spans
// two nodes. Pairs run one at a time while the others wait. For each pair and buffer kind:
//   latency:   ping-pong of --lat-size bytes, --lat-iters round trips per sample; one-way latency = half a
//              round trip; the median of --samples samples (after one warm-up sample).
//   bandwidth: a window of --window non-blocking sends of --size bytes each into distinct buffers, closed by a
//              one-byte acknowledgement; bytes / time; the median of --samples samples (after one warm-up).
// Timing: MPI_Wtime on the sending rank. Verification: every ping and pong of host latency is compared with its
// expected pattern; GPU latency checks the last round trip of each sample; every bandwidth message is checked
// in full after each sample (outside the timed window). A wrong byte fails the run (exit 2).
// The JSON document (docs/benchmark-json.md, docs/checks/mpi.md) is written by rank 0.
#include <mpi.h>
#if defined(GPUACCEPT_MPI_CUDA)
#include <cuda_runtime.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.h"
#include "tool_main.h"

using namespace gpuaccept;

namespace {

constexpr const char* kTool = "gpuaccept-mpi";
constexpr int kTagLat = 1, kTagBw = 2, kTagAck = 3;

struct Options {
  long size = 4L << 20;
  int window = 16;
  int samples = 21;
  long lat_size = 8;
  int lat_iters = 1000;
  bool quick = false;
  bool inject_error = false;
  std::string output;
};

const char* kUsage =
    "usage: mpirun -np N gpuaccept-mpi [options]   (N even, at least 2)\n"
    "MPI point-to-point latency and bandwidth between rank pairs i <-> i+N/2, host buffers and (make mpi-cuda,\n"
    "CUDA-aware MPI) GPU buffers; every message verified.\n"
    "  --size BYTES       bandwidth message size (default 4194304)\n"
    "  --window N         messages in flight per bandwidth sample (default 16)\n"
    "  --samples N        samples per measurement; the median is reported (default 21)\n"
    "  --lat-size BYTES   latency message size (default 8)\n"
    "  --lat-iters N      round trips per latency sample (default 1000)\n"
    "  --quick            fewer samples and round trips (nightly)\n"
    "  --inject-error     corrupt one received byte (tests that verification fails)\n"
    "  --output FILE      write the JSON document here (rank 0)\n";

Options parse_options(int argc, char** argv, bool& help) {
  Args a(argc, argv);
  Options o;
  help = a.flag("help");
  o.size = a.get_long("size", o.size);
  o.window = static_cast<int>(a.get_long("window", o.window));
  o.samples = static_cast<int>(a.get_long("samples", o.samples));
  o.lat_size = a.get_long("lat-size", o.lat_size);
  o.lat_iters = static_cast<int>(a.get_long("lat-iters", o.lat_iters));
  o.quick = a.flag("quick");
  o.inject_error = a.flag("inject-error");
  o.output = a.get("output", "");
  a.reject_unknown();
  if (o.quick) {
    o.samples = std::min(o.samples, 7);
    o.lat_iters = std::min(o.lat_iters, 200);
  }
  if (o.size < 8 || o.size % 8) throw std::invalid_argument("option --size: a multiple of 8 bytes, at least 8");
  if (o.lat_size < 8 || o.lat_size % 8) throw std::invalid_argument("option --lat-size: a multiple of 8, at least 8");
  if (o.window < 1) throw std::invalid_argument("option --window: at least 1");
  if (o.samples < 1) throw std::invalid_argument("option --samples: at least 1");
  if (o.lat_iters < 1) throw std::invalid_argument("option --lat-iters: at least 1");
  return o;
}

// MPI's error text for a return code.
inline std::string mpi_error_text(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return std::string(msg, len);
}
#define MPI_CHECK(call) GPUACCEPT_CHECK(#call, call, MPI_SUCCESS, mpi_error_text)

// The 64-bit word `i` of message `slot` in sample `sample`, sent by rank `from`.
inline uint64_t pattern(int from, int sample, int slot, size_t i) {
  uint64_t z = (static_cast<uint64_t>(from) << 48) ^ (static_cast<uint64_t>(sample) << 32) ^
               (static_cast<uint64_t>(slot) << 24) ^ i;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  return z ^ (z >> 27);
}

void fill(std::vector<uint64_t>& buf, size_t words, int from, int sample, int slot, size_t offset = 0) {
  for (size_t i = 0; i < words; ++i) buf[offset + i] = pattern(from, sample, slot, i);
}

// Index of the first wrong word, or -1.
long check(const std::vector<uint64_t>& buf, size_t words, int from, int sample, int slot, size_t offset = 0) {
  for (size_t i = 0; i < words; ++i)
    if (buf[offset + i] != pattern(from, sample, slot, i)) return static_cast<long>(i);
  return -1;
}

struct Stat {
  double median = 0, min = 0, max = 0;
  int samples = 0;
};

Stat stat_of(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  s.median = median(v);
  s.min = min_of(v);
  s.max = max_of(v);
  s.samples = static_cast<int>(v.size());
  return s;
}

// Buffers of one kind (host or GPU) for one rank: `words` 64-bit words; host staging for fills and checks.
struct Buffers {
  bool gpu = false;
  size_t words = 0;
  std::vector<uint64_t> host;
  void* dev = nullptr;
  Buffers(bool on_gpu, size_t w) : gpu(on_gpu), words(w), host(w) {
#if defined(GPUACCEPT_MPI_CUDA)
    if (gpu) CUDA_CHECK(cudaMalloc(&dev, w * sizeof(uint64_t)));
#endif
  }
  ~Buffers() {
#if defined(GPUACCEPT_MPI_CUDA)
    if (dev) cudaFree(dev);
#endif
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  void* ptr(size_t word_offset) {
    return gpu ? static_cast<void*>(static_cast<uint64_t*>(dev) + word_offset)
               : static_cast<void*>(host.data() + word_offset);
  }
  void push() {  // host staging -> the buffer MPI uses
#if defined(GPUACCEPT_MPI_CUDA)
    if (gpu) CUDA_CHECK(cudaMemcpy(dev, host.data(), words * sizeof(uint64_t), cudaMemcpyHostToDevice));
#endif
  }
  void pull() {  // the buffer MPI used -> host staging
#if defined(GPUACCEPT_MPI_CUDA)
    if (gpu) CUDA_CHECK(cudaMemcpy(host.data(), dev, words * sizeof(uint64_t), cudaMemcpyDeviceToHost));
#endif
  }
};

struct PairResult {
  int a = 0, b = 0;
  Stat latency_us, bw_gbs;
  long checked = 0;
  std::vector<std::string> failures;
};

// Runs on ranks a (sender, timer) and b. Returns the result on rank a; b reports failures to a.
PairResult measure_pair(const Options& o, int me, int a, int b, bool gpu, const std::string& kind) {
  PairResult r;
  r.a = a;
  r.b = b;
  const bool sender = me == a;
  const int peer = sender ? b : a;
  const size_t lat_words = static_cast<size_t>(o.lat_size / 8);
  const size_t bw_words = static_cast<size_t>(o.size / 8);
  std::vector<std::string> fails;
  long checked = 0;

  // Latency: ping (a -> b) carries pattern(a, sample, iter); pong (b -> a) echoes it back.
  {
    Buffers buf(gpu, lat_words);
    std::vector<double> lat;
    for (int s = -1; s < o.samples; ++s) {  // s = -1: warm-up, not recorded
      const int sample = s + 1;
      double t0 = MPI_Wtime();
      for (int it = 0; it < o.lat_iters; ++it) {
        const bool verify_now = !gpu || it == o.lat_iters - 1;
        if (sender) {
          if (verify_now) {
            fill(buf.host, lat_words, a, sample, it);
            buf.push();
          }
          MPI_CHECK(MPI_Send(buf.ptr(0), static_cast<int>(o.lat_size), MPI_BYTE, peer, kTagLat, MPI_COMM_WORLD));
          MPI_CHECK(MPI_Recv(buf.ptr(0), static_cast<int>(o.lat_size), MPI_BYTE, peer, kTagLat, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
          if (verify_now) {
            buf.pull();
            ++checked;
            if (check(buf.host, lat_words, a, sample, it) >= 0 && fails.size() < 5)
              fails.push_back(kind + " latency: ranks " + std::to_string(a) + "<->" + std::to_string(b) +
                              ", sample " + std::to_string(sample) + ", round trip " + std::to_string(it) +
                              ": the echo differs from the ping");
          }
        } else {
          MPI_CHECK(MPI_Recv(buf.ptr(0), static_cast<int>(o.lat_size), MPI_BYTE, peer, kTagLat, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
          if (verify_now) {
            buf.pull();
            ++checked;
            if (o.inject_error && s == 0 && it == o.lat_iters - 1) buf.host[0] ^= 1;  // caught here, and again in the echo
            if (check(buf.host, lat_words, a, sample, it) >= 0 && fails.size() < 5)
              fails.push_back(kind + " latency: rank " + std::to_string(b) + " received a wrong ping from rank " +
                              std::to_string(a) + " (sample " + std::to_string(sample) + ", round trip " +
                              std::to_string(it) + ")");
          }
          MPI_CHECK(MPI_Send(buf.ptr(0), static_cast<int>(o.lat_size), MPI_BYTE, peer, kTagLat, MPI_COMM_WORLD));
        }
      }
      double t = MPI_Wtime() - t0;
      if (sender && s >= 0) lat.push_back(t / (2.0 * o.lat_iters) * 1e6);
    }
    if (sender) r.latency_us = stat_of(lat);
  }

  // Bandwidth: a window of messages a -> b into distinct slots, then a one-byte acknowledgement b -> a.
  {
    Buffers buf(gpu, bw_words * o.window);
    std::vector<MPI_Request> req(o.window);
    std::vector<double> bw;
    char ack = 0;
    for (int s = -1; s < o.samples; ++s) {
      const int sample = s + 1;
      if (sender) {
        for (int w = 0; w < o.window; ++w) fill(buf.host, bw_words, a, sample, w, bw_words * w);
        buf.push();
      }
      // The receiver posts its receives, then says it is ready; the sender starts the clock on that signal.
      if (!sender) {
        for (int w = 0; w < o.window; ++w)
          MPI_CHECK(MPI_Irecv(buf.ptr(bw_words * w), static_cast<int>(o.size), MPI_BYTE, peer, kTagBw, MPI_COMM_WORLD,
                              &req[w]));
        MPI_CHECK(MPI_Send(&ack, 1, MPI_BYTE, peer, kTagAck, MPI_COMM_WORLD));
      } else {
        MPI_CHECK(MPI_Recv(&ack, 1, MPI_BYTE, peer, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      }
      double t0 = MPI_Wtime();
      if (sender)
        for (int w = 0; w < o.window; ++w)
          MPI_CHECK(MPI_Isend(buf.ptr(bw_words * w), static_cast<int>(o.size), MPI_BYTE, peer, kTagBw, MPI_COMM_WORLD,
                              &req[w]));
      MPI_CHECK(MPI_Waitall(o.window, req.data(), MPI_STATUSES_IGNORE));
      if (sender) {
        MPI_CHECK(MPI_Recv(&ack, 1, MPI_BYTE, peer, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        double t = MPI_Wtime() - t0;
        if (s >= 0) bw.push_back(static_cast<double>(o.size) * o.window / t / 1e9);
      } else {
        MPI_CHECK(MPI_Send(&ack, 1, MPI_BYTE, peer, kTagAck, MPI_COMM_WORLD));
        buf.pull();
        if (o.inject_error && s == 0) buf.host[bw_words / 2] ^= 1;
        for (int w = 0; w < o.window; ++w) {
          ++checked;
          long bad = check(buf.host, bw_words, a, sample, w, bw_words * w);
          if (bad >= 0 && fails.size() < 5)
            fails.push_back(kind + " bandwidth: rank " + std::to_string(b) + " received a wrong message from rank " +
                            std::to_string(a) + " (sample " + std::to_string(sample) + ", message " +
                            std::to_string(w) + ", word " + std::to_string(bad) + " of " + std::to_string(bw_words) +
                            ")");
        }
      }
    }
    if (sender) r.bw_gbs = stat_of(bw);
  }

  // The receiver's verification outcome goes to the sender, which reports the pair.
  long peer_checked = 0;
  int nfail = static_cast<int>(fails.size());
  if (sender) {
    int peer_nfail = 0;
    MPI_CHECK(MPI_Recv(&peer_checked, 1, MPI_LONG, peer, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_CHECK(MPI_Recv(&peer_nfail, 1, MPI_INT, peer, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < peer_nfail; ++i) {
      char msg[512] = {0};
      MPI_CHECK(MPI_Recv(msg, sizeof msg - 1, MPI_CHAR, peer, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      fails.push_back(msg);
    }
    r.checked = checked + peer_checked;
    r.failures = fails;
  } else {
    MPI_CHECK(MPI_Send(&checked, 1, MPI_LONG, peer, kTagAck, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Send(&nfail, 1, MPI_INT, peer, kTagAck, MPI_COMM_WORLD));
    for (const auto& f : fails) {
      std::string m = f.substr(0, 510);
      MPI_CHECK(MPI_Send(m.c_str(), static_cast<int>(m.size()) + 1, MPI_CHAR, peer, kTagAck, MPI_COMM_WORLD));
    }
  }
  return r;
}

std::string library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, len);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s.substr(0, s.find('\n'));
}

// Whether GPU buffers can be measured here; `why` says why not.
bool gpu_buffers_possible(std::string& why) {
#if defined(GPUACCEPT_MPI_CUDA)
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    why = "no CUDA device visible to this rank";
    return false;
  }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (!MPIX_Query_cuda_support()) {
    why = "the MPI library is not CUDA-aware at run time (MPIX_Query_cuda_support() returned 0)";
    return false;
  }
  return true;
#else
  why = "the MPI library does not declare CUDA-aware support (no MPIX_CUDA_AWARE_SUPPORT in mpi-ext.h)";
  return false;
#endif
#else
  why = "built without CUDA: `make mpi-cuda` builds gpuaccept-mpi-cuda for a CUDA-aware MPI";
  return false;
#endif
}

void stat_json(Json& j, const char* key, const Stat& s) {
  j.key(key).begin_object().kv("median", s.median).kv("min", s.min).kv("max", s.max).kv("samples", s.samples);
  j.end_object();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string started = utc_now();
  const double t0 = now_s();
  MPI_Init(&argc, &argv);
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Options o;
  int rc = 0;
  if (me == 0) {
    rc = parse_or_exit(parse_options, argc, argv, kTool, kUsage, o);
  } else {  // only rank 0 prints usage and option errors; every rank leaves with the same code
    bool help = false;
    try {
      o = parse_options(argc, argv, help);
      rc = help ? kExitOk : -1;
    } catch (const std::exception&) {
      rc = kExitUsage;
    }
  }
  if (rc >= 0) {
    MPI_Finalize();
    return rc;
  }
  std::vector<std::string> errors, failures, hosts(n);
  std::vector<PairResult> host_pairs, gpu_pairs;
  std::string gpu_why;
  long checked = 0;
  // Every rank's host name, gathered on rank 0.
  {
    std::string h = hostname();
    h.resize(255, '\0');
    std::vector<char> all(static_cast<size_t>(256) * n);
    MPI_Gather(h.c_str(), 256, MPI_CHAR, all.data(), 256, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (me == 0)
      for (int i = 0; i < n; ++i) hosts[i] = std::string(all.data() + 256 * i);
  }
  if (n < 2 || n % 2) {
    errors.push_back("gpuaccept-mpi needs an even number of ranks, at least 2 (got " + std::to_string(n) + ")");
  } else {
    const bool gpu_ok = gpu_buffers_possible(gpu_why);
    int all_gpu_ok = 0, mine = gpu_ok ? 1 : 0;
    MPI_Allreduce(&mine, &all_gpu_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (gpu_ok && !all_gpu_ok) gpu_why = "not every rank can use GPU buffers";
    try {
      for (int kind = 0; kind < (all_gpu_ok ? 2 : 1); ++kind) {
        const bool gpu = kind == 1;
        for (int a = 0; a < n / 2; ++a) {
          const int b = a + n / 2;
          MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
          if (me != a && me != b) continue;
          PairResult r = measure_pair(o, me, a, b, gpu, gpu ? "gpu" : "host");
          // The pair's result goes to rank 0 (it is rank a's when a == 0).
          if (me == a && a != 0) {
            double v[8] = {r.latency_us.median, r.latency_us.min, r.latency_us.max, static_cast<double>(r.latency_us.samples),
                           r.bw_gbs.median,     r.bw_gbs.min,     r.bw_gbs.max,     static_cast<double>(r.bw_gbs.samples)};
            long c[2] = {r.checked, static_cast<long>(r.failures.size())};
            MPI_CHECK(MPI_Send(v, 8, MPI_DOUBLE, 0, kTagAck, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Send(c, 2, MPI_LONG, 0, kTagAck, MPI_COMM_WORLD));
            for (const auto& f : r.failures)
              MPI_CHECK(MPI_Send(f.c_str(), static_cast<int>(f.size()) + 1, MPI_CHAR, 0, kTagAck, MPI_COMM_WORLD));
          }
          if (me == 0 && a == 0) (gpu ? gpu_pairs : host_pairs).push_back(r);
        }
        if (me == 0) {
          for (int a = 1; a < n / 2; ++a) {
            PairResult r;
            r.a = a;
            r.b = a + n / 2;
            double v[8];
            long c[2];
            MPI_CHECK(MPI_Recv(v, 8, MPI_DOUBLE, a, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Recv(c, 2, MPI_LONG, a, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            r.latency_us = {v[0], v[1], v[2], static_cast<int>(v[3])};
            r.bw_gbs = {v[4], v[5], v[6], static_cast<int>(v[7])};
            r.checked = c[0];
            for (long i = 0; i < c[1]; ++i) {
              char msg[600] = {0};
              MPI_CHECK(MPI_Recv(msg, sizeof msg - 1, MPI_CHAR, a, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
              r.failures.push_back(msg);
            }
            (gpu ? gpu_pairs : host_pairs).push_back(r);
          }
        }
      }
    } catch (const std::exception& e) {
      errors.push_back(e.what());
      std::fprintf(stderr, "%s: rank %d: error: %s\n", kTool, me, e.what());
      MPI_Abort(MPI_COMM_WORLD, kExitCallFailed);
    }
  }

  if (me == 0) {
    std::vector<Metric> metrics;
    Waived waived;
    auto add = [&](const std::vector<PairResult>& pairs, const char* prefix, const std::string& what) {
      if (pairs.empty()) return;
      double lat_max = 0, bw_min = 1e300;
      for (const auto& p : pairs) {
        lat_max = std::max(lat_max, p.latency_us.median);
        bw_min = std::min(bw_min, p.bw_gbs.median);
        checked += p.checked;
        failures.insert(failures.end(), p.failures.begin(), p.failures.end());
      }
      metrics.push_back({std::string(prefix) + "_latency_max", "us", "lower",
                         "max over rank pairs of the median one-way latency, " + std::to_string(o.lat_size) + " B, " + what,
                         lat_max});
      metrics.push_back({std::string(prefix) + "_bw_min", "GB/s", "higher",
                         "min over rank pairs of the median streaming bandwidth, " + std::to_string(o.size) +
                             " B messages, window " + std::to_string(o.window) + ", " + what,
                         bw_min});
    };
    add(host_pairs, "host", "host buffers");
    add(gpu_pairs, "gpu", "GPU buffers");
    if (gpu_pairs.empty()) {
      waived.push_back({"gpu_latency_max", gpu_why});
      waived.push_back({"gpu_bw_min", gpu_why});
    }
    for (const auto& p : host_pairs)
      std::printf("host  ranks %d<->%d (%s, %s): latency %.2f us (median of %d), bandwidth %.2f GB/s (median of %d)\n",
                  p.a, p.b, hosts[p.a].c_str(), hosts[p.b].c_str(), p.latency_us.median, p.latency_us.samples,
                  p.bw_gbs.median, p.bw_gbs.samples);
    for (const auto& p : gpu_pairs)
      std::printf("gpu   ranks %d<->%d (%s, %s): latency %.2f us, bandwidth %.2f GB/s\n", p.a, p.b,
                  hosts[p.a].c_str(), hosts[p.b].c_str(), p.latency_us.median, p.bw_gbs.median);
    for (const auto& f : failures) std::fprintf(stderr, "%s: verification failed: %s\n", kTool, f.c_str());
    const bool passed = failures.empty() && errors.empty() && !host_pairs.empty();
    const bool written = write_document(o.output, kTool, [&] {
      Json j;
      j.begin_object();
      write_preamble(j, kTool, argc, argv, started, now_s() - t0,
                     "MPI_Wtime on the sending rank; latency: half a ping-pong round trip averaged over --lat-iters "
                     "round trips per sample; bandwidth: a window of non-blocking sends closed by an "
                     "acknowledgement; the median of --samples samples after one warm-up sample");
      j.key("devices").begin_array().end_array();
      j.key("parameters").begin_object();
      j.kv("size", o.size).kv("window", o.window).kv("samples", o.samples).kv("lat_size", o.lat_size);
      j.kv("lat_iters", o.lat_iters).kv("quick", o.quick).kv("inject_error", o.inject_error);
      j.end_object();
      j.key("results").begin_object();
      j.kv("mpi_library", library_version()).kv("ranks", n);
      j.key("rank_hosts").begin_array();
      for (const auto& h : hosts) j.value(h);
      j.end_array();
      for (int kind = 0; kind < 2; ++kind) {
        j.kv_objects(kind ? "gpu_pairs" : "host_pairs", kind ? gpu_pairs : host_pairs, [&](const auto& p) {
          j.key("ranks").begin_array().value(p.a).value(p.b).end_array();
          j.key("hosts").begin_array().value(hosts[p.a]).value(hosts[p.b]).end_array();
          stat_json(j, "latency_us", p.latency_us);
          stat_json(j, "bandwidth_gbs", p.bw_gbs);
          j.kv("checked", p.checked);
        });
      }
      j.end_object();
      write_outcome(j, metrics, waived, passed, checked, failures, errors);
      j.end_object();
      return j.str();
    });
    rc = exit_code(errors, failures, written);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
