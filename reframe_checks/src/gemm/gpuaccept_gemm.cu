// gpuaccept-gemm: dense GEMM throughput of every GPU through cuBLASLt (FP64, FP32, TF32, BF16, FP16, and FP8
// E4M3 in, BF16 out), each precision with a workspace and the fastest of the algorithms cuBLASLt's heuristic
// offers and cublasGemmEx's own choice (timed briefly on the problem itself), each result checked with
// Freivalds' test in double precision on the GPU. The SM clock, power and clocks event reasons during every measured phase are read through NVML.
//
// Per precision, on every GPU:
//   series  the step-8 size series of the NetPIPE/cuBLAS paper's table III (default 8128..8192), briefly:
//           median of 10 timed calls after 2 warm-ups;
//   large   the large sizes (default 16384; skipped with a note where it does not fit in free memory), briefly;
//   window  at --metric-size: back-to-back calls for --window-s seconds after ~0.5 s of warm-up; this is
//           what the metrics judge (median TFLOP/s over the window);
//   xfer    at --metric-size: H2D of A and B from pinned memory + GEMM + D2H of C, median of 5.
// With one GPU, or with --one-at-a-time, each GPU in turn (mode "solo"), then, with more than one GPU, the
// window again on every GPU at once (mode "concurrent"). Otherwise (the default with several GPUs) every GPU at
// once, one host thread per GPU (mode "concurrent", windows started together behind a barrier): each GPU has its
// own power cap and memory, so its rate with the others busy is its own, and a rate below the GPU's reference
// then is a fault of the node worth failing; the with-transfer copies alone stay one GPU at a time (host copies
// share PCIe switches and root ports). Each GPU's window and with-transfer rates go to "gpu_metrics".
// Every timed call has its own cudaEvent pair on the GPU's stream; the elapsed times are read after one
// synchronisation at the end. The JSON document is described in docs/benchmark-json.md; the method in
// docs/checks/gemm.md.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench_common.h"
#include "nvml_sampler.h"
#include "tool_main.h"

using namespace gpuaccept;

namespace {

constexpr const char* kTool = "gpuaccept-gemm";
constexpr int kBriefWarmups = 2;             // series / large sizes: untimed calls first
constexpr int kBriefCalls = 10;              // ... then this many timed calls, median
constexpr double kWarmupSeconds = 0.5;       // window: warm-up length ...
constexpr int kWarmupMinCalls = 5;           // ... and at least this many calls
constexpr int kWindowMinCalls = 5;           // window: at least this many samples
constexpr int kWindowMaxCalls = 50000;       // ... and at most this many (tiny sizes only)
constexpr int kTransferTrials = 5;           // with-transfer: timed trials after one untimed
constexpr int kTuneCalls = 3;                // algorithm choice: timed calls per candidate (after one untimed)
constexpr size_t kMemoryMargin = 512ull << 20;     // kept free besides A, B, C (cuBLAS, context)

// ---------------------------------------------------------------------------------------------
// Precisions.
enum class Prec { fp64, fp32, tf32, bf16, fp16, fp8 };

struct PrecInfo {
  Prec p;
  const char* key;
  size_t ab_bytes;  // element size of A and B
  size_t c_bytes;   // element size of C (D)
  double tolerance;
  const char* setup;  // how it is called, for the JSON
};

const PrecInfo kPrecs[] = {
    {Prec::fp64, "fp64", 8, 8, 1e-12,
     "cublasLtMatmul A,B,C,D CUDA_R_64F, CUBLAS_COMPUTE_64F, scale CUDA_R_64F, TRANSA=N TRANSB=N"},
    {Prec::fp32, "fp32", 4, 4, 1e-4,
     "cublasLtMatmul A,B,C,D CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no emulation; CUBLAS_COMPUTE_32F where "
     "the heuristic offers no pedantic algorithm, see compute_type), scale CUDA_R_32F, TRANSA=N TRANSB=N"},
    {Prec::tf32, "tf32", 4, 4, 1e-2,
     "cublasLtMatmul A,B,C,D CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, scale CUDA_R_32F, TRANSA=N TRANSB=N"},
    {Prec::bf16, "bf16", 2, 2, 3e-2,
     "cublasLtMatmul A,B,C,D CUDA_R_16BF, CUBLAS_COMPUTE_32F, scale CUDA_R_32F, TRANSA=N TRANSB=N"},
    {Prec::fp16, "fp16", 2, 2, 1e-2,
     "cublasLtMatmul A,B,C,D CUDA_R_16F, CUBLAS_COMPUTE_32F, scale CUDA_R_32F, TRANSA=N TRANSB=N"},
    {Prec::fp8, "fp8", 1, 2, 3e-2,
     "cublasLtMatmul A,B CUDA_R_8F_E4M3, C,D CUDA_R_16BF, CUBLAS_COMPUTE_32F, scale CUDA_R_32F, TRANSA=T TRANSB=N, "
     "unit scales, no fast accumulation"},
};

const PrecInfo& info(Prec p) {
  for (const auto& i : kPrecs)
    if (i.p == p) return i;
  throw std::logic_error("unknown precision");
}

// Calls `f(ab, c)` with a value of the element type of A and B and one of C's for precision `p` (PrecInfo's
// ab_bytes and c_bytes): fp64 double, fp32 and tf32 float, bf16 __nv_bfloat16, fp16 __half, fp8 __nv_fp8_e4m3
// with C in __nv_bfloat16.
template <typename F>
void with_element_types(Prec p, F f) {
  switch (p) {
    case Prec::fp64: f(double{}, double{}); break;
    case Prec::fp32:
    case Prec::tf32: f(float{}, float{}); break;
    case Prec::bf16: f(__nv_bfloat16{}, __nv_bfloat16{}); break;
    case Prec::fp16: f(__half{}, __half{}); break;
    case Prec::fp8: f(__nv_fp8_e4m3{}, __nv_bfloat16{}); break;
  }
}

const char* kFp8CcReason = "FP8 needs compute capability >= 8.9";

// ---------------------------------------------------------------------------------------------
// Device kernels: hash-based fill, Freivalds' products in double, error injection.
__host__ __device__ inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1) from (index, seed).
__device__ inline double uniform_pm1(uint64_t i, uint64_t seed) {
  uint64_t h = mix64(i ^ mix64(seed));
  return static_cast<double>(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

__device__ inline double to_d(double v) { return v; }
__device__ inline double to_d(float v) { return static_cast<double>(v); }
__device__ inline double to_d(__half v) { return static_cast<double>(__half2float(v)); }
__device__ inline double to_d(__nv_bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }
__device__ inline double to_d(__nv_fp8_e4m3 v) { return static_cast<double>(static_cast<float>(v)); }

template <typename T> __device__ inline T from_d(double v);
template <> __device__ inline double from_d<double>(double v) { return v; }
template <> __device__ inline float from_d<float>(double v) { return static_cast<float>(v); }
template <> __device__ inline __half from_d<__half>(double v) { return __float2half(static_cast<float>(v)); }
template <> __device__ inline __nv_bfloat16 from_d<__nv_bfloat16>(double v) {
  return __float2bfloat16(static_cast<float>(v));
}
template <> __device__ inline __nv_fp8_e4m3 from_d<__nv_fp8_e4m3>(double v) {
  return __nv_fp8_e4m3(static_cast<float>(v));
}

template <typename T>
__global__ void fill_kernel(T* p, size_t count, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = from_d<T>(uniform_pm1(i, seed));
}

// x uniform in [-1, 1), xa = |x|.
__global__ void fill_x_kernel(double* x, double* xa, int n, uint64_t seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double v = uniform_pm1(static_cast<uint64_t>(i), seed);
    x[i] = v;
    xa[i] = fabs(v);
  }
}

// y = M x and (if ya) ya_i = sqrt(sum_j (M_ij x_j)^2), the root-sum-square of the row's products (xa is
// unused), for column-major n x n M (element (i,j) at M[i + j*n]): one thread per
// row; the warp's loads at each j are contiguous.
template <typename T>
__global__ void gemv_n_kernel(const T* __restrict__ M, int n, const double* __restrict__ x,
                              const double* __restrict__ xa, double* __restrict__ y, double* __restrict__ ya) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double s = 0.0, sa = 0.0;
  const T* col = M + i;
#pragma unroll 8
  for (int j = 0; j < n; ++j) {
    double t = to_d(col[static_cast<size_t>(j) * n]) * x[j];
    s += t;
    if (ya) sa = fma(t, t, sa);
  }
  y[i] = s;
  if (ya) ya[i] = sqrt(sa);
}

