// gpuaccept-nccl --multi-process: what rank 0 makes of every rank's figures, free of CUDA (unit-tested on the host:
// tests/native/test_nccl_net.cpp): the steps every rank runs, a rank's figures as sent to rank 0, each group's rows
// and metrics, and the node-level metrics (the worst over the groups).
#pragma once

#include <algorithm>
#include <iomanip>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "nccl_multi_env.h"
#include "nccl_net_host.h"
#include "nccl_types.h"
#include "tool_main.h"

namespace gpuaccept::nccl {

using namespace gpuaccept::ncclnet;

struct NetColl {
  Coll c;
  const char* key;
  const char* call;
  const char* size_is;
};

const NetColl kNetColls[] = {
    {Coll::allreduce, "allreduce", "ncclAllReduce(ncclFloat, ncclSum), out of place", "each rank's buffer"},
    {Coll::allgather, "allgather", "ncclAllGather(ncclFloat), out of place", "the gathered buffer (ranks x each rank's part)"},
    {Coll::reducescatter, "reducescatter", "ncclReduceScatter(ncclFloat, ncclSum), out of place",
     "the buffer scattered (ranks x each rank's result)"},
    {Coll::alltoall, "alltoall", "ncclSend/ncclRecv to and from every rank in one group call (float), out of place",
     "each rank's send buffer (ranks blocks, one per peer)"},
    {Coll::broadcast, "broadcast", "ncclBroadcast(ncclFloat, root 0), out of place", "the broadcast buffer"},
};

inline const NetColl& net_coll(Coll c) {
  for (const auto& k : kNetColls)
    if (k.c == c) return k;
  return kNetColls[0];
}

// One measurement step, the same on every rank: all-reduce at --latency-bytes first, then each collective over
// the sweep.
struct Step {
  Coll c;
  size_t bytes0;
};

inline std::vector<Step> steps_of(const Options& o) {
  std::vector<Step> steps;
  for (const auto& k : kNetColls) {
    if (k.c == Coll::allreduce && std::find(o.sizes.begin(), o.sizes.end(), o.latency_bytes) == o.sizes.end())
      steps.push_back({k.c, o.latency_bytes});
    for (size_t s : o.sizes) steps.push_back({k.c, s});
  }
  return steps;
}

// A step's size on a communicator of n ranks: a multiple of n x 4 bytes where the collective splits the buffer
// among the ranks, of 4 bytes otherwise.
inline size_t step_bytes(Coll c, size_t bytes0, int n) {
  const bool split = c == Coll::allgather || c == Coll::reducescatter || c == Coll::alltoall;
  const size_t unit = (split ? static_cast<size_t>(n) : 1) * sizeof(float);
  return bytes0 / unit * unit;
}

// What one rank found, sent to rank 0 as lines of text.
struct StepResult {
  size_t bytes = 0;  // 0: the rank did not take part
  unsigned long long mismatches = 0;
  std::vector<double> sec;
};

struct RankResult {
  long checked = 0;
  std::vector<StepResult> steps;
  std::vector<std::string> transports, errors;
};

inline std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

inline std::string encode(const RankResult& r) {
  std::ostringstream os;
  os << std::setprecision(17) << "checked " << r.checked << "\n";
  for (size_t i = 0; i < r.steps.size(); ++i) {
    os << "step " << i << " " << r.steps[i].bytes << " " << r.steps[i].mismatches;
    for (double t : r.steps[i].sec) os << " " << t;
    os << "\n";
  }
  for (const auto& t : r.transports) os << "transport " << one_line(t) << "\n";
  for (const auto& e : r.errors) os << "error " << one_line(e) << "\n";
  return os.str();
}

inline RankResult decode(const std::string& text, size_t nsteps) {
  RankResult r;
  r.steps.resize(nsteps);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    std::string rest = line.size() > kind.size() + 1 ? line.substr(kind.size() + 1) : "";
    if (kind == "checked") {
      ls >> r.checked;
    } else if (kind == "step") {
      size_t i = 0;
      ls >> i;
      if (i >= nsteps) continue;
      StepResult& s = r.steps[i];
      ls >> s.bytes >> s.mismatches;
      double t;
      while (ls >> t) s.sec.push_back(t);
    } else if (kind == "transport") {
      r.transports.push_back(rest);
    } else if (kind == "error") {
      r.errors.push_back(rest);
    }
  }
  return r;
}

// A group's summary on rank 0.
struct GroupOut {
  int index = 0, rail = -1;
  std::vector<int> ranks;
  std::string label;
  std::set<std::string> transports;
  std::vector<Row> rows;
  std::vector<Metric> metrics;
  Waived waived;
};

struct MultiState : Outcome {
  MultiState() : Outcome("gpuaccept-nccl") {}
  RankEnv env;
  CommSpec comm;
  NcclEnv nccl_env;
  std::string bootstrap;
  std::vector<RankInfo> infos;         // every rank's, by rank (rank 0: all; others: all after the bootstrap)
  std::vector<RankResult> results;     // rank 0: every rank's
  std::vector<std::vector<int>> groups;
  std::vector<GroupOut> out;           // rank 0
};

