// gpuaccept-nccl --multi-process: one rank per process, one GPU per rank, ranks on any number of hosts
// (docs/checks/nccl.md, "Across processes and hosts"). The launcher gives each process its rank (nccl_net_host.h),
// the ranks meet at rank 0 over TCP (nccl_net_bootstrap.h), share the world's ncclUniqueId there and create one
// communicator (ncclCommInitRank); --comm rail and --comm groups: split it (ncclCommSplit) into communicators that
// run at the same time. Every (collective, size) step starts after a barrier of all ranks; each rank times and
// verifies its own calls as in single-process mode (run_rank), and at the end sends its figures to rank 0, which
// writes the one document (docs/benchmark-json.md, "Multi-process mode").
#pragma once

#include "nccl_core.cuh"
#include "nccl_multi_summary.h"
#include "nccl_net_bootstrap.h"
#include "nccl_multi_doc.cuh"
#include "nccl_multi_run.cuh"
