// gpuaccept-nccl's multi-process mode, the host logic with no CUDA or NCCL in it (unit-tested by
// tests/native/test_nccl_net.cpp): where a rank's number comes from, the communicator layouts (--comm), the bus
// bandwidth factors of the five collectives and the reading of NCCL's own INFO lines for the transport it chose.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuaccept::ncclnet {

// ---------------------------------------------------------------------------------------------
// Rank and size from the launcher's environment.
struct RankEnv {
  int rank = -1, size = 0, local_rank = 0;
  std::string source;  // the variable the rank came from
};

using Getenv = std::function<const char*(const char*)>;

inline int env_int(const Getenv& get, const char* name, int lo, int hi) {
  const char* v = get(name);
  std::string s = v ? v : "";
  size_t used = 0;
  long n = 0;
  try {
    n = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || n < lo || n > hi)
    throw std::invalid_argument(std::string("environment ") + name + "='" + s + "': a whole number from " +
                                std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<int>(n);
}

// The first launcher whose rank variable is set, in this order: gpuaccept's own (GPUACCEPT_RANK, _SIZE,
// _LOCAL_RANK), Open MPI's (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), Slurm's srun (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID), PMI's (PMI_RANK, PMI_SIZE; local rank from MPI_LOCALRANKID or PMI_LOCAL_RANK where set, else 0).
// Throws std::invalid_argument naming the variable that is missing or wrong, or saying that none is set.
inline RankEnv detect_rank(const Getenv& get) {
  struct Source {
    const char *rank, *size, *local1, *local2;
  };
  static const Source kSources[] = {
      {"GPUACCEPT_RANK", "GPUACCEPT_SIZE", "GPUACCEPT_LOCAL_RANK", nullptr},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", nullptr},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"},
  };
  for (const auto& s : kSources) {
    if (!get(s.rank)) continue;
    RankEnv r;
    r.source = s.rank;
    r.size = env_int(get, s.size, 1, 1 << 20);
    r.rank = env_int(get, s.rank, 0, r.size - 1);
    const char* local = get(s.local1) ? s.local1 : (s.local2 && get(s.local2)) ? s.local2 : nullptr;
    r.local_rank = local ? env_int(get, local, 0, 1 << 20) : 0;
    return r;
  }
  throw std::invalid_argument(
      "--multi-process: no rank in the environment: start under mpirun (OMPI_COMM_WORLD_RANK), srun (SLURM_PROCID), "
      "a PMI launcher (PMI_RANK), or set GPUACCEPT_RANK, GPUACCEPT_SIZE and GPUACCEPT_LOCAL_RANK");
}

inline RankEnv detect_rank() {
  return detect_rank([](const char* n) { return static_cast<const char*>(std::getenv(n)); });
}

// ---------------------------------------------------------------------------------------------
// "HOST:PORT" (GPUACCEPT_BOOTSTRAP): the host and the port, which must be 1..65535.
struct HostPort {
  std::string host;
  int port = 0;
};

inline HostPort parse_host_port(const std::string& s, const std::string& what) {
  const size_t colon = s.rfind(':');
  HostPort hp;
  if (colon == std::string::npos || colon == 0) throw std::invalid_argument(what + " '" + s + "': not HOST:PORT");
  hp.host = s.substr(0, colon);
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']') hp.host = hp.host.substr(1, hp.host.size() - 2);
  const std::string p = s.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(p) < 1 || std::stoi(p) > 65535)
    throw std::invalid_argument(what + " '" + s + "': the port must be a number from 1 to 65535");
  hp.port = std::stoi(p);
  return hp;
}

// ---------------------------------------------------------------------------------------------
// Communicator layouts (--comm).
enum class Layout { world, rail, groups };

struct CommSpec {
  Layout layout = Layout::world;
  std::vector<std::vector<int>> groups;  // Layout::groups: each group's world ranks, ascending
};

// One rank or an inclusive range "A-B" of ranks.
inline void add_ranks(const std::string& item, std::vector<int>& out, const std::string& spec) {
  auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 7 || t.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("option --comm '" + spec + "': '" + item + "' is not a rank or a range A-B");
    return std::stoi(t);
  };
  const size_t dash = item.find('-');
  const int lo = number(item.substr(0, dash));
  const int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
  if (hi < lo) throw std::invalid_argument("option --comm '" + spec + "': range '" + item + "' runs backwards");
  for (int r = lo; r <= hi; ++r) out.push_back(r);
}

