// gpuaccept-hplstyle: an HPL-style LU benchmark on every GPU at once, through cuSOLVER (not HPL itself).
//
// Per GPU, in its own process (the parent re-executes this binary once per GPU and waits for all):
//   1. size: N from --n, or from --mem-fraction of the GPU's memory (capped by what is free), minus cuSOLVER's
//      getrf workspace (queried first), rounded down to --align; a size that does not fit is refused with a
//      message before anything large is allocated;
//   2. generate: A (N x N) and b (N) as HPL does, column by column from one stream of the 64-bit linear
//      congruential generator x' = 6364136223846793005 x + 1 (mod 2^64), each value mapped to (-0.5, 0.5] as
//      HPL_rand does; on the GPU, with jump-ahead;
//   3. an untimed warm-up factorisation of a small leading block, then every worker signals ready and waits
//      until all are (a pipe barrier), so the timed parts run at the same time;
//   4. time: one cudaEvent pair around cusolverDnXgetrf (LU with partial pivoting, 64-bit API) +
//      cusolverDnXgetrs on the GPU's stream; rate = HPL's flop count (2/3 N^3 + 3/2 N^2) / time;
//   5. check: A and b regenerated from the seed into the same buffers, r = b - A x, and HPL's scaled residual
//      ||r||_oo / (eps * (||A||_oo * ||x||_oo + ||b||_oo) * N) with eps = 2^-53, passed when below
//      --threshold (16.0).
// It prints HPL's result-table row and residual line for every run, so one parser (gpuaccept.hpl) reads this
// tool, NVIDIA's xhpl and hpcc. The JSON document (--output) is described in docs/benchmark-json.md and the
// method in docs/checks/hpl.md. Each GPU's rate and residual also go to the document's "gpu_metrics", so that
// the judge names a slow GPU.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.h"
#include "tool_main.h"

extern char** environ;

using namespace gpuaccept;

#define CUSOLVER_CHECK(call)                                                                               \
  GPUACCEPT_CHECK(#call, call, CUSOLVER_STATUS_SUCCESS,                                                    \
                  [](cusolverStatus_t s) { return "cusolverStatus_t " + std::to_string(s); })

namespace {

constexpr const char* kTool = "gpuaccept-hplstyle";
constexpr const char* kTv = "CUSOLVER";           // the T/V column of the result rows
constexpr uint64_t kLcgMult = 6364136223846793005ull;  // HPL's generator (HPL_MULT1:HPL_MULT0)
constexpr uint64_t kLcgAdd = 1;                        // (HPL_IADD1:HPL_IADD0)
constexpr double kEps = DBL_EPSILON / 2;               // 2^-53, LAPACK's dlamch('E') as HPL prints it
constexpr size_t kMargin = 768ull << 20;  // left free besides A, pivots, vectors, workspace (cuBLAS, context)
constexpr int kGenColumnsPerPass = 128;   // generator grid: threads per row (columns handled in parallel)

// ---------------------------------------------------------------------------------------------
// The generator. An affine map x -> a x + c (mod 2^64); composing maps gives jump-ahead.
struct Affine {
  uint64_t a, c;
};
__host__ __device__ inline Affine then(Affine first, Affine second) {  // second(first(x))
  return {second.a * first.a, second.a * first.c + second.c};
}
__host__ __device__ inline Affine lcg_jump(uint64_t steps) {
  Affine result{1, 0}, power{kLcgMult, kLcgAdd};
  while (steps) {
    if (steps & 1) result = then(result, power);
    power = then(power, power);
    steps >>= 1;
  }
  return result;
}
// A generator state to a value in (-0.5, 0.5], the mapping of HPL_rand: low and high 32-bit halves.
__host__ __device__ inline double hpl_value(uint64_t x) {
  const double lo = static_cast<double>(x & 0xffffffffull), hi = static_cast<double>(x >> 32);
  return 0.5 - (lo / 2147483648.0 * 0.5 + hi) / 2147483648.0 * 0.5;
}

// Element (i, j) of the n x (n+1) system [A b] is the value of state number j*n + i + 1 after the seed
// (column-major, b as column n). One thread per row i; threads of a block take consecutive rows (coalesced
// stores) and columns j = blockIdx.y, blockIdx.y + gridDim.y, ... each.
__global__ void generate_kernel(double* A, int64_t lda, double* b, int64_t n, uint64_t seed, Affine col_step) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int64_t j0 = blockIdx.y;
  const Affine start = lcg_jump(static_cast<uint64_t>(j0 * n + i + 1));
  uint64_t x = start.a * seed + start.c;
  for (int64_t j = j0; j <= n; j += gridDim.y) {
    const double v = hpl_value(x);
    if (j < n)
      A[i + j * lda] = v;
    else if (b)
      b[i] = v;
    x = col_step.a * x + col_step.c;
  }
}

