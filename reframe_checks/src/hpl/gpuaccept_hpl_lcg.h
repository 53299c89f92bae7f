// HPL's matrix generator as a jump-ahead function: the entry (i, j) of HPL_pdmatgen's M x N matrix, computed on
// its own, so that a GPU thread (or a host test) can produce any entry without walking the sequence before it.
//
// HPL 2.3 draws its matrix from one 64-bit linear congruential sequence x(k+1) = a x(k) + c (mod 2^64), with
// a = 6364136223846793005 (HPL_MULT1:HPL_MULT0 = 1481765933:1284865837), c = 1 (HPL_IADD1:HPL_IADD0), kept as two
// 32-bit halves. The seed ISEED gives the first state a * ISEED + c; on one process the entry (i, j) is the
// state at k = j * M + i (HPL walks the columns in order, each column's rows in order), returned as
// 0.5 - x / 2^64, rounded as HPL_rand rounds it. tests/test_hpl_gpu.py compares this with netlib's own
// HPL_pdmatgen, built from HPL's source, entry by entry.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define GPUACCEPT_HD __host__ __device__ __forceinline__
#else
#define GPUACCEPT_HD static inline
#endif

#define GPUACCEPT_HPL_MULT 6364136223846793005ULL
#define GPUACCEPT_HPL_IADD 1ULL

// The state after k steps from x: x(k) = A_k x + C_k with A_k = a^k and C_k = c (a^k - 1) / (a - 1), built by
// squaring (a jump of 2^b is (A, C) -> (A^2, C (A + 1))), so k costs at most 64 multiply-adds.
GPUACCEPT_HD uint64_t gpuaccept_hpl_jump(uint64_t x, uint64_t k) {
  uint64_t mult = GPUACCEPT_HPL_MULT, add = GPUACCEPT_HPL_IADD;
  while (k) {
    if (k & 1ULL) x = mult * x + add;
    add = add * (mult + 1ULL);
    mult = mult * mult;
    k >>= 1;
  }
  return x;
}

// The first state of HPL's sequence for a seed (HPL_pdmatgen's jseed = {ISEED, 0}, one jump of 1).
GPUACCEPT_HD uint64_t gpuaccept_hpl_first(int iseed) {
  return GPUACCEPT_HPL_MULT * (uint64_t)(uint32_t)iseed + GPUACCEPT_HPL_IADD;
}

// HPL_rand's value of a state: 0.5 - (hi + lo / 2^32) / 2^32, in HPL's order of operations.
GPUACCEPT_HD double gpuaccept_hpl_value(uint64_t x) {
  const double lo = (double)(uint32_t)(x & 0xffffffffULL), hi = (double)(uint32_t)(x >> 32);
  return 0.5 - (lo / 2147483648.0 * 0.5 + hi) / 2147483648.0 * 0.5;
}

// HPL's block-cyclic distribution over Q process columns (HPL_indxl2g with the first block on process column 0):
// the global index of local column jl on process column q, blocks of NB columns dealt out in turn. Rows are dealt
// out to the P process rows the same way, so the same map gives the global row of local row il on process row p:
// the entry (il, jl) of a process's local matrix is the global entry (gpuaccept_hpl_global_col(il, nb, p, P),
// gpuaccept_hpl_global_col(jl, nb, q, Q)).
GPUACCEPT_HD long long gpuaccept_hpl_global_col(long long jl, int nb, int q, int npcol) {
  return ((jl / nb) * npcol + q) * (long long)nb + jl % nb;
}
