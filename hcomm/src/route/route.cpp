// Routing (docs/routing.md): transport by link-type priority, RoCE source ports chosen by path
// probes so that the stripes of the NICs under one leaf switch take different uplinks, and a
// re-route when the NIC reports congestion. Every decision goes to the driver (trace `routes`).
// Peers first used together (a schedule's peers) are probed together: one probe round trip for all.
#include "route/route.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/comm.h"
#include "core/log.h"
#include "discovery/topo.h"
#include "driver_port.h"

namespace hcomm::detail::route {

namespace {

// Probe budget (docs/routing.md#probes): per cross-leaf peer kFirst candidates in the first round
// (plus kLearn for the first one while the leaf's uplinks are unknown), then kBatch per peer that
// still misses a stripe's uplink, for at most kRounds rounds; every round is one probe call.
constexpr std::uint32_t kLearn = 512;
constexpr std::uint32_t kFirst = 128;
constexpr std::uint32_t kBatch = 64;
constexpr std::uint32_t kRounds = 3;
// Cross-leaf peers a communicator probes for (docs/routing.md#probe-budget); later ones keep the
// NIC's hashed ports. Choosing uplinks pays when a NIC has few flows; a rank talking to hundreds
// of peers (an all-to-all) spreads its QPs over the uplinks by the hash alone, and probing them
// all would cost ~150 probes per peer (a billion path traces at 8192 ranks).
constexpr std::uint32_t kProbePeers = 32;
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
            std::string_view reason, std::string_view trigger) {
  if (!port::route_reports(comm->ctx)) return;
  RouteInfo info;
  info.comm = comm->id;
  info.src_rank = global_rank(comm, comm->rank);  // global ranks, as in the trace's operations
  info.dst_rank = global_rank(comm, peer.rank);
  info.dst_device = peer.device;
  const bool borrowed = r.borrow || r.via_device != ~0u;
  info.transport = borrowed ? "roce-borrow" : r.relay_device != ~0u ? "hccs-relay" : transport_name(r.link);
  info.relay_device = r.relay_device;
  info.via_device = r.via_device;
  info.qp = rdma_policy(comm).qp_base + qp;  // a reserving communicator's own QPs (route/reserve.cpp)
  info.udp_sport = qp < r.sports.size() ? r.sports[qp] : 0;
  info.bandwidth_Bps = bw;
  info.latency_ns = lat;
  info.congestion = comm->route.cnp_per_us;
  info.cost = (bw > 0 ? kCostBytes / bw * 1e6 : 0) + lat / 1e3 + kGammaUsPerCnpUs * comm->route.cnp_per_us;
  info.reason.assign(reason);
  info.trigger.assign(trigger);
  port::route_decided(comm->ctx, info);
}

std::uint32_t stripes(hcomm_comm_t comm) { return std::max<std::uint32_t>(1, comm->rdma.qp_count); }
// The NIC's rate as this communicator may use it: its line rate, less what other communicators
// of the context reserved (route/reserve.cpp), at most its own reservation's ceiling.
double nic_Bps(hcomm_comm_t comm, const RouteState& st) {
  return st.nic.speed_bps ? static_cast<double>(share_Bps(comm, st.nic.speed_bps / 8)) : 0;
}

// A cross-leaf peer being routed: the candidate ports probed for it so far and, per candidate,
// the leaf uplink its path takes (kNoUplink: it stays under the leaf; kLost: no reply).
constexpr std::uint32_t kNoUplink = ~0u, kLost = ~0u - 1;
struct Pending {
  RankDesc peer;
  PeerRoute* r = nullptr;
  std::vector<std::uint16_t> sports;
  std::vector<std::uint32_t> up;
  std::vector<int> pick;  ///< per stripe: candidate index, -1 not found yet
  std::uint32_t next = 0; ///< next candidate number
};

std::uint32_t& load_of(RouteState& st, std::uint32_t port) {
  if (st.load.size() <= port) st.load.resize(port + 1, 0);
  return st.load[port];
}

// Route the cross-leaf peers in `ps` (their PeerRoute reset): probe rounds, the slot rule, connect, report.
void route_roce(hcomm_comm_t comm, std::vector<Pending>& ps, const std::string& trigger) {
  RouteState& st = comm->route;
  const std::uint32_t k = stripes(comm);
  const double bw = nic_Bps(comm, st);
  std::vector<std::uint32_t> targets;
  std::vector<std::uint16_t> sports;
  std::vector<ProbeEgress> replies;  // 8 bytes a probe: every rank waiting on its probes holds them
  const std::uint64_t t0 = port::now_ns(comm->ctx);
  bool probed = false, failed = false;
  // Which ports are in st.uplinks, as a bitmap: one test per probe reply instead of a binary
  // search (hundreds of replies per peer, docs/routing.md#probes).
  std::vector<std::uint64_t> known;
  auto mark = [&known](std::uint32_t u) {
    if ((u >> 6) >= known.size()) known.resize((u >> 6) + 1, 0);
    known[u >> 6] |= 1ULL << (u & 63);
  };
  for (std::uint32_t u : st.uplinks) mark(u);
  for (std::uint32_t round = 0; round < kRounds; ++round) {
    targets.clear();
    sports.clear();
    std::vector<std::pair<std::size_t, std::uint32_t>> owner;  // (pending, probes) in probe order
    for (std::size_t p = 0; p < ps.size(); ++p) {
      Pending& x = ps[p];
      if (x.pick.empty()) x.pick.assign(k, -1);
      if (round > 0 && std::none_of(x.pick.begin(), x.pick.end(), [](int v) { return v < 0; })) continue;
      std::uint32_t n = round == 0 ? kFirst : kBatch;
      if (round == 0 && p == 0 && st.uplinks.size() < 2) n += kLearn;
      for (std::uint32_t c = 0; c < n; ++c) {
        targets.push_back(x.peer.device);
        sports.push_back(candidate(comm->ctx->device, x.peer.device, x.r->epoch * 4096 + x.next++));
      }
      owner.emplace_back(p, n);
    }
    if (targets.empty()) break;
    if (port::probe_egress(comm->ctx, targets.data(), sports.data(), static_cast<std::uint32_t>(targets.size()), &replies) !=
        HCOMM_SUCCESS) {
      failed = !probed;
      break;
    }
    probed = true;
    std::size_t at = 0;
    for (const auto& [p, n] : owner) {
      Pending& x = ps[p];
      for (std::uint32_t c = 0; c < n; ++c, ++at) {
        const std::uint32_t len = replies[at].switches;
        std::uint32_t up = len == 0 ? kLost : len == 1 ? kNoUplink : replies[at].first_out_port;
        // Crossing a spine: the first switch's egress is one of the leaf's uplinks (shared by all
        // peers: in a Clos every uplink leads to every other leaf).
        if (len >= 2 && !((up >> 6) < known.size() && (known[up >> 6] >> (up & 63) & 1))) {
          st.uplinks.insert(std::lower_bound(st.uplinks.begin(), st.uplinks.end(), up), up);
          mark(up);
        }
        x.sports.push_back(sports[at]);
        x.up.push_back(up);
      }
    }
    // Stripe i of the NIC on leaf port p wants uplink slot (p + i*max(1, U/k) + epoch) mod U: the
    // NICs under one leaf then fill its uplinks evenly without talking to each other, both when
    // every stripe carries data and when a write below the multi-QP threshold uses stripe 0 only
    // (consecutive ports, consecutive uplinks); one NIC's stripes take distinct uplinks (k <= U).
    const std::uint32_t U = static_cast<std::uint32_t>(st.uplinks.size());
    if (U < 2) break;  // one uplink at most: nothing to choose
    const std::uint32_t stride = std::max<std::uint32_t>(1, U / k);
    for (Pending& x : ps)
      for (std::uint32_t i = 0; i < k; ++i) {
        if (x.pick[i] >= 0) continue;
        const std::uint32_t want = st.uplinks[(st.nic.neighbor_port + i * stride + x.r->epoch) % U];
        for (std::size_t c = 0; c < x.up.size(); ++c)
          if (x.up[c] == want && std::find(x.pick.begin(), x.pick.end(), static_cast<int>(c)) == x.pick.end()) {
            x.pick[i] = static_cast<int>(c);
            break;
          }
      }
  }
  const double lat = static_cast<double>(port::now_ns(comm->ctx) - t0) / 2;  // the probes' round trips, one way
  const std::uint32_t U = static_cast<std::uint32_t>(st.uplinks.size());
  char why[96];
  // Stripe i of a peer onto its probed port c: the QP connected to that source port, the uplink
  // it reaches counted. False if the connect failed (the stripe keeps the NIC's hash).
  auto bind = [&](const Pending& x, PeerRoute& r, std::uint32_t i, std::size_t c) {
    if (port::qp_connect(comm->ctx, x.peer.device, rdma_policy(comm).qp_base + i, x.sports[c]) != HCOMM_SUCCESS) return false;
    if (r.sports.size() <= i) r.sports.resize(i + 1, 0);
    r.sports[i] = x.sports[c];
    r.uplinks[i] = x.up[c];
    ++load_of(st, x.up[c]);
    return true;
  };
  for (Pending& x : ps) {
    PeerRoute& r = *x.r;
    r.control_only = false;  // routed in full now (first data, or a re-route)
    const bool any = std::any_of(x.up.begin(), x.up.end(), [](std::uint32_t u) { return u != kLost && u != kNoUplink; });
    const bool lost = std::any_of(x.up.begin(), x.up.end(), [](std::uint32_t u) { return u == kLost; });
    if (!failed && any && U < 2 && (r.epoch > 0 || (lost && comm->rec.retries > 0))) {
      // One live uplink left after a cable died, in a re-route (after an RDMA write failure) or at
      // a first use after an op retry (probes lost; docs/failover.md#several-faults): nothing to
      // choose, but no stripe may keep a hashed or old port across the dead cable: each takes a
      // port whose probe came back. (Outside a recovery a first use keeps the NIC's hash, as
      // switch faults are documented to fail the QPs that cross them.)
      std::size_t c = 0;
      for (std::uint32_t i = 0; i < k; ++i) {
        while (c < x.up.size() && (x.up[c] == kLost || x.up[c] == kNoUplink)) ++c;
        if (c >= x.up.size() || !bind(x, r, i, c)) {
          report(comm, x.peer, r, i, bw, lat, "NIC hash (no live probed port)", trigger);
          continue;
        }
        report(comm, x.peer, r, i, bw, lat, "probed path (the one uplink left)", trigger);
        ++c;
      }
      continue;
    }
    if (failed || !any || U < 2) {  // no probe came back, or nothing to choose: the NIC's own ports
      const char* reason = failed ? "NIC hash (path probe failed)" : !any ? "NIC hash (probes lost)" : "single path (one uplink)";
      for (std::uint32_t i = 0; i < k; ++i) report(comm, x.peer, r, i, bw, lat, reason, trigger);
      continue;
    }
    for (std::uint32_t i = 0; i < k; ++i) {
      const bool found = x.pick[i] >= 0;
      std::size_t c = found ? static_cast<std::size_t>(x.pick[i]) : 0;
      if (!found) {  // the budget ran out: the probed uplink carrying the fewest of my stripes
        std::uint64_t best = ~0ULL;
        for (std::size_t j = 0; j < x.up.size(); ++j) {
          if (x.up[j] == kLost || x.up[j] == kNoUplink) continue;
          const std::uint64_t l = load_of(st, x.up[j]);
          if (l < best) { best = l; c = j; }
        }
      }
      if (!bind(x, r, i, c)) {
        report(comm, x.peer, r, i, bw, lat, "NIC hash (connect failed)", trigger);
        continue;
      }
      const auto slot = static_cast<std::uint32_t>(std::lower_bound(st.uplinks.begin(), st.uplinks.end(), x.up[c]) - st.uplinks.begin());
      std::snprintf(why, sizeof why, "%s uplink %u of %u", found ? "probed" : "least loaded", slot, U);
      report(comm, x.peer, r, i, bw, lat, why, trigger);
    }
  }
}

// Cross-leaf peers that only notifies go to so far (docs/routing.md#control-only-peers). A notify
// is one packet on stripe 0, so only stripe 0 needs a path that works: kControlProbes candidate
// ports per peer in one probe call, the first whose probe comes back is connected (a dead cable
// on the way loses the probe); the other stripes keep the NIC's hash. No uplink is chosen: that
// waits for the first data (route::to), which probes the peer in full.
constexpr std::uint32_t kControlProbes = 4;
void route_control(hcomm_comm_t comm, std::vector<Pending>& ps, const std::string& trigger) {
  RouteState& st = comm->route;
  const std::uint32_t k = stripes(comm);
  const double bw = nic_Bps(comm, st);
  std::vector<std::uint32_t> targets;
  std::vector<std::uint16_t> sports;
  targets.reserve(ps.size() * kControlProbes);
  sports.reserve(ps.size() * kControlProbes);
  for (Pending& x : ps)
    for (std::uint32_t c = 0; c < kControlProbes; ++c) {
      targets.push_back(x.peer.device);
      sports.push_back(candidate(comm->ctx->device, x.peer.device, x.r->epoch * 4096 + x.next++));
    }
  std::vector<ProbeEgress> replies;
  const std::uint64_t t0 = port::now_ns(comm->ctx);
  const bool probed = port::probe_egress(comm->ctx, targets.data(), sports.data(), static_cast<std::uint32_t>(targets.size()),
                                         &replies) == HCOMM_SUCCESS;
  const double lat = static_cast<double>(port::now_ns(comm->ctx) - t0) / 2;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    PeerRoute& r = *ps[p].r;
    r.control_only = true;
    const char* why = !probed ? "NIC hash (notifies only so far; path probe failed)" : "NIC hash (notifies only so far; probes lost)";
    for (std::uint32_t c = 0; probed && c < kControlProbes; ++c) {
      const std::size_t i = p * kControlProbes + c;
      if (replies[i].switches == 0) continue;  // lost: its path crosses a dead link
      if (port::qp_connect(comm->ctx, ps[p].peer.device, rdma_policy(comm).qp_base, sports[i]) != HCOMM_SUCCESS) {
        why = "NIC hash (notifies only so far; connect failed)";
        break;
      }
      r.sports.assign(1, sports[i]);
      why = "probed path (notifies only so far: uplinks chosen at first data)";
      break;
    }
    report(comm, ps[p].peer, r, 0, bw, lat, why, trigger);
    for (std::uint32_t i = 1; i < k; ++i)
      report(comm, ps[p].peer, r, i, bw, 0, "NIC hash (notifies only so far: probed at first data)", trigger);
  }
}

