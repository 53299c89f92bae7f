// gpuaccept's GPU-resident HPL: HPL 2.3's HPL_pdmatgen and HPL_pdgesv with one GPU per MPI rank, linked in front
// of netlib's libhpl.a (roles/gpuaccept_hpl builds xhpl with this object first on the link line), so that HPL's
// own driver (HPL_pddriver, HPL_pdinfo), HPL.dat, timer, result rows and residual check stay HPL's.
//
// Any P x Q grid of HPL.dat: HPL's two-dimensional block-cyclic layout, NB x NB blocks dealt out to P process
// rows and Q process columns, one rank (one GPU) per process. 1 x Q (every rank holds all rows of its columns) and
// P x Q with P > 1 run two solvers sharing the kernels below; 1 x Q is the default of the GpuHplCuda check.
//
// What changes:
// - HPL_pdmatgen generates each rank's block of HPL's matrix [A b] on its GPU (gpuaccept_hpl_lcg.h: the same
//   global matrix, entry by entry, on any grid) and keeps it there. HPL's host array is left untouched, apart from
//   b when HPL_pdtest regenerates [A b] for its residual check.
// - HPL_pdgesv factors [A b] in place on the GPUs, right-looking, NB columns at a time, with partial pivoting over
//   each whole column. b is the matrix's last column, so the forward solve happens with the factorisation, as in
//   HPL; everything HPL_pdgesv does is inside HPL's timer.
//   1 x Q: the panel's owner factors it with cuSOLVER's getrf and, with Q > 1, broadcasts the factored panel and
//   its pivots to the other ranks: the pivots by MPI_Bcast on HPL's row communicator, the panel GPU to GPU by NCCL
//   where built with -DGPUACCEPT_HPL_NCCL (NVLink where the GPUs have it), else through pinned host memory and
//   MPI_Bcast. Every rank applies the pivots' row interchanges to its own columns with one kernel, then cuBLAS
//   DTRSM (block row) and DGEMM (trailing matrix).
//   P x Q: the panel's process column gathers it on the rank that holds its diagonal block (rows grouped by process
//   row, that row first, so that getrf's first NB rows are the diagonal block), which factors it with getrf and
//   broadcasts the factored panel and its pivots to every rank. The interchanges, the same on every process column,
//   move rows between the process rows of a column (HPL's swap semantics, the rows that move sent rank to rank);
//   the diagonal block's process row computes the block row U by DTRSM and broadcasts it down its process column;
//   every rank updates its block of the trailing matrix by DGEMM with its rows of the panel and U.
//   With HPL.dat's look-ahead depth of 1 or more, the next panel's columns are updated and the next panel factored
//   on a high-priority stream while the rest of the trailing update runs, and the next panel's broadcast happens
//   while the GPUs update (depth 1; deeper settings run as 1). The back-solve U x = y runs on the GPUs block
//   column by block column (DTRSV on the diagonal block, DGEMV above it), y passed from process column to process
//   column; the ranks of each block column's process column copy its part of x into HPL's solution vector, which
//   every process row then holds, as HPL_pdtrsv leaves it.
//   NCCL (built with -DGPUACCEPT_HPL_NCCL, every rank on a GPU of its own, GPUACCEPT_HPL_BCAST not "mpi") moves
//   the panel, the rows and U GPU to GPU; otherwise they go through pinned host memory by MPI (the same results,
//   slower). NCCL_NVLS_ENABLE is set to 0 before the first NCCL call (NVLink SHARP/multicast off) unless
//   GPUACCEPT_HPL_NVLS=1 asks for NCCL's own choice; rank 0 prints the grid, the transport and that value on
//   stderr ("gpuaccept HPL: grid ..."), which the GpuHplCuda check records.
// - HPL_pdtest's residual check reads the regenerated matrix through HPL_pdlange and HPL_dgemv; xhpl is linked
//   with -Wl,--wrap for both (Make.gpuaccept), and the wrappers compute the norms and A x on the GPU when they
//   are handed HPL's host matrix, and call HPL's own code for anything else. The host's memory then holds no
//   copy of A, so N is bounded by the GPUs' memory, not the host's.
//
// GPU choice: the rank's node-local index modulo the GPUs it sees (gpuaccept-hpl-rank.sh shows each rank one).
//
// Build: nvcc -c -I<HPL>/include -I<MPI include> gpuaccept_hpl_gpu.cu; link xhpl with this object before libhpl.a,
// -Wl,--wrap=HPL_pdlange,--wrap=HPL_dgemv, and -lcusolver -lcublas -lcudart -lstdc++ (Make.gpuaccept's GPUobj
// and LAlib). tests/test_hpl_build.py also compiles it as plain C++ against tests/native/cuda_host (host stand-ins
// for the CUDA, cuBLAS, cuSOLVER and NCCL calls below) and runs HPL's driver with it on the CPU over several grids.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <mpi.h>  // before HPL's C headers: MPI's own C++ declarations cannot sit inside extern "C"
#ifdef GPUACCEPT_HPL_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "hpl.h"
}

#include "gpuaccept_hpl_lcg.h"

// Kernel launches, in one form so that the host stand-ins (tests/native/cuda_host) can run them on the CPU; the
// kernels that synchronise their threads (__syncthreads) go through GPUACCEPT_LAUNCH_SYNC.
#ifndef GPUACCEPT_LAUNCH
#define GPUACCEPT_LAUNCH(kernel, blocks, threads, stream) kernel<<<(blocks), (threads), 0, (stream)>>>
#define GPUACCEPT_LAUNCH_SYNC(kernel, blocks, threads, stream) kernel<<<(blocks), (threads), 0, (stream)>>>
#endif

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
#ifdef GPUACCEPT_HPL_NCCL
void nccl_check(ncclResult_t r, const char* what, int line) {
  if (r != ncclSuccess) HPL_pabort(line, "gpuaccept HPL", "%s: %s", what, ncclGetErrorString(r));
}
#define NCCL(x) nccl_check((x), #x, __LINE__)
#endif
#define CUDA(x) cuda_check((x), #x, __LINE__)
#define BLAS(x) blas_check((x), #x, __LINE__)
#define SOLVER(x) solver_check((x), #x, __LINE__)

// This rank's block of [A b] on its GPU, kept from HPL_pdmatgen to HPL_pdgesv and HPL_pdtest's check.
struct DeviceMatrix {
  double* a = nullptr;
  size_t ld = 0;  // leading dimension on the GPU (mloc rounded up to 32 entries)
  int m = 0, n = 0, nb = 0;  // the global matrix and its blocking
  int mloc = 0;              // this rank's rows of the global m
  int cols = 0;              // this rank's columns of the global n
  const double* host = nullptr;  // HPL's host array this matrix stands for (the wrappers' key)
  int host_ld = 0;
};
DeviceMatrix g_mat;
cublasHandle_t g_check_blas = nullptr;  // the residual check's handle, made on first use

int g_device = -1;  // the GPU this rank uses, chosen once

void choose_device(MPI_Comm all) {  // all: the grid's ranks (HPL may leave some out)
  if (g_device >= 0) return;
  MPI_Comm node;
  int local = 0, count = 0;
  MPI_Comm_split_type(all, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  CUDA(cudaGetDeviceCount(&count));
  g_device = local % count;
  CUDA(cudaSetDevice(g_device));
  char bus[32] = "?";
  cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), g_device);
  int rank = 0;
  MPI_Comm_rank(all, &rank);
  std::fprintf(stderr, "gpuaccept HPL: rank %d (node-local %d) on GPU %d of %d visible, PCI %s\n", rank, local,
               g_device, count, bus);
}

// One thread per 64 consecutive local rows of one local column: one jump, then steps of the sequence (a jump
// again where a block of NB rows starts on a grid of several process rows, whose next global row is elsewhere).
__global__ void generate(double* a, size_t ld, int m, int mloc, int cols, int nb, int p, int nprow, int q,
                         int npcol, uint64_t first) {
  const int chunks = (mloc + 63) / 64;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (long long)chunks * cols) return;
  const int jl = (int)(t / chunks), i0 = (int)(t % chunks) * 64;
  const long long j = gpuaccept_hpl_global_col(jl, nb, q, npcol);
  const int i1 = i0 + 64 < mloc ? i0 + 64 : mloc;
  double* col = a + (size_t)jl * ld;
  uint64_t x = 0;
  for (int i = i0; i < i1; ++i) {
    if (i == i0 || (nprow > 1 && i % nb == 0)) {
      x = gpuaccept_hpl_jump(first, (uint64_t)j * (uint64_t)m + (uint64_t)gpuaccept_hpl_global_col(i, nb, p, nprow));
    }
    col[i] = gpuaccept_hpl_value(x);
    x = GPUACCEPT_HPL_MULT * x + GPUACCEPT_HPL_IADD;
  }
}

