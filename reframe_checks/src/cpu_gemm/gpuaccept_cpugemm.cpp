// gpuaccept-cpugemm: host SGEMM/DGEMM throughput with Intel MKL (-DGPUACCEPT_BLAS_MKL) or OpenBLAS
// (-DGPUACCEPT_BLAS_OPENBLAS), at thread counts 1, 2, 4, ... and all CPUs the process may use; every result
// checked with Freivalds' test in double. Wall-clock (steady_clock) time per call; per thread count a
// sustained window of --window-s seconds (at least 3 calls) after one warm-up call; median GFLOP/s.
// The JSON document is described in docs/benchmark-json.md; the method in docs/checks/gemm.md.
// Facts for the judge (never judged here): the ISA of the kernels the BLAS chose (OpenBLAS's core name, MKL's
// code branch) against the CPU's flags (blas_optimized_core: 0 when the kernels lack AVX2 on a CPU that has it),
// and the CPU's nominal peak (physical cores x clock x FLOPs per cycle from the flags) with the GEMM figures as
// fractions of it.

#if defined(GPUACCEPT_BLAS_MKL)
#include <mkl.h>
#elif defined(GPUACCEPT_BLAS_OPENBLAS)
#include <cblas.h>
#else
#error "define GPUACCEPT_BLAS_MKL or GPUACCEPT_BLAS_OPENBLAS"
#endif

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "bench_common.h"
#include "blas_core.h"
#include "tool_main.h"

using namespace gpuaccept;

