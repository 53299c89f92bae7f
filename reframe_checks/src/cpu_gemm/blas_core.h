// The ISA of the kernels a BLAS chose, from MKL's code branch or OpenBLAS's core name: the facts behind the
// judge's blas_optimized_core rule. No BLAS header needed (tests/native/test_blas_core.cpp runs it without one).
#pragma once

#include <cctype>
#include <string>

namespace gpuaccept {

// MKL's code branches by value (mkl_cbwr_get_auto_branch(), MKL_CBWR): the values are stable across releases,
// but newer mkl_types.h drop the retired names (2025.x keeps COMPATIBLE, SSE2, SSE4_2, AVX2, AVX512, AVX512_E1,
// AVX10), so the table names all of them itself. AUTO (2) is what MKL answers where it maps the CPU to no branch
// of its own, as on AMD CPUs: it then picks kernels per function at run time, and the ISA cannot be told.
struct MklBranch {
  int value;
  const char* name;
  const char* isa;  // avx512, avx2, avx, sse or unknown
};
inline constexpr MklBranch kMklBranches[] = {
    {0, "MKL_CBWR_OFF", "unknown"},
    {1, "MKL_CBWR_BRANCH_OFF", "unknown"},
    {2, "MKL_CBWR_AUTO", "unknown"},
    {3, "MKL_CBWR_COMPATIBLE", "sse"},
    {4, "MKL_CBWR_SSE2", "sse"},
    {5, "MKL_CBWR_SSE3", "sse"},
    {6, "MKL_CBWR_SSSE3", "sse"},
    {7, "MKL_CBWR_SSE4_1", "sse"},
    {8, "MKL_CBWR_SSE4_2", "sse"},
    {9, "MKL_CBWR_AVX", "avx"},
    {10, "MKL_CBWR_AVX2", "avx2"},
    {11, "MKL_CBWR_AVX512_MIC", "avx512"},
    {12, "MKL_CBWR_AVX512", "avx512"},
    {13, "MKL_CBWR_AVX512_MIC_E1", "avx512"},
    {14, "MKL_CBWR_AVX512_E1", "avx512"},
    {15, "MKL_CBWR_AVX10", "avx512"},  // AVX10.1/512: AVX-512's instructions, counted as avx512
};

// The name of an MKL code branch; "unknown (branch N)" for a value this table does not have.
inline std::string mkl_branch_name(int value) {
  for (const auto& b : kMklBranches)
    if (b.value == value) return b.name;
  return "unknown (branch " + std::to_string(value) + ")";
}

// ISA of an MKL code branch name: avx512, avx2, avx, sse or unknown (AUTO, OFF and values not in the table).
inline std::string mkl_branch_isa(const std::string& name) {
  for (const auto& b : kMklBranches)
    if (name == b.name) return b.isa;
  return "unknown";
}

// ISA of OpenBLAS's x86-64 cores (kernel/setparam-ref.c, driver/others/dynamic.c); anything not listed is
// taken as SSE-only, the generic fallback (Prescott, Core2, Nehalem, Atom, Opteron, Barcelona...).
inline std::string openblas_core_isa(const std::string& core) {
  std::string c;
  for (char ch : core) c += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* k : {"skylakex", "cooperlake", "sapphirerapids"})
    if (c == k) return "avx512";
  for (const char* k : {"haswell", "zen", "excavator"})
    if (c == k) return "avx2";
  for (const char* k : {"sandybridge", "bulldozer", "piledriver", "steamroller"})
    if (c == k) return "avx";
  return c.empty() || c == "unknown" ? "unknown" : "sse";
}

}  // namespace gpuaccept
