// Clock and power state of the GPUs while a benchmark runs, read through NVML (read-only: nothing here changes
// a setting). NVML is opened with dlopen("libnvidia-ml.so.1") so that the tools still start, and say why,
// where the driver's library is absent (CI builds and runs them without a GPU). The few NVML entry points used
// are declared here with the C API's documented signatures (nvml.h is not part of every CUDA installation).
//
// Use: a Sampler over the benchmark's GPUs (by PCI bus id) with a background thread that reads every GPU each
// `interval_s`; a measured phase brackets itself with mark() before and after (each mark also reads every GPU
// at once, so a phase shorter than the interval still has two readings) and summarises the readings between
// its two marks with summary().
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"

namespace gpuaccept {
namespace nvml {

using Return = int;  // nvmlReturn_t: 0 is NVML_SUCCESS
using Device = struct opaque_device*;
constexpr int kClockSm = 1;  // NVML_CLOCK_SM
constexpr int kClockMem = 2;  // NVML_CLOCK_MEM
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

struct Api {
  void* lib = nullptr;
  std::string why_not;  // non-empty: NVML cannot be used, and why
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*handle_by_pci)(const char*, Device*) = nullptr;
  Return (*clock)(Device, int, unsigned*) = nullptr;
  Return (*max_clock)(Device, int, unsigned*) = nullptr;
  Return (*power_usage)(Device, unsigned*) = nullptr;            // milliwatts
  Return (*enforced_power_limit)(Device, unsigned*) = nullptr;   // milliwatts
  Return (*performance_state)(Device, int*) = nullptr;           // 0 (P0) .. 15, 32 unknown
  Return (*event_reasons)(Device, unsigned long long*) = nullptr;  // clocks event (throttle) reasons bitmask
  Return (*temperature)(Device, int, unsigned*) = nullptr;

  template <typename F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }

