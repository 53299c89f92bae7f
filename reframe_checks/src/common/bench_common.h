// Shared pieces of gpuaccept's micro-benchmarks: a small JSON writer, error macros that name the failing
// call, file and line, host facts (CPU model, NUMA nodes), statistics and the atomic result-file write.
// The document these produce is described in docs/benchmark-json.md.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef GPUACCEPT_GIT_REV
#define GPUACCEPT_GIT_REV "unknown"
#endif
#ifndef GPUACCEPT_VERSION
#define GPUACCEPT_VERSION "0.1.0"
#endif

namespace gpuaccept {

// Exit codes shared by every benchmark (docs/benchmark-json.md).
constexpr int kExitOk = 0;
constexpr int kExitCallFailed = 1;
constexpr int kExitVerifyFailed = 2;
constexpr int kExitUsage = 3;

// Thrown by the CHECK macros; main() catches it, records it in "errors" and exits kExitCallFailed.
struct CallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string where(const char* call, const char* file, int line, const std::string& what) {
  std::ostringstream os;
  os << call << " failed at " << file << ":" << line << ": " << what;
  return os.str();
}

// Evaluates `call` once; where its status is not `ok`, throws CallError naming `text` (the call as written), the
// file and the line, with `describe(status)`. Each library's CHECK macro is this with its own status.
#define GPUACCEPT_CHECK(text, call, ok, describe)                                                          \
  do {                                                                                                     \
    const auto status_ = (call);                                                                           \
    if (status_ != (ok))                                                                                   \
      throw ::gpuaccept::CallError(::gpuaccept::where(text, __FILE__, __LINE__, describe(status_)));       \
  } while (0)

// The CUDA tools, and gpuaccept-mpi-cuda (a host compiler with cuda_runtime.h).
#if defined(__CUDACC__) || defined(CUDART_VERSION)
#define CUDA_CHECK(call) GPUACCEPT_CHECK(#call, call, cudaSuccess, cudaGetErrorString)
// After a kernel launch: the launch error, if any.
#define CUDA_CHECK_LAST() CUDA_CHECK(cudaGetLastError())
// For the tools that include cublas_v2.h.
#define CUBLAS_CHECK(call)                                                                     \
  GPUACCEPT_CHECK(#call, call, CUBLAS_STATUS_SUCCESS, [](cublasStatus_t s) {                   \
    return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s);              \
  })
#endif

// ---------------------------------------------------------------------------------------------
// JSON writer: builds a document in memory; numbers stay numbers (NaN/inf become null).
class Json {
 public:
  Json& begin_object() { sep(); os_ << '{'; first_.push_back(true); return *this; }
  Json& end_object() { os_ << '}'; first_.pop_back(); return *this; }
  Json& begin_array() { sep(); os_ << '['; first_.push_back(true); return *this; }
  Json& end_array() { os_ << ']'; first_.pop_back(); return *this; }
  Json& key(const std::string& k) {
    sep();
    str(k);
    os_ << ':';
    after_key_ = true;
    return *this;
  }
  Json& value(const std::string& s) { sep(); str(s); return *this; }
  Json& value(const char* s) {
    if (!s) return null();
    return value(std::string(s));
  }
  Json& value(bool b) { sep(); os_ << (b ? "true" : "false"); return *this; }
  Json& value(int v) { sep(); os_ << v; return *this; }
  Json& value(long v) { sep(); os_ << v; return *this; }
  Json& value(long long v) { sep(); os_ << v; return *this; }
  Json& value(unsigned v) { sep(); os_ << v; return *this; }
  Json& value(unsigned long v) { sep(); os_ << v; return *this; }
  Json& value(unsigned long long v) { sep(); os_ << v; return *this; }
  Json& value(double v) {
    sep();
    if (!std::isfinite(v)) {
      os_ << "null";
    } else {
      std::ostringstream tmp;
      tmp << std::setprecision(9) << v;
      os_ << tmp.str();
    }
    return *this;
  }
  Json& null() { sep(); os_ << "null"; return *this; }
  template <typename T>
  Json& kv(const std::string& k, const T& v) { key(k); return value(v); }
  Json& kv_null(const std::string& k) { key(k); return null(); }
  // Key `k` and an array of each element of `xs`, in order.
  template <typename Seq>
  Json& kv_array(const std::string& k, const Seq& xs) {
    key(k).begin_array();
    for (const auto& x : xs) value(x);
    return end_array();
  }
  // Key `k` and an array of one object for each element of `xs`, in order, whose members `write(x)` adds.
  template <typename Seq, typename Write>
  Json& kv_objects(const std::string& k, const Seq& xs, Write write) {
    key(k).begin_array();
    for (const auto& x : xs) {
      begin_object();
      write(x);
      end_object();
    }
    return end_array();
  }
  std::string str() const { return os_.str(); }

