// gpuaccept-nccl --multi-process: one rank's run, start to end (nccl_multi.cuh says what it does).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>

#include "nccl_core.cuh"
#include "nccl_multi_doc.cuh"
#include "nccl_multi_summary.h"
#include "nccl_net_bootstrap.h"

namespace gpuaccept::nccl {

// A rank's own GPU, communicators and figures.
struct MultiRank {
  Rank rk;
  ncclComm_t world = nullptr;
  int group = -1;  // index in MultiState::groups; -1: this rank sits the run out
  RankResult mine;
  bool ok = true;
};

// Records a rank's own error (sent to rank 0 with its figures) and stops the run at the next barrier.
inline void fail(MultiState& st, MultiRank& m, const std::string& e) {
  const std::string text = "rank " + std::to_string(st.env.rank) + ": " + e;
  m.mine.errors.push_back(e);
  st.error(text);
  m.ok = false;
}

// This rank's identity and GPU (--device, else its local rank); a GPU it cannot use is its error.
inline RankInfo identify(MultiState& st, MultiRank& m, const Options& o) {
  RankInfo me;
  me.rank = st.env.rank;
  me.local_rank = st.env.local_rank;
  me.hostname = hostname();
  const std::string hostid = getenv_str("NCCL_HOSTID");
  me.host = hostid.empty() ? me.hostname : hostid;
  const int dev = o.device >= 0 ? o.device : st.env.local_rank;
  std::string why;
  const int count = visible_devices(why);
  if (count == 0) {
    fail(st, m, why);
  } else if (dev >= count) {
    fail(st, m, "GPU " + std::to_string(dev) + (o.device >= 0 ? " (--device)" : " (the local rank)") + " is not visible: " +
                    std::to_string(count) + " device(s); CUDA_VISIBLE_DEVICES applies");
  } else {
    try {
      DeviceInfo d = device_info(dev);
      me.index = d.index;
      me.name = d.name;
      me.pci_bus_id = d.pci_bus_id;
      me.uuid = d.uuid;
      me.numa_node = d.numa_node;
      me.memory_bytes = d.memory_bytes;
      me.sm_count = d.sm_count;
      me.cc = d.cc;
      m.rk.dev = dev;
    } catch (const CallError& e) {
      fail(st, m, e.what());
    }
  }
  return me;
}

// This rank's stream and buffers on its GPU, where it is in a group (before NCCL: a rank that fails here stops
// every rank at the next barrier instead of leaving them waiting inside ncclCommInitRank).
inline void open_buffers(MultiState& st, MultiRank& m, const Options& o) {
  Rank& rk = m.rk;
  CUDA_CHECK(cudaSetDevice(rk.dev));
  if (m.group < 0) return;
  const auto& g = st.groups[m.group];
  rk.rank = static_cast<int>(std::find(g.begin(), g.end(), st.env.rank) - g.begin());
  size_t max_bytes = o.latency_bytes;
  for (size_t s : o.sizes) max_bytes = std::max(max_bytes, s);
  CUDA_CHECK(cudaStreamCreateWithFlags(&rk.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMalloc(&rk.send, max_bytes));
  CUDA_CHECK(cudaMalloc(&rk.recv, max_bytes));
  CUDA_CHECK(cudaMalloc(&rk.bad, sizeof *rk.bad));
}

// Calls `give_up` from a thread of its own unless it is destroyed within `seconds`: NCCL's initialisation blocks
// until every rank has joined, and neither an error of another rank nor a network NCCL cannot use ends it.
class Watchdog {
 public:
  Watchdog(double seconds, std::function<void()> give_up)
      : t_([this, seconds, give_up] {
          std::unique_lock<std::mutex> l(m_);
          if (!cv_.wait_for(l, std::chrono::duration<double>(seconds), [this] { return done_; })) give_up();
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    t_.join();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread t_;
};

// The world communicator and this rank's group's (ncclCommSplit; the world itself for --comm world). Where they
// are not made within --timeout-s, `give_up` ends the process (run_multi: rank 0 writes its document first).
inline void open_comms(MultiState& st, MultiRank& m, const Options& o, const ncclUniqueId& id,
                       const std::function<void()>& give_up) {
  Rank& rk = m.rk;
  CUDA_CHECK(cudaSetDevice(rk.dev));
  Watchdog watchdog(o.timeout_s, give_up);
  NCCL_CHECK(ncclCommInitRank(&m.world, st.env.size, id, st.env.rank));
  if (st.comm.layout == Layout::world)
    rk.comm = m.world;
  else
    NCCL_CHECK(ncclCommSplit(m.world, m.group >= 0 ? m.group : NCCL_SPLIT_NOCOLOR, st.env.rank, &rk.comm, nullptr));
}

// A rank stopped by another rank's failure measured nothing more, which is not a success: its own error (not sent
// to rank 0, whose document has the failing rank's reason).
inline void stopped(MultiState& st, const MultiRank& m, const std::string& where) {
  if (m.ok && st.env.rank != 0)
    st.error("rank " + std::to_string(st.env.rank) + ": stopped " + where +
             ": another rank failed (rank 0's document names it)");
}

// Every step, each after a barrier of all ranks; stops when any rank has failed.
inline void measure_steps(MultiState& st, MultiRank& m, Bootstrap& boot, const Options& o,
                          const std::vector<Step>& steps) {
  const double wait_s = o.timeout_s + o.bootstrap_timeout_s;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!boot.barrier(m.ok, wait_s)) {
      stopped(st, m, std::string("before ") + net_coll(steps[i].c).key + " " + std::to_string(steps[i].bytes0) +
                         " bytes");
      return;
    }
    if (m.group < 0) continue;
    const int n = static_cast<int>(st.groups[m.group].size());
    const size_t bytes = step_bytes(steps[i].c, steps[i].bytes0, n);
    if (bytes == 0) continue;
    const char* key = net_coll(steps[i].c).key;
    try {
      const unsigned long long bad = run_rank(m.rk, o, steps[i].c, bytes, n);
      m.mine.steps[i] = {bytes, bad, m.rk.sec};
      ++m.mine.checked;
      if (bad && st.env.rank != 0)  // rank 0 records the group's failure from every rank's count
        st.failure("rank " + std::to_string(st.env.rank) + " " + key + " " + std::to_string(bytes) + " bytes: " +
                   std::to_string(bad) + " wrong elements");
    } catch (const CallError& e) {
      // wait_for has aborted the group's communicator where it gave up; any other failure aborts it here. With
      // --comm world it is the world communicator, which is then gone too.
      if (m.rk.comm) ncclCommAbort(m.rk.comm);
      m.rk.comm = nullptr;
      if (st.comm.layout == Layout::world) m.world = nullptr;
      fail(st, m, std::string(key) + " " + std::to_string(bytes) + " bytes: " + e.what());
    }
  }
}

// Releases the rank's resources; communicators are aborted rather than destroyed after a failure.
inline void close_rank(MultiRank& m) {
  Rank& rk = m.rk;
  if (rk.dev < 0) return;
  cudaSetDevice(rk.dev);
  if (rk.stream) cudaStreamSynchronize(rk.stream);
  auto finish = [&](ncclComm_t c) {
    if (c) m.ok ? ncclCommDestroy(c) : ncclCommAbort(c);
  };
  if (rk.comm != m.world) finish(rk.comm);
  finish(m.world);
  for (auto e : rk.events) cudaEventDestroy(e);
  if (rk.bad) cudaFree(rk.bad);
  if (rk.recv) cudaFree(rk.recv);
  if (rk.send) cudaFree(rk.send);
  if (rk.stream) cudaStreamDestroy(rk.stream);
}

// Rank 0's table of every group's rows on stdout.
inline void print_groups(const MultiState& st) {
  std::printf("%-24s %-14s %12s %6s %12s %12s %12s %s\n", "group", "collective", "bytes", "ranks", "time us",
              "algbw GB/s", "busbw GB/s", "verified");
  for (const auto& g : st.out)
    for (const auto& r : g.rows)
      std::printf("%-24s %-14s %12zu %6zu %12.2f %12.2f %12.2f %s\n", g.label.c_str(), net_coll(r.c).key, r.bytes,
                  g.ranks.size(), r.sec_median * 1e6, r.algbw, r.busbw, r.verified ? "yes" : "NO");
}

// The rank's run after the bootstrap: communicators, steps, teardown, figures to rank 0 (which summarises).
inline void run_joined(MultiState& st, MultiRank& m, Bootstrap& boot, const Options& o, const std::vector<Step>& steps,
                       const std::function<void()>& give_up) {
  const double wait_s = o.timeout_s + o.bootstrap_timeout_s;
  std::vector<int> local_ranks;
  for (const auto& r : st.infos) local_ranks.push_back(r.local_rank);
  st.groups = groups_of(st.comm, local_ranks);
  m.group = group_of(st.groups, st.env.rank);
  ncclUniqueId id;
  if (!from_hex(st.infos[0].extra, &id, sizeof id)) fail(st, m, "rank 0 sent no ncclUniqueId");
  if (m.ok) {
    try {
      open_buffers(st, m, o);
    } catch (const CallError& e) {
      fail(st, m, e.what());
    }
  }
  if (boot.barrier(m.ok, wait_s)) {
    try {
      open_comms(st, m, o, id, give_up);
    } catch (const CallError& e) {
      fail(st, m, e.what());
    }
    measure_steps(st, m, boot, o, steps);
  } else {
    stopped(st, m, "before NCCL started");
  }
  close_rank(m);
  m.mine.transports = read_transports(st.nccl_env);
  const auto all = boot.gather(encode(m.mine), wait_s);
  if (st.env.rank != 0) return;
  for (size_t r = 0; r < all.size(); ++r) {
    st.results.push_back(r == 0 ? m.mine : decode(all[r], steps.size()));
    if (r > 0)
      for (const auto& e : st.results.back().errors) st.error("rank " + std::to_string(r) + " (" + st.infos[r].host + "): " + e);
  }
  summarise(st, o, steps);
  print_groups(st);
}

// The whole multi-process run of one rank; its exit code. Rank 0 writes the document.
inline int run_multi(const Options& o, const Invocation& run) {
  MultiState st;
  HostPort at{"127.0.0.1", 0};
  try {
    st.env = detect_rank();
    st.comm = parse_comm(o.comm);
    check_groups(st.comm, st.env.size);
    const std::string b = getenv_str("GPUACCEPT_BOOTSTRAP");
    if (b.empty() && st.env.size > 1)
      throw std::invalid_argument("--multi-process with " + std::to_string(st.env.size) +
                                  " ranks: set GPUACCEPT_BOOTSTRAP=HOST:PORT (rank 0's host and a free port) in every rank");
    if (!b.empty()) at = parse_host_port(b, "GPUACCEPT_BOOTSTRAP");
    st.bootstrap = b.empty() ? "none (one rank)" : "tcp://" + b;
    st.nccl_env = prepare_nccl_env(o.allow_nvls, o.ring, o.nccl_log_dir, st.env.rank);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "gpuaccept-nccl: %s\n", e.what());
    return kExitUsage;
  }
  const bool lead = st.env.rank == 0;
  auto write_doc = [&] {
    return !lead || write_document(o.output, "gpuaccept-nccl", [&] { return multi_document(st, o, run); });
  };
  const std::vector<Step> steps = steps_of(o);
  MultiRank m;
  m.rk.dev = -1;
  m.mine.steps.resize(steps.size());
  RankInfo me = identify(st, m, o);
  Bootstrap boot;
  try {
    if (lead) {
      ncclUniqueId id;
      NCCL_CHECK(ncclGetUniqueId(&id));
      me.extra = to_hex(&id, sizeof id);
    }
    const auto payloads = boot.join(at, st.env.rank, st.env.size, to_payload(me), o.bootstrap_timeout_s);
    for (size_t r = 0; r < payloads.size(); ++r)
      st.infos.push_back(r == static_cast<size_t>(st.env.rank) ? me : from_payload(static_cast<int>(r), payloads[r]));
    st.infos[st.env.rank].rank = st.env.rank;
    // NCCL's initialisation that does not finish: the reason recorded, rank 0's document written, the process ended
    // (the thread inside NCCL cannot be stopped otherwise).
    auto give_up = [&] {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", o.timeout_s);
      st.error("rank " + std::to_string(st.env.rank) + ": NCCL's initialisation (ncclCommInitRank/ncclCommSplit) did " +
               "not finish within --timeout-s " + limit + " s: a rank failed inside it, or the ranks cannot reach " +
               "each other through NCCL's own sockets (NCCL_SOCKET_IFNAME)");
      write_doc();
      std::_Exit(kExitCallFailed);
    };
    run_joined(st, m, boot, o, steps, give_up);
  } catch (const std::exception& e) {  // the bootstrap's, or a failed call before the communicators
    st.error(std::string("rank ") + std::to_string(st.env.rank) + ": " + e.what());
    close_rank(m);
  }
  return st.exit_code(write_doc());
}

}  // namespace gpuaccept::nccl
