// The op retry's path (docs/failover.md#op-retry-hcomm_op_retry1): the ring order's input and
// its description, and the HCCS faults moved to a relay NPU or PCIe instead of a ring.
#include "recovery/retry_path.h"

#include <algorithm>
#include <map>

#include "core/comm.h"
#include "core/log.h"
#include "discovery/topo.h"
#include "driver_port.h"
#include "recovery/failover.h"
#include "route/route.h"

namespace hcomm::detail::failover {

// The op retry's ring (recovery/ring_order.h) over the merged dead pairs and dead NICs. The servers
// are read from the descriptors without caching them (the coordinator reads every rank's once).
RingOrderIn ring_input(hcomm_comm_t c, const std::vector<std::uint32_t>& dead_nics) {
  RingOrderIn in;
  in.server.resize(c->nranks);
  for (std::uint32_t r = 0; r < c->nranks; ++r) {
    auto it = c->peers.find(r);
    RankDesc d;
    if (it != c->peers.end()) in.server[r] = it->second.server;
    else if (port::rank_desc(c->ctx, global_rank(c, r), &d) == HCOMM_SUCCESS) in.server[r] = d.server;
    else in.server[r] = ~0u - r;  // no descriptor: a server of its own
  }
  in.dead_pairs = c->rec.dead_pairs;
  in.nic_dead.assign(c->nranks, false);
  for (std::uint32_t r : dead_nics)
    if (r < c->nranks) in.nic_dead[r] = true;
  // On a server holding a dead pair or a dead NIC, a pair with no path left at all — no live HCCS
  // link, PCIe path or relay NPU over live links, and not both NICs live (RoCE through the leaf) —
  // cannot be ring neighbours either (a server whose HCCS links are not a full mesh: its relayed
  // pairs may have lost their relays).
  const Topo* t = c->ctx->topo.get();
  if (!t || !t->exchanged || (c->rec.dead_pairs.empty() && dead_nics.empty())) return in;
  auto dead = [&](std::uint32_t x, std::uint32_t y) {
    return std::binary_search(c->rec.dead_pairs.begin(), c->rec.dead_pairs.end(), std::make_pair(std::min(x, y), std::max(x, y)));
  };
  auto link = [&](std::uint32_t x, std::uint32_t y, std::uint32_t type) {
    LinkFacts f;
    return link_facts(c->ctx, global_rank(c, x), global_rank(c, y), &f) && (f.types & type) != 0;
  };
  auto hccs = [&](std::uint32_t x, std::uint32_t y) { return !dead(x, y) && link(x, y, HCOMM_LINK_HCCS); };
  std::vector<std::uint32_t> hit;  // servers holding a dead pair or a dead NIC
  for (const auto& [a, b] : c->rec.dead_pairs) hit.push_back(in.server[a]);
  for (std::uint32_t r : dead_nics)
    if (r < c->nranks) hit.push_back(in.server[r]);
  std::sort(hit.begin(), hit.end());
  hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
  for (std::uint32_t sv : hit) {
    std::vector<std::uint32_t> m;
    for (std::uint32_t x = 0; x < c->nranks; ++x)
      if (in.server[x] == sv) m.push_back(x);
    for (std::size_t i = 0; i < m.size(); ++i)
      for (std::size_t j = i + 1; j < m.size(); ++j) {
        const std::uint32_t a = m[i], b = m[j];
        if (dead(a, b) || hccs(a, b) || link(a, b, HCOMM_LINK_PCIE)) continue;
        if (!in.nic_dead[a] && !in.nic_dead[b] && link(a, b, HCOMM_LINK_ROCE)) continue;
        if (std::any_of(m.begin(), m.end(), [&](std::uint32_t k) { return k != a && k != b && hccs(a, k) && hccs(k, b); })) continue;
        in.dead_pairs.emplace_back(a, b);
      }
  }
  std::sort(in.dead_pairs.begin(), in.dead_pairs.end());
  return in;
}

std::string pairs_text(const hcomm_comm_t c) {
  std::string s;
  for (const auto& [a, b] : c->rec.dead_pairs) s += (s.empty() ? "" : ",") + std::to_string(a) + "-" + std::to_string(b);
  return s;
}
// The ring the re-execution runs on, for the log and the failovers row's path_after: its order
// (as the coordinator described it, ring_order_text), then what it avoids.
std::string ring_text(const hcomm_comm_t c) {
  std::string s = c->rec.ring_desc.empty() ? "ring in comm-rank order" : c->rec.ring_desc;
  if (!c->rec.dead_pairs.empty()) s += ", avoiding hccs " + pairs_text(c);
  if (!c->rec.dead_nics.empty()) {
    s += ", NIC down at comm rank";
    for (std::uint32_t r : c->rec.dead_nics) s += " " + std::to_string(r);
    s += " (its data reaches other servers over HCCS through its server peers' NICs)";
  }
  return s;
}

// The peers whose current route from this rank crosses a dead HCCS pair: a direct HCCS route over
// it, a relay with a dead hop (the relay's link to either end), a borrowed NIC's HCCS leg (mine to
// my lender, or the peer's lender's onward leg to the peer). Relays and lenders chosen before a
// later fault are decided again with every link known dead (docs/failover.md#several-faults).
std::vector<std::uint32_t> routes_over_dead(hcomm_comm_t c) {
  std::vector<std::uint32_t> out;
  if (c->rec.dead_pairs.empty()) return out;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dead;  // global ranks, (low, high)
  auto ordered = [](std::uint32_t x, std::uint32_t y) { return std::make_pair(std::min(x, y), std::max(x, y)); };
  for (const auto& [a, b] : c->rec.dead_pairs) dead.push_back(ordered(global_rank(c, a), global_rank(c, b)));
  std::sort(dead.begin(), dead.end());
  auto is_dead = [&](std::uint32_t x, std::uint32_t y) {
    return x != ~0u && y != ~0u && std::binary_search(dead.begin(), dead.end(), ordered(x, y));
  };
  const std::uint32_t me = global_rank(c, c->rank);
  for (const auto& [rank, r] : c->route.peers) {
    const std::uint32_t peer = global_rank(c, rank);
    bool crosses = false;
    if (r.relay_rank != ~0u) crosses = is_dead(me, r.relay_rank) || (!r.borrow && is_dead(r.relay_rank, peer));
    else if (r.link == PairLink::Hccs) crosses = is_dead(me, peer);
    if (r.via_rank != ~0u) crosses = crosses || is_dead(r.via_rank, peer);
    if (crosses) out.push_back(rank);
  }
  return out;
}

// HCCS faults only (no dead NIC, nobody lost): every dead pair's traffic moves to another path
// inside its server — PCIe peer-to-peer where the pair has it, else a relay NPU k over two HCCS
// hops (route/, docs/routing.md#relay) — and the operation re-runs with the algorithm the
// selection makes, as do the later ones (the mesh stays usable). Decided identically on every
// rank from the merged dead pairs and discovery's records (a k of the pair's server with live
// HCCS links to both); the two ends then decide their routes to each other again from their
// ports as they are now. False: no such path for some pair (the ring order is used instead).
bool reroute_hccs(hcomm_comm_t c, std::string* text) {
  if (!c->ctx->relay_bytes || c->rec.dead_pairs.empty() || !c->rec.dead_nics.empty() || !c->rec.lost.empty()) return false;
  const Topo* t = c->ctx->topo.get();
  if (!t || !t->exchanged) return false;
  auto dead = [&](std::uint32_t x, std::uint32_t y) {
    return std::binary_search(c->rec.dead_pairs.begin(), c->rec.dead_pairs.end(), std::make_pair(std::min(x, y), std::max(x, y)));
  };
  auto facts = [&](std::uint32_t x, std::uint32_t y, LinkFacts* f) {
    return link_facts(c->ctx, global_rank(c, x), global_rank(c, y), f);
  };
  auto server = [&](std::uint32_t x) {
    TopoRecord r;
    return t->record(c->ctx, global_rank(c, x), &r) ? r.server : ~0u;
  };
  auto hccs = [&](std::uint32_t x, std::uint32_t y) {
    LinkFacts f;
    return !dead(x, y) && facts(x, y, &f) && (f.types & HCOMM_LINK_HCCS);
  };
  // The mesh needs every pair of a server reachable by SDMA, not only the dead pairs: a pair that
  // discovery relayed may have lost its relay's link (e.g. 1-3 through 0 or 2 with 0-1 and 2-3
  // dead). Checked on each server holding a dead pair.
  std::vector<std::uint32_t> servers;
  for (const auto& [a, b] : c->rec.dead_pairs) servers.push_back(server(a));
  std::sort(servers.begin(), servers.end());
  servers.erase(std::unique(servers.begin(), servers.end()), servers.end());
  for (std::uint32_t sv : servers) {
    std::vector<std::uint32_t> m;
    for (std::uint32_t x = 0; x < c->nranks; ++x)
      if (server(x) == sv) m.push_back(x);
    for (std::size_t i = 0; i < m.size(); ++i)
      for (std::size_t j = i + 1; j < m.size(); ++j) {
        LinkFacts f;
        if (hccs(m[i], m[j]) || (facts(m[i], m[j], &f) && (f.types & HCOMM_LINK_PCIE))) continue;
        if (std::none_of(m.begin(), m.end(), [&](std::uint32_t k) { return k != m[i] && k != m[j] && hccs(m[i], k) && hccs(k, m[j]); })) {
          logf(c->ctx, 1, "Rank%u comm %u: comm ranks %u and %u have no live HCCS link, PCIe path or relay NPU: no relaying (ring order)",
               c->rank, c->id, m[i], m[j]);
          return false;
        }
      }
  }
  std::string how;
  std::vector<std::uint32_t> mine;  // my dead partners
  for (const auto& [a, b] : c->rec.dead_pairs) {
    LinkFacts f;
    if (!facts(a, b, &f) || server(a) != server(b) || server(a) == ~0u) return false;
    std::string via;
    if (f.types & HCOMM_LINK_PCIE) {
      via = "pcie";
    } else {
      for (std::uint32_t k = 0; k < c->nranks && via.empty(); ++k) {
        LinkFacts fa, fb;
        if (k == a || k == b || server(k) != server(a) || dead(a, k) || dead(k, b)) continue;
        if (facts(a, k, &fa) && facts(k, b, &fb) && (fa.types & HCOMM_LINK_HCCS) && (fb.types & HCOMM_LINK_HCCS)) via = "relay";
      }
    }
    if (via.empty()) return false;
    how += (how.empty() ? "" : ", ") + std::to_string(a) + "-" + std::to_string(b) + (via == "pcie" ? " over pcie" : " through a relay npu");
    if (a == c->rank) mine.push_back(b);
    if (b == c->rank) mine.push_back(a);
  }
  // And every route of mine through a relay one of whose hops is dead now (a relay chosen for an
  // earlier fault, or by discovery): decided again over the links known live.
  for (std::uint32_t p : routes_over_dead(c)) mine.push_back(p);
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  route::redecide(c, mine, "op retry: hccs " + pairs_text(c) + " down");
  *text = "as selected, hccs " + how;
  return true;
}

bool borrow_nics(hcomm_comm_t c, std::string* text) {
  std::vector<std::uint32_t> before;  // peers whose routes borrowed under the previous lenders
  for (const auto& [rank, r] : c->route.peers)
    if (r.borrow || r.via_device != ~0u) before.push_back(rank);
  const bool had = !c->rec.nic_lender.empty();
  c->rec.nic_lender.clear();
  auto undo = [&]() {  // no borrowing: the routes that borrowed go back to the NICs' own paths
    if (had && !before.empty()) route::redecide(c, before, "op retry: nic borrowing ended");
    return false;
  };
  if (!c->ctx->nic_borrow || !c->ctx->relay_bytes || c->rec.dead_nics.empty() || !c->rec.dead_pairs.empty() ||
      !c->rec.lost.empty())
    return undo();
  // An RDMA write failed too (a dead cable between switches): the borrowed routes keep their NICs'
  // hash ports, unprobed, and the lender's writes could cross that cable again; the ring, whose
  // RoCE edges the re-route just re-probed, is used instead.
  if (c->rec.roce_failed) {
    logf(c->ctx, 1, "Rank%u comm %u: an RDMA write failed as well: no NIC borrowing (ring order)", c->rank, c->id);
    return undo();
  }
  const Topo* t = c->ctx->topo.get();
  if (!t || !t->exchanged) return undo();
  auto server = [&](std::uint32_t x) {
    TopoRecord r;
    return t->record(c->ctx, global_rank(c, x), &r) ? r.server : ~0u;
  };
  auto dead = [&](std::uint32_t x) { return std::binary_search(c->rec.dead_nics.begin(), c->rec.dead_nics.end(), x); };
  std::vector<std::uint32_t> borrowers(c->nranks, 0);
  std::map<std::uint32_t, std::uint32_t> lender;
  std::string how;
  for (std::uint32_t x : c->rec.dead_nics) {
    if (x >= c->nranks || server(x) == ~0u) return undo();
    std::uint32_t best = ~0u;
    for (std::uint32_t k = 0; k < c->nranks; ++k) {
      LinkFacts f;
      if (k == x || dead(k) || server(k) != server(x)) continue;
      if (!link_facts(c->ctx, global_rank(c, x), global_rank(c, k), &f) || !(f.types & HCOMM_LINK_HCCS)) continue;
      if (best == ~0u || borrowers[k] < borrowers[best]) best = k;  // ascending k: ties keep the lowest rank
    }
    if (best == ~0u) {
      logf(c->ctx, 1, "Rank%u comm %u: no lender for the NIC of comm rank %u (no server peer with a live NIC and an HCCS link)", c->rank,
           c->id, x);
      return undo();
    }
    ++borrowers[best];
    lender[x] = best;
    how += (how.empty() ? "" : ", ") + std::to_string(x) + " via rank " + std::to_string(best);
  }
  c->rec.nic_lender = lender;
  // This rank's RoCE routes that touch a dead NIC (all of them when mine is dead), and those that
  // borrowed before; the peers not routed yet borrow at their first use (route/route.cpp).
  std::vector<std::uint32_t> mine = before;
  for (const auto& [rank, r] : c->route.peers)
    if (r.link == PairLink::Roce && (dead(c->rank) || dead(rank))) mine.push_back(rank);
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  std::string nics;
  for (std::uint32_t x : c->rec.dead_nics) nics += (nics.empty() ? "" : ",") + std::to_string(x);
  route::redecide(c, mine, "op retry: nic " + nics + " down");
  *text = "as selected, nic " + how + " (borrowed over hccs)";
  return true;
}

// The coordinator's description of the ring order: runs of consecutive ranks as a..b, servers
// apart by |; past 400 characters (many servers) only the servers not in comm-rank order.
std::string describe_order(const RingOrderIn& in, const std::vector<std::uint32_t>& order) {
  bool identity = true;
  for (std::size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == i;
  if (identity) return "ring in comm-rank order";
  std::string all = "ring order " + ring_order_text(in, order);
  if (all.size() <= 400) return all;
  std::string diff;
  for (std::size_t a = 0; a < order.size();) {
    std::size_t b = a;
    while (b < order.size() && in.server[order[b]] == in.server[order[a]]) ++b;
    bool same = true;
    for (std::size_t i = a + 1; i < b; ++i) same = same && order[i] == order[i - 1] + 1;
    if (!same) {
      const std::vector<std::uint32_t> seg(order.begin() + static_cast<std::ptrdiff_t>(a), order.begin() + static_cast<std::ptrdiff_t>(b));
      diff += (diff.empty() ? "" : "; ") + ring_order_text(in, seg);
    }
    a = b;
  }
  return "ring of servers in comm-rank order, reordered inside: " + (diff.empty() ? std::string("none") : diff);
}

}  // namespace hcomm::detail::failover
