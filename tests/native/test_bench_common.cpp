// Unit tests of reframe_checks/src/common/bench_common.h and tool_main.h, compiled and run by tests/test_build.py.
#include <cassert>
#include <cstdio>

#include "bench_common.h"
#include "tool_main.h"

int main() {
  using gpuaccept::parse_driver_release;
  // The two wordings of /proc/driver/nvidia/version (the second recorded on the lent H100 and H200).
  assert(parse_driver_release("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct 1") == "580.159.04");
  assert(parse_driver_release("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build") ==
         "580.159.04");
  assert(parse_driver_release("") == "");
  assert((gpuaccept::parse_cpulist("0-3,8,10-11") == std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  assert(gpuaccept::median({3.0, 1.0, 2.0, 10.0}) == 2.5);
  assert((gpuaccept::select_gpus("all", 3) == std::vector<int>{0, 1, 2}));
  assert((gpuaccept::select_gpus("2,0,2", 3) == std::vector<int>{2, 0}));
  try {
    gpuaccept::select_gpus("0,3", 3);
    assert(false && "device 3 of 3 accepted");
  } catch (const std::invalid_argument& e) {
    assert(std::string(e.what()).find("option --gpus: device 3 not visible") != std::string::npos);
  }
  gpuaccept::Json j;
  j.begin_object().kv("a", 1.5).kv("s", "x\"y\n").key("n").begin_array().value(1).value(NAN).end_array().end_object();
  assert(j.str() == "{\"a\":1.5,\"s\":\"x\\\"y\\n\",\"n\":[1,null]}");
  // Option values and list items: the message names the option and the value.
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  assert(gpuaccept::Args::whole_number("streams", "16") == 16);
  assert(message([] { gpuaccept::Args::whole_number("streams", "1x"); }) == "option --streams: '1x' is not a whole number");
  assert(gpuaccept::Args::number("intensities", "0.25") == 0.25);
  assert(message([] { gpuaccept::Args::number("intensities", "a"); }) == "option --intensities: 'a' is not a number");
  char prog[] = "tool", opt[] = "--gpus", val[] = "0,x";
  char* argv[] = {prog, opt, val};
  gpuaccept::Args bad_gpus(3, argv);
  assert(message([&] { bad_gpus.get_gpus(); }).find("option --gpus: 'x' is not a device index") == 0);
  gpuaccept::Args no_gpus(1, argv);
  assert(no_gpus.get_gpus() == "all");
  assert(no_gpus.get_seconds("window-s", 1.0, 600) == 1.0);
  char win[] = "--window-s", secs[] = "601";
  char* argv_s[] = {prog, win, secs};
  gpuaccept::Args long_window(3, argv_s);
  assert(message([&] { long_window.get_seconds("window-s", 1.0, 600); }) ==
         "option --window-s: must be in (0, 600] seconds");

  // The outcome of a run: the exit code and the document's closing sections.
  gpuaccept::Outcome st("tool");
  assert(!st.passed() && st.passed(false) && st.exit_code(true) == gpuaccept::kExitOk);
  assert(st.exit_code(false) == gpuaccept::kExitCallFailed);
  st.verdict(true, "unused");
  assert(st.checked == 1 && st.passed());
  st.verdict(false, "gpu 0: wrong");
  assert(st.checked == 2 && st.failures.size() == 1 && st.exit_code(true) == gpuaccept::kExitVerifyFailed);
  st.error("a call failed");
  assert(st.exit_code(true) == gpuaccept::kExitCallFailed);
  gpuaccept::run_guarded(st, [] { throw gpuaccept::AlreadyRecorded(); });
  gpuaccept::run_guarded(st, [] { throw std::out_of_range("x"); });
  assert((st.errors == std::vector<std::string>{"a call failed", "unexpected: x"}));
  st.note("n");
  gpuaccept::Json doc;
  doc.begin_object().key("results").begin_object();
  const std::string text = gpuaccept::end_results(doc, {}, {}, st.passed(), st);
  assert(text == "{\"results\":{\"notes\":[\"n\"]},\"metrics\":{},\"waived\":{},\"verification\":{\"passed\":false,"
                 "\"checked\":2,\"failures\":[\"gpu 0: wrong\"]},\"errors\":[\"a call failed\",\"unexpected: x\"]}\n");
  // Per-GPU figures: one entry per GPU in the order the GPUs first appear, after "metrics".
  gpuaccept::Json per;
  per.begin_object();
  gpuaccept::write_outcome(per, {{"d2d_min", "GB/s", "higher", "min", 1500.5}}, {}, true, 1, {}, {},
                           {{1, "d2d_min", "GB/s", "higher", 1500.5}, {0, "d2d_min", "GB/s", "higher", 1502.0},
                            {1, "latency_h2d_max", "us", "lower", 2.5}});
  per.end_object();
  assert(per.str().find("\"metrics\":{\"d2d_min\":{\"value\":1500.5,\"unit\":\"GB/s\",\"better\":\"higher\","
                        "\"description\":\"min\"}},\"gpu_metrics\":[{\"gpu\":1,\"metrics\":{\"d2d_min\":{\"value\":1500.5,"
                        "\"unit\":\"GB/s\",\"better\":\"higher\"},\"latency_h2d_max\":{\"value\":2.5,\"unit\":\"us\","
                        "\"better\":\"lower\"}}},{\"gpu\":0,\"metrics\":{\"d2d_min\":{\"value\":1502,\"unit\":\"GB/s\","
                        "\"better\":\"higher\"}}}],\"waived\"") != std::string::npos);
  // A failed call names itself as written, the file and the line, and the library's words for its status.
  auto status_of = [](int s) { return s; };
  std::string what;
  try {
    GPUACCEPT_CHECK("status_of(7)", status_of(7), 0, [](int s) { return "status " + std::to_string(s); });
  } catch (const gpuaccept::CallError& e) {
    what = e.what();
  }
  assert(what.rfind("status_of(7) failed at ", 0) == 0 && what.find("test_bench_common.cpp:") != std::string::npos);
  assert(what.size() > 10 && what.compare(what.size() - 10, 10, ": status 7") == 0);
  std::puts("bench_common: all assertions passed");
  return 0;
}