  Api() {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      why_not = std::string("NVML not available: ") + (e ? e : "dlopen(libnvidia-ml.so.1) failed");
      return;
    }
    bool ok = sym(init, "nvmlInit_v2") && sym(shutdown, "nvmlShutdown") && sym(error_string, "nvmlErrorString") &&
              sym(handle_by_pci, "nvmlDeviceGetHandleByPciBusId_v2") && sym(clock, "nvmlDeviceGetClockInfo") &&
              sym(max_clock, "nvmlDeviceGetMaxClockInfo") && sym(power_usage, "nvmlDeviceGetPowerUsage") &&
              sym(enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit") &&
              sym(performance_state, "nvmlDeviceGetPerformanceState") && sym(temperature, "nvmlDeviceGetTemperature");
    // The reasons call was renamed (clocks "event" reasons) in later drivers; the old name stays exported.
    if (ok && !sym(event_reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
      ok = sym(event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!ok) {
      why_not = "NVML library lacks an entry point used here (driver too old?)";
      return;
    }
    Return r = init();
    if (r != 0) {
      why_not = std::string("nvmlInit_v2 failed: ") + error_string(r);
      init = nullptr;
    }
  }
  ~Api() {
    if (init && shutdown) shutdown();
    // The library stays loaded: NVML's own threads may still be winding down.
  }
  bool ok() const { return why_not.empty(); }
};

// One reading of one GPU; NaN / -1 where NVML did not answer.
struct Reading {
  double t = 0.0;  // now_s()
  double sm_mhz = NAN, mem_mhz = NAN, power_w = NAN, temp_c = NAN;
  int pstate = -1;
  unsigned long long reasons = 0;
  bool reasons_ok = false;
};

// Static facts of one GPU, read once.
struct Facts {
  std::string pci_bus_id, pci_device_id;  // device id from sysfs, e.g. "0x2330"
  double sm_max_mhz = NAN, mem_max_mhz = NAN, power_limit_w = NAN;
  std::string error;  // non-empty: no handle for this GPU
};

// A summary of the readings of one GPU over one phase.
struct Summary {
  int readings = 0;
  double sm_mhz_median = NAN, sm_mhz_min = NAN, sm_mhz_max = NAN, mem_mhz_median = NAN;
  double power_w_median = NAN, power_w_max = NAN, temp_c_max = NAN;
  int pstate_min = -1, pstate_max = -1;
  unsigned long long reasons_or = 0;
  bool reasons_ok = false;
};

// The bit names of the clocks event reasons (NVML's nvmlClocksEventReason* constants).
inline std::string reason_names(unsigned long long r) {
  static const std::pair<unsigned long long, const char*> names[] = {
      {0x1ull, "gpu_idle"},        {0x2ull, "applications_clocks_setting"}, {0x4ull, "sw_power_cap"},
      {0x8ull, "hw_slowdown"},     {0x10ull, "sync_boost"},                 {0x20ull, "sw_thermal_slowdown"},
      {0x40ull, "hw_thermal_slowdown"}, {0x80ull, "hw_power_brake_slowdown"}, {0x100ull, "display_clock_setting"}};
  std::string out;
  for (const auto& n : names)
    if (r & n.first) out += (out.empty() ? "" : ",") + std::string(n.second);
  return out.empty() ? "none" : out;
}

class Sampler {
 public:
  // `pci_bus_ids` as the CUDA runtime names them; `interval_s` between background readings.
  Sampler(const std::vector<std::string>& pci_bus_ids, double interval_s) : interval_s_(interval_s) {
    facts_.resize(pci_bus_ids.size());
    handles_.resize(pci_bus_ids.size(), nullptr);
    readings_.resize(pci_bus_ids.size());
    for (size_t i = 0; i < pci_bus_ids.size(); ++i) {
      Facts& f = facts_[i];
      f.pci_bus_id = pci_bus_ids[i];
      std::string sysfs_id = f.pci_bus_id;
      if (sysfs_id.find(':') == 8 && sysfs_id.compare(0, 4, "0000") == 0) sysfs_id = sysfs_id.substr(4);
      f.pci_device_id = lower(read_first_line("/sys/bus/pci/devices/" + sysfs_id + "/device"));
      if (!api_.ok()) continue;
      Return r = api_.handle_by_pci(f.pci_bus_id.c_str(), &handles_[i]);
      if (r != 0) {
        f.error = std::string("nvmlDeviceGetHandleByPciBusId_v2(") + f.pci_bus_id + "): " + api_.error_string(r);
        handles_[i] = nullptr;
        continue;
      }
      unsigned v = 0;
      if (api_.max_clock(handles_[i], kClockSm, &v) == 0) f.sm_max_mhz = v;
      if (api_.max_clock(handles_[i], kClockMem, &v) == 0) f.mem_max_mhz = v;
      if (api_.enforced_power_limit(handles_[i], &v) == 0) f.power_limit_w = v / 1000.0;
    }
    if (api_.ok()) thread_ = std::thread([this] { loop(); });
  }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  ~Sampler() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool ok() const { return api_.ok(); }
  const std::string& why_not() const { return api_.why_not; }
  const std::vector<Facts>& facts() const { return facts_; }
  double interval_s() const { return interval_s_; }

  // Reads every GPU now; returns the time stamp (a phase's start or end).
  double mark() {
    double t = now_s();
    if (api_.ok()) read_all(t);
    return t;
  }

  // The readings of GPU slot `i` with t0 <= t <= t1.
  Summary summary(size_t i, double t0, double t1) {
    Summary s;
    std::vector<double> sm, mem, pw;
    std::lock_guard<std::mutex> l(m_);
    for (const auto& r : readings_[i]) {
      if (r.t < t0 || r.t > t1) continue;
      ++s.readings;
      if (std::isfinite(r.sm_mhz)) sm.push_back(r.sm_mhz);
      if (std::isfinite(r.mem_mhz)) mem.push_back(r.mem_mhz);
      if (std::isfinite(r.power_w)) pw.push_back(r.power_w);
      if (std::isfinite(r.temp_c)) s.temp_c_max = std::isfinite(s.temp_c_max) ? std::max(s.temp_c_max, r.temp_c) : r.temp_c;
      if (r.pstate >= 0) {
        s.pstate_min = s.pstate_min < 0 ? r.pstate : std::min(s.pstate_min, r.pstate);
        s.pstate_max = std::max(s.pstate_max, r.pstate);
      }
      if (r.reasons_ok) {
        s.reasons_ok = true;
        s.reasons_or |= r.reasons;
      }
    }
    s.sm_mhz_median = median(sm);
    s.sm_mhz_min = min_of(sm);
    s.sm_mhz_max = max_of(sm);
    s.mem_mhz_median = median(mem);
    s.power_w_median = median(pw);
    s.power_w_max = max_of(pw);
    return s;
  }

 private:
  void read_all(double t) {
    for (size_t i = 0; i < handles_.size(); ++i) {
      if (!handles_[i]) continue;
      Reading r;
      r.t = t;
      unsigned v = 0;
      if (api_.clock(handles_[i], kClockSm, &v) == 0) r.sm_mhz = v;
      if (api_.clock(handles_[i], kClockMem, &v) == 0) r.mem_mhz = v;
      if (api_.power_usage(handles_[i], &v) == 0) r.power_w = v / 1000.0;
      if (api_.temperature(handles_[i], kTemperatureGpu, &v) == 0) r.temp_c = v;
      int ps = -1;
      if (api_.performance_state(handles_[i], &ps) == 0 && ps >= 0 && ps <= 15) r.pstate = ps;
      unsigned long long rs = 0;
      if (api_.event_reasons(handles_[i], &rs) == 0) {
        r.reasons = rs;
        r.reasons_ok = true;
      }
      std::lock_guard<std::mutex> l(m_);
      readings_[i].push_back(r);
    }
  }
  void loop() {
    while (!stop_) {
      read_all(now_s());
      auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval_s_);
      while (!stop_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  Api api_;
  double interval_s_;
  std::vector<Facts> facts_;
  std::vector<Device> handles_;
  std::mutex m_;
  std::vector<std::vector<Reading>> readings_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The document's "clocks" block of one phase (null members where NVML gave nothing).
inline void write_summary(Json& j, const Summary& s) {
  j.begin_object();
  j.kv("readings", s.readings);
  j.kv("sm_clock_mhz_median", s.sm_mhz_median).kv("sm_clock_mhz_min", s.sm_mhz_min).kv("sm_clock_mhz_max", s.sm_mhz_max);
  j.kv("mem_clock_mhz_median", s.mem_mhz_median);
  j.kv("power_w_median", s.power_w_median).kv("power_w_max", s.power_w_max).kv("temperature_c_max", s.temp_c_max);
  if (s.pstate_min >= 0) j.kv("pstate_min", s.pstate_min).kv("pstate_max", s.pstate_max);
  else j.kv_null("pstate_min").kv_null("pstate_max");
  if (s.reasons_ok) j.kv("clocks_event_reasons", s.reasons_or).kv("clocks_event_reason_names", reason_names(s.reasons_or));
  else j.kv_null("clocks_event_reasons").kv_null("clocks_event_reason_names");
  j.end_object();
}

// The document's top-level "nvml" block: whether NVML answered, and each GPU's limits.
inline void write_facts(Json& j, const Sampler& s) {
  j.key("nvml").begin_object();
  j.kv("available", s.ok());
  if (s.ok()) j.kv_null("why_not"); else j.kv("why_not", s.why_not());
  j.kv("interval_s", s.interval_s());
  j.kv_objects("gpus", s.facts(), [&](const auto& f) {
    j.kv("pci_bus_id", f.pci_bus_id);
    if (f.pci_device_id.empty()) j.kv_null("pci_device_id"); else j.kv("pci_device_id", f.pci_device_id);
    j.kv("sm_clock_max_mhz", f.sm_max_mhz).kv("mem_clock_max_mhz", f.mem_max_mhz);
    j.kv("enforced_power_limit_w", f.power_limit_w);
    if (f.error.empty()) j.kv_null("error"); else j.kv("error", f.error);
  });
  j.end_object();
}

}  // namespace nvml
}  // namespace gpuaccept