// out = max(out, |v|) for non-negative doubles through their bit patterns (monotone; NaN compares highest).
__device__ inline void atomic_max_abs(double* out, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(out), static_cast<unsigned long long>(__double_as_longlong(fabs(v))));
}

__global__ void max_abs_kernel(const double* v, int64_t n, double* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    atomic_max_abs(out, v[i]);
}

// ||A||_oo: the largest row sum of |a_ij|; one thread per row, consecutive rows per warp (coalesced loads).
__global__ void row_norm_kernel(const double* A, int64_t lda, int64_t n, double* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  double s = 0.0;
  for (int64_t j = 0; j < n; ++j) s += fabs(A[i + j * lda]);
  atomic_max_abs(out, s);
}

// Self-test (--inject-error): one entry of the solution is changed after the timed solve.
__global__ void inject_kernel(double* x, int64_t idx) { x[idx] += 1.0; }

// ---------------------------------------------------------------------------------------------
struct Options {
  long long n = 0;  // 0: from memory
  double mem_fraction = 0.85;
  long long align = 1024;
  int runs = 1;
  unsigned long long seed = 42;
  int alg = 0;  // cusolverDnSetAdvOptions(CUSOLVERDN_GETRF, CUSOLVER_ALG_<alg>)
  double threshold = 16.0;
  long long warmup_n = 4096;
  bool inject_error = false;
  std::string gpus = "all";
  std::string output;
  // Worker mode (internal): one GPU, results to a file, barrier through inherited pipe descriptors.
  int worker_gpu = -1;
  std::string worker_result;
  int ready_fd = -1, go_fd = -1;
};

const char* kUsage =
    "usage: gpuaccept-hplstyle [options]\n"
    "HPL-style LU (cuSOLVER getrf/getrs, FP64, partial pivoting) on every GPU at once, one process per GPU,\n"
    "checked with HPL's scaled residual. Not HPL: see docs/checks/hpl.md.\n"
    "  --n N              matrix order (default: from --mem-fraction; refused when it does not fit)\n"
    "  --mem-fraction F   share of the GPU's memory for the system when --n is not given (default 0.85,\n"
    "                     capped by the free memory)\n"
    "  --quick            a shorter run: --mem-fraction 0.25 unless given\n"
    "  --align K          round the automatic N down to a multiple of K (default 1024)\n"
    "  --runs R           timed runs per GPU (default 1; metrics use the median run)\n"
    "  --alg 0|1          cuSOLVER getrf algorithm (cusolverDnSetAdvOptions; default 0)\n"
    "  --seed S           generator seed (default 42)\n"
    "  --threshold T      residual threshold, > 0 (default 16.0, HPL's)\n"
    "  --warmup-n N       order of the untimed warm-up factorisation (default 4096; 0: none)\n"
    "  --gpus all|LIST    CUDA device indices (default all visible)\n";
const UsageTail kUsageTail{21, false, "self-test: change one entry of x after the solve (expect FAILED and exit 2)",
    "CUDA/cuSOLVER call failed or no GPU", "", "residual check failed",
    "bad command line\n(a size that does not fit included)."};

Options parse_options(Args& a) {
  Options o;
  o.n = a.get_long("n", 0);
  if (o.n < 0 || o.n > 4000000) throw std::invalid_argument("option --n: must be in 1..4000000 (or 0: automatic)");
  const bool quick = a.flag("quick");
  o.mem_fraction = a.get_double("mem-fraction", quick ? 0.25 : 0.85);
  if (!(o.mem_fraction > 0.0 && o.mem_fraction <= 0.98))
    throw std::invalid_argument("option --mem-fraction: must be in (0, 0.98]");
  o.align = a.get_long("align", 1024);
  if (o.align < 1 || o.align > 65536) throw std::invalid_argument("option --align: must be in 1..65536");
  long runs = a.get_long("runs", 1);
  if (runs < 1 || runs > 100) throw std::invalid_argument("option --runs: must be in 1..100");
  o.runs = static_cast<int>(runs);
  long alg = a.get_long("alg", 0);
  if (alg != 0 && alg != 1) throw std::invalid_argument("option --alg: must be 0 or 1");
  o.alg = static_cast<int>(alg);
  long seed = a.get_long("seed", 42);
  if (seed < 0) throw std::invalid_argument("option --seed: must be >= 0");
  o.seed = static_cast<unsigned long long>(seed);
  o.threshold = a.get_double("threshold", 16.0);
  if (!(o.threshold > 0.0))
    throw std::invalid_argument("option --threshold: must be > 0 (HPL skips its check at 0 or below)");
  o.warmup_n = a.get_long("warmup-n", 4096);
  if (o.warmup_n < 0) throw std::invalid_argument("option --warmup-n: must be >= 0");
  o.inject_error = a.flag("inject-error");
  o.gpus = a.get_gpus();
  o.output = a.get("output", "");
  o.worker_gpu = static_cast<int>(a.get_long("worker-gpu", -1));
  o.worker_result = a.get("worker-result", "");
  o.ready_fd = static_cast<int>(a.get_long("ready-fd", -1));
  o.go_fd = static_cast<int>(a.get_long("go-fd", -1));
  a.reject_unknown();
  return o;
}

