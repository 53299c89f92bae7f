// gpuaccept-nccl's core, shared by its single-process mode (gpuaccept_nccl.cu) and its multi-process mode
// (nccl_multi.cuh): the collectives, their data and verification kernels, one rank's buffers and stream, and one
// rank's part of one (collective, size): fill, warm up, poison, time, verify.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "nccl_types.h"

#define NCCL_CHECK(call)                                                                                   \
  GPUACCEPT_CHECK(#call, call, ncclSuccess, [](ncclResult_t r) {                                           \
    return std::string(ncclGetErrorString(r)) + " (" + ncclGetLastError(nullptr) + ")";                    \
  })

namespace gpuaccept::nccl {

// ---------------------------------------------------------------------------------------------
// Data and verification. Rank r's element i is a small integer, so every sum over up to 2^16 ranks is exact in
// float and a result is either right or wrong.
__host__ __device__ inline float value(int rank, size_t i) {
  return static_cast<float>(static_cast<int>(i % 251) + 1 + 3 * rank);
}

__global__ void fill_kernel(float* p, size_t count, int rank, size_t offset) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = value(rank, offset + i);
}

// Counts the elements of `out` that differ from what the collective must give on rank `rank` of `n`.
// allreduce: sum_r value(r, i); allgather: value(i / count, i % count); reducescatter: sum_r value(r, rank*count+i);
// broadcast: value(0, i); alltoall: block j (part elements) is rank j's block `rank`, value(j, rank*part + i%part).
__global__ void check_kernel(const float* out, size_t count, int coll, int rank, int n, size_t part,
                             unsigned long long* bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float want = 0.0f;
    if (coll == 0) {
      for (int r = 0; r < n; ++r) want += value(r, i);
    } else if (coll == 1) {
      want = value(static_cast<int>(i / part), i % part);
    } else if (coll == 2) {
      for (int r = 0; r < n; ++r) want += value(r, static_cast<size_t>(rank) * part + i);
    } else if (coll == 3) {
      want = value(0, i);
    } else {
      want = value(static_cast<int>(i / part), static_cast<size_t>(rank) * part + i % part);
    }
    if (!(out[i] == want)) ++local;  // NaN (the poison) never equals
  }
  if (local) atomicAdd(bad, local);
}

// Per rank.
struct Rank {
  int rank = 0, dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  unsigned long long* bad = nullptr;
  std::vector<cudaEvent_t> events;
  std::vector<double> sec;  // this rank's iteration times for the current (collective, size)
};

inline void launch(Rank& rk, Coll c, size_t send_count, size_t recv_count) {
  switch (c) {
    case Coll::allreduce:
      NCCL_CHECK(ncclAllReduce(rk.send, rk.recv, send_count, ncclFloat, ncclSum, rk.comm, rk.stream));
      break;
    case Coll::allgather: NCCL_CHECK(ncclAllGather(rk.send, rk.recv, send_count, ncclFloat, rk.comm, rk.stream)); break;
    case Coll::reducescatter:
      NCCL_CHECK(ncclReduceScatter(rk.send, rk.recv, recv_count, ncclFloat, ncclSum, rk.comm, rk.stream));
      break;
    case Coll::broadcast: NCCL_CHECK(ncclBroadcast(rk.send, rk.recv, send_count, ncclFloat, 0, rk.comm, rk.stream)); break;
    case Coll::alltoall: {
      // As nccl-tests' alltoall: one grouped ncclSend/ncclRecv pair per peer, block p of each buffer to/from rank p.
      int n = 0;
      NCCL_CHECK(ncclCommCount(rk.comm, &n));
      const size_t part = send_count / n;
      NCCL_CHECK(ncclGroupStart());
      for (int p = 0; p < n; ++p) {
        NCCL_CHECK(ncclSend(rk.send + p * part, part, ncclFloat, p, rk.comm, rk.stream));
        NCCL_CHECK(ncclRecv(rk.recv + p * part, part, ncclFloat, p, rk.comm, rk.stream));
      }
      NCCL_CHECK(ncclGroupEnd());
      break;
    }
  }
}

