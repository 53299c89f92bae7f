// gpuaccept-nccl's multi-process bootstrap: a TCP star with rank 0 at the centre, no MPI needed (unit-tested by
// tests/native/test_nccl_net.cpp over loopback).
//
// Rank 0 listens on GPUACCEPT_BOOTSTRAP's port (every address); every other rank connects to HOST:PORT, retrying
// until --bootstrap-timeout-s, and says who it is (its rank, the world size and a payload: its host and GPU).
// Rank 0 waits for all of them, then sends every rank the payloads of all ranks (rank 0's first, its payload
// carrying the ncclUniqueId). After that the same connections carry the barrier before each measurement step (each
// rank's "still fine" flag, so one rank's failure stops all of them) and the gathering of every rank's figures to
// rank 0. Every wait has a deadline; a rank that never comes, or whose connection closes, is named.
// Messages are length-prefixed byte strings (4 bytes, big-endian).
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nccl_net_host.h"

namespace gpuaccept::ncclnet {

struct BootstrapError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Clock = std::chrono::steady_clock;

inline int ms_left(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<long long>(ms, 1 << 30));
}

// Waits until `fd` is readable (or writable); false at the deadline.
inline bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, ms_left(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw BootstrapError(std::string("poll: ") + std::strerror(errno));
  }
}

// Sends or receives exactly n bytes; false when the peer closed or the deadline passed.
inline bool send_all(int fd, const char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    if (!wait_fd(fd, POLLOUT, deadline)) return false;
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

inline bool recv_all(int fd, char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, deadline)) return false;
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

inline bool send_msg(int fd, const std::string& m, Clock::time_point deadline) {
  uint32_t len = htonl(static_cast<uint32_t>(m.size()));
  return send_all(fd, reinterpret_cast<const char*>(&len), 4, deadline) && send_all(fd, m.data(), m.size(), deadline);
}

inline bool recv_msg(int fd, std::string& m, Clock::time_point deadline) {
  uint32_t len = 0;
  if (!recv_all(fd, reinterpret_cast<char*>(&len), 4, deadline)) return false;
  len = ntohl(len);
  if (len > (64u << 20)) return false;
  m.assign(len, '\0');
  return recv_all(fd, m.data(), len, deadline);
}

