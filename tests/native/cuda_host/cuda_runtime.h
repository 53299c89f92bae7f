// Host stand-ins for the CUDA runtime calls of reframe_checks/src/hpl/gpuaccept_hpl_gpu.cu, so that
// tests/test_hpl_build.py can compile that file as plain C++ (g++ -x c++ -I tests/native/cuda_host) and run HPL's
// driver with it on a machine without a GPU: "device" memory is host memory, every copy, kernel and library call
// runs at once in the calling thread, streams and events only keep their names. What this checks is the solver's
// arithmetic, data layout and communication (which rows, columns and blocks go where, in what order); it cannot
// see a missing wait between two CUDA streams, which on a GPU would be a race.
//
// Kernels run through GPUACCEPT_LAUNCH as an ordinary function called once per (block, thread); the two kernels that
// synchronise their threads (swap_rows, column_abs_sums) go through GPUACCEPT_LAUNCH_SYNC to host versions below.
// The other headers here (cublas_v2.h, cusolverDn.h, nccl.h) stand in for cuBLAS and cuSOLVER (the Fortran BLAS and
// LAPACK the test links) and for NCCL (MPI on communicators split from MPI_COMM_WORLD: every rank of the job must
// create each NCCL communicator at the same point, which the solver does).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline dim3 blockIdx, threadIdx, blockDim, gridDim;

inline void __syncthreads() {
  std::fprintf(stderr, "cuda_host: __syncthreads in a kernel launched through GPUACCEPT_LAUNCH (use _SYNC)\n");
  std::abort();
}

typedef enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 } cudaError_t;
typedef enum {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
} cudaMemcpyKind;
struct gpuaccept_host_stream {};
struct gpuaccept_host_event {};
typedef gpuaccept_host_stream* cudaStream_t;
typedef gpuaccept_host_event* cudaEvent_t;
constexpr unsigned cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2;

inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "host stand-in error"; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

namespace gpuaccept_host {
inline int device = 0;
inline int devices() {  // GPUACCEPT_HOST_GPUS: how many "GPUs" a rank sees (1 makes every rank share one)
  const char* v = std::getenv("GPUACCEPT_HOST_GPUS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : 64;
}
}  // namespace gpuaccept_host

inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = gpuaccept_host::devices();
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) {
  gpuaccept_host::device = d;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetPCIBusId(char* bus, int len, int d) {
  std::snprintf(bus, (size_t)len, "0000:%02x:00.0", d);
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t* free_b, size_t* total_b) {
  *free_b = *total_b = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaDeviceGetStreamPriorityRange(int* lo, int* hi) {
  *lo = 0;
  *hi = -1;
  return cudaSuccess;
}

template <class T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  *p = static_cast<T*>(std::malloc(bytes > 0 ? bytes : 1));
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T>
cudaError_t cudaMallocHost(T** p, size_t bytes) {
  return cudaMalloc(p, bytes);
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaFreeHost(void* p) { return cudaFree(p); }
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
inline cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                                cudaMemcpyKind) {
  for (size_t r = 0; r < height; ++r) {
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                     size_t height, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t bytes, cudaStream_t) {
  std::memset(p, v, bytes);
  return cudaSuccess;
}

inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned, int) {
  *s = new gpuaccept_host_stream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  *e = new gpuaccept_host_event;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }

namespace gpuaccept_host {

// A kernel launch: the kernel called once per (block, thread) of a one-dimensional grid, in order.
template <class... Params>
struct Launch {
  void (*kernel)(Params...);
  unsigned blocks, threads;
  template <class... Args>
  void operator()(Args&&... args) const {
    gridDim.x = blocks;
    blockDim.x = threads;
    for (unsigned b = 0; b < blocks; ++b) {
      blockIdx.x = b;
      for (unsigned t = 0; t < threads; ++t) {
        threadIdx.x = t;
        kernel(static_cast<Params>(args)...);
      }
    }
  }
};
template <class... Params>
Launch<Params...> launch(void (*kernel)(Params...), unsigned blocks, unsigned threads) {
  return {kernel, blocks, threads};
}

// The kernels that synchronise their threads, as what they compute: swap_rows (column c0 + b gets the old row
// src[t] in row dst[t], every move read before any is written) and column_abs_sums (out[b] = sum_i |a(i, b)|).
struct swap_rows_twin {
  unsigned blocks;
  void operator()(double* a, size_t ld, int c0, const int* src, const int* dst, int count) const {
    double* v = static_cast<double*>(std::malloc(sizeof(double) * (size_t)(count > 0 ? count : 1)));
    for (unsigned b = 0; b < blocks; ++b) {
      double* col = a + (size_t)(c0 + (int)b) * ld;
      for (int t = 0; t < count; ++t) v[t] = col[src[t]];
      for (int t = 0; t < count; ++t) col[dst[t]] = v[t];
    }
    std::free(v);
  }
};
struct column_abs_sums_twin {
  unsigned blocks;
  void operator()(const double* a, size_t ld, int m, double* out) const {
    for (unsigned b = 0; b < blocks; ++b) {
      double s = 0.0;
      for (int i = 0; i < m; ++i) s += std::fabs(a[(size_t)b * ld + i]);
      out[b] = s;
    }
  }
};

}  // namespace gpuaccept_host

#define GPUACCEPT_LAUNCH(kernel, blocks, threads, stream) \
  gpuaccept_host::launch(kernel, (unsigned)(blocks), (unsigned)(threads))
#define GPUACCEPT_LAUNCH_SYNC(kernel, blocks, threads, stream) gpuaccept_host::kernel##_twin{(unsigned)(blocks)}
