// The switch MMU (docs/models/ethernet-switch.md), apart from forwarding: the shared buffer
// (admission, tail drop), ECN marking at enqueue by the marking policy, PFC ingress accounting
// with pause/resume frames and thresholds from the buffer and headroom.
#include <algorithm>

#include "models/net/policies.h"
#include "models/network.h"

namespace models {

void Network::set_pfc_thresholds() {
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

// Shared buffer full (or a dead egress port): tail drop, counted on the egress port.
bool Network::mmu_admit(Node& n, Port& op, const Pkt& k) {
  if (n.used + k.bytes > n.buffer || !op.up) {
    op.st.drops += k.npk;
    sample(n, op, SampleCount::Drops, k.npk);
    return false;
  }
  return true;
}

// ECN at enqueue, by the marking policy (a mark from an earlier hop stays).
void Network::ecn_mark(Node& n, std::uint32_t in_port, Port& op, Pkt& k) {
  if (p_.unit() <= p_.mtu) {
    const double pk = policy::ecn_mark_probability(p_.ecn, static_cast<double>(op.qbytes));
    if (pk >= 1 || (pk > 0 && uniform() < pk)) k.ecn = true;
  } else {
    chunk_ecn_mark(static_cast<double>(n.ports[in_port].Bps), op, k);
  }
  if (k.ecn) {
    ++op.st.ecn_marked;
    sample(n, op, SampleCount::Ecn, 1);
  }
}

// The packet is buffered: it occupies the shared buffer and its ingress port's PFC account; above
// xoff the upstream sender is paused.
void Network::mmu_ingress(std::uint32_t node, std::uint32_t port, Pkt& k) {
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
void Network::mmu_release(std::uint32_t node, const Pkt& k) {
  Node& n = nodes_[node];
  n.used -= k.bytes;
  Port& in = n.ports[k.in_port];
  in.in_bytes -= k.bytes;
  if (p_.pfc.enabled && in.upstream_paused && in.in_bytes <= n.xon) {
    in.upstream_paused = false;
    schedule(sch_.now() + in.latency, kPfcFrame, in.peer, in.peer_port);  // resume
  }
}

// A PFC frame reaches the sender's port: pause it, or resume it.
void Network::pfc_frame(std::uint32_t node, std::uint32_t port, bool pause) {
  Port& p = nodes_[node].ports[port];
  if (pause) {
    if (!p.paused) { p.paused = true; p.paused_since = sch_.now(); }
    ++p.st.pause_rcv;
  } else if (p.paused) {
    p.paused = false;
    p.st.paused_ps += sch_.now() - p.paused_since;
    if (nodes_[node].is_switch) try_tx(node, port);
    else host_kick(node);
  }
}

}  // namespace models