// The same with M transposed: element (i,j) at M[j + i*n] (a row of op(M) is contiguous): one warp per row.
template <typename T>
__global__ void gemv_t_kernel(const T* __restrict__ M, int n, const double* __restrict__ x,
                              const double* __restrict__ xa, double* __restrict__ y, double* __restrict__ ya) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;  // uniform across the warp
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* r = M + static_cast<size_t>(row) * n;
  double s = 0.0, sa = 0.0;
  for (int j = lane; j < n; j += 32) {
    double t = to_d(r[j]) * x[j];
    s += t;
    if (ya) sa = fma(t, t, sa);
  }
  for (int off = 16; off > 0; off /= 2) {
    s += __shfl_down_sync(0xffffffffu, s, off);
    sa += __shfl_down_sync(0xffffffffu, sa, off);
  }
  if (lane == 0) {
    y[row] = s;
    if (ya) ya[row] = sqrt(sa);
  }
}

// Self-test (--inject-error): one element of C becomes 1e30 (+inf in FP16, whose largest finite value is too
// small to exceed the tolerance at these sizes).
template <typename T>
__global__ void inject_kernel(T* C, size_t idx) {
  C[idx] = from_d<T>(1e30);
}

// ---------------------------------------------------------------------------------------------
// Per-GPU context.

// The algorithm chosen for one (precision, size) on one GPU, kept so that every phase at that size uses it.
struct AlgoChoice {
  cublasLtMatmulAlgo_t algo = {};
  // cuBLAS's own choice (cublasGemmEx, CUBLAS_GEMM_DEFAULT_TENSOR_OP: what PyTorch's matmul calls) won over every
  // cuBLASLt candidate; then algo is unused and heuristic_rank is -1.
  bool gemmex = false;
  size_t workspace_bytes = 0;   // what the chosen algorithm asked for
  int heuristic_rank = 0;       // its place in the heuristic's list (0: the heuristic's first choice)
  int candidates = 0;           // algorithms the heuristic returned (at most --algos)
  int candidates_timed = 0;     // ... that ran (others refused the problem), cublasGemmEx included
  bool gemmex_candidate = false;  // cublasGemmEx was timed beside them
  double tune_tflops_first = NAN;   // brief rate of the heuristic's first choice
  double tune_tflops_chosen = NAN;  // brief rate of the chosen one
  double tune_tflops_gemmex = NAN;  // brief rate of cublasGemmEx's own choice
  std::string compute_type;
};

struct Gpu {
  int dev = -1;
  DeviceInfo info;
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;  // cublasGemmEx, the one candidate beside cuBLASLt's heuristic
  cudaStream_t stream = nullptr;
  void* lt_workspace = nullptr;
  size_t lt_workspace_bytes = 0;
  std::vector<cudaEvent_t> events;
  std::map<std::pair<int, int>, AlgoChoice> chosen;  // (precision, n)

  Gpu(int d, size_t workspace_bytes) : dev(d), lt_workspace_bytes(workspace_bytes) {
    CUDA_CHECK(cudaSetDevice(dev));
    info = device_info(dev);
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasLtCreate(&lt));
    if (lt_workspace_bytes) CUDA_CHECK(cudaMalloc(&lt_workspace, lt_workspace_bytes));
    // Same stream, same workspace (calls on one stream never overlap), so both APIs get the same memory.
    CUBLAS_CHECK(cublasCreate(&blas));
    CUBLAS_CHECK(cublasSetStream(blas, stream));
    if (lt_workspace_bytes) CUBLAS_CHECK(cublasSetWorkspace(blas, lt_workspace, lt_workspace_bytes));
  }
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;
  ~Gpu() {
    cudaSetDevice(dev);
    for (auto e : events) cudaEventDestroy(e);
    if (lt_workspace) cudaFree(lt_workspace);
    if (blas) cublasDestroy(blas);
    if (lt) cublasLtDestroy(lt);
    if (stream) cudaStreamDestroy(stream);
  }
  void ensure_events(size_t n) {
    while (events.size() < n) {
      cudaEvent_t e;
      CUDA_CHECK(cudaEventCreate(&e));
      events.push_back(e);
    }
  }
  std::string label() const { return "GPU " + std::to_string(dev) + " (" + info.name + ", " + info.pci_bus_id + ")"; }
};

double tflops(int n, double seconds) { return 2.0 * n * static_cast<double>(n) * n / seconds / 1e12; }

const char* compute_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_64F: return "CUBLAS_COMPUTE_64F";
    case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    default: return "other";
  }
}

