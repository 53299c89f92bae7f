// gpuaccept-fft: FFT offload (as the remote BLAS/FFT offload thesis measured it). Complex-to-complex forward
// transforms, out of place, in single and double precision, over a sweep of sizes, two shapes:
//   1d  batched 1-D transforms of --length points, as many as the size's points / length
//   3d  one n x n x n transform
// each timed four ways:
//   host      the host's FFT (the FFTW3 interface: FFTW itself, or Intel MKL's DFTI behind its FFTW3 wrappers, as
//             built; --threads threads, default every CPU this process may run on), input and output in host memory
//   kernel    cuFFT alone on device-resident data
//   pinned    the whole offload from page-locked host memory: H2D of the input, cuFFT, D2H of the output
//   pageable  the same from malloc'd host memory
// Plans (host and cuFFT) are made before any timing and are not in any time. Times: the host's steady_clock around
// each host execution; a cudaEvent pair on one stream around each GPU repetition (for the offloads: around the
// copy in, the transform and the copy out). One untimed warm-up, then the median of --reps repetitions.
// Verified: every GPU mode's output against the host's (relative L2 error), and a forward + inverse round trip on
// the GPU back to the input; bounds per precision. Speed-up = host time / GPU time; the crossover size is
// computed afterwards by src/gpuaccept/probe/fft.py (docs/checks/fft-offload.md).
// The JSON document (docs/benchmark-json.md) is written to --output FILE, or to stdout without --output.

#include <cuda_runtime.h>
#include <cufft.h>
#include <fftw3.h>
#include <sched.h>
#ifdef GPUACCEPT_FFT_MKL
#include <mkl_service.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "offload_common.h"
#include "tool_main.h"

using namespace gpuaccept;

