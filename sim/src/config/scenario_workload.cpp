// Scenario "workload" and "hcomm_env" (docs/scenario-format.md): the steps every rank runs, the
// library environment they run with, and what each op needs of the layout.
#include <cstdlib>

#include "hcomm/hcomm.h"
#include "scenario_readers.h"
#include "sim/config/units.h"

namespace sim {

const char* workload_op_name(WorkloadOp k) {
  switch (k) {
    case WorkloadOp::AllReduce: return "allreduce";
    case WorkloadOp::AllGather: return "allgather";
    case WorkloadOp::ReduceScatter: return "reducescatter";
    case WorkloadOp::Broadcast: return "broadcast";
    case WorkloadOp::AllToAll: return "alltoall";
    case WorkloadOp::SendRecv: return "sendrecv";
    case WorkloadOp::Incast: return "incast";
    case WorkloadOp::Barrier: return "barrier";
    case WorkloadOp::H2D: return "h2d";
    case WorkloadOp::D2H: return "d2h";
    case WorkloadOp::TrainStep: return "train_step";
  }
  return "?";
}

std::optional<WorkloadOp> workload_op_from(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(WorkloadOp::TrainStep); ++i)
    if (name == workload_op_name(static_cast<WorkloadOp>(i))) return static_cast<WorkloadOp>(i);
  return std::nullopt;
}

bool is_collective(WorkloadOp k) {
  return k == WorkloadOp::AllReduce || k == WorkloadOp::AllGather || k == WorkloadOp::ReduceScatter || k == WorkloadOp::Broadcast ||
         k == WorkloadOp::AllToAll;
}

}  // namespace sim

namespace sim::scenario_detail {
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

}  // namespace

void read_hcomm_env(const ObjectReader& top, Scenario& sc, Diagnostics& d) {
  if (const json* ej = top.get("hcomm_env", false)) {
    if (!ej->is_object()) d.error(top.child("hcomm_env"), "expected an object of HCOMM_*/HCCL_* variables");
    else
      for (auto it = ej->begin(); it != ej->end(); ++it) {
        const std::string p = top.child("hcomm_env") + "/" + it.key();
        if (it.key().rfind("HCOMM_", 0) != 0 && it.key().rfind("HCCL_", 0) != 0) {
          d.error(p, "only HCOMM_* and HCCL_* variables can be set");
          continue;
        }
        // A string, or an integer (as from --set /hcomm_env/HCOMM_OP_RETRY=1): its decimal string.
        std::string v;
        if (it.value().is_string()) v = it.value().get<std::string>();
        else if (it.value().is_number_unsigned()) v = std::to_string(it.value().get<std::uint64_t>());
        else if (it.value().is_number_integer()) v = std::to_string(it.value().get<std::int64_t>());
        else { d.error(p, std::string("expected a string or an integer, got ") + (it.value().is_number() ? "a fractional number" : it.value().type_name())); continue; }
        // The library's own table and parser decide (docs/config.md): a value it would refuse at
        // hcomm_create_context / hcomm_comm_init is bad input here, not a failed run.
        char why[256];
        const hcomm_result_t rc = v.find('\0') != std::string::npos ? HCOMM_E_PARA : hcomm_config_check(it.key().c_str(), v.c_str(), why, sizeof why);
        if (rc == HCOMM_E_NOT_FOUND) d.warn(p, "hcomm reads no variable " + it.key() + " (docs/config.md); it is set but has no effect");
        else if (rc != HCOMM_SUCCESS) { d.error(p, rc == HCOMM_E_PARA && v.find('\0') == std::string::npos ? std::string(why) : "value contains a NUL byte"); continue; }
        sc.hcomm_env[it.key()] = v;
      }
  }
}