// ---------------------------------------------------------------------------------------------
// One GEMM problem on one GPU through cuBLASLt: D = C = A B, square n, column-major, alpha 1, beta 0. For
// FP8, A is stored transposed (k x m, TRANSA = T) as cuBLASLt's FP8 kernels require.
class Gemm {
 public:
  Gemm(Gpu& g, Prec p, int n, uint64_t seed, int algos) : g_(g), p_(p), n_(n), algos_(algos) {
    const PrecInfo& pi = info(p);
    size_t elems = static_cast<size_t>(n) * n;
    bytes_a_ = elems * pi.ab_bytes;
    bytes_c_ = elems * pi.c_bytes;
    CUDA_CHECK(cudaMalloc(&A_, bytes_a_));
    CUDA_CHECK(cudaMalloc(&B_, bytes_a_));
    CUDA_CHECK(cudaMalloc(&C_, bytes_c_));
    CUDA_CHECK(cudaMalloc(&vec_, 7 * static_cast<size_t>(n) * sizeof(double)));
    fill(A_, elems, mix64(seed ^ 0xA));
    fill(B_, elems, mix64(seed ^ 0xB));
    CUDA_CHECK(cudaMemsetAsync(C_, 0xFF, bytes_c_, g_.stream));
    setup_lt();
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  ~Gemm() {
    cudaSetDevice(g_.dev);
    destroy_lt();
    // Buffers are freed after the stream is idle (work may still be queued after an exception).
    cudaStreamSynchronize(g_.stream);
    if (vec_) cudaFree(vec_);
    if (C_) cudaFree(C_);
    if (B_) cudaFree(B_);
    if (A_) cudaFree(A_);
  }

  bool supported() const { return skip_.empty(); }
  // cublasGemmEx takes every precision here but FP8 (cuBLASLt only), with the same compute type.
  bool gemmex_candidate() const { return p_ != Prec::fp8; }
  const std::string& skip_reason() const { return skip_; }
  size_t bytes_a() const { return bytes_a_; }
  size_t bytes_c() const { return bytes_c_; }
  void* A() { return A_; }
  void* B() { return B_; }
  void* C() { return C_; }
  const AlgoChoice& choice() const { return choice_; }

  // Enqueues one GEMM on the GPU's stream with `algo`, or through cublasGemmEx with cuBLAS's own choice.
  cublasStatus_t launch(const cublasLtMatmulAlgo_t& algo, bool gemmex = false) {
    const double d1 = 1.0, d0 = 0.0;
    const float f1 = 1.0f, f0 = 0.0f;
    const void* alpha = p_ == Prec::fp64 ? static_cast<const void*>(&d1) : static_cast<const void*>(&f1);
    const void* beta = p_ == Prec::fp64 ? static_cast<const void*>(&d0) : static_cast<const void*>(&f0);
    if (gemmex)
      return cublasGemmEx(g_.blas, CUBLAS_OP_N, CUBLAS_OP_N, n_, n_, n_, alpha, A_, ab_type_, n_, B_, ab_type_, n_,
                          beta, C_, cd_type_, n_, compute_, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
    return cublasLtMatmul(g_.lt, op_, alpha, A_, adesc_, B_, bdesc_, beta, C_, cdesc_, C_, ddesc_, &algo,
                          g_.lt_workspace, g_.lt_workspace_bytes, g_.stream);
  }
  void run() { CUBLAS_CHECK(launch(choice_.algo, choice_.gemmex)); }

  // The first call of a problem: chooses the algorithm (the fastest of the heuristic's candidates over
  // kTuneCalls timed calls each, or the choice already made for this size on this GPU), then runs it once.
  // A candidate that refuses the problem (CUBLAS_STATUS_NOT_SUPPORTED or _INVALID_VALUE) is passed over; when
  // every candidate refuses, the problem is unsupported (a skipped row, a waived metric), not a failed run.
  bool first_run() {
    auto key = std::make_pair(static_cast<int>(p_), n_);
    auto it = g_.chosen.find(key);
    if (it != g_.chosen.end()) {
      choice_ = it->second;
      run();
      return true;
    }
    std::vector<cudaEvent_t> ev(2 * kTuneCalls);
    for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
    struct Freer {
      std::vector<cudaEvent_t>& ev;
      ~Freer() { for (auto e : ev) cudaEventDestroy(e); }
    } freer{ev};
    double best = INFINITY;
    int best_rank = -1, timed = 0;
    std::string refusals;
    // Candidates: cuBLASLt's heuristic list, then cublasGemmEx with cuBLAS's own choice (not for FP8, which only
    // cuBLASLt runs), the call PyTorch's matmul makes: the fastest of all is kept.
    const size_t total = heur_.size() + (gemmex_candidate() ? 1 : 0);
    for (size_t c = 0; c < total; ++c) {
      const bool ex = c == heur_.size();
      const cublasLtMatmulAlgo_t& algo = ex ? heur_[0].algo : heur_[c].algo;
      cublasStatus_t st = launch(algo, ex);
      if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
        refusals += (refusals.empty() ? "" : ", ") + std::string(cublasGetStatusName(st));
        continue;
      }
      CUBLAS_CHECK(st);
      ++timed;
      if (total == 1) {
        best_rank = 0;
        break;
      }
      for (int i = 0; i < kTuneCalls; ++i) {
        CUDA_CHECK(cudaEventRecord(ev[2 * i], g_.stream));
        CUBLAS_CHECK(launch(algo, ex));
        CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], g_.stream));
      }
      CUDA_CHECK(cudaStreamSynchronize(g_.stream));
      std::vector<double> sec;
      for (int i = 0; i < kTuneCalls; ++i) {
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        sec.push_back(ms * 1e-3);
      }
      double t = median(sec);
      if (c == 0) choice_.tune_tflops_first = tflops(n_, t);
      if (ex) choice_.tune_tflops_gemmex = tflops(n_, t);
      if (t < best) {
        best = t;
        best_rank = static_cast<int>(c);
      }
    }
    if (best_rank < 0) {
      skip_ = "cublasLtMatmul refused every one of the heuristic's " + std::to_string(heur_.size()) + " " +
              info(p_).key + " algorithms for m=n=k=" + std::to_string(n_) + (gemmex_candidate() ? ", and cublasGemmEx too" : "") +
              " (" + refusals + ")";
      return false;
    }
    choice_.gemmex = best_rank == static_cast<int>(heur_.size());
    choice_.algo = heur_[choice_.gemmex ? 0 : best_rank].algo;
    choice_.workspace_bytes = choice_.gemmex ? g_.lt_workspace_bytes : heur_[best_rank].workspaceSize;
    choice_.heuristic_rank = choice_.gemmex ? -1 : best_rank;
    choice_.gemmex_candidate = gemmex_candidate();
    choice_.candidates = static_cast<int>(heur_.size());
    choice_.candidates_timed = timed;
    if (std::isfinite(best)) choice_.tune_tflops_chosen = tflops(n_, best);
    choice_.compute_type = compute_name(compute_);
    g_.chosen[key] = choice_;
    run();
    return true;
  }

  void poison() { CUDA_CHECK(cudaMemsetAsync(C_, 0xFF, bytes_c_, g_.stream)); }

  void inject_error() {
    size_t idx = static_cast<size_t>(n_ / 2) + static_cast<size_t>(n_ / 3) * n_;
    with_element_types(p_, [&](auto, auto c) {
      inject_kernel<<<1, 1, 0, g_.stream>>>(static_cast<decltype(c)*>(C_), idx);
    });
    CUDA_CHECK_LAST();
  }

  // Freivalds' test in double on what C holds now: x random, y = B x, z = op(A) y, w = C x, and
  // za_i = sqrt(sum_k (op(A)_ik y_k)^2). Returns max_i |w_i - z_i| / max_i za_i (NaN when C holds a NaN, inf
  // when it holds an inf). The root-sum-square scale grows like sqrt(n), as rounding errors of a correct
  // product do, so a single wrong element or a wrong tile stands out (a sum of absolute values would grow
  // like n and hide them in the low precisions).
  double freivalds(uint64_t seed) {
    const int n = n_;
    double* x = vec_;
    double* xa = x + n;
    double* y = xa + n;
    double* ya = y + n;
    double* z = ya + n;
    double* za = z + n;
    double* w = za + n;
    fill_x_kernel<<<(n + 255) / 256, 256, 0, g_.stream>>>(x, xa, n, seed);
    CUDA_CHECK_LAST();
    with_element_types(p_, [&](auto ab, auto c) {
      using AB = decltype(ab);
      gemv_n<AB>(B_, x, xa, y, ya);
      if constexpr (std::is_same_v<AB, __nv_fp8_e4m3>)
        gemv_t<AB>(A_, y, ya, z, za);  // op(A) = A^T
      else
        gemv_n<AB>(A_, y, ya, z, za);
      gemv_n<decltype(c)>(C_, x, nullptr, w, nullptr);
    });
    std::vector<double> hz(n), hza(n), hw(n);
    CUDA_CHECK(cudaMemcpyAsync(hz.data(), z, n * sizeof(double), cudaMemcpyDeviceToHost, g_.stream));
    CUDA_CHECK(cudaMemcpyAsync(hza.data(), za, n * sizeof(double), cudaMemcpyDeviceToHost, g_.stream));
    CUDA_CHECK(cudaMemcpyAsync(hw.data(), w, n * sizeof(double), cudaMemcpyDeviceToHost, g_.stream));
    CUDA_CHECK(cudaStreamSynchronize(g_.stream));
    double num = 0.0, den = 0.0;
    for (int i = 0; i < n; ++i) {
      double d = std::fabs(hw[i] - hz[i]);
      if (std::isnan(d)) return NAN;
      num = std::max(num, d);
      den = std::max(den, hza[i]);
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
    return num / den;
  }

 private:
  void fill(void* p, size_t count, uint64_t seed) {
    const int threads = 256, blocks = 2048;
    with_element_types(p_, [&](auto ab, auto) {
      fill_kernel<<<blocks, threads, 0, g_.stream>>>(static_cast<decltype(ab)*>(p), count, seed);
    });
    CUDA_CHECK_LAST();
  }

  template <typename T>
  void gemv_n(const void* M, const double* x, const double* xa, double* y, double* ya) {
    const int threads = 64;
    gemv_n_kernel<T><<<(n_ + threads - 1) / threads, threads, 0, g_.stream>>>(static_cast<const T*>(M), n_, x, xa,
                                                                                y, ya);
    CUDA_CHECK_LAST();
  }
  template <typename T>
  void gemv_t(const void* M, const double* x, const double* xa, double* y, double* ya) {
    const int threads = 256, rows_per_block = threads / 32;
    gemv_t_kernel<T><<<(n_ + rows_per_block - 1) / rows_per_block, threads, 0, g_.stream>>>(
        static_cast<const T*>(M), n_, x, xa, y, ya);
    CUDA_CHECK_LAST();
  }

  void destroy_lt() {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    if (ddesc_) cublasLtMatrixLayoutDestroy(ddesc_);
    if (cdesc_) cublasLtMatrixLayoutDestroy(cdesc_);
    if (bdesc_) cublasLtMatrixLayoutDestroy(bdesc_);
    if (adesc_) cublasLtMatrixLayoutDestroy(adesc_);
    if (op_) cublasLtMatmulDescDestroy(op_);
    pref_ = nullptr;
    ddesc_ = cdesc_ = bdesc_ = adesc_ = nullptr;
    op_ = nullptr;
  }

  // Descriptors and the heuristic's candidates (up to algos_, each fitting the workspace). Returns the
  // heuristic's status; heur_ is empty when it offered nothing.
  cublasStatus_t describe(cublasComputeType_t compute) {
    destroy_lt();
    heur_.clear();
    compute_ = compute;
    cudaDataType_t ab = CUDA_R_32F, cd = CUDA_R_32F, scale = CUDA_R_32F;
    int32_t ta = CUBLAS_OP_N;
    switch (p_) {
      case Prec::fp64: ab = cd = scale = CUDA_R_64F; break;
      case Prec::fp32:
      case Prec::tf32: ab = cd = CUDA_R_32F; break;
      case Prec::bf16: ab = cd = CUDA_R_16BF; break;
      case Prec::fp16: ab = cd = CUDA_R_16F; break;
      case Prec::fp8: ab = CUDA_R_8F_E4M3; cd = CUDA_R_16BF; ta = CUBLAS_OP_T; break;
    }
    ab_type_ = ab;
    cd_type_ = cd;
    const uint64_t n = static_cast<uint64_t>(n_);
    const int32_t tb = CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, compute, scale));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    // All square here, leading dimension n (FP8: A stored k x m, transposed).
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&adesc_, ab, n, n, static_cast<int64_t>(n)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&bdesc_, ab, n, n, static_cast<int64_t>(n)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&cdesc_, cd, n, n, static_cast<int64_t>(n)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ddesc_, cd, n, n, static_cast<int64_t>(n)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_));
    const uint64_t ws = g_.lt_workspace_bytes;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(algos_));
    int count = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(g_.lt, op_, adesc_, bdesc_, cdesc_, ddesc_, pref_, algos_,
                                                       results.data(), &count);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    for (int i = 0; i < count; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= ws) heur_.push_back(results[i]);
    return st;
  }

  void setup_lt() {
    if (p_ == Prec::fp8 && g_.info.cc_major * 10 + g_.info.cc_minor < 89) {
      skip_ = kFp8CcReason;
      return;
    }
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    if (p_ == Prec::fp64) compute = CUBLAS_COMPUTE_64F;
    if (p_ == Prec::fp32) compute = CUBLAS_COMPUTE_32F_PEDANTIC;
    if (p_ == Prec::tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    cublasStatus_t st = describe(compute);
    // FP32 without TF32: CUBLAS_COMPUTE_32F does not use TF32 in cuBLASLt either (that takes _FAST_TF32), and
    // the verification's 1e-4 tolerance would catch TF32's 1e-3 errors.
    if (heur_.empty() && p_ == Prec::fp32) st = describe(CUBLAS_COMPUTE_32F);
    // No algorithm (e.g. FP8 kernels want m, n, k and the leading dimensions in multiples of 16): the size is
    // skipped with the status in the reason, not failed.
    if (heur_.empty())
      skip_ = std::string("cublasLtMatmulAlgoGetHeuristic returned no ") + info(p_).key + " algorithm for m=n=k=" +
              std::to_string(n_) + " within a " + std::to_string(g_.lt_workspace_bytes >> 20) + " MiB workspace (" +
              cublasGetStatusName(st) + ")";
  }

  Gpu& g_;
  Prec p_;
  int n_;
  int algos_;
  size_t bytes_a_ = 0, bytes_c_ = 0;
  void* A_ = nullptr;
  void* B_ = nullptr;
  void* C_ = nullptr;
  double* vec_ = nullptr;
  std::string skip_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t adesc_ = nullptr, bdesc_ = nullptr, cdesc_ = nullptr, ddesc_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasComputeType_t compute_ = CUBLAS_COMPUTE_32F;
  cudaDataType_t ab_type_ = CUDA_R_32F, cd_type_ = CUDA_R_32F;
  std::vector<cublasLtMatmulHeuristicResult_t> heur_;
  AlgoChoice choice_;
};

