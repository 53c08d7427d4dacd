// Forwarding tables of the Ethernet fabric (docs/models/ethernet-switch.md), class Forwarding: equal-cost
// next hops per switch toward every attachment switch (one BFS each), the ECMP choice among them,
// and path probes.
#include "models/net/forwarding.h"

#include <algorithm>

#include "models/splitmix64.h"

namespace models {

void Forwarding::build() {
  // A host has one port, to the switch it is attached to; routes toward a host are the routes
  // toward that switch plus its port to the host. So one BFS per attachment switch (not per
  // host): tables of switches x attachment switches instead of switches x hosts.
  const std::uint32_t H = static_cast<std::uint32_t>(hosts_.size());
  attach_.assign(H, kNone);
  attach_port_.assign(H, 0);
  att_index_.assign(nodes_.size(), kNone);
  att_nodes_.clear();
  for (std::uint32_t h = 0; h < H; ++h) {
    const Port& p = nodes_[hosts_[h]].ports[0];
    if (!p.cabled || !nodes_[p.peer].is_switch) continue;
    attach_[h] = p.peer;
    attach_port_[h] = p.peer_port;
    if (att_index_[p.peer] == kNone) {
      att_index_[p.peer] = static_cast<std::uint32_t>(att_nodes_.size());
      att_nodes_.push_back(p.peer);
    }
  }
  const std::uint32_t A = static_cast<std::uint32_t>(att_nodes_.size());
  hop_start_.assign(nodes_.size(), {});
  hops_.assign(nodes_.size(), {});
  for (std::uint32_t n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].is_switch) hop_start_[n].assign(A + 1, 0);
  std::vector<std::uint32_t> dist(nodes_.size()), queue(nodes_.size());
  for (std::uint32_t a = 0; a < A; ++a) {
    std::fill(dist.begin(), dist.end(), kNone);
    std::size_t head = 0, tail = 0;
    dist[att_nodes_[a]] = 0;
    queue[tail++] = att_nodes_[a];
    while (head < tail) {  // over switches only: hosts do not forward
      const std::uint32_t u = queue[head++];
      for (auto& p : nodes_[u].ports)
        if (p.cabled && nodes_[p.peer].is_switch && dist[p.peer] == kNone) { dist[p.peer] = dist[u] + 1; queue[tail++] = p.peer; }
    }
    for (std::uint32_t s = 0; s < nodes_.size(); ++s) {
      if (!nodes_[s].is_switch) continue;
      hop_start_[s][a] = static_cast<std::uint32_t>(hops_[s].size());
      if (dist[s] == kNone || dist[s] == 0) continue;
      for (std::uint32_t k = 0; k < nodes_[s].ports.size(); ++k) {
        const Port& p = nodes_[s].ports[k];
        if (p.cabled && nodes_[p.peer].is_switch && dist[p.peer] + 1 == dist[s]) hops_[s].push_back(k);
      }
    }
  }
  for (std::uint32_t s = 0; s < nodes_.size(); ++s)
    if (nodes_[s].is_switch) hop_start_[s][A] = static_cast<std::uint32_t>(hops_[s].size());
  sw_ord_.assign(nodes_.size(), kNone);
  std::uint32_t S = 0;
  for (std::uint32_t s = 0; s < nodes_.size(); ++s)
    if (nodes_[s].is_switch) sw_ord_[s] = S++;
  // Path probes' tables (trace_path), in one array: first an entry per global port (the port,
  // where it leads, the latency it adds: its node's forwarding and its cable), then per
  // attachment ordinal x switch ordinal the one next hop of a switch that has exactly one toward
  // that attachment switch (out ~0: none). A probe reads 16 bytes per hop instead of the node's
  // and the 200-byte port's lines, and the spines' entries toward one destination leaf are
  // adjacent. Valid while no link is down (links_down_): `up` is not in them.
  one_hop_.clear();
  const std::uint32_t P = port_base_.back();
  if (static_cast<std::uint64_t>(S) * A + P <= (1u << 22)) {  // at most 64 MiB
    one_hop_.assign(static_cast<std::size_t>(S) * A + P, OneHop{kNone, 0, 0, 0});
    for (std::uint32_t s = 0; s < nodes_.size(); ++s)
      for (std::uint32_t k = 0; k < nodes_[s].ports.size(); ++k) {
        const Port& o = nodes_[s].ports[k];
        const Tick lat = nodes_[s].latency + o.latency;
        if (o.cabled && lat <= 0xffffffffu) one_hop_[port_base_[s] + k] = OneHop{k, o.peer, o.peer_port, static_cast<std::uint32_t>(lat)};
      }
    for (std::uint32_t s = 0; s < nodes_.size(); ++s) {
      if (!nodes_[s].is_switch) continue;
      for (std::uint32_t a = 0; a < A; ++a) {
        const std::uint32_t lo = hop_start_[s][a];
        if (hop_start_[s][a + 1] - lo != 1) continue;
        const OneHop& o = one_hop_[port_base_[s] + hops_[s][lo]];
        if (o.out != kNone) one_hop_[P + static_cast<std::size_t>(a) * S + sw_ord_[s]] = o;
      }
    }
  }
}

