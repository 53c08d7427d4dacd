// What the library reports and the simulator notes, into the trace and the runner's records
// (sim/driver/observer.h; docs/trace-schema.md).
#include "sim/driver/observer.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "sim/live.h"
#include "systemc/task_kinds.h"

namespace sim {

namespace {
// Operations that carry a reduction operator.
bool reduces(const std::string& kind) {
  return kind == "allreduce" || kind == "reduce" || kind == "reduce_scatter" || kind == "reduce_scatterv";
}
}  // namespace

SimObserver::SimObserver(const models::Machine& m, const Topology& t, const RankMap& ranks, Trace* trace, bool echo)
    : m_(m), topo_(t), ranks_(ranks), trace_(trace), echo_(echo), phase_(t.rank_to_npu.size(), {0, 0}),
      open_op_(m.npu_count(), {-1, 0}) {}

void SimObserver::task_done(std::uint32_t npu, std::uint32_t s, const models::Task& t, models::Tick start, models::Tick end) {
  auto rank_of = [&](std::uint32_t n) -> std::int64_t { return ranks_.rank_of(n) != ~0u ? ranks_.rank_of(n) : -1; };
  std::int64_t peer = -1;
  switch (t.kind) {
    case models::TaskKind::Copy:
    case models::TaskKind::ReduceCopy:
      for (std::uint64_t a : {t.src, t.dst})
        if (models::addr_is_device(a) && models::addr_npu(a) != npu) peer = rank_of(models::addr_npu(a));
      break;
    case models::TaskKind::NotifyRecord:
    case models::TaskKind::RdmaWrite:
      if (t.target != npu) peer = rank_of(t.target);
      break;
    default: break;
  }
  trace_->task(static_cast<std::uint32_t>(rank_of(npu)), s, t.tag, models::task_kind_name(t.kind), static_cast<double>(start) / 1e3,
               static_cast<double>(end) / 1e3, t.bytes, peer);
}

void SimObserver::profile_op(std::uint32_t device, std::uint64_t begin_key, std::uint64_t end_key, const hcomm::OpInfo& info) {
  OpRecord r;
  r.info = info;
  auto ph = info.rank < phase_.size() ? phase_[info.rank] : std::make_pair(0u, 0u);
  r.step = ph.first;
  r.rep = ph.second;
  std::size_t idx;
  if (!free_pending_.empty()) { idx = free_pending_.back(); free_pending_.pop_back(); pending_[idx] = r; }
  else { idx = pending_.size(); pending_.push_back(r); }
  begin_key_[{device, begin_key}] = idx;
  if (device < open_op_.size()) open_op_[device] = {static_cast<std::int64_t>(info.seq), end_key};
  end_key_[{device, end_key}] = idx;
}

std::int64_t SimObserver::tag_task(std::uint32_t npu, bool marker, std::uint64_t key) {
  if (npu >= open_op_.size()) return -1;
  const std::int64_t tag = open_op_[npu].first;
  if (marker && key == open_op_[npu].second) open_op_[npu] = {-1, 0};  // the op's end marker
  return tag;
}

void SimObserver::on_marker(std::uint32_t npu, std::uint64_t key, models::Tick t) {
  auto b = begin_key_.find({npu, key});
  if (b != begin_key_.end()) {  // the library announces an op (profile_op) before submitting its markers
    const std::size_t idx = b->second;
    begin_key_.erase(b);
    OpRecord& r = pending_[idx];
    r.start = t;
    r.started = true;
    // The step's span starts with its first attempt: an operation aborted by a fault and
    // re-executed (op retry) counts from the aborted attempt's start (run/summary.cpp).
    auto [sp, fresh] = spans_.try_emplace(SpanKey{r.step, r.rep, r.info.kind}, OpSpan{t, 0});
    if (!fresh) sp->second.start = std::min(sp->second.start, t);
    if (on_op_start) on_op_start(r.step, r.rep, r.info, t);
    return;
  }
  auto e = end_key_.find({npu, key});
  if (e == end_key_.end()) return;  // a marker of no announced op
  const std::size_t idx = e->second;
  OpRecord& r = pending_[idx];
  r.end = t;
  r.ended = true;
  end_key_.erase(e);
  free_pending_.push_back(idx);
  if (npu < op_iv_.size()) op_iv_[npu].emplace_back(r.start, r.end);
  finish_op(r);
  if (trace_)
    trace_->operation(r.info.rank, r.info.seq, r.info.kind, r.info.algorithm, r.info.bytes,
                      models::dtype_name(task_kinds::models_dtype(r.info.dtype)),
                      reduces(r.info.kind) ? models::reduce_op_name(static_cast<models::ReduceOp>(r.info.op)) : "",
                      r.info.peer, r.step, r.rep, static_cast<double>(r.start) / 1e3, static_cast<double>(r.end) / 1e3,
                      OpChoice{r.info.chosen_by, r.info.runner_up, r.info.est_ns / 1e3, r.info.runner_up_ns / 1e3});
}

std::vector<OpRecord> SimObserver::unfinished_ops() const {
  std::vector<bool> free(pending_.size(), false);
  for (std::size_t i : free_pending_) free[i] = true;
  std::vector<OpRecord> out;
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (!free[i]) out.push_back(pending_[i]);
  return out;
}

void SimObserver::finish_op(const OpRecord& r) {
  auto [it, fresh] = spans_.try_emplace(SpanKey{r.step, r.rep, r.info.kind}, OpSpan{r.start, r.end});
  if (!fresh) {
    it->second.start = std::min(it->second.start, r.start);
    it->second.end = std::max(it->second.end, r.end);
  }
}

void SimObserver::record_host_op(std::uint32_t rank, const std::string& kind, std::uint64_t bytes, models::Tick start, models::Tick end) {
  OpRecord r;
  r.info.rank = rank;
  r.info.nranks = static_cast<std::uint32_t>(phase_.size());
  r.info.kind = kind;
  r.info.algorithm = "dma";
  r.info.bytes = bytes;
  r.info.dtype = 0;
  r.step = phase_.at(rank).first;
  r.rep = phase_.at(rank).second;
  r.start = start;
  r.end = end;
  r.started = r.ended = true;
  finish_op(r);
  if (trace_)
    trace_->operation(rank, 0, kind, "dma", bytes, "", "", -1, r.step, r.rep, static_cast<double>(start) / 1e3, static_cast<double>(end) / 1e3);
}

void SimObserver::note(std::uint32_t rank, int level, const std::string& line) {
  if (trace_) trace_->log(static_cast<double>(now_ps()) / 1e3, rank, level, line);
}

void SimObserver::log(std::uint32_t device, int level, const std::string& line) {
  double t = static_cast<double>(now_ps()) / 1e3;
  if (level >= 0 && level < 4) ++log_count_[level];
  const std::uint32_t rank = ranks_.rank_of(device);
  if (trace_) trace_->log(t, device < topo_.npus.size() ? static_cast<std::int64_t>(rank) : -1, level, line);
  if (echo_) std::fprintf(stderr, "%s[%12.3f us] %s\n", g_status_line ? "\r\033[K" : "", t / 1e3, line.c_str());
}

void SimObserver::fault_injected() { fault_ps_.push_back(now_ps()); }

void SimObserver::failover_reported(std::uint32_t device, const hcomm::FailoverInfo& f) {
  (void)device;
  failovers_.push_back(f);
  if (!trace_) return;
  FailoverRow row;
  row.comm = f.comm;
  row.detected_by = f.rank;
  row.origin = f.origin;
  row.op_seq = f.op_seq;
  row.bytes_resent = f.bytes_resent;
  row.fault = f.fault;
  row.action = f.action;
  row.path_before = f.path_before;
  row.path_after = f.path_after;
  row.code = f.code;
  row.detected_ns = static_cast<double>(f.detected_ns);
  row.resumed_ns = f.resumed_ns ? static_cast<double>(f.resumed_ns) : std::numeric_limits<double>::quiet_NaN();
  // The injected fault it follows: the last one at or before its detection.
  row.fault_at_ns = std::numeric_limits<double>::quiet_NaN();
  for (const models::Tick t : fault_ps_)
    if (t <= f.detected_ns * models::kPsPerNs) row.fault_at_ns = static_cast<double>(t) / models::kPsPerNs;
  trace_->failover(row);
}

std::string SimObserver::route_hops(std::uint32_t a, std::uint32_t b, const std::string& transport, std::uint16_t sport) const {
  std::string s;
  if (transport == "roce") {
    if (!m_.has_nic(a) || !m_.has_nic(b)) return "";
    const models::Network& net = *m_.network();
    std::vector<models::Network::Hop> hops;
    const bool ok = net.trace_path(m_.nic_node(a), m_.nic_node(b), sport, &hops, nullptr);
    for (const auto& h : hops) {
      if (!s.empty()) s += ' ';
      s += net.node_name(h.node) + ":" + std::to_string(h.in_port) + ">" + std::to_string(h.out_port);
    }
    if (!ok) s += s.empty() ? "(no path)" : " (broken)";
    return s;
  }
  const models::LinkPath r = m_.path(a, b);
  if (!r.ok()) return "(no path)";
  for (int p : {r.p1, r.p2}) {
    if (p < 0) continue;
    if (!s.empty()) s += ' ';
    s += m_.links()[m_.ports()[static_cast<std::size_t>(p)].link].name;
    if (!m_.ports()[static_cast<std::size_t>(p)].up) s += "(down)";
  }
  return s;
}

void SimObserver::route_decided(std::uint32_t device, const hcomm::RouteInfo& r) {
  if (!route_reports()) return;
  RouteRow row;
  row.t_ns = static_cast<double>(now_ps()) / models::kPsPerNs;
  row.comm = r.comm;
  row.src = r.src_rank;
  row.dst = r.dst_rank;
  row.qp = r.qp;
  row.transport = r.transport;
  const bool roce = r.transport == "roce";
  // The source port the NIC really uses (the library's, or the NIC's hash when it set none).
  const std::uint16_t sport = roce ? m_.qp_sport(device, r.dst_device, r.qp) : 0;
  row.udp_sport = sport;
  if (roce && device < topo_.npus.size()) row.nic = topo_.npus[device].name + "/nic";
  if (r.transport == "hccs-relay" && r.relay_device < m_.npu_count()) {  // two HCCS hops through the relay NPU
    row.hops = route_hops(device, r.relay_device, "hccs", 0) + " " + route_hops(r.relay_device, r.dst_device, "hccs", 0);
  } else if (r.transport == "roce-borrow") {  // HCCS to my lender, RoCE between the two NICs, HCCS from the peer's lender
    const std::uint32_t tx = r.relay_device < m_.npu_count() ? r.relay_device : device;
    const std::uint32_t rx = r.via_device < m_.npu_count() ? r.via_device : r.dst_device;
    const std::uint16_t sp = m_.qp_sport(tx, rx, r.qp);
    row.udp_sport = sp;
    if (tx < topo_.npus.size()) row.nic = topo_.npus[tx].name + "/nic";
    if (tx != device) row.hops = route_hops(device, tx, "hccs", 0) + " ";
    row.hops += route_hops(tx, rx, "roce", sp);
    if (rx != r.dst_device) row.hops += " " + route_hops(rx, r.dst_device, "hccs", 0);
  } else {
    row.hops = route_hops(device, r.dst_device, r.transport, sport);
  }
  row.bandwidth_GBps = r.bandwidth_Bps / 1e9;
  row.latency_us = r.latency_ns / 1e3;
  row.congestion = r.congestion;
  row.cost = r.cost;
  row.reason = r.reason;
  row.trigger = r.trigger;
  trace_->route(row);
}

}  // namespace sim
