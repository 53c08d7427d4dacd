// Injected faults (docs/scenario-format.md#faults; run/faults.h): timed ones applied at their
// simulated time (absolute, or relative to the start of a workload step), HBM bit flips by the
// workload after the operation they corrupt. Every injection is logged to the trace and, unless
// -q, echoed on stderr with its simulated time.
#include <algorithm>
#include <cstdio>

#include "run/faults.h"
#include "sim/live.h"

namespace sim {

namespace {

// Events of one fault: flaps go down and up `count` times (phase 2k down, 2k+1 up); npu_stall
// and pfc_storm have their end (phase 1, only logged); everything else one event.
std::uint32_t phases(const Fault& f) {
  if (f.kind == FaultKind::LinkFlap || f.kind == FaultKind::NicFlap) return 2 * f.count;
  if (f.kind == FaultKind::NpuStall || f.kind == FaultKind::PfcStorm) return 2;
  return 1;
}

models::Tick phase_offset(const Fault& f, std::uint32_t ph) {
  if (f.kind == FaultKind::NpuStall || f.kind == FaultKind::PfcStorm) return ph ? f.duration_ps : 0;
  return static_cast<models::Tick>(ph / 2) * f.period_ps + (ph % 2 ? f.duration_ps : 0);
}

}  // namespace

FaultInjector::FaultInjector(const Scenario& sc, Elaboration& elab, SimDriver& driver, FaultTarget& target, bool echo)
    : sc_(sc), elab_(elab), driver_(driver), target_(target), echo_(echo) {}

void FaultInjector::on_event(std::uint64_t i, std::uint64_t phase) { apply(i, static_cast<std::uint32_t>(phase)); }

void FaultInjector::schedule() {
  elab_.sched.set_kernel_handler(this);  // a fault may kill a rank's process
  armed_.assign(sc_.faults.size(), false);
  fired_.first_ps.assign(sc_.faults.size(), fired_.never);
  fired_.last_ps.assign(sc_.faults.size(), fired_.never);
  fired_.due_ps.assign(sc_.faults.size(), fired_.never);
  fired_.transitions.assign(sc_.faults.size(), 0);
  for (std::size_t i = 0; i < sc_.faults.size(); ++i) {
    const Fault& f = sc_.faults[i];
    if (f.kind == FaultKind::HbmBitflip || f.at_step >= 0) continue;  // bit flips: inject_bitflips; relative: op_started
    arm(i, f.at_ps);
  }
  if (std::any_of(sc_.faults.begin(), sc_.faults.end(), [](const Fault& f) { return f.at_step >= 0; }))
    driver_.observer().on_op_start = [this](std::uint32_t step, std::uint32_t rep, const hcomm::OpInfo& info, models::Tick t) {
      op_started(step, rep, info.est_ns, t);
    };
}

void FaultInjector::arm(std::size_t i, models::Tick at) {
  armed_[i] = true;
  fired_.due_ps[i] = at;
  const Fault& f = sc_.faults[i];
  for (std::uint32_t ph = 0; ph < phases(f); ++ph) elab_.sched.schedule(at + phase_offset(f, ph), this, i, ph);
}

// A workload step's repetition started (its first operation's begin marker, or a host copy's
// submit): arm the faults timed relative to it, once, from its first rank.
void FaultInjector::op_started(std::uint32_t step, std::uint32_t rep, double est_ns, models::Tick t) {
  for (std::size_t i = 0; i < sc_.faults.size(); ++i) {
    const Fault& f = sc_.faults[i];
    if (armed_[i] || f.at_step != static_cast<std::int64_t>(step) || f.at_rep != rep) continue;
    models::Tick after = f.at_ps;
    if (f.after_pct >= 0) {
      if (est_ns <= 0)
        announce(0, 1, "[HCSIM_WARN] fault timing: step " + std::to_string(step) + " rep " + std::to_string(rep) +
                           " has no estimate (operations.est_us); the fault timed at " + std::to_string(f.after_pct) + "% fires at its start");
      after = static_cast<models::Tick>(f.after_pct / 100.0 * (est_ns > 0 ? est_ns : 0) * models::kPsPerNs);
    }
    arm(i, t + after);
  }
}

void FaultInjector::announce(std::uint32_t rank, int level, const std::string& line) {
  driver_.observer().note(rank, level, line);
  const double t = static_cast<double>(now_ps()) / 1e6;
  if (echo_) std::fprintf(stderr, "%s[%12.3f us] %s\n", g_status_line ? "\r\033[K" : "", t, line.c_str());
  log_.push_back(line);
}

void FaultInjector::apply(std::size_t idx, std::uint32_t phase) {
  const Fault& f = sc_.faults[idx];
  models::Machine& m = elab_.machine;
  models::Network* net = elab_.net.get();
  const auto& nic = elab_.nic;
  const auto& hccs = elab_.hccs_link;
  const auto& t = sc_.topology;
  std::string what = f.what;
  // A RoCE cable of the topology as the network's (node, port).
  auto cable = [&](std::int64_t k, std::uint32_t* node, std::uint32_t* port) {
    const auto& l = t.links[static_cast<std::size_t>(k)];
    if (!l.a.is_switch) { *node = nic[l.a.index]; *port = 0; }
    else if (!l.b.is_switch) { *node = nic[l.b.index]; *port = 0; }
    else {  // switch to switch: the network node of a switch is found by its name
      *node = ~0u;
      for (std::uint32_t n = 0; net && n < net->nodes(); ++n)
        if (net->is_switch(n) && net->node_name(n) == t.switches[l.a.index].name) *node = n;
      *port = l.a.port;
    }
  };
  if (phase == 0 || (f.kind != FaultKind::NpuStall && f.kind != FaultKind::PfcStorm)) driver_.observer().fault_injected();
  if (fired_.first_ps[idx] == fired_.never) fired_.first_ps[idx] = now_ps();
  fired_.last_ps[idx] = now_ps();
  ++fired_.transitions[idx];
  // An HCCS link down from the start (/as_built) has no machine link: its faults change nothing.
  if ((f.kind == FaultKind::LinkDown || f.kind == FaultKind::LinkUp || f.kind == FaultKind::CrcRate ||
       f.kind == FaultKind::LaneDegrade) && f.link >= 0 && t.links[static_cast<std::size_t>(f.link)].type == LinkType::Hccs &&
      hccs[static_cast<std::size_t>(f.link)] == ~0u)
    return;
  switch (f.kind) {
    case FaultKind::RankCrash: {  // the process dies; so does its device (streams, links, NIC)
      announce(f.rank, 0, "[HCSIM_ERR] fault injected: " + f.what);
      target_.crash_fault(f.rank);
      return;
    }
    case FaultKind::LinkDown: m.set_link_up(hccs[f.link], false); break;
    case FaultKind::LinkUp: m.set_link_up(hccs[f.link], true); break;
    case FaultKind::CrcRate:
      m.set_link_crc_rate(hccs[f.link], f.rate);
      driver_.events().link_error_rate(t.links[f.link].name, {t.links[f.link].a.index, t.links[f.link].b.index}, f.rate);
      break;
    case FaultKind::LaneDegrade: m.set_link_lanes(hccs[f.link], f.lanes); break;
    case FaultKind::DropRate: if (net) net->set_drop_rate(f.rate); break;
    case FaultKind::NicDown:
    case FaultKind::NicUp:
    case FaultKind::SwitchLinkDown:
    case FaultKind::SwitchLinkUp:
    case FaultKind::PacketCorruption:
    case FaultKind::NicFlap:
    case FaultKind::LinkFlap: {
      const bool up = f.kind == FaultKind::NicUp || f.kind == FaultKind::SwitchLinkUp ||
                      ((f.kind == FaultKind::NicFlap || f.kind == FaultKind::LinkFlap) && phase % 2 == 1);
      if (f.kind == FaultKind::LinkFlap && f.link >= 0) {  // an HCCS link
        m.set_link_up(hccs[f.link], up);
      } else if (net && f.roce_link >= 0) {
        std::uint32_t node = ~0u, port = 0;
        cable(f.roce_link, &node, &port);
        if (node != ~0u) {
          if (f.kind == FaultKind::PacketCorruption) {
            net->set_link_corruption(node, port, f.rate);
            // A NIC's cable: its FCS error rate (the NIC counts the errors, as HCCS ports count CRC errors).
            const auto& l = t.links[static_cast<std::size_t>(f.roce_link)];
            std::vector<std::uint32_t> ends;
            if (!l.a.is_switch) ends.push_back(l.a.index);
            if (!l.b.is_switch) ends.push_back(l.b.index);
            if (!ends.empty()) driver_.events().link_error_rate(l.name, ends, f.rate);
          } else {
            net->set_link_up(node, port, up);
            // An NPU's NIC cable: its port state changed (the driver's port event, docs/failover.md#nic-port-event).
            if (!net->is_switch(node))
              for (std::uint32_t npu = 0; npu < nic.size(); ++npu)
                if (nic[npu] == node) driver_.events().nic_port_changed(npu, up);
          }
        }
      }
      if (f.kind == FaultKind::NicFlap || f.kind == FaultKind::LinkFlap) {
        const std::string name = f.link >= 0 ? "HCCS link " + t.links[f.link].name : f.what.substr(0, f.what.find(" flapping"));
        what = name + (up ? " up" : " down") + " (flap " + std::to_string(phase / 2 + 1) + "/" + std::to_string(f.count) + ")";
      }
      break;
    }
    case FaultKind::PcieLinkDown:
    case FaultKind::PcieLinkUp: {
      // The NPU's PCIe link to its PCIe switch (Atlas 800), else its own link to the host.
      const std::string& npu = t.npus[static_cast<std::size_t>(f.npu)].name;
      std::int64_t id = -1;
      for (std::size_t k = 0; k < t.links.size() && id < 0; ++k)
        if (t.links[k].type == LinkType::Pcie && !t.links[k].a.is_switch && t.links[k].a.index == f.npu)
          for (std::size_t j = 0; j < m.links().size(); ++j)
            if (m.links()[j].name == t.links[k].name) id = static_cast<std::int64_t>(j);
      for (std::size_t j = 0; j < m.links().size() && id < 0; ++j)
        if (m.links()[j].name == npu + "/host") id = static_cast<std::int64_t>(j);
      if (id >= 0) {
        m.set_link_up(static_cast<std::uint32_t>(id), f.kind == FaultKind::PcieLinkUp);
        what = "PCIe link " + m.links()[static_cast<std::size_t>(id)].name + (f.kind == FaultKind::PcieLinkUp ? " up" : " down");
      }
      break;
    }
    case FaultKind::NpuStall:
      if (phase == 0) m.stall_npu(static_cast<std::uint32_t>(f.npu), now_ps() + f.duration_ps);
      else what = t.npus[static_cast<std::size_t>(f.npu)].name + " stream engine runs again (npu_stall ended)";
      break;
    case FaultKind::PfcStorm:  // the NIC's pause frames, for its duration (the network ends the storm itself)
      if (phase == 0 && net && f.npu >= 0 && static_cast<std::size_t>(f.npu) < nic.size() && nic[f.npu] != ~0u)
        net->pfc_storm(nic[f.npu], f.duration_ps);
      else if (phase) what = f.what.substr(0, f.what.find(" sends PFC")) + " stops sending PFC pause frames (pfc_storm ended)";
      break;
    case FaultKind::HbmBitflip: break;  // not timed: inject_bitflips
  }
  const std::uint32_t rank = f.npu >= 0 ? npu_rank(static_cast<std::uint32_t>(f.npu))
                                        : f.link >= 0 ? npu_rank(t.links[f.link].a.index) : 0;
  announce(rank, 1, ((f.kind == FaultKind::NpuStall || f.kind == FaultKind::PfcStorm) && phase ? "[HCSIM_WARN] fault ended: " : "[HCSIM_WARN] fault injected: ") + what);
}

// HBM bit flips scheduled for rank r's output of (step s, rep): flip them in device memory.
void FaultInjector::inject_bitflips(std::uint32_t r, std::uint32_t s, std::uint32_t rep, void* out) {
  for (std::size_t i = 0; i < sc_.faults.size(); ++i) {
    const Fault& f = sc_.faults[i];
    if (f.kind == FaultKind::HbmBitflip && f.rank == r && f.step == s && f.rep == rep) {
      if (i < fired_.first_ps.size()) {
        if (fired_.first_ps[i] == fired_.never) fired_.first_ps[i] = now_ps();
        fired_.due_ps[i] = fired_.last_ps[i] = now_ps();
        ++fired_.transitions[i];
      }
      std::uint64_t a = reinterpret_cast<std::uint64_t>(out) + f.byte;
      std::uint8_t b = 0;
      elab_.machine.backdoor_read(a, &b, 1);
      b = static_cast<std::uint8_t>(b ^ (1u << f.bit));
      elab_.machine.backdoor_write(a, &b, 1);
      announce(r, 1, "[HCSIM_WARN] fault injected: HBM bit flip on rank " + std::to_string(r) + " at output byte " +
                         std::to_string(f.byte) + " bit " + std::to_string(f.bit));
    }
  }
}

std::uint32_t FaultInjector::npu_rank(std::uint32_t npu) const {
  for (std::uint32_t r = 0; r < sc_.topology.rank_to_npu.size(); ++r)
    if (sc_.topology.rank_to_npu[r] == npu) return r;
  return 0;
}

}  // namespace sim