// The group's rows from its ranks' step results; verification failures recorded in st.
inline void summarise_rows(MultiState& st, const Options& o, const std::vector<Step>& steps, GroupOut& g) {
  const int n = static_cast<int>(g.ranks.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepResult& lead = st.results[g.ranks[0]].steps[i];
    if (lead.bytes == 0) continue;
    Row row;
    row.c = steps[i].c;
    row.bytes = lead.bytes;
    size_t sc = 0, rc = 0;
    counts(row.c, row.bytes, n, sc, rc);
    row.count = row.c == Coll::reducescatter ? rc : sc;
    row.iters = o.iters;
    std::vector<double> it(o.iters, 0.0);
    bool complete = true;
    for (int r : g.ranks) {
      const StepResult& s = st.results[r].steps[i];
      complete = complete && s.sec.size() == static_cast<size_t>(o.iters);
      for (size_t k = 0; k < s.sec.size() && k < it.size(); ++k) it[k] = std::max(it[k], s.sec[k]);
      row.mismatches += s.mismatches;
    }
    if (!complete) continue;
    row.sec_median = median(it);
    row.sec_min = min_of(it);
    row.sec_max = max_of(it);
    row.algbw = row.bytes / row.sec_median / 1e9;
    row.busbw = row.algbw * ncclnet::bus_factor(net_coll(row.c).key, n);
    row.verified = row.mismatches == 0;
    if (!row.verified)
      st.failure("group " + g.label + " " + net_coll(row.c).key + " " + std::to_string(row.bytes) + " bytes: " +
                 std::to_string(row.mismatches) + " wrong elements" + (o.inject_error ? " (--inject-error self-test)" : ""));
    g.rows.push_back(row);
  }
}

// The group's own metrics: each collective's largest bus bandwidth, the all-reduce time at --latency-bytes.
inline void group_metrics(const Options& o, GroupOut& g) {
  const int n = static_cast<int>(g.ranks.size());
  const std::string of = " in group " + g.label + " (" + std::to_string(n) + " ranks)";
  for (const auto& k : kNetColls) {
    const std::string name = std::string(k.key) + "_busbw_gbps_max";
    if (n < 2) {
      g.waived.push_back({name, "a group of one rank: no peers"});
      continue;
    }
    double best = NAN;
    size_t at = 0;
    for (const auto& r : g.rows)
      if (r.c == k.c && r.verified && r.bytes != o.latency_bytes && std::isfinite(r.busbw) && !(r.busbw <= best)) {
        best = r.busbw;
        at = r.bytes;
      }
    if (std::isfinite(best))
      g.metrics.push_back({name, "GB/s", "higher", std::string("largest ") + k.key + " bus bandwidth over the sweep "
                           "(nccl-tests' busbw, median of the timed calls; at " + std::to_string(at) + " bytes)" + of, best});
  }
  if (n < 2) {
    g.waived.push_back({"allreduce_latency_us", "a group of one rank: no peers"});
    return;
  }
  for (const auto& r : g.rows)
    if (r.c == Coll::allreduce && r.verified && r.bytes == o.latency_bytes)
      g.metrics.push_back({"allreduce_latency_us", "us", "lower", "median all-reduce time at " +
                           std::to_string(r.bytes) + " bytes" + of, r.sec_median * 1e6});
}

// The node-level metrics: per name, the worst over the groups (min of a "higher", max of a "lower"), naming the
// group; waived where every group waived it; absent (not measured, which the judge fails) where a group that
// did not waive it has no figure (e.g. its every row failed verification).
inline void overall_metrics(const MultiState& st, std::vector<Metric>& metrics, Waived& waived) {
  std::vector<std::string> names;
  for (const auto& k : kNetColls) names.push_back(std::string(k.key) + "_busbw_gbps_max");
  names.push_back("allreduce_latency_us");
  for (const auto& name : names) {
    const Metric* worst = nullptr;
    const GroupOut* at = nullptr;
    std::string why;
    bool gap = false;
    for (const auto& g : st.out) {
      bool has = false;
      for (const auto& w : g.waived) has = has || w.first == name;
      for (const auto& m : g.metrics) has = has || m.name == name;
      gap = gap || !has;
      for (const auto& m : g.metrics)
        if (m.name == name && (!worst || (m.better == "higher" ? m.value < worst->value : m.value > worst->value))) {
          worst = &m;
          at = &g;
        }
      for (const auto& w : g.waived)
        if (w.first == name) why = w.second;
    }
    if (worst && !gap) {
      Metric m = *worst;
      m.description = (m.better == "higher" ? "minimum over the " : "maximum over the ") + std::to_string(st.out.size()) +
                      " communicator groups of: " + worst->description + "; set by group " + at->label;
      metrics.push_back(m);
    } else if (!worst && !why.empty()) {
      waived.push_back({name, why});
    }
  }
}

// Rank 0: every group's rows and metrics from the gathered results.
inline void summarise(MultiState& st, const Options& o, const std::vector<Step>& steps) {
  for (size_t gi = 0; gi < st.groups.size(); ++gi) {
    GroupOut g;
    g.index = static_cast<int>(gi);
    g.ranks = st.groups[gi];
    if (st.comm.layout == Layout::rail) g.rail = st.infos[g.ranks[0]].local_rank;
    for (int r : g.ranks) {
      g.label += (g.label.empty() ? "" : "+") + std::to_string(r) + "@" + st.infos[r].host;
      for (const auto& t : st.results[r].transports) g.transports.insert(t);
    }
    summarise_rows(st, o, steps, g);
    group_metrics(o, g);
    st.out.push_back(std::move(g));
  }
  for (const auto& r : st.results) st.checked += r.checked;
}

}  // namespace gpuaccept::nccl
