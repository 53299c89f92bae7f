// Host stand-ins for the cuBLAS calls of gpuaccept_hpl_gpu.cu (cuda_runtime.h here says why): the Fortran BLAS
// (dgemm_, dtrsm_, dgemv_, dtrsv_, dscal_) of the library the test links, column-major like cuBLAS.
#pragma once

#include "cuda_runtime.h"

// Declared under names of their own (HPL's hpl_blas.h declares the same symbols with other constness).
extern "C" {
void gpuaccept_host_dgemm(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                          const int*, const double*, const int*, const double*, double*, const int*) __asm__("dgemm_");
void gpuaccept_host_dtrsm(const char*, const char*, const char*, const char*, const int*, const int*, const double*,
                          const double*, const int*, double*, const int*) __asm__("dtrsm_");
void gpuaccept_host_dgemv(const char*, const int*, const int*, const double*, const double*, const int*,
                          const double*, const int*, const double*, double*, const int*) __asm__("dgemv_");
void gpuaccept_host_dtrsv(const char*, const char*, const char*, const int*, const double*, const int*, double*,
                          const int*) __asm__("dtrsv_");
void gpuaccept_host_dscal(const int*, const double*, double*, const int*) __asm__("dscal_");
}

typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_SIDE_LEFT = 0, CUBLAS_SIDE_RIGHT = 1 } cublasSideMode_t;
typedef enum { CUBLAS_FILL_MODE_LOWER = 0, CUBLAS_FILL_MODE_UPPER = 1 } cublasFillMode_t;
typedef enum { CUBLAS_DIAG_NON_UNIT = 0, CUBLAS_DIAG_UNIT = 1 } cublasDiagType_t;
struct gpuaccept_host_blas {};
typedef gpuaccept_host_blas* cublasHandle_t;

namespace gpuaccept_host {
inline const char* op(cublasOperation_t o) { return o == CUBLAS_OP_N ? "N" : "T"; }
inline const char* side(cublasSideMode_t s) { return s == CUBLAS_SIDE_LEFT ? "L" : "R"; }
inline const char* fill(cublasFillMode_t f) { return f == CUBLAS_FILL_MODE_LOWER ? "L" : "U"; }
inline const char* diag(cublasDiagType_t d) { return d == CUBLAS_DIAG_UNIT ? "U" : "N"; }
}  // namespace gpuaccept_host

inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new gpuaccept_host_blas;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }

inline cublasStatus_t cublasDgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const double* alpha, const double* a, int lda, const double* b, int ldb,
                                  const double* beta, double* c, int ldc) {
  gpuaccept_host_dgemm(gpuaccept_host::op(ta), gpuaccept_host::op(tb), &m, &n, &k, alpha, a, &lda, b, &ldb, beta, c, &ldc);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDtrsm(cublasHandle_t, cublasSideMode_t s, cublasFillMode_t f, cublasOperation_t t,
                                  cublasDiagType_t d, int m, int n, const double* alpha, const double* a, int lda,
                                  double* b, int ldb) {
  gpuaccept_host_dtrsm(gpuaccept_host::side(s), gpuaccept_host::fill(f), gpuaccept_host::op(t), gpuaccept_host::diag(d), &m, &n,
         alpha, a, &lda, b, &ldb);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDgemv(cublasHandle_t, cublasOperation_t t, int m, int n, const double* alpha,
                                  const double* a, int lda, const double* x, int incx, const double* beta, double* y,
                                  int incy) {
  gpuaccept_host_dgemv(gpuaccept_host::op(t), &m, &n, alpha, a, &lda, x, &incx, beta, y, &incy);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDtrsv(cublasHandle_t, cublasFillMode_t f, cublasOperation_t t, cublasDiagType_t d, int n,
                                  const double* a, int lda, double* x, int incx) {
  gpuaccept_host_dtrsv(gpuaccept_host::fill(f), gpuaccept_host::op(t), gpuaccept_host::diag(d), &n, a, &lda, x, &incx);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDscal(cublasHandle_t, int n, const double* alpha, double* x, int incx) {
  gpuaccept_host_dscal(&n, alpha, x, &incx);
  return CUBLAS_STATUS_SUCCESS;
}