namespace {

constexpr const char* kTool = "gpuaccept-cpugemm";
constexpr int kMinCalls = 3;
constexpr double kTolDgemm = 1e-12;
constexpr double kTolSgemm = 1e-4;

// ---------------------------------------------------------------------------------------------
// The BLAS library.
#if defined(GPUACCEPT_BLAS_MKL)
const char* blas_library() { return "Intel MKL"; }
std::string blas_version() {
  char buf[256] = {0};
  mkl_get_version_string(buf, sizeof buf - 1);
  std::string s = buf;
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}
// Exactly t threads: dynamic adjustment off, so MKL does not use fewer.
int set_threads(int t) {
  mkl_set_dynamic(0);
  mkl_set_num_threads(t);
  return mkl_get_max_threads();
}
// MKL's code branch for this CPU (MKL_ENABLE_INSTRUCTIONS can lower it), by value (blas_core.h).
std::string blas_core() { return mkl_branch_name(mkl_cbwr_get_auto_branch()); }
// ISA of a code branch: avx512, avx2, avx, sse or unknown (AUTO: MKL maps the CPU to no branch of its own).
std::string core_isa(const std::string& core) { return mkl_branch_isa(core); }
#else
const char* blas_library() { return "OpenBLAS"; }
std::string blas_version() {
  std::string s = openblas_get_config();
  s += std::string(" (core ") + openblas_get_corename() + ")";
  return s;
}
int set_threads(int t) {
  openblas_set_num_threads(t);
  return openblas_get_num_threads();
}
// The core whose kernels OpenBLAS chose (DYNAMIC_ARCH: from CPUID, or OPENBLAS_CORETYPE).
std::string blas_core() { return openblas_get_corename(); }
// ISA of OpenBLAS's core (blas_core.h): anything it does not list is taken as the SSE-only generic fallback.
std::string core_isa(const std::string& core) { return openblas_core_isa(core); }
#endif

int isa_rank(const std::string& isa) {
  if (isa == "avx512") return 4;
  if (isa == "avx2") return 3;
  if (isa == "avx") return 2;
  if (isa == "sse") return 1;
  return 0;
}

// CPUs this process may run on. GNU OpenMP binds the initial thread to the first place as the program loads
// when OMP_PROC_BIND/OMP_PLACES are set (MKL's GNU-threaded static build links it), so the thread's own
// affinity mask then reads one CPU: OpenMP's places, built from the process's initial mask, come first; the
// affinity mask where there are none; else the online CPUs.
std::vector<int> usable_cpu_ids() {
  std::vector<int> ids;
  for (int p = 0; p < omp_get_num_places(); ++p) {
    std::vector<int> procs(static_cast<size_t>(std::max(0, omp_get_place_num_procs(p))));
    if (!procs.empty()) omp_get_place_proc_ids(p, procs.data());
    ids.insert(ids.end(), procs.begin(), procs.end());
  }
  if (ids.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) ids.push_back(c);
  }
  if (ids.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < std::max(1L, n); ++c) ids.push_back(static_cast<int>(c));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

int usable_cpus() { return static_cast<int>(usable_cpu_ids().size()); }

// ---------------------------------------------------------------------------------------------
// The CPU's nominal peak: physical cores this process may use x nominal clock x FP64 FLOPs per cycle per core
// from the flags (AVX-512: 2 FMA units x 8 lanes x 2 = 32; AVX2+FMA: 16; AVX: 8; SSE2: 4; FP32 twice that).
// Two AVX-512 FMA units is what Xeon Gold/Platinum have; one-unit parts (some Silver/Bronze) read half.
struct CpuPeak {
  std::string model, isa = "unknown", clock_source = "none";
  std::vector<std::string> flags;  // the ones that set the FLOPs per cycle
  int usable_cpus = 0, cores = 0;
  double clock_ghz = NAN, dp_flops_per_cycle = NAN, dp_gflops = NAN, sp_gflops = NAN;
  std::string cores_source;
};

std::string trim(std::string v) {
  v.erase(0, v.find_first_not_of(" \t"));
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

CpuPeak cpu_peak() {
  CpuPeak p;
  p.model = cpu_model();
  const std::vector<int> usable = usable_cpu_ids();
  p.usable_cpus = static_cast<int>(usable.size());
  // /proc/cpuinfo: one block per logical CPU; physical cores = distinct (physical id, core id) in the mask.
  std::ifstream f("/proc/cpuinfo");
  std::string line, flags;
  int proc = -1, phys = -1, core = -1;
  double mhz = NAN;
  std::set<std::pair<int, int>> cores;
  bool ids = true;
  auto flush = [&] {
    if (proc < 0) return;
    if (std::binary_search(usable.begin(), usable.end(), proc)) {
      if (phys < 0 || core < 0) ids = false;
      cores.insert({phys, core});
    }
    proc = phys = core = -1;
  };
  while (std::getline(f, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string k = trim(line.substr(0, colon)), v = trim(line.substr(colon + 1));
    if (k == "processor") {
      flush();
      proc = std::atoi(v.c_str());
    } else if (k == "physical id") {
      phys = std::atoi(v.c_str());
    } else if (k == "core id") {
      core = std::atoi(v.c_str());
    } else if (k == "flags" && flags.empty()) {
      flags = " " + v + " ";
    } else if (k == "cpu MHz" && std::isnan(mhz)) {
      mhz = std::atof(v.c_str());
    }
  }
  flush();
  if (ids && !cores.empty()) {
    p.cores = static_cast<int>(cores.size());
    p.cores_source = "/proc/cpuinfo: distinct (physical id, core id) among the usable CPUs";
  } else {
    p.cores = p.usable_cpus;
    p.cores_source = "usable CPUs (no core ids in /proc/cpuinfo)";
  }
  auto has = [&](const char* fl) { return flags.find(std::string(" ") + fl + " ") != std::string::npos; };
  if (has("avx512f")) {
    p.isa = "avx512", p.dp_flops_per_cycle = 32;
    p.flags = {"avx512f"};
  } else if (has("avx2") && has("fma")) {
    p.isa = "avx2", p.dp_flops_per_cycle = 16;
    p.flags = {"avx2", "fma"};
  } else if (has("avx")) {
    p.isa = "avx", p.dp_flops_per_cycle = 8;
    p.flags = {"avx"};
  } else if (has("sse2")) {
    p.isa = "sse", p.dp_flops_per_cycle = 4;
    p.flags = {"sse2"};
  }
  // Nominal clock: intel_pstate's base frequency, else the "@ 2.10GHz" of the model name, else cpuinfo's MHz.
  const std::string base = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency");
  const auto at = p.model.find(" @ ");
  if (!base.empty() && std::atof(base.c_str()) > 0) {
    p.clock_ghz = std::atof(base.c_str()) / 1e6;
    p.clock_source = "/sys/devices/system/cpu/cpu0/cpufreq/base_frequency";
  } else if (at != std::string::npos && p.model.find("GHz", at) != std::string::npos &&
             std::atof(p.model.c_str() + at + 3) > 0) {
    p.clock_ghz = std::atof(p.model.c_str() + at + 3);
    p.clock_source = "/proc/cpuinfo model name";
  } else if (mhz > 0) {
    p.clock_ghz = mhz / 1e3;
    p.clock_source = "/proc/cpuinfo cpu MHz (first CPU)";
  }
  p.dp_gflops = p.cores * p.clock_ghz * p.dp_flops_per_cycle;
  p.sp_gflops = 2 * p.dp_gflops;
  return p;
}

// ---------------------------------------------------------------------------------------------
double uniform_pm1(uint64_t i, uint64_t seed) {
  uint64_t h = mix64(i ^ mix64(seed));
  return static_cast<double>(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

template <typename T>
void fill(std::vector<T>& v, uint64_t seed) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(uniform_pm1(i, seed));
}

void gemm(const std::vector<double>& A, const std::vector<double>& B, std::vector<double>& C, int n) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n);
}
void gemm(const std::vector<float>& A, const std::vector<float>& B, std::vector<float>& C, int n) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
}

// Freivalds' test in double on row-major n x n matrices: x random, y = B x, z = A y, w = C x, and with absolute
// values ya = |B||x|, za = |A| ya. Returns max_i |w_i - z_i| / max_i za_i (NaN if C holds a NaN).
template <typename T>
double freivalds(const std::vector<T>& A, const std::vector<T>& B, const std::vector<T>& C, int n, uint64_t seed) {
  std::vector<double> x(n), xa(n), y(n), ya(n);
  for (int j = 0; j < n; ++j) {
    x[j] = uniform_pm1(static_cast<uint64_t>(j), seed);
    xa[j] = std::fabs(x[j]);
  }
  for (int i = 0; i < n; ++i) {
    const T* row = &B[static_cast<size_t>(i) * n];
    double s = 0.0, sa = 0.0;
    for (int j = 0; j < n; ++j) {
      double b = static_cast<double>(row[j]);
      s += b * x[j];
      sa += std::fabs(b) * xa[j];
    }
    y[i] = s;
    ya[i] = sa;
  }
  double num = 0.0, den = 0.0;
  bool nan = false;
  for (int i = 0; i < n; ++i) {
    const T* arow = &A[static_cast<size_t>(i) * n];
    const T* crow = &C[static_cast<size_t>(i) * n];
    double z = 0.0, za = 0.0, w = 0.0;
    for (int j = 0; j < n; ++j) {
      double a = static_cast<double>(arow[j]);
      z += a * y[j];
      za += std::fabs(a) * ya[j];
      w += static_cast<double>(crow[j]) * x[j];
    }
    double d = std::fabs(w - z);
    if (std::isnan(d)) nan = true;
    num = std::max(num, d);
    den = std::max(den, za);
  }
  if (nan) return NAN;
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return num / den;
}

// ---------------------------------------------------------------------------------------------
struct Options {
  int size = 4096;
  std::vector<int> threads;  // empty: 1, 2, 4, ..., all
  double window_s = 1.0;
  bool quick = false;
  bool inject_error = false;
  std::string output;
};

struct Row {
  std::string precision;
  int threads = 0, blas_threads = 0, n = 0, samples = 0;
  double gf_median = NAN, gf_min = NAN, gf_max = NAN, sec_median = NAN;
  double rel_error = NAN, tolerance = NAN;
  bool verified = false;
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<Row> rows;
};

std::vector<int> default_threads(int all) {
  std::vector<int> t;
  for (int k = 1; k < all; k *= 2) t.push_back(k);
  t.push_back(all);
  return t;
}

template <typename T>
void measure(State& st, const Options& o, const char* prec, double tol, const std::vector<int>& thread_list) {
  const int n = o.size;
  const size_t elems = static_cast<size_t>(n) * n;
  std::vector<T> A(elems), B(elems), C(elems);
  fill(A, mix64(0xA ^ sizeof(T)));  // different seeds for A and B
  fill(B, mix64(0xB ^ sizeof(T)));
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  for (int t : thread_list) {
    Row r;
    r.precision = prec;
    r.threads = t;
    r.n = n;
    r.blas_threads = set_threads(t);
    gemm(A, B, C, n);  // warm-up (thread pool start, page faults)
    std::fill(C.begin(), C.end(), std::numeric_limits<T>::quiet_NaN());  // poison: a call that writes nothing fails
    std::vector<double> sec, gf;
    const auto w0 = std::chrono::steady_clock::now();
    for (;;) {
      const auto c0 = std::chrono::steady_clock::now();
      gemm(A, B, C, n);
      const auto c1 = std::chrono::steady_clock::now();
      double s = std::chrono::duration<double>(c1 - c0).count();
      sec.push_back(s);
      gf.push_back(flops / s / 1e9);
      if (static_cast<int>(sec.size()) >= kMinCalls && std::chrono::duration<double>(c1 - w0).count() >= o.window_s)
        break;
    }
    r.samples = static_cast<int>(sec.size());
    r.gf_median = median(gf);
    r.gf_min = min_of(gf);
    r.gf_max = max_of(gf);
    r.sec_median = median(sec);
    if (o.inject_error) C[static_cast<size_t>(n / 2) * n + n / 3] = static_cast<T>(1e30);
    r.tolerance = tol;
    r.rel_error = freivalds(A, B, C, n, mix64(0x5eed + static_cast<uint64_t>(t)));
    r.verified = r.rel_error <= tol;  // false for NaN
    ++st.checked;
    char buf[512];
    std::snprintf(buf, sizeof buf, "[%s threads=%d (BLAS reports %d) n=%d] %.1f GFLOP/s median of %d (min %.1f), rel_error %.2g %s",
                  prec, t, r.blas_threads, n, r.gf_median, r.samples, r.gf_min, r.rel_error,
                  r.verified ? "ok" : "FAILED");
    std::fprintf(stderr, "%s\n", buf);
    if (!r.verified) {
      std::snprintf(buf, sizeof buf, "host %s (%s): %s threads=%d n=%d: Freivalds rel_error %.3g > tolerance %.3g%s",
                    hostname().c_str(), cpu_model().c_str(), prec, t, n, r.rel_error, tol,
                    o.inject_error ? " (--inject-error self-test)" : "");
      st.failure(buf);
    }
    st.rows.push_back(r);
  }
}

const char* kUsage =
    "usage: gpuaccept-cpugemm [options]\n"
    "Host DGEMM and SGEMM throughput (cblas, row major, square) at several thread counts, verified\n"
    "(Freivalds, in double).\n"
    "  --size N          matrix size (default 4096; --quick 1024)\n"
    "  --threads LIST    comma list of thread counts (default 1,2,4,... and all usable CPUs)\n"
    "  --window-s S      sustained window per thread count, at least 3 calls (default 1.0)\n"
    "  --quick           nightly: size 1024\n";
const UsageTail kUsageTail{20, false, "self-test: corrupt one element of C before every verification (expect exit 2)",
    "a call failed",
    "Thread pinning comes from the environment (OMP_PROC_BIND/OMP_PLACES, KMP_AFFINITY); it is recorded.\n"};

Options parse_options(Args& a) {
  Options o;
  o.quick = a.flag("quick");
  o.inject_error = a.flag("inject-error");
  long size = a.get_long("size", o.quick ? 1024 : 4096);
  if (size < 16 || size > 65536) throw std::invalid_argument("option --size: " + std::to_string(size) + " out of range 16..65536");
  o.size = static_cast<int>(size);
  std::string threads = a.get("threads", "");
  if (!threads.empty()) {
    for (const auto& s : split_csv(threads)) {
      const long v = Args::whole_number("threads", s);
      if (v < 1 || v > 4096) throw std::invalid_argument("option --threads: " + s + " out of range 1..4096");
      if (std::find(o.threads.begin(), o.threads.end(), static_cast<int>(v)) == o.threads.end())
        o.threads.push_back(static_cast<int>(v));
    }
    if (o.threads.empty()) throw std::invalid_argument("option --threads: empty list");
    std::sort(o.threads.begin(), o.threads.end());
  }
  o.window_s = a.get_seconds("window-s", 1.0, 600);
  o.output = a.get("output", "");
  a.reject_unknown();
  return o;
}

const Row* find_row(const State& st, const std::string& prec, int threads) {
  for (const auto& r : st.rows)
    if (r.precision == prec && r.threads == threads) return &r;
  return nullptr;
}

const char* kTiming =
    "wall clock (steady_clock) around each cblas call; per thread count one warm-up call, then back-to-back "
    "calls for --window-s seconds (at least 3); GFLOP/s = 2*n^3/s/1e9, median over the window";

const char* kAffinityVars[] = {"OMP_PROC_BIND", "OMP_PLACES", "OMP_NUM_THREADS", "GOMP_CPU_AFFINITY", "KMP_AFFINITY",
                               "KMP_HW_SUBSET", "MKL_NUM_THREADS", "MKL_DYNAMIC", "MKL_THREADING_LAYER",
                               "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE"};

std::string document(const State& st, const Options& o, const std::vector<int>& threads, const Invocation& run, const std::string& version, const CpuPeak& peak) {
  Json j;
  j.begin_object();
  write_preamble(j, kTool, run, kTiming);
  j.key("devices").begin_array().end_array();
  j.key("parameters").begin_object();
  j.kv("size", o.size);
  j.key("threads").begin_array();
  for (int t : threads) j.value(t);
  j.end_array();
  j.kv("window_s", o.window_s).kv("min_calls", kMinCalls).kv("warmup_calls", 1);
  j.kv("quick", o.quick).kv("inject_error", o.inject_error);
  j.kv("usable_cpus", usable_cpus()).kv("logical_cpus", static_cast<long>(sysconf(_SC_NPROCESSORS_ONLN)));
  j.key("tolerance").begin_object().kv("dgemm", kTolDgemm).kv("sgemm", kTolSgemm).end_object();
  end_parameters(j, kAffinityVars);
  j.kv_objects("cpu_gemm", st.rows, [&](const auto& r) {
    j.kv("precision", r.precision).kv("threads", r.threads).kv("blas_threads", r.blas_threads).kv("n", r.n);
    j.kv("gflops_median", r.gf_median).kv("gflops_min", r.gf_min).kv("gflops_max", r.gf_max);
    j.kv("seconds_median", r.sec_median).kv("samples", r.samples);
    j.kv("rel_error", r.rel_error).kv("tolerance", r.tolerance).kv("verified", r.verified);
  });
  // The kernels the BLAS chose against what the CPU can do: facts for the judge's blas_optimized_core rule.
  const std::string core = blas_core(), kisa = core_isa(core);
  const bool generic = isa_rank(kisa) > 0 && isa_rank(kisa) < isa_rank("avx2") && isa_rank(peak.isa) >= isa_rank("avx2");
  j.key("blas").begin_object().kv("library", blas_library()).kv("version", version);
  j.kv("core", core).kv("core_isa", kisa).kv("cpu_isa", peak.isa).kv("generic_core", generic);
  j.kv("core_below_cpu_isa", isa_rank(kisa) > 0 && isa_rank(kisa) < isa_rank(peak.isa));
  std::string fix;
  if (generic && std::string(blas_library()) == "OpenBLAS")
    fix = std::string("OpenBLAS did not recognise this CPU and runs its generic ") + core +
          " kernels: set OPENBLAS_CORETYPE=" + (peak.isa == "avx512" ? "SkylakeX" : "Haswell") +
          " in the check's environment (or install an OpenBLAS that knows the CPU, or MKL)";
  else if (generic)
    fix = "MKL runs a pre-AVX2 code branch on an AVX2 CPU: check MKL_ENABLE_INSTRUCTIONS and MKL_CBWR";
  j.kv("remedy", fix);
  j.end_object();
  j.key("cpu_peak").begin_object();
  j.kv("model", peak.model).kv("isa", peak.isa);
  j.key("isa_flags").begin_array();
  for (const auto& fl : peak.flags) j.value(fl);
  j.end_array();
  j.kv("usable_cpus", peak.usable_cpus).kv("cores", peak.cores).kv("cores_source", peak.cores_source);
  j.kv("clock_ghz", peak.clock_ghz).kv("clock_source", peak.clock_source);
  j.kv("dp_flops_per_cycle_per_core", peak.dp_flops_per_cycle);
  j.kv("dp_peak_gflops", peak.dp_gflops).kv("sp_peak_gflops", peak.sp_gflops);
  j.kv("formula", "cores x clock_ghz x dp_flops_per_cycle_per_core (FP32: twice); AVX-512 counted as 2 FMA units "
                  "(Xeon Gold/Platinum; one-unit parts read half), nominal clock (turbo and AVX-512 licence "
                  "clocks ignored)");
  j.end_object();
  j.end_object();

  // Metrics at the largest thread count measured (all usable CPUs unless --threads says otherwise).
  const int tmax = threads.empty() ? 0 : threads.back();
  std::vector<Metric> metrics;
  Waived waived;
  for (const char* prec : {"dgemm", "sgemm"}) {
    const Row* r = find_row(st, prec, tmax);
    if (r && std::isfinite(r->gf_median))
      metrics.push_back({std::string(prec) + "_gflops", "GFLOP/s", "higher",
                         std::string(prec == std::string("dgemm") ? "DGEMM" : "SGEMM") + " n=" +
                             std::to_string(o.size) + ", " + std::to_string(tmax) + " threads, median over the window",
                         r->gf_median});
  }
  for (const char* prec : {"dgemm", "sgemm"}) {
    const Row* r = find_row(st, prec, tmax);
    const double pk = std::string(prec) == "dgemm" ? peak.dp_gflops : peak.sp_gflops;
    if (r && std::isfinite(r->gf_median) && std::isfinite(pk) && pk > 0)
      metrics.push_back({std::string(prec) + "_peak_fraction", "ratio", "higher",
                         std::string(prec) + "_gflops over the CPU's nominal " + (prec[0] == 'd' ? "FP64" : "FP32") +
                             " peak of the usable cores (" + std::to_string(peak.cores) + " cores, clock from " +
                             peak.clock_source + ", " + peak.isa + ")",
                         r->gf_median / pk});
    else if (r && std::isfinite(r->gf_median))
      waived.push_back({std::string(prec) + "_peak_fraction",
                        "the CPU's peak is unknown (clock source: " + peak.clock_source + ", ISA " + peak.isa + ")"});
  }
  if (isa_rank(kisa) > 0 && isa_rank(peak.isa) > 0)
    metrics.push_back({"blas_optimized_core", "count", "higher",
                       std::string("0 when the BLAS runs generic pre-AVX2 kernels on a CPU with AVX2 (a misconfigured "
                                   "BLAS), 1 otherwise; here core ") + core + " (" + kisa + ") on a " + peak.isa + " CPU",
                       generic ? 0.0 : 1.0});
  else if (core == "MKL_CBWR_AUTO")
    waived.push_back({"blas_optimized_core", "MKL maps this CPU (" + peak.model + ") to no code branch of its own "
                                             "(MKL_CBWR_AUTO, as on AMD CPUs): the ISA of its kernels cannot be told"});
  else
    waived.push_back({"blas_optimized_core", "cannot tell the ISA of the BLAS core '" + core + "' or of the CPU (" +
                                               peak.isa + ")"});
  const Row* all = find_row(st, "dgemm", tmax);
  const Row* one = find_row(st, "dgemm", 1);
  if (all && one && std::isfinite(all->gf_median) && one->gf_median > 0) {
    metrics.push_back({"dgemm_scaling_efficiency", "ratio", "higher",
                       "DGEMM " + std::to_string(tmax) + "-thread median over " + std::to_string(tmax) +
                           " times the 1-thread median",
                       all->gf_median / (tmax * one->gf_median)});
  } else if (st.errors.empty() && std::find(threads.begin(), threads.end(), 1) == threads.end()) {
    waived.push_back({"dgemm_scaling_efficiency", "--threads list has no 1-thread step"});
  }
  return close_document(j, metrics, waived, st.passed(), st.checked, st.failures, st.errors);
}

}  // namespace