 private:
  void sep() {
    if (after_key_) { after_key_ = false; return; }
    if (!first_.empty()) {
      if (!first_.back()) os_ << ',';
      first_.back() = false;
    }
  }
  void str(const std::string& s) {
    os_ << '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': os_ << "\\\""; break;
        case '\\': os_ << "\\\\"; break;
        case '\n': os_ << "\\n"; break;
        case '\r': os_ << "\\r"; break;
        case '\t': os_ << "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            os_ << buf;
          } else {
            os_ << c;
          }
      }
    }
    os_ << '"';
  }
  std::ostringstream os_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

// ---------------------------------------------------------------------------------------------
// The closing sections of every document (docs/benchmark-json.md): metrics, waived metrics, verification,
// errors. Each tool decides what `passed` means for its own measurements.
struct Metric {
  std::string name, unit, better, description;
  double value;
};
using Waived = std::vector<std::pair<std::string, std::string>>;

// One GPU's own figure of a per-GPU metric: `name` is the metric of the document's "metrics" that it enters (the
// min or max over the GPUs), so that the judge gives each GPU a row of its own (docs/benchmark-json.md,
// "gpu_metrics").
struct GpuMetric {
  int gpu;  // the document's device index
  std::string name, unit, better;
  double value;
};
using GpuMetrics = std::vector<GpuMetric>;

// The document's "gpu_metrics": one entry per GPU, in the order the GPUs first appear in `figures`, each with its
// figures by name ({"gpu": 0, "metrics": {"fp64_tflops_min": {"value": 53.1, "unit": "TFLOP/s", ...}}}).
inline void write_gpu_metrics(Json& j, const GpuMetrics& figures) {
  std::vector<int> gpus;
  for (const auto& f : figures)
    if (std::find(gpus.begin(), gpus.end(), f.gpu) == gpus.end()) gpus.push_back(f.gpu);
  j.kv_objects("gpu_metrics", gpus, [&](int gpu) {
    j.kv("gpu", gpu).key("metrics").begin_object();
    for (const auto& f : figures)
      if (f.gpu == gpu) j.key(f.name).begin_object().kv("value", f.value).kv("unit", f.unit).kv("better", f.better).end_object();
    j.end_object();
  });
}

// The closing sections; "gpu_metrics" follows "metrics" where a tool has per-GPU figures (none: no key).
inline void write_outcome(Json& j, const std::vector<Metric>& metrics, const Waived& waived, bool passed,
                          long checked, const std::vector<std::string>& failures,
                          const std::vector<std::string>& errors, const GpuMetrics& gpu_metrics = {}) {
  j.key("metrics").begin_object();
  for (const auto& m : metrics) {
    j.key(m.name).begin_object();
    j.kv("value", m.value).kv("unit", m.unit).kv("better", m.better).kv("description", m.description);
    j.end_object();
  }
  j.end_object();
  if (!gpu_metrics.empty()) write_gpu_metrics(j, gpu_metrics);
  j.key("waived").begin_object();
  for (const auto& w : waived) j.kv(w.first, w.second);
  j.end_object();
  j.key("verification").begin_object();
  j.kv("passed", passed).kv("checked", checked);
  j.key("failures").begin_array();
  for (const auto& f : failures) j.value(f);
  j.end_array();
  j.end_object();
  j.key("errors").begin_array();
  for (const auto& e : errors) j.value(e);
  j.end_array();
}

