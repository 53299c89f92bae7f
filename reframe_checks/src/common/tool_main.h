// The skeleton of every gpuaccept tool, written once: its main() (tool_main: when the run started, the options),
// what a run found besides its measurements (errors, verification failures, notes, the count of checks), the
// exit code that follows from them (docs/benchmark-json.md), the guard that turns a failed call into a recorded
// error, the document's opening and closing and, for the CUDA tools, the answer where no GPU is visible.
// bench_common.h holds the pieces below it (JSON writer, options, host facts, error macros). Each tool keeps
// only what it measures:
//
//   Options parse_options(Args& a);  // the tool's options; --help is answered before
//   int run_tool(const Options& o, const Invocation& run) {
//     State st;  // a tool's State derives from Outcome
//     auto write_doc = [&] { return write_document(o.output, kTool, [&] { return document(st, o, run, ...); }); };
//     std::vector<int> gpu_ids;
//     return run_gpu_tool(st, o.gpus, gpu_ids, write_doc, [&] { ... measure ... });
//   }
//   const char* kUsage = "usage: ...";  // the tool's own options; kUsageTail (UsageTail) says how the text ends
//   int main(int argc, char** argv) {
//     return tool_main<Options>(argc, argv, kTool, kUsage, kUsageTail, parse_options, run_tool);
//   }
//
// A tool that measures one GPU (--gpu N) has no run_tool: its main() is one call of one_gpu_tool_main
// (gpuaccept-xgemm, gpuaccept-fft).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.h"

namespace gpuaccept {

// A run's command line and when it started: what every document's preamble states.
struct Invocation {
  int argc;
  char** argv;
  std::string started = utc_now();
  double t0 = now_s();
};

inline void write_preamble(Json& j, const char* tool, const Invocation& run, const std::string& timing) {
  write_preamble(j, tool, run.argc, run.argv, run.started, now_s() - run.t0, timing);
}

// The end that every tool's usage text shares, after the tool's own options: --output (whose document goes to
// stdout without it where `output_to_stdout`), --inject-error where `inject_error` says what it does, --help,
// the tool's `notes`, then the exit statuses with the tool's words for 1 (`exit1`), 2 and 3. The options'
// descriptions start at `column`.
struct UsageTail {
  int column;
  bool output_to_stdout;
  const char* inject_error;  // null: the tool has no --inject-error
  const char* exit1;
  const char* notes = "";
  const char* exit2 = "verification failed";
  const char* exit3 = "bad command line.";
};

// One option's line of a usage text: `name` and, from `column`, what it does.
inline std::string usage_line(const char* name, int column, const std::string& what) {
  std::string line = std::string("  ") + name;
  line.resize(std::max<size_t>(line.size() + 1, column), ' ');
  return line + what + "\n";
}

// A tool's usage text: its own `options` (from the "usage:" line on), then the common end (UsageTail).
inline std::string usage_text(const char* options, const UsageTail& t) {
  std::string s = options;
  s += usage_line("--output FILE", t.column, std::string("write the JSON document (docs/benchmark-json.md) to FILE") +
                                                 (t.output_to_stdout ? " (default: stdout)" : ""));
  if (t.inject_error) s += usage_line("--inject-error", t.column, t.inject_error);
  s += usage_line("--help", t.column, "this text");
  s += t.notes;
  return s + "Exit status: 0 ok, 1 " + t.exit1 + ", 2 " + t.exit2 + ", 3 " + t.exit3 + "\n";
}

// A tool's whole main(): notes when it started, parses the options (parse_or_exit, with the usage text made by
// usage_text from `options` and `tail`) and runs `body(options, invocation)`, whose return is the exit code.
template <typename Options, typename Parse, typename Body>
int tool_main(int argc, char** argv, const char* tool, const char* options, const UsageTail& tail, Parse parse,
              Body body) {
  const Invocation run{argc, argv};
  Options o;
  if (int rc = parse_or_exit(parse, argc, argv, tool, usage_text(options, tail).c_str(), o); rc >= 0) return rc;
  return body(o, run);
}

// The exit code of a finished run: kExitCallFailed after an error or where the document could not be written,
// kExitVerifyFailed after a failed verification, else kExitOk.
inline int exit_code(const std::vector<std::string>& errors, const std::vector<std::string>& failures,
                     bool written) {
  if (!errors.empty() || !written) return kExitCallFailed;
  if (!failures.empty()) return kExitVerifyFailed;
  return kExitOk;
}

// What a run found besides its measurements; error() and note() say it on stderr as they record it and may be
// called from several threads (a tool's own additions lock `m` too).
struct Outcome {
  explicit Outcome(const char* tool) : tool(tool) {}
  const char* tool;
  std::mutex m;
  std::vector<std::string> failures, errors, notes;
  long checked = 0;

