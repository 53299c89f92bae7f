// Unit tests of reframe_checks/src/common/bench_common.h, compiled and run by tests/test_build.py.
#include <cassert>
#include <cstdio>

#include "bench_common.h"

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
  std::puts("bench_common: all assertions passed");
  return 0;
}