// Rail borrowing after an op retry found NICs down (docs/failover.md#nic-borrowing): a RoCE peer
// whose NIC is down, or any RoCE peer when mine is, is reached through the lender(s) the recovery
// chose alike on every rank (comm->rec.nic_lender): my writes go over HCCS into my lender's staging
// area and leave by its NIC (transport/relay.cpp, hop 2 an RDMA write); a write to a peer whose NIC
// is down goes to its lender's NIC, which writes it on into the peer's HBM. The QPs keep the NIC's
// hash ports (no probes). False: neither NIC is down, or a lender has no descriptor.
bool borrow(hcomm_comm_t comm, const RankDesc& d, PeerRoute& r, const std::string& trigger) {
  if (comm->rec.nic_lender.empty()) return false;
  const auto mine = comm->rec.nic_lender.find(comm->rank), theirs = comm->rec.nic_lender.find(d.rank);
  if (mine == comm->rec.nic_lender.end() && theirs == comm->rec.nic_lender.end()) return false;
  const RankDesc* ml = mine != comm->rec.nic_lender.end() ? peer_desc(comm, mine->second) : nullptr;
  const RankDesc* tl = theirs != comm->rec.nic_lender.end() ? peer_desc(comm, theirs->second) : nullptr;
  if ((mine != comm->rec.nic_lender.end() && !ml) || (theirs != comm->rec.nic_lender.end() && !tl)) return false;
  std::string why;
  if (ml) {
    r.borrow = true;
    r.relay_rank = global_rank(comm, ml->rank);
    r.relay_device = ml->device;
    why = "my nic down: hccs to rank " + std::to_string(r.relay_rank) + ", its nic";
  }
  if (tl) {
    r.via_rank = global_rank(comm, tl->rank);
    r.via_device = tl->device;
    why += (why.empty() ? "" : "; ") + std::string("peer's nic down: into rank ") + std::to_string(r.via_rank) + "'s nic, hccs on";
  }
  RouteState& st = comm->route;
  if (!st.nic_read) {
    st.nic_read = true;
    if (port::nic_info(comm->ctx, &st.nic) != HCOMM_SUCCESS) st.nic = NicInfo{};
  }
  ++st.roce_peers;
  const std::uint32_t k = tl ? 1 : stripes(comm);  // into a lender's NIC: one QP (transport.cpp policy_to)
  r.uplinks.assign(k, kNoUplink);
  // The NIC's rate (mine may be down: the lender's is the same model, its line rate assumed) and
  // the HCCS latency per borrowed end.
  const double bw = nic_Bps(comm, st);
  const double lat = (ml ? kHccsLatNs : 0) + (tl ? kHccsLatNs : 0);
  for (std::uint32_t i = 0; i < k; ++i) report(comm, d, r, i, bw, lat, why, trigger);
  return true;
}

