// Unit tests of reframe_checks/src/cpu_gemm/blas_core.h, compiled and run by tests/test_build.py.
#include <cassert>
#include <cstdio>

#include "blas_core.h"

int main() {
  using namespace gpuaccept;
  // Every MKL branch value, named whether or not the installed mkl_types.h still defines it.
  for (int v = 0; v <= 15; ++v) assert(mkl_branch_name(v).rfind("MKL_CBWR_", 0) == 0);
  assert(mkl_branch_name(2) == "MKL_CBWR_AUTO" && mkl_branch_isa("MKL_CBWR_AUTO") == "unknown");
  assert(mkl_branch_isa(mkl_branch_name(3)) == "sse" && mkl_branch_isa(mkl_branch_name(8)) == "sse");
  assert(mkl_branch_isa(mkl_branch_name(9)) == "avx" && mkl_branch_isa(mkl_branch_name(10)) == "avx2");
  for (int v : {11, 12, 13, 14, 15}) assert(mkl_branch_isa(mkl_branch_name(v)) == "avx512");
  assert(mkl_branch_name(99) == "unknown (branch 99)" && mkl_branch_isa("unknown (branch 99)") == "unknown");
  // OpenBLAS: the x86-64 cores of its DYNAMIC_ARCH builds, any case; an unlisted core is the generic fallback.
  assert(openblas_core_isa("SkylakeX") == "avx512" && openblas_core_isa("Cooperlake") == "avx512");
  assert(openblas_core_isa("Haswell") == "avx2" && openblas_core_isa("Zen") == "avx2");
  assert(openblas_core_isa("Sandybridge") == "avx" && openblas_core_isa("Prescott") == "sse");
  assert(openblas_core_isa("") == "unknown" && openblas_core_isa("Unknown") == "unknown");
  std::puts("blas_core: all assertions passed");
  return 0;
}