// Bytes one problem needs on the GPU (A, B, C, the verification vectors).
size_t problem_bytes(Prec p, int n) {
  const PrecInfo& pi = info(p);
  size_t elems = static_cast<size_t>(n) * n;
  return elems * (2 * pi.ab_bytes + pi.c_bytes) + 7 * static_cast<size_t>(n) * sizeof(double);
}

// "" when the problem fits in free memory (with a margin), else the reason.
std::string memory_shortfall(Gpu& g, Prec p, int n) {
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaSetDevice(g.dev));
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t need = problem_bytes(p, n);
  if (need + kMemoryMargin <= free_b) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "does not fit: needs %.2f GiB + %.2f GiB margin, %.2f GiB free of %.2f GiB",
                need / 1073741824.0, kMemoryMargin / 1073741824.0, free_b / 1073741824.0, total_b / 1073741824.0);
  return buf;
}

// `count` GEMMs, each between its own pair of events on the GPU's stream; one synchronisation at the end.
// Returns the seconds of each call.
std::vector<double> timed_calls(Gpu& g, Gemm& gm, int count) {
  g.ensure_events(2 * static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    CUDA_CHECK(cudaEventRecord(g.events[2 * i], g.stream));
    gm.run();
    CUDA_CHECK(cudaEventRecord(g.events[2 * i + 1], g.stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(g.stream));
  std::vector<double> s(count);
  for (int i = 0; i < count; ++i) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, g.events[2 * i], g.events[2 * i + 1]));
    s[i] = ms * 1e-3;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Options and results.
struct Options {
  std::vector<Prec> precisions;
  std::vector<int> series, large;
  int metric_size = 8192;
  double window_s = 3.0;
  std::string gpus = "all";
  bool quick = false;
  bool inject_error = false;
  int algos = 8;                 // heuristic candidates timed per (precision, size)
  long workspace_mib = 64;       // cuBLASLt workspace per GPU
  double sample_interval_s = 0.05;  // NVML readings of clocks and power
  double cooldown_s = 0.25;      // idle before each brief (burst) measurement
  bool one_at_a_time = false;    // each GPU in turn, then the window on all at once (else all at once throughout)
  std::string output;
};

struct Row {
  int gpu = 0;
  Prec p = Prec::fp64;
  int n = 0;
  std::string mode = "solo";  // solo | concurrent
  std::string phase;          // series | large | window
  std::string skipped;        // non-empty: not measured, why
  int warmup_calls = 0, samples = 0;
  double tf_median = NAN, tf_min = NAN, tf_max = NAN, sec_median = NAN, sec_total = NAN;
  double tf_xfer = NAN, xfer_sec_median = NAN;
  double rel_error = NAN, tolerance = NAN;
  bool verified = false;
  AlgoChoice algo;               // the cuBLASLt algorithm used
  double t0 = NAN, t1 = NAN;     // the timed calls' start and end (now_s), for the clocks summary
};

struct State : Outcome {
  State() : Outcome(kTool) {}
  nvml::Sampler* sampler = nullptr;
  std::vector<Row> rows;
  void add_row(const Row& r) {
    std::lock_guard<std::mutex> l(m);
    rows.push_back(r);
  }
};

void fill_stats(Row& r, const std::vector<double>& sec) {
  std::vector<double> tf;
  tf.reserve(sec.size());
  double total = 0.0;
  for (double s : sec) {
    tf.push_back(tflops(r.n, s));
    total += s;
  }
  r.samples = static_cast<int>(sec.size());
  r.tf_median = median(tf);
  r.tf_min = min_of(tf);
  r.tf_max = max_of(tf);
  r.sec_median = median(sec);
  r.sec_total = total;
}

uint64_t seed_for(int gpu, Prec p, int n, int salt) {
  return mix64((static_cast<uint64_t>(gpu) << 48) ^ (static_cast<uint64_t>(p) << 40) ^ (static_cast<uint64_t>(n) << 8) ^
               static_cast<uint64_t>(salt));
}

// Verifies what C holds (the last timed call's output) and records the outcome in the row.
void verify(State& st, const Options& o, Gpu& g, Gemm& gm, Row& r) {
  if (o.inject_error) gm.inject_error();
  r.tolerance = info(r.p).tolerance;
  r.rel_error = gm.freivalds(seed_for(g.dev, r.p, r.n, 0x5eed));
  r.verified = r.rel_error <= r.tolerance;  // false for NaN
  char buf[512] = "";
  if (!r.verified)
    std::snprintf(buf, sizeof buf, "%s: %s %s %s m=n=k=%d: Freivalds rel_error %.3g > tolerance %.3g%s",
                  g.label().c_str(), info(r.p).key, r.mode.c_str(), r.phase.c_str(), r.n, r.rel_error, r.tolerance,
                  o.inject_error ? " (--inject-error self-test)" : "");
  st.verdict(r.verified, buf);
}

void progress(const Gpu& g, const Row& r) {
  char buf[400];
  if (!r.skipped.empty()) {
    std::snprintf(buf, sizeof buf, "[gpu %d %s %s %s n=%d] skipped: %s", g.dev, info(r.p).key, r.mode.c_str(),
                  r.phase.c_str(), r.n, r.skipped.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "[gpu %d %s %s %s n=%d] %.2f TFLOP/s median of %d (min %.2f max %.2f), rel_error %.2g %s",
                  g.dev, info(r.p).key, r.mode.c_str(), r.phase.c_str(), r.n, r.tf_median, r.samples, r.tf_min,
                  r.tf_max, r.rel_error, r.verified ? "ok" : "FAILED");
  }
  std::fprintf(stderr, "%s\n", buf);
}

// Chooses the algorithm of one brief size ahead of its burst (kept in the GPU's choices); nothing is recorded
// here: a size that does not fit or that no algorithm runs is reported by its burst.
void choose_brief(Gpu& g, Prec p, int n, int algos) {
  if (!memory_shortfall(g, p, n).empty()) return;
  Gemm gm(g, p, n, seed_for(g.dev, p, n, 1), algos);
  if (gm.supported()) gm.first_run();
  CUDA_CHECK(cudaStreamSynchronize(g.stream));
}

// One measurement of `calls` timed GEMMs into `r`: the algorithm noted, C poisoned, the calls timed between two
// sampler marks (r.t0, r.t1), then what C holds verified.
void timed_and_verified(State& st, const Options& o, Gpu& g, Gemm& gm, Row& r, int calls) {
  r.algo = gm.choice();
  gm.poison();
  r.t0 = st.sampler->mark();
  fill_stats(r, timed_calls(g, gm, calls));
  r.t1 = st.sampler->mark();
  verify(st, o, g, gm, r);
}

// Series / large sizes: the algorithm chosen ahead (choose_brief), idle --cooldown-s, 2 untimed calls, poison C,
// 10 timed calls, verify.
void measure_brief(State& st, const Options& o, Gpu& g, Prec p, int n, const std::string& phase,
                   const std::string& mode = "solo") {
  Row r;
  r.gpu = g.dev;
  r.p = p;
  r.n = n;
  r.mode = mode;
  r.phase = phase;
  r.skipped = memory_shortfall(g, p, n);
  if (r.skipped.empty()) {
    Gemm gm(g, p, n, seed_for(g.dev, p, n, 1), o.algos);
    if (gm.supported() && gm.first_run()) {
      // Idle first, so that every burst starts from the same state: after the previous burst and this idle.
      CUDA_CHECK(cudaStreamSynchronize(g.stream));
      if (o.cooldown_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.cooldown_s));
      for (int i = 0; i < kBriefWarmups; ++i) gm.run();
      r.warmup_calls = kBriefWarmups;
      timed_and_verified(st, o, g, gm, r, kBriefCalls);
    } else {
      r.skipped = gm.skip_reason();
    }
  } else if (phase == "large") {
    st.note("GPU " + std::to_string(g.dev) + " " + info(p).key + " m=n=k=" + std::to_string(n) + " skipped: " +
            r.skipped);
  }
  progress(g, r);
  st.add_row(r);
}

