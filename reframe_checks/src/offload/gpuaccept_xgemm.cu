// gpuaccept-xgemm: transfer-inclusive GEMM (after Allada et al. 2009). Square n x n C = A B (column major, no
// transpose, alpha 1, beta 0) over a sweep of sizes, in four precisions:
//   dgemm  cublasDgemm, default math mode
//   sgemm  cublasSgemm, default math mode (FP32; NVIDIA_TF32_OVERRIDE=1 would change that: it is recorded)
//   tf32   cublasGemmEx, FP32 in and out, CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores)
//   bf16   cublasGemmEx, BF16 A and B, FP32 C, CUBLAS_COMPUTE_32F (tensor cores)
// each timed three ways:
//   kernel    the GEMM alone on device-resident A, B and C
//   pinned    the whole offload from page-locked host memory (cudaHostAlloc): H2D of A and B, GEMM, D2H of C
//   pageable  the same from malloc'd host memory
// Times: a cudaEvent pair on one stream around each repetition (for the offloads: around both copies in, the
// GEMM and the copy out); one untimed warm-up, then the median of --reps repetitions. GFLOP/s = 2 n^3 / t.
// Every case's C is checked at sampled entries against a host reference computed in double from the very inputs
// the GPU got, with a tolerance per precision relative to sum_k |A(i,k)| |B(k,j)|. The crossover against the
// host's BLAS is computed afterwards by src/gpuaccept/probe/offload.py (docs/checks/offload-gemm.md).
// The JSON document (docs/benchmark-json.md) is written to --output FILE, or to stdout without --output.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "offload_common.h"
#include "tool_main.h"

using namespace gpuaccept;

