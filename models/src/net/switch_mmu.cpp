// The switch MMU (docs/models/ethernet-switch.md), apart from forwarding: the shared buffer
// (admission, tail drop), ECN marking at enqueue by the marking policy, PFC ingress accounting
// with pause/resume frames and thresholds from the buffer and headroom, the PFC watchdog, and the
// pause storm of a stuck receiver (fault injection).
#include "models/net/fabric.h"

#include <algorithm>

#include "models/net/policies.h"

namespace models {

void Fabric::set_pfc_thresholds() {
  // PFC headroom covers two whole units in flight (two packets in the packet tier).
  const std::uint64_t unit_wire = p_.wire_bytes(p_.unit());
  for (std::uint32_t s = 0; s < nodes_.size(); ++s) {
    if (!nodes_[s].is_switch) continue;
    // PFC thresholds from the shared buffer and each port's headroom.
    Node& n = nodes_[s];
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
bool Fabric::mmu_admit(Node& n, Port& op, const Pkt& k) {
  if (n.used + k.bytes > n.buffer || !op.up || op.wd_drop) {
    op.st.drops += k.npk;
    if (op.wd_drop) op.st.pfcwd_drops += k.npk;
    sample(n, op, SampleCount::Drops, k.npk);
    return false;
  }
  return true;
}

// ECN at enqueue, by the marking policy (a mark from an earlier hop stays).
void Fabric::ecn_mark(Node& n, std::uint32_t in_port, Port& op, Pkt& k) {
  if (p_.unit() <= p_.mtu) {
    const double pk = policy::ecn_mark_probability(p_.ecn, static_cast<double>(op.qbytes));
    if (pk >= 1 || (pk > 0 && uniform() < pk)) k.ecn = true;
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
void Fabric::mmu_ingress(std::uint32_t node, std::uint32_t port, Pkt& k) {
  Node& n = nodes_[node];
  n.used += k.bytes;
  k.in_port = port;
  Port& in = n.ports[port];
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
void Fabric::mmu_release(std::uint32_t node, const Pkt& k) {
  Node& n = nodes_[node];
  n.used -= k.bytes;
  Port& in = n.ports[k.in_port];
  in.in_bytes -= k.bytes;
  if (p_.pfc.enabled && in.upstream_paused && in.in_bytes <= n.xon) {
    in.upstream_paused = false;
    schedule(sch_.now() + in.latency, kPfcFrame, in.peer, in.peer_port);  // resume
  }
}

// A PFC frame reaches the sender's port: pause it, or resume it. A switch port in the watchdog's
// storm state ignores it, noting only when a pause was last asserted (restoration).
void Fabric::pfc_frame(std::uint32_t node, std::uint32_t port, bool pause) {
  Node& n = nodes_[node];
  Port& p = n.ports[port];
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
    if (n.is_switch && p_.pfc.watchdog && !q_empty(p)) wd_arm(node, port);
  } else if (p.paused) {
    p.paused = false;
    p.wd_since = ~0ULL;
    p.st.paused_ps += now - p.paused_since;
    if (n.is_switch) try_tx(node, port);
    else rc_.kick(node);
  }
}

// PFC watchdog (docs/models/ethernet-switch.md#pfc-watchdog). The port is paused and has packets
// queued: detection runs from now (unless it already runs), checked `detect` later by an event.
// The check is exact to the picosecond (a switch polls its queues, SONiC every 200 ms by default).
void Fabric::wd_arm(std::uint32_t node, std::uint32_t port) {
  Port& p = nodes_[node].ports[port];
  if (p.wd_since != ~0ULL) return;
  p.wd_since = sch_.now();
  schedule(p.wd_since + p_.pfc.detect_ps, kPfcWd, node, port);
}

// The watchdog's check: a port paused with packets queued for `detect` enters the storm state;
// one in it leaves once no pause has been asserted for `restore`. Stale checks (the port resumed,
// or detection restarted, since) change nothing.
void Fabric::pfc_wd(std::uint32_t node, std::uint32_t port) {
  Port& p = nodes_[node].ports[port];
  const Tick now = sch_.now();
  if (p.wd_storm) {
    if (!p.wd_held && now >= p.wd_last_pause + p_.pfc.restore_ps) {
      p.wd_storm = p.wd_drop = false;  // restored: PFC honoured again, the queue forwards
      try_tx(node, port);
    }
    return;
  }
  if (!p.paused || p.wd_since == ~0ULL || now < p.wd_since + p_.pfc.detect_ps) return;
  p.wd_since = ~0ULL;
  if (q_empty(p)) return;  // nothing waits (it restarts at the next enqueue while paused)
  ++p.st.pfcwd_storms;
  p.st.paused_ps += now - p.paused_since;
  p.paused = false;  // the pause is ignored from now on
  p.wd_storm = true;
  p.wd_held = true;
  p.wd_last_pause = now;
  if (p_.pfc.action == PfcParams::WdAction::Drop) {
    p.wd_drop = true;
    wd_drop_queue(node, port);
  } else {
    try_tx(node, port);
  }
}

// Action drop: what is queued for the port is discarded (its buffer freed, which may resume the
// senders upstream), counted in its drops.
void Fabric::wd_drop_queue(std::uint32_t node, std::uint32_t port) {
  Port& p = nodes_[node].ports[port];
  while (!q_empty(p)) {
    const std::uint32_t id = q_pop_front(p);
    const Pkt& k = pkts_[id];
    p.qbytes -= k.bytes;
    mmu_release(node, k);
    p.st.drops += k.npk;
    p.st.pfcwd_drops += k.npk;
    sample(node, port, SampleCount::Drops, k.npk);
    free_pkt(id);
  }
  if (port_samples_.on()) port_samples_.queue(port_base_[node] + port, sch_.now(), p.qbytes);
}

// Fault: a stuck receiver's NIC pauses its switch port continuously (pfc_storm).
void Fabric::pfc_storm(std::uint32_t host, Tick duration) {
  if (p_.flow || !p_.pfc.enabled || nodes_.at(host).is_switch) return;
  Port& p = nodes_[host].ports.at(0);
  if (!p.cabled || duration == 0) return;
  const bool running = p.storm_until != 0;
  p.storm_until = std::max(p.storm_until, sch_.now() + duration);
  if (!running) pfc_storm_tick(host);
}

// One pause frame of the storm, refreshed every pause quantum; at its end, a resume.
void Fabric::pfc_storm_tick(std::uint32_t host) {
  Port& p = nodes_[host].ports[0];
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

}  // namespace models