#define CUFFT_CHECK(call) \
  GPUACCEPT_CHECK(#call, call, CUFFT_SUCCESS, [](cufftResult r) { return "cufftResult " + std::to_string(r); })

namespace {

constexpr const char* kTool = "gpuaccept-fft";
constexpr unsigned char kPoisonByte = 0xFF;        // outputs are set to this (a NaN pattern) before each mode
constexpr size_t kDeviceMarginBytes = 1ull << 30;  // left free on the device for cuFFT's work area and context
constexpr double kHostFraction = 0.8;              // the five host buffers may take this fraction of MemAvailable
// Verification bound on the relative L2 error: kTolFactor * u * log2(points of one transform), u the unit
// roundoff (2^-24, 2^-53). The FFT's own error grows as u sqrt(log2 N) to u log2 N; a wrong transform is off by O(1).
constexpr double kTolFactor = 8.0;

#ifdef GPUACCEPT_FFT_MKL
const char* kHostFftName = "Intel MKL DFTI (through MKL's FFTW3 interface)";
std::string host_fft_version() {
  char buf[256] = {0};
  mkl_get_version_string(buf, sizeof buf);
  return buf;
}
#else
const char* kHostFftName = "FFTW3";
std::string host_fft_version() { return fftw_version; }
#endif

// ---------------------------------------------------------------------------------------------
// Precisions: the FFTW3 and cuFFT names of each.
template <typename R>
struct Fft;
template <>
struct Fft<double> {
  using Real = double;
  using HostComplex = fftw_complex;
  using DevComplex = cufftDoubleComplex;
  static constexpr const char* key = "fp64";
  static constexpr cufftType type = CUFFT_Z2Z;
  static constexpr double unit_roundoff = 1.1102230246251565e-16;  // 2^-53
  static constexpr auto plan_many_dft = &fftw_plan_many_dft;
  static constexpr auto execute_dft = &fftw_execute_dft;
  static constexpr auto destroy_plan = &fftw_destroy_plan;
  static constexpr auto exec_c2c = &cufftExecZ2Z;
};
template <>
struct Fft<float> {
  using Real = float;
  using HostComplex = fftwf_complex;
  using DevComplex = cufftComplex;
  static constexpr const char* key = "fp32";
  static constexpr cufftType type = CUFFT_C2C;
  static constexpr double unit_roundoff = 5.9604644775390625e-08;  // 2^-24
  static constexpr auto plan_many_dft = &fftwf_plan_many_dft;
  static constexpr auto execute_dft = &fftwf_execute_dft;
  static constexpr auto destroy_plan = &fftwf_destroy_plan;
  static constexpr auto exec_c2c = &cufftExecC2C;
};

// The host's forward plan: `howmany` contiguous transforms of rank `rank` and sizes `n`, out of place.
template <typename P>
auto host_plan(int rank, const int* n, int howmany, void* in, void* out, unsigned flags) {
  int dist = 1;
  for (int k = 0; k < rank; ++k) dist *= n[k];
  auto* i = static_cast<typename P::HostComplex*>(in);
  auto* o = static_cast<typename P::HostComplex*>(out);
  return P::plan_many_dft(rank, n, howmany, i, nullptr, 1, dist, o, nullptr, 1, dist, FFTW_FORWARD, flags);
}

template <typename P>
cufftResult gpu_exec(cufftHandle h, void* in, void* out, int dir) {
  return P::exec_c2c(h, static_cast<typename P::DevComplex*>(in), static_cast<typename P::DevComplex*>(out), dir);
}

// ---------------------------------------------------------------------------------------------
// Options.
struct Options {
  int gpu = 0;
  std::vector<std::string> shapes, precisions;
  std::vector<long> points_1d, cubes;
  long length = 4096;
  int threads = 0;  // 0: every CPU this process may run on
  std::string plan = "measure";
  double plan_limit_s = 10;
  int reps = 5;
  std::string output;
};

const char* kUsage =
    "usage: gpuaccept-fft [options]\n"
    "FFT offload (as in the remote BLAS/FFT offload thesis): complex-to-complex forward FFTs, out of place, timed\n"
    "on the host's FFT (FFTW3 or MKL, all threads), with cuFFT on device-resident data (kernel), and as a whole\n"
    "offload (H2D, cuFFT, D2H) from pinned and from pageable host memory; speed-up = host time / GPU time. Each\n"
    "GPU output is checked against the host's (relative L2 error), and a forward + inverse round trip on the GPU\n"
    "against the input. The crossover size: gpuaccept annotate fft.\n"
    "  --gpu N              CUDA device index (default 0)\n"
    "  --shapes LIST        any of 1d,3d (default both)\n"
    "  --precisions LIST    any of fp32,fp64 (default both)\n"
    "  --length L           points of each batched 1-D transform (default 4096)\n"
    "  --points LIST        1d sizes, total points (batch = points / L, a whole multiple of L; default 2^12 .. 2^27,\n"
    "                       every power of two)\n"
    "  --cubes LIST         3d sizes n of n x n x n (default 16,24,32,48,64,96,128,192,256,384,512)\n"
    "                       a size whose buffers do not fit in device or host memory is skipped with a note\n"
    "  --threads N          host FFT threads (default: every CPU this process may run on)\n"
    "  --plan measure|estimate  the host plans' rigour (FFTW_MEASURE or FFTW_ESTIMATE; MKL ignores it;\n"
    "                       default measure)\n"
    "  --plan-time-limit-s S  FFTW's planning time limit per plan (fftw_set_timelimit; default 10)\n"
    "  --reps N             timed repetitions per case and mode after one warm-up; the median is kept (default 5)\n";
const UsageTail kUsageTail{23, true, nullptr, "CUDA/cuFFT/host FFT call failed or no GPU"};

std::vector<long> parse_sizes(const std::string& name, const std::string& text, long lo, long hi) {
  std::vector<long> out;
  for (const auto& s : split_csv(text)) {
    long n = Args::whole_number(name, s);
    if (n < lo || n > hi)
      throw std::invalid_argument("option --" + name + ": " + s + " is not in " + std::to_string(lo) + ".." +
                                  std::to_string(hi));
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  if (out.empty()) throw std::invalid_argument("option --" + name + ": empty list");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> parse_keys(const std::string& name, const std::string& text,
                                    const std::vector<std::string>& known) {
  std::vector<std::string> out;
  for (const auto& s : split_csv(text)) {
    if (std::find(known.begin(), known.end(), s) == known.end())
      throw std::invalid_argument("option --" + name + ": '" + s + "' is not one of " + known[0] + ", " + known[1]);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  if (out.empty()) throw std::invalid_argument("option --" + name + ": empty list");
  return out;
}

Options parse_options(Args& a) {
  Options o;
  long gpu = a.get_long("gpu", 0);
  if (gpu < 0 || gpu > 1023) throw std::invalid_argument("option --gpu: must be a device index in 0..1023");
  o.gpu = static_cast<int>(gpu);
  o.shapes = parse_keys("shapes", a.get("shapes", "1d,3d"), {"1d", "3d"});
  o.precisions = parse_keys("precisions", a.get("precisions", "fp32,fp64"), {"fp32", "fp64"});
  o.length = a.get_long("length", 4096);
  if (o.length < 2 || o.length > (1l << 24)) throw std::invalid_argument("option --length: must be in 2..16777216");
  std::string pts;
  for (int k = 12; k <= 27; ++k) pts += (pts.empty() ? "" : ",") + std::to_string(1l << k);
  o.points_1d = parse_sizes("points", a.get("points", pts), 2, 1l << 30);
  for (long p : o.points_1d)
    if (p % o.length != 0)
      throw std::invalid_argument("option --points: " + std::to_string(p) + " is not a multiple of --length " +
                                  std::to_string(o.length));
  o.cubes = parse_sizes("cubes", a.get("cubes", "16,24,32,48,64,96,128,192,256,384,512"), 2, 1024);
  long threads = a.get_long("threads", 0);
  if (threads < 0 || threads > 4096) throw std::invalid_argument("option --threads: must be in 0..4096");
  o.threads = static_cast<int>(threads);
  o.plan = a.get("plan", "measure");
  if (o.plan != "measure" && o.plan != "estimate")
    throw std::invalid_argument("option --plan: '" + o.plan + "' is not one of measure, estimate");
  o.plan_limit_s = a.get_double("plan-time-limit-s", 10);
  if (!(o.plan_limit_s > 0 && o.plan_limit_s <= 3600))
    throw std::invalid_argument("option --plan-time-limit-s: must be in (0, 3600] seconds");
  long reps = a.get_long("reps", 5);
  if (reps < 1 || reps > 1000) throw std::invalid_argument("option --reps: must be in 1..1000");
  o.reps = static_cast<int>(reps);
  o.output = a.get("output", "");
  a.reject_unknown();
  return o;
}

// ---------------------------------------------------------------------------------------------
// cuFFT's plan, destroyed with it.
struct CufftPlan {
  cufftHandle h = 0;
  bool made = false;
  CufftPlan() = default;
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;
  ~CufftPlan() {
    if (made) cufftDestroy(h);
  }
};

// ---------------------------------------------------------------------------------------------
// Results.
using ModeResult = Timed;  // host: wall_seconds = seconds; GPU modes: the events' and the host's clock

struct CaseResult {
  std::string shape, precision;
  long size = 0;    // 1d: total points; 3d: n
  long points = 0;  // complex points transformed
  long batch = 1;
  bool run = false;
  std::string not_run;
  double bytes = 0;  // of the input (= of the output)
  double host_plan_s = NAN, gpu_plan_s = NAN;  // not in any timing; said for what an offload layer would pay
  double tolerance = NAN;
  double err_kernel = NAN, err_pinned = NAN, err_pageable = NAN, err_roundtrip = NAN;
  bool verified = false;
  ModeResult host, kernel, pinned, pageable;
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  std::vector<CaseResult> cases;
  int threads = 0;
};

struct Ctx : TimedStream {
  PinnedBuf pin_in, pin_out;
  PageableBuf in, out, host_out;  // in: the input, also the pageable mode's source; out: the pageable mode's output
  DevBuf d_in, d_out;
  size_t cap_bytes = 0;
};

double uniform_pm1(uint64_t i, uint64_t seed) {
  return static_cast<double>(mix64(i ^ seed) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// Relative L2 error ||got - want|| / ||want||, over `count` complex values; null (NaN) where got is not finite.
template <typename Real>
double rel_l2(const Real* got, const Real* want, size_t count, double scale = 1.0) {
  double num = 0, den = 0;
  for (size_t i = 0; i < 2 * count; ++i) {
    const double g = static_cast<double>(got[i]) * scale, w = static_cast<double>(want[i]);
    num += (g - w) * (g - w);
    den += w * w;
  }
  return std::isfinite(num) ? std::sqrt(num / std::max(den, 1e-300)) : NAN;
}

template <typename P>
void measure_case(State& st, Ctx& c, const Options& o, CaseResult& cr) {
  using Real = typename P::Real;
  using HC = typename P::HostComplex;
  const size_t count = static_cast<size_t>(cr.points), bytes = count * 2 * sizeof(Real);
  cr.bytes = static_cast<double>(bytes);
  int dims[3];
  int rank = 1;
  if (cr.shape == "1d") {
    dims[0] = static_cast<int>(o.length);
  } else {
    rank = 3;
    dims[0] = dims[1] = dims[2] = static_cast<int>(cr.size);
  }
  const double transform_points = cr.shape == "1d" ? static_cast<double>(o.length) : static_cast<double>(cr.points);
  cr.tolerance = kTolFactor * P::unit_roundoff * std::log2(transform_points);

  // Plans first (FFTW_MEASURE overwrites its arrays), outside any timing.
  auto* in = static_cast<HC*>(c.in.p);
  auto* host_out = static_cast<HC*>(c.host_out.p);
  const unsigned flags = o.plan == "measure" ? FFTW_MEASURE : FFTW_ESTIMATE;
  double t_plan = now_s();
  auto hp = host_plan<P>(rank, dims, static_cast<int>(cr.batch), in, host_out, flags);
  cr.host_plan_s = now_s() - t_plan;
  if (!hp) throw CallError(std::string("the host FFT could not plan ") + P::key + " " + cr.shape);
  struct HostPlanGuard {
    decltype(hp) p;
    ~HostPlanGuard() { P::destroy_plan(p); }
  } hp_guard{hp};
  CufftPlan gp;
  t_plan = now_s();
  if (cr.shape == "1d") {
    int n1 = static_cast<int>(o.length);
    CUFFT_CHECK(cufftPlanMany(&gp.h, 1, &n1, nullptr, 1, n1, nullptr, 1, n1, P::type, static_cast<int>(cr.batch)));
  } else {
    CUFFT_CHECK(cufftPlan3d(&gp.h, dims[0], dims[1], dims[2], P::type));
  }
  gp.made = true;
  CUDA_CHECK(cudaDeviceSynchronize());
  cr.gpu_plan_s = now_s() - t_plan;
  CUFFT_CHECK(cufftSetStream(gp.h, c.stream()));

  // The input, the same bytes in the pageable and the pinned buffer.
  auto* xin = static_cast<Real*>(c.in.p);
  const uint64_t seed = mix64(0xF17ull + static_cast<uint64_t>(cr.points) + (cr.shape == "3d" ? 7 : 0));
  for (size_t i = 0; i < 2 * count; ++i) xin[i] = static_cast<Real>(uniform_pm1(i, seed));
  std::memcpy(c.pin_in.p, c.in.p, bytes);

  // (a) The host's FFT.
  std::memset(c.host_out.p, kPoisonByte, bytes);
  repeat_median(o.reps, cr.host, [&](double& wall) {
    const double t0 = now_s();
    P::execute_dft(hp, in, host_out);
    wall = now_s() - t0;
    return wall;
  });
  const auto* want = static_cast<const Real*>(c.host_out.p);

  // (b) cuFFT alone on device-resident data, then the round trip (inverse in place) back to the input.
  CUDA_CHECK(cudaMemsetAsync(c.d_out.p, kPoisonByte, bytes, c.stream()));
  CUDA_CHECK(cudaMemcpyAsync(c.d_in.p, c.pin_in.p, bytes, cudaMemcpyHostToDevice, c.stream()));
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  repeat_median(o.reps, cr.kernel, [&](double& wall) {
    return c.time(wall, [&] { CUFFT_CHECK(gpu_exec<P>(gp.h, c.d_in.p, c.d_out.p, CUFFT_FORWARD)); });
  });
  std::memset(c.pin_out.p, kPoisonByte, bytes);
  CUDA_CHECK(cudaMemcpyAsync(c.pin_out.p, c.d_out.p, bytes, cudaMemcpyDeviceToHost, c.stream()));
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  cr.err_kernel = rel_l2(static_cast<const Real*>(c.pin_out.p), want, count);
  CUFFT_CHECK(gpu_exec<P>(gp.h, c.d_out.p, c.d_out.p, CUFFT_INVERSE));
  std::memset(c.pin_out.p, kPoisonByte, bytes);
  CUDA_CHECK(cudaMemcpyAsync(c.pin_out.p, c.d_out.p, bytes, cudaMemcpyDeviceToHost, c.stream()));
  CUDA_CHECK(cudaStreamSynchronize(c.stream()));
  cr.err_roundtrip = rel_l2(static_cast<const Real*>(c.pin_out.p), xin, count, 1.0 / transform_points);

  // (c) and (d) The whole offload from pinned, then from pageable host memory.
  for (int mode = 0; mode < 2; ++mode) {
    ModeResult& m = mode == 0 ? cr.pinned : cr.pageable;
    void* src = mode == 0 ? c.pin_in.p : c.in.p;
    void* dst = mode == 0 ? c.pin_out.p : c.out.p;
    CUDA_CHECK(cudaMemsetAsync(c.d_in.p, kPoisonByte, bytes, c.stream()));
    CUDA_CHECK(cudaMemsetAsync(c.d_out.p, kPoisonByte, bytes, c.stream()));
    CUDA_CHECK(cudaStreamSynchronize(c.stream()));
    std::memset(dst, kPoisonByte, bytes);
    repeat_median(o.reps, m, [&](double& wall) {
      return c.time(wall, [&] {
        CUDA_CHECK(cudaMemcpyAsync(c.d_in.p, src, bytes, cudaMemcpyHostToDevice, c.stream()));
        CUFFT_CHECK(gpu_exec<P>(gp.h, c.d_in.p, c.d_out.p, CUFFT_FORWARD));
        CUDA_CHECK(cudaMemcpyAsync(dst, c.d_out.p, bytes, cudaMemcpyDeviceToHost, c.stream()));
      });
    });
    (mode == 0 ? cr.err_pinned : cr.err_pageable) = rel_l2(static_cast<const Real*>(dst), want, count);
  }

  const std::string what = cr.shape + " " + P::key + " size " + std::to_string(cr.size);
  bool ok = true;
  const std::pair<const char*, double> errs[] = {{"kernel vs host", cr.err_kernel},
                                                 {"pinned vs host", cr.err_pinned},
                                                 {"pageable vs host", cr.err_pageable},
                                                 {"round trip vs input", cr.err_roundtrip}};
  for (const auto& [name, err] : errs) {
    char buf[240];
    std::snprintf(buf, sizeof buf, "%s: %s relative L2 error %.3g > %.3g", what.c_str(), name, err, cr.tolerance);
    ok = st.verdict(std::isfinite(err) && err <= cr.tolerance, buf) && ok;
  }
  cr.verified = ok;
  cr.run = true;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return 1;
}

void measure(State& st, const Options& o) {
  Ctx c;
  CUDA_CHECK(cudaSetDevice(o.gpu));
  CUDA_CHECK(cudaFree(nullptr));  // the context, outside any timing
  st.threads = o.threads > 0 ? o.threads : usable_cpus();
  if (!fftw_init_threads() || !fftwf_init_threads()) throw CallError("fftw_init_threads() failed");
  fftw_plan_with_nthreads(st.threads);
  fftwf_plan_with_nthreads(st.threads);
  fftw_set_timelimit(o.plan_limit_s);
  fftwf_set_timelimit(o.plan_limit_s);

  // Every case, in the order run; the largest buffer that fits sets the allocation.
  size_t widest = 0;
  for (const auto& p : o.precisions) widest = std::max(widest, p == "fp64" ? size_t{16} : size_t{8});
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const long avail = mem_available_bytes();
  for (const auto& shape : o.shapes)
    for (const auto& prec : o.precisions)
      for (long s : shape == "1d" ? o.points_1d : o.cubes) {
        CaseResult cr;
        cr.shape = shape;
        cr.precision = prec;
        cr.size = s;
        cr.points = shape == "1d" ? s : s * s * s;
        cr.batch = shape == "1d" ? s / o.length : 1;
        const double buf = static_cast<double>(cr.points) * widest;
        // Device: input and output, and cuFFT's work area (at most about one more buffer), within the margin.
        const bool dev_ok = 3 * buf + kDeviceMarginBytes <= static_cast<double>(free_b);
        const bool host_ok = avail < 0 || 5 * buf <= kHostFraction * static_cast<double>(avail);
        if (!dev_ok || !host_ok) {
          char why[200];
          std::snprintf(why, sizeof why, "buffers of %.2f GiB do not fit in %s memory", buf / (1u << 30),
                        dev_ok ? "host" : "device");
          cr.not_run = why;
          st.note(shape + " " + prec + " size " + std::to_string(s) + " skipped: " + why);
        } else {
          c.cap_bytes = std::max(c.cap_bytes, static_cast<size_t>(buf));
        }
        st.cases.push_back(cr);
      }
  if (c.cap_bytes == 0) throw CallError("no size fits in device and host memory (see the notes)");

  c.create();
  alloc_each(c.cap_bytes, c.d_in, c.d_out, c.pin_in, c.pin_out, c.in, c.out, c.host_out);
  std::cerr << "[gpu " << o.gpu << "] buffers of " << c.cap_bytes / double(1u << 30) << " GiB each; host FFT "
            << kHostFftName << " on " << st.threads << " threads\n";

  for (auto& cr : st.cases) {
    if (!cr.not_run.empty()) continue;
    const double c0 = now_s();
    if (cr.precision == "fp64") measure_case<Fft<double>>(st, c, o, cr);
    else measure_case<Fft<float>>(st, c, o, cr);
    char line[300];
    std::snprintf(line, sizeof line,
                  "[gpu %d] %s %s size %ld (%ld points): host %.3g s, kernel %.3g s, pinned %.3g s, pageable "
                  "%.3g s; speed-up pinned %.2f, pageable %.2f (%.1f s)%s\n",
                  o.gpu, cr.shape.c_str(), cr.precision.c_str(), cr.size, cr.points, cr.host.seconds,
                  cr.kernel.seconds, cr.pinned.seconds, cr.pageable.seconds, cr.host.seconds / cr.pinned.seconds,
                  cr.host.seconds / cr.pageable.seconds, now_s() - c0, cr.verified ? "" : " VERIFICATION FAILED");
    std::cerr << line;
  }
}

// ---------------------------------------------------------------------------------------------
// The document.
const char* kTiming =
    "host: the host's steady_clock around each execution of the host FFT's plan (made beforehand, on the same "
    "buffers); kernel: a cudaEvent pair on one non-blocking stream around the cuFFT call on device-resident data; "
    "pinned and pageable: the same event pair around cudaMemcpyAsync H2D of the input, the cuFFT call and "
    "cudaMemcpyAsync D2H of the output, in stream order (no overlap); plans are not timed; one untimed warm-up, "
    "then the median of parameters.repetitions repetitions; wall_seconds: the host's steady_clock around the same "
    "GPU repetitions (median); speedup_<mode> = host seconds / <mode> seconds";

void write_mode(Json& j, const char* key, const ModeResult& m) {
  j.key(key).begin_object();
  j.kv("seconds", m.seconds).kv("wall_seconds", m.wall_seconds);
  j.kv_array("samples_s", m.samples_s);
  j.end_object();
}

std::string document(const State& st, const Options& o, const Invocation& run, const std::vector<DeviceInfo>& devices) {
  std::vector<Metric> metrics;
  Waived waived;
  if (!devices.empty()) {
    for (const auto& shape : o.shapes)
      for (const auto& prec : o.precisions) {
        const CaseResult* last = nullptr;
        for (const auto& cr : st.cases)
          if (cr.shape == shape && cr.precision == prec && cr.run && cr.verified) last = &cr;
        for (const char* mode : {"kernel", "pinned", "pageable"}) {
          const std::string name = "fft" + shape + "_" + prec + "_speedup_" + mode;
          if (!last) {
            waived.emplace_back(name, st.errors.empty() ? "no size measured and verified"
                                                        : "the run stopped: " + st.errors.front());
            continue;
          }
          const ModeResult& m = std::string(mode) == "kernel" ? last->kernel
                                : std::string(mode) == "pinned" ? last->pinned : last->pageable;
          metrics.push_back(
              {name, "ratio", "higher",
               "host FFT time over cuFFT time (" + std::string(mode) +
                   (std::string(mode) == "kernel" ? ": device-resident data, no transfers"
                                                  : " host memory: H2D, cuFFT, D2H") +
                   ") at the largest size measured, " + std::to_string(last->points) + " points (the remote BLAS/FFT "
                   "offload thesis: over 25 x for FFTW with the transfers, on its cluster; informational)",
               last->host.seconds / m.seconds});
        }
      }
  }

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, [](Json& c) {
    int v = 0;
    if (cufftGetVersion(&v) == CUFFT_SUCCESS) c.kv("cufft_version", v);
    else c.kv_null("cufft_version");
  });

  j.key("parameters").begin_object();
  j.kv("gpu", o.gpu);
  j.kv_array("shapes", o.shapes);
  j.kv_array("precisions", o.precisions);
  j.kv("length_1d", o.length);
  j.kv_array("points_1d", o.points_1d);
  j.kv_array("cubes_3d", o.cubes);
  j.kv("repetitions", o.reps).kv("statistic", "median").kv("warmup_repetitions", 1);
  j.kv("operation", "forward complex-to-complex DFT, out of place, unnormalised; 1d: batch = points / length_1d "
                    "transforms of length_1d contiguous points; 3d: one n x n x n transform, row major");
  j.kv("inputs", "real and imaginary parts uniform in [-1, 1) from a hash of the index");
  j.key("host_fft").begin_object();
  j.kv("library", kHostFftName).kv("version", host_fft_version()).kv("threads", st.threads);
  j.kv("plan", o.plan == "measure" ? "FFTW_MEASURE" : "FFTW_ESTIMATE").kv("plan_time_limit_s", o.plan_limit_s);
#ifdef GPUACCEPT_FFT_MKL
  j.kv("mkl_max_threads", mkl_get_max_threads());
#endif
  j.end_object();
  j.kv("verification", "relative L2 error ||x - ref|| / ||ref||: the kernel, pinned and pageable outputs against "
                       "the host FFT's output; the GPU's inverse of its own output, divided by the transform's "
                       "points, against the input; each <= tolerance = 8 u log2(points of one transform), u = 2^-24 "
                       "(fp32), 2^-53 (fp64)");
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "OMP_NUM_THREADS",
                     "OMP_PROC_BIND", "OMP_PLACES", "MKL_NUM_THREADS", "MKL_ENABLE_INSTRUCTIONS"});
  write_cases(
      j, st.cases,
      [](Json& c, const CaseResult& cr) {
        c.kv("shape", cr.shape).kv("precision", cr.precision).kv("size", cr.size).kv("points", cr.points);
        c.kv("batch", cr.batch);
      },
      [](Json& c, const CaseResult& cr) {
        c.kv("bytes", cr.bytes).kv("host_plan_seconds", cr.host_plan_s).kv("gpu_plan_seconds", cr.gpu_plan_s);
        write_mode(c, "host", cr.host);
        write_mode(c, "kernel", cr.kernel);
        write_mode(c, "pinned", cr.pinned);
        write_mode(c, "pageable", cr.pageable);
        c.kv("speedup_kernel", cr.host.seconds / cr.kernel.seconds);
        c.kv("speedup_pinned", cr.host.seconds / cr.pinned.seconds);
        c.kv("speedup_pageable", cr.host.seconds / cr.pageable.seconds);
        c.key("errors").begin_object();
        c.kv("kernel", cr.err_kernel).kv("pinned", cr.err_pinned).kv("pageable", cr.err_pageable);
        c.kv("roundtrip", cr.err_roundtrip).kv("tolerance", cr.tolerance);
        c.end_object();
        c.kv("verified", cr.verified);
      });
  return end_results(j, metrics, waived, st.passed(), st);
}

}  // namespace

int main(int argc, char** argv) {
  return one_gpu_tool_main<Options, State>(argc, argv, kTool, kUsage, kUsageTail, parse_options, document,
                                           [](State& st, const Options& o, const Invocation&) { measure(st, o); });
}