double hpl_flops(double n) { return 2.0 / 3.0 * n * n * n + 1.5 * n * n; }

// ---------------------------------------------------------------------------------------------
// Worker: one GPU.
struct RunResult {
  double seconds = NAN, gflops = NAN, residual = NAN, norm_a = NAN, norm_x = NAN, norm_b = NAN, norm_r = NAN;
  long long info = 0;
  bool passed = false;
};

struct WorkerOut {
  long long n = 0;
  double matrix_bytes = 0, workspace_device_bytes = 0, workspace_host_bytes = 0;
  double free_bytes = 0, total_bytes = 0, generate_s = NAN, warmup_s = NAN, residual_s = NAN;
  std::vector<RunResult> runs;
  std::string error;  // a failed call
  std::string refused;  // a size that does not fit
};

void print_header(const Options& o) {
  std::printf("================================================================================\n");
  std::printf("%s: HPL-style LU through cuSOLVER (not HPL); result lines in HPL's format\n", kTool);
  std::printf("================================================================================\n");
  std::printf("- The matrix A is randomly generated for each test.\n");
  std::printf("- The relative machine precision (eps) is taken to be %18.6e\n", kEps);
  std::printf("- Computational tests pass if scaled residuals are less than %18.1f\n\n", o.threshold);
}

void print_run(long long n, const RunResult& r, double threshold) {
  std::printf("================================================================================\n");
  std::printf("T/V                N    NB     P     Q               Time                 Gflops\n");
  std::printf("--------------------------------------------------------------------------------\n");
  std::printf("%-10s %9lld %5d %5d %5d %18.2f %22.4e\n", kTv, n, 0, 1, 1, r.seconds, r.gflops);
  std::printf("--------------------------------------------------------------------------------\n");
  std::printf("||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)= %18.7f ...... %s\n", r.residual,
              r.residual < threshold ? "PASSED" : "FAILED");
}

void print_footer(const std::vector<RunResult>& runs) {
  int passed = 0;
  for (const auto& r : runs) passed += r.passed ? 1 : 0;
  std::printf("================================================================================\n\n");
  std::printf("Finished %6zu tests with the following results:\n", runs.size());
  std::printf("         %6d tests completed and passed residual checks,\n", passed);
  std::printf("         %6zu tests completed and failed residual checks,\n", runs.size() - passed);
  std::printf("         %6d tests skipped because of illegal input values.\n", 0);
  std::printf("--------------------------------------------------------------------------------\n\n");
  std::printf("End of Tests.\n");
  std::printf("================================================================================\n");
}

void launch_generate(double* A, int64_t lda, double* b, int64_t n, uint64_t seed, cudaStream_t s) {
  const int64_t cols = std::min<int64_t>(kGenColumnsPerPass, n + 1);
  dim3 grid(static_cast<unsigned>((n + 255) / 256), static_cast<unsigned>(cols));
  generate_kernel<<<grid, 256, 0, s>>>(A, lda, b, n, seed, lcg_jump(static_cast<uint64_t>(cols * n)));
  CUDA_CHECK_LAST();
}

void barrier(const Options& o) {
  if (o.ready_fd >= 0) {
    char c = 'r';
    if (write(o.ready_fd, &c, 1) != 1) throw CallError(std::string("barrier: write: ") + std::strerror(errno));
    close(o.ready_fd);
  }
  if (o.go_fd >= 0) {
    char c;
    while (read(o.go_fd, &c, 1) > 0) {
    }
    close(o.go_fd);
  }
}