// ---------------------------------------------------------------------------------------------
// Host facts.
struct NumaNode {
  int id;
  std::vector<int> cpus;
};

inline std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

// Parses a Linux cpulist ("0-3,8,10-11") into CPU numbers.
inline std::vector<int> parse_cpulist(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty() || part == "\n") continue;
    auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        cpus.push_back(std::stoi(part));
      } else {
        int lo = std::stoi(part.substr(0, dash)), hi = std::stoi(part.substr(dash + 1));
        for (int c = lo; c <= hi; ++c) cpus.push_back(c);
      }
    } catch (const std::exception&) {
      throw std::runtime_error("cannot parse cpulist '" + text + "'");
    }
  }
  return cpus;
}

// NUMA nodes with CPUs, from /sys/devices/system/node. A machine without that tree is one node
// holding every online CPU.
inline std::vector<NumaNode> numa_nodes() {
  std::vector<NumaNode> nodes;
  for (int id = 0; id < 1024; ++id) {
    std::string list = read_first_line("/sys/devices/system/node/node" + std::to_string(id) + "/cpulist");
    if (list.empty()) {
      if (access(("/sys/devices/system/node/node" + std::to_string(id)).c_str(), F_OK) != 0 && id > 0 &&
          nodes.size() > 0 && access(("/sys/devices/system/node/node" + std::to_string(id + 1)).c_str(), F_OK) != 0)
        break;
      continue;
    }
    auto cpus = parse_cpulist(list);
    if (!cpus.empty()) nodes.push_back({id, cpus});
  }
  if (nodes.empty()) {
    NumaNode all{0, {}};
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < n; ++c) all.cpus.push_back(c);
    nodes.push_back(all);
  }
  return nodes;
}

inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "unknown";
}

inline std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// The release in a /proc/driver/nvidia/version line: its first token shaped like 580.159.04, or "".
//   "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue ..."
//   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
inline std::string parse_driver_release(const std::string& line) {
  std::stringstream ss(line);
  std::string tok;
  while (ss >> tok) {
    bool digits_and_dots = !tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])) &&
                           tok.find('.') != std::string::npos &&
                           tok.find_first_not_of("0123456789.") == std::string::npos;
    if (digits_and_dots) return tok;
  }
  return "";
}

// The NVIDIA kernel driver's release ("580.159.04"), or "" where the driver is not loaded.
inline std::string driver_release() {
  return parse_driver_release(read_first_line("/proc/driver/nvidia/version"));
}

inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// SplitMix64's finaliser: a well-mixed 64-bit hash of z, for the tools' reproducible inputs and sample positions.
inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Writes the common top-level keys that precede "cuda"/"devices" (docs/benchmark-json.md).
inline void write_preamble(Json& j, const char* tool, int argc, char** argv, const std::string& started,
                           double elapsed_s, const std::string& timing) {
  j.kv("schema", "gpuaccept.bench/1");
  j.kv("tool", tool);
  j.kv("tool_version", GPUACCEPT_VERSION);
  j.kv("git_revision", GPUACCEPT_GIT_REV);
  j.key("command_line").begin_array();
  for (int i = 0; i < argc; ++i) j.value(argv[i]);
  j.end_array();
  j.kv("started_utc", started);
  j.kv("elapsed_s", elapsed_s);
  j.kv("timing", timing);
  j.key("host").begin_object();
  j.kv("hostname", hostname());
  j.kv("cpu_model", cpu_model());
  j.kv("logical_cpus", static_cast<long>(sysconf(_SC_NPROCESSORS_ONLN)));
  j.kv_objects("numa_nodes", numa_nodes(), [&](const NumaNode& n) { j.kv("id", n.id).kv_array("cpus", n.cpus); });
  j.end_object();
}

