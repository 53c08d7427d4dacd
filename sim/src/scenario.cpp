#include "sim/scenario.h"

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

std::optional<Scenario> load_scenario(const std::string& path, std::vector<std::string>* errors) {
  Diagnostics d(path);
  auto finish = [&]() -> std::optional<Scenario> {
    *errors = d.messages();
    return std::nullopt;
  };
  auto j = read_json_file(path, d);
  if (!j) return finish();
  ObjectReader top(*j, "", d, {"format", "version", "name", "description", "topology", "seed", "payload", "workload", "faults", "expect"});
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

  const json* wl = top.get("workload", true);
  if (wl && (!wl->is_array() || wl->empty())) { d.error(top.child("workload"), "expected a non-empty array"); wl = nullptr; }
  if (wl) {
    for (std::size_t i = 0; i < wl->size(); ++i) {
      ObjectReader w((*wl)[i], top.child("workload") + "/" + std::to_string(i), d, {"op", "bytes", "dtype", "reduce", "repeat", "check"});
      if (!w.valid()) continue;
      WorkloadStep st;
      st.op = w.str("op", true).value_or("");
      if (!st.op.empty() && st.op != "allreduce" && st.op != "sendrecv")
        d.error(w.child("op"), "unknown op \"" + st.op + "\" (allreduce, sendrecv)");
      if (auto b = w.size("bytes", true)) {
        if (*b > (16ULL << 30)) d.error(w.child("bytes"), "more than 16 GiB per rank");
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
      sc.workload.push_back(st);
    }
  }
  if (const json* fl = top.get("faults", false)) {
    if (!fl->is_array()) d.error(top.child("faults"), "expected an array");
    else
      for (std::size_t i = 0; i < fl->size(); ++i) {
        ObjectReader f((*fl)[i], top.child("faults") + "/" + std::to_string(i), d, {"type", "rank", "step", "rep", "byte", "bit"});
        if (!f.valid()) continue;
        Fault ft;
        ft.type = f.str("type", true).value_or("");
        if (!ft.type.empty() && ft.type != "hbm_bitflip") d.error(f.child("type"), "unknown fault type \"" + ft.type + "\" (hbm_bitflip)");
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
        sc.faults.push_back(ft);
      }
  }
  if (const json* ej = top.get("expect", false)) {
    ObjectReader e(*ej, top.child("expect"), d, {"checks_pass", "max_op_time_us", "min_busbw_GBps"});
    sc.expect.checks_pass = e.boolean("checks_pass", false).value_or(true);
    sc.expect.max_op_time_us = e.number("max_op_time_us", false, 0, 1e15);
    sc.expect.min_busbw_GBps = e.number("min_busbw_GBps", false, 0, 1e9);
  }
  if (!d.ok()) return finish();
  Diagnostics td(sc.topology_path);
  auto topo = load_topology(sc.topology_path, td);
  if (!topo) {
    *errors = td.messages();
    errors->insert(errors->begin(), path + ": /topology: topology file is invalid");
    return std::nullopt;
  }
  sc.topology = std::move(*topo);
  // What the hardware models can run today: NPUs joined by HCCS inside one server.
  for (const auto& l : sc.topology.links)
    if (l.type != LinkType::Hccs) {
      d.error("/topology", sc.topology_path + " has " + link_type_name(l.type) + " links (" + l.name +
                               "): only HCCS inside one server can be simulated yet; RoCE and PCIe switch models are not built");
      break;
    }
  for (std::size_t i = 0; i < sc.faults.size(); ++i)
    if (sc.faults[i].rank >= sc.topology.npus.size())
      d.error("/faults/" + std::to_string(i) + "/rank", "rank " + std::to_string(sc.faults[i].rank) + " does not exist (" +
                                                           std::to_string(sc.topology.npus.size()) + " ranks)");
  for (std::size_t i = 0; i < sc.workload.size(); ++i)
    if (sc.workload[i].op == "sendrecv" && sc.topology.npus.size() % 2)
      d.error("/workload/" + std::to_string(i) + "/op", "sendrecv pairs ranks and needs an even number of ranks");
  if (!d.ok()) return finish();
  return sc;
}

}  // namespace sim