// Decide every peer of `peers` not decided yet; the cross-leaf RoCE ones in one probe batch, or,
// when `control` (only notifies go to them so far), by route_control until data goes to them.
void decide(hcomm_comm_t comm, const std::vector<const RankDesc*>& peers, const std::string& trigger, bool control = false) {
  RouteState& st = comm->route;
  if (st.policy < 0) st.policy = comm->ctx->route_policy;  // read with the context's environment (core/config)
  std::vector<Pending> ps, cs;  // cross-leaf peers to probe: in full, for notifies only
  for (const RankDesc* d : peers) {
    if (!d || st.peers.count(d->rank)) continue;
    PeerRoute& r = st.peers[d->rank];
    r.link = d->device == comm->ctx->device ? PairLink::Local : discovered_link(comm, *d);  // discovery/ (docs/discovery.md)
    switch (r.link) {
      case PairLink::Local: continue;
      case PairLink::Hccs: report(comm, *d, r, 0, kHccsBps, kHccsLatNs, "hccs direct (priority 1)", trigger); continue;
      case PairLink::Pcie: report(comm, *d, r, 0, kPcieBps, kPcieLatNs, "pcie peer-to-peer (no hccs link; priority 2)", trigger); continue;
      default: break;
    }
    // A peer of my server without HCCS or PCIe: HCCS through a relay NPU (docs/routing.md#relay),
    // ahead of RoCE (the collectives need every pair of a server reachable by SDMA). Neither hop
    // may be a link the communicator knows is down (the op retry's merged dead pairs: the relay's
    // own links are known from its READY, not from my ports).
    const RankDesc* me = peer_desc(comm, comm->rank);
    std::uint32_t relay = 0;
    std::uint64_t kbw = 0;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> dead;
    for (const auto& [a, b] : comm->rec.dead_pairs) dead.emplace_back(global_rank(comm, a), global_rank(comm, b));
    if (me && d->server == me->server && comm->ctx->relay_bytes &&
        relay_for(comm->ctx, global_rank(comm, comm->rank), global_rank(comm, d->rank), &relay, &kbw, &dead)) {
      RankDesc kd;
      if (port::rank_desc(comm->ctx, relay, &kd) == HCOMM_SUCCESS) {
        r.link = PairLink::Hccs;
        r.relay_rank = relay;
        r.relay_device = kd.device;
        r.relay_Bps = kbw;
        char why[128];
        std::snprintf(why, sizeof why, "hccs relay via rank %u (no hccs link or pcie; bottleneck %.1f GB/s)", relay,
                      static_cast<double>(kbw) / 1e9);
        report(comm, *d, r, 0, static_cast<double>(kbw), 2 * kHccsLatNs, why, trigger);
        continue;
      }
    }
    if (r.link != PairLink::Roce) { report(comm, *d, r, 0, 0, 0, "no path", trigger); continue; }
    if (borrow(comm, *d, r, trigger)) continue;
    if (!st.nic_read) {
      st.nic_read = true;
      if (port::nic_info(comm->ctx, &st.nic) != HCOMM_SUCCESS) st.nic = NicInfo{};
    }
    ++st.roce_peers;
    const std::uint32_t k = stripes(comm);
    if (st.policy == kHash) {
      for (std::uint32_t i = 0; i < k; ++i) report(comm, *d, r, i, nic_Bps(comm, st), 0, "NIC hash (HCOMM_ROUTE_SPORT=hash)", trigger);
      continue;
    }
    // A peer under the same leaf (the two NICs' LLDP neighbours agree) has one path only.
    NicInfo their;
    if (!st.nic.neighbor.empty() && port::peer_nic_info(comm->ctx, d->device, &their) == HCOMM_SUCCESS &&
        their.neighbor == st.nic.neighbor) {
      for (std::uint32_t i = 0; i < k; ++i)
        report(comm, *d, r, i, nic_Bps(comm, st), 0, "single path (same leaf " + st.nic.neighbor + ")", trigger);
      continue;
    }
    Pending x;
    x.peer = *d;
    x.r = &r;  // std::map: the reference stays valid while others are inserted
    if (control) {
      cs.push_back(std::move(x));
      continue;
    }
    if (st.probed_peers >= kProbePeers) {
      char why[80];
      std::snprintf(why, sizeof why, "NIC hash (probe budget: %u peers probed)", kProbePeers);
      for (std::uint32_t i = 0; i < k; ++i) report(comm, *d, r, i, nic_Bps(comm, st), 0, why, trigger);
      continue;
    }
    ++st.probed_peers;
    r.uplinks.assign(k, kNoUplink);  // per stripe, as probed (a hashed peer's stay empty: nothing to count)
    ps.push_back(std::move(x));
  }
  if (!ps.empty()) route_roce(comm, ps, trigger);
  if (!cs.empty()) route_control(comm, cs, trigger);
}

}  // namespace