void run_worker(const Options& o, WorkerOut& out) {
  const int dev = o.worker_gpu;
  CUDA_CHECK(cudaSetDevice(dev));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cusolverDnHandle_t solver;
  CUSOLVER_CHECK(cusolverDnCreate(&solver));
  CUSOLVER_CHECK(cusolverDnSetStream(solver, stream));
  cusolverDnParams_t params;
  CUSOLVER_CHECK(cusolverDnCreateParams(&params));
  CUSOLVER_CHECK(cusolverDnSetAdvOptions(params, CUSOLVERDN_GETRF, o.alg ? CUSOLVER_ALG_1 : CUSOLVER_ALG_0));
  cublasHandle_t blas;
  CUBLAS_CHECK(cublasCreate(&blas));
  CUBLAS_CHECK(cublasSetStream(blas, stream));

  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  out.free_bytes = static_cast<double>(free_b);
  out.total_bytes = static_cast<double>(total_b);

  auto need = [&](int64_t n, size_t& ws_d, size_t& ws_h) {
    CUSOLVER_CHECK(cusolverDnXgetrf_bufferSize(solver, params, n, n, CUDA_R_64F, nullptr, n, CUDA_R_64F, &ws_d, &ws_h));
    return static_cast<double>(n) * n * 8.0 + 5.0 * n * 8.0 + static_cast<double>(ws_d);
  };
  const double usable = static_cast<double>(free_b) - static_cast<double>(kMargin);
  size_t ws_d = 0, ws_h = 0;
  int64_t n = o.n;
  if (n > 0) {
    double bytes = need(n, ws_d, ws_h);
    if (bytes > usable) {
      char msg[512];
      std::snprintf(msg, sizeof msg,
                    "--n %lld does not fit on GPU %d: it needs %.2f GB (matrix %.2f GB, cuSOLVER workspace %.3f GB, "
                    "vectors) plus %.2f GB kept free, and %.2f GB of %.2f GB are free; largest N that fits is about "
                    "%lld",
                    static_cast<long long>(n), dev, bytes / 1e9, static_cast<double>(n) * n * 8 / 1e9, ws_d / 1e9,
                    kMargin / 1e9, free_b / 1e9, total_b / 1e9,
                    static_cast<long long>(std::sqrt(std::max(0.0, usable - static_cast<double>(ws_d)) / 8.0)));
      out.refused = msg;
      return;
    }
  } else {
    const double budget = std::min(o.mem_fraction * static_cast<double>(total_b), usable);
    n = static_cast<int64_t>(std::sqrt(std::max(0.0, budget) / 8.0)) / o.align * o.align;
    while (n > 0 && need(n, ws_d, ws_h) > budget) n -= o.align;
    if (n <= 0) {
      out.refused = "GPU " + std::to_string(dev) + " has too little free memory (" + std::to_string(free_b >> 20) +
                    " MiB) for any matrix at --mem-fraction " + std::to_string(o.mem_fraction);
      return;
    }
  }
  need(n, ws_d, ws_h);
  out.n = n;
  out.matrix_bytes = static_cast<double>(n) * n * 8.0;
  out.workspace_device_bytes = static_cast<double>(ws_d);
  out.workspace_host_bytes = static_cast<double>(ws_h);

  double *A = nullptr, *b = nullptr, *x = nullptr, *r = nullptr, *norms = nullptr;
  int64_t* ipiv = nullptr;
  int* info_d = nullptr;
  void* work_d = nullptr;
  std::vector<char> work_h(std::max<size_t>(ws_h, 1));
  CUDA_CHECK(cudaMalloc(&A, static_cast<size_t>(n) * n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&b, n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&r, n * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&norms, 4 * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&ipiv, n * sizeof(int64_t)));
  CUDA_CHECK(cudaMalloc(&info_d, sizeof(int)));
  if (ws_d) CUDA_CHECK(cudaMalloc(&work_d, ws_d));

  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));

  // Warm-up: a small system in the same buffer (cuSOLVER's and cuBLAS's first-call costs stay untimed).
  const int64_t wn = std::min<int64_t>(o.warmup_n, n);
  if (wn > 0) {
    double t = now_s();
    launch_generate(A, wn, x, wn, o.seed ^ 0x5eedull, stream);
    CUSOLVER_CHECK(cusolverDnXgetrf(solver, params, wn, wn, CUDA_R_64F, A, wn, ipiv, CUDA_R_64F, work_d, ws_d,
                                    work_h.data(), ws_h, info_d));
    CUSOLVER_CHECK(cusolverDnXgetrs(solver, params, CUBLAS_OP_N, wn, 1, CUDA_R_64F, A, wn, ipiv, CUDA_R_64F, x, wn,
                                    info_d));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    out.warmup_s = now_s() - t;
  }

  double t = now_s();
  launch_generate(A, n, b, n, o.seed, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  out.generate_s = now_s() - t;

  barrier(o);

  for (int run = 0; run < o.runs; ++run) {
    RunResult rr;
    CUDA_CHECK(cudaMemcpyAsync(x, b, n * sizeof(double), cudaMemcpyDeviceToDevice, stream));
    CUDA_CHECK(cudaEventRecord(e0, stream));
    CUSOLVER_CHECK(cusolverDnXgetrf(solver, params, n, n, CUDA_R_64F, A, n, ipiv, CUDA_R_64F, work_d, ws_d,
                                    work_h.data(), ws_h, info_d));
    CUSOLVER_CHECK(cusolverDnXgetrs(solver, params, CUBLAS_OP_N, n, 1, CUDA_R_64F, A, n, ipiv, CUDA_R_64F, x, n,
                                    info_d));
    CUDA_CHECK(cudaEventRecord(e1, stream));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    int info_h = 0;
    CUDA_CHECK(cudaMemcpy(&info_h, info_d, sizeof(int), cudaMemcpyDeviceToHost));
    rr.info = info_h;
    rr.seconds = ms / 1e3;
    rr.gflops = hpl_flops(static_cast<double>(n)) / rr.seconds / 1e9;
    if (o.inject_error) {
      inject_kernel<<<1, 1, 0, stream>>>(x, n / 2);
      CUDA_CHECK_LAST();
    }
    // The check: A and b again from the seed (this also restores A for the next run), r = b - A x.
    double tr = now_s();
    launch_generate(A, n, b, n, o.seed, stream);
    CUDA_CHECK(cudaMemsetAsync(norms, 0, 4 * sizeof(double), stream));
    CUDA_CHECK(cudaMemcpyAsync(r, b, n * sizeof(double), cudaMemcpyDeviceToDevice, stream));
    const double m1 = -1.0, p1 = 1.0;
    CUBLAS_CHECK(cublasDgemv(blas, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(n), &m1, A, static_cast<int>(n),
                             x, 1, &p1, r, 1));
    const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    row_norm_kernel<<<blocks, 256, 0, stream>>>(A, n, n, norms + 0);
    max_abs_kernel<<<std::min(blocks, 1024u), 256, 0, stream>>>(x, n, norms + 1);
    max_abs_kernel<<<std::min(blocks, 1024u), 256, 0, stream>>>(b, n, norms + 2);
    max_abs_kernel<<<std::min(blocks, 1024u), 256, 0, stream>>>(r, n, norms + 3);
    CUDA_CHECK_LAST();
    double h[4];
    CUDA_CHECK(cudaMemcpyAsync(h, norms, sizeof h, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    out.residual_s = now_s() - tr;
    rr.norm_a = h[0];
    rr.norm_x = h[1];
    rr.norm_b = h[2];
    rr.norm_r = h[3];
    rr.residual = rr.norm_r / (kEps * (rr.norm_a * rr.norm_x + rr.norm_b) * static_cast<double>(n));
    rr.passed = rr.info == 0 && rr.residual < o.threshold;  // NaN fails
    out.runs.push_back(rr);
  }
  if (work_d) cudaFree(work_d);
  cudaFree(info_d);
  cudaFree(ipiv);
  cudaFree(norms);
  cudaFree(r);
  cudaFree(x);
  cudaFree(b);
  cudaFree(A);
  cublasDestroy(blas);
  cusolverDnDestroyParams(params);
  cusolverDnDestroy(solver);
  cudaStreamDestroy(stream);
}

// Worker result file: one "key value" line each; runs as "run seconds gflops residual info passed ||A|| ||x|| ||b||
// ||r||"; errors and refusals as "error text" / "refused text".
std::string worker_text(const WorkerOut& w) {
  std::ostringstream os;
  os << std::setprecision(17);
  os << "n " << w.n << "\nmatrix_bytes " << w.matrix_bytes << "\nworkspace_device_bytes " << w.workspace_device_bytes
     << "\nworkspace_host_bytes " << w.workspace_host_bytes << "\nfree_bytes " << w.free_bytes << "\ntotal_bytes "
     << w.total_bytes << "\ngenerate_s " << w.generate_s << "\nwarmup_s " << w.warmup_s << "\nresidual_s "
     << w.residual_s << "\n";
  for (const auto& r : w.runs)
    os << "run " << r.seconds << " " << r.gflops << " " << r.residual << " " << r.info << " " << (r.passed ? 1 : 0)
       << " " << r.norm_a << " " << r.norm_x << " " << r.norm_b << " " << r.norm_r << "\n";
  if (!w.refused.empty()) os << "refused " << w.refused << "\n";
  if (!w.error.empty()) os << "error " << w.error << "\n";
  return os.str();
}

double parse_num(const std::string& s) {
  if (s == "nan" || s == "-nan") return NAN;
  if (s == "inf") return INFINITY;
  return std::stod(s);
}

bool read_worker(const std::string& path, WorkerOut& w) {
  std::ifstream f(path);
  if (!f) return false;
  std::string line;
  while (std::getline(f, line)) {
    auto sp = line.find(' ');
    std::string key = line.substr(0, sp), rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    std::istringstream is(rest);
    std::string a;
    if (key == "error") { w.error = rest; continue; }
    if (key == "refused") { w.refused = rest; continue; }
    if (key == "run") {
      std::vector<std::string> v;
      while (is >> a) v.push_back(a);
      if (v.size() != 9) return false;
      RunResult r;
      r.seconds = parse_num(v[0]);
      r.gflops = parse_num(v[1]);
      r.residual = parse_num(v[2]);
      r.info = std::stoll(v[3]);
      r.passed = v[4] == "1";
      r.norm_a = parse_num(v[5]);
      r.norm_x = parse_num(v[6]);
      r.norm_b = parse_num(v[7]);
      r.norm_r = parse_num(v[8]);
      w.runs.push_back(r);
      continue;
    }
    double val = parse_num(rest);
    if (key == "n") w.n = static_cast<long long>(val);
    else if (key == "matrix_bytes") w.matrix_bytes = val;
    else if (key == "workspace_device_bytes") w.workspace_device_bytes = val;
    else if (key == "workspace_host_bytes") w.workspace_host_bytes = val;
    else if (key == "free_bytes") w.free_bytes = val;
    else if (key == "total_bytes") w.total_bytes = val;
    else if (key == "generate_s") w.generate_s = val;
    else if (key == "warmup_s") w.warmup_s = val;
    else if (key == "residual_s") w.residual_s = val;
  }
  return true;
}

int worker_main(const Options& o) {
  WorkerOut w;
  print_header(o);
  try {
    run_worker(o, w);
  } catch (const std::exception& e) {
    w.error = std::string("GPU ") + std::to_string(o.worker_gpu) + ": " + e.what();
    std::fprintf(stderr, "%s: %s\n", kTool, w.error.c_str());
  }
  // A worker refused before the barrier must still release it, or the others would wait for it.
  if (!w.refused.empty() || (!w.error.empty() && o.ready_fd >= 0)) {
    if (o.ready_fd >= 0) close(o.ready_fd);
  }
  for (const auto& r : w.runs) print_run(w.n, r, o.threshold);
  if (w.refused.empty()) print_footer(w.runs);
  std::fflush(stdout);
  try {
    write_file_atomic(o.worker_result, worker_text(w));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kTool, e.what());
    return kExitCallFailed;
  }
  if (!w.refused.empty()) {
    std::fprintf(stderr, "%s: %s\n", kTool, w.refused.c_str());
    return kExitUsage;
  }
  if (!w.error.empty()) return kExitCallFailed;
  for (const auto& r : w.runs)
    if (!r.passed) return kExitVerifyFailed;
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------
// Parent: one worker process per GPU, all released together.
struct GpuResult {
  int gpu = -1;
  WorkerOut out;
  int status = -1;
  std::string stdout_text;
};

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kTiming =
    "one cudaEvent pair per run around cusolverDnXgetrf + cusolverDnXgetrs on the GPU's stream, after an untimed "
    "warm-up factorisation and a barrier so every GPU's timed run starts together; rate = HPL's flop count "
    "(2/3 N^3 + 3/2 N^2) / time; with --runs > 1 the metrics use each GPU's median run";

std::string document(const Options& o, const Invocation& run,
                     const std::vector<DeviceInfo>& devices, const std::vector<GpuResult>& results,
                     const std::vector<std::string>& errors) {
  std::vector<std::string> failures;
  long checked = 0;
  std::vector<double> per_gpu, residual_per_gpu;
  double residual_max = 0;
  bool complete = !results.empty();
  for (const auto& g : results) {
    std::vector<double> rates;
    double residual_gpu = 0;
    for (size_t i = 0; i < g.out.runs.size(); ++i) {
      const auto& r = g.out.runs[i];
      ++checked;
      if (!r.passed) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "GPU %d run %zu N=%lld: scaled residual %.6g is not below %.1f%s", g.gpu, i + 1,
                      g.out.n, r.residual, o.threshold,
                      r.info != 0 ? (" (getrf info " + std::to_string(r.info) + ": U is singular)").c_str() : "");
        failures.push_back(buf);
      }
      rates.push_back(r.gflops / 1e3);
      residual_max = std::isnan(r.residual) ? NAN : std::max(residual_max, r.residual);
      residual_gpu = std::isnan(r.residual) ? NAN : std::max(residual_gpu, r.residual);
    }
    if (rates.empty()) complete = false;
    per_gpu.push_back(median(rates));
    residual_per_gpu.push_back(residual_gpu);
  }
  std::vector<Metric> metrics;
  Waived waived;
  GpuMetrics gpu_metrics;  // each GPU's median rate and largest residual
  if (complete && errors.empty()) {
    for (size_t k = 0; k < results.size(); ++k) {
      gpu_metrics.push_back({results[k].gpu, "tflops_min", "TFLOP/s", "higher", per_gpu[k]});
      gpu_metrics.push_back({results[k].gpu, "residual_max", "ratio", "lower", residual_per_gpu[k]});
    }
    double sum = 0;
    for (double v : per_gpu) sum += v;
    metrics.push_back({"tflops_min", "TFLOP/s", "higher",
                       "slowest GPU's HPL-style LU rate (cuSOLVER getrf+getrs, FP64), every GPU running at once", min_of(per_gpu)});
    metrics.push_back({"tflops_sum", "TFLOP/s", "higher", "node sum of the GPUs' HPL-style LU rates", sum});
    metrics.push_back({"residual_max", "ratio", "lower",
                       "largest HPL scaled residual ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N) over GPUs and runs",
                       residual_max});
  }

  Json j;
  begin_gpu_document(j, kTool, run, kTiming, devices, [](Json& c) {
    int sv = 0;
    if (cusolverGetVersion(&sv) == CUSOLVER_STATUS_SUCCESS) c.kv("cusolver_version", sv); else c.kv_null("cusolver_version");
  });
  j.key("parameters").begin_object();
  if (o.n > 0) j.kv("n", o.n); else j.kv_null("n");
  j.kv("mem_fraction", o.mem_fraction).kv("align", o.align).kv("runs", o.runs).kv("seed", o.seed);
  j.kv("getrf_algorithm", o.alg).kv("threshold", o.threshold).kv("eps", kEps).kv("warmup_n", o.warmup_n);
  j.kv("inject_error", o.inject_error).kv("memory_margin_bytes", static_cast<unsigned long long>(kMargin));
  j.kv("generator", "x' = 6364136223846793005 x + 1 mod 2^64 (HPL's), element (i,j) of [A b] from state j*N+i+1, "
                    "mapped to (-0.5,0.5] as HPL_rand");
  j.kv("calls", "cusolverDnXgetrf (CUDA_R_64F, partial pivoting, int64 pivots) + cusolverDnXgetrs (1 rhs); residual: "
                "cublasDgemv on the regenerated A; default cuSOLVER math mode");
  j.key("gpus").begin_array();
  for (const auto& g : results) j.value(g.gpu);
  j.end_array();
  j.end_object();
  j.key("results").begin_object();
  j.key("per_gpu").begin_array();
  for (size_t k = 0; k < results.size(); ++k) {
    const auto& g = results[k];
    j.begin_object();
    j.kv("gpu", g.gpu).kv("n", g.out.n).kv("matrix_bytes", g.out.matrix_bytes);
    j.kv("workspace_device_bytes", g.out.workspace_device_bytes).kv("workspace_host_bytes", g.out.workspace_host_bytes);
    j.kv("free_bytes", g.out.free_bytes).kv("total_bytes", g.out.total_bytes);
    j.kv("generate_s", g.out.generate_s).kv("warmup_s", g.out.warmup_s).kv("residual_s", g.out.residual_s);
    j.kv("tflops_median", per_gpu.size() > k ? per_gpu[k] : NAN);
    j.kv("exit_status", g.status);
    j.kv_objects("runs", g.out.runs, [&](const auto& r) {
      j.kv("seconds", r.seconds).kv("gflops", r.gflops).kv("tflops", r.gflops / 1e3).kv("scaled_residual", r.residual);
      j.kv("norm_a_inf", r.norm_a).kv("norm_x_inf", r.norm_x).kv("norm_b_inf", r.norm_b).kv("norm_r_inf", r.norm_r);
      j.kv("getrf_info", r.info).kv("passed", r.passed);
    });
    if (!g.out.refused.empty()) j.kv("refused", g.out.refused);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return close_document(j, metrics, waived, failures.empty() && errors.empty() && checked > 0, checked, failures,
                        errors, gpu_metrics);
}

int parent_main(const Options& o, const Invocation& run) {
  std::vector<DeviceInfo> devices;
  std::vector<GpuResult> results;
  std::vector<std::string> errors;
  auto write_doc = [&]() {
    return write_document(o.output, kTool, [&] { return document(o, run, devices, results, errors); });
  };
  std::vector<int> ids;
  if (int rc = open_gpus(kTool, o.gpus, errors, write_doc, ids); rc >= 0) return rc;
  try {
    for (int id : ids) devices.push_back(device_info(id));
  } catch (const std::exception& e) {
    errors.push_back(e.what());
    write_doc();
    return kExitCallFailed;
  }

  // A private directory for the workers' outputs.
  const char* tmpenv = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmpenv && *tmpenv ? tmpenv : "/tmp") + "/gpuaccept-hplstyle.XXXXXX";
  std::vector<char> tbuf(tmpl.begin(), tmpl.end());
  tbuf.push_back('\0');
  if (!mkdtemp(tbuf.data())) {
    errors.push_back("cannot create a directory from " + tmpl + ": " + std::strerror(errno));
    write_doc();
    return kExitCallFailed;
  }
  const std::string dir = tbuf.data();

  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) {
    errors.push_back(std::string("pipe: ") + std::strerror(errno));
    write_doc();
    return kExitCallFailed;
  }
  std::vector<pid_t> pids;
  for (int id : ids) {
    GpuResult g;
    g.gpu = id;
    results.push_back(g);
    std::vector<std::string> args = {"/proc/self/exe"};
    auto add = [&](const std::string& k, const std::string& v) {
      args.push_back("--" + k);
      args.push_back(v);
    };
    add("worker-gpu", std::to_string(id));
    add("worker-result", dir + "/gpu" + std::to_string(id) + ".result");
    add("ready-fd", std::to_string(ready[1]));
    add("go-fd", std::to_string(go[0]));
    if (o.n > 0) add("n", std::to_string(o.n));
    char frac[32];
    std::snprintf(frac, sizeof frac, "%.17g", o.mem_fraction);
    add("mem-fraction", frac);
    add("align", std::to_string(o.align));
    add("runs", std::to_string(o.runs));
    add("alg", std::to_string(o.alg));
    add("seed", std::to_string(o.seed));
    char thr[32];
    std::snprintf(thr, sizeof thr, "%.17g", o.threshold);
    add("threshold", thr);
    add("warmup-n", std::to_string(o.warmup_n));
    if (o.inject_error) args.push_back("--inject-error");
    std::vector<char*> cargv;
    for (auto& s : args) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string out_path = dir + "/gpu" + std::to_string(id) + ".out";
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addclose(&fa, ready[0]);
    posix_spawn_file_actions_addclose(&fa, go[1]);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      errors.push_back("GPU " + std::to_string(id) + ": cannot start the worker: " + std::strerror(rc));
      pid = -1;
    }
    pids.push_back(pid);
    std::cerr << "[gpu " << id << "] " << devices[results.size() - 1].name << ", " << devices[results.size() - 1].pci_bus_id
              << ": worker " << pid << "\n";
  }
  close(ready[1]);
  close(go[0]);
  // Release everyone once every worker is ready, or once one has gone (its end of the pipe closes with it).
  size_t got = 0;
  char c;
  while (got < ids.size() && read(ready[0], &c, 1) == 1) ++got;
  close(go[1]);
  close(ready[0]);
  std::cerr << kTool << ": " << got << " of " << ids.size() << " workers ready; timed runs started together\n";

  int rc_all = kExitOk;
  for (size_t k = 0; k < pids.size(); ++k) {
    auto& g = results[k];
    if (pids[k] > 0) {
      int status = 0;
      while (waitpid(pids[k], &status, 0) < 0 && errno == EINTR) {
      }
      g.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    const std::string base = dir + "/gpu" + std::to_string(g.gpu);
    g.stdout_text = read_all(base + ".out");
    std::fputs(g.stdout_text.c_str(), stdout);
    bool have = read_worker(base + ".result", g.out);
    if (!g.out.error.empty()) errors.push_back(g.out.error);
    if (!g.out.refused.empty()) errors.push_back(g.out.refused);
    if (!have && pids[k] > 0)
      errors.push_back("GPU " + std::to_string(g.gpu) + ": the worker left no result (exit status " +
                       std::to_string(g.status) + ")");
    int st = g.status;
    if (st == kExitUsage && rc_all != kExitCallFailed) rc_all = kExitUsage;
    else if (st == kExitVerifyFailed && rc_all == kExitOk) rc_all = kExitVerifyFailed;
    else if (st != kExitOk && st != kExitUsage && st != kExitVerifyFailed) rc_all = kExitCallFailed;
    std::remove((base + ".out").c_str());
    std::remove((base + ".result").c_str());
  }
  rmdir(dir.c_str());
  std::printf("\n%-4s %9s %12s %10s %14s %s\n", "gpu", "N", "seconds", "TFLOP/s", "residual", "verdict");
  double sum = 0, mn = INFINITY;
  for (const auto& g : results)
    for (const auto& r : g.out.runs) {
      std::printf("%-4d %9lld %12.3f %10.2f %14.6g %s\n", g.gpu, g.out.n, r.seconds, r.gflops / 1e3, r.residual,
                  r.passed ? "PASSED" : "FAILED");
    }
  for (const auto& g : results) {
    std::vector<double> rates;
    for (const auto& r : g.out.runs) rates.push_back(r.gflops / 1e3);
    if (!rates.empty()) {
      sum += median(rates);
      mn = std::min(mn, median(rates));
    }
  }
  if (std::isfinite(mn)) std::printf("node: %.2f TFLOP/s sum, %.2f TFLOP/s slowest GPU\n", sum, mn);
  std::fflush(stdout);
  if (!write_doc()) return kExitCallFailed;
  return rc_all;
}

}  // namespace

int run_tool(const Options& o, const Invocation& run) {
  if (o.worker_gpu >= 0) {
    if (o.worker_result.empty()) {
      std::fprintf(stderr, "%s: --worker-gpu needs --worker-result\n", kTool);
      return kExitUsage;
    }
    return worker_main(o);
  }
  return parent_main(o, run);
}

int main(int argc, char** argv) {
  return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
}
