// Routing (docs/routing.md): transport by link-type priority, RoCE source ports chosen by path
// probes so that the stripes of the NICs under one leaf switch take different uplinks, and a
// re-route when the NIC reports congestion. Every decision goes to the driver (trace `routes`).
#include "route/route.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/comm.h"
#include "core/log.h"
#include "discovery/topo.h"
#include "driver_port.h"

namespace hcomm::detail::route {

namespace {

// Probe budget (docs/routing.md#probes): the first RoCE peer learns the leaf's uplinks with a
// large batch; later peers probe in batches until every stripe found its uplink.
constexpr std::uint32_t kLearnProbes = 512;
constexpr std::uint32_t kBatch = 64;
constexpr std::uint32_t kMaxBatches = 16;
// Cost terms of a route (docs/routing.md#cost): time to move 1 MiB at the link's rate, plus its
// latency, plus gamma times the NIC's CNP rate. Link figures are the library's nominal values
// for the link types (the A2 server's HCCS link, a Gen4 x16 peer-to-peer path).
constexpr double kCostBytes = 1048576.0;
constexpr double kGammaUsPerCnpUs = 100.0;
constexpr double kHccsBps = 28e9, kHccsLatNs = 500;
constexpr double kPcieBps = 25e9, kPcieLatNs = 1200;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint16_t candidate(std::uint32_t me, std::uint32_t peer, std::uint32_t n) {
  const std::uint64_t h = mix((static_cast<std::uint64_t>(me) << 40) ^ (static_cast<std::uint64_t>(peer) << 20) ^ n);
  return static_cast<std::uint16_t>(49152 + h % 16384);
}

const char* transport_name(PairLink l) {
  switch (l) {
    case PairLink::Hccs: return "hccs";
    case PairLink::Pcie: return "pcie";
    case PairLink::Roce: return "roce";
    case PairLink::Local: return "local";
    default: return "none";
  }
}

void report(hcomm_comm_t comm, const RankDesc& peer, const PeerRoute& r, std::uint32_t qp, double bw, double lat,
            const std::string& reason, const std::string& trigger) {
  RouteInfo info;
  info.comm = comm->id;
  info.src_rank = global_rank(comm, comm->rank);  // global ranks, as in the trace's operations
  info.dst_rank = global_rank(comm, peer.rank);
  info.dst_device = peer.device;
  info.transport = transport_name(r.link);
  info.qp = qp;
  info.udp_sport = qp < r.sports.size() ? r.sports[qp] : 0;
  info.bandwidth_Bps = bw;
  info.latency_ns = lat;
  info.congestion = comm->route.cnp_per_us;
  info.cost = (bw > 0 ? kCostBytes / bw * 1e6 : 0) + lat / 1e3 + kGammaUsPerCnpUs * comm->route.cnp_per_us;
  info.reason = reason;
  info.trigger = trigger;
  port::route_decided(comm->ctx, info);
}

using Path = std::vector<std::pair<std::string, std::uint32_t>>;

Path to_path(const std::vector<PathHop>& hops) {
  Path p;
  p.reserve(hops.size());
  for (const auto& h : hops) p.emplace_back(h.node, h.out_port);
  return p;
}

// Probe `n` candidates (numbered from `first`) for `peer`; adds the leaf egress ports seen to
// `uplinks`. False when the probes could not be sent.
bool probe(hcomm_comm_t comm, const RankDesc& peer, std::uint32_t first, std::uint32_t n, std::vector<std::uint16_t>* sports,
           std::vector<Path>* paths, std::vector<std::uint32_t>* uplinks) {
  sports->resize(n);
  for (std::uint32_t c = 0; c < n; ++c) (*sports)[c] = candidate(comm->ctx->device, peer.device, first + c);
  std::vector<std::vector<PathHop>> hops;
  if (port::probe_paths(comm->ctx, peer.device, sports->data(), n, &hops) != HCOMM_SUCCESS) return false;
  paths->clear();
  for (const auto& h : hops) {
    paths->push_back(to_path(h));
    if (h.size() >= 2) uplinks->push_back(h[0].out_port);  // crossing a spine: the leaf's egress is an uplink
  }
  std::sort(uplinks->begin(), uplinks->end());
  uplinks->erase(std::unique(uplinks->begin(), uplinks->end()), uplinks->end());
  return true;
}

void decide_roce(hcomm_comm_t comm, const RankDesc& peer, PeerRoute& r, const std::string& trigger) {
  RouteState& st = comm->route;
  const std::uint32_t k = std::max<std::uint32_t>(1, comm->rdma.qp_count);
  const double bw = st.nic.speed_bps ? static_cast<double>(st.nic.speed_bps) / 8 : 0;
  r.sports.clear();
  r.paths.assign(k, {});
  if (st.policy == kHash) {
    for (std::uint32_t i = 0; i < k; ++i) report(comm, peer, r, i, bw, 0, "NIC hash (HCOMM_ROUTE_SPORT=hash)", trigger);
    return;
  }
  // The leaf's uplinks seen so far are shared by all peers: in a Clos every uplink leads to every
  // other leaf.
  std::vector<std::uint32_t>& uplinks = st.uplinks;
  std::vector<std::uint16_t> sports;
  std::vector<Path> paths;
  const std::uint64_t t0 = port::now_ns(comm->ctx);
  std::uint32_t next = r.epoch * kMaxBatches * kBatch * 8;
  // A peer under the same leaf (the two NICs' LLDP neighbours agree) has one path only.
  NicInfo their;
  if (!st.nic.neighbor.empty() && port::peer_nic_info(comm->ctx, peer.device, &their) == HCOMM_SUCCESS &&
      their.neighbor == st.nic.neighbor) {
    for (std::uint32_t i = 0; i < k; ++i) report(comm, peer, r, i, bw, 0, "single path (same leaf " + st.nic.neighbor + ")", trigger);
    return;
  }
  const bool learn = uplinks.size() < 2;
  if (!probe(comm, peer, next, learn ? kLearnProbes : kBatch, &sports, &paths, &uplinks)) {
    for (std::uint32_t i = 0; i < k; ++i) report(comm, peer, r, i, bw, 0, "NIC hash (path probe failed)", trigger);
    return;
  }
  next += static_cast<std::uint32_t>(sports.size());
  const double lat = static_cast<double>(port::now_ns(comm->ctx) - t0) / 2;  // the probes' round trip, one way
  if (std::all_of(paths.begin(), paths.end(), [](const Path& p) { return p.empty(); })) {
    for (std::uint32_t i = 0; i < k; ++i) report(comm, peer, r, i, bw, lat, "NIC hash (probes lost)", trigger);
    return;
  }
  if (uplinks.size() < 2) {  // a single uplink: nothing to choose
    for (std::uint32_t i = 0; i < k; ++i) report(comm, peer, r, i, bw, lat, "single path (one uplink)", trigger);
    return;
  }
  // Stripe i of the NIC on leaf port p wants uplink slot (p*k + i + epoch) mod U: the NICs under
  // one leaf then fill its uplinks evenly without talking to each other.
  const std::uint32_t U = static_cast<std::uint32_t>(uplinks.size());
  std::vector<std::uint16_t> chosen(k, 0);
  std::vector<Path> chosen_path(k);
  std::vector<bool> found(k, false);
  for (std::uint32_t batch = 0;; ++batch) {
    for (std::uint32_t i = 0; i < k; ++i) {
      if (found[i]) continue;
      const std::uint32_t want = uplinks[(st.nic.neighbor_port * k + i + r.epoch) % U];
      for (std::size_t c = 0; c < paths.size(); ++c)
        if (paths[c].size() >= 2 && paths[c][0].second == want) {
          chosen[i] = sports[c];
          chosen_path[i] = paths[c];
          found[i] = true;
          break;
        }
    }
    if (std::all_of(found.begin(), found.end(), [](bool f) { return f; }) || batch + 1 >= kMaxBatches) break;
    if (!probe(comm, peer, next, kBatch, &sports, &paths, &uplinks)) break;
    next += kBatch;
  }
  char why[96];
  for (std::uint32_t i = 0; i < k; ++i) {
    if (!found[i]) {  // the budget ran out: the least loaded path seen
      std::size_t best = 0;
      std::uint64_t best_load = ~0ULL;
      for (std::size_t c = 0; c < paths.size(); ++c) {
        if (paths[c].empty()) continue;
        std::uint64_t l = 0;
        for (const auto& h : paths[c]) { auto it = st.load.find(h); l += it == st.load.end() ? 0 : it->second; }
        if (l < best_load) { best_load = l; best = c; }
      }
      chosen[i] = sports[best];
      chosen_path[i] = paths[best];
    }
    if (port::qp_connect(comm->ctx, peer.device, i, chosen[i]) != HCOMM_SUCCESS) continue;
    r.sports.resize(i + 1, 0);
    r.sports[i] = chosen[i];
    r.paths[i] = chosen_path[i];
    for (const auto& h : chosen_path[i]) ++st.load[h];
    const auto slot = static_cast<std::uint32_t>(std::lower_bound(uplinks.begin(), uplinks.end(), chosen_path[i][0].second) - uplinks.begin());
    std::snprintf(why, sizeof why, "%s uplink %u of %u", found[i] ? "probed" : "least loaded", slot, U);
    report(comm, peer, r, i, bw, lat, why, trigger);
  }
}

void decide(hcomm_comm_t comm, const RankDesc& peer, PeerRoute& r, const std::string& trigger) {
  RouteState& st = comm->route;
  switch (r.link) {
    case PairLink::Hccs: report(comm, peer, r, 0, kHccsBps, kHccsLatNs, "hccs direct (priority 1)", trigger); return;
    case PairLink::Pcie: report(comm, peer, r, 0, kPcieBps, kPcieLatNs, "pcie peer-to-peer (no hccs link; priority 2)", trigger); return;
    case PairLink::Roce: break;
    default: report(comm, peer, r, 0, 0, 0, "no path", trigger); return;
  }
  if (!st.nic_read) {
    st.nic_read = true;
    if (port::nic_info(comm->ctx, &st.nic) != HCOMM_SUCCESS) st.nic = NicInfo{};
  }
  ++st.roce_peers;
  decide_roce(comm, peer, r, trigger);
}

}  // namespace

const PeerRoute& to(hcomm_comm_t comm, const RankDesc& peer) {
  RouteState& st = comm->route;
  auto it = st.peers.find(peer.rank);
  if (it != st.peers.end()) return it->second;
  if (st.policy < 0) st.policy = comm->ctx->route_policy;  // read with the context's environment (core/config)
  PeerRoute r;
  r.link = peer.device == comm->ctx->device ? PairLink::Local : discovered_link(comm, peer);  // discovery/ (docs/discovery.md)
  PeerRoute& ref = st.peers.emplace(peer.rank, std::move(r)).first->second;
  if (ref.link != PairLink::Local) decide(comm, peer, ref, "first use");
  return ref;
}

void check(hcomm_comm_t comm) {
  RouteState& st = comm->route;
  if (st.roce_peers == 0) return;  // nothing over RoCE yet
  NicCounters now;
  if (port::nic_counters(comm->ctx, &now) != HCOMM_SUCCESS) return;
  const std::uint64_t t = port::now_ns(comm->ctx);
  const std::uint64_t cnps = now.cnp_rcv - st.last.cnp_rcv;
  st.cnp_per_us = t > st.last_ns ? static_cast<double>(cnps) * 1e3 / static_cast<double>(t - st.last_ns) : 0;
  st.last = now;
  st.last_ns = t;
  const std::uint64_t threshold = comm->ctx->route_cnp_threshold;
  if (st.policy != kProbe || threshold == 0 || cnps < threshold) return;
  char trig[96];
  std::snprintf(trig, sizeof trig, "congestion: %llu CNPs (%.3f per us)", static_cast<unsigned long long>(cnps), st.cnp_per_us);
  ++st.reroutes;
  for (auto& [rank, r] : st.peers) {
    if (r.link != PairLink::Roce || r.sports.empty()) continue;
    for (const auto& p : r.paths)
      for (const auto& h : p)
        if (auto it = st.load.find(h); it != st.load.end() && it->second) --it->second;
    ++r.epoch;
    RankDesc d;
    if (port::rank_desc(comm->ctx, rank, &d) != HCOMM_SUCCESS) continue;
    decide_roce(comm, d, r, trig);
  }
  logf(comm->ctx, 1, "rank %u: %s: re-routed its RoCE peers", comm->rank, trig);
}

}  // namespace hcomm::detail::route