// Window: one untimed call, warm-up (>= 0.5 s and >= 5 calls, timed to size the window), [barrier], poison C,
// back-to-back timed calls for window_s, verify. Returns false when the problem cannot run here (r.skipped)
// or the barrier was broken.
bool measure_window(State& st, const Options& o, Gpu& g, Gemm& gm, Row& r, ThreadBarrier* bar) {
  if (!gm.supported() || !gm.first_run()) {
    r.skipped = gm.skip_reason();
    return false;
  }
  std::vector<double> warm = timed_calls(g, gm, kWarmupMinCalls);
  double t = median(warm);
  int extra = static_cast<int>(std::ceil(kWarmupSeconds / std::max(t, 1e-7))) - kWarmupMinCalls;
  extra = std::min(std::max(extra, 0), kWindowMaxCalls);
  if (extra > 0) {
    std::vector<double> more = timed_calls(g, gm, extra);
    warm.insert(warm.end(), more.begin(), more.end());
    t = median(warm);
  }
  r.warmup_calls = 1 + static_cast<int>(warm.size());
  int calls = static_cast<int>(std::ceil(o.window_s / std::max(t, 1e-7)));
  calls = std::min(std::max(calls, kWindowMinCalls), kWindowMaxCalls);
  g.ensure_events(2 * static_cast<size_t>(calls));
  if (bar && !bar->wait()) return false;
  timed_and_verified(st, o, g, gm, r, calls);
  return true;
}

// Pinned host buffers for the with-transfer measurement, shared by the (sequential) solo runs.
struct PinnedHost {
  void* p = nullptr;
  size_t bytes = 0;
  ~PinnedHost() {
    if (p) cudaFreeHost(p);
  }
  void* get(size_t need) {
    if (need > bytes) {
      if (p) CUDA_CHECK(cudaFreeHost(p));
      p = nullptr;
      bytes = 0;
      CUDA_CHECK(cudaHostAlloc(&p, need, cudaHostAllocPortable));
      bytes = need;
    }
    return p;
  }
};

// With transfer: H2D A and B from pinned host memory, the GEMM, D2H C, between one event pair; one untimed
// trial, then the median of 5.
void measure_transfer(Gpu& g, Gemm& gm, Row& r, PinnedHost& host) {
  size_t ba = gm.bytes_a(), bc = gm.bytes_c();
  char* h = static_cast<char*>(host.get(2 * ba + bc));
  char *hA = h, *hB = h + ba, *hC = h + 2 * ba;
  // The host copies hold the real inputs, so every trial computes the verified product.
  CUDA_CHECK(cudaMemcpyAsync(hA, gm.A(), ba, cudaMemcpyDeviceToHost, g.stream));
  CUDA_CHECK(cudaMemcpyAsync(hB, gm.B(), ba, cudaMemcpyDeviceToHost, g.stream));
  CUDA_CHECK(cudaStreamSynchronize(g.stream));
  const int trials = 1 + kTransferTrials;
  g.ensure_events(2 * trials);
  for (int i = 0; i < trials; ++i) {
    CUDA_CHECK(cudaEventRecord(g.events[2 * i], g.stream));
    CUDA_CHECK(cudaMemcpyAsync(gm.A(), hA, ba, cudaMemcpyHostToDevice, g.stream));
    CUDA_CHECK(cudaMemcpyAsync(gm.B(), hB, ba, cudaMemcpyHostToDevice, g.stream));
    gm.run();
    CUDA_CHECK(cudaMemcpyAsync(hC, gm.C(), bc, cudaMemcpyDeviceToHost, g.stream));
    CUDA_CHECK(cudaEventRecord(g.events[2 * i + 1], g.stream));
  }
  CUDA_CHECK(cudaStreamSynchronize(g.stream));
  std::vector<double> sec;
  for (int i = 1; i < trials; ++i) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, g.events[2 * i], g.events[2 * i + 1]));
    sec.push_back(ms * 1e-3);
  }
  r.xfer_sec_median = median(sec);
  r.tf_xfer = tflops(r.n, r.xfer_sec_median);
}