namespace {
void forget_and_decide(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks, const std::string& trigger, bool upgrade);
}  // namespace

const PeerRoute& to(hcomm_comm_t comm, const RankDesc& peer) {
  RouteState& st = comm->route;
  auto it = st.peers.find(peer.rank);
  if (it != st.peers.end()) {
    if (!it->second.control_only) return it->second;
    forget_and_decide(comm, {peer.rank}, "first data", true);  // notifies only so far: probed now
  } else {
    decide(comm, {&peer}, "first use");
  }
  return st.peers.at(peer.rank);
}

const PeerRoute* known(hcomm_comm_t comm, std::uint32_t rank) {
  const auto it = comm->route.peers.find(rank);
  return it == comm->route.peers.end() || it->second.control_only ? nullptr : &it->second;
}

const PeerRoute& to_control(hcomm_comm_t comm, const RankDesc& peer) {
  RouteState& st = comm->route;
  auto it = st.peers.find(peer.rank);
  if (it != st.peers.end()) return it->second;
  decide(comm, {&peer}, "first use", true);
  return st.peers.at(peer.rank);
}

void prepare_control(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks) {
  std::vector<const RankDesc*> peers;
  for (std::uint32_t r : ranks)
    if (r != comm->rank && !comm->route.peers.count(r) &&
        std::none_of(peers.begin(), peers.end(), [r](const RankDesc* d) { return d && d->rank == r; }))
      peers.push_back(peer_desc(comm, r));
  if (!peers.empty()) decide(comm, peers, "first use", true);
}

