// gpuaccept's GPU-resident HPL: HPL 2.3's HPL_pdmatgen and HPL_pdgesv for one rank on one GPU, linked in front of
// netlib's libhpl.a (roles/gpuaccept_hpl builds xhpl with this object first on the link line), so that HPL's own
// driver (HPL_pddriver, HPL_pdinfo), HPL.dat, timer, result rows and residual check stay HPL's.
//
// What changes:
// - HPL_pdmatgen generates HPL's matrix [A b] on the GPU (gpuaccept_hpl_lcg.h: the same sequence, entry by entry)
//   and keeps it there. After a solve, the second call (HPL_pdtest regenerates [A b] for its residual check) also
//   copies it into HPL's host array, so the check reads the same matrix through HPL's own host code.
// - HPL_pdgesv factors [A b] in place on the GPU, right-looking, NB columns at a time: the panel by cuSOLVER's
//   getrf (partial pivoting over the whole column), its row interchanges applied to the columns to the right by
//   one kernel, the block row by cuBLAS DTRSM and the trailing matrix by cuBLAS DGEMM. With HPL.dat's look-ahead
//   depth of 1 or more, the next panel's columns are updated and factored on a high-priority stream while the
//   rest of the trailing update runs (depth 1; deeper settings run as 1). b is the matrix's last column, so the
//   forward solve happens with the factorisation, as in HPL; the back-solve U x = y runs on the GPU (DTRSV) and
//   x is copied into HPL's solution vector. Everything HPL_pdgesv does is inside HPL's timer.
// - One process, P = Q = 1: any other grid stops with a message (HPL_pabort).
//
// Build: nvcc -c -I<HPL>/include -I<MPI include> gpuaccept_hpl_gpu.cu; link xhpl with this object before libhpl.a
// and -lcusolver -lcublas -lcudart -lstdc++ (Make.gpuaccept's GPUobj and LAlib).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <mpi.h>  // before HPL's C headers: MPI's own C++ declarations cannot sit inside extern "C"

#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" {
#include "hpl.h"
}

#include "gpuaccept_hpl_lcg.h"

namespace {

void cuda_check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    HPL_pabort(line, "gpuaccept HPL", "%s: %s", what, cudaGetErrorString(e));
  }
}
void blas_check(cublasStatus_t s, const char* what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) HPL_pabort(line, "gpuaccept HPL", "%s: cuBLAS status %d", what, (int)s);
}
void solver_check(cusolverStatus_t s, const char* what, int line) {
  if (s != CUSOLVER_STATUS_SUCCESS) HPL_pabort(line, "gpuaccept HPL", "%s: cuSOLVER status %d", what, (int)s);
}
#define CUDA(x) cuda_check((x), #x, __LINE__)
#define BLAS(x) blas_check((x), #x, __LINE__)
#define SOLVER(x) solver_check((x), #x, __LINE__)

// The matrix on the GPU, kept from HPL_pdmatgen to HPL_pdgesv.
struct DeviceMatrix {
  double* a = nullptr;
  size_t ld = 0;  // leading dimension on the GPU (M rounded up to 32 entries)
  int m = 0, n = 0;
  bool solved = false;  // HPL_pdgesv ran since the last generation: the next generation feeds HPL's check
};
DeviceMatrix g_mat;

__global__ void generate(double* a, size_t ld, int m, int n, uint64_t first) {
  // One thread per 64 consecutive rows of one column: one jump, then 64 steps of the sequence.
  const int chunks = (m + 63) / 64;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)chunks * n) return;
  const int j = (int)(t / chunks), i0 = (int)(t % chunks) * 64;
  uint64_t x = gpuaccept_hpl_jump(first, (uint64_t)j * (uint64_t)m + (uint64_t)i0);
  const int i1 = i0 + 64 < m ? i0 + 64 : m;
  double* col = a + (size_t)j * ld;
  for (int i = i0; i < i1; ++i) {
    col[i] = gpuaccept_hpl_value(x);
    x = GPUACCEPT_HPL_MULT * x + GPUACCEPT_HPL_IADD;
  }
}

