// Host stand-ins for the NCCL calls of gpuaccept_hpl_gpu.cu (cuda_runtime.h here says why): each communicator is
// an MPI communicator split from MPI_COMM_WORLD by the unique id (its creator's world rank and a count), so every
// rank of the job must call ncclCommInitRank for each communicator at the same point; a broadcast is MPI_Bcast,
// and the sends and receives of a group start together at ncclGroupEnd and complete there.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <vector>

#include "cuda_runtime.h"

typedef enum { ncclSuccess = 0, ncclInternalError = 3 } ncclResult_t;
typedef enum { ncclDouble = 7 } ncclDataType_t;
struct ncclUniqueId {
  char internal[128];
};
struct gpuaccept_host_nccl {
  MPI_Comm comm;
};
typedef gpuaccept_host_nccl* ncclComm_t;

namespace gpuaccept_host {
struct P2p {
  bool send;
  void* buf;
  size_t count;
  int peer;
  ncclComm_t comm;
};
inline int group_depth = 0;
inline std::vector<P2p> group;
inline int ids_made = 0;
constexpr size_t kPiece = (size_t)1 << 28;  // doubles per MPI message

inline ncclResult_t run_p2p(const std::vector<P2p>& ops) {
  std::vector<MPI_Request> req;
  for (const P2p& op : ops) {
    double* p = static_cast<double*>(op.buf);
    for (size_t off = 0, piece = 0; off < op.count; off += kPiece, ++piece) {
      req.emplace_back();
      const int n = (int)std::min(kPiece, op.count - off);
      if (op.send) {
        MPI_Isend(p + off, n, MPI_DOUBLE, op.peer, (int)piece, op.comm->comm, &req.back());
      } else {
        MPI_Irecv(p + off, n, MPI_DOUBLE, op.peer, (int)piece, op.comm->comm, &req.back());
      }
    }
  }
  return MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE) == MPI_SUCCESS ? ncclSuccess
                                                                                        : ncclInternalError;
}
}  // namespace gpuaccept_host

inline const char* ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "host stand-in error"; }

inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::memset(id->internal, 0, sizeof(id->internal));
  const int v[2] = {rank, gpuaccept_host::ids_made++};
  std::memcpy(id->internal, v, sizeof(v));
  return ncclSuccess;
}
inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int, ncclUniqueId id, int rank) {
  int v[2];
  std::memcpy(v, id.internal, sizeof(v));
  *comm = new gpuaccept_host_nccl;
  return MPI_Comm_split(MPI_COMM_WORLD, v[0] * 4096 + v[1] % 4096, rank, &(*comm)->comm) == MPI_SUCCESS
             ? ncclSuccess
             : ncclInternalError;
}
inline ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t, int root, ncclComm_t comm,
                                  cudaStream_t) {
  int rank = 0;
  MPI_Comm_rank(comm->comm, &rank);
  if (rank == root && send != recv) std::memmove(recv, send, count * sizeof(double));
  double* p = static_cast<double*>(recv);
  for (size_t off = 0; off < count; off += gpuaccept_host::kPiece) {
    MPI_Bcast(p + off, (int)std::min(gpuaccept_host::kPiece, count - off), MPI_DOUBLE, root, comm->comm);
  }
  return ncclSuccess;
}
inline ncclResult_t ncclGroupStart() {
  ++gpuaccept_host::group_depth;
  return ncclSuccess;
}
inline ncclResult_t ncclGroupEnd() {
  if (--gpuaccept_host::group_depth > 0) return ncclSuccess;
  std::vector<gpuaccept_host::P2p> ops;
  ops.swap(gpuaccept_host::group);
  return gpuaccept_host::run_p2p(ops);
}
inline ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t, int peer, ncclComm_t comm, cudaStream_t) {
  gpuaccept_host::P2p op{true, const_cast<void*>(buf), count, peer, comm};
  if (gpuaccept_host::group_depth > 0) {
    gpuaccept_host::group.push_back(op);
    return ncclSuccess;
  }
  return gpuaccept_host::run_p2p({op});
}
inline ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t, int peer, ncclComm_t comm, cudaStream_t) {
  gpuaccept_host::P2p op{false, buf, count, peer, comm};
  if (gpuaccept_host::group_depth > 0) {
    gpuaccept_host::group.push_back(op);
    return ncclSuccess;
  }
  return gpuaccept_host::run_p2p({op});
}