class Bootstrap {
 public:
  // Joins the world: rank 0 listens at `at`'s port, the others connect to it; each gives its `payload`.
  // Returns the payloads of every rank, by rank. Throws BootstrapError naming the rank(s) that never came.
  std::vector<std::string> join(const HostPort& at, int rank, int size, const std::string& payload,
                                double timeout_s) {
    rank_ = rank;
    size_ = size;
    where_ = at.host + ":" + std::to_string(at.port);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s));
    std::vector<std::string> all(size);
    if (rank == 0) {
      all[0] = payload;
      accept_all(at.port, deadline, all);
      std::string table;
      for (const auto& p : all) table += frame(p);
      for (int r = 1; r < size; ++r)
        if (!send_msg(peers_[r], table, deadline)) throw lost(r, "sending the table of ranks");
    } else {
      connect_to(at, deadline, timeout_s);
      std::string hello = std::to_string(rank) + " " + std::to_string(size) + "\n" + payload;
      if (!send_msg(fd_, hello, deadline)) throw lost(0, "saying hello");
      std::string table;
      if (!recv_msg(fd_, table, deadline)) throw lost(0, "waiting for the table of ranks");
      size_t pos = 0;
      for (int r = 0; r < size; ++r) all[r] = unframe(table, pos);
    }
    return all;
  }

  // Every rank's `ok`, and false for all of them if any is false: the barrier before each step.
  bool barrier(bool ok, double timeout_s) {
    auto all = gather(ok ? "1" : "0", timeout_s);
    bool every = true;
    if (rank_ == 0) {
      for (const auto& s : all) every = every && s == "1";
      for (int r = 1; r < size_; ++r)
        if (!send_msg(peers_[r], every ? "1" : "0", deadline_in(timeout_s))) throw lost(r, "the barrier");
      return every;
    }
    std::string m;
    if (!recv_msg(fd_, m, deadline_in(timeout_s))) throw lost(0, "the barrier");
    return m == "1";
  }

  // Rank 0: every rank's `mine`, by rank; the other ranks: {} after sending theirs.
  std::vector<std::string> gather(const std::string& mine, double timeout_s) {
    const auto deadline = deadline_in(timeout_s);
    if (rank_ != 0) {
      if (!send_msg(fd_, mine, deadline)) throw lost(0, "sending to rank 0");
      return {};
    }
    std::vector<std::string> all(size_);
    all[0] = mine;
    for (int r = 1; r < size_; ++r)
      if (!recv_msg(peers_[r], all[r], deadline)) throw lost(r, "gathering to rank 0");
    return all;
  }

  ~Bootstrap() {
    for (int fd : peers_)
      if (fd >= 0) ::close(fd);
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  static Clock::time_point deadline_in(double s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  static std::string frame(const std::string& p) { return std::to_string(p.size()) + ":" + p; }
  static std::string unframe(const std::string& t, size_t& pos) {
    size_t colon = t.find(':', pos);
    if (colon == std::string::npos) throw BootstrapError("bootstrap: malformed table of ranks from rank 0");
    size_t n = std::stoul(t.substr(pos, colon - pos));
    std::string p = t.substr(colon + 1, n);
    pos = colon + 1 + n;
    return p;
  }
  BootstrapError lost(int peer, const std::string& when) const {
    return BootstrapError("bootstrap (tcp://" + where_ + "): rank " + std::to_string(peer) +
                          " did not answer or closed its connection (" + when + ", seen from rank " +
                          std::to_string(rank_) + ")");
  }

  void accept_all(int port, Clock::time_point deadline, std::vector<std::string>& all) {
    int ls = ::socket(AF_INET6, SOCK_STREAM, 0);
    bool v6 = ls >= 0;
    if (!v6) ls = ::socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) throw BootstrapError(std::string("bootstrap: socket: ") + std::strerror(errno));
    int one = 1, zero = 0;
    ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage ss{};
    socklen_t sl;
    if (v6) {
      ::setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = htons(static_cast<uint16_t>(port));
      sl = sizeof *a;
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = htons(static_cast<uint16_t>(port));
      sl = sizeof *a;
    }
    if (::bind(ls, reinterpret_cast<sockaddr*>(&ss), sl) != 0 || ::listen(ls, 1024) != 0) {
      std::string e = std::strerror(errno);
      ::close(ls);
      throw BootstrapError("bootstrap: rank 0 cannot listen on port " + std::to_string(port) + ": " + e +
                           " (GPUACCEPT_BOOTSTRAP)");
    }
    peers_.assign(size_, -1);
    int arrived = 1;
    while (arrived < size_) {
      if (!wait_fd(ls, POLLIN, deadline)) {
        ::close(ls);
        throw BootstrapError(missing_ranks());
      }
      int fd = ::accept(ls, nullptr, nullptr);
      if (fd < 0) continue;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::string hello;
      int r = -1, n = -1;
      size_t nl = std::string::npos;
      if (recv_msg(fd, hello, deadline) && (nl = hello.find('\n')) != std::string::npos)
        std::sscanf(hello.substr(0, nl).c_str(), "%d %d", &r, &n);
      if (n != size_ || r < 1 || r >= size_ || peers_[r] >= 0) {
        ::close(fd);
        ::close(ls);
        throw BootstrapError("bootstrap: rank 0 (world size " + std::to_string(size_) + ") got a hello from rank " +
                             std::to_string(r) + " of a world of " + std::to_string(n) +
                             (r >= 1 && r < size_ && peers_[r] >= 0 ? " (that rank came twice)" : "") +
                             ": every rank must be started with the same size and its own rank");
      }
      peers_[r] = fd;
      all[r] = hello.substr(nl + 1);
      ++arrived;
    }
    ::close(ls);
  }

  std::string missing_ranks() const {
    std::string m;
    int count = 0;
    for (int r = 1; r < size_; ++r)
      if (peers_[r] < 0) {
        if (count < 16) m += (m.empty() ? "" : ", ") + std::to_string(r);
        ++count;
      }
    if (count > 16) m += " and " + std::to_string(count - 16) + " more";
    return "bootstrap: rank 0 waited at port " + where_.substr(where_.rfind(':') + 1) + " but " +
           std::to_string(count) + " of " + std::to_string(size_) + " ranks never came: rank" +
           (count > 1 ? "s " : " ") + m + " (not started, failed before connecting, or cannot reach " + where_ +
           ")";
  }

  void connect_to(const HostPort& at, Clock::time_point deadline, double timeout_s) {
    std::string last = "no answer";
    while (Clock::now() < deadline) {
      addrinfo hints{}, *res = nullptr;
      hints.ai_socktype = SOCK_STREAM;
      int gai = ::getaddrinfo(at.host.c_str(), std::to_string(at.port).c_str(), &hints, &res);
      if (gai != 0) {
        last = std::string("cannot resolve ") + at.host + ": " + gai_strerror(gai);
      } else {
        for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
          int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
          if (fd < 0) continue;
          if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            fd_ = fd;
          } else {
            last = std::strerror(errno);
            ::close(fd);
          }
        }
        ::freeaddrinfo(res);
      }
      if (fd_ >= 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", timeout_s);
    throw BootstrapError("bootstrap: rank " + std::to_string(rank_) + " could not reach rank 0 at tcp://" + where_ +
                         " within --bootstrap-timeout-s " + buf + " s (" + last +
                         "): is rank 0 started, and GPUACCEPT_BOOTSTRAP its host?");
  }

  int rank_ = 0, size_ = 1, fd_ = -1;
  std::string where_;
  std::vector<int> peers_;
};

}  // namespace gpuaccept::ncclnet