// Set when a rank fails: every rank waiting in wait_for aborts its communicator and stops.
inline std::atomic<bool> g_abort{false};

// Waits for the rank's stream like cudaStreamSynchronize, but polls NCCL's asynchronous error and the other ranks'
// failures, and gives up after `timeout_s`: a rank whose peer failed, or whose link hangs, would otherwise wait
// inside the collective for ever. Giving up aborts this rank's communicator (ncclCommAbort, from its own thread,
// which ends its kernels) and throws.
inline void wait_for(Rank& rk, double timeout_s, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    cudaError_t q = cudaStreamQuery(rk.stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    ncclResult_t async = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(rk.comm, &async));
    std::string why;
    if (async != ncclSuccess && async != ncclInProgress)
      why = std::string("NCCL asynchronous error: ") + ncclGetErrorString(async);
    else if (g_abort)
      why = "another rank failed";
    else if (std::chrono::steady_clock::now() > deadline)
      why = "not finished after --timeout-s " + std::to_string(timeout_s) + " s";
    if (!why.empty()) {
      g_abort = true;
      ncclCommAbort(rk.comm);
      rk.comm = nullptr;
      throw CallError(std::string(what) + ": " + why + "; communicator aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// One rank's part of one (collective, size): fill, warm up, poison, time, verify. Returns its mismatches.
inline unsigned long long run_rank(Rank& rk, const Options& o, Coll c, size_t bytes, int n) {
  size_t sc = 0, rc = 0;
  counts(c, bytes, n, sc, rc);
  CUDA_CHECK(cudaSetDevice(rk.dev));
  fill_kernel<<<1024, 256, 0, rk.stream>>>(rk.send, sc, rk.rank, 0);
  CUDA_CHECK_LAST();
  for (int i = 0; i < o.warmup; ++i) launch(rk, c, sc, rc);
  CUDA_CHECK(cudaMemsetAsync(rk.recv, 0xFF, rc * sizeof(float), rk.stream));  // NaN: a call that writes nothing fails
  while (rk.events.size() < 2 * static_cast<size_t>(o.iters)) {
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreate(&e));
    rk.events.push_back(e);
  }
  for (int i = 0; i < o.iters; ++i) {
    CUDA_CHECK(cudaEventRecord(rk.events[2 * i], rk.stream));
    launch(rk, c, sc, rc);
    CUDA_CHECK(cudaEventRecord(rk.events[2 * i + 1], rk.stream));
  }
  wait_for(rk, o.timeout_s, "timed calls");
  rk.sec.assign(o.iters, 0.0);
  for (int i = 0; i < o.iters; ++i) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, rk.events[2 * i], rk.events[2 * i + 1]));
    rk.sec[i] = ms * 1e-3;
  }
  if (o.inject_error && rc > 0) {
    float wrong = 1e30f;
    CUDA_CHECK(cudaMemcpyAsync(rk.recv + rc / 2, &wrong, sizeof wrong, cudaMemcpyHostToDevice, rk.stream));
  }
  CUDA_CHECK(cudaMemsetAsync(rk.bad, 0, sizeof *rk.bad, rk.stream));
  int coll = c == Coll::allreduce ? 0 : c == Coll::allgather ? 1 : c == Coll::reducescatter ? 2
           : c == Coll::broadcast ? 3 : 4;
  size_t part = c == Coll::allgather ? sc : c == Coll::alltoall ? sc / n : rc;
  check_kernel<<<1024, 256, 0, rk.stream>>>(rk.recv, rc, coll, rk.rank, n, part, rk.bad);
  CUDA_CHECK_LAST();
  unsigned long long bad = 0;
  CUDA_CHECK(cudaMemcpyAsync(&bad, rk.bad, sizeof bad, cudaMemcpyDeviceToHost, rk.stream));
  CUDA_CHECK(cudaStreamSynchronize(rk.stream));
  return bad;
}

}  // namespace gpuaccept::nccl
