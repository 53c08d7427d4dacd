// The op retry's ring order: see recovery/ring_order.h.
#include "recovery/ring_order.h"

#include <algorithm>
#include <map>

namespace hcomm::detail {

namespace {

bool dead(const RingOrderIn& in, std::uint32_t a, std::uint32_t b) {
  const auto p = std::minmax(a, b);
  return std::binary_search(in.dead_pairs.begin(), in.dead_pairs.end(), std::pair<std::uint32_t, std::uint32_t>{p.first, p.second});
}
bool nic_ok(const RingOrderIn& in, std::uint32_t r) { return r >= in.nic_dead.size() || !in.nic_dead[r]; }

// The servers' ranks (ascending), servers in the order of their lowest comm rank.
std::vector<std::vector<std::uint32_t>> servers_of(const RingOrderIn& in) {
  std::vector<std::vector<std::uint32_t>> out;
  std::map<std::uint32_t, std::size_t> at;
  for (std::uint32_t r = 0; r < in.server.size(); ++r) {
    auto [it, fresh] = at.try_emplace(in.server[r], out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}

// The smallest path (lexicographic in comm ranks) over all of `ranks` whose consecutive pairs
// are not dead, starting at a rank with start_ok, ending at one with end_ok. Bitmask DP:
// ok[mask] bit v = a path visits exactly `mask`, starts at v and ends at an end_ok rank.
template <class Start, class End>
bool smallest_path(const RingOrderIn& in, const std::vector<std::uint32_t>& ranks, Start start_ok, End end_ok,
                   std::vector<std::uint32_t>* path) {
  const std::uint32_t L = static_cast<std::uint32_t>(ranks.size());
  path->clear();
  if (L > kMaxRingServerRanks) {  // too many for the search: comm-rank order only
    for (std::uint32_t i = 0; i < L; ++i)
      if (i + 1 < L && dead(in, ranks[i], ranks[i + 1])) return false;
    if (!start_ok(0) || !end_ok(L - 1)) return false;
    *path = ranks;
    return true;
  }
  std::vector<std::uint32_t> adj(L, 0);
  for (std::uint32_t a = 0; a < L; ++a)
    for (std::uint32_t b = 0; b < L; ++b)
      if (a != b && !dead(in, ranks[a], ranks[b])) adj[a] |= 1u << b;
  const std::uint32_t full = L == 32 ? ~0u : (1u << L) - 1;
  std::vector<std::uint32_t> ok(static_cast<std::size_t>(full) + 1, 0);
  for (std::uint32_t mask = 1; mask <= full; ++mask) {
    for (std::uint32_t v = 0; v < L; ++v) {
      if (!(mask >> v & 1u)) continue;
      const std::uint32_t rest = mask & ~(1u << v);
      if (!rest) { if (end_ok(v)) ok[mask] |= 1u << v; continue; }
      if (ok[rest] & adj[v]) ok[mask] |= 1u << v;
    }
  }
  std::uint32_t cur = L;
  for (std::uint32_t v = 0; v < L && cur == L; ++v)
    if (start_ok(v) && (ok[full] >> v & 1u)) cur = v;
  if (cur == L) return false;
  std::uint32_t rest = full & ~(1u << cur);
  path->push_back(ranks[cur]);
  while (rest) {
    std::uint32_t next = L;
    for (std::uint32_t u = 0; u < L && next == L; ++u)
      if ((rest >> u & 1u) && (adj[cur] >> u & 1u) && (ok[rest] >> u & 1u)) next = u;
    if (next == L) return false;  // cannot happen: ok[] said a path exists
    path->push_back(ranks[next]);
    rest &= ~(1u << next);
    cur = next;
  }
  return true;
}

}  // namespace

bool ring_order(const RingOrderIn& in, std::vector<std::uint32_t>* order, std::string* why) {
  order->clear();
  const auto servers = servers_of(in);
  if (servers.size() == 1) {  // one server: a cycle, from its lowest rank
    const auto& rk = servers[0];
    std::vector<std::uint32_t> path;
    const bool found = rk.size() <= 2 ? true : smallest_path(in, rk, [](std::uint32_t v) { return v == 0; },
                                                             [&](std::uint32_t v) { return !dead(in, rk[v], rk[0]); }, &path);
    if (rk.size() == 2 && dead(in, rk[0], rk[1])) {
      if (why) *why = "ranks " + std::to_string(rk[0]) + " and " + std::to_string(rk[1]) + " have no live link";
      return false;
    }
    if (rk.size() <= 2) path = rk;
    if (!found) {
      if (why) *why = "no cycle over the server's live links";
      return false;
    }
    *order = path;
    return true;
  }
  for (const auto& rk : servers) {
    std::vector<std::uint32_t> path;
    auto live = [&](std::uint32_t v) { return nic_ok(in, rk[v]); };
    if (!smallest_path(in, rk, live, live, &path)) {
      if (why) {
        std::string ranks;
        for (std::uint32_t r : rk) ranks += (ranks.empty() ? "" : " ") + std::to_string(r);
        *why = "no order of the server of comm ranks " + ranks +
               " is a path over its live links with a live NIC at both ends (its RoCE edges)";
      }
      order->clear();
      return false;
    }
    order->insert(order->end(), path.begin(), path.end());
  }
  return true;
}

bool ring_order_valid(const RingOrderIn& in, const std::vector<std::uint32_t>& order) {
  const std::size_t n = in.server.size();
  if (order.size() != n) return false;
  std::vector<bool> seen(n, false);
  for (std::uint32_t r : order) {
    if (r >= n || seen[r]) return false;
    seen[r] = true;
  }
  const auto servers = servers_of(in);
  // Servers contiguous, in the order of their lowest comm rank.
  std::size_t at = 0;
  for (const auto& rk : servers) {
    for (std::size_t i = 0; i < rk.size(); ++i)
      if (in.server[order[at + i]] != in.server[rk[0]]) return false;
    const std::uint32_t first = order[at], last = order[at + rk.size() - 1];
    for (std::size_t i = 0; i + 1 < rk.size(); ++i)
      if (dead(in, order[at + i], order[at + i + 1])) return false;
    if (servers.size() > 1 && (!nic_ok(in, first) || !nic_ok(in, last))) return false;
    if (servers.size() == 1 && n > 1 && dead(in, last, first)) return false;
    at += rk.size();
  }
  return true;
}

std::string ring_order_text(const RingOrderIn& in, const std::vector<std::uint32_t>& order) {
  auto server = [&](std::size_t i) { return order[i] < in.server.size() ? in.server[order[i]] : ~0u; };
  std::string s;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;  // a run of consecutive ranks in one server
    while (j + 1 < order.size() && order[j + 1] == order[j] + 1 && server(j + 1) == server(i)) ++j;
    if (i) s += server(i) != server(i - 1) ? " | " : " ";
    if (j >= i + 2) {
      s += std::to_string(order[i]) + ".." + std::to_string(order[j]);
      i = j + 1;
    } else {
      s += std::to_string(order[i]);
      ++i;
    }
  }
  return s;
}

}  // namespace hcomm::detail