void run_solo(State& st, const Options& o, Gpu& g, PinnedHost& host) {
  CUDA_CHECK(cudaSetDevice(g.dev));
  for (Prec p : o.precisions) {
    if (p == Prec::fp8 && g.info.cc_major * 10 + g.info.cc_minor < 89) {
      Row r;
      r.gpu = g.dev;
      r.p = p;
      r.n = o.metric_size;
      r.phase = "window";
      r.skipped = kFp8CcReason;
      progress(g, r);
      st.add_row(r);
      continue;
    }
    // Every brief size's algorithm is chosen first, so that no burst follows the choice's own load (up to about
    // 0.4 s at full power at 16384): each burst then follows the previous one and the cool-down, as an outside
    // measurement of the same calls would (docs/evidence/crosscheck_gemm_torch.py).
    for (int n : o.series) choose_brief(g, p, n, o.algos);
    for (int n : o.large) choose_brief(g, p, n, o.algos);
    for (int n : o.series) measure_brief(st, o, g, p, n, "series");
    for (int n : o.large) measure_brief(st, o, g, p, n, "large");
    Row r;
    r.gpu = g.dev;
    r.p = p;
    r.n = o.metric_size;
    r.phase = "window";
    r.skipped = memory_shortfall(g, p, o.metric_size);
    if (r.skipped.empty()) {
      Gemm gm(g, p, o.metric_size, seed_for(g.dev, p, o.metric_size, 2), o.algos);
      if (measure_window(st, o, g, gm, r, nullptr)) measure_transfer(g, gm, r, host);
    }
    progress(g, r);
    if (r.skipped.empty())
      std::fprintf(stderr, "[gpu %d %s solo xfer n=%d] %.2f TFLOP/s with H2D A,B + D2H C, median of %d\n", g.dev,
                   info(p).key, r.n, r.tf_xfer, kTransferTrials);
    st.add_row(r);
  }
}

