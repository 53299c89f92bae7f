// gpuaccept-nccl --multi-process: the one document rank 0 writes (docs/benchmark-json.md, "Multi-process mode").
#pragma once

#include "nccl_core.cuh"
#include "nccl_multi_summary.h"

namespace gpuaccept::nccl {

inline const char* kMultiTiming =
    "per (collective, size): a barrier of all ranks (TCP, through rank 0), warm-up calls, then timed calls each "
    "between a cudaEvent pair on the rank's stream; an iteration's time is the longest of the group's ranks' times; "
    "figures are the median over the timed calls (min and max kept). algbw = size / time, busbw = algbw x "
    "nccl-tests' factor (all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n, broadcast 1), "
    "n = the group's ranks; GB/s = 1e9 bytes/s";

inline void write_rank_device(Json& j, const RankInfo& r) {
  j.key("device").begin_object();
  j.kv("index", r.index).kv("name", r.name).kv("pci_bus_id", r.pci_bus_id).kv("uuid", r.uuid);
  j.end_object();
}

inline void write_multi_parameters(Json& j, const MultiState& st, const Options& o) {
  j.key("parameters").begin_object();
  j.kv("mode", "multi_process").kv("ranks", st.env.size).kv("comm", o.comm).kv("rank_source", st.env.source);
  j.kv("process_model", "one process per rank, one GPU per rank (--device or the local rank); ncclCommInitRank "
                        "over all ranks, split with ncclCommSplit for --comm rail and groups");
  j.kv("bootstrap", st.bootstrap).kv("bootstrap_timeout_s", o.bootstrap_timeout_s);
  j.kv_array("sizes_bytes", std::vector<unsigned long long>(o.sizes.begin(), o.sizes.end()));
  j.kv("latency_bytes", static_cast<unsigned long long>(o.latency_bytes));
  j.kv("warmup_calls", o.warmup).kv("timed_calls", o.iters).kv("datatype", "float32").kv("timeout_s", o.timeout_s);
  j.kv("quick", o.quick).kv("inject_error", o.inject_error).kv("allow_nvls", o.allow_nvls);
  j.kv("nvls", st.nccl_env.nvls_note).kv("ring", o.ring);
  if (st.nccl_env.algo.empty()) j.kv_null("algo_requested"); else j.kv("algo_requested", st.nccl_env.algo);
  if (st.nccl_env.proto.empty()) j.kv_null("proto_requested"); else j.kv("proto_requested", st.nccl_env.proto);
  j.key("collectives").begin_object();
  for (const auto& k : kNetColls)
    j.key(k.key).begin_object().kv("call", k.call).kv("size_is", k.size_is).kv("bus_factor", bus_factor_formula(k.key)).end_object();
  j.end_object();
  end_parameters(j, {"CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
                     "NCCL_IB_DISABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_HOSTID",
                     "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_NET", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
                     "NCCL_CUMEM_ENABLE", "GPUACCEPT_BOOTSTRAP", "GPUACCEPT_EMULATION"});
}

inline void write_row(Json& j, const Row& r, int n) {
  j.kv("collective", net_coll(r.c).key).kv("bytes", static_cast<unsigned long long>(r.bytes));
  j.kv("count", static_cast<unsigned long long>(r.count)).kv("ranks", n).kv("iters", r.iters);
  j.kv("time_us_median", r.sec_median * 1e6).kv("time_us_min", r.sec_min * 1e6).kv("time_us_max", r.sec_max * 1e6);
  j.kv("algbw_gbps", r.algbw).kv("busbw_gbps", r.busbw);
  j.kv("mismatches", r.mismatches).kv("verified", r.verified);
}

inline void write_group(Json& j, const MultiState& st, const GroupOut& g) {
  const int n = static_cast<int>(g.ranks.size());
  j.kv("group", g.index).kv("label", g.label).kv_array("ranks", g.ranks);
  j.key("hosts").begin_array();
  for (int r : g.ranks) j.value(st.infos[r].host);
  j.end_array();
  j.kv("size", n);
  if (g.rail >= 0) j.kv("rail", g.rail); else j.kv_null("rail");
  j.kv_array("transports", g.transports);
  j.key("bus_factors").begin_object();
  for (const auto& k : kNetColls) j.kv(k.key, ncclnet::bus_factor(k.key, n));
  j.end_object();
  j.kv_objects("collectives", g.rows, [&](const Row& r) { write_row(j, r, n); });
  j.key("metrics").begin_object();
  for (const auto& m : g.metrics)
    j.key(m.name).begin_object().kv("value", m.value).kv("unit", m.unit).kv("better", m.better)
        .kv("description", m.description).end_object();
  j.end_object();
  j.key("waived").begin_object();
  for (const auto& w : g.waived) j.kv(w.first, w.second);
  j.end_object();
}

inline std::string multi_document(MultiState& st, const Options& o, const Invocation& run) {
  std::vector<Metric> metrics;
  Waived waived;
  if (st.errors.empty() && !st.out.empty()) overall_metrics(st, metrics, waived);
  // devices: the GPUs of the ranks on rank 0's host, each once.
  std::vector<DeviceInfo> devices;
  for (const auto& r : st.infos) {
    if (r.host != st.infos[0].host || r.index < 0) continue;
    bool seen = false;
    for (const auto& d : devices) seen = seen || d.pci_bus_id == r.pci_bus_id;
    if (seen) continue;
    DeviceInfo d;
    d.index = r.index;
    d.name = r.name;
    d.pci_bus_id = r.pci_bus_id;
    d.uuid = r.uuid;
    d.numa_node = r.numa_node;
    d.memory_bytes = r.memory_bytes;
    d.sm_count = r.sm_count;
    d.cc = r.cc;
    devices.push_back(d);
  }
  Json j;
  begin_gpu_document(j, "gpuaccept-nccl", run, kMultiTiming, devices, [](Json& c) {
    int nv = 0;
    if (ncclGetVersion(&nv) == ncclSuccess) c.kv("nccl_version", nv); else c.kv_null("nccl_version");
    c.kv("nccl_version_built", NCCL_VERSION_CODE);
  });
  write_multi_parameters(j, st, o);
  j.kv("multi_process", true);
  j.kv_objects("ranks", st.infos, [&](const RankInfo& r) {
    j.kv("rank", r.rank).kv("host", r.host).kv("hostname", r.hostname).kv("local_rank", r.local_rank);
    write_rank_device(j, r);
    const RankResult* res = static_cast<size_t>(r.rank) < st.results.size() ? &st.results[r.rank] : nullptr;
    j.kv_array("transports", res ? res->transports : std::vector<std::string>{"unknown"});
    j.kv_array("errors", res ? res->errors : std::vector<std::string>{});
  });
  j.kv_objects("groups", st.out, [&](const GroupOut& g) { write_group(j, st, g); });
  return end_results(j, metrics, waived, st.passed(), st);
}

}  // namespace gpuaccept::nccl