namespace {

constexpr const char* kTool = "gpuaccept-xgemm";
constexpr int kSamples = 64;                 // verification: C entries checked per case and mode (4 corners + hashed)
constexpr unsigned char kPoisonByte = 0xFF;  // outputs (and device inputs) are set to this (a NaN pattern) first
constexpr size_t kDeviceMarginBytes = 1ull << 30;  // left free on the device for cuBLAS's workspace and context
constexpr double kHostFraction = 0.8;        // pinned + pageable buffers may take this fraction of MemAvailable

// ---------------------------------------------------------------------------------------------
// Precisions.
enum class Prec { dgemm, sgemm, tf32, bf16 };

struct PrecInfo {
  Prec p;
  const char* key;
  size_t in_bytes;   // bytes per element of A and B
  size_t out_bytes;  // bytes per element of C
  double tol;        // |C - ref| <= tol * sum_k |A(i,k)| |B(k,j)|
  const char* call;
};

// Tolerances: at least the worst-case bound n u for n up to 16384 in the accumulating precision (FP64: 1.8e-12,
// FP32: 9.8e-4 for n = 16384); TF32 adds the rounding of both inputs to 10-bit mantissas (2^-10 each, truncated).
// A GEMM that computes garbage is off by O(1).
const PrecInfo kPrecs[] = {
    {Prec::dgemm, "dgemm", 8, 8, 1e-10, "cublasDgemm (CUBLAS_DEFAULT_MATH)"},
    {Prec::sgemm, "sgemm", 4, 4, 1e-3, "cublasSgemm (CUBLAS_DEFAULT_MATH)"},
    {Prec::tf32, "tf32", 4, 4, 5e-3,
     "cublasGemmEx(CUDA_R_32F A, B, C; CUBLAS_COMPUTE_32F_FAST_TF32; CUBLAS_GEMM_DEFAULT)"},
    {Prec::bf16, "bf16", 2, 4, 1e-3,
     "cublasGemmEx(CUDA_R_16BF A, B; CUDA_R_32F C; CUBLAS_COMPUTE_32F; CUBLAS_GEMM_DEFAULT)"},
};

const PrecInfo& prec_info(const std::string& key) {
  for (const auto& p : kPrecs)
    if (key == p.key) return p;
  throw std::invalid_argument("option --precisions: '" + key + "' is not one of dgemm, sgemm, tf32, bf16");
}

// ---------------------------------------------------------------------------------------------
// Options.
struct Options {
  int gpu = 0;
  std::vector<long> sizes;
  std::vector<std::string> precisions;
  int reps = 5;
  double time_limit_s = 60;
  std::string output;
};

const char* kUsage =
    "usage: gpuaccept-xgemm [options]\n"
    "Transfer-inclusive GEMM (after Allada et al. 2009): square n x n cuBLAS GEMM timed on device-resident data\n"
    "(kernel), and as a whole offload (H2D of A and B, GEMM, D2H of C) from pinned and from pageable host\n"
    "memory; GFLOP/s = 2 n^3 / t for each and the ratios offload / kernel. C verified at sampled entries against\n"
    "a host reference in double. The crossover against the host's BLAS: gpuaccept annotate offload.\n"
    "  --gpu N              CUDA device index (default 0)\n"
    "  --sizes LIST         matrix sizes n (default 256,512,1024,2048,4096,8192,16384); a size whose matrices do\n"
    "                       not fit in device or host memory is skipped with a note\n"
    "  --precisions LIST    any of dgemm,sgemm,tf32,bf16 (default all four)\n"
    "  --reps N             timed repetitions per case and mode after one warm-up; the median is kept (default 5)\n"
    "  --time-limit-s S     a size is skipped, with a note, where its time estimated from the previous size's\n"
    "                       would pass the precision's share of S seconds from the start (default 60; shares in\n"
    "                       proportion to the bytes moved per element: dgemm 24, sgemm 12, tf32 12, bf16 8)\n";
const UsageTail kUsageTail{23, true, nullptr, "CUDA/cuBLAS call failed or no GPU"};

Options parse_options(Args& a) {
  Options o;
  long gpu = a.get_long("gpu", 0);
  if (gpu < 0 || gpu > 1023) throw std::invalid_argument("option --gpu: must be a device index in 0..1023");
  o.gpu = static_cast<int>(gpu);
  for (const auto& s : split_csv(a.get("sizes", "256,512,1024,2048,4096,8192,16384"))) {
    const long n = Args::whole_number("sizes", s);
    if (n < 16 || n > 65536) throw std::invalid_argument("option --sizes: " + s + " is not in 16..65536");
    if (std::find(o.sizes.begin(), o.sizes.end(), n) == o.sizes.end()) o.sizes.push_back(n);
  }
  if (o.sizes.empty()) throw std::invalid_argument("option --sizes: empty list");
  std::sort(o.sizes.begin(), o.sizes.end());
  for (const auto& s : split_csv(a.get("precisions", "dgemm,sgemm,tf32,bf16"))) {
    prec_info(s);  // throws naming the option
    if (std::find(o.precisions.begin(), o.precisions.end(), s) == o.precisions.end()) o.precisions.push_back(s);
  }
  if (o.precisions.empty()) throw std::invalid_argument("option --precisions: empty list");
  long reps = a.get_long("reps", 5);
  if (reps < 1 || reps > 1000) throw std::invalid_argument("option --reps: must be in 1..1000");
  o.reps = static_cast<int>(reps);
  o.time_limit_s = a.get_seconds("time-limit-s", 60, 3600);
  o.output = a.get("output", "");
  a.reject_unknown();
  return o;
}

// ---------------------------------------------------------------------------------------------
// Inputs: A and B filled over their whole buffers (n_max^2 elements) once per precision; the n x n matrix of a
// smaller size is the buffer's first n^2 elements (leading dimension n), on the host and on the device alike.
// Uniform in [-1, 1).
double uniform_pm1(uint64_t i, uint64_t seed) {
  return static_cast<double>(mix64(i ^ seed) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// BF16 as its 16 bits: round to nearest even from FP32 (inputs are finite), and back.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void fill(Prec p, void* buf, size_t count, uint64_t seed) {
  for (size_t i = 0; i < count; ++i) {
    double v = uniform_pm1(i, seed);
    if (p == Prec::dgemm) static_cast<double*>(buf)[i] = v;
    else if (p == Prec::bf16) static_cast<uint16_t*>(buf)[i] = to_bf16(static_cast<float>(v));
    else static_cast<float*>(buf)[i] = static_cast<float>(v);
  }
}

double in_value(Prec p, const void* buf, size_t i) {
  if (p == Prec::dgemm) return static_cast<const double*>(buf)[i];
  if (p == Prec::bf16) return from_bf16(static_cast<const uint16_t*>(buf)[i]);
  return static_cast<const float*>(buf)[i];
}
double out_value(Prec p, const void* buf, size_t i) {
  if (p == Prec::dgemm) return static_cast<const double*>(buf)[i];
  return static_cast<const float*>(buf)[i];
}

// ---------------------------------------------------------------------------------------------
// Results.
struct ModeResult : Timed {  // seconds: the median of the event-timed repetitions
  bool verified = false;
  long checked = 0;
  double max_rel_error = NAN;  // max over the sampled entries of |C - ref| / sum_k |A(i,k)| |B(k,j)|
};

struct CaseResult {
  std::string precision;
  long n = 0;
  bool run = false;
  std::string not_run;
  double flops = 0;
  double h2d_bytes = 0, d2h_bytes = 0;
  ModeResult kernel, pinned, pageable;
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<CaseResult> cases;
  long max_n_fits = 0;
};

// ---------------------------------------------------------------------------------------------
// One GPU's buffers and handles.
struct Ctx : TimedStream {
  int dev = 0;
  cublasHandle_t handle = nullptr;
  PinnedBuf hA, hB, hC;
  PageableBuf pA, pB, pC;
  DevBuf dA, dB, dC;
  size_t cap_bytes = 0;  // of each buffer
  Ctx() = default;
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  ~Ctx() {
    if (handle) cublasDestroy(handle);
  }
};

void gemm(Ctx& c, Prec p, int n) {
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  switch (p) {
    case Prec::dgemm:
      CUBLAS_CHECK(cublasDgemm(c.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one_d, static_cast<const double*>(c.dA.p),
                               n, static_cast<const double*>(c.dB.p), n, &zero_d, static_cast<double*>(c.dC.p), n));
      break;
    case Prec::sgemm:
      CUBLAS_CHECK(cublasSgemm(c.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one_f, static_cast<const float*>(c.dA.p),
                               n, static_cast<const float*>(c.dB.p), n, &zero_f, static_cast<float*>(c.dC.p), n));
      break;
    case Prec::tf32:
      CUBLAS_CHECK(cublasGemmEx(c.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one_f, c.dA.p, CUDA_R_32F, n, c.dB.p,
                                CUDA_R_32F, n, &zero_f, c.dC.p, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32,
                                CUBLAS_GEMM_DEFAULT));
      break;
    case Prec::bf16:
      CUBLAS_CHECK(cublasGemmEx(c.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one_f, c.dA.p, CUDA_R_16BF, n, c.dB.p,
                                CUDA_R_16BF, n, &zero_f, c.dC.p, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
      break;
  }
}

// The sampled entries (i, j): the four corners, then hashed positions.
std::vector<std::pair<long, long>> sample_entries(long n) {
  std::vector<std::pair<long, long>> s = {{0, 0}, {n - 1, n - 1}, {0, n - 1}, {n - 1, 0}};
  for (int k = static_cast<int>(s.size()); k < kSamples; ++k) {
    uint64_t h = mix64(0xC0FFEEull + static_cast<uint64_t>(k) * 0x10001ull + static_cast<uint64_t>(n));
    s.push_back({static_cast<long>(h % static_cast<uint64_t>(n)), static_cast<long>((h >> 32) % static_cast<uint64_t>(n))});
  }
  return s;
}

struct Reference {
  std::vector<std::pair<long, long>> at;
  std::vector<double> value, scale;  // sum_k A(i,k) B(k,j) and sum_k |A(i,k)| |B(k,j)|, in double
};

Reference reference(Prec p, const void* A, const void* B, long n) {
  Reference r;
  r.at = sample_entries(n);
  for (auto [i, j] : r.at) {
    double s = 0, sa = 0;
    for (long k = 0; k < n; ++k) {
      double a = in_value(p, A, static_cast<size_t>(i) + static_cast<size_t>(k) * n);
      double b = in_value(p, B, static_cast<size_t>(k) + static_cast<size_t>(j) * n);
      s += a * b;
      sa += std::fabs(a) * std::fabs(b);
    }
    r.value.push_back(s);
    r.scale.push_back(sa);
  }
  return r;
}

void verify(State& st, const PrecInfo& pi, long n, const char* mode, const Reference& ref, const void* C,
            ModeResult& m) {
  long bad = 0;
  double worst = 0;
  bool nonfinite = false;
  std::string first;
  for (size_t k = 0; k < ref.at.size(); ++k) {
    auto [i, j] = ref.at[k];
    double got = out_value(pi.p, C, static_cast<size_t>(i) + static_cast<size_t>(j) * n);
    double err = std::fabs(got - ref.value[k]) / std::max(ref.scale[k], 1e-300);
    bool ok = std::isfinite(got) && err <= pi.tol;
    if (std::isfinite(err)) worst = std::max(worst, err); else nonfinite = true;
    if (!ok && bad++ == 0) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "C(%ld,%ld) = %.9g, expected %.9g (relative error %.3g > %.3g)", i, j, got,
                    ref.value[k], err, pi.tol);
      first = buf;
    }
  }
  m.checked = static_cast<long>(ref.at.size());
  m.verified = bad == 0;
  m.max_rel_error = nonfinite ? NAN : worst;  // null in the document where an entry was NaN or infinite
  st.checked += m.checked;
  if (bad) {
    std::string msg = std::string(pi.key) + " n=" + std::to_string(n) + " " + mode + ": " + std::to_string(bad) +
                      " of " + std::to_string(ref.at.size()) + " sampled entries wrong, first " + first;
    st.failure(msg);
  }
}

void poison_device(Ctx& c, size_t in_bytes, size_t out_bytes) {
  CUDA_CHECK(cudaMemsetAsync(c.dA.p, kPoisonByte, in_bytes, c.stream()));
  CUDA_CHECK(cudaMemsetAsync(c.dB.p, kPoisonByte, in_bytes, c.stream()));
  CUDA_CHECK(cudaMemsetAsync(c.dC.p, kPoisonByte, out_bytes, c.stream()));
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
}

// Warm-up, then o.reps repetitions, each the event pair on c's stream around issue().
template <typename Issue>
void timed(Ctx& c, const Options& o, ModeResult& m, Issue&& issue) {
  repeat_median(o.reps, m, [&](double& wall) { return c.time(wall, issue); });
}

void measure_case(State& st, Ctx& c, const Options& o, const PrecInfo& pi, CaseResult& cr) {
  const int n = static_cast<int>(cr.n);
  const size_t elems = static_cast<size_t>(n) * n;
  const size_t in_bytes = elems * pi.in_bytes, out_bytes = elems * pi.out_bytes;
  cr.flops = 2.0 * n * static_cast<double>(n) * n;
  cr.h2d_bytes = 2.0 * static_cast<double>(in_bytes);
  cr.d2h_bytes = static_cast<double>(out_bytes);
  const Reference ref = reference(pi.p, c.hA.p, c.hB.p, n);

  // (a) The GEMM alone on device-resident data.
  poison_device(c, in_bytes, out_bytes);
  CUDA_CHECK(cudaMemcpyAsync(c.dA.p, c.hA.p, in_bytes, cudaMemcpyHostToDevice, c.stream()));
  CUDA_CHECK(cudaMemcpyAsync(c.dB.p, c.hB.p, in_bytes, cudaMemcpyHostToDevice, c.stream()));
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  timed(c, o, cr.kernel, [&] { gemm(c, pi.p, n); });
  std::memset(c.hC.p, kPoisonByte, out_bytes);
  CUDA_CHECK(cudaMemcpyAsync(c.hC.p, c.dC.p, out_bytes, cudaMemcpyDeviceToHost, c.stream()));
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  verify(st, pi, cr.n, "kernel", ref, c.hC.p, cr.kernel);

  // (b) and (c) The whole offload from pinned, then from pageable host memory.
  for (int mode = 0; mode < 2; ++mode) {
    ModeResult& m = mode == 0 ? cr.pinned : cr.pageable;
    void* A = mode == 0 ? c.hA.p : c.pA.p;
    void* B = mode == 0 ? c.hB.p : c.pB.p;
    void* C = mode == 0 ? c.hC.p : c.pC.p;
    poison_device(c, in_bytes, out_bytes);
    std::memset(C, kPoisonByte, out_bytes);
    timed(c, o, m, [&] {
      CUDA_CHECK(cudaMemcpyAsync(c.dA.p, A, in_bytes, cudaMemcpyHostToDevice, c.stream()));
      CUDA_CHECK(cudaMemcpyAsync(c.dB.p, B, in_bytes, cudaMemcpyHostToDevice, c.stream()));
      gemm(c, pi.p, n);
      CUDA_CHECK(cudaMemcpyAsync(C, c.dC.p, out_bytes, cudaMemcpyDeviceToHost, c.stream()));
    });
    verify(st, pi, cr.n, mode == 0 ? "pinned" : "pageable", ref, C, m);
  }
  cr.run = true;
}

void measure_gpu(State& st, const Options& o, double t0) {
  Ctx c;
  c.dev = o.gpu;
  CUDA_CHECK(cudaSetDevice(c.dev));
  CUDA_CHECK(cudaFree(nullptr));  // the context, outside any timing

  // The largest size whose buffers fit: three device matrices of the widest element of the precisions asked for
  // (with kDeviceMarginBytes left free), and three pinned plus three pageable host matrices.
  size_t widest = 0;
  for (const auto& k : o.precisions) widest = std::max({widest, prec_info(k).in_bytes, prec_info(k).out_bytes});
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const long avail = mem_available_bytes();
  long n_max = 0;
  for (long n : o.sizes) {
    const double buf = static_cast<double>(n) * n * widest;
    const bool dev_ok = 3 * buf + kDeviceMarginBytes <= static_cast<double>(free_b);
    const bool host_ok = avail < 0 || 6 * buf <= kHostFraction * static_cast<double>(avail);
    if (dev_ok && host_ok) {
      n_max = n;
      continue;
    }
    char why[240];
    std::snprintf(why, sizeof why,
                  "n=%ld skipped: three %.2f GiB matrices %s (device free %.1f GiB less %.0f GiB margin; host "
                  "MemAvailable %.1f GiB, %.0f%% of it for 3 pinned + 3 pageable)",
                  n, buf / (1u << 30), dev_ok ? "do not fit in host memory" : "do not fit in device memory",
                  free_b / double(1u << 30), kDeviceMarginBytes / double(1u << 30), avail / double(1u << 30),
                  kHostFraction * 100);
    st.note(why);
  }
  st.max_n_fits = n_max;
  if (n_max == 0) throw CallError("no size in --sizes fits in device and host memory (see the notes)");
  c.cap_bytes = static_cast<size_t>(n_max) * n_max * widest;

  c.create();
  CUBLAS_CHECK(cublasCreate(&c.handle));
  CUBLAS_CHECK(cublasSetStream(c.handle, c.stream()));
  CUBLAS_CHECK(cublasSetMathMode(c.handle, CUBLAS_DEFAULT_MATH));
  alloc_each(c.cap_bytes, c.dA, c.dB, c.dC, c.hA, c.hB, c.hC, c.pA, c.pB, c.pC);
  std::cerr << "[gpu " << c.dev << "] buffers of " << c.cap_bytes / double(1u << 30) << " GiB each, n up to "
            << n_max << "\n";

  // Each precision gets a share of the time left in proportion to the bytes it moves per element (A + B + C).
  const size_t nprec = o.precisions.size();
  auto weight = [](const PrecInfo& p) { return static_cast<double>(2 * p.in_bytes + p.out_bytes); };
  for (size_t ip = 0; ip < nprec; ++ip) {
    const PrecInfo& pi = prec_info(o.precisions[ip]);
    double weights_left = 0;
    for (size_t k = ip; k < nprec; ++k) weights_left += weight(prec_info(o.precisions[k]));
    const double start = now_s() - t0;
    const double share_end = start + (o.time_limit_s - start) * weight(pi) / weights_left;
    const size_t fill_elems = static_cast<size_t>(n_max) * n_max;
    fill(pi.p, c.hA.p, fill_elems, mix64(0xA11CEull + ip));
    fill(pi.p, c.hB.p, fill_elems, mix64(0xB0Bull + ip));
    std::memcpy(c.pA.p, c.hA.p, fill_elems * pi.in_bytes);
    std::memcpy(c.pB.p, c.hB.p, fill_elems * pi.in_bytes);
    double last_case_s = 0, estimate_s = 0;  // the previous size's time, and this size's estimate from it
    long last_n = 0;
    for (long n : o.sizes) {
      st.cases.emplace_back();
      CaseResult& cr = st.cases.back();
      cr.precision = pi.key;
      cr.n = n;
      if (n > n_max) {
        cr.not_run = "does not fit in device or host memory (see the notes)";
        continue;
      }
      const double now = now_s() - t0;
      if (last_n > 0) {
        // GEMM time grows as n^3, copy time as n^2: the previous size's medians scaled, plus its untimed share.
        const CaseResult* prev = nullptr;
        for (const auto& x : st.cases)
          if (x.precision == pi.key && x.n == last_n && x.run) prev = &x;
        const double r = static_cast<double>(n) / static_cast<double>(last_n);
        if (prev) {
          const double k = prev->kernel.seconds;
          const double copies = std::max(0.0, prev->pinned.seconds - k) + std::max(0.0, prev->pageable.seconds - k);
          const double timed_s = (o.reps + 1) * (k + prev->pinned.seconds + prev->pageable.seconds);
          const double per_rep = 3 * k * r * r * r + copies * r * r;
          estimate_s = (o.reps + 1) * per_rep + std::max(0.0, last_case_s - timed_s) * r * r;
        } else {
          estimate_s = last_case_s * r * r * r;
        }
      }
      if (last_n > 0 && now + estimate_s > share_end) {
        char why[240];
        std::snprintf(why, sizeof why,
                      "time limit: %.1f s estimated (from n=%ld's %.1f s) would pass %.1f s, this precision's share "
                      "of --time-limit-s %.0f",
                      estimate_s, last_n, last_case_s, share_end, o.time_limit_s);
        cr.not_run = why;
        st.note(std::string(pi.key) + " n=" + std::to_string(n) + " skipped: " + why);
        continue;
      }
      const double c0 = now_s();
      measure_case(st, c, o, pi, cr);
      last_case_s = now_s() - c0;
      last_n = n;
      char line[240];
      std::snprintf(line, sizeof line,
                    "[gpu %d] %s n=%ld: kernel %.1f, pinned %.1f, pageable %.1f GFLOP/s (%.1f s)%s\n", c.dev,
                    pi.key, n, cr.flops / cr.kernel.seconds / 1e9, cr.flops / cr.pinned.seconds / 1e9,
                    cr.flops / cr.pageable.seconds / 1e9, last_case_s,
                    cr.kernel.verified && cr.pinned.verified && cr.pageable.verified ? "" : " VERIFICATION FAILED");
      std::cerr << line;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The document.
const char* kTiming =
    "cudaEvent pair on one non-blocking stream around each repetition: kernel: the cuBLAS call alone on "
    "device-resident A and B; pinned and pageable: cudaMemcpyAsync H2D of A, H2D of B, the cuBLAS call and "
    "cudaMemcpyAsync D2H of C, in stream order (no overlap); one untimed warm-up, then the median of "
    "parameters.repetitions repetitions; wall_seconds: the host's steady_clock around the same repetitions "
    "(median); GFLOP/s = 2 n^3 / seconds / 1e9";

double gf(double flops, double s) { return s > 0 ? flops / s / 1e9 : NAN; }

void write_mode(Json& j, const char* key, const ModeResult& m, double flops) {
  j.key(key).begin_object();
  j.kv("seconds", m.seconds).kv("gflops", gf(flops, m.seconds));
  j.kv("wall_seconds", m.wall_seconds).kv("wall_gflops", gf(flops, m.wall_seconds));
  j.kv("verified", m.verified).kv("checked", m.checked).kv("max_rel_error", m.max_rel_error);
  j.kv_array("samples_s", m.samples_s);
  j.end_object();
}

std::string document(const State& st, const Options& o, const Invocation& run, const std::vector<DeviceInfo>& devices) {
  std::vector<Metric> metrics;
  Waived waived;
  if (!devices.empty()) {
    for (const auto& k : o.precisions) {
      const CaseResult* last = nullptr;
      for (const auto& cr : st.cases)
        if (cr.precision == k && cr.run) last = &cr;
      for (int mode = 0; mode < 2; ++mode) {
        const std::string name = k + (mode == 0 ? "_pinned_over_kernel_ratio" : "_pageable_over_kernel_ratio");
        if (!last) {
          waived.emplace_back(name, st.errors.empty() ? "no size measured" : "the run stopped: " + st.errors.front());
          continue;
        }
        const ModeResult& m = mode == 0 ? last->pinned : last->pageable;
        metrics.push_back({name, "ratio", "higher",
                           "transfer-inclusive (" + std::string(mode == 0 ? "pinned" : "pageable") +
                               ") GFLOP/s over kernel-only GFLOP/s at the largest n measured, n=" +
                               std::to_string(last->n) +
                               " (Allada et al. 2009: 0.95 DGEMM, 0.87 SGEMM on their cluster)",
                           last->kernel.seconds / m.seconds});
      }
    }
  }

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, write_cublas_version);

  j.key("parameters").begin_object();
  j.kv("gpu", o.gpu);
  j.kv_array("sizes", o.sizes);
  j.kv_array("precisions", o.precisions);
  j.kv("repetitions", o.reps).kv("statistic", "median").kv("warmup_repetitions", 1);
  j.kv("time_limit_s", o.time_limit_s).kv("largest_size_fitting", st.max_n_fits);
  j.kv("operation", "C = A B, square n x n, column major, no transpose, alpha 1, beta 0; flops 2 n^3");
  j.kv("inputs", "A and B uniform in [-1, 1) from a hash of the element index (BF16: rounded to nearest even)");
  j.kv("verification_samples", kSamples);
  j.kv("verification", "each mode's C at sampled entries (the 4 corners and hashed positions) against sum_k "
                       "A(i,k) B(k,j) in double from the inputs the GPU got: |C - ref| <= tolerance * sum_k "
                       "|A(i,k)| |B(k,j)|");
  j.key("calls").begin_object();
  for (const auto& p : kPrecs) j.kv(p.key, p.call);
  j.end_object();
  j.key("tolerance").begin_object();
  for (const auto& p : kPrecs) j.kv(p.key, p.tol);
  j.end_object();
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "NVIDIA_TF32_OVERRIDE",
                     "CUBLAS_WORKSPACE_CONFIG"});
  write_cases(
      j, st.cases, [](Json& c, const CaseResult& cr) { c.kv("precision", cr.precision).kv("n", cr.n); },
      [](Json& c, const CaseResult& cr) {
        c.kv("flops", cr.flops).kv("h2d_bytes", cr.h2d_bytes).kv("d2h_bytes", cr.d2h_bytes);
        write_mode(c, "kernel", cr.kernel, cr.flops);
        write_mode(c, "pinned", cr.pinned, cr.flops);
        write_mode(c, "pageable", cr.pageable, cr.flops);
        c.kv("pinned_over_kernel", cr.kernel.seconds / cr.pinned.seconds);
        c.kv("pageable_over_kernel", cr.kernel.seconds / cr.pageable.seconds);
        c.kv("verified", cr.kernel.verified && cr.pinned.verified && cr.pageable.verified);
      });
  return end_results(j, metrics, waived, st.passed(), st);
}

}  // namespace

int main(int argc, char** argv) {
  return one_gpu_tool_main<Options, State>(
      argc, argv, kTool, kUsage, kUsageTail, parse_options, document,
      [](State& st, const Options& o, const Invocation& run) { measure_gpu(st, o, run.t0); });
}