void prepare(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks) {
  std::vector<const RankDesc*> peers;
  std::vector<std::uint32_t> upgrade;  // decided for notifies only so far: probed now
  peers.reserve(ranks.size());
  for (std::uint32_t r : ranks) {
    if (r == comm->rank) continue;
    auto it = comm->route.peers.find(r);
    if (it == comm->route.peers.end()) peers.push_back(peer_desc(comm, r));
    else if (it->second.control_only) upgrade.push_back(r);
  }
  if (!peers.empty()) decide(comm, peers, "first use");
  if (!upgrade.empty()) forget_and_decide(comm, upgrade, "first data", true);
}

namespace {
// Forget the routes to these ranks (their uplink loads released) and decide them again; a peer on
// the hash for notifies only stays so (decided with `control`) unless `upgrade`.
void forget_and_decide(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks, const std::string& trigger, bool upgrade) {
  RouteState& st = comm->route;
  std::vector<const RankDesc*> data, control;
  for (std::uint32_t rank : ranks) {
    auto it = st.peers.find(rank);
    bool ctl = false;
    if (it != st.peers.end()) {
      ctl = it->second.control_only && !upgrade;
      if (it->second.link == PairLink::Roce) {
        for (std::uint32_t u : it->second.uplinks)
          if (u < st.load.size() && st.load[u]) --st.load[u];
        if (st.roce_peers) --st.roce_peers;
      }
      st.peers.erase(it);
    }
    if (rank != comm->rank) (ctl ? control : data).push_back(peer_desc(comm, rank));
  }
  if (!data.empty()) decide(comm, data, trigger);
  if (!control.empty()) decide(comm, control, trigger, true);
}
}  // namespace

