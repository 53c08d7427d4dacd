#include "run/report.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "models/network.h"

namespace sim {

std::string rank_list(std::vector<std::uint32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.empty()) return "no ranks";
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

bool ends_up(FaultKind k) { return k == FaultKind::LinkFlap || k == FaultKind::NicFlap || k == FaultKind::NpuStall || k == FaultKind::PfcStorm; }

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

std::vector<FaultReport> fault_reports(const Scenario& sc, const FaultFirings& fired, const std::vector<hcomm::FailoverInfo>& failovers,
                                       const std::vector<StepSummary>& steps) {
  const std::size_t nf = sc.faults.size();
  std::vector<FaultReport> out(nf);
  for (std::size_t i = 0; i < nf; ++i) {
    const Fault& f = sc.faults[i];
    FaultReport& r = out[i];
    r.type = fault_kind_name(f.kind);
    r.target = f.what;
    if (f.kind == FaultKind::HbmBitflip)
      r.target = "rank " + std::to_string(f.rank) + " step " + std::to_string(f.step) + " rep " + std::to_string(f.rep) + " byte " +
                 std::to_string(f.byte) + " bit " + std::to_string(f.bit);
    r.fired = i < fired.first_ps.size() && fired.first_ps[i] != fired.never;
    r.at_ps = i < fired.due_ps.size() && fired.due_ps[i] != fired.never ? fired.due_ps[i] : (f.at_step < 0 ? f.at_ps : 0);
    if (!r.fired) continue;
    r.injected_ps = fired.first_ps[i];
    r.last_transition_ps = fired.last_ps[i];
    r.transitions = fired.transitions[i];
  }
  // The device names of each fault's target ("node0/npu3", "server0/hccs2-5"): the library names
  // what it found by them.
  std::vector<std::vector<std::string>> names(nf);
  for (std::size_t i = 0; i < nf; ++i) {
    std::string word;
    for (char c : out[i].target + " ") {
      if (c == ' ' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>') {
        if (word.find('/') != std::string::npos) names[i].push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
  }
  auto named = [&](std::size_t i, const std::string& text) {
    for (const auto& n : names[i])
      if (text.find(n) != std::string::npos) return true;
    return false;
  };
  // Each failovers row to a fault fired at or before its detection: one whose devices the row
  // names if any, else the latest fired.
  for (const auto& fo : failovers) {
    const std::uint64_t t = fo.detected_ns * 1000;
    std::int64_t best = -1;
    bool best_named = false;
    for (std::size_t i = 0; i < nf; ++i) {
      if (!out[i].fired || out[i].injected_ps > t) continue;
      const bool nm = named(i, fo.fault);
      if (best < 0 || (nm && !best_named) ||
          (nm == best_named && out[i].injected_ps >= out[static_cast<std::size_t>(best)].injected_ps))
        best = static_cast<std::int64_t>(i), best_named = nm;
    }
    if (best < 0) continue;
    FaultReport& r = out[static_cast<std::size_t>(best)];
    if (r.detections == 0 || fo.detected_ns < r.first_detect_ns) r.first_detect_ns = fo.detected_ns;
    r.last_detect_ns = std::max(r.last_detect_ns, fo.detected_ns);
    ++r.detections;
    r.actions[fo.action].push_back(fo.rank);
    r.resumed_ns = std::max(r.resumed_ns, fo.resumed_ns);
    r.bytes_resent += fo.bytes_resent;
  }
  // The repetition each fault hit, against its step's repetitions no fault touched: those that
  // ended before every fault fired, or (flaps, stalls) started after such a fault's last change.
  auto touched = [&](const StepSummary& s) {
    for (std::size_t i = 0; i < nf; ++i) {
      const FaultReport& r = out[i];
      if (!r.fired || r.injected_ps > s.end_ps) continue;
      if (ends_up(sc.faults[i].kind) && r.last_transition_ps < s.start_ps) continue;
      return true;
    }
    return false;
  };
  for (FaultReport& r : out) {
    if (!r.fired) continue;
    for (const auto& s : steps)
      if (s.start_ps <= r.injected_ps && r.injected_ps <= s.end_ps) {
        r.step = s.step;
        r.rep = s.rep;
        r.op_time_us = s.time_us;
        break;
      }
    if (r.step < 0) continue;
    std::vector<double> clean;
    for (const auto& s : steps)
      if (static_cast<std::int64_t>(s.step) == r.step && s.time_us >= 0 && !touched(s)) clean.push_back(s.time_us);
    r.median_us = median(clean);
  }
  return out;
}

void pathologies(const Scenario& sc, const std::vector<StepSummary>& steps, const std::map<std::string, double>& counters,
                 const models::Network* net, std::uint64_t sim_end_ps, const std::vector<FaultReport>& faults,
                 std::vector<std::string>* warnings, std::vector<Failure>* failures) {
  auto ctr = [&](const char* name) {
    auto it = counters.find(name);
    return it == counters.end() ? 0.0 : it->second;
  };
  if (const double t = ctr("rdma_timeouts"); t > 0)
    warnings->push_back(fmt("%.0f", t) + " RDMA retransmit timeout(s): a lost packet waited the QP's retransmit timeout (counter rdma_timeouts; " +
                        fmt("%.0f", ctr("rdma_retransmits")) + " retransmissions)");
  if (const double d = ctr("drops"); d > 0)
    warnings->push_back(fmt("%.0f", d) + " packet(s) dropped (counter drops: a lossy fabric's full buffer, corruption, a dead port or a PFC watchdog; go-back-N resent them)");
  if (const double w = ctr("pfcwd_storms"); w > 0)
    warnings->push_back(fmt("%.0f", w) + " PFC pause storm(s) caught by the switches' watchdog (counter pfcwd_storms; action " +
                        (sc.net.pfc.action == models::PfcParams::WdAction::Drop ? "drop: the paused ports' packets dropped)" : "forward: their pauses ignored)"));
  // Ports that spent over `limit` of the run in some state (time per port from `time_of`):
  // how many, and the worst one's name and share.
  struct PortsOver { std::uint32_t count = 0; double worst = 0; std::string where; };
  auto ports_over = [&](double limit, bool switches_only, auto time_of) {
    PortsOver r;
    for (std::uint32_t n = 0; n < net->nodes(); ++n) {
      if (switches_only && !net->is_switch(n)) continue;
      for (std::uint32_t k = 0; k < net->node_ports(n); ++k) {
        const double share = static_cast<double>(time_of(net->port_stats(n, k))) / static_cast<double>(sim_end_ps);
        if (share <= limit) continue;
        ++r.count;
        if (share > r.worst) r.worst = share, r.where = net->node_name(n) + ":" + std::to_string(k);
      }
    }
    return r;
  };
  if (net && sim_end_ps > 0) {
    const PortsOver st = ports_over(kPfcStormShare, false, [](const models::NetPortStats& ps) { return ps.paused_ps; });
    if (st.count)
      warnings->push_back("PFC storm: " + std::to_string(st.count) + " RoCE port(s) paused for over " + fmt("%.0f", kPfcStormShare * 100) +
                          "% of the run (worst " + st.where + ", " + fmt("%.1f", st.worst * 100) + "%)");
  }
  // Where flows from several ingress ports fill one switch egress, the packet tier queues, marks
  // and pauses. The flow tier models that with DCQCN over fluid queues (or, with flow_cc "ideal",
  // not at all, and is optimistic); there it is off by up to tens of percent either way.
  if (net && sim_end_ps > 0 && sc.net.flow) {
    const PortsOver fi = ports_over(kFlowFaninShare, true, [](const models::NetPortStats& ps) { return ps.fanin_ps; });
    if (fi.count)
      warnings->push_back("flow tier: " + std::to_string(fi.count) + " switch port(s) were fan-in bottlenecks (flows from several ingress ports filling them) for over " +
                          fmt("%.0f", kFlowFaninShare * 100) + "% of the run (worst " + fi.where + ", " + fmt("%.1f", fi.worst * 100) +
                          (sc.net.flow_cc ? "%): this tier's fluid DCQCN model is off by up to tens of percent either way there (multi-hop queues, rail fabrics); the packet tier is the reference "
                                          : "%): this tier has no congestion control (flow_cc \"ideal\") and is optimistic there; the packet tier is the reference ") +
                          std::string(
                          "(--set /fidelity=\"packet\", or hcsim plan --tier-check; docs/models/tiers.md)"));
  }
  // The chunk tier agrees with the packet tier where the fabric stays uncongested; where switches
  // mark ECN or pause, it is off by up to tens of percent either way (docs/models/tiers.md).
  if (!sc.net.flow && sc.net.unit_bytes > sc.net.mtu) {
    const double marks = ctr("ecn_marked"), pauses = ctr("pfc_pause_sent");
    if (marks > 0 || pauses > 0)
      warnings->push_back("chunk tier: congestion (" + fmt("%.0f", marks) + " ECN-marked units, " + fmt("%.0f", pauses) +
                          " PFC pauses): where the fabric congests this tier may be off the packet tier by tens of percent "
                          "either way; the packet tier is the reference (--set /fidelity=\"packet\", or hcsim plan --tier-check; "
                          "docs/models/tiers.md)");
  }
  // Repetitions against the median of their step's other repetitions (at least 3 of them).
  std::map<std::uint32_t, std::vector<const StepSummary*>> by_step;
  for (const auto& s : steps) by_step[s.step].push_back(&s);
  const auto& limit = sc.expect.max_step_slowdown;
  for (const auto& [step, reps] : by_step) {
    if (reps.size() < 4) continue;
    for (const StepSummary* s : reps) {
      std::vector<double> others;
      for (const StepSummary* o : reps)
        if (o != s) others.push_back(o->time_us);
      const double m = median(others);
      if (m <= 0) continue;
      const double x = s->time_us / m;
      const std::string what = "step " + std::to_string(step) + " rep " + std::to_string(s->rep) + " (" + s->kind + ") took " +
                               fmt("%.3f", s->time_us) + " us, " + fmt("%.1f", x) + "x the median " + fmt("%.3f", m) +
                               " us of its step's other repetitions";
      if (x > kOutlierFactor) warnings->push_back(what);
      if (limit && x > *limit)
        failures->push_back({FailureKind::OpTime, what + ", over max_step_slowdown " + fmt("%g", *limit), static_cast<std::int64_t>(step)});
    }
  }
  for (std::size_t i = 0; i < faults.size(); ++i) {
    if (faults[i].fired) continue;
    std::string what = "fault " + std::to_string(i) + " (" + faults[i].type + " " + faults[i].target + ") never fired: ";
    const Fault& f = sc.faults[i];
    if (f.kind == FaultKind::HbmBitflip) what += "its operation (step " + std::to_string(f.step) + " rep " + std::to_string(f.rep) + ") never completed on rank " + std::to_string(f.rank);
    else if (f.at_step >= 0 && !faults[i].at_ps) what += "its step " + std::to_string(f.at_step) + " rep " + std::to_string(f.at_rep) + " never started";
    else what += "its time " + fmt("%.3f", static_cast<double>(faults[i].at_ps) / 1e6) + " us was not reached (the run ended at " +
                 fmt("%.3f", static_cast<double>(sim_end_ps) / 1e6) + " us)";
    warnings->push_back(what);
    if (sc.expect.faults_fired) failures->push_back({FailureKind::FaultNotFired, what + " (expect/faults_fired: false accepts this)"});
  }
}

}  // namespace sim