  void error(const std::string& e) {
    std::lock_guard<std::mutex> l(m);
    errors.push_back(e);
    std::cerr << tool << ": error: " << e << "\n";
  }
  void note(const std::string& e) {
    std::lock_guard<std::mutex> l(m);
    notes.push_back(e);
    std::cerr << tool << ": note: " << e << "\n";
  }
  // A failed verification, recorded and said on stderr.
  void failure(const std::string& what) {
    std::lock_guard<std::mutex> l(m);
    failures.push_back(what);
    std::cerr << tool << ": VERIFICATION FAILED: " << what << "\n";
  }
  // One verification: counted, and a failure (`what`) unless ok.
  bool verdict(bool ok, const std::string& what) {
    {
      std::lock_guard<std::mutex> l(m);
      ++checked;
    }
    if (!ok) failure(what);
    return ok;
  }
  // The document's verification.passed: no failure and no error and, where `needs_a_check` (every tool but
  // gpuaccept-bw and gpuaccept-overlap), at least one check made.
  bool passed(bool needs_a_check = true) const {
    return failures.empty() && errors.empty() && (checked > 0 || !needs_a_check);
  }
  int exit_code(bool written) const { return gpuaccept::exit_code(errors, failures, written); }
};

// A barrier for the threads that measure every GPU at once (gpuaccept-gemm's windows, gpuaccept-bw's device-local
// sweep), which a failing thread can break (so no thread waits forever) and a thread with nothing to run can leave.
class ThreadBarrier {
 public:
  explicit ThreadBarrier(int n) : expected_(n) {}
  // false when the barrier was broken.
  bool wait() {
    std::unique_lock<std::mutex> l(m_);
    if (broken_) return false;
    unsigned long gen = gen_;
    if (++arrived_ >= expected_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return true;
    }
    cv_.wait(l, [&] { return gen_ != gen || broken_; });
    return gen_ != gen;
  }
  void drop() {
    std::lock_guard<std::mutex> l(m_);
    --expected_;
    if (expected_ > 0 && arrived_ >= expected_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
    }
  }
  void abort() {
    std::lock_guard<std::mutex> l(m_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int expected_;
  int arrived_ = 0;
  unsigned long gen_ = 0;
  bool broken_ = false;
};

// Closes a document: its closing sections (write_outcome), the closing brace; the text, ending in a newline.
inline std::string close_document(Json& j, const std::vector<Metric>& metrics, const Waived& waived, bool passed,
                                  long checked, const std::vector<std::string>& failures,
                                  const std::vector<std::string>& errors, const GpuMetrics& gpu_metrics = {}) {
  write_outcome(j, metrics, waived, passed, checked, failures, errors, gpu_metrics);
  j.end_object();
  return j.str() + "\n";
}

// Closes the document's "parameters" with its "environment" (write_environment: each of `names`, null where
// unset) and opens its "results".
template <typename Names>
void end_parameters(Json& j, const Names& names) {
  write_environment(j, names);
  j.end_object();
  j.key("results").begin_object();
}
inline void end_parameters(Json& j, std::initializer_list<const char*> names) {
  end_parameters<std::initializer_list<const char*>>(j, names);
}

// Closes a document whose "results" object is open: the run's notes as results.notes, then close_document (with
// the tool's per-GPU figures, where it has them).
inline std::string end_results(Json& j, const std::vector<Metric>& metrics, const Waived& waived, bool passed,
                               const Outcome& st, const GpuMetrics& gpu_metrics = {}) {
  j.key("notes").begin_array();
  for (const auto& n : st.notes) j.value(n);
  j.end_array();
  j.end_object();
  return close_document(j, metrics, waived, passed, st.checked, st.failures, st.errors, gpu_metrics);
}

// The document to `path` (write_document), or to stdout where the tool was given no --output (the tools whose
// document is their whole output: gpuaccept-overlap, gpuaccept-xgemm); whether it was written.
template <typename MakeText>
bool emit_document(const std::string& path, const char* tool, MakeText make_text) {
  if (!path.empty()) return write_document(path, tool, make_text);
  std::fputs(make_text().c_str(), stdout);
  return std::fflush(stdout) == 0;
}

// Thrown where an error has already been recorded (by a worker thread) and the run must stop: run_guarded
// records nothing more.
struct AlreadyRecorded : std::runtime_error {
  AlreadyRecorded() : std::runtime_error("stopped after the error above") {}
};

// Runs the measurements: a failed call (CallError) is recorded as the run's error, anything else thrown as an
// "unexpected: " one; the document is written either way.
template <typename Body>
void run_guarded(Outcome& st, Body body) {
  try {
    body();
  } catch (const AlreadyRecorded&) {
  } catch (const CallError& e) {
    st.error(e.what());
  } catch (const std::exception& e) {
    st.error(std::string("unexpected: ") + e.what());
  }
}

#ifdef __CUDACC__
// The start of every CUDA tool's run: the devices chosen with --gpus (`spec`) in `ids`, and -1 to go on; or the
// exit code to leave with. Without a visible device: the runtime's message on stderr and in `errors`, the
// document written by `write_doc`, kExitCallFailed. A --gpus index that is not visible: kExitUsage.
template <typename WriteDoc>
int open_gpus(const char* tool, const std::string& spec, std::vector<std::string>& errors, WriteDoc write_doc,
              std::vector<int>& ids) {
  std::string why;
  const int count = visible_devices(why);
  if (count == 0) {
    std::cerr << tool << ": " << why << "\n";
    errors.push_back(why);
    write_doc();
    return kExitCallFailed;
  }
  try {
    ids = select_gpus(spec, count);
  } catch (const std::invalid_argument& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return kExitUsage;
  }
  return -1;
}

// A CUDA tool's run that records into `st`: the devices chosen with --gpus (`spec`) in `ids` (open_gpus, whose
// exit code it returns where there is none or the index is not visible), `measure()` (run_guarded), `after()`
// (what the tool prints or releases once measured, unguarded), then the document (`write_doc`) and the exit
// code that follows (Outcome::exit_code).
template <typename WriteDoc, typename Measure, typename After>
int run_gpu_tool(Outcome& st, const std::string& spec, std::vector<int>& ids, WriteDoc write_doc, Measure measure,
                 After after) {
  if (int rc = open_gpus(st.tool, spec, st.errors, write_doc, ids); rc >= 0) return rc;
  run_guarded(st, measure);
  after();
  return st.exit_code(write_doc());
}

// The same with nothing to do after the measurements.
template <typename WriteDoc, typename Measure>
int run_gpu_tool(Outcome& st, const std::string& spec, std::vector<int>& ids, WriteDoc write_doc, Measure measure) {
  return run_gpu_tool(st, spec, ids, write_doc, measure, [] {});
}

// run_gpu_tool for the tools whose document is their whole output (emit_document: to `output`, or to stdout):
// the document made by `document(devices)`, `measure(ids, devices)` adding the DeviceInfo of each GPU it opens.
template <typename Document, typename Measure>
int run_emitting_gpu_tool(Outcome& st, const std::string& output, const std::string& spec, Document document,
                          Measure measure) {
  std::vector<DeviceInfo> devices;
  std::vector<int> ids;
  auto emit = [&] { return emit_document(output, st.tool, [&] { return document(devices); }); };
  return run_gpu_tool(st, spec, ids, emit, [&] { measure(ids, devices); });
}

// The whole run of a tool that measures one GPU (`gpu`, its --gpu): run_gpu_tool with that one index, the device's
// facts added to `devices` before `measure()`, and the document from `document()` to `output` (or stdout).
template <typename Document, typename Measure>
int run_on_one_gpu(const char* tool, int gpu, const std::string& output, Outcome& st, std::vector<DeviceInfo>& devices,
                   Document document, Measure measure) {
  auto emit = [&] { return emit_document(output, tool, document); };
  std::vector<int> gpu_ids;
  return run_gpu_tool(st, std::to_string(gpu), gpu_ids, emit, [&] {
    devices.push_back(device_info(gpu));
    measure();
  });
}

// The whole main() of a tool that measures one GPU (--gpu N, --output): tool_main, whose run is run_on_one_gpu
// with a fresh `State` (an Outcome), the measurements made by `measure(state, options, invocation)` and the
// document by `document(state, options, invocation, devices)`.
template <typename Options, typename State, typename Parse, typename Document, typename Measure>
int one_gpu_tool_main(int argc, char** argv, const char* tool, const char* options, const UsageTail& tail,
                      Parse parse, Document document, Measure measure) {
  return tool_main<Options>(argc, argv, tool, options, tail, parse, [&](const Options& o, const Invocation& run) {
    State st;
    std::vector<DeviceInfo> devices;
    return run_on_one_gpu(
        tool, o.gpu, o.output, st, devices, [&] { return document(st, o, run, devices); },
        [&] { measure(st, o, run); });
  });
}

// The opening of a CUDA tool's document, up to its "devices": the preamble, then the "cuda" object (begin_cuda)
// with the versions of the tool's libraries that `libraries(j)` adds, then the devices.
template <typename Libraries>
void begin_gpu_document(Json& j, const char* tool, const Invocation& run, const std::string& timing,
                        const std::vector<DeviceInfo>& devices, Libraries libraries) {
  j.begin_object();
  write_preamble(j, tool, run, timing);
  begin_cuda(j);
  libraries(j);
  j.end_object();
  write_devices(j, devices);
}

#ifdef CUBLAS_VER_MAJOR
// For begin_gpu_document's `libraries`, in the tools that link cuBLAS (cublas_v2.h included before this header):
// cuda.cublas_version as major * 10000 + minor * 100 + patch, null where cuBLAS does not say.
inline void write_cublas_version(Json& c) {
  int maj = 0, min = 0, pat = 0;
  if (cublasGetProperty(MAJOR_VERSION, &maj) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &min) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &pat) == CUBLAS_STATUS_SUCCESS)
    c.kv("cublas_version", maj * 10000 + min * 100 + pat);
  else
    c.kv_null("cublas_version");
}
#endif

// Opens the document's "parameters" with the indices of the GPUs measured.
inline void begin_parameters(Json& j, const std::vector<DeviceInfo>& devices) {
  j.key("parameters").begin_object();
  j.key("gpus").begin_array();
  for (const auto& d : devices) j.value(d.index);
  j.end_array();
}
#endif

}  // namespace gpuaccept