// ---------------------------------------------------------------------------------------------
// Statistics over samples (copies; callers keep their raw samples).
inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
inline double min_of(const std::vector<double>& v) {
  return v.empty() ? NAN : *std::min_element(v.begin(), v.end());
}
inline double max_of(const std::vector<double>& v) {
  return v.empty() ? NAN : *std::max_element(v.begin(), v.end());
}

// ---------------------------------------------------------------------------------------------
// Writes `text` to `path` atomically: a temporary file in the same directory, fsync, rename.
// Throws std::runtime_error naming the path when the directory is not writable.
inline void write_file_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (fsync(fileno(f)) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + err);
  }
}

// The document's parameters.environment: each variable's value, null where unset.
template <typename Names>
void write_environment(Json& j, const Names& names) {
  j.key("environment").begin_object();
  for (const char* v : names) {
    const char* val = std::getenv(v);
    if (val) j.kv(v, val); else j.kv_null(v);
  }
  j.end_object();
}
inline void write_environment(Json& j, std::initializer_list<const char*> names) {
  write_environment<std::initializer_list<const char*>>(j, names);
}

// Splits "a,b,c".
inline std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ','))
    if (!part.empty()) out.push_back(part);
  return out;
}

// Minimal option parsing: --name value / --name=value / --flag.
class Args {
 public:
  Args(int argc, char** argv) : argv_(argv + 1, argv + argc) {}
  // --help or -h anywhere on the line.
  bool help() {
    bool h = flag("help");
    for (const auto& s : argv_) h = h || s == "-h";
    return h;
  }
  bool flag(const std::string& name) {
    for (size_t i = 0; i < argv_.size(); ++i)
      if (argv_[i] == "--" + name) { used_.push_back(i); return true; }
    return false;
  }
  std::string get(const std::string& name, const std::string& def) {
    for (size_t i = 0; i < argv_.size(); ++i) {
      if (argv_[i] == "--" + name) {
        if (i + 1 >= argv_.size()) throw std::invalid_argument("option --" + name + " needs a value");
        used_.push_back(i);
        used_.push_back(i + 1);
        return argv_[i + 1];
      }
      if (argv_[i].rfind("--" + name + "=", 0) == 0) {
        used_.push_back(i);
        return argv_[i].substr(name.size() + 3);
      }
    }
    return def;
  }
  double get_double(const std::string& name, double def) {
    std::string v = get(name, "");
    return v.empty() ? def : number(name, v);
  }
  long get_long(const std::string& name, long def) {
    std::string v = get(name, "");
    return v.empty() ? def : whole_number(name, v);
  }
  // --name S: seconds in (0, max], `def` where not given.
  double get_seconds(const std::string& name, double def, double max) {
    const double v = get_double(name, def);
    if (!(v > 0.0 && v <= max)) {
      char bound[32];
      std::snprintf(bound, sizeof bound, "%g", max);
      throw std::invalid_argument("option --" + name + ": must be in (0, " + bound + "] seconds");
    }
    return v;
  }
  // --gpus all|LIST (default all), its syntax checked: "all" or device indices such as 0,1. select_gpus
  // checks the indices against the devices visible at run time.
  std::string get_gpus() {
    std::string spec = get("gpus", "all");
    if (spec == "all") return spec;
    auto parts = split_csv(spec);
    if (parts.empty()) throw std::invalid_argument("option --gpus: empty list");
    for (const auto& s : parts)
      if (s.find_first_not_of("0123456789") != std::string::npos || s.size() > 4)
        throw std::invalid_argument("option --gpus: '" + s + "' is not a device index (use 'all' or e.g. 0,1)");
    return spec;
  }
  // `text`, a value of option --name (or an item of its list), as a number; std::invalid_argument naming the
  // option where it is not one.
  static double number(const std::string& name, const std::string& text) {
    return converted<double>(name, text, "a number",
                             [](const std::string& t, size_t* pos) { return std::stod(t, pos); });
  }
  // The same, as a whole number.
  static long whole_number(const std::string& name, const std::string& text) {
    return converted<long>(name, text, "a whole number",
                           [](const std::string& t, size_t* pos) { return std::stol(t, pos); });
  }
  // Call after every get/flag: any argument not consumed is an error naming it.
  void reject_unknown() {
    for (size_t i = 0; i < argv_.size(); ++i)
      if (std::find(used_.begin(), used_.end(), i) == used_.end())
        throw std::invalid_argument("unknown argument '" + argv_[i] + "' (see --help)");
  }