// "world", "rail" or "groups:G,G,...": each G is ranks and ranges joined by '+' ("0-1", "0+5", "0-3+8").
// Groups must be disjoint and have at least two ranks; ranks in no group sit the run out. The ranks are
// checked against the world size later (check_groups), when it is known.
inline CommSpec parse_comm(const std::string& spec) {
  CommSpec c;
  if (spec == "world") return c;
  if (spec == "rail") {
    c.layout = Layout::rail;
    return c;
  }
  const std::string prefix = "groups:";
  if (spec.rfind(prefix, 0) != 0)
    throw std::invalid_argument("option --comm '" + spec + "': world, rail or groups:0-1,2-3 (ranks joined by +)");
  c.layout = Layout::groups;
  std::set<int> seen;
  size_t start = prefix.size();
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    const std::string g = spec.substr(start, comma - start);
    std::vector<int> ranks;
    size_t s = 0;
    while (s <= g.size()) {
      size_t plus = g.find('+', s);
      if (plus == std::string::npos) plus = g.size();
      add_ranks(g.substr(s, plus - s), ranks, spec);
      s = plus + 1;
    }
    std::sort(ranks.begin(), ranks.end());
    for (int r : ranks)
      if (!seen.insert(r).second)
        throw std::invalid_argument("option --comm '" + spec + "': rank " + std::to_string(r) + " is in two groups");
    if (ranks.size() < 2)
      throw std::invalid_argument("option --comm '" + spec + "': group '" + g + "' has fewer than two ranks");
    c.groups.push_back(ranks);
    start = comma + 1;
  }
  return c;
}

// Every rank of the groups below `size`; throws naming the first one that is not.
inline void check_groups(const CommSpec& c, int size) {
  for (const auto& g : c.groups)
    for (int r : g)
      if (r >= size)
        throw std::invalid_argument("option --comm: rank " + std::to_string(r) + " given, but the world has " +
                                    std::to_string(size) + " ranks (0.." + std::to_string(size - 1) + ")");
}

// The groups that run at once: world, one group of every rank; rail, one group per local rank index (the
// `local_ranks` of the world's ranks), in ascending rail order; groups, as given.
inline std::vector<std::vector<int>> groups_of(const CommSpec& c, const std::vector<int>& local_ranks) {
  const int n = static_cast<int>(local_ranks.size());
  if (c.layout == Layout::groups) return c.groups;
  std::vector<std::vector<int>> out;
  if (c.layout == Layout::world) {
    out.emplace_back();
    for (int r = 0; r < n; ++r) out.back().push_back(r);
    return out;
  }
  std::set<int> rails(local_ranks.begin(), local_ranks.end());
  for (int rail : rails) {
    out.emplace_back();
    for (int r = 0; r < n; ++r)
      if (local_ranks[r] == rail) out.back().push_back(r);
  }
  return out;
}

// The index in `groups` of the group holding `rank`; -1 where it is in none.
inline int group_of(const std::vector<std::vector<int>>& groups, int rank) {
  for (size_t g = 0; g < groups.size(); ++g)
    if (std::find(groups[g].begin(), groups[g].end(), rank) != groups[g].end()) return static_cast<int>(g);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// nccl-tests' bus bandwidth factors (NVIDIA nccl-tests, "Performance" document), n = ranks of the communicator.
inline double bus_factor(const std::string& coll, int n) {
  if (n < 1) return 0.0;
  if (coll == "allreduce") return 2.0 * (n - 1) / n;
  if (coll == "allgather" || coll == "reducescatter" || coll == "alltoall") return static_cast<double>(n - 1) / n;
  if (coll == "broadcast") return 1.0;
  throw std::invalid_argument("no bus factor for collective '" + coll + "'");
}

inline const char* bus_factor_formula(const std::string& coll) {
  if (coll == "allreduce") return "2(n-1)/n";
  if (coll == "broadcast") return "1";
  return "(n-1)/n";
}

// ---------------------------------------------------------------------------------------------
// The transport NCCL chose, from its INFO lines (NCCL_DEBUG=INFO), e.g.
//   "... NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0"
//   "... NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read"
// the word after "via " names it; the family (NET/Socket, NET/IB, P2P, SHM, CollNet, NVLS) is what is kept, and
// an unknown word is kept as written. "" for a line that names none.
inline std::string transport_of(const std::string& line) {
  if (line.find("NCCL INFO") == std::string::npos) return "";
  const size_t via = line.find(" via ");
  if (via == std::string::npos) return "";
  size_t b = via + 5;
  size_t e = line.find_first_of(" \t\r\n", b);
  std::string word = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
  if (word.empty()) return "";
  if (word.rfind("NET/", 0) == 0) {
    const size_t slash = word.find('/', 4);
    return slash == std::string::npos ? word : word.substr(0, slash);
  }
  for (const char* family : {"P2P", "SHM", "CollNet", "NVLS"})
    if (word.rfind(family, 0) == 0) return family;
  return word;
}

// The distinct transports in an INFO log's text, sorted; {"unknown"} where it names none.
inline std::vector<std::string> transports_in(const std::string& text) {
  std::set<std::string> found;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string t = transport_of(text.substr(start, nl - start));
    if (!t.empty()) found.insert(t);
    start = nl + 1;
  }
  if (found.empty()) return {"unknown"};
  return {found.begin(), found.end()};
}

}  // namespace gpuaccept::ncclnet
