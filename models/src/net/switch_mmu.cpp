// The switch MMU (docs/models/ethernet-switch.md), apart from forwarding: the shared buffer
// (admission, tail drop), ECN marking at enqueue by the marking policy, PFC ingress accounting
// with pause/resume frames and thresholds from the buffer and headroom, the PFC watchdog, and the
// pause storm of a stuck receiver (fault injection).
#include "models/net/switch_mmu.h"

#include <algorithm>

#include "models/net/policies.h"

namespace models {

void SwitchMmu::set_pfc_thresholds() {
  // PFC headroom covers two whole units in flight (two packets in the packet tier).
  const std::uint64_t unit_wire = p_.wire_bytes(p_.unit());
  for (std::uint32_t s = 0; s < nodes_.size(); ++s) {
    if (!nodes_[s].is_switch) continue;
    // PFC thresholds from the shared buffer and each port's headroom.
    NetNode& n = nodes_[s];
    std::uint64_t headroom = 0;
    for (auto& p : n.ports)
      if (p.cabled)
        headroom = std::max<std::uint64_t>(headroom, 3 * static_cast<std::uint64_t>(static_cast<double>(p.Bps) * p.latency / kPsPerSec) +
                                                         2ULL * unit_wire);
    policy::pfc_thresholds(n.buffer, n.ports.size(), headroom, unit_wire, &n.xoff, &n.xon);
  }
}

// Shared buffer full (or a dead egress port, or one the PFC watchdog drops for): tail drop,
// counted on the egress port.
bool SwitchMmu::admit(NetNode& n, NetPort& op, const Pkt& k) {
  if (n.used + k.bytes > n.buffer || !op.up || op.wd_drop) {
    op.st.drops += k.npk;
    if (op.wd_drop) op.st.pfcwd_drops += k.npk;
    sample(n, op, SampleCount::Drops, k.npk);
    return false;
  }
  return true;
}

// ECN at enqueue, by the marking policy (a mark from an earlier hop stays).
void SwitchMmu::mark(NetNode& n, std::uint32_t in_port, NetPort& op, Pkt& k) {
  if (p_.unit() <= p_.mtu) {
    const double pk = policy::ecn_mark_probability(p_.ecn, static_cast<double>(op.qbytes));
    if (pk >= 1 || (pk > 0 && rng_.uniform() < pk)) k.ecn = true;
  } else {
    const auto node = static_cast<std::uint32_t>(&n - nodes_.data()), port = static_cast<std::uint32_t>(&op - n.ports.data());
    chunk_.mark(node, port, op.Bps, static_cast<double>(n.ports[in_port].Bps), k, sch_.now(), rng_);
  }
  if (k.ecn) {
    ++op.st.ecn_marked;
    sample(n, op, SampleCount::Ecn, 1);
  }
}

// The packet is buffered: it occupies the shared buffer and its ingress port's PFC account; above
// xoff the upstream sender is paused.
void SwitchMmu::ingress(NetNode& n, std::uint32_t node, std::uint32_t port, Pkt& k) {
  n.used += k.bytes;
  k.in_port = port;
  NetPort& in = n.ports[port];
  in.in_bytes += k.bytes;
  in.st.max_in_bytes = std::max(in.st.max_in_bytes, in.in_bytes);
  if (p_.pfc.enabled && !in.upstream_paused && in.in_bytes > n.xoff) {
    in.upstream_paused = true;
    ++in.st.pause_sent;
    sample(node, port, SampleCount::Pause, 1);
    schedule(sch_.now() + in.latency, kPfcFrame, in.peer, in.peer_port | (1ULL << 32));
  }
}

// The packet leaves the switch: its buffer is freed; below xon the upstream sender resumes.
void SwitchMmu::release(NetNode& n, const Pkt& k) {
  n.used -= k.bytes;
  NetPort& in = n.ports[k.in_port];
  in.in_bytes -= k.bytes;
  if (p_.pfc.enabled && in.upstream_paused && in.in_bytes <= n.xon) {
    in.upstream_paused = false;
    schedule(sch_.now() + in.latency, kPfcFrame, in.peer, in.peer_port);  // resume
  }
}

// A PFC frame reaches the sender's port: pause it, or resume it. A switch port in the watchdog's
// storm state ignores it, noting only when a pause was last asserted (restoration).
void SwitchMmu::pfc_frame(std::uint32_t node, std::uint32_t port, bool pause) {
  NetNode& n = nodes_[node];
  NetPort& p = n.ports[port];
  const Tick now = sch_.now();
  if (p.wd_storm) {
    if (pause) {
      ++p.st.pause_rcv;
      p.wd_held = true;
    } else if (p.wd_held) {  // the pause ends: restoration after `restore` without another
      p.wd_held = false;
      schedule(now + p_.pfc.restore_ps, kPfcWd, node, port);
    }
    p.wd_last_pause = now;
    return;
  }
  if (pause) {
    if (!p.paused) { p.paused = true; p.paused_since = now; }
    ++p.st.pause_rcv;
    if (n.is_switch && p_.pfc.watchdog && p.qhead != kNoPkt) wd_arm(node, port);
  } else if (p.paused) {
    p.paused = false;
    p.wd_since = ~0ULL;
    p.st.paused_ps += now - p.paused_since;
    fabric_.mmu_resume(node, port);
  }
}

// PFC watchdog (docs/models/ethernet-switch.md#pfc-watchdog). The port is paused and has packets
// queued: detection runs from now (unless it already runs), checked `detect` later by an event.
// The check is exact to the picosecond (a switch polls its queues, SONiC every 200 ms by default).
void SwitchMmu::wd_arm(std::uint32_t node, std::uint32_t port) {
  NetPort& p = nodes_[node].ports[port];
  if (p.wd_since != ~0ULL) return;
  p.wd_since = sch_.now();
  schedule(p.wd_since + p_.pfc.detect_ps, kPfcWd, node, port);
}

// The watchdog's check: a port paused with packets queued for `detect` enters the storm state;
// one in it leaves once no pause has been asserted for `restore`. Stale checks (the port resumed,
// or detection restarted, since) change nothing.
void SwitchMmu::pfc_wd(std::uint32_t node, std::uint32_t port) {
  NetPort& p = nodes_[node].ports[port];
  const Tick now = sch_.now();
  if (p.wd_storm) {
    if (!p.wd_held && now >= p.wd_last_pause + p_.pfc.restore_ps) {
      p.wd_storm = p.wd_drop = false;  // restored: PFC honoured again, the queue forwards
      fabric_.mmu_resume(node, port);
    }
    return;
  }
  if (!p.paused || p.wd_since == ~0ULL || now < p.wd_since + p_.pfc.detect_ps) return;
  p.wd_since = ~0ULL;
  if (p.qhead == kNoPkt) return;  // nothing waits (it restarts at the next enqueue while paused)
  ++p.st.pfcwd_storms;
  p.st.paused_ps += now - p.paused_since;
  p.paused = false;  // the pause is ignored from now on
  p.wd_storm = true;
  p.wd_held = true;
  p.wd_last_pause = now;
  if (p_.pfc.action == PfcParams::WdAction::Drop) {
    p.wd_drop = true;
    fabric_.mmu_drop_queue(node, port);
  } else {
    fabric_.mmu_resume(node, port);
  }
}

// Fault: a stuck receiver's NIC pauses its switch port continuously (pfc_storm).
void SwitchMmu::pfc_storm(std::uint32_t host, Tick duration) {
  if (p_.flow || !p_.pfc.enabled || nodes_.at(host).is_switch) return;
  NetPort& p = nodes_[host].ports.at(0);
  if (!p.cabled || duration == 0) return;
  const bool running = p.storm_until != 0;
  p.storm_until = std::max(p.storm_until, sch_.now() + duration);
  if (!running) pfc_storm_tick(host);
}

// One pause frame of the storm, refreshed every pause quantum; at its end, a resume.
void SwitchMmu::pfc_storm_tick(std::uint32_t host) {
  NetPort& p = nodes_[host].ports[0];
  const Tick now = sch_.now();
  if (now >= p.storm_until) {
    p.storm_until = 0;
    schedule(now + p.latency, kPfcFrame, p.peer, p.peer_port);  // resume
    return;
  }
  if (p.up) {
    ++p.st.pause_sent;
    sample(host, 0, SampleCount::Pause, 1);
    schedule(now + p.latency, kPfcFrame, p.peer, p.peer_port | (1ULL << 32));
  }
  schedule(std::min(now + pause_quantum_ps(p.Bps), p.storm_until), kPfcStorm, host);
}

void SwitchMmu::on_event(std::uint64_t a, std::uint64_t b) {
  const auto id = static_cast<std::uint32_t>(a >> 8);
  switch (a & 0xff) {
    case kPfcFrame: pfc_frame(id, static_cast<std::uint32_t>(b & 0xffffffffu), (b >> 32) != 0); break;
    case kPfcWd: pfc_wd(id, static_cast<std::uint32_t>(b)); break;
    case kPfcStorm: pfc_storm_tick(id); break;
    default: break;
  }
}

}  // namespace models