int run_tool(const Options& o, const Invocation& run) {
  const std::vector<int> threads = o.threads.empty() ? default_threads(usable_cpus()) : o.threads;
  const std::string version = blas_version();
  const CpuPeak peak = cpu_peak();
  std::fprintf(stderr, "%s: %s %s, core %s (%s), n=%d, %d usable CPUs\n", kTool, blas_library(), version.c_str(),
               blas_core().c_str(), core_isa(blas_core()).c_str(), o.size, usable_cpus());
  std::fprintf(stderr, "%s: CPU %s: %d cores x %.3f GHz (%s) x %.0f FP64 FLOP/cycle (%s) = %.1f GFLOP/s FP64 peak\n",
               kTool, peak.model.c_str(), peak.cores, peak.clock_ghz, peak.clock_source.c_str(),
               peak.dp_flops_per_cycle, peak.isa.c_str(), peak.dp_gflops);

  State st;
  try {
    measure<double>(st, o, "dgemm", kTolDgemm, threads);
    measure<float>(st, o, "sgemm", kTolSgemm, threads);
  } catch (const std::exception& e) {
    st.error(e.what());
  }

  std::printf("%-6s %7s %5s %8s %12s %12s %12s %10s %s\n", "prec", "threads", "n", "samples", "GF median", "GF min",
              "GF max", "rel_err", "verified");
  for (const auto& r : st.rows)
    std::printf("%-6s %7d %5d %8d %12.1f %12.1f %12.1f %10.2g %s\n", r.precision.c_str(), r.threads, r.n, r.samples,
                r.gf_median, r.gf_min, r.gf_max, r.rel_error, r.verified ? "yes" : "NO");

  const bool written =
      write_document(o.output, kTool, [&] { return document(st, o, threads, run, version, peak); });
  return st.exit_code(written);
}

int main(int argc, char** argv) {
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
}