// Applies one panel's row interchanges, given as the rows they move (dst[t] receives the old row src[t]), to the
// columns [c0, c0 + gridDim.x): one block per column reads every moved entry before writing any.
constexpr int kSwapThreads = 256, kSwapPerThread = 16;
constexpr int kMaxMoves = kSwapThreads * kSwapPerThread;  // a panel moves at most 2 NB rows: NB <= kMaxMoves / 2
__global__ void swap_rows(double* a, size_t ld, int c0, const int* src, const int* dst, int count) {
  double* col = a + (size_t)(c0 + blockIdx.x) * ld;
  double v[kSwapPerThread];
#pragma unroll
  for (int r = 0; r < kSwapPerThread; ++r) {
    const int t = threadIdx.x + r * blockDim.x;
    if (t < count) v[r] = col[src[t]];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kSwapPerThread; ++r) {
    const int t = threadIdx.x + r * blockDim.x;
    if (t < count) col[dst[t]] = v[r];
  }
}

// The rows idx[0, count) of the columns [c0, c0 + gridDim.x) of a, out of the matrix into a packed count x
// columns block (gather_rows) or back into it (scatter_rows): one block per column.
__global__ void gather_rows(const double* a, size_t ld, int c0, const int* idx, int count, double* out) {
  const double* col = a + (size_t)(c0 + blockIdx.x) * ld;
  double* o = out + (size_t)blockIdx.x * count;
  for (int t = threadIdx.x; t < count; t += blockDim.x) o[t] = col[idx[t]];
}
__global__ void scatter_rows(double* a, size_t ld, int c0, const int* idx, int count, const double* in) {
  double* col = a + (size_t)(c0 + blockIdx.x) * ld;
  const double* i = in + (size_t)blockIdx.x * count;
  for (int t = threadIdx.x; t < count; t += blockDim.x) col[idx[t]] = i[t];
}

// Column sums (out[c] = sum_i |a(i, c)|, one block per column) and row sums (out[i] = sum_c |a(i, c)|).
__global__ void column_abs_sums(const double* a, size_t ld, int m, double* out) {
  __shared__ double part[256];
  const double* col = a + (size_t)blockIdx.x * ld;
  double s = 0.0;
  for (int i = threadIdx.x; i < m; i += blockDim.x) s += fabs(col[i]);
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
__global__ void row_abs_sums(const double* a, size_t ld, int m, int cols, double* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += fabs(a[(size_t)c * ld + i]);
  out[i] = s;
}

// The columns with global index below g that process column q holds (HPL_numroc with the first block on 0).
int local_columns(int g, int nb, int q, int npcol) { return HPL_numroc(g, nb, nb, q, 0, npcol); }

// ------------------------------------------------------------------------------------------- communication

// A group of ranks that the panel, the moved rows or U travel in: the process row (1 x Q), a process column, or
// the whole grid (P x Q). Its MPI communicator is always there; its NCCL one where NCCL carries the data.
struct Channel {
  MPI_Comm mpi = MPI_COMM_NULL;
  int size = 1, rank = 0;
#ifdef GPUACCEPT_HPL_NCCL
  ncclComm_t nccl = nullptr;
#endif
};

// The communicators of one grid shape, made once per process outside HPL's timer (from HPL_pdmatgen, like
// MPI_Init before it); HPL.dat may list several grids, each its own.
struct GridComms {
  int nprow = 0, npcol = 0, myrow = -1, mycol = -1;
  bool nccl = false;  // GPU to GPU by NCCL; else through pinned host memory by MPI
  Channel row;        // 1 x Q: the process row
  Channel all, col_ahead, col_main;  // P x Q: every rank; the process column, for the look-ahead and the rest
};
std::vector<GridComms*> g_comms;

GridComms* comms_of(const HPL_T_grid* grid) {
  for (GridComms* c : g_comms)
    if (c->nprow == grid->nprow && c->npcol == grid->npcol && c->myrow == grid->myrow && c->mycol == grid->mycol)
      return c;
  return nullptr;
}

// NVLink SHARP (NVLS, multicast) stays off unless asked for: NCCL_NVLS_ENABLE=0 in this process before any NCCL
// call, unless GPUACCEPT_HPL_NVLS=1. Returns the value in effect, for the run's record.
std::string nvls_policy() {
  const char* allow = std::getenv("GPUACCEPT_HPL_NVLS");
  const char* v = std::getenv("NCCL_NVLS_ENABLE");
  if (allow != nullptr && std::string(allow) == "1") return v != nullptr ? v : "unset";
  if (v != nullptr && std::string(v) != "0") {
    std::fprintf(stderr, "gpuaccept HPL: NCCL_NVLS_ENABLE=%s in the environment set to 0 (GPUACCEPT_HPL_NVLS=1 lets "
                 "NCCL use NVLink SHARP)\n", v);
  }
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  return "0";
}

// Whether the data goes GPU to GPU by NCCL: built with it, not turned off (GPUACCEPT_HPL_BCAST=mpi), and every
// rank of the group on a GPU of its own (NCCL refuses two ranks on one GPU; ranks sharing a GPU use MPI).
// Collective over comm; *why says what decided it.
bool nccl_usable(MPI_Comm comm, std::string* why) {
#ifdef GPUACCEPT_HPL_NCCL
  const char* how = std::getenv("GPUACCEPT_HPL_BCAST");
  int size = 0;
  MPI_Comm_size(comm, &size);
  char mine[32] = "";
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  cudaDeviceGetPCIBusId(mine, (int)sizeof(mine), g_device);
  std::string key = std::string(host) + "/" + mine;
  key.resize(96, ' ');
  std::vector<char> all((size_t)size * 96);
  MPI_Allgather(key.data(), 96, MPI_CHAR, all.data(), 96, MPI_CHAR, comm);
  bool distinct = true;
  for (int a = 0; a < size; ++a)
    for (int b = a + 1; b < size; ++b)
      if (std::equal(all.begin() + a * 96, all.begin() + (a + 1) * 96, all.begin() + b * 96)) distinct = false;
  const bool use = distinct && !(how != nullptr && std::string(how) == "mpi");
  *why = use ? "GPU to GPU" : distinct ? "through host memory: GPUACCEPT_HPL_BCAST=mpi"
                                       : "through host memory: ranks share a GPU";
  return use;
#else
  (void)comm;
  *why = "through host memory: built without NCCL";
  return false;
#endif
}

void make_channel(Channel* ch, MPI_Comm comm, bool nccl) {
  ch->mpi = comm;
  MPI_Comm_size(comm, &ch->size);
  MPI_Comm_rank(comm, &ch->rank);
#ifdef GPUACCEPT_HPL_NCCL
  if (nccl && ch->size > 1) {
    ncclUniqueId id;
    if (ch->rank == 0) NCCL(ncclGetUniqueId(&id));
    MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, comm);
    NCCL(ncclCommInitRank(&ch->nccl, ch->size, id, ch->rank));
  }
#else
  (void)nccl;
#endif
}

// The grid's communicators, once per grid shape; rank 0 of the grid says on stderr what carries the data.
void set_up_comms(const HPL_T_grid* grid) {
  if (comms_of(grid) != nullptr) return;
  auto* c = new GridComms;
  c->nprow = grid->nprow;
  c->npcol = grid->npcol;
  c->myrow = grid->myrow;
  c->mycol = grid->mycol;
  g_comms.push_back(c);
  const bool several = grid->nprow * grid->npcol > 1;
  std::string why = "one rank";
  const std::string nvls = nvls_policy();
  if (several) c->nccl = nccl_usable(grid->all_comm, &why);
  if (grid->nprow == 1) {
    if (grid->npcol > 1) make_channel(&c->row, grid->row_comm, c->nccl);
  } else {
    MPI_Comm ahead, main;
    MPI_Comm_dup(grid->col_comm, &ahead);
    MPI_Comm_dup(grid->col_comm, &main);
    make_channel(&c->all, grid->all_comm, c->nccl);
    make_channel(&c->col_ahead, ahead, c->nccl);
    make_channel(&c->col_main, main, c->nccl);
  }
  if (grid->iam == 0) {
    std::fprintf(stderr, "gpuaccept HPL: grid %d x %d, panel broadcast %s (%s), NCCL_NVLS_ENABLE=%s\n", grid->nprow,
                 grid->npcol, !several ? "none" : c->nccl ? "nccl" : "mpi", why.c_str(), nvls.c_str());
  }
}

// MPI counts are ints: large buffers go in pieces of kMpiPiece doubles.
constexpr size_t kMpiPiece = (size_t)1 << 30;

void mpi_bcast_doubles(double* p, size_t count, int root, MPI_Comm comm) {
  for (size_t off = 0; off < count; off += kMpiPiece) {
    MPI_Bcast(p + off, (int)std::min(kMpiPiece, count - off), MPI_DOUBLE, root, comm);
  }
}