std::uint32_t Forwarding::route_choices(std::uint32_t sw, std::uint32_t dst, const std::uint32_t** first) const {
  const std::uint32_t h = host_index_[dst];
  const std::uint32_t at = h == kNone ? kNone : attach_[h];
  if (at == kNone) return 0;
  if (at == sw) { *first = &attach_port_[h]; return 1; }
  const std::uint32_t a = att_index_[at];
  *first = hops_[sw].data() + hop_start_[sw][a];
  return hop_start_[sw][a + 1] - hop_start_[sw][a];
}

std::vector<std::uint32_t> Forwarding::next_hops(std::uint32_t sw, std::uint32_t dst) const {
  const std::uint32_t* first = nullptr;
  const std::uint32_t n = route_choices(sw, dst, &first);
  return n ? std::vector<std::uint32_t>(first, first + n) : std::vector<std::uint32_t>{};
}

std::uint32_t Forwarding::ecmp_port_for(std::uint32_t sw, std::uint32_t dst, std::uint64_t hash) const {
  const std::uint32_t* first = nullptr;
  const std::uint32_t n = route_choices(sw, dst, &first);
  if (n == 0) return kNone;
  if (n == 1) return first[0];
  // ECMP mechanism: the policy's flow key (ecmp_flow_key), salted per switch, picks a next hop.
  return first[splitmix64(hash ^ (static_cast<std::uint64_t>(sw) * 0x9e3779b97f4a7c15ULL)) % n];
}

std::uint32_t Forwarding::ctrl_port_for(std::uint32_t sw, std::uint32_t dst, std::uint64_t hash) const {
  const std::uint32_t* first = nullptr;
  const std::uint32_t cnt = route_choices(sw, dst, &first);
  return cnt ? first[cnt == 1 ? 0 : splitmix64(hash ^ 0x5bd1e995ULL ^ sw) % cnt] : kNone;
}

bool Forwarding::ctrl_path_up(std::uint32_t from, std::uint32_t to, std::uint64_t hash) const {
  const Port& p = nodes_.at(from).ports.at(0);
  if (!p.cabled || !p.up) return false;
  std::uint32_t node = p.peer;
  for (std::size_t guard = 0; guard <= nodes_.size(); ++guard) {
    if (node == to) return true;
    if (sw_ord_[node] == kNone) return false;  // hosts do not forward
    const std::uint32_t out = ctrl_port_for(node, to, hash);
    if (out == kNone || !nodes_[node].ports[out].up) return false;
    node = nodes_[node].ports[out].peer;
  }
  return false;
}

bool Forwarding::trace_path(std::uint32_t src, std::uint32_t dst, std::uint64_t hash, std::vector<PathHop>* hops, Tick* rtt_ps) const {
  hops->clear();
  Tick one_way = 0;
  const Port* p = &nodes_.at(src).ports.at(0);
  if (!p->cabled || !p->up) return false;
  one_way += p->latency;
  // The destination's attachment switch, looked up once for the whole path (route_choices per
  // hop does the same lookups): a path probe is traced per candidate source port, and the
  // library probes hundreds per peer (docs/routing.md#probes).
  const std::uint32_t h = host_index_[dst];
  const std::uint32_t at = h == kNone ? kNone : attach_[h];
  const std::uint32_t a = at == kNone ? kNone : att_index_[at];
  std::uint32_t node = p->peer, in = p->peer_port;
  const bool fast = links_down_ == 0 && !one_hop_.empty();
  const std::size_t P = port_base_.empty() ? 0 : port_base_.back();
  const std::size_t S = nodes_.size() - hosts_.size();
  for (std::size_t guard = 0; guard <= nodes_.size(); ++guard) {
    if (node == dst) {
      // The reply comes back the way the QP's ACKs would (hashed apart from the data, see
      // arrive()): a dead link on that way loses it. Only a link down can break it.
      if (links_down_ != 0 && !ctrl_path_up(dst, src, hash)) return false;
      if (rtt_ps) *rtt_ps = 2 * one_way;
      return true;
    }
    const std::uint32_t so = sw_ord_[node];
    if (so == kNone) return false;  // hosts do not forward
    if (at == kNone) return false;
    if (fast && node != at) {
      const OneHop& f = one_hop_[P + a * S + so];
      if (f.out != kNone) {  // the one next hop, known up
        hops->push_back(PathHop{node, in, f.out});
        one_way += f.lat_ps;
        in = f.peer_port;
        node = f.peer;
        continue;
      }
    }
    std::uint32_t out;
    if (node == at) {
      out = attach_port_[h];
    } else {  // ecmp_port_for, with the attachment ordinal known
      const std::uint32_t* hs = hop_start_[node].data();
      const std::uint32_t lo = hs[a], n = hs[a + 1] - lo;
      if (n == 0) return false;
      const std::uint32_t* first = hops_[node].data() + lo;
      out = n == 1 ? first[0] : first[splitmix64(hash ^ (static_cast<std::uint64_t>(node) * 0x9e3779b97f4a7c15ULL)) % n];
    }
    hops->push_back(PathHop{node, in, out});
    if (fast) {  // the port's entry: every port is up
      const OneHop& f = one_hop_[port_base_[node] + out];
      if (f.out != kNone) {
        one_way += f.lat_ps;
        in = f.peer_port;
        node = f.peer;
        continue;
      }
    }
    const Node& nd = nodes_[node];
    const Port& o = nd.ports[out];
    if (!o.up) return false;
    one_way += nd.latency + o.latency;
    in = o.peer_port;
    node = o.peer;
  }
  return false;
}

}  // namespace models