const json* read_workload(const ObjectReader& top, Scenario& sc, Diagnostics& d) {
  const json* wl = top.get("workload", true);
  // Empty: a cluster with no workload of its own (hcsim exec runs programs on it; hcsim run refuses it).
  if (wl && !wl->is_array()) { d.error(top.child("workload"), "expected an array"); wl = nullptr; }
  if (wl) {
    for (std::size_t i = 0; i < wl->size(); ++i) {
      const json& wj = (*wl)[i];
      if (wj.is_object() && wj.contains("op") && wj["op"].is_string() && wj["op"].get<std::string>() == "train_step") {
        read_train_step(wj, top.child("workload") + "/" + std::to_string(i), sc, d);
        continue;
      }
      ObjectReader w((*wl)[i], top.child("workload") + "/" + std::to_string(i), d, {"op", "bytes", "dtype", "reduce", "repeat", "check", "pattern", "root", "senders", "expect"});
      if (!w.valid()) continue;
      WorkloadStep st;
      if (const json* ej = w.get("expect", false)) {  // this step's own expectations
        ObjectReader e(*ej, w.child("expect"), d, {"max_op_time_us", "checks_pass"});
        if (e.valid()) {
          st.max_op_time_us = e.number("max_op_time_us", false, 0, 1e15);
          st.checks_pass = e.boolean("checks_pass", false);
        }
      }
      st.op = w.str("op", true).value_or("");
      if (auto k = workload_op_from(st.op)) st.kind = *k;
      else if (!st.op.empty())
        d.error(w.child("op"), "unknown op \"" + st.op +
                                   "\" (allreduce, allgather, reducescatter, broadcast, alltoall, sendrecv, incast, barrier, h2d, d2h, train_step)");
      if (st.kind == WorkloadOp::Broadcast) {
        st.root = static_cast<std::uint32_t>(w.uint("root", false, 0, 1u << 20).value_or(0));
        if (w.get("senders", false)) d.error(w.child("senders"), "senders applies to incast only");
      } else if (st.kind == WorkloadOp::Incast) {
        st.root = static_cast<std::uint32_t>(w.uint("root", false, 0, 1u << 20).value_or(0));
        if (auto v = w.str("senders", false)) {
          if (v->rfind("remote:", 0) == 0) {
            const std::string num = v->substr(7);
            const bool digits = !num.empty() && num.size() <= 7 && num.find_first_not_of("0123456789") == std::string::npos;
            const unsigned long n = digits ? std::strtoul(num.c_str(), nullptr, 10) : 0;
            if (n == 0) d.error(w.child("senders"), "\"remote:N\" takes N as a decimal number of senders, 1 or more, got \"" + *v + "\"");
            else { st.senders = "remote"; st.senders_count = static_cast<std::uint32_t>(n); }
          } else if (*v != "all" && *v != "remote") {
            d.error(w.child("senders"), "expected \"all\", \"remote\" (ranks on other servers than the root) or \"remote:N\" (the first N of them after the root)");
          } else {
            st.senders = *v;
          }
        }
      } else {
        if (w.get("root", false)) d.error(w.child("root"), "root applies to incast and broadcast only");
        if (w.get("senders", false)) d.error(w.child("senders"), "senders applies to incast only");
      }
      if (auto b = w.size("bytes", st.kind != WorkloadOp::Barrier)) {
        if (*b > (16ULL << 30)) d.error(w.child("bytes"), "more than 16 GiB per rank");
        else if (*b == 0 && st.kind != WorkloadOp::Barrier) d.error(w.child("bytes"), "must be at least one element (0 bytes moves nothing and cannot be allocated)");
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
        if (st.kind != WorkloadOp::SendRecv) d.error(w.child("pattern"), "pattern applies to sendrecv only");
        else if (*v != "pairs" && *v != "halves") d.error(w.child("pattern"), "unknown pattern \"" + *v + "\" (pairs, halves)");
        else st.pattern = *v;
      }
      sc.workload.push_back(st);
    }
  }
  return wl;
}

void check_workload(Scenario& sc, Diagnostics& d) {
  const std::uint64_t nranks = sc.topology.rank_to_npu.size();
  auto env_u64 = [&](const char* k, std::uint64_t def) {
    auto it = sc.hcomm_env.find(k);
    return it == sc.hcomm_env.end() || it->second.empty() ? def : std::strtoull(it->second.c_str(), nullptr, 10);
  };
  const std::uint64_t sym_bytes = (env_u64("HCOMM_SLOT_SIZE_MB", 256) << 20) * env_u64("HCOMM_SYM_SLOTS", 4);
  for (std::size_t i = 0; i < sc.workload.size(); ++i) {
    const WorkloadStep& w = sc.workload[i];
    const std::string wp = "/workload/" + std::to_string(i);
    if (w.kind == WorkloadOp::TrainStep) {
      check_train_step(w, wp, sc, d);
    } else if (w.kind == WorkloadOp::Incast) {
      if (nranks < 2) { d.error(wp + "/op", "incast needs at least 2 ranks (a root and a sender), the topology has " + std::to_string(nranks)); continue; }
      if (w.root >= nranks) { d.error(wp + "/root", "rank " + std::to_string(w.root) + " does not exist (" + std::to_string(nranks) + " ranks)"); continue; }
      if (w.senders == "remote") {
        const auto root_server = sc.topology.npus[sc.topology.rank_to_npu[w.root]].server;
        std::uint64_t remote = 0;
        for (auto n : sc.topology.rank_to_npu) remote += sc.topology.npus[n].server != root_server ? 1 : 0;
        if (!remote) d.error(wp + "/senders", "\"remote\" senders: no rank is on another server than the root");
        else if (w.senders_count > remote)
          d.error(wp + "/senders", "\"remote:" + std::to_string(w.senders_count) + "\" senders: only " + std::to_string(remote) +
                                       " ranks are on other servers than the root");
      }
      if (w.bytes * nranks > sym_bytes)
        d.error(wp + "/bytes", "incast writes bytes x ranks = " + format_bytes(w.bytes * nranks) + " into the root's symmetric region of " +
                                   format_bytes(sym_bytes) + " (HCOMM_SLOT_SIZE_MB x HCOMM_SYM_SLOTS)");
    } else if (w.kind == WorkloadOp::Broadcast && w.root >= nranks) {
      d.error(wp + "/root", "rank " + std::to_string(w.root) + " does not exist (" + std::to_string(nranks) + " ranks)");
    } else if ((w.kind == WorkloadOp::ReduceScatter || w.kind == WorkloadOp::AllToAll) && nranks && w.bytes % (nranks * models::dtype_size(w.dtype)) != 0) {
      d.error(wp + "/bytes", w.op + " splits bytes into one block per rank: " + std::to_string(w.bytes) +
                                 " is not a multiple of " + std::to_string(nranks) + " ranks x " +
                                 std::to_string(models::dtype_size(w.dtype)) + " B");
    } else if (w.kind == WorkloadOp::AllGather && w.bytes * nranks > (16ULL << 30)) {
      d.error(wp + "/bytes", "allgather gathers bytes x ranks = " + format_bytes(w.bytes * nranks) + " per rank, more than 16 GiB");
    } else if (w.kind == WorkloadOp::SendRecv && (nranks < 2 || nranks % 2)) {
      d.error(wp + "/op", "sendrecv pairs ranks and needs an even number of ranks, the topology has " + std::to_string(nranks));
    }
  }
}

}  // namespace sim::scenario_detail
