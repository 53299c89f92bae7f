// The memory error counters NVML keeps for a GPU, read before and after gpuaccept-memtest's passes: ECC mode, the
// volatile (since the driver loaded) corrected and uncorrected ECC error counts, retired pages (older GPUs) and
// remapped rows (A100 and later). Reported beside the test's own mismatches, not its pass criterion: the health
// check judges them (docs/checks/health.md). Read-only, through the NVML library that nvml_sampler.h opens with
// dlopen (absent NVML: the tool still runs and says why).
#pragma once

#include <string>

#include "bench_common.h"
#include "nvml_sampler.h"

namespace gpuaccept {
namespace memtest {

constexpr int kNvmlNotSupported = 3;     // NVML_ERROR_NOT_SUPPORTED
constexpr int kNvmlInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE

// One reading of one GPU; -1 where NVML did not answer (not supported on this GPU, or an error).
struct EccCounters {
  std::string error;  // non-empty: the GPU could not be read at all
  long long ecc_enabled = -1;  // current ECC mode: 1 on, 0 off
  long long corrected_volatile = -1, uncorrected_volatile = -1;
  long long retired_pages_single_bit = -1, retired_pages_double_bit = -1;
  long long remapped_rows_correctable = -1, remapped_rows_uncorrectable = -1, remap_pending = -1,
            remap_failure = -1;
};

class EccReader {
 public:
  EccReader() {
    if (!api_.ok()) return;
    api_.sym(total_ecc_, "nvmlDeviceGetTotalEccErrors");
    api_.sym(ecc_mode_, "nvmlDeviceGetEccMode");
    api_.sym(retired_pages_, "nvmlDeviceGetRetiredPages");
    api_.sym(remapped_rows_, "nvmlDeviceGetRemappedRows");
  }
  EccReader(const EccReader&) = delete;
  EccReader& operator=(const EccReader&) = delete;

  bool ok() const { return api_.ok(); }
  const std::string& why_not() const { return api_.why_not; }

  // The counters of the GPU at `pci_bus_id` (as the CUDA runtime names it).
  EccCounters read(const std::string& pci_bus_id) {
    EccCounters c;
    if (!api_.ok()) {
      c.error = api_.why_not;
      return c;
    }
    nvml::Device h = nullptr;
    nvml::Return r = api_.handle_by_pci(pci_bus_id.c_str(), &h);
    if (r != 0) {
      c.error = "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + "): " + api_.error_string(r);
      return c;
    }
    if (ecc_mode_) {
      int current = -1, pending = -1;  // nvmlEnableState_t
      if (ecc_mode_(h, &current, &pending) == 0) c.ecc_enabled = current;
    }
    if (total_ecc_) {
      unsigned long long n = 0;
      // (NVML_MEMORY_ERROR_TYPE_CORRECTED 0 | UNCORRECTED 1, NVML_VOLATILE_ECC 0)
      if (total_ecc_(h, 0, 0, &n) == 0) c.corrected_volatile = static_cast<long long>(n);
      if (total_ecc_(h, 1, 0, &n) == 0) c.uncorrected_volatile = static_cast<long long>(n);
    }
    if (retired_pages_) {
      // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0, _DOUBLE_BIT_ECC_ERROR 1; a count of 0 asks for
      // the count alone (NVML answers "insufficient size" where there are pages).
      for (int cause = 0; cause < 2; ++cause) {
        unsigned count = 0;
        r = retired_pages_(h, cause, &count, nullptr);
        if (r == 0 || r == kNvmlInsufficientSize)
          (cause == 0 ? c.retired_pages_single_bit : c.retired_pages_double_bit) = count;
      }
    }
    if (remapped_rows_) {
      unsigned corr = 0, unc = 0, pending = 0, failure = 0;
      if (remapped_rows_(h, &corr, &unc, &pending, &failure) == 0) {
        c.remapped_rows_correctable = corr;
        c.remapped_rows_uncorrectable = unc;
        c.remap_pending = pending;
        c.remap_failure = failure;
      }
    }
    return c;
  }

 private:
  nvml::Api api_;
  nvml::Return (*total_ecc_)(nvml::Device, int, int, unsigned long long*) = nullptr;
  nvml::Return (*ecc_mode_)(nvml::Device, int*, int*) = nullptr;
  nvml::Return (*retired_pages_)(nvml::Device, int, unsigned*, unsigned long long*) = nullptr;
  nvml::Return (*remapped_rows_)(nvml::Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
};

// A counter as the document writes it: the number, or null where NVML did not answer.
inline void kv_count(Json& j, const char* key, long long v) {
  if (v >= 0) j.kv(key, v); else j.kv_null(key);
}

// One reading as a JSON object (null members where not read).
inline void write_counters(Json& j, const EccCounters& c) {
  j.begin_object();
  if (c.error.empty()) j.kv_null("error"); else j.kv("error", c.error);
  if (c.ecc_enabled >= 0) j.kv("ecc_enabled", c.ecc_enabled == 1); else j.kv_null("ecc_enabled");
  kv_count(j, "corrected_volatile", c.corrected_volatile);
  kv_count(j, "uncorrected_volatile", c.uncorrected_volatile);
  kv_count(j, "retired_pages_single_bit", c.retired_pages_single_bit);
  kv_count(j, "retired_pages_double_bit", c.retired_pages_double_bit);
  kv_count(j, "remapped_rows_correctable", c.remapped_rows_correctable);
  kv_count(j, "remapped_rows_uncorrectable", c.remapped_rows_uncorrectable);
  kv_count(j, "remap_pending", c.remap_pending);
  kv_count(j, "remap_failure", c.remap_failure);
  j.end_object();
}

// The change of a counter over the test (null where either reading is missing).
inline void kv_delta(Json& j, const char* key, long long before, long long after) {
  if (before >= 0 && after >= 0) j.kv(key, after - before); else j.kv_null(key);
}

}  // namespace memtest
}  // namespace gpuaccept
