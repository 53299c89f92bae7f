// gpuaccept-nccl's multi-process mode: what is set in the process before NCCL starts (NVLink SHARP off, --ring,
// NCCL's INFO lines to a per-rank file for the transport it chose), and who a rank is (its host and GPU), as it
// travels to rank 0 through the bootstrap. No CUDA here.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "nccl_net_host.h"

namespace gpuaccept::ncclnet {

// What the environment became, for the document.
struct NcclEnv {
  std::string nvls_note;
  std::string algo, proto;   // NCCL_ALGO, NCCL_PROTO as NCCL sees them ("" unset)
  std::string debug_file;    // where this rank's INFO lines go ("" where the transport cannot be read)
  bool own_debug_file = false;  // gpuaccept chose the file (removed after reading unless --nccl-log-dir)
};

inline std::string getenv_str(const char* n) {
  const char* v = std::getenv(n);
  return v ? v : "";
}

// Sets what the run needs before NCCL's first call; throws std::invalid_argument (a usage error) where the
// environment contradicts the options: NCCL_NVLS_ENABLE on without --allow-nvls, NCCL_ALGO other than Ring
// with --ring, an --nccl-log-dir that cannot be written.
inline NcclEnv prepare_nccl_env(bool allow_nvls, bool ring, const std::string& log_dir, int rank) {
  NcclEnv e;
  const std::string nvls = getenv_str("NCCL_NVLS_ENABLE");
  if (allow_nvls) {
    e.nvls_note = "left to NCCL (--allow-nvls; NCCL_NVLS_ENABLE=" + (nvls.empty() ? std::string("unset") : nvls) + ")";
  } else if (!nvls.empty() && nvls != "0") {
    throw std::invalid_argument("NCCL_NVLS_ENABLE=" + nvls + " in the environment: pass --allow-nvls to measure with NVLS");
  } else {
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    e.nvls_note = "off (NCCL_NVLS_ENABLE=0)";
  }
  if (ring) {
    const std::string algo = getenv_str("NCCL_ALGO");
    if (!algo.empty() && algo != "Ring" && algo != "ring" && algo != "RING")
      throw std::invalid_argument("option --ring sets NCCL_ALGO=Ring, but NCCL_ALGO=" + algo + " is set");
    setenv("NCCL_ALGO", "Ring", 1);
  }
  e.algo = getenv_str("NCCL_ALGO");
  e.proto = getenv_str("NCCL_PROTO");
  const std::string file = getenv_str("NCCL_DEBUG_FILE");
  if (!file.empty()) {  // the operator's file: readable only where it names no NCCL pattern (%h, %p)
    if (file.find('%') == std::string::npos) e.debug_file = file;
    return e;
  }
  if (!log_dir.empty() && ::access(log_dir.c_str(), W_OK | X_OK) != 0)
    throw std::invalid_argument("option --nccl-log-dir " + log_dir + ": not a directory this rank can write");
  std::string dir = log_dir.empty() ? getenv_str("TMPDIR") : log_dir;
  if (dir.empty()) dir = "/tmp";
  e.debug_file = dir + "/gpuaccept-nccl-rank" + std::to_string(rank) + "-" + std::to_string(getpid()) + ".log";
  e.own_debug_file = log_dir.empty();
  setenv("NCCL_DEBUG_FILE", e.debug_file.c_str(), 1);
  if (getenv_str("NCCL_DEBUG").empty()) setenv("NCCL_DEBUG", "INFO", 1);
  if (getenv_str("NCCL_DEBUG_SUBSYS").empty()) setenv("NCCL_DEBUG_SUBSYS", "INIT,P2P", 1);
  return e;
}

// The transports in this rank's INFO file (transports_in); {"unknown"} where there is none to read. Removes a
// file gpuaccept chose itself.
inline std::vector<std::string> read_transports(const NcclEnv& e) {
  if (e.debug_file.empty()) return {"unknown"};
  std::ifstream f(e.debug_file);
  std::stringstream ss;
  ss << f.rdbuf();
  if (e.own_debug_file) std::remove(e.debug_file.c_str());
  return transports_in(ss.str());
}

// Who a rank is: what it tells rank 0 at the bootstrap, tab-separated.
struct RankInfo {
  int rank = 0, local_rank = 0, index = -1, sm_count = 0;
  long long numa_node = -1;
  unsigned long long memory_bytes = 0;
  std::string host, hostname, name, pci_bus_id, uuid, cc, extra;  // extra: rank 0's ncclUniqueId (hex)
};

inline std::string clean(std::string s) {
  for (auto& c : s)
    if (c == '\t' || c == '\n') c = ' ';
  return s;
}

inline std::string to_payload(const RankInfo& r) {
  std::ostringstream os;
  os << r.local_rank << '\t' << r.index << '\t' << r.sm_count << '\t' << r.numa_node << '\t' << r.memory_bytes << '\t'
     << clean(r.host) << '\t' << clean(r.hostname) << '\t' << clean(r.name) << '\t' << clean(r.pci_bus_id) << '\t'
     << clean(r.uuid) << '\t' << clean(r.cc) << '\t' << r.extra;
  return os.str();
}

inline RankInfo from_payload(int rank, const std::string& p) {
  std::vector<std::string> f;
  size_t s = 0;
  while (s <= p.size()) {
    size_t t = p.find('\t', s);
    if (t == std::string::npos) t = p.size();
    f.push_back(p.substr(s, t - s));
    s = t + 1;
  }
  if (f.size() != 12) throw std::runtime_error("rank " + std::to_string(rank) + " sent a malformed hello");
  RankInfo r;
  r.rank = rank;
  r.local_rank = std::stoi(f[0]);
  r.index = std::stoi(f[1]);
  r.sm_count = std::stoi(f[2]);
  r.numa_node = std::stoll(f[3]);
  r.memory_bytes = std::stoull(f[4]);
  r.host = f[5];
  r.hostname = f[6];
  r.name = f[7];
  r.pci_bus_id = f[8];
  r.uuid = f[9];
  r.cc = f[10];
  r.extra = f[11];
  return r;
}

inline std::string to_hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<const unsigned char*>(p)[i];
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

inline bool from_hex(const std::string& s, void* p, size_t n) {
  if (s.size() != 2 * n) return false;
  auto v = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < n; ++i) static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(v(s[2 * i]) * 16 + v(s[2 * i + 1]));
  return true;
}

}  // namespace gpuaccept::ncclnet
