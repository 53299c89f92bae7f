// Host stand-ins for the cuSOLVER calls of gpuaccept_hpl_gpu.cu (cuda_runtime.h here says why): LAPACK's dgetrf_
// of the library the test links (partial pivoting, 1-based pivots, info as cuSOLVER returns it).
#pragma once

#include "cuda_runtime.h"

extern "C" void gpuaccept_host_dgetrf(const int*, const int*, double*, const int*, int*, int*) __asm__("dgetrf_");

typedef enum { CUSOLVER_STATUS_SUCCESS = 0 } cusolverStatus_t;
struct gpuaccept_host_solver {};
typedef gpuaccept_host_solver* cusolverDnHandle_t;

inline cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t* h) {
  *h = new gpuaccept_host_solver;
  return CUSOLVER_STATUS_SUCCESS;
}
inline cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t h) {
  delete h;
  return CUSOLVER_STATUS_SUCCESS;
}
inline cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t, cudaStream_t) { return CUSOLVER_STATUS_SUCCESS; }
inline cusolverStatus_t cusolverDnDgetrf_bufferSize(cusolverDnHandle_t, int, int, double*, int, int* lwork) {
  *lwork = 1;
  return CUSOLVER_STATUS_SUCCESS;
}
inline cusolverStatus_t cusolverDnDgetrf(cusolverDnHandle_t, int m, int n, double* a, int lda, double*, int* ipiv,
                                         int* info) {
  gpuaccept_host_dgetrf(&m, &n, a, &lda, ipiv, info);
  return CUSOLVER_STATUS_SUCCESS;
}
