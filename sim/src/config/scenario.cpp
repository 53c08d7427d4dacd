#include "sim/scenario.h"

#include <algorithm>
#include <cstdlib>

#include "hcomm/hcomm.h"
#include "sim/units.h"

namespace sim {
namespace {

std::optional<models::DType> dtype_from(const std::string& s) {
  static const struct { const char* n; models::DType t; } tab[] = {
      {"int8", models::DType::Int8}, {"int16", models::DType::Int16}, {"int32", models::DType::Int32},
      {"int64", models::DType::Int64}, {"fp16", models::DType::Fp16}, {"bf16", models::DType::Bf16},
      {"fp32", models::DType::Fp32}, {"fp64", models::DType::Fp64}};
  for (auto& e : tab) if (s == e.n) return e.t;
  return std::nullopt;
}

std::optional<models::ReduceOp> op_from(const std::string& s) {
  if (s == "sum") return models::ReduceOp::Sum;
  if (s == "prod") return models::ReduceOp::Prod;
  if (s == "max") return models::ReduceOp::Max;
  if (s == "min") return models::ReduceOp::Min;
  return std::nullopt;
}

std::string dir_of(const std::string& p) {
  auto k = p.find_last_of('/');
  return k == std::string::npos ? "" : p.substr(0, k + 1);
}

}  // namespace

const char* fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::HbmBitflip: return "hbm_bitflip";
    case FaultKind::LinkDown: return "link_down";
    case FaultKind::LinkUp: return "link_up";
    case FaultKind::CrcRate: return "crc_rate";
    case FaultKind::LaneDegrade: return "lane_degrade";
    case FaultKind::DropRate: return "drop_rate";
    case FaultKind::NicDown: return "nic_down";
    case FaultKind::NicUp: return "nic_up";
    case FaultKind::RankCrash: return "rank_crash";
  }
  return "?";
}

std::optional<FaultKind> fault_kind_from(const std::string& name) {
  for (FaultKind k : {FaultKind::HbmBitflip, FaultKind::LinkDown, FaultKind::LinkUp, FaultKind::CrcRate, FaultKind::LaneDegrade,
                      FaultKind::DropRate, FaultKind::NicDown, FaultKind::NicUp, FaultKind::RankCrash})
    if (name == fault_kind_name(k)) return k;
  return std::nullopt;
}

bool set_fidelity(models::NetParams& p, const std::string& tier, std::uint32_t chunk_bytes) {
  if (tier == "packet") { p.flow = false; p.unit_bytes = 0; }
  else if (tier == "chunk") { p.flow = false; p.unit_bytes = chunk_bytes; }
  else if (tier == "flow") { p.flow = true; p.unit_bytes = 0; }  // no queues, ECN, DCQCN, PFC
  else return false;
  return true;
}

