#include "run/trace_sink.h"

#include "run/report.h"

#include <algorithm>
#include <limits>

namespace sim {

void trace_devices(Trace& trace, const Topology& topo, const models::Machine& m, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto& npu = topo.npus[i];
    trace.npu(i, npu.name, npu.server, npu.device_id, npu.params.model, npu.params.hbm.capacity_bytes);
  }
  const auto& links = m.links();
  for (std::uint32_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    const auto& p = m.ports()[l.port_ab].p;
    // Ends: NPU index, -1 the host, -2-k PCIe switch k.
    auto end = [&](std::uint32_t e) -> std::int64_t {
      if (e == models::kHost) return -1;
      if (e < n) return e;
      return -2 - static_cast<std::int64_t>(models::kHost - 1 - e);
    };
    trace.link(i, l.name, models::link_kind_name(l.kind), end(l.a), end(l.b), p.bandwidth_Bps, static_cast<double>(p.latency_ps) / 1e3);
  }
}

void trace_summaries(Trace& trace, const std::vector<StepSummary>& steps) {
  for (const auto& s : steps) trace.summary(s.step, s.rep, s.kind, s.bytes, s.time_us, s.algbw_GBps, s.busbw_GBps);
}

void trace_counters(Trace& trace, const std::map<std::string, double>& counters) {
  for (const auto& [name, v] : counters) trace.counter(name, v);
}

void trace_link_counters(Trace& trace, const models::Machine& m, std::uint64_t sim_end_ps) {
  const auto& links = m.links();
  const auto& ports = m.ports();
  for (std::uint32_t i = 0; i < links.size(); ++i) {
    const auto& a = ports[links[i].port_ab];
    const auto& b = ports[links[i].port_ba];
    double t = static_cast<double>(sim_end_ps) / 1e3;
    trace.link_counter(i, "ab", t, a.bytes, a.pieces, static_cast<double>(a.busy_ps) / 1e3, a.rx_retry, static_cast<double>(a.credit_stall_ps) / 1e3);
    trace.link_counter(i, "ba", t, b.bytes, b.pieces, static_cast<double>(b.busy_ps) / 1e3, b.rx_retry, static_cast<double>(b.credit_stall_ps) / 1e3);
  }
}

void trace_faults(Trace& trace, const std::vector<FaultReport>& faults) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < faults.size(); ++i) {
    const FaultReport& r = faults[i];
    FaultRow row;
    row.id = static_cast<std::uint32_t>(i);
    row.type = r.type;
    row.target = r.target;
    row.fired = r.fired;
    row.injected_ns = r.fired ? static_cast<double>(r.injected_ps) / 1e3 : nan;
    row.transitions = r.transitions;
    row.first_detected_ns = r.detections ? static_cast<double>(r.first_detect_ns) : nan;
    row.last_detected_ns = r.detections ? static_cast<double>(r.last_detect_ns) : nan;
    for (const auto& [action, ranks] : r.actions) row.actions += (row.actions.empty() ? "" : "; ") + action + ": " + rank_list(ranks);
    row.resumed_ns = r.resumed_ns ? static_cast<double>(r.resumed_ns) : nan;
    row.bytes_resent = r.bytes_resent;
    row.step = r.step;
    row.rep = r.rep;
    row.op_time_us = r.op_time_us >= 0 ? r.op_time_us : nan;
    row.median_us = r.median_us >= 0 ? r.median_us : nan;
    trace.fault(row);
  }
}

void trace_port_counters(Trace& trace, const models::Network* net) {
  if (!net) return;
  for (std::uint32_t n = 0; n < net->nodes(); ++n)
    for (std::uint32_t k = 0; k < net->node_ports(n); ++k) {
      const auto& ps = net->port_stats(n, k);
      if (ps.tx_packets == 0 && ps.drops == 0 && ps.pause_rcv == 0) continue;
      trace.port_counter(net->node_name(n), k, ps.tx_bytes, ps.tx_packets, ps.drops, ps.ecn_marked, ps.pause_sent, ps.pause_rcv,
                         static_cast<double>(ps.paused_ps) / 1e3, ps.max_queue_bytes, static_cast<double>(ps.busy_ps) / 1e3,
                         net->port(n, k).cabled ? net->node_name(net->port(n, k).peer) : std::string(),
                         net->port(n, k).cabled ? static_cast<std::int64_t>(net->port(n, k).peer_port) : -1, ps.pfcwd_storms);
    }
}

namespace {

// One interval of one object: its non-zero metrics, in a fixed order (docs/trace-schema.md).
void sample_rows(Trace& t, const models::Sampler::Sample& s, models::Tick interval, const char* kind, const std::string& object,
                 bool link) {
  const double iv = static_cast<double>(interval), t_ns = static_cast<double>(s.bin) * iv / 1e3, iv_ns = iv / 1e3;
  const models::SampleBin& v = s.v;
  auto row = [&](const char* metric, double value) {
    if (value != 0) t.sample(t_ns, iv_ns, kind, object, metric, value);
  };
  // Spans are split over intervals to the picosecond: in the flow tier the shares of several
  // flows on one port can round a few ps past a fully busy interval.
  row("util", static_cast<double>(std::min<models::Tick>(v.busy_ps, interval)) / iv);
  row("bytes", static_cast<double>(v.bytes));
  if (link) {
    row("crc_replay", static_cast<double>(v.crc));
    return;
  }
  row("queue_bytes", static_cast<double>(v.queue_max));
  row("ecn_marked", static_cast<double>(v.ecn));
  row("cnp", static_cast<double>(v.cnp));
  row("pfc_pause", static_cast<double>(v.pause));
  row("retransmit", static_cast<double>(v.retransmit));
  row("drops", static_cast<double>(v.drops));
}

}  // namespace

void trace_samples(Trace& t, models::Machine& m, models::Network* net, std::uint64_t sim_end_ps) {
  t.set_batch(200000);
  if (m.link_samples().on()) {
    const models::Tick iv = m.link_samples().interval();
    const auto& ports = m.ports();
    const auto& links = m.links();
    std::uint32_t obj = ~0u;
    std::string name;
    for (const auto& s : m.link_samples().finish(sim_end_ps)) {
      if (s.obj != obj) {
        obj = s.obj;
        const auto& l = links[ports[obj].link];
        name = l.name + (obj == l.port_ab ? ":ab" : ":ba");
      }
      sample_rows(t, s, iv, "link", name, true);
    }
  }
  if (net && net->port_samples().on()) {
    const models::Tick iv = net->port_samples().interval();
    std::uint32_t obj = ~0u;
    std::string name;
    for (const auto& s : net->port_samples().finish(sim_end_ps)) {
      if (s.obj != obj) {
        obj = s.obj;
        const std::uint32_t node = net->port_node(obj), port = obj - net->port_id(node, 0);
        // A NIC (one port) by its NPU's name, a switch port as "switch:port".
        name = net->is_switch(node) ? net->node_name(node) + ":" + std::to_string(port) : net->node_name(node);
      }
      sample_rows(t, s, iv, "port", name, false);
    }
  }
  t.set_batch(2000);
}

}  // namespace sim