// Pinned host memory for the MPI path, grown on demand (the MPI path completes each transfer before it returns).
struct HostStage {
  double* p = nullptr;
  size_t cap = 0;
  double* get(size_t count) {
    if (count > cap) {
      if (p != nullptr) CUDA(cudaFreeHost(p));
      p = nullptr;
      CUDA(cudaMallocHost(&p, count * sizeof(double)));
      cap = count;
    }
    return p;
  }
  ~HostStage() {
    if (p != nullptr) cudaFreeHost(p);
  }
};

// buf (device, count doubles) from the channel's rank root to every rank of it, in order on stream s.
void channel_bcast(const Channel& ch, bool nccl, double* buf, size_t count, int root, cudaStream_t s,
                   HostStage* stage) {
  if (count == 0 || ch.size < 2) return;
#ifdef GPUACCEPT_HPL_NCCL
  if (nccl) {
    NCCL(ncclBroadcast(buf, buf, count, ncclDouble, root, ch.nccl, s));
    return;
  }
#else
  (void)nccl;
#endif
  double* h = stage->get(count);
  if (ch.rank == root) {
    CUDA(cudaMemcpyAsync(h, buf, count * sizeof(double), cudaMemcpyDeviceToHost, s));
    CUDA(cudaStreamSynchronize(s));
  }
  mpi_bcast_doubles(h, count, root, ch.mpi);
  if (ch.rank != root) {
    CUDA(cudaMemcpyAsync(buf, h, count * sizeof(double), cudaMemcpyHostToDevice, s));
    CUDA(cudaStreamSynchronize(s));
  }
}

// One peer's part of an exchange: count doubles of device memory at buf, to or from the channel's rank peer.
struct Part {
  int peer;
  double* buf;
  size_t count;
};

// Sends and receives between ranks of a channel, at most one of each per peer, in order on stream s.
void channel_exchange(const Channel& ch, bool nccl, const std::vector<Part>& sends, const std::vector<Part>& recvs,
                      cudaStream_t s, HostStage* stage) {
#ifdef GPUACCEPT_HPL_NCCL
  if (nccl) {
    if (sends.empty() && recvs.empty()) return;
    NCCL(ncclGroupStart());
    for (const Part& p : sends) NCCL(ncclSend(p.buf, p.count, ncclDouble, p.peer, ch.nccl, s));
    for (const Part& p : recvs) NCCL(ncclRecv(p.buf, p.count, ncclDouble, p.peer, ch.nccl, s));
    NCCL(ncclGroupEnd());
    return;
  }
#else
  (void)nccl;
#endif
  size_t total = 0;
  for (const Part& p : sends) total += p.count;
  for (const Part& p : recvs) total += p.count;
  if (total == 0) return;
  double* h = stage->get(total);
  std::vector<size_t> at;
  size_t off = 0;
  for (const Part& p : sends) {
    CUDA(cudaMemcpyAsync(h + off, p.buf, p.count * sizeof(double), cudaMemcpyDeviceToHost, s));
    at.push_back(off);
    off += p.count;
  }
  for (const Part& p : recvs) {
    at.push_back(off);
    off += p.count;
  }
  CUDA(cudaStreamSynchronize(s));
  std::vector<MPI_Request> req;
  for (size_t r = 0; r < recvs.size(); ++r) {
    for (size_t o = 0, piece = 0; o < recvs[r].count; o += kMpiPiece, ++piece) {
      req.emplace_back();
      MPI_Irecv(h + at[sends.size() + r] + o, (int)std::min(kMpiPiece, recvs[r].count - o), MPI_DOUBLE,
                recvs[r].peer, (int)piece, ch.mpi, &req.back());
    }
  }
  for (size_t r = 0; r < sends.size(); ++r) {
    for (size_t o = 0, piece = 0; o < sends[r].count; o += kMpiPiece, ++piece) {
      req.emplace_back();
      MPI_Isend(h + at[r] + o, (int)std::min(kMpiPiece, sends[r].count - o), MPI_DOUBLE, sends[r].peer, (int)piece,
                ch.mpi, &req.back());
    }
  }
  MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE);
  for (size_t r = 0; r < recvs.size(); ++r) {
    CUDA(cudaMemcpyAsync(recvs[r].buf, h + at[sends.size() + r], recvs[r].count * sizeof(double),
                         cudaMemcpyHostToDevice, s));
  }
  CUDA(cudaStreamSynchronize(s));
}

}  // namespace

extern "C" void HPL_pdmatgen(const HPL_T_grid* GRID, const int M, const int N, const int NB, double* A,
                             const int LDA, const int ISEED) {
  int nprow, npcol, myrow, mycol;
  (void)HPL_grid_info(GRID, &nprow, &npcol, &myrow, &mycol);
  if (M <= 0 || N <= 0) return;
  choose_device(GRID->all_comm);
  set_up_comms(GRID);
  const int mloc = HPL_numroc(M, NB, NB, myrow, 0, nprow);
  const int cols = local_columns(N, NB, mycol, npcol);
  const size_t ld = std::max<size_t>(((size_t)mloc + 31) / 32 * 32, 32);
  if (g_mat.a == nullptr || g_mat.ld != ld || g_mat.cols != cols) {
    if (g_mat.a != nullptr) CUDA(cudaFree(g_mat.a));
    g_mat.a = nullptr;
    const size_t bytes = ld * (size_t)(cols > 0 ? cols : 1) * sizeof(double);
    const cudaError_t e = cudaMalloc(&g_mat.a, bytes);
    if (e != cudaSuccess) {
      size_t free_b = 0, total_b = 0;
      cudaGetLastError();
      cudaMemGetInfo(&free_b, &total_b);
      HPL_pabort(__LINE__, "HPL_pdmatgen", "cannot keep this rank's %d x %d block on GPU %d: %.2f GB asked, "
                 "%.2f GB free of %.2f (lower N in HPL.dat)", mloc, cols, g_device, bytes / 1e9, free_b / 1e9,
                 total_b / 1e9);
    }
  }
  g_mat.ld = ld;
  g_mat.m = M;
  g_mat.n = N;
  g_mat.nb = NB;
  g_mat.mloc = mloc;
  g_mat.cols = cols;
  g_mat.host = A;
  g_mat.host_ld = LDA;
  if (cols > 0 && mloc > 0) {
    const long long threads = (long long)((mloc + 63) / 64) * cols;
    GPUACCEPT_LAUNCH(generate, (unsigned)((threads + 255) / 256), 256, 0)(
        g_mat.a, ld, M, mloc, cols, NB, myrow, nprow, mycol, npcol, gpuaccept_hpl_first(ISEED));
    CUDA(cudaGetLastError());
  }
  // b (HPL_pdtest's [A b], global column N - 1) in HPL's host array too: HPL's check reads and overwrites it.
  const int b = N - 1;
  if (N > M && mloc > 0 && HPL_indxg2p(b, NB, NB, 0, npcol) == mycol) {
    const int lb = local_columns(b, NB, mycol, npcol);
    CUDA(cudaMemcpy(A + (size_t)lb * LDA, g_mat.a + (size_t)lb * ld, (size_t)mloc * sizeof(double),
                    cudaMemcpyDeviceToHost));
  }
  CUDA(cudaDeviceSynchronize());
}

namespace {

// The solver's CUDA objects, made once per HPL_pdgesv call (outside nothing: HPL times all of it).
struct Solver {
  cudaStream_t main_s = nullptr, ahead_s = nullptr;
  cublasHandle_t main_h = nullptr, ahead_h = nullptr;
  cusolverDnHandle_t solver = nullptr;
  double* work = nullptr;
  int* ipiv = nullptr;        // device: the panels' pivots, 1-based within each panel (owned panels)
  int* info = nullptr;        // device: one getrf info per panel
  int* moves = nullptr;       // device: two buffers of (src[2 nb], dst[2 nb])
  int* host_ipiv = nullptr;   // pinned: every panel's pivots (own or broadcast)
  int* host_moves = nullptr;  // pinned, two buffers as on the device
  double* panel[2] = {nullptr, nullptr};       // device: a broadcast panel (Q > 1), rows [j, n), packed
  double* host_panel[2] = {nullptr, nullptr};  // pinned: the panel on its way through MPI (Q > 1, no NCCL)
  double* y = nullptr;        // device: the back-solve's right-hand side
  double* host_y = nullptr;   // pinned: y on its way to the next rank
  std::vector<cudaEvent_t> panel_done, panel_ready, moves_ready, main_done;