// Applies one panel's row interchanges, given as the rows they move (dst[t] receives the old row src[t]), to the
// columns [c0, c0 + gridDim.x): one block per column reads every moved entry before writing any.
__global__ void swap_rows(double* a, size_t ld, int c0, const int* src, const int* dst, int count) {
  constexpr int kPerThread = 16;
  double* col = a + (size_t)(c0 + blockIdx.x) * ld;
  double v[kPerThread];
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    const int t = threadIdx.x + r * blockDim.x;
    if (t < count) v[r] = col[src[t]];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    const int t = threadIdx.x + r * blockDim.x;
    if (t < count) col[dst[t]] = v[r];
  }
}
constexpr int kSwapThreads = 256;  // with kPerThread 16: up to 4096 moved rows, 2 NB for NB <= 2048

}  // namespace

extern "C" void HPL_pdmatgen(const HPL_T_grid* GRID, const int M, const int N, const int NB, double* A,
                             const int LDA, const int ISEED) {
  (void)NB;
  int nprow, npcol, myrow, mycol;
  (void)HPL_grid_info(GRID, &nprow, &npcol, &myrow, &mycol);
  if (nprow * npcol != 1) {
    HPL_pabort(__LINE__, "HPL_pdmatgen", "gpuaccept's GPU HPL runs one process (P = Q = 1); HPL.dat asks %d x %d",
               nprow, npcol);
  }
  if (M <= 0 || N <= 0) return;
  const size_t ld = ((size_t)M + 31) / 32 * 32;
  if (g_mat.a == nullptr || g_mat.ld != ld || g_mat.n != N) {
    if (g_mat.a != nullptr) CUDA(cudaFree(g_mat.a));
    g_mat.a = nullptr;
    const size_t bytes = ld * (size_t)N * sizeof(double);
    const cudaError_t e = cudaMalloc(&g_mat.a, bytes);
    if (e != cudaSuccess) {
      size_t free_b = 0, total_b = 0;
      cudaGetLastError();
      cudaMemGetInfo(&free_b, &total_b);
      HPL_pabort(__LINE__, "HPL_pdmatgen", "cannot keep the %d x %d matrix on the GPU: %.2f GB asked, %.2f GB free "
                 "of %.2f (lower N in HPL.dat)", M, N, bytes / 1e9, free_b / 1e9, total_b / 1e9);
    }
  }
  g_mat.ld = ld;
  g_mat.m = M;
  g_mat.n = N;
  const long long threads = (long long)((M + 63) / 64) * N;
  generate<<<(unsigned)((threads + 255) / 256), 256>>>(g_mat.a, ld, M, N, gpuaccept_hpl_first(ISEED));
  CUDA(cudaGetLastError());
  if (g_mat.solved) {  // HPL_pdtest's check: the same matrix in HPL's host array
    CUDA(cudaMemcpy2D(A, (size_t)LDA * sizeof(double), g_mat.a, ld * sizeof(double), (size_t)M * sizeof(double),
                      (size_t)N, cudaMemcpyDeviceToHost));
  }
  CUDA(cudaDeviceSynchronize());
  g_mat.solved = false;
}

namespace {

// The solver's CUDA objects, made once per HPL_pdgesv call (outside nothing: HPL times all of it).
struct Solver {
  cudaStream_t main_s = nullptr, ahead_s = nullptr;
  cublasHandle_t main_h = nullptr, ahead_h = nullptr;
  cusolverDnHandle_t solver = nullptr;
  double* work = nullptr;
  int* ipiv = nullptr;        // device: the panels' pivots, 1-based within each panel
  int* info = nullptr;        // device: one getrf info per panel
  int* moves = nullptr;       // device: two buffers of (src[2 nb], dst[2 nb])
  int* host_ipiv = nullptr;   // pinned
  int* host_moves = nullptr;  // pinned, two buffers as on the device
  std::vector<cudaEvent_t> panel_done, moves_ready, main_done;