// Every GPU at once: one thread each; setup, barrier, warm-up, barrier, window.
void run_concurrent(State& st, const Options& o, std::vector<std::unique_ptr<Gpu>>& gpus, Prec p) {
  ThreadBarrier bar(static_cast<int>(gpus.size()));
  std::vector<std::thread> threads;
  for (auto& gp : gpus) {
    Gpu* g = gp.get();
    threads.emplace_back([&st, &o, &bar, g, p] {
      Row r;
      r.gpu = g->dev;
      r.p = p;
      r.n = o.metric_size;
      r.mode = "concurrent";
      r.phase = "window";
      try {
        CUDA_CHECK(cudaSetDevice(g->dev));
        if (p == Prec::fp8 && g->info.cc_major * 10 + g->info.cc_minor < 89) r.skipped = kFp8CcReason;
        if (r.skipped.empty()) r.skipped = memory_shortfall(*g, p, o.metric_size);
        if (!r.skipped.empty()) {
          bar.drop();
        } else {
          Gemm gm(*g, p, o.metric_size, seed_for(g->dev, p, o.metric_size, 3), o.algos);
          if (!bar.wait()) return;
          if (!measure_window(st, o, *g, gm, r, &bar)) {
            if (r.skipped.empty()) return;  // barrier broken by another thread's error
            bar.drop();
          }
        }
        progress(*g, r);
        st.add_row(r);
      } catch (const CallError& e) {
        st.error(e.what());
        bar.abort();
      } catch (const std::exception& e) {
        st.error(std::string("GPU ") + std::to_string(g->dev) + ": " + e.what());
        bar.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
}

// Every GPU at once throughout (the default with several GPUs): per precision, one thread per GPU chooses the
// algorithms and measures the series and large sizes, then the windows start together (a barrier after setup and
// another after the warm-up, as run_concurrent's); then the with-transfer measurement on each GPU in turn, the
// others idle, since host copies of GPUs under one PCIe switch or root port would measure the switch. Rows are
// mode "concurrent".
void run_together(State& st, const Options& o, std::vector<std::unique_ptr<Gpu>>& gpus, PinnedHost& host) {
  for (Prec p : o.precisions) {
    const size_t count = gpus.size();
    ThreadBarrier bar(static_cast<int>(count));
    std::vector<Row> windows(count);
    std::vector<std::unique_ptr<Gemm>> problems(count);  // each window's problem, kept for its transfers
    std::vector<std::thread> threads;
    for (size_t k = 0; k < count; ++k) {
      Gpu* g = gpus[k].get();
      threads.emplace_back([&st, &o, &bar, &windows, &problems, g, k, p] {
        Row& r = windows[k];
        r.gpu = g->dev;
        r.p = p;
        r.n = o.metric_size;
        r.mode = "concurrent";
        r.phase = "window";
        try {
          CUDA_CHECK(cudaSetDevice(g->dev));
          if (p == Prec::fp8 && g->info.cc_major * 10 + g->info.cc_minor < 89) {
            r.skipped = kFp8CcReason;
            bar.drop();
            return;
          }
          for (int n : o.series) choose_brief(*g, p, n, o.algos);
          for (int n : o.large) choose_brief(*g, p, n, o.algos);
          for (int n : o.series) measure_brief(st, o, *g, p, n, "series", "concurrent");
          for (int n : o.large) measure_brief(st, o, *g, p, n, "large", "concurrent");
          r.skipped = memory_shortfall(*g, p, o.metric_size);
          if (!r.skipped.empty()) {
            bar.drop();
            return;
          }
          problems[k] = std::make_unique<Gemm>(*g, p, o.metric_size, seed_for(g->dev, p, o.metric_size, 2), o.algos);
          if (!bar.wait()) return;
          if (!measure_window(st, o, *g, *problems[k], r, &bar) && !r.skipped.empty()) bar.drop();
        } catch (const CallError& e) {
          st.error(e.what());
          bar.abort();
        } catch (const std::exception& e) {
          st.error(std::string("GPU ") + std::to_string(g->dev) + ": " + e.what());
          bar.abort();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (size_t k = 0; k < count; ++k) {
      Row& r = windows[k];
      if (r.skipped.empty() && r.samples == 0) continue;  // stopped by an error (recorded) before its window
      if (r.skipped.empty() && st.errors.empty()) {
        CUDA_CHECK(cudaSetDevice(gpus[k]->dev));
        measure_transfer(*gpus[k], *problems[k], r, host);
      }
      progress(*gpus[k], r);
      if (r.skipped.empty() && std::isfinite(r.tf_xfer))
        std::fprintf(stderr, "[gpu %d %s xfer n=%d, the other GPUs idle] %.2f TFLOP/s with H2D A,B + D2H C, median of %d\n",
                     gpus[k]->dev, info(p).key, r.n, r.tf_xfer, kTransferTrials);
      st.add_row(r);
    }
    problems.clear();
    if (!st.errors.empty()) throw AlreadyRecorded();
  }
}

// ---------------------------------------------------------------------------------------------
// Command line.
const char* kUsage =
    "usage: gpuaccept-gemm [options]\n"
    "Dense GEMM throughput per GPU through cuBLASLt, every result verified (Freivalds, in double).\n"
    "  --precisions LIST  comma list of fp64,fp32,tf32,bf16,fp16,fp8 or 'all' (default all)\n"
    "  --series LIST      sizes measured briefly (median of 10 calls after 2 warm-ups), or 'none'\n"
    "                     (default 8128,8136,...,8192: the step-8 series; multiples of 64 run fastest)\n"
    "  --large LIST       large sizes measured briefly, skipped with a note where they do not fit, or\n"
    "                     'none' (default 16384; the metric size is measured by the window instead)\n"
    "  --metric-size N    square size of the sustained window and the metrics (default 8192)\n"
    "  --window-s S       length of the sustained window in seconds (default 3.0; --quick 1.0)\n"
    "  --gpus all|LIST    CUDA device indices (default all visible)\n"
    "  --algos N          cuBLASLt heuristic candidates timed per precision and size, beside cublasGemmEx's\n"
    "                     own choice (not FP8), the fastest kept (default 8)\n"
    "  --workspace-mib N  cuBLASLt workspace per GPU in MiB (default 64)\n"
    "  --sample-interval S  seconds between NVML clock/power readings (default 0.05)\n"
    "  --cooldown-s S     idle seconds before each series/large (burst) measurement (default 0.25)\n"
    "  --one-at-a-time    each GPU alone in turn, then the window on every GPU at once (default with several\n"
    "                     GPUs: every GPU at once throughout, the with-transfer copies one GPU at a time)\n"
    "  --quick            nightly: window 1.0 s, no series, no large sizes\n";
const UsageTail kUsageTail{21, false, "self-test: corrupt one element of C before every verification (expect exit 2)",
    "CUDA/cuBLAS call failed or no GPU"};

std::vector<int> parse_sizes(const std::string& opt, const std::string& text) {
  std::vector<int> out;
  if (text == "none") return out;
  auto parts = split_csv(text);
  if (parts.empty()) throw std::invalid_argument("option --" + opt + ": empty list (use 'none')");
  for (const auto& s : parts) {
    const long v = Args::whole_number(opt, s);
    if (v < 16 || v > 65536)
      throw std::invalid_argument("option --" + opt + ": size " + s + " out of range 16..65536");
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) == out.end()) out.push_back(static_cast<int>(v));
  }
  return out;
}

Options parse_options(Args& a) {
  Options o;
  o.quick = a.flag("quick");
  o.inject_error = a.flag("inject-error");
  o.one_at_a_time = a.flag("one-at-a-time");
  std::string precs = a.get("precisions", "all");
  if (precs == "all") {
    for (const auto& pi : kPrecs) o.precisions.push_back(pi.p);
  } else {
    auto parts = split_csv(precs);
    if (parts.empty()) throw std::invalid_argument("option --precisions: empty list");
    for (const auto& s : parts) {
      bool found = false;
      for (const auto& pi : kPrecs)
        if (s == pi.key) {
          found = true;
          if (std::find(o.precisions.begin(), o.precisions.end(), pi.p) == o.precisions.end())
            o.precisions.push_back(pi.p);
        }
      if (!found)
        throw std::invalid_argument("option --precisions: unknown precision '" + s +
                                    "' (known: fp64,fp32,tf32,bf16,fp16,fp8,all)");
    }
  }
  std::string series = a.get("series", o.quick ? "none" : "");
  if (series.empty()) {
    for (int n = 8128; n <= 8192; n += 8) o.series.push_back(n);
  } else {
    o.series = parse_sizes("series", series);
  }
  o.large = parse_sizes("large", a.get("large", o.quick ? "none" : "8192,16384"));
  long ms = a.get_long("metric-size", 8192);
  if (ms < 16 || ms > 65536) throw std::invalid_argument("option --metric-size: " + std::to_string(ms) + " out of range 16..65536");
  o.metric_size = static_cast<int>(ms);
  o.window_s = a.get_seconds("window-s", o.quick ? 1.0 : 3.0, 600);
  o.gpus = a.get_gpus();
  long algos = a.get_long("algos", 8);
  if (algos < 1 || algos > 64) throw std::invalid_argument("option --algos: " + std::to_string(algos) + " out of range 1..64");
  o.algos = static_cast<int>(algos);
  o.workspace_mib = a.get_long("workspace-mib", 64);
  if (o.workspace_mib < 0 || o.workspace_mib > 4096)
    throw std::invalid_argument("option --workspace-mib: " + std::to_string(o.workspace_mib) + " out of range 0..4096");
  o.sample_interval_s = a.get_double("sample-interval", 0.05);
  if (!(o.sample_interval_s >= 0.01 && o.sample_interval_s <= 10.0))
    throw std::invalid_argument("option --sample-interval: must be in [0.01, 10] seconds");
  o.cooldown_s = a.get_double("cooldown-s", 0.25);
  if (!(o.cooldown_s >= 0.0 && o.cooldown_s <= 60.0))
    throw std::invalid_argument("option --cooldown-s: must be in [0, 60] seconds");
  o.output = a.get("output", "");
  a.reject_unknown();
  // The metric size is measured by the window; the large list keeps what the series does not cover.
  std::vector<int> large;
  for (int n : o.large)
    if (n != o.metric_size && std::find(o.series.begin(), o.series.end(), n) == o.series.end()) large.push_back(n);
  o.large = large;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Metrics and the document.

// Whether every GPU ran at once throughout (run_together): several GPUs and not --one-at-a-time.
bool together(const Options& o, const std::vector<int>& gpu_ids) { return gpu_ids.size() > 1 && !o.one_at_a_time; }

void compute_metrics(State& st, const Options& o, const std::vector<int>& gpu_ids, std::vector<Metric>& metrics,
                     Waived& waived, GpuMetrics& per_gpu) {
  char size_txt[64];
  std::snprintf(size_txt, sizeof size_txt, "%d^3", o.metric_size);
  const bool all_at_once = together(o, gpu_ids);
  const std::string own_mode = all_at_once ? "concurrent" : "solo";
  for (Prec p : o.precisions) {
    const std::string key = info(p).key;
    // The min over GPUs of one figure of the metric-size window rows of `mode`; with `gpu_figures`, each GPU's
    // figure too (gpu_metrics).
    auto one = [&](const std::string& name, const std::string& mode, bool xfer, const std::string& desc,
                   bool gpu_figures) {
      double v = INFINITY;
      std::string reason;
      bool complete = true;
      GpuMetrics mine;
      for (int gid : gpu_ids) {
        const Row* found = nullptr;
        for (const auto& r : st.rows)
          if (r.gpu == gid && r.p == p && r.mode == mode && r.phase == "window" && r.n == o.metric_size) found = &r;
        if (!found) {
          complete = false;
          continue;
        }
        if (!found->skipped.empty()) {
          if (reason.find(found->skipped) == std::string::npos) reason += (reason.empty() ? "" : "; ") + found->skipped;
          continue;
        }
        double x = xfer ? found->tf_xfer : found->tf_median;
        if (!std::isfinite(x)) {
          complete = false;
          continue;
        }
        v = std::min(v, x);
        mine.push_back({gid, name, "TFLOP/s", "higher", x});
      }
      if (!reason.empty()) {
        waived.push_back({name, reason});
      } else if (complete && std::isfinite(v)) {
        metrics.push_back({name, "TFLOP/s", "higher", desc, v});
        if (gpu_figures) per_gpu.insert(per_gpu.end(), mine.begin(), mine.end());
      }
    };
    one(key + "_tflops_min", own_mode, false,
        "min over GPUs of the median " + key + " GEMM rate at " + size_txt + ", sustained window, " +
            (all_at_once ? "every GPU busy at once" : "one GPU busy"),
        true);
    one(key + "_xfer_tflops_min", own_mode, true,
        "min over GPUs of the " + key + " GEMM rate at " + size_txt +
            " including H2D of A,B (pinned) and D2H of C, median of 5, one GPU at a time",
        true);
    if (gpu_ids.size() < 2) {
      waived.push_back({key + "_concurrent_tflops_min", "one GPU: concurrent equals solo"});
    } else {
      one(key + "_concurrent_tflops_min", "concurrent", false,
          "min over GPUs of the median " + key + " GEMM rate at " + size_txt + ", sustained window, every GPU busy",
          false);
    }
  }
}

const char* kTiming =
    "algorithm: the fastest of cuBLASLt's heuristic candidates (--algos) and cublasGemmEx's own choice (not FP8) "
    "over 3 timed calls each, chosen once per precision and size, every burst size's before the bursts; one cudaEvent pair per GEMM call on the GPU's stream, all elapsed times read after one "
    "sync; metrics: "
    "median over a sustained window of back-to-back calls (--window-s) at --metric-size after >= 0.5 s and >= 5 "
    "warm-up calls; series/large sizes (burst): --cooldown-s idle, then the median of 10 calls after 2 warm-ups; with transfer: median of 5 "
    "(H2D A,B pinned + GEMM + D2H C between one event pair), one GPU at a time; TFLOP/s = 2*m*n*k/s/1e12; "
    "schedule (parameters.schedule): with several GPUs every GPU at once (mode concurrent, one host thread each, "
    "windows started together), or with --one-at-a-time each GPU alone (mode solo) then the window on all at once";

std::string document(State& st, const Options& o, const Invocation& run,
                     const std::vector<DeviceInfo>& devices, const std::vector<int>& gpu_ids) {
  auto slot_of = [&](int gpu) {
    for (size_t i = 0; i < gpu_ids.size(); ++i)
      if (gpu_ids[i] == gpu) return i;
    return gpu_ids.size();
  };
  std::vector<Metric> metrics;
  Waived waived;
  GpuMetrics per_gpu;
  if (st.errors.empty() || !st.rows.empty()) compute_metrics(st, o, gpu_ids, metrics, waived, per_gpu);

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, [](Json& c) {
    write_cublas_version(c);
    c.kv("cublaslt_version", static_cast<unsigned long long>(cublasLtGetVersion()));
  });
  if (st.sampler) nvml::write_facts(j, *st.sampler);
  else j.kv_null("nvml");

  j.key("parameters").begin_object();
  j.key("precisions").begin_array();
  for (Prec p : o.precisions) j.value(info(p).key);
  j.end_array();
  j.kv_array("series", o.series);
  j.kv_array("large", o.large);
  j.kv("metric_size", o.metric_size).kv("window_s", o.window_s);
  j.kv_array("gpus", gpu_ids);
  j.kv("quick", o.quick).kv("inject_error", o.inject_error);
  j.kv("schedule", gpu_ids.size() < 2 ? "one_gpu" : together(o, gpu_ids) ? "together" : "one_at_a_time");
  j.kv("brief_warmup_calls", kBriefWarmups).kv("brief_timed_calls", kBriefCalls);
  j.kv("window_warmup_s", kWarmupSeconds).kv("window_warmup_min_calls", kWarmupMinCalls);
  j.kv("window_min_calls", kWindowMinCalls).kv("window_max_calls", kWindowMaxCalls);
  j.kv("transfer_trials", kTransferTrials);
  j.kv("cublaslt_workspace_bytes", static_cast<unsigned long long>(o.workspace_mib) << 20);
  j.kv("algorithm_candidates", o.algos).kv("algorithm_tune_calls", kTuneCalls);
  j.kv("clock_sample_interval_s", o.sample_interval_s).kv("brief_cooldown_s", o.cooldown_s);
  j.key("precision_setup").begin_object();
  for (Prec p : o.precisions) {
    j.key(info(p).key).begin_object().kv("call", info(p).setup).kv("tolerance", info(p).tolerance).end_object();
  }
  j.end_object();
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "NVIDIA_TF32_OVERRIDE",
                     "CUBLAS_WORKSPACE_CONFIG", "CUBLAS_EMULATION_STRATEGY", "CUBLASLT_WORKSPACE_SIZE"});
  j.kv_objects("gemm", st.rows, [&](const auto& r) {
    j.kv("gpu", r.gpu).kv("precision", info(r.p).key).kv("m", r.n).kv("n", r.n).kv("k", r.n);
    j.kv("mode", r.mode).kv("phase", r.phase);
    if (!r.skipped.empty()) {
      j.kv("skipped", r.skipped);
    } else {
      j.kv("samples", r.samples).kv("warmup_calls", r.warmup_calls);
      j.kv("tflops_median", r.tf_median).kv("tflops_min", r.tf_min).kv("tflops_max", r.tf_max);
      j.kv("seconds_median", r.sec_median).kv("seconds_total", r.sec_total);
      j.kv("tflops_with_transfer", r.tf_xfer);  // null except solo windows
      j.kv("seconds_with_transfer_median", r.xfer_sec_median);
      j.kv("rel_error", r.rel_error).kv("tolerance", r.tolerance).kv("verified", r.verified);
      j.key("algorithm").begin_object();
      j.kv("api", r.algo.gemmex ? "cublasGemmEx" : "cublasLtMatmul");
      j.kv("compute_type", r.algo.compute_type).kv("heuristic_rank", r.algo.heuristic_rank);
      j.kv("candidates", r.algo.candidates).kv("gemmex_candidate", r.algo.gemmex_candidate);
      j.kv("candidates_timed", r.algo.candidates_timed);
      j.kv("workspace_bytes", static_cast<unsigned long long>(r.algo.workspace_bytes));
      j.kv("tune_tflops_heuristic_first", r.algo.tune_tflops_first).kv("tune_tflops_chosen", r.algo.tune_tflops_chosen);
      j.kv("tune_tflops_gemmex", r.algo.tune_tflops_gemmex);
      j.end_object();
      j.key("clocks");
      size_t slot = slot_of(r.gpu);
      if (st.sampler && st.sampler->ok() && slot < gpu_ids.size() && std::isfinite(r.t0))
        nvml::write_summary(j, st.sampler->summary(slot, r.t0, r.t1));
      else
        j.null();
    }
  });
  return end_results(j, metrics, waived, st.passed(), st, per_gpu);
}

void print_table(State& st, const std::vector<int>& gpu_ids) {
  std::printf("%-4s %-5s %-10s %-7s %6s %8s %10s %10s %10s %10s %9s %8s %7s %5s %s\n", "gpu", "prec", "mode", "phase",
              "n", "samples", "TF median", "TF min", "TF max", "TF xfer", "rel_err", "verified", "SM MHz", "W",
              "algo");
  for (const auto& r : st.rows) {
    if (!r.skipped.empty()) {
      std::printf("%-4d %-5s %-10s %-7s %6d skipped: %s\n", r.gpu, info(r.p).key, r.mode.c_str(), r.phase.c_str(),
                  r.n, r.skipped.c_str());
      continue;
    }
    char xfer[32] = "-";
    if (std::isfinite(r.tf_xfer)) std::snprintf(xfer, sizeof xfer, "%.2f", r.tf_xfer);
    nvml::Summary c;
    size_t slot = std::find(gpu_ids.begin(), gpu_ids.end(), r.gpu) - gpu_ids.begin();
    if (st.sampler && st.sampler->ok() && slot < gpu_ids.size()) c = st.sampler->summary(slot, r.t0, r.t1);
    std::printf("%-4d %-5s %-10s %-7s %6d %8d %10.2f %10.2f %10.2f %10s %9.2g %8s %7.0f %5.0f %d/%d\n", r.gpu,
                info(r.p).key, r.mode.c_str(), r.phase.c_str(), r.n, r.samples, r.tf_median, r.tf_min, r.tf_max, xfer,
                r.rel_error, r.verified ? "yes" : "NO", c.sm_mhz_median, c.power_w_median, r.algo.heuristic_rank,
                r.algo.candidates);
  }
}

}  // namespace

int run_tool(const Options& o, const Invocation& run) {

  State st;
  std::vector<DeviceInfo> devices;
  std::vector<int> gpu_ids;
  auto write_doc = [&]() {
    return write_document(o.output, kTool, [&] { return document(st, o, run, devices, gpu_ids); });
  };

  std::unique_ptr<nvml::Sampler> sampler;  // outlives the GPUs: the document summarises its readings
  auto measure = [&] {
    std::vector<std::unique_ptr<Gpu>> gpus;  // released as measure returns (or throws), before the sampler stops
    PinnedHost host;
    std::vector<std::string> bus_ids;
    for (int id : gpu_ids) {
      gpus.push_back(std::make_unique<Gpu>(id, static_cast<size_t>(o.workspace_mib) << 20));
      devices.push_back(gpus.back()->info);
      std::cerr << "[gpu " << id << "] " << gpus.back()->info.name << ", " << gpus.back()->info.pci_bus_id
                << ", compute capability " << gpus.back()->info.cc << "\n";
      bus_ids.push_back(gpus.back()->info.pci_bus_id);
    }
    sampler = std::make_unique<nvml::Sampler>(bus_ids, o.sample_interval_s);
    st.sampler = sampler.get();
    if (!sampler->ok()) st.note("no clock/power readings: " + sampler->why_not());
    if (together(o, gpu_ids)) {
      run_together(st, o, gpus, host);
      return;
    }
    for (auto& g : gpus) run_solo(st, o, *g, host);
    if (gpus.size() > 1) {
      for (Prec p : o.precisions) {
        run_concurrent(st, o, gpus, p);
        if (!st.errors.empty()) break;
      }
    }
  };
  return run_gpu_tool(st, o.gpus, gpu_ids, write_doc, measure, [&] {
    if (sampler) sampler->stop();
    print_table(st, gpu_ids);
  });
}

int main(int argc, char** argv) {
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
}