  ~Solver() {
    for (auto* v : {&panel_done, &panel_ready, &moves_ready, &main_done})
      for (cudaEvent_t e : *v) cudaEventDestroy(e);
    cudaFree(work);
    cudaFree(ipiv);
    cudaFree(info);
    cudaFree(moves);
    cudaFree(y);
    cudaFreeHost(host_ipiv);
    cudaFreeHost(host_moves);
    cudaFreeHost(host_y);
    for (int i = 0; i < 2; ++i) {
      cudaFree(panel[i]);
      cudaFreeHost(host_panel[i]);
    }
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

// Row interchanges, DTRSM and DGEMM of one panel (l: its rows [j, n), leading dimension ldl) on this rank's
// local columns [c0, c1) of a.
void update(cublasHandle_t h, cudaStream_t s, const double* l, size_t ldl, double* a, size_t ld, int n, int j,
            int jb, int c0, int c1, const int* src, const int* dst, int count) {
  if (c1 <= c0) return;
  if (count > 0) {
    GPUACCEPT_LAUNCH_SYNC(swap_rows, (unsigned)(c1 - c0), kSwapThreads, s)(a, ld, c0, src, dst, count);
    CUDA(cudaGetLastError());
  }
  const double one = 1.0, minus_one = -1.0;
  double* u12 = a + (size_t)c0 * ld + j;
  BLAS(cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, jb, c1 - c0, &one,
                   l, (int)ldl, u12, (int)ld));
  const int rows = n - j - jb;
  if (rows > 0) {
    BLAS(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, rows, c1 - c0, jb, &minus_one, l + jb, (int)ldl, u12, (int)ld,
                     &one, a + (size_t)c0 * ld + j + jb, (int)ld));
  }
}

// The 1 x Q grid: every rank holds all rows of its columns, so no row crosses ranks.
void pdgesv_columns(HPL_T_grid* GRID, HPL_T_palg* ALGO, HPL_T_pmat* A) {
  const int n = A->n, nb = A->nb, npcol = GRID->npcol, me = GRID->mycol;
  const GridComms* comms = comms_of(GRID);
  const bool look_ahead = ALGO->depth >= 1, shared = npcol > 1;
  double* a = g_mat.a;
  const size_t ld = g_mat.ld;
  const int panels = (n + nb - 1) / nb, cols = g_mat.cols;  // cols: this rank's columns of [A b]
  auto owner = [&](int k) { return k % npcol; };
  auto local = [&](int g) { return local_columns(g, nb, me, npcol); };  // own columns left of global column g

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
  CUDA(cudaMalloc(&s.y, (size_t)n * sizeof(double)));
  CUDA(cudaMallocHost(&s.host_ipiv, (size_t)n * sizeof(int)));
  CUDA(cudaMallocHost(&s.host_moves, (size_t)8 * nb * sizeof(int)));
  CUDA(cudaMallocHost(&s.host_y, (size_t)n * sizeof(double)));
  const bool nccl = shared && comms->nccl;
  if (shared) {
    for (int i = 0; i < 2; ++i) CUDA(cudaMalloc(&s.panel[i], (size_t)n * nb * sizeof(double)));
    if (!nccl) {
      for (int i = 0; i < 2; ++i) CUDA(cudaMallocHost(&s.host_panel[i], (size_t)n * nb * sizeof(double)));
    }
  }
  for (auto* v : {&s.panel_done, &s.panel_ready, &s.moves_ready, &s.main_done}) {
    v->resize(panels);
    for (cudaEvent_t& e : *v) CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  std::vector<int> cur(n), touched;
  for (int i = 0; i < n; ++i) cur[i] = i;
  CUDA(cudaStreamSynchronize(s.main_s));

  cudaStream_t ahead = look_ahead ? s.ahead_s : s.main_s;
  cublasHandle_t ahead_h = look_ahead ? s.ahead_h : s.main_h;
  auto rows_of = [&](int k, int* j, int* jb) {
    *j = k * nb;
    *jb = n - *j < nb ? n - *j : nb;
  };
  // Panel k (its owner only) on the look-ahead stream: getrf, its pivots to the host, and with Q > 1 the
  // factored panel to pinned memory for the broadcast.
  auto factor = [&](int k) {
    int j, jb;
    rows_of(k, &j, &jb);
    double* p = a + (size_t)local(j) * ld + j;
    SOLVER(cusolverDnDgetrf(s.solver, n - j, jb, p, (int)ld, s.work, s.ipiv + j, s.info + k));
    CUDA(cudaMemcpyAsync(s.host_ipiv + j, s.ipiv + j, (size_t)jb * sizeof(int), cudaMemcpyDeviceToHost, ahead));
    if (shared) {  // packed for the broadcast: GPU to GPU (NCCL) or through pinned memory (MPI)
      CUDA(cudaMemcpy2DAsync(nccl ? (void*)s.panel[k % 2] : (void*)s.host_panel[k % 2],
                             (size_t)(n - j) * sizeof(double), p, ld * sizeof(double),
                             (size_t)(n - j) * sizeof(double), (size_t)jb, cudaMemcpyDefault, ahead));
    }
    CUDA(cudaEventRecord(s.panel_done[k], ahead));
    CUDA(cudaEventRecord(s.panel_ready[k], ahead));
  };
  // Panel k from its owner to every rank (Q > 1): the pivots through MPI (the host needs them), the panel by
  // NCCL on the look-ahead stream, or through MPI with the host blocking in MPI_Bcast while the GPU works on.
  auto share = [&](int k) {
    int j, jb;
    rows_of(k, &j, &jb);
    const int root = owner(k);
    if (root == me) CUDA(cudaEventSynchronize(s.panel_done[k]));
    MPI_Bcast(s.host_ipiv + j, jb, MPI_INT, root, GRID->row_comm);
    const size_t count = (size_t)(n - j) * jb;
#ifdef GPUACCEPT_HPL_NCCL
    if (nccl) {
      NCCL(ncclBroadcast(s.panel[k % 2], s.panel[k % 2], count, ncclDouble, root, comms->row.nccl, ahead));
      if (root != me) CUDA(cudaEventRecord(s.panel_ready[k], ahead));
      return;
    }
#endif
    if (root != me && k >= 2) CUDA(cudaEventSynchronize(s.panel_ready[k - 2]));  // the pinned buffer is free
    for (size_t off = 0; off < count; off += (size_t)INT_MAX / 2) {  // MPI counts are ints
      const size_t part = count - off < (size_t)INT_MAX / 2 ? count - off : (size_t)INT_MAX / 2;
      MPI_Bcast(s.host_panel[k % 2] + off, (int)part, MPI_DOUBLE, root, GRID->row_comm);
    }
    if (root != me) {
      CUDA(cudaMemcpyAsync(s.panel[k % 2], s.host_panel[k % 2], count * sizeof(double), cudaMemcpyHostToDevice,
                           ahead));
      CUDA(cudaEventRecord(s.panel_ready[k], ahead));
    }
  };
  auto panel_of = [&](int k, const double** l, size_t* ldl) {
    int j, jb;
    rows_of(k, &j, &jb);
    if (owner(k) == me) {
      *l = a + (size_t)local(j) * ld + j;
      *ldl = ld;
    } else {
      *l = s.panel[k % 2];
      *ldl = (size_t)(n - j);
    }
  };

  if (owner(0) == me) factor(0);
  if (shared) share(0);
  for (int k = 0; k < panels; ++k) {
    int j, jb;
    rows_of(k, &j, &jb);
    const int next = j + jb, next_jb = n - next < nb ? n - next : nb;  // next_jb <= 0: no next panel
    if (owner(k) == me) CUDA(cudaEventSynchronize(s.panel_done[k]));  // its pivots (others had them from MPI)
    if (k >= 2) CUDA(cudaEventSynchronize(s.moves_ready[k - 2]));     // the pinned moves buffer is free again
    int* hm = s.host_moves + (size_t)(k % 2) * 4 * nb;
    int* dm = s.moves + (size_t)(k % 2) * 4 * nb;
    const int count = panel_moves(s.host_ipiv + j, j, jb, cur, touched, hm, hm + 2 * nb);
    if (k > 0) CUDA(cudaStreamWaitEvent(ahead, s.main_done[k - 1], 0));  // buffers of parity k % 2 are free
    CUDA(cudaMemcpyAsync(dm, hm, (size_t)4 * nb * sizeof(int), cudaMemcpyHostToDevice, ahead));
    CUDA(cudaEventRecord(s.moves_ready[k], ahead));
    const double* l;
    size_t ldl;
    panel_of(k, &l, &ldl);
    int main_from = local(next);
    if (next_jb > 0 && owner(k + 1) == me) {  // the next panel's columns first, then the next panel itself
      update(ahead_h, ahead, l, ldl, a, ld, n, j, jb, main_from, main_from + next_jb, dm, dm + 2 * nb, count);
      factor(k + 1);
      main_from += next_jb;
    }
    // The rest of this rank's trailing columns, b among them on its owner.
    CUDA(cudaStreamWaitEvent(s.main_s, s.moves_ready[k], 0));
    CUDA(cudaStreamWaitEvent(s.main_s, s.panel_ready[k], 0));
    update(s.main_h, s.main_s, l, ldl, a, ld, n, j, jb, main_from, cols, dm, dm + 2 * nb, count);
    CUDA(cudaEventRecord(s.main_done[k], s.main_s));
    if (shared && next_jb > 0) share(k + 1);
  }

  // Back-solve U x = y, block column by block column from the last; y (L^-1 P b, global column n) starts on
  // b's owner and moves to the owner of the block column being solved.
  CUDA(cudaStreamSynchronize(ahead));
  int holder = HPL_indxg2p(n, nb, nb, 0, npcol);
  if (holder == me) {
    CUDA(cudaMemcpyAsync(s.y, a + (size_t)local(n) * ld, (size_t)n * sizeof(double), cudaMemcpyDeviceToDevice,
                         s.main_s));
  }
  const double one = 1.0, minus_one = -1.0;
  for (int k = panels - 1; k >= 0; --k) {
    int j, jb;
    rows_of(k, &j, &jb);
    const int o = owner(k);
    if (o != holder) {  // y's first j + jb entries to the block column's owner
      const int len = j + jb;
      if (me == holder) {
        CUDA(cudaMemcpyAsync(s.host_y, s.y, (size_t)len * sizeof(double), cudaMemcpyDeviceToHost, s.main_s));
        CUDA(cudaStreamSynchronize(s.main_s));
        MPI_Send(s.host_y, len, MPI_DOUBLE, o, k, GRID->row_comm);
      } else if (me == o) {
        MPI_Recv(s.host_y, len, MPI_DOUBLE, holder, k, GRID->row_comm, MPI_STATUS_IGNORE);
        CUDA(cudaMemcpyAsync(s.y, s.host_y, (size_t)len * sizeof(double), cudaMemcpyHostToDevice, s.main_s));
      }
      holder = o;
    }
    if (me != o) continue;
    const int lj = local(j);
    const double* u = a + (size_t)lj * ld;  // the block column's rows [0, j + jb)
    BLAS(cublasDtrsv(s.main_h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, jb, u + j, (int)ld,
                     s.y + j, 1));
    if (j > 0) {
      BLAS(cublasDgemv(s.main_h, CUBLAS_OP_N, j, jb, &minus_one, u, (int)ld, s.y + j, 1, &one, s.y, 1));
    }
    CUDA(cudaMemcpyAsync(A->X + lj, s.y + j, (size_t)jb * sizeof(double), cudaMemcpyDeviceToHost, s.main_s));
  }
  std::vector<int> info(panels);
  CUDA(cudaMemcpyAsync(info.data(), s.info, (size_t)panels * sizeof(int), cudaMemcpyDeviceToHost, s.main_s));
  CUDA(cudaDeviceSynchronize());
  int first = INT_MAX;  // getrf's first zero pivot, 1-based in its panel: HPL's info is the global column
  for (int k = 0; k < panels; ++k) {
    if (owner(k) == me && info[k] > 0) {
      first = k * nb + info[k];
      break;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, GRID->row_comm);
  A->info = first == INT_MAX ? 0 : first;
}


// ------------------------------------------------------------------------------------------------ P x Q

// Where the rows of [A b] are on a grid of nprow process rows (HPL's block-cyclic layout, first block on 0), and
// this rank's share of rows and columns.
struct Layout {
  int n, nb, nprow, npcol, myrow, mycol;
  int rows_of(int p, int g) const { return HPL_numroc(g, nb, nb, p, 0, nprow); }  // process row p's rows above g
  int lrow(int g) const { return rows_of(myrow, g); }
  int lcol(int g) const { return local_columns(g, nb, mycol, npcol); }
  int prow(int g) const { return (g / nb) % nprow; }
  int local_index(int g) const { return (g / (nb * nprow)) * nb + g % nb; }  // on its process row
  int global_row(int p, int il) const { return (int)gpuaccept_hpl_global_col(il, nb, p, nprow); }
};

// Panel k's rows [j, n) as the rank that factors it holds them: grouped by process row, the diagonal block's
// process row first (its first jb rows are the diagonal block), each group in that row's local order.
struct PanelRows {
  std::vector<int> off, cnt;  // by process row: where its group starts, and its rows
  PanelRows(const Layout& L, int j, int pk) : off(L.nprow), cnt(L.nprow) {
    int at = 0;
    for (int t = 0; t < L.nprow; ++t) {
      const int p = (pk + t) % L.nprow;
      cnt[p] = L.rows_of(p, L.n) - L.rows_of(p, j);
      off[p] = at;
      at += cnt[p];
    }
  }
  int global(const Layout& L, int j, int pos) const {  // the global row at a position of the panel
    for (int p = 0; p < L.nprow; ++p)
      if (pos >= off[p] && pos < off[p] + cnt[p]) return L.global_row(p, L.rows_of(p, j) + pos - off[p]);
    return -1;
  }
};

// One panel's row interchanges as this process row applies them: the moves within its rows (src -> dst), and
// the rows it sends to and receives from each other process row, as local row indices, in one int array (the
// device copy's layout): [src | dst | sends, grouped by process row | receives, grouped by process row].
struct RowMoves {
  int local = 0;
  std::vector<int> send_cnt, send_off, recv_cnt, recv_off;
  int sends = 0, recvs = 0;
  int* send_idx(int* base) const { return base + 2 * local; }
  int* recv_idx(int* base) const { return base + 2 * local + sends; }
};
constexpr int kMoveInts = 8;  // per NB: room for 2 NB local moves (src, dst), NB sends and NB receives

RowMoves row_moves(const Layout& L, const int* src, const int* dst, int count, int* out) {
  RowMoves m;
  m.send_cnt.assign(L.nprow, 0);
  m.recv_cnt.assign(L.nprow, 0);
  std::vector<std::vector<int>> sends(L.nprow), recvs(L.nprow);
  std::vector<int> ls, lt;
  for (int t = 0; t < count; ++t) {
    const int ps = L.prow(src[t]), pd = L.prow(dst[t]);
    if (ps == L.myrow && pd == L.myrow) {
      ls.push_back(L.local_index(src[t]));
      lt.push_back(L.local_index(dst[t]));
    } else if (ps == L.myrow) {
      sends[pd].push_back(L.local_index(src[t]));
    } else if (pd == L.myrow) {
      recvs[ps].push_back(L.local_index(dst[t]));
    }
  }
  m.local = (int)ls.size();
  int* o = out;
  for (int v : ls) *o++ = v;
  for (int v : lt) *o++ = v;
  m.send_off.assign(L.nprow, 0);
  m.recv_off.assign(L.nprow, 0);
  for (int p = 0; p < L.nprow; ++p) {
    m.send_off[p] = m.sends;
    m.send_cnt[p] = (int)sends[p].size();
    m.sends += m.send_cnt[p];
    for (int v : sends[p]) *o++ = v;
  }
  for (int p = 0; p < L.nprow; ++p) {
    m.recv_off[p] = m.recvs;
    m.recv_cnt[p] = (int)recvs[p].size();
    m.recvs += m.recv_cnt[p];
    for (int v : recvs[p]) *o++ = v;
  }
  return m;
}

// The P x Q solver's CUDA objects and buffers, made once per HPL_pdgesv call (HPL times all of it).
struct GridSolver {
  cudaStream_t main_s = nullptr, ahead_s = nullptr;
  cublasHandle_t main_h = nullptr, ahead_h = nullptr;
  cusolverDnHandle_t solver = nullptr;
  double* work = nullptr;
  int* ipiv = nullptr;        // device: the panel being factored's pivots (the root's)
  int* info = nullptr;        // device: getrf's info of each panel this rank factored
  int* moves = nullptr;       // device: two RowMoves arrays (parity of the panel)
  int* host_ipiv = nullptr;   // pinned: every panel's pivots, 1-based positions of the gathered panel
  int* host_moves = nullptr;  // pinned, two arrays as on the device
  double* panel[2] = {nullptr, nullptr};  // device: a factored panel, (n - j) x jb, rows as PanelRows says
  double* stage = nullptr;    // device: the other process rows' parts of the panel this rank factors
  double* send_main = nullptr, *recv_main = nullptr;    // device: NB x columns, rows out and in, then U
  double* send_ahead = nullptr, *recv_ahead = nullptr;  // device: NB x NB, the same for the next panel's columns
  double* y = nullptr;        // device: the back-solve's right-hand side, this rank's rows
  double* xk = nullptr;       // device: one block of x
  double* host_y = nullptr;   // pinned: y on its way to the next process column
  double* host_x = nullptr;   // pinned: one block of x
  HostStage stage_ahead, stage_main;  // pinned, for the MPI path
  std::vector<cudaEvent_t> panel_ready, factored, moves_ready, main_done;

  ~GridSolver() {
    for (auto* v : {&panel_ready, &factored, &moves_ready, &main_done})
      for (cudaEvent_t e : *v) cudaEventDestroy(e);
    for (double* p : {work, panel[0], panel[1], stage, send_main, recv_main, send_ahead, recv_ahead, y, xk})
      cudaFree(p);
    cudaFree(ipiv);
    cudaFree(info);
    cudaFree(moves);
    cudaFreeHost(host_ipiv);
    cudaFreeHost(host_moves);
    cudaFreeHost(host_y);
    cudaFreeHost(host_x);
    if (solver) cusolverDnDestroy(solver);
    if (main_h) cublasDestroy(main_h);
    if (ahead_h) cublasDestroy(ahead_h);
    if (main_s) cudaStreamDestroy(main_s);
    if (ahead_s) cudaStreamDestroy(ahead_s);
  }
};

void pdgesv_grid(HPL_T_grid* GRID, HPL_T_palg* ALGO, HPL_T_pmat* A) {
  const int n = A->n, nb = A->nb, P = GRID->nprow, Q = GRID->npcol;
  const Layout L{n, nb, P, Q, GRID->myrow, GRID->mycol};
  const int myrow = L.myrow, mycol = L.mycol;
  GridComms* comms = comms_of(GRID);
  const bool nccl = comms->nccl;
  const bool look_ahead = ALGO->depth >= 1;
  double* a = g_mat.a;
  const size_t ld = g_mat.ld;
  const int mp = g_mat.mloc, cols = g_mat.cols;  // this rank's rows of A and columns of [A b]
  const int panels = (n + nb - 1) / nb;
  auto owner_col = [&](int k) { return k % Q; };
  auto diag_row = [&](int k) { return k % P; };
  auto grid_rank = [&](int p, int q) { return GRID->order == HPL_ROW_MAJOR ? p * Q + q : q * P + p; };
  auto rows_of_panel = [&](int k, int* j, int* jb) {
    *j = k * nb;
    *jb = n - *j < nb ? n - *j : nb;
  };
  bool ever_root = false;  // whether this rank factors a panel: it then gathers the panel
  for (int k = myrow; k < panels && !ever_root; k += P) ever_root = owner_col(k) == mycol;

  GridSolver s;
  int lo = 0, hi = 0;
  CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CUDA(cudaStreamCreateWithPriority(&s.main_s, cudaStreamNonBlocking, lo));
  CUDA(cudaStreamCreateWithPriority(&s.ahead_s, cudaStreamNonBlocking, look_ahead ? hi : lo));
  cudaStream_t ahead = look_ahead ? s.ahead_s : s.main_s;
  BLAS(cublasCreate(&s.main_h));
  BLAS(cublasCreate(&s.ahead_h));
  BLAS(cublasSetStream(s.main_h, s.main_s));
  BLAS(cublasSetStream(s.ahead_h, ahead));
  SOLVER(cusolverDnCreate(&s.solver));
  SOLVER(cusolverDnSetStream(s.solver, ahead));
  const int nb0 = nb < n ? nb : n;
  CUDA(cudaMalloc(&s.panel[0], (size_t)n * nb0 * sizeof(double)));
  CUDA(cudaMalloc(&s.panel[1], (size_t)n * nb0 * sizeof(double)));
  int lwork = 0;
  SOLVER(cusolverDnDgetrf_bufferSize(s.solver, n, nb0, s.panel[0], n, &lwork));
  CUDA(cudaMalloc(&s.work, (size_t)std::max(lwork, 1) * sizeof(double)));
  CUDA(cudaMalloc(&s.ipiv, (size_t)nb * sizeof(int)));
  CUDA(cudaMalloc(&s.info, (size_t)panels * sizeof(int)));
  CUDA(cudaMemsetAsync(s.info, 0, (size_t)panels * sizeof(int), s.main_s));
  CUDA(cudaMalloc(&s.moves, (size_t)2 * kMoveInts * nb * sizeof(int)));
  CUDA(cudaMallocHost(&s.host_ipiv, (size_t)n * sizeof(int)));
  CUDA(cudaMallocHost(&s.host_moves, (size_t)2 * kMoveInts * nb * sizeof(int)));
  if (ever_root) CUDA(cudaMalloc(&s.stage, (size_t)std::max(n - mp, 1) * nb0 * sizeof(double)));
  CUDA(cudaMalloc(&s.send_main, (size_t)nb * std::max(cols, 1) * sizeof(double)));
  CUDA(cudaMalloc(&s.recv_main, (size_t)nb * std::max(cols, 1) * sizeof(double)));
  CUDA(cudaMalloc(&s.send_ahead, (size_t)nb * nb * sizeof(double)));
  CUDA(cudaMalloc(&s.recv_ahead, (size_t)nb * nb * sizeof(double)));
  CUDA(cudaMalloc(&s.y, (size_t)std::max(mp, 1) * sizeof(double)));
  CUDA(cudaMalloc(&s.xk, (size_t)nb * sizeof(double)));
  CUDA(cudaMallocHost(&s.host_y, (size_t)std::max(mp, 1) * sizeof(double)));
  CUDA(cudaMallocHost(&s.host_x, (size_t)nb * sizeof(double)));
  for (auto* v : {&s.panel_ready, &s.factored, &s.moves_ready, &s.main_done}) {
    v->resize(panels);
    for (cudaEvent_t& e : *v) CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  std::vector<int> cur(n), touched, src(2 * nb), dst(2 * nb), rel(nb);
  for (int i = 0; i < n; ++i) cur[i] = i;
  std::vector<RowMoves> moves(2);
  CUDA(cudaStreamSynchronize(s.main_s));

  // Panel k (the ranks of its process column, on the look-ahead stream; its columns up to date): the process
  // rows' parts gathered on the diagonal block's rank, factored there by getrf, its pivots to the host, and the
  // diagonal block (U11) put back into the matrix, where the back-solve reads it.
  auto factor = [&](int k) {
    int j, jb;
    rows_of_panel(k, &j, &jb);
    const int r = diag_row(k), c0 = L.lcol(j);
    const PanelRows pr(L, j, r);
    double* f = s.panel[k % 2];
    const size_t ldf = (size_t)(n - j);
    const double* mine = a + (size_t)c0 * ld + L.lrow(j);
    if (myrow != r) {  // this rank's part, packed, to the root
      const int cnt = pr.cnt[myrow];
      if (cnt > 0) {
        CUDA(cudaMemcpy2DAsync(f, (size_t)cnt * sizeof(double), mine, ld * sizeof(double), (size_t)cnt * sizeof(double),
                               (size_t)jb, cudaMemcpyDeviceToDevice, ahead));
      }
      std::vector<Part> out;
      if (cnt > 0) out.push_back({r, f, (size_t)cnt * jb});
      channel_exchange(comms->col_ahead, nccl, out, {}, ahead, &s.stage_ahead);
      return;
    }
    std::vector<Part> in;
    std::vector<size_t> at(P, 0);
    size_t used = 0;
    for (int p = 0; p < P; ++p) {
      if (p == r || pr.cnt[p] == 0) continue;
      at[p] = used;
      in.push_back({p, s.stage + used, (size_t)pr.cnt[p] * jb});
      used += (size_t)pr.cnt[p] * jb;
    }
    channel_exchange(comms->col_ahead, nccl, {}, in, ahead, &s.stage_ahead);
    CUDA(cudaMemcpy2DAsync(f, ldf * sizeof(double), mine, ld * sizeof(double), (size_t)pr.cnt[r] * sizeof(double),
                           (size_t)jb, cudaMemcpyDeviceToDevice, ahead));
    for (int p = 0; p < P; ++p) {
      if (p == r || pr.cnt[p] == 0) continue;
      CUDA(cudaMemcpy2DAsync(f + pr.off[p], ldf * sizeof(double), s.stage + at[p], (size_t)pr.cnt[p] * sizeof(double),
                             (size_t)pr.cnt[p] * sizeof(double), (size_t)jb, cudaMemcpyDeviceToDevice, ahead));
    }
    SOLVER(cusolverDnDgetrf(s.solver, n - j, jb, f, (int)ldf, s.work, s.ipiv, s.info + k));
    CUDA(cudaMemcpyAsync(s.host_ipiv + j, s.ipiv, (size_t)jb * sizeof(int), cudaMemcpyDeviceToHost, ahead));
    CUDA(cudaMemcpy2DAsync(a + (size_t)c0 * ld + L.lrow(j), ld * sizeof(double), f, ldf * sizeof(double),
                           (size_t)jb * sizeof(double), (size_t)jb, cudaMemcpyDeviceToDevice, ahead));
    CUDA(cudaEventRecord(s.factored[k], ahead));
    CUDA(cudaEventRecord(s.panel_ready[k], ahead));
  };
  // Panel k from its root to every rank: the pivots through MPI (every host needs them), the factored panel on the
  // look-ahead stream.
  auto share = [&](int k) {
    int j, jb;
    rows_of_panel(k, &j, &jb);
    const int root = grid_rank(diag_row(k), owner_col(k));
    const bool am_root = myrow == diag_row(k) && mycol == owner_col(k);
    if (am_root) CUDA(cudaEventSynchronize(s.factored[k]));
    MPI_Bcast(s.host_ipiv + j, jb, MPI_INT, root, GRID->all_comm);
    channel_bcast(comms->all, nccl, s.panel[k % 2], (size_t)(n - j) * jb, root, ahead, &s.stage_ahead);
    if (!am_root) CUDA(cudaEventRecord(s.panel_ready[k], ahead));
  };
  // Panel k's row interchanges on this rank's columns [c0, c1): the rows that leave packed first (old values),
  // the moves within this process row, the exchange with the other process rows, then the rows that arrive.
  auto interchange = [&](int k, cudaStream_t st, int c0, int c1, double* send, double* recv, const Channel& ch,
                         HostStage* stage) {
    const int ncols = c1 - c0;
    const RowMoves& m = moves[k % 2];
    int* d = s.moves + (size_t)(k % 2) * kMoveInts * nb;
    std::vector<Part> out, in;
    for (int p = 0; p < P; ++p) {
      if (m.send_cnt[p] == 0) continue;
      double* buf = send + (size_t)m.send_off[p] * ncols;
      GPUACCEPT_LAUNCH(gather_rows, (unsigned)ncols, 256, st)(a, ld, c0, m.send_idx(d) + m.send_off[p], m.send_cnt[p],
                                                                buf);
      CUDA(cudaGetLastError());
      out.push_back({p, buf, (size_t)m.send_cnt[p] * ncols});
    }
    if (m.local > 0) {
      GPUACCEPT_LAUNCH_SYNC(swap_rows, (unsigned)ncols, kSwapThreads, st)(a, ld, c0, d, d + m.local, m.local);
      CUDA(cudaGetLastError());
    }
    for (int p = 0; p < P; ++p) {
      if (m.recv_cnt[p] > 0) in.push_back({p, recv + (size_t)m.recv_off[p] * ncols, (size_t)m.recv_cnt[p] * ncols});
    }
    channel_exchange(ch, nccl, out, in, st, stage);
    for (int p = 0; p < P; ++p) {
      if (m.recv_cnt[p] == 0) continue;
      GPUACCEPT_LAUNCH(scatter_rows, (unsigned)ncols, 256, st)(a, ld, c0, m.recv_idx(d) + m.recv_off[p],
                                                                 m.recv_cnt[p], recv + (size_t)m.recv_off[p] * ncols);
      CUDA(cudaGetLastError());
    }
  };
  // Panel k's update of this rank's columns [c0, c1) (the same columns on every rank of its process column): row
  // interchanges, U (the diagonal block's process row, DTRSM) down the process column, then DGEMM on the rows
  // below the diagonal block.
  auto update_cols = [&](int k, cudaStream_t st, cublasHandle_t h, int c0, int c1, double* send, double* recv,
                    const Channel& ch, HostStage* stage) {
    const int ncols = c1 - c0;
    if (ncols <= 0) return;
    int j, jb;
    rows_of_panel(k, &j, &jb);
    const int pk = diag_row(k);
    interchange(k, st, c0, c1, send, recv, ch, stage);
    const PanelRows pr(L, j, pk);
    const double* l = s.panel[k % 2];
    const int ldl = n - j;
    double* u = a + (size_t)c0 * ld + L.lrow(j);
    const double one = 1.0, minus_one = -1.0;
    if (myrow == pk) {
      BLAS(cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, jb, ncols, &one,
                       l, ldl, u, (int)ld));
      CUDA(cudaMemcpy2DAsync(send, (size_t)jb * sizeof(double), u, ld * sizeof(double), (size_t)jb * sizeof(double),
                             (size_t)ncols, cudaMemcpyDeviceToDevice, st));
    }
    channel_bcast(ch, nccl, send, (size_t)jb * ncols, pk, st, stage);
    const int top = L.lrow(j + jb), below = mp - top;
    if (below > 0) {
      const double* lp = l + pr.off[myrow] + (top - L.lrow(j));
      BLAS(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, below, ncols, jb, &minus_one, lp, ldl,
                       myrow == pk ? u : send, myrow == pk ? (int)ld : jb, &one, a + (size_t)c0 * ld + top, (int)ld));
    }
  };

  if (owner_col(0) == mycol) factor(0);
  share(0);
  for (int k = 0; k < panels; ++k) {
    int j, jb;
    rows_of_panel(k, &j, &jb);
    const int next = j + jb, next_jb = n - next < nb ? n - next : nb;  // next_jb <= 0: no next panel
    // This panel's interchanges: getrf's pivots are positions in the gathered panel, made global rows first.
    const PanelRows pr(L, j, diag_row(k));
    for (int i = 0; i < jb; ++i) rel[i] = pr.global(L, j, s.host_ipiv[j + i] - 1) - j + 1;
    const int count = panel_moves(rel.data(), j, jb, cur, touched, src.data(), dst.data());
    if (k >= 2) CUDA(cudaEventSynchronize(s.moves_ready[k - 2]));  // the pinned array of this parity is free again
    int* hm = s.host_moves + (size_t)(k % 2) * kMoveInts * nb;
    moves[k % 2] = row_moves(L, src.data(), dst.data(), count, hm);
    if (k > 0) CUDA(cudaStreamWaitEvent(ahead, s.main_done[k - 1], 0));  // buffers of parity k % 2 are free
    CUDA(cudaMemcpyAsync(s.moves + (size_t)(k % 2) * kMoveInts * nb, hm, (size_t)kMoveInts * nb * sizeof(int),
                         cudaMemcpyHostToDevice, ahead));
    CUDA(cudaEventRecord(s.moves_ready[k], ahead));
    int main_from = L.lcol(next);
    if (next_jb > 0 && owner_col(k + 1) == mycol) {  // the next panel's columns first, then the next panel itself
      update_cols(k, ahead, s.ahead_h, main_from, main_from + next_jb, s.send_ahead, s.recv_ahead, comms->col_ahead,
             &s.stage_ahead);
      factor(k + 1);
      main_from += next_jb;
    }
    // The rest of this rank's trailing columns, b among them on its process column.
    CUDA(cudaStreamWaitEvent(s.main_s, s.moves_ready[k], 0));
    CUDA(cudaStreamWaitEvent(s.main_s, s.panel_ready[k], 0));
    update_cols(k, s.main_s, s.main_h, main_from, cols, s.send_main, s.recv_main, comms->col_main, &s.stage_main);
    CUDA(cudaEventRecord(s.main_done[k], s.main_s));
    if (next_jb > 0) share(k + 1);
  }

  // Back-solve U x = y, block column by block column from the last. y (L^-1 P b, global column n) starts in b's
  // process column, each process row holding its rows, and moves to the process column of the block column being
  // solved; x's block goes from the diagonal block's rank to its process column, and into HPL's X there.
  CUDA(cudaDeviceSynchronize());
  int holder = HPL_indxg2p(n, nb, nb, 0, Q);
  if (holder == mycol && mp > 0) {
    CUDA(cudaMemcpyAsync(s.y, a + (size_t)L.lcol(n) * ld, (size_t)mp * sizeof(double), cudaMemcpyDeviceToDevice,
                         s.main_s));
  }
  const double one = 1.0, minus_one = -1.0;
  for (int k = panels - 1; k >= 0; --k) {
    int j, jb;
    rows_of_panel(k, &j, &jb);
    const int q = owner_col(k), pk = diag_row(k);
    if (q != holder) {  // this process row's y entries above row j + jb to the block column's process column
      const int len = L.lrow(j + jb);
      if (mycol == holder && len > 0) {
        CUDA(cudaMemcpyAsync(s.host_y, s.y, (size_t)len * sizeof(double), cudaMemcpyDeviceToHost, s.main_s));
        CUDA(cudaStreamSynchronize(s.main_s));
        MPI_Send(s.host_y, len, MPI_DOUBLE, q, k, GRID->row_comm);
      } else if (mycol == q && len > 0) {
        MPI_Recv(s.host_y, len, MPI_DOUBLE, holder, k, GRID->row_comm, MPI_STATUS_IGNORE);
        CUDA(cudaMemcpyAsync(s.y, s.host_y, (size_t)len * sizeof(double), cudaMemcpyHostToDevice, s.main_s));
        CUDA(cudaStreamSynchronize(s.main_s));
      }
      holder = q;
    }
    if (mycol != q) continue;
    const int lj = L.lcol(j), top = L.lrow(j);
    const double* u = a + (size_t)lj * ld;  // the block column's rows on this rank
    if (myrow == pk) {
      BLAS(cublasDtrsv(s.main_h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, jb, u + top, (int)ld,
                       s.y + top, 1));
      CUDA(cudaMemcpyAsync(s.host_x, s.y + top, (size_t)jb * sizeof(double), cudaMemcpyDeviceToHost, s.main_s));
      CUDA(cudaStreamSynchronize(s.main_s));
    }
    MPI_Bcast(s.host_x, jb, MPI_DOUBLE, pk, GRID->col_comm);
    if (myrow != pk) {
      CUDA(cudaMemcpyAsync(s.xk, s.host_x, (size_t)jb * sizeof(double), cudaMemcpyHostToDevice, s.main_s));
    }
    if (top > 0) {
      BLAS(cublasDgemv(s.main_h, CUBLAS_OP_N, top, jb, &minus_one, u, (int)ld, myrow == pk ? s.y + top : s.xk, 1,
                       &one, s.y, 1));
    }
    std::memcpy(A->X + lj, s.host_x, (size_t)jb * sizeof(double));
    CUDA(cudaStreamSynchronize(s.main_s));  // s.xk and s.host_x are used again for the next block
  }
  std::vector<int> info(panels);
  CUDA(cudaMemcpyAsync(info.data(), s.info, (size_t)panels * sizeof(int), cudaMemcpyDeviceToHost, s.main_s));
  CUDA(cudaDeviceSynchronize());
  int first = INT_MAX;  // getrf's first zero pivot, 1-based in its panel: HPL's info is the global column
  for (int k = 0; k < panels; ++k) {
    if (myrow == diag_row(k) && mycol == owner_col(k) && info[k] > 0) {
      first = k * nb + info[k];
      break;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, GRID->all_comm);
  A->info = first == INT_MAX ? 0 : first;
}

}  // namespace

extern "C" void HPL_pdgesv(HPL_T_grid* GRID, HPL_T_palg* ALGO, HPL_T_pmat* A) {
  const int n = A->n, nb = A->nb;
  A->info = 0;
  if (n <= 0) return;
  const int mloc = HPL_numroc(n, nb, nb, GRID->myrow, 0, GRID->nprow);
  if (g_mat.a == nullptr || g_mat.m != n || g_mat.n != n + 1 || g_mat.nb != nb || g_mat.mloc != mloc ||
      comms_of(GRID) == nullptr) {
    HPL_pabort(__LINE__, "HPL_pdgesv", "no %d x %d matrix with NB %d on the GPU for this %d x %d grid (HPL_pdmatgen "
               "must run first)", n, n + 1, nb, GRID->nprow, GRID->npcol);
  }
  if (nb <= 0 || 2 * nb > kMaxMoves) {
    HPL_pabort(__LINE__, "HPL_pdgesv", "NB %d: gpuaccept's GPU HPL takes 1 <= NB <= %d", nb, kMaxMoves / 2);
  }
  if (GRID->nprow == 1) {
    pdgesv_columns(GRID, ALGO, A);
  } else {
    pdgesv_grid(GRID, ALGO, A);
  }
}

// HPL_pdtest's residual check on the GPU: xhpl is linked with --wrap=HPL_pdlange,--wrap=HPL_dgemv, so HPL's own
// calls land here; HPL's host matrix (the array HPL_pdmatgen last filled) is read from the GPU, anything else
// goes to HPL's own code.
extern "C" double __real_HPL_pdlange(const HPL_T_grid*, const HPL_T_NORM, const int, const int, const int,
                                     const double*, const int);
extern "C" void __real_HPL_dgemv(const enum HPL_ORDER, const enum HPL_TRANS, const int, const int, const double,
                                 const double*, const int, const double*, const int, const double, double*,
                                 const int);

namespace {
bool is_device_matrix(const double* A, int lda) {
  return g_mat.a != nullptr && A == g_mat.host && lda == g_mat.host_ld;
}
}  // namespace

extern "C" double __wrap_HPL_pdlange(const HPL_T_grid* GRID, const HPL_T_NORM NORM, const int M, const int N,
                                     const int NB, const double* A, const int LDA) {
  // A of [A b]; b and x are HPL's own host vectors. Decided by every rank together: on a rank that holds no
  // column of A, HPL's pointer to b is the matrix's own.
  int mine = is_device_matrix(A, LDA) && (NORM == HPL_NORM_1 || NORM == HPL_NORM_I) && M == g_mat.m &&
             N == g_mat.n - 1 && NB == g_mat.nb;
  MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MIN, GRID->all_comm);
  if (!mine) return __real_HPL_pdlange(GRID, NORM, M, N, NB, A, LDA);
  // The first N global columns: this rank's block of them, its mloc rows.
  const int cols = local_columns(N, NB, GRID->mycol, GRID->npcol), rows = g_mat.mloc;
  const size_t len = NORM == HPL_NORM_1 ? (size_t)cols : (size_t)rows;
  std::vector<double> sums(len, 0.0);
  double* d = nullptr;
  CUDA(cudaMalloc(&d, (len > 0 ? len : 1) * sizeof(double)));
  if (NORM == HPL_NORM_1 && cols > 0 && rows > 0) {
    GPUACCEPT_LAUNCH_SYNC(column_abs_sums, (unsigned)cols, 256, 0)(g_mat.a, g_mat.ld, rows, d);
  } else if (NORM == HPL_NORM_I && rows > 0) {
    GPUACCEPT_LAUNCH(row_abs_sums, (unsigned)((rows + 255) / 256), 256, 0)(g_mat.a, g_mat.ld, rows, cols, d);
  }
  CUDA(cudaGetLastError());
  if (len > 0) CUDA(cudaMemcpy(sums.data(), d, len * sizeof(double), cudaMemcpyDeviceToHost));
  CUDA(cudaFree(d));
  double norm = 0.0;
  if (NORM == HPL_NORM_1) {  // largest column sum: the columns summed over the process column, then the largest
    if (GRID->nprow > 1) MPI_Allreduce(MPI_IN_PLACE, sums.data(), (int)len, MPI_DOUBLE, MPI_SUM, GRID->col_comm);
    for (double v : sums) norm = v > norm ? v : norm;
    MPI_Allreduce(MPI_IN_PLACE, &norm, 1, MPI_DOUBLE, MPI_MAX, GRID->row_comm);
  } else {  // largest row sum: the rows summed over the process row, then the largest
    MPI_Allreduce(MPI_IN_PLACE, sums.data(), (int)len, MPI_DOUBLE, MPI_SUM, GRID->row_comm);
    for (double v : sums) norm = v > norm ? v : norm;
  }
  if (GRID->nprow > 1) MPI_Allreduce(MPI_IN_PLACE, &norm, 1, MPI_DOUBLE, MPI_MAX, GRID->col_comm);
  return norm;
}

extern "C" void __wrap_HPL_dgemv(const enum HPL_ORDER ORDER, const enum HPL_TRANS TRANS, const int M, const int N,
                                 const double ALPHA, const double* A, const int LDA, const double* X, const int INCX,
                                 const double BETA, double* Y, const int INCY) {
  if (!is_device_matrix(A, LDA) || ORDER != HplColumnMajor || TRANS != HplNoTrans || M != g_mat.mloc ||
      N > g_mat.cols) {
    __real_HPL_dgemv(ORDER, TRANS, M, N, ALPHA, A, LDA, X, INCX, BETA, Y, INCY);
    return;
  }
  if (M <= 0) return;
  // y = beta y + alpha A x with A this rank's first N local columns on the GPU; x and y in host memory.
  if (g_check_blas == nullptr) BLAS(cublasCreate(&g_check_blas));
  double *dx = nullptr, *dy = nullptr;
  CUDA(cudaMalloc(&dx, (size_t)(N > 0 ? N : 1) * sizeof(double)));
  CUDA(cudaMalloc(&dy, (size_t)M * sizeof(double)));
  if (N > 0) CUDA(cudaMemcpy2D(dx, sizeof(double), X, (size_t)INCX * sizeof(double), sizeof(double), (size_t)N,
                               cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy2D(dy, sizeof(double), Y, (size_t)INCY * sizeof(double), sizeof(double), (size_t)M,
                    cudaMemcpyHostToDevice));
  if (N > 0) {
    BLAS(cublasDgemv(g_check_blas, CUBLAS_OP_N, M, N, &ALPHA, g_mat.a, (int)g_mat.ld, dx, 1, &BETA, dy, 1));
  } else {
    BLAS(cublasDscal(g_check_blas, M, &BETA, dy, 1));
  }
  CUDA(cudaMemcpy2D(Y, (size_t)INCY * sizeof(double), dy, sizeof(double), sizeof(double), (size_t)M,
                    cudaMemcpyDeviceToHost));
  CUDA(cudaFree(dx));
  CUDA(cudaFree(dy));
}
