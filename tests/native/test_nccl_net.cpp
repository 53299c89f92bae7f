// Unit tests of gpuaccept-nccl's multi-process host logic (reframe_checks/src/nccl/nccl_net_host.h,
// nccl_net_bootstrap.h and nccl_multi_summary.h), compiled and run by tests/test_nccl_multi.py: rank detection from
// each launcher's variables, the --comm layouts, the bus factors, the transport read from NCCL's INFO lines, the TCP
// bootstrap over loopback (ranks as threads), including a rank that never comes, and rank 0's summary of the
// ranks' figures (rows, each group's metrics, the node-level worst over the groups), from figures made up here.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "nccl_multi_summary.h"
#include "nccl_net_bootstrap.h"
#include "nccl_net_host.h"

using namespace gpuaccept::ncclnet;
using gpuaccept::nccl::Coll;

namespace {

int failures = 0;

#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);         \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

// The message of what `f` throws, "" where it throws nothing.
template <typename F>
std::string thrown(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Getenv env_of(const std::map<std::string, std::string>& m) {
  return [m](const char* n) -> const char* {
    auto it = m.find(n);
    return it == m.end() ? nullptr : it->second.c_str();
  };
}

void test_rank_detection() {
  RankEnv r = detect_rank(env_of({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "16"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  EXPECT(r.rank == 5 && r.size == 16 && r.local_rank == 1 && r.source == "OMPI_COMM_WORLD_RANK");
  r = detect_rank(env_of({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"}}));
  EXPECT(r.rank == 3 && r.size == 8 && r.local_rank == 3 && r.source == "SLURM_PROCID");
  r = detect_rank(env_of({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}));
  EXPECT(r.rank == 2 && r.size == 4 && r.local_rank == 0);
  // gpuaccept's own variables win over a launcher's (the emulation runs inside an allocation).
  r = detect_rank(env_of({{"GPUACCEPT_RANK", "1"}, {"GPUACCEPT_SIZE", "2"}, {"GPUACCEPT_LOCAL_RANK", "0"},
                          {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  EXPECT(r.rank == 1 && r.size == 2 && r.source == "GPUACCEPT_RANK");
  EXPECT(contains(thrown([] { detect_rank(env_of({})); }), "no rank in the environment"));
  EXPECT(contains(thrown([] { detect_rank(env_of({{"SLURM_PROCID", "8"}, {"SLURM_NTASKS", "8"}})); }),
                  "SLURM_PROCID='8'"));
  EXPECT(contains(thrown([] { detect_rank(env_of({{"PMI_RANK", "0"}})); }), "PMI_SIZE=''"));
  EXPECT(contains(thrown([] { detect_rank(env_of({{"GPUACCEPT_RANK", "x"}, {"GPUACCEPT_SIZE", "2"}})); }),
                  "GPUACCEPT_RANK='x'"));
}

void test_host_port() {
  HostPort hp = parse_host_port("node01:29500", "GPUACCEPT_BOOTSTRAP");
  EXPECT(hp.host == "node01" && hp.port == 29500);
  hp = parse_host_port("[fe80::1]:80", "GPUACCEPT_BOOTSTRAP");
  EXPECT(hp.host == "fe80::1" && hp.port == 80);
  EXPECT(contains(thrown([] { parse_host_port("node01", "GPUACCEPT_BOOTSTRAP"); }), "not HOST:PORT"));
  EXPECT(contains(thrown([] { parse_host_port("node01:70000", "GPUACCEPT_BOOTSTRAP"); }), "1 to 65535"));
}

void test_layouts() {
  EXPECT(parse_comm("world").layout == Layout::world);
  CommSpec c = parse_comm("groups:0-1,2+5,3-4+7");
  EXPECT(c.layout == Layout::groups && c.groups.size() == 3);
  EXPECT((c.groups[1] == std::vector<int>{2, 5}) && (c.groups[2] == std::vector<int>{3, 4, 7}));
  EXPECT(contains(thrown([] { parse_comm("groups:0-1,1-2"); }), "rank 1 is in two groups"));
  EXPECT(contains(thrown([] { parse_comm("groups:0-1,3"); }), "group '3' has fewer than two ranks"));
  EXPECT(contains(thrown([] { parse_comm("groups:0-x"); }), "'0-x' is not a rank"));
  EXPECT(contains(thrown([] { parse_comm("groups:3-1"); }), "runs backwards"));
  EXPECT(contains(thrown([] { parse_comm("ring"); }), "world, rail or groups:"));
  EXPECT(contains(thrown([] { check_groups(parse_comm("groups:0-1,2-8"), 8); }), "rank 8 given, but the world has 8"));
  // 2 hosts x 4 GPUs: rails are the ranks of one local index, one per host.
  std::vector<int> local = {0, 1, 2, 3, 0, 1, 2, 3};
  auto rails = groups_of(parse_comm("rail"), local);
  EXPECT(rails.size() == 4 && (rails[0] == std::vector<int>{0, 4}) && (rails[3] == std::vector<int>{3, 7}));
  auto world = groups_of(parse_comm("world"), local);
  EXPECT(world.size() == 1 && world[0].size() == 8);
  EXPECT(group_of(c.groups, 5) == 1 && group_of(c.groups, 6) == -1);
}

void test_bus_factors() {
  EXPECT(bus_factor("allreduce", 8) == 2.0 * 7 / 8);
  EXPECT(bus_factor("alltoall", 4) == 0.75 && bus_factor("allgather", 2) == 0.5);
  EXPECT(bus_factor("reducescatter", 1) == 0.0 && bus_factor("broadcast", 16) == 1.0);
  EXPECT(std::string(bus_factor_formula("alltoall")) == "(n-1)/n");
  EXPECT(contains(thrown([] { bus_factor("gather", 2); }), "no bus factor"));
}

void test_transports() {
  // Lines in the layout NCCL 2.x prints them (NCCL_DEBUG=INFO, "Channel ... via <transport>").
  EXPECT(transport_of("vm:123:456 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0") == "NET/Socket");
  EXPECT(transport_of("n1:1:2 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/CUMEM/read") == "P2P");
  EXPECT(transport_of("n1:1:2 [1] NCCL INFO Channel 02/0 : 3[3] -> 4[0] [receive] via NET/IB/0/GDRDMA") == "NET/IB");
  EXPECT(transport_of("n1:1:2 [1] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct") == "SHM");
  EXPECT(transport_of("n1:1:2 [1] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2") == "");
  EXPECT(transport_of("a line about a via that is not NCCL's") == "");
  auto t = transports_in("x NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
                         "x NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/Socket/1\n"
                         "x NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC\n");
  EXPECT((t == std::vector<std::string>{"NET/Socket", "P2P"}));
  EXPECT((transports_in("") == std::vector<std::string>{"unknown"}));
}

void test_bootstrap(int port) {
  const int n = 3;
  std::vector<std::vector<std::string>> seen(n);
  std::vector<std::string> gathered, errors(n);
  std::vector<int> barrier(n, -1);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r)
    ranks.emplace_back([&, r] {
      try {
        Bootstrap b;
        seen[r] = b.join({"127.0.0.1", port}, r, n, "host" + std::to_string(r) + "\tgpu", 10.0);
        barrier[r] = b.barrier(r != 2, 10.0);  // rank 2 says it failed: every rank stops
        auto all = b.gather("figures of " + std::to_string(r), 10.0);
        if (r == 0) gathered = all;
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT(errors[r].empty());
    EXPECT(seen[r].size() == 3 && seen[r][1] == "host1\tgpu" && seen[r][2] == "host2\tgpu");
    EXPECT(barrier[r] == 0);
  }
  EXPECT(gathered.size() == 3 && gathered[2] == "figures of 2");
}

void test_missing_rank(int port) {
  // A world of three where rank 2 never starts: rank 0 names it, rank 1 hears rank 0 give up.
  std::string e0, e1;
  std::thread r1([&] { e1 = thrown([&] { Bootstrap b; b.join({"127.0.0.1", port}, 1, 3, "p", 1.5); }); });
  e0 = thrown([&] { Bootstrap b; b.join({"127.0.0.1", port}, 0, 3, "p", 1.0); });
  r1.join();
  EXPECT(contains(e0, "1 of 3 ranks never came: rank 2 "));
  EXPECT(contains(e1, "rank 0 did not answer or closed its connection"));
  // Nobody listens: a rank names the address it could not reach.
  std::string e2 = thrown([&] { Bootstrap b; b.join({"127.0.0.1", port + 1}, 1, 2, "p", 1.0); });
  EXPECT(contains(e2, "rank 1 could not reach rank 0 at tcp://127.0.0.1:" + std::to_string(port + 1)));
}

// Four ranks on two hosts as two pairs; every rank of pair {2,3} takes twice as long as pair {0,1}, and one rank
// of pair {0,1} counts wrong elements in all-to-all.
void test_summary() {
  namespace nc = gpuaccept::nccl;
  nc::Options o;
  o.sizes = {1 << 20};
  o.iters = 3;
  o.latency_bytes = 8;
  const auto steps = nc::steps_of(o);
  EXPECT(steps.size() == 6 && steps[0].c == Coll::allreduce && steps[0].bytes0 == 8 && steps[4].c == Coll::alltoall);
  EXPECT(nc::step_bytes(Coll::alltoall, 1000, 3) == 996 && nc::step_bytes(Coll::allreduce, 1002, 3) == 1000);
  nc::MultiState st;
  st.env.size = 4;
  st.comm = parse_comm("groups:0-1,2-3");
  st.groups = st.comm.groups;
  for (int r = 0; r < 4; ++r) {
    RankInfo info;
    info.rank = r;
    info.host = r < 2 ? "hA" : "hB";
    st.infos.push_back(info);
    nc::RankResult res;
    res.checked = static_cast<long>(steps.size());
    for (const auto& step : steps) {
      const double t = (r < 2 ? 1e-3 : 2e-3) * (1 + 0.1 * (r % 2));  // the second rank of a pair is 10 % slower
      res.steps.push_back({nc::step_bytes(step.c, step.bytes0, 2), 0, {t, t * 0.5, t * 3}});
    }
    if (r == 1) res.steps[4].mismatches = 7;
    res.transports = {"NET/Socket"};
    // What rank 0 receives: the figures through their text form.
    st.results.push_back(nc::decode(nc::encode(res), steps.size()));
  }
  EXPECT(st.results[3].steps[1].sec.size() == 3 && std::abs(st.results[3].steps[1].sec[0] - 2.2e-3) < 1e-15);
  nc::summarise(st, o, steps);
  EXPECT(st.checked == 24 && st.out.size() == 2 && st.out[1].label == "2@hB+3@hB");
  const nc::Row& ar = st.out[0].rows[1];  // all-reduce, 1 MiB, pair {0,1}: per call the slower rank, then the median
  auto near = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::abs(b); };
  EXPECT(ar.bytes == (1u << 20) && near(ar.sec_median, 1.1e-3) && near(ar.sec_min, 0.55e-3) && near(ar.sec_max, 3.3e-3));
  EXPECT(std::abs(ar.busbw - (1 << 20) / 1.1e-3 / 1e9 * 1.0) < 1e-9);
  EXPECT(st.failures.size() == 1 && contains(st.failures[0], "group 0@hA+1@hA alltoall 1048576 bytes: 7 wrong"));
  std::vector<gpuaccept::Metric> metrics;
  gpuaccept::Waived waived;
  nc::overall_metrics(st, metrics, waived);
  auto find = [&](const std::string& name) -> const gpuaccept::Metric* {
    for (const auto& m : metrics)
      if (m.name == name) return &m;
    return nullptr;
  };
  // The slow pair sets the node's all-reduce bandwidth (the minimum) and latency (the maximum).
  const auto* bw = find("allreduce_busbw_gbps_max");
  EXPECT(bw && std::abs(bw->value - (1 << 20) / 2.2e-3 / 1e9) < 1e-9 && contains(bw->description, "group 2@hB+3@hB"));
  const auto* lat = find("allreduce_latency_us");
  EXPECT(lat && std::abs(lat->value - 2200.0) < 1e-6 && contains(lat->description, "at 8 bytes"));
  // Pair {0,1} has no verified all-to-all: the node has no all-to-all figure (not the other pair's).
  EXPECT(find("alltoall_busbw_gbps_max") == nullptr && find("broadcast_busbw_gbps_max") != nullptr);
  EXPECT(waived.empty());
}

}  // namespace

int main(int argc, char** argv) {
  const int port = argc > 1 ? std::atoi(argv[1]) : 29611;
  test_rank_detection();
  test_host_port();
  test_layouts();
  test_bus_factors();
  test_transports();
  test_bootstrap(port);
  test_missing_rank(port + 2);
  test_summary();
  if (failures) std::fprintf(stderr, "%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