std::optional<Scenario> load_scenario(const std::string& path, std::vector<std::string>* errors, std::vector<std::string>* warnings) {
  Diagnostics d(path);
  auto finish = [&]() -> std::optional<Scenario> {
    *errors = d.messages();
    if (warnings) *warnings = d.warnings();
    return std::nullopt;
  };
  auto j = read_json_file(path, d);
  if (!j) return finish();
  ObjectReader top(*j, "", d, {"format", "version", "name", "description", "topology", "seed", "payload", "fidelity", "network", "hcomm_env", "workload", "faults", "expect"});
  if (!top.valid()) return finish();
  Scenario sc;
  sc.file = path;
  auto fmt = top.str("format", true);
  if (fmt && *fmt != "hcsim-scenario") d.error(top.child("format"), "expected \"hcsim-scenario\", got \"" + *fmt + "\"");
  top.uint("version", true, 1, 1);
  sc.name = top.str("name", true).value_or("");
  sc.description = top.str("description", false).value_or("");
  sc.seed = top.uint("seed", false, 0, ~0ULL).value_or(1);
  if (auto p = top.str("payload", false)) {
    if (*p == "real") sc.store_bytes = true;
    else if (*p == "timing") sc.store_bytes = false;
    else d.error(top.child("payload"), "expected \"real\" or \"timing\", got \"" + *p + "\"");
  }
  if (auto t = top.str("topology", true)) sc.topology_path = (!t->empty() && (*t)[0] == '/') ? *t : dir_of(path) + *t;

  sc.net.seed = sc.seed;
  // Fidelity tier: the same inputs at packet granularity (4 KiB MTU), chunk granularity (the
  // default: units of network/chunk bytes on the same mechanism) or as fluid flows.
  const std::string tier = top.str("fidelity", false).value_or("chunk");
  if (!set_fidelity(sc.net, tier)) d.error(top.child("fidelity"), "expected \"packet\", \"chunk\" or \"flow\", got \"" + tier + "\"");
  if (const json* nj = top.get("network", false)) {
    ObjectReader n(*nj, top.child("network"), d, {"mtu", "chunk", "ecmp_hash", "ack_every", "nic_latency", "timeout_exp", "retry_count", "drop_rate", "dcqcn", "ecn", "pfc"});
    models::NetParams& p = sc.net;
    if (auto v = n.size("mtu", false)) { if (*v < 256 || *v > 9216) d.error(n.child("mtu"), "MTU must be 256 B .. 9216 B (jumbo frames)"); else p.mtu = static_cast<std::uint32_t>(*v); }
    if (auto v = n.size("chunk", false)) {
      if (tier != "chunk") d.error(n.child("chunk"), "a chunk size needs \"fidelity\": \"chunk\"");
      else if (*v < 64 * 1024 || *v > (1u << 20)) d.error(n.child("chunk"), "chunk must be 64 KiB .. 1 MiB");
      else p.unit_bytes = static_cast<std::uint32_t>(*v);
    }
    if (auto v = n.str("ecmp_hash", false)) {
      if (*v == "5-tuple") p.ecmp_hash = models::EcmpHash::FiveTuple;
      else if (*v == "src-dst") p.ecmp_hash = models::EcmpHash::SrcDst;
      else d.error(n.child("ecmp_hash"), "expected \"5-tuple\" or \"src-dst\", got \"" + *v + "\"");
    }
    if (auto v = n.uint("ack_every", false, 1, 1024)) p.ack_every = static_cast<std::uint32_t>(*v);
    if (auto v = n.duration("nic_latency", false)) {
      if (*v > models::kPsPerSec) d.error(n.child("nic_latency"), "latency above 1 s");
      else p.nic_latency_ps = *v;
    }
    if (auto v = n.uint("timeout_exp", false, 0, 31)) p.timeout_exp = static_cast<std::uint32_t>(*v);
    if (auto v = n.uint("retry_count", false, 0, 7)) p.retry_count = static_cast<std::uint32_t>(*v);
    if (auto v = n.number("drop_rate", false, 0, 1)) p.drop_rate = *v;
    if (const json* dj = n.get("dcqcn", false)) {
      ObjectReader q(*dj, n.child("dcqcn"), d, {"enabled", "g", "alpha_timer", "rate_increase_timer", "byte_counter", "fast_recovery_stages", "rai", "rhai", "min_rate", "cnp_interval"});
      models::DcqcnParams& c = p.dcqcn;
      if (auto v = q.boolean("enabled", false)) c.enabled = *v;
      if (auto v = q.number("g", false, 1e-6, 1)) c.g = *v;
      // Periodic timers of every QP: "0ns" was raised to 1 ps, which schedules a timer event every
      // picosecond per QP (a run that practically never ends). Periods of 1 us .. 1 s.
      for (auto [key, field] : {std::pair<const char*, models::Tick*>{"alpha_timer", &c.alpha_timer_ps}, {"rate_increase_timer", &c.rate_increase_timer_ps}})
        if (auto v = q.duration(key, false)) {
          if (*v < models::kPsPerUs || *v > models::kPsPerSec) d.error(q.child(key), "timer period must be 1 us .. 1 s");
          else *field = *v;
        }
      if (auto v = q.size("byte_counter", false)) c.byte_counter = std::max<std::uint64_t>(*v, 1);
      if (auto v = q.uint("fast_recovery_stages", false, 0, 100)) c.fast_recovery_stages = static_cast<std::uint32_t>(*v);
      if (auto v = q.bandwidth("rai", false)) c.rai_Bps = *v;
      if (auto v = q.bandwidth("rhai", false)) c.rhai_Bps = *v;
      if (auto v = q.bandwidth("min_rate", false)) c.min_rate_Bps = *v;
      if (auto v = q.duration("cnp_interval", false)) c.cnp_interval_ps = *v;
    }
    if (const json* ej = n.get("ecn", false)) {
      ObjectReader e(*ej, n.child("ecn"), d, {"enabled", "mode", "kmin", "kmax", "pmax"});
      if (auto v = e.boolean("enabled", false)) p.ecn.enabled = *v;
      if (auto v = e.str("mode", false)) {
        if (*v == "red") p.ecn.mode = models::EcnParams::Mode::Red;
        else if (*v == "step") p.ecn.mode = models::EcnParams::Mode::Step;
        else d.error(e.child("mode"), "expected \"red\" or \"step\", got \"" + *v + "\"");
      }
      if (auto v = e.size("kmin", false)) p.ecn.kmin_bytes = *v;
      if (auto v = e.size("kmax", false)) p.ecn.kmax_bytes = *v;
      if (auto v = e.number("pmax", false, 0, 1)) p.ecn.pmax = *v;
      if (p.ecn.kmax_bytes <= p.ecn.kmin_bytes) d.error(e.child("kmax"), "kmax must be larger than kmin");
    }
    if (const json* pj = n.get("pfc", false)) {
      ObjectReader f(*pj, n.child("pfc"), d, {"enabled"});
      if (auto v = f.boolean("enabled", false)) p.pfc.enabled = *v;
    }
  }
  if (const json* ej = top.get("hcomm_env", false)) {
    if (!ej->is_object()) d.error(top.child("hcomm_env"), "expected an object of HCOMM_* variables");
    else
      for (auto it = ej->begin(); it != ej->end(); ++it) {
        const std::string p = top.child("hcomm_env") + "/" + it.key();
        if (it.key().rfind("HCOMM_", 0) != 0) { d.error(p, "only HCOMM_* variables can be set"); continue; }
        if (!it.value().is_string()) { d.error(p, "expected a string value"); continue; }
        const std::string v = it.value().get<std::string>();
        // The library's own table and parser decide (docs/config.md): a value it would refuse at
        // hcomm_create_context / hcomm_comm_init is bad input here, not a failed run.
        char why[256];
        const hcomm_result_t rc = v.find('\0') != std::string::npos ? HCOMM_E_PARA : hcomm_config_check(it.key().c_str(), v.c_str(), why, sizeof why);
        if (rc == HCOMM_E_NOT_FOUND) d.warn(p, "hcomm reads no variable " + it.key() + " (docs/config.md); it is set but has no effect");
        else if (rc != HCOMM_SUCCESS) { d.error(p, rc == HCOMM_E_PARA && v.find('\0') == std::string::npos ? std::string(why) : "value contains a NUL byte"); continue; }
        sc.hcomm_env[it.key()] = v;
      }
  }
  const json* wl = top.get("workload", true);
  if (wl && (!wl->is_array() || wl->empty())) { d.error(top.child("workload"), "expected a non-empty array"); wl = nullptr; }
  if (wl) {
    for (std::size_t i = 0; i < wl->size(); ++i) {
      ObjectReader w((*wl)[i], top.child("workload") + "/" + std::to_string(i), d, {"op", "bytes", "dtype", "reduce", "repeat", "check", "pattern", "root", "senders"});
      if (!w.valid()) continue;
      WorkloadStep st;
      st.op = w.str("op", true).value_or("");
      if (!st.op.empty() && st.op != "allreduce" && st.op != "sendrecv" && st.op != "incast" && st.op != "barrier" && st.op != "h2d" &&
          st.op != "d2h")
        d.error(w.child("op"), "unknown op \"" + st.op + "\" (allreduce, sendrecv, incast, barrier, h2d, d2h)");
      if (st.op == "incast") {
        st.root = static_cast<std::uint32_t>(w.uint("root", false, 0, 1u << 20).value_or(0));
        if (auto v = w.str("senders", false)) {
          if (*v != "all" && *v != "remote") d.error(w.child("senders"), "expected \"all\" or \"remote\" (ranks on other servers than the root)");
          else st.senders = *v;
        }
      } else {
        if (w.get("root", false)) d.error(w.child("root"), "root applies to incast only");
        if (w.get("senders", false)) d.error(w.child("senders"), "senders applies to incast only");
      }
      if (auto b = w.size("bytes", st.op != "barrier")) {
        if (*b > (16ULL << 30)) d.error(w.child("bytes"), "more than 16 GiB per rank");
        else if (*b == 0 && st.op != "barrier") d.error(w.child("bytes"), "must be at least one element (0 bytes moves nothing and cannot be allocated)");
        else st.bytes = *b;
      }
      if (auto s = w.str("dtype", false)) {
        if (auto t = dtype_from(*s)) st.dtype = *t;
        else d.error(w.child("dtype"), "unknown dtype \"" + *s + "\" (int8, int16, int32, int64, fp16, bf16, fp32, fp64)");
      }
      if (auto s = w.str("reduce", false)) {
        if (auto o = op_from(*s)) st.reduce = *o;
        else d.error(w.child("reduce"), "unknown reduce op \"" + *s + "\" (sum, prod, max, min)");
      }
      if (st.bytes % models::dtype_size(st.dtype) != 0)
        d.error(w.child("bytes"), "not a multiple of the " + std::string(models::dtype_name(st.dtype)) + " element size");
      st.repeat = static_cast<std::uint32_t>(w.uint("repeat", false, 1, 100000).value_or(1));
      st.check = w.boolean("check", false).value_or(true);
      if (auto v = w.str("pattern", false)) {
        if (st.op != "sendrecv") d.error(w.child("pattern"), "pattern applies to sendrecv only");
        else if (*v != "pairs" && *v != "halves") d.error(w.child("pattern"), "unknown pattern \"" + *v + "\" (pairs, halves)");
        else st.pattern = *v;
      }
      sc.workload.push_back(st);
    }
  }
  struct PendingRef { std::size_t fault; std::string ptr, a, b, npu; };
  std::vector<PendingRef> refs;  // device names resolved once the topology is loaded
  if (const json* fl = top.get("faults", false)) {
    if (!fl->is_array()) d.error(top.child("faults"), "expected an array");
    else
      for (std::size_t i = 0; i < fl->size(); ++i) {
        const std::string fp = top.child("faults") + "/" + std::to_string(i);
        const json& fj = (*fl)[i];
        std::string type = fj.is_object() && fj.contains("type") && fj["type"].is_string() ? fj["type"].get<std::string>() : "";
        const std::optional<FaultKind> kind = fault_kind_from(type);
        Fault ft;
        ft.kind = kind.value_or(FaultKind::HbmBitflip);
        if (kind == FaultKind::HbmBitflip || type.empty() || !fj.is_object()) {
          ObjectReader f(fj, fp, d, {"type", "rank", "step", "rep", "byte", "bit"});
          if (!f.valid()) continue;
          f.str("type", true);
          ft.rank = static_cast<std::uint32_t>(f.uint("rank", true, 0, 1u << 20).value_or(0));
          ft.step = static_cast<std::uint32_t>(f.uint("step", false, 0, 1u << 20).value_or(0));
          ft.rep = static_cast<std::uint32_t>(f.uint("rep", false, 0, 1u << 20).value_or(0));
          ft.byte = f.uint("byte", false, 0, 16ULL << 30).value_or(0);
          ft.bit = static_cast<std::uint32_t>(f.uint("bit", false, 0, 7).value_or(0));
          if (ft.step < sc.workload.size()) {
            if (ft.byte >= sc.workload[ft.step].bytes) d.error(f.child("byte"), "beyond the step's buffer");
            if (ft.rep >= sc.workload[ft.step].repeat) d.error(f.child("rep"), "the step has fewer repetitions");
          } else if (wl) {
            d.error(f.child("step"), "no such workload step");
          }
        } else if (kind == FaultKind::LinkDown || kind == FaultKind::LinkUp || kind == FaultKind::CrcRate || kind == FaultKind::LaneDegrade) {
          ObjectReader f(fj, fp, d, {"type", "at", "a", "b", "rate", "lanes"});
          ft.at_ps = f.duration("at", true).value_or(0);
          auto a = f.str("a", true), b = f.str("b", true);
          if (kind == FaultKind::CrcRate) ft.rate = f.number("rate", true, 0, 0.5).value_or(0);
          if (kind == FaultKind::LaneDegrade) ft.lanes = static_cast<std::uint32_t>(f.uint("lanes", true, 1, 64).value_or(1));
          if (a && b) refs.push_back({sc.faults.size(), fp, *a, *b, ""});
        } else if (kind == FaultKind::NicDown || kind == FaultKind::NicUp) {
          ObjectReader f(fj, fp, d, {"type", "at", "npu"});
          ft.at_ps = f.duration("at", true).value_or(0);
          if (auto n = f.str("npu", true)) refs.push_back({sc.faults.size(), fp, "", "", *n});
        } else if (kind == FaultKind::RankCrash) {
          ObjectReader f(fj, fp, d, {"type", "at", "rank"});
          ft.at_ps = f.duration("at", true).value_or(0);
          ft.rank = static_cast<std::uint32_t>(f.uint("rank", true, 0, 1u << 20).value_or(0));
          ft.what = "rank " + std::to_string(ft.rank) + " crashed";
        } else if (kind == FaultKind::DropRate) {
          ObjectReader f(fj, fp, d, {"type", "at", "rate"});
          ft.at_ps = f.duration("at", true).value_or(0);
          ft.rate = f.number("rate", true, 0, 1).value_or(0);
          ft.what = "packet drop rate " + std::to_string(ft.rate);
        } else {
          d.error(fp + "/type", "unknown fault type \"" + type + "\" (hbm_bitflip, link_down, link_up, crc_rate, lane_degrade, nic_down, nic_up, drop_rate, rank_crash)");
          continue;
        }
        sc.faults.push_back(ft);
      }
  }
  if (const json* ej = top.get("expect", false)) {
    ObjectReader e(*ej, top.child("expect"), d, {"checks_pass", "api_errors", "max_op_time_us", "min_busbw_GBps", "counters_min", "counters_max"});
    sc.expect.checks_pass = e.boolean("checks_pass", false).value_or(true);
    if (auto v = e.str("api_errors", false)) {
      if (*v == "none") sc.expect.api_errors = false;
      else if (*v == "expected") sc.expect.api_errors = true;
      else d.error(e.child("api_errors"), "expected \"none\" or \"expected\", got \"" + *v + "\"");
    }
    sc.expect.max_op_time_us = e.number("max_op_time_us", false, 0, 1e15);
    sc.expect.min_busbw_GBps = e.number("min_busbw_GBps", false, 0, 1e9);
    for (const char* key : {"counters_min", "counters_max"}) {
      const json* cj = e.get(key, false);
      if (!cj) continue;
      if (!cj->is_object()) { d.error(e.child(key), "expected an object of counter: number"); continue; }
      for (auto it = cj->begin(); it != cj->end(); ++it) {
        const auto& names = counter_names();
        std::string p = e.child(key) + "/" + it.key();
        if (std::find(names.begin(), names.end(), it.key()) == names.end()) {
          std::string list;
          for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
          d.error(p, "unknown counter (known: " + list + ")");
        } else if (!it.value().is_number() || it.value().get<double>() < 0) {
          d.error(p, "expected a non-negative number");
        } else {
          (std::string(key) == "counters_min" ? sc.expect.counters_min : sc.expect.counters_max)[it.key()] = it.value().get<double>();
        }
      }
    }
  }
  if (!d.ok()) return finish();
  Diagnostics td(sc.topology_path);
  auto topo = load_topology(sc.topology_path, td);
  if (!topo) {
    *errors = td.messages();
    errors->insert(errors->begin(), path + ": /topology: topology file is invalid");
    if (warnings) *warnings = d.warnings();
    return std::nullopt;
  }
  sc.topology = std::move(*topo);
  std::map<std::string, std::uint32_t> npu_by_name;
  for (std::uint32_t i = 0; i < sc.topology.npus.size(); ++i) npu_by_name[sc.topology.npus[i].name] = i;
  for (const auto& r : refs) {
    Fault& f = sc.faults[r.fault];
    auto find = [&](const std::string& n, const char* key) -> std::int64_t {
      auto it = npu_by_name.find(n);
      if (it == npu_by_name.end()) { d.error(r.ptr + "/" + key, "no NPU named \"" + n + "\" in " + sc.topology_path); return -1; }
      return it->second;
    };
    if (!r.npu.empty()) {
      f.npu = find(r.npu, "npu");
      bool cabled = false;
      for (auto& l : sc.topology.links)
        if (l.type == LinkType::Roce && ((!l.a.is_switch && l.a.index == f.npu) || (!l.b.is_switch && l.b.index == f.npu))) cabled = true;
      if (f.npu >= 0 && !cabled) d.error(r.ptr + "/npu", r.npu + " has no cabled NIC");
      f.what = "NIC of " + r.npu + (f.kind == FaultKind::NicDown ? " down" : " up");
      continue;
    }
    std::int64_t a = find(r.a, "a"), b = find(r.b, "b");
    if (a < 0 || b < 0) continue;
    for (std::size_t k = 0; k < sc.topology.links.size(); ++k) {
      const auto& l = sc.topology.links[k];
      if (l.type == LinkType::Hccs && ((l.a.index == a && l.b.index == b) || (l.a.index == b && l.b.index == a))) f.link = static_cast<std::int64_t>(k);
    }
    if (f.link < 0) { d.error(r.ptr, "no HCCS link between " + r.a + " and " + r.b); continue; }
    f.what = "HCCS link " + sc.topology.links[f.link].name + " " +
             (f.kind == FaultKind::LinkDown ? "down" : f.kind == FaultKind::LinkUp ? "up" : f.kind == FaultKind::CrcRate ? "CRC error rate " + std::to_string(f.rate)
                                                                                                : "degraded to " + std::to_string(f.lanes) + " lanes");
  }
  for (std::size_t i = 0; i < sc.faults.size(); ++i)
    if ((sc.faults[i].kind == FaultKind::HbmBitflip || sc.faults[i].kind == FaultKind::RankCrash) && sc.faults[i].rank >= sc.topology.npus.size())
      d.error("/faults/" + std::to_string(i) + "/rank", "rank " + std::to_string(sc.faults[i].rank) + " does not exist (" +
                                                           std::to_string(sc.topology.npus.size()) + " ranks)");
  // What each op needs of the layout (checked here, so that it fails validation rather than the run).
  const std::uint64_t nranks = sc.topology.rank_to_npu.size();
  auto env_u64 = [&](const char* k, std::uint64_t def) {
    auto it = sc.hcomm_env.find(k);
    return it == sc.hcomm_env.end() || it->second.empty() ? def : std::strtoull(it->second.c_str(), nullptr, 10);
  };
  const std::uint64_t sym_bytes = (env_u64("HCOMM_SLOT_SIZE_MB", 256) << 20) * env_u64("HCOMM_SYM_SLOTS", 4);
  for (std::size_t i = 0; i < sc.workload.size(); ++i) {
    const WorkloadStep& w = sc.workload[i];
    const std::string wp = "/workload/" + std::to_string(i);
    if (w.op == "incast") {
      if (nranks < 2) { d.error(wp + "/op", "incast needs at least 2 ranks (a root and a sender), the topology has " + std::to_string(nranks)); continue; }
      if (w.root >= nranks) { d.error(wp + "/root", "rank " + std::to_string(w.root) + " does not exist (" + std::to_string(nranks) + " ranks)"); continue; }
      if (w.senders == "remote") {
        const auto root_server = sc.topology.npus[sc.topology.rank_to_npu[w.root]].server;
        bool any = false;
        for (auto n : sc.topology.rank_to_npu) any = any || sc.topology.npus[n].server != root_server;
        if (!any) d.error(wp + "/senders", "\"remote\" senders: no rank is on another server than the root");
      }
      if (w.bytes * nranks > sym_bytes)
        d.error(wp + "/bytes", "incast writes bytes x ranks = " + format_bytes(w.bytes * nranks) + " into the root's symmetric region of " +
                                   format_bytes(sym_bytes) + " (HCOMM_SLOT_SIZE_MB x HCOMM_SYM_SLOTS)");
    } else if (w.op == "sendrecv" && (nranks < 2 || nranks % 2)) {
      d.error(wp + "/op", "sendrecv pairs ranks and needs an even number of ranks, the topology has " + std::to_string(nranks));
    }
  }
  if (!d.ok()) return finish();
  sc.warnings = d.warnings();
  if (warnings) *warnings = d.warnings();
  return sc;
}

}  // namespace sim