  ~Solver() {
    for (auto* v : {&panel_done, &moves_ready, &main_done})
      for (cudaEvent_t e : *v) cudaEventDestroy(e);
    cudaFree(work);
    cudaFree(ipiv);
    cudaFree(info);
    cudaFree(moves);
    cudaFreeHost(host_ipiv);
    cudaFreeHost(host_moves);
    if (solver) cusolverDnDestroy(solver);
    if (main_h) cublasDestroy(main_h);
    if (ahead_h) cublasDestroy(ahead_h);
    if (main_s) cudaStreamDestroy(main_s);
    if (ahead_s) cudaStreamDestroy(ahead_s);
  }
};

// The rows one panel's interchanges move: the panel's swaps (row j + i with row j + ipiv[i] - 1, in order) as
// one permutation of the rows they touch. cur is the identity on entry and on return.
int panel_moves(const int* ipiv, int j, int jb, std::vector<int>& cur, std::vector<int>& touched, int* src,
                int* dst) {
  touched.clear();
  for (int i = 0; i < jb; ++i) {
    const int r = j + i, p = j + ipiv[i] - 1;
    if (p == r) continue;
    if (cur[r] == r) touched.push_back(r);
    if (cur[p] == p) touched.push_back(p);
    const int t = cur[r];
    cur[r] = cur[p];
    cur[p] = t;
  }
  int count = 0;
  for (int r : touched) {
    if (cur[r] != r) {
      src[count] = cur[r];
      dst[count] = r;
      ++count;
    }
  }
  for (int r : touched) cur[r] = r;
  return count;
}

// Row interchanges, DTRSM and DGEMM of one panel (rows [j, n), columns [j, j + jb)) on the columns [c0, c1).
void update(cublasHandle_t h, cudaStream_t s, double* a, size_t ld, int n, int j, int jb, int c0, int c1,
            const int* src, const int* dst, int count) {
  if (c1 <= c0) return;
  if (count > 0) {
    swap_rows<<<(unsigned)(c1 - c0), kSwapThreads, 0, s>>>(a, ld, c0, src, dst, count);
    CUDA(cudaGetLastError());
  }
  const double one = 1.0, minus_one = -1.0;
  double* l11 = a + (size_t)j * ld + j;
  double* u12 = a + (size_t)c0 * ld + j;
  BLAS(cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, jb, c1 - c0, &one,
                   l11, (int)ld, u12, (int)ld));
  const int rows = n - j - jb;
  if (rows > 0) {
    BLAS(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, rows, c1 - c0, jb, &minus_one, l11 + jb, (int)ld, u12, (int)ld,
                     &one, a + (size_t)c0 * ld + j + jb, (int)ld));
  }
}

}  // namespace

