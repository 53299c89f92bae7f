// gpuaccept-nccl's plain types, shared by both modes and free of CUDA (so that the multi-process summary is
// unit-tested on the host: tests/native/test_nccl_net.cpp): the collectives, the options, one result row, the
// element counts of a (collective, size) and the size sweep.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace gpuaccept::nccl {

// alltoall is measured in multi-process mode only (the single-process table, kColls, keeps its four).
enum class Coll { allreduce, allgather, reducescatter, broadcast, alltoall };

struct CollInfo {
  Coll c;
  const char* key;
  const char* call;
  const char* size_is;
};

struct Options {
  std::vector<size_t> sizes;
  int warmup = 5, iters = 20;
  double timeout_s = 300.0;
  std::string gpus = "all";
  bool quick = false, allow_nvls = false, inject_error = false;
  std::string output;
  // Multi-process mode (--multi-process; nccl_multi.cuh).
  bool multi = false, ring = false;
  std::string comm = "world", nccl_log_dir;
  int device = -1;                 // -1: the local rank
  double bootstrap_timeout_s = 120.0;
  size_t latency_bytes = 8;
};

struct Row {
  Coll c = Coll::allreduce;
  size_t bytes = 0, count = 0;  // count: elements each rank sends (allreduce, allgather, broadcast) or receives
  int iters = 0;
  double sec_median = NAN, sec_min = NAN, sec_max = NAN, algbw = NAN, busbw = NAN;
  unsigned long long mismatches = 0;
  bool verified = false;
};

// Element counts of one (collective, size) on n ranks: the send count and the receive count per rank.
inline void counts(Coll c, size_t bytes, int n, size_t& send, size_t& recv) {
  size_t elems = bytes / sizeof(float);
  switch (c) {
    case Coll::allreduce:
    case Coll::broadcast: send = recv = elems; break;
    case Coll::allgather: send = elems / n; recv = send * n; break;
    case Coll::reducescatter: recv = elems / n; send = recv * n; break;
    case Coll::alltoall: send = recv = elems / n * n; break;
  }
}

// The sizes lo, lo x factor, ... up to hi.
inline std::vector<size_t> sweep(size_t lo, size_t hi, size_t factor) {
  std::vector<size_t> out;
  for (size_t s = lo; s <= hi; s *= factor) {
    out.push_back(s);
    if (factor < 2 || s > hi / factor) break;
  }
  return out;
}

}  // namespace gpuaccept::nccl