void redecide(hcomm_comm_t comm, const std::vector<std::uint32_t>& ranks, const std::string& trigger) {
  forget_and_decide(comm, ranks, trigger, false);
}

void redecide_roce(hcomm_comm_t comm, const std::string& trigger) {
  std::vector<std::uint32_t> ranks;
  for (const auto& [rank, r] : comm->route.peers)
    if (r.link == PairLink::Roce) ranks.push_back(rank);
  forget_and_decide(comm, ranks, trigger, false);
}

// Op retry after an RDMA write failure (docs/failover.md, docs/routing.md#re-routing): probe every
// RoCE QP's current source port again, one probe call for all; a QP whose probe does not come back
// crosses a dead cable (a switch-to-switch one: no port event shows it), so its peer is routed
// again (all its stripes, next epoch, the leaf's uplinks learned anew without the dead one) and
// connected on the new ports: a new QP, out of the error state its retries left it in.
std::uint32_t reroute_broken(hcomm_comm_t comm, const std::string& trigger) {
  RouteState& st = comm->route;
  if (st.policy != kProbe || st.roce_peers == 0) return 0;
  NicInfo nic;
  if (port::nic_info(comm->ctx, &nic) != HCOMM_SUCCESS || !nic.present || !nic.link_up) return 0;  // own NIC down: the ring avoids it
  std::vector<std::uint32_t> targets, owner;
  std::vector<std::uint16_t> sports;
  for (const auto& [rank, r] : st.peers) {
    if (r.link != PairLink::Roce || r.sports.empty()) continue;  // NIC hash / single path: nothing to choose
    if (std::binary_search(comm->rec.dead_nics.begin(), comm->rec.dead_nics.end(), rank)) continue;  // its NIC is down
    const RankDesc* d = peer_desc(comm, rank);
    if (!d) continue;
    for (std::uint16_t sp : r.sports) {
      targets.push_back(d->device);
      sports.push_back(sp);
      owner.push_back(rank);
    }
  }
  if (targets.empty()) return 0;
  std::vector<ProbeEgress> replies;
  if (port::probe_egress(comm->ctx, targets.data(), sports.data(), static_cast<std::uint32_t>(targets.size()), &replies) !=
      HCOMM_SUCCESS)
    return 0;
  std::vector<std::uint32_t> broken;
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (replies[i].switches == 0 && (broken.empty() || broken.back() != owner[i])) broken.push_back(owner[i]);
  if (broken.empty()) return 0;
  std::vector<Pending> ps;
  std::vector<std::vector<std::uint16_t>> old;
  for (std::uint32_t rank : broken) {
    PeerRoute& r = st.peers.at(rank);
    for (std::uint32_t u : r.uplinks)
      if (u < st.load.size() && st.load[u]) --st.load[u];
    old.push_back(r.sports);
    ++r.epoch;
    r.sports.clear();
    r.uplinks.assign(stripes(comm), kNoUplink);
    Pending x;
    x.peer = *peer_desc(comm, rank);
    x.r = &r;
    ps.push_back(std::move(x));
  }
  st.uplinks.clear();  // learned again: an uplink whose cable died is no longer seen
  ++st.reroutes;
  route_roce(comm, ps, trigger);
  std::uint32_t moved = 0;  // QPs now connected on another source port than before
  for (std::size_t p = 0; p < ps.size(); ++p)
    for (std::size_t i = 0; i < ps[p].r->sports.size(); ++i)
      if (ps[p].r->sports[i] && (i >= old[p].size() || old[p][i] != ps[p].r->sports[i])) ++moved;
  logf(comm->ctx, 1, "rank %u: %s: path probes lost for %zu RoCE peer(s); %u QP(s) moved to new source ports", comm->rank,
       trigger.c_str(), ps.size(), moved);
  return moved;
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
  std::vector<Pending> ps;
  for (auto& [rank, r] : st.peers) {
    if (r.link != PairLink::Roce || r.sports.empty()) continue;
    for (std::uint32_t u : r.uplinks)
      if (u < st.load.size() && st.load[u]) --st.load[u];
    ++r.epoch;
    r.sports.clear();
    r.uplinks.assign(stripes(comm), kNoUplink);
    const RankDesc* d = peer_desc(comm, rank);
    if (!d) continue;
    Pending x;
    x.peer = *d;
    x.r = &r;
    ps.push_back(std::move(x));
  }
  if (!ps.empty()) route_roce(comm, ps, trig);
  logf(comm->ctx, 1, "rank %u: %s: re-routed %zu RoCE peers", comm->rank, trig, ps.size());
}

}  // namespace hcomm::detail::route