 private:
  // `text` through `convert` (std::stod or std::stol), all of it; std::invalid_argument saying that it is not
  // `what` otherwise.
  template <typename T, typename Convert>
  static T converted(const std::string& name, const std::string& text, const char* what, Convert convert) {
    try {
      size_t pos;
      T v = convert(text, &pos);
      if (pos != text.size()) throw std::invalid_argument("");
      return v;
    } catch (const std::exception&) {
      throw std::invalid_argument("option --" + name + ": '" + text + "' is not " + what);
    }
  }

  std::vector<std::string> argv_;
  std::vector<size_t> used_;
};

// Device indices chosen with --gpus ("all" or a list such as "0,2"), each below `count`, without repeats.
// Throws std::invalid_argument naming the option for an index that is not visible.
inline std::vector<int> select_gpus(const std::string& spec, int count);

// The start of every benchmark's main(): parses the options with `parse(args)`, called unless --help or -h is
// on the line (gpuaccept-mpi's `parse(argc, argv, help)` sees --help itself, among its other options). Returns
// the exit code to leave with (usage on --help, kExitUsage with a message naming the option on a bad one), or
// -1 to go on.
template <typename Options, typename Parse>
int parse_or_exit(Parse parse, int argc, char** argv, const char* tool, const char* usage, Options& o) {
  bool help = false;
  try {
    if constexpr (std::is_invocable_v<Parse, Args&>) {
      Args a(argc, argv);
      help = a.help();
      if (!help) o = parse(a);
    } else {
      o = parse(argc, argv, help);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n%s", tool, e.what(), usage);
    return kExitUsage;
  }
  if (help) {
    std::fputs(usage, stdout);
    return kExitOk;
  }
  return -1;
}

// Writes a run's JSON document to `path` (nothing when `path` is empty); false, with a message naming the
// path on stderr, when it cannot be written.
template <typename MakeText>
bool write_document(const std::string& path, const char* tool, MakeText make_text) {
  if (path.empty()) return true;
  try {
    write_file_atomic(path, make_text());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return false;
  }
}

inline std::vector<int> select_gpus(const std::string& spec, int count) {
  std::vector<int> ids;
  if (spec == "all") {
    for (int i = 0; i < count; ++i) ids.push_back(i);
    return ids;
  }
  for (const auto& s : split_csv(spec)) {
    int id = std::stoi(s);
    if (id >= count)
      throw std::invalid_argument("option --gpus: device " + std::to_string(id) + " not visible (" +
                                  std::to_string(count) + " device(s); CUDA_VISIBLE_DEVICES applies)");
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

#ifdef __CUDACC__
// The number of visible CUDA devices; 0 when there is none or the runtime cannot start, with `why` saying
// "no CUDA device found: <the runtime's error>".
inline int visible_devices(std::string& why) {
  int count = 0;
  cudaError_t ce = cudaGetDeviceCount(&count);
  if (ce == cudaSuccess && count > 0) return count;
  why = "no CUDA device found: " + (ce != cudaSuccess ? std::string(cudaGetErrorName(ce)) + ": " + cudaGetErrorString(ce)
                                                      : std::string("cudaGetDeviceCount returned 0 devices"));
  cudaGetLastError();
  return 0;
}

// The identity of one GPU as every document's "devices" entry states it (docs/benchmark-json.md).
struct DeviceInfo {
  int index = -1;
  std::string name, pci_bus_id, uuid, cc;
  long long numa_node = -1;  // as sysfs says (-1: unknown)
  int node = 0;              // gpuaccept-bw: the NUMA node used (numa_node, or the first node where unknown)
  unsigned long long memory_bytes = 0;
  int sm_count = 0, cc_major = 0, cc_minor = 0;
};

inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline DeviceInfo device_info(int dev) {
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  DeviceInfo d;
  d.index = dev;
  d.name = prop.name;
  char bus[64] = {0};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus - 1, dev));
  d.pci_bus_id = lower(bus);
  // sysfs names the device with a 4-digit domain (0000:xx:yy.z); the runtime may print 8 digits.
  std::string sysfs_id = d.pci_bus_id;
  if (sysfs_id.find(':') == 8 && sysfs_id.compare(0, 4, "0000") == 0) sysfs_id = sysfs_id.substr(4);
  std::string numa = read_first_line("/sys/bus/pci/devices/" + sysfs_id + "/numa_node");
  try {
    d.numa_node = numa.empty() ? -1 : std::stoll(numa);
  } catch (const std::exception&) {
    d.numa_node = -1;
  }
  const unsigned char* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  char ubuf[64];
  std::snprintf(ubuf, sizeof ubuf, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  d.uuid = ubuf;
  d.memory_bytes = prop.totalGlobalMem;
  d.sm_count = prop.multiProcessorCount;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.cc = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  return d;
}

// Opens the document's "cuda" object with what every CUDA tool states: the driver's and the runtime's versions
// and the kernel driver's release. The tool adds its libraries' versions and closes it.
inline void begin_cuda(Json& j) {
  j.key("cuda").begin_object();
  int dv = 0, rv = 0;
  if (cudaDriverGetVersion(&dv) == cudaSuccess && dv > 0) j.kv("driver_version", dv); else j.kv_null("driver_version");
  if (cudaRuntimeGetVersion(&rv) == cudaSuccess) j.kv("runtime_version", rv); else j.kv_null("runtime_version");
  std::string rel = driver_release();
  if (rel.empty()) j.kv_null("driver_release"); else j.kv("driver_release", rel);
}

// The document's "devices" array.
inline void write_devices(Json& j, const std::vector<DeviceInfo>& devices) {
  j.kv_objects("devices", devices, [&](const auto& d) {
    j.kv("index", d.index).kv("name", d.name).kv("pci_bus_id", d.pci_bus_id).kv("uuid", d.uuid);
    if (d.numa_node >= 0) j.kv("numa_node", d.numa_node); else j.kv_null("numa_node");
    j.kv("memory_bytes", d.memory_bytes).kv("sm_count", d.sm_count).kv("compute_capability", d.cc);
  });
}

// A CUDA allocation or handle `p` that `Release` (cudaFree, cudaFreeHost, cudaStreamDestroy, cudaEventDestroy)
// frees as it goes, on its device (made current first) where `dev` >= 0; errors on release are ignored. Neither
// copied nor moved: the tools' buffers, streams and events derive from it and add how they are made.
template <typename T, cudaError_t (*Release)(T)>
struct CudaOwned {
  T p = nullptr;
  int dev = -1;
  CudaOwned() = default;
  CudaOwned(const CudaOwned&) = delete;
  CudaOwned& operator=(const CudaOwned&) = delete;
  ~CudaOwned() {
    if (!p) return;
    if (dev >= 0) cudaSetDevice(dev);
    Release(p);
  }
};
#endif

}  // namespace gpuaccept