extern "C" void HPL_pdgesv(HPL_T_grid* GRID, HPL_T_palg* ALGO, HPL_T_pmat* A) {
  (void)GRID;
  const int n = A->n, nb = A->nb;
  A->info = 0;
  if (n <= 0) return;
  if (g_mat.a == nullptr || g_mat.m != n || g_mat.n != n + 1) {
    HPL_pabort(__LINE__, "HPL_pdgesv", "no %d x %d matrix on the GPU (HPL_pdmatgen must run first)", n, n + 1);
  }
  if (nb <= 0 || 2 * nb > kSwapThreads * 16) {
    HPL_pabort(__LINE__, "HPL_pdgesv", "NB %d: gpuaccept's GPU HPL takes 1 <= NB <= %d", nb, kSwapThreads * 8);
  }
  const bool look_ahead = ALGO->depth >= 1;
  double* a = g_mat.a;
  const size_t ld = g_mat.ld;
  const int panels = (n + nb - 1) / nb;

  Solver s;
  int lo = 0, hi = 0;
  CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CUDA(cudaStreamCreateWithPriority(&s.main_s, cudaStreamNonBlocking, lo));
  CUDA(cudaStreamCreateWithPriority(&s.ahead_s, cudaStreamNonBlocking, look_ahead ? hi : lo));
  BLAS(cublasCreate(&s.main_h));
  BLAS(cublasCreate(&s.ahead_h));
  BLAS(cublasSetStream(s.main_h, s.main_s));
  BLAS(cublasSetStream(s.ahead_h, look_ahead ? s.ahead_s : s.main_s));
  SOLVER(cusolverDnCreate(&s.solver));
  SOLVER(cusolverDnSetStream(s.solver, look_ahead ? s.ahead_s : s.main_s));
  int lwork = 0;
  SOLVER(cusolverDnDgetrf_bufferSize(s.solver, n, nb < n ? nb : n, a, (int)ld, &lwork));
  CUDA(cudaMalloc(&s.work, (size_t)lwork * sizeof(double)));
  CUDA(cudaMalloc(&s.ipiv, (size_t)n * sizeof(int)));
  CUDA(cudaMalloc(&s.info, (size_t)panels * sizeof(int)));
  CUDA(cudaMemsetAsync(s.info, 0, (size_t)panels * sizeof(int), s.main_s));
  CUDA(cudaMalloc(&s.moves, (size_t)8 * nb * sizeof(int)));
  CUDA(cudaMallocHost(&s.host_ipiv, (size_t)n * sizeof(int)));
  CUDA(cudaMallocHost(&s.host_moves, (size_t)8 * nb * sizeof(int)));
  for (auto* v : {&s.panel_done, &s.moves_ready, &s.main_done}) {
    v->resize(panels);
    for (cudaEvent_t& e : *v) CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  std::vector<int> cur(n), touched;
  for (int i = 0; i < n; ++i) cur[i] = i;
  CUDA(cudaStreamSynchronize(s.main_s));

  cudaStream_t ahead = look_ahead ? s.ahead_s : s.main_s;
  cublasHandle_t ahead_h = look_ahead ? s.ahead_h : s.main_h;
  auto factor = [&](int k) {  // panel k on the look-ahead stream, its pivots to the host
    const int j = k * nb, jb = n - j < nb ? n - j : nb;
    SOLVER(cusolverDnDgetrf(s.solver, n - j, jb, a + (size_t)j * ld + j, (int)ld, s.work, s.ipiv + j, s.info + k));
    CUDA(cudaMemcpyAsync(s.host_ipiv + j, s.ipiv + j, (size_t)jb * sizeof(int), cudaMemcpyDeviceToHost, ahead));
    CUDA(cudaEventRecord(s.panel_done[k], ahead));
  };

  factor(0);
  for (int k = 0; k < panels; ++k) {
    const int j = k * nb, jb = n - j < nb ? n - j : nb;
    const int next = j + jb, next_jb = n - next < nb ? n - next : nb;  // next_jb <= 0: no next panel
    CUDA(cudaEventSynchronize(s.panel_done[k]));
    int* hm = s.host_moves + (size_t)(k % 2) * 4 * nb;
    int* dm = s.moves + (size_t)(k % 2) * 4 * nb;
    const int count = panel_moves(s.host_ipiv + j, j, jb, cur, touched, hm, hm + 2 * nb);
    CUDA(cudaMemcpyAsync(dm, hm, (size_t)4 * nb * sizeof(int), cudaMemcpyHostToDevice, ahead));
    CUDA(cudaEventRecord(s.moves_ready[k], ahead));
    int main_from = next;
    if (next_jb > 0) {  // the next panel's columns first, then the next panel itself
      if (k > 0) CUDA(cudaStreamWaitEvent(ahead, s.main_done[k - 1], 0));
      update(ahead_h, ahead, a, ld, n, j, jb, next, next + next_jb, dm, dm + 2 * nb, count);
      factor(k + 1);
      main_from = next + next_jb;
    }
    // The rest of the trailing matrix and b (column n).
    CUDA(cudaStreamWaitEvent(s.main_s, s.moves_ready[k], 0));
    update(s.main_h, s.main_s, a, ld, n, j, jb, main_from, n + 1, dm, dm + 2 * nb, count);
    CUDA(cudaEventRecord(s.main_done[k], s.main_s));
  }
  // Back-solve U x = y (y: the last column, L^-1 P b), then x into HPL's solution vector.
  CUDA(cudaStreamWaitEvent(s.main_s, s.panel_done[panels - 1], 0));
  BLAS(cublasDtrsv(s.main_h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, a, (int)ld,
                   a + (size_t)n * ld, 1));
  CUDA(cudaMemcpyAsync(A->X, a + (size_t)n * ld, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, s.main_s));
  std::vector<int> info(panels);
  CUDA(cudaMemcpyAsync(info.data(), s.info, (size_t)panels * sizeof(int), cudaMemcpyDeviceToHost, s.main_s));
  CUDA(cudaStreamSynchronize(s.main_s));
  CUDA(cudaDeviceSynchronize());
  for (int k = 0; k < panels; ++k) {
    if (info[k] > 0) {  // getrf's first zero pivot, 1-based in the panel: HPL's info is the global column
      A->info = k * nb + info[k];
      break;
    }
  }
  g_mat.solved = true;
}
