// The discovered view (docs/discovery.md#the-view): discovery at the first communicator's init,
// the link between two ranks from discovered facts (HCCS partner on an up port, then PCIe
// peer-to-peer inside the server, then RoCE), and the public queries hcomm_get_topology{,_rank}.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/comm.h"
#include "core/handles.h"
#include "core/log.h"
#include "discovery/topo.h"
#include "driver_port.h"

using namespace hcomm;
using namespace hcomm::detail;

namespace hcomm::detail {

bool Topo::record(hcomm_context_t ctx, std::uint32_t r, TopoRecord* out) const {
  if (r >= nranks) return false;
  if (r == rank) { *out = mine; return true; }
  if (exchanged && table) {
    *out = decode_record(table->data() + kMsgHeader + static_cast<std::size_t>(r) * kRecordBytes);
    return true;
  }
  // No control channel: what the peer's descriptor says (server, device id); nothing probed.
  RankDesc d;
  if (port::rank_desc(ctx, r, &d) != HCOMM_SUCCESS) return false;
  TopoRecord t;
  t.rank = r;
  t.server = d.server;
  t.device_id = d.device_id;
  t.host_ip = d.host_ip;
  t.device = d.device;
  *out = t;
  return true;
}

namespace {
// The world ranks of the caller's server, in device-id order (from its devices' configuration space).
std::vector<std::uint32_t> server_ranks(hcomm_context_t ctx, std::uint32_t nranks) {
  std::vector<std::uint32_t> server;
  for (std::uint32_t id = 0; id < 32; ++id) {
    std::uint32_t dev = 0, r = 0;
    if (port::device_of(ctx, id, &dev) != HCOMM_SUCCESS) break;
    if (port::device_rank(ctx, dev, &r) == HCOMM_SUCCESS && r < nranks) server.push_back(r);
  }
  return server;
}
}  // namespace

hcomm_result_t discover(hcomm_context_t ctx, std::uint32_t rank, std::uint32_t nranks, const RankDesc& me) {
  if (ctx->topo && ctx->topo->nranks == nranks && ctx->topo->rank == rank) return HCOMM_SUCCESS;
  auto topo = std::make_shared<Topo>();  // written here only, then shared read-only
  TopoRecord mine;
  if (hcomm_result_t rc = probe_local(ctx, me, &mine); rc != HCOMM_SUCCESS) {
    ctx->discovery_error = "rank " + std::to_string(rank) + ": local probe failed";
    return rc;
  }
  hcomm_result_t rc = bootstrap(ctx, rank, nranks, mine, ctx->timeout_ns, topo.get());
  if (rc == HCOMM_E_NOT_SUPPORT) {  // no control channel: local facts + peers' descriptors (docs/discovery.md)
    logf(ctx, 2, "discovery: no host control channel; peers' facts from their descriptors");
    topo->rank = rank;
    topo->nranks = nranks;
    topo->mine = mine;
    topo->exchanged = false;
    topo->table.reset();
    rc = HCOMM_SUCCESS;
  }
  if (rc != HCOMM_SUCCESS) return rc;
  ctx->topo = topo;
  // My server's ranks must all reach each other by SDMA for the collectives (docs/discovery.md):
  // every member checks every pair of its server from the shared table, so all decide alike. A
  // pair without HCCS or PCIe goes through a relay NPU (docs/routing.md#relay), chosen here by
  // every member identically; a pair with no relay refuses the server's collectives.
  if (topo->exchanged && topo->table) {
    const std::vector<std::uint32_t> server = server_ranks(ctx, nranks);
    std::vector<std::uint32_t> relayed(server.size(), 0);
    for (std::size_t i = 0; i < server.size() && topo->server_not_mesh.empty(); ++i)
      for (std::size_t j = i + 1; j < server.size(); ++j) {
        LinkFacts f;
        if (!link_facts(ctx, server[i], server[j], &f) || f.use == PairLink::Hccs || f.use == PairLink::Pcie) continue;
        std::size_t best = server.size();
        std::uint64_t best_bw = 0;
        for (std::size_t k = 0; k < server.size(); ++k) {
          LinkFacts x, y;
          if (k == i || k == j || !link_facts(ctx, server[i], server[k], &x) || !link_facts(ctx, server[k], server[j], &y) ||
              x.use != PairLink::Hccs || y.use != PairLink::Hccs)
            continue;
          const std::uint64_t bw = std::min(x.bandwidth_Bps, y.bandwidth_Bps);
          if (best == server.size() || bw > best_bw || (bw == best_bw && relayed[k] < relayed[best])) { best = k; best_bw = bw; }
        }
        if (best == server.size()) {
          topo->server_not_mesh = "rank " + std::to_string(server[i]) + " has no HCCS link or PCIe peer-to-peer path to rank " +
                                  std::to_string(server[j]) + " of its server, and no relay NPU (none has HCCS links up to both)";
          logf(ctx, 1, "discovery: %s; collectives are refused on this server (point-to-point degrades to RoCE)",
               topo->server_not_mesh.c_str());
          break;
        }
        ++relayed[best];
        topo->relays.push_back({server[i], server[j], server[best], best_bw});
        logf(ctx, 2, "discovery: ranks %u and %u have no HCCS link or PCIe peer-to-peer path: relayed through rank %u (%.1f GB/s)",
             server[i], server[j], server[best], static_cast<double>(best_bw) / 1e9);
      }
  }
  return HCOMM_SUCCESS;
}

namespace {
LinkFacts facts(const TopoRecord& ra, const TopoRecord& rb, std::uint32_t a, std::uint32_t b);
}  // namespace

bool link_facts(hcomm_context_t ctx, std::uint32_t a, std::uint32_t b, LinkFacts* out) {
  const Topo* t = ctx->topo.get();
  TopoRecord ra, rb;
  if (!t || !t->record(ctx, a, &ra) || !t->record(ctx, b, &rb)) return false;
  *out = facts(ra, rb, a, b);
  return true;
}

namespace {
LinkFacts facts(const TopoRecord& ra, const TopoRecord& rb, std::uint32_t a, std::uint32_t b) {
  LinkFacts f;
  if (a == b) {
    f.use = PairLink::Local;
    f.types = HCOMM_LINK_LOCAL;
    return f;
  }
  // HCCS: a port of a that trained up with b as its partner (the partner's own view is b's).
  std::uint64_t hccs_bw = 0;
  for (std::uint32_t i = 0; i < ra.nports; ++i) {
    const TopoPort& p = ra.ports[i];
    if (p.up && p.partner_server == rb.server && p.partner_device_id == rb.device_id) hccs_bw = std::max(hccs_bw, p.bandwidth_Bps);
  }
  if (hccs_bw) f.types |= HCOMM_LINK_HCCS;
  const bool pcie = ra.server == rb.server && rb.device_id < 32 && ((ra.pcie_peers >> rb.device_id) & 1);
  if (pcie) f.types |= HCOMM_LINK_PCIE;
  // RoCE: both NICs up; a NIC the driver does not describe is assumed up (docs/discovery.md).
  auto nic_ok = [](const TopoRecord& r) { return !r.nic_known || (r.nic_present && r.nic_up); };
  const bool roce = nic_ok(ra) && nic_ok(rb);
  if (roce) f.types |= HCOMM_LINK_ROCE;
  if (hccs_bw) { f.use = PairLink::Hccs; f.bandwidth_Bps = hccs_bw; f.latency_ns = kHccsLatencyNs; }
  else if (pcie) { f.use = PairLink::Pcie; f.bandwidth_Bps = kPcieNominalBps; f.latency_ns = kPcieLatencyNs; }
  else if (roce) {
    f.use = PairLink::Roce;
    const std::uint64_t sa = ra.nic_known ? ra.nic_speed_bps / 8 : kRoceNominalBps, sb = rb.nic_known ? rb.nic_speed_bps / 8 : kRoceNominalBps;
    f.bandwidth_Bps = std::min(sa, sb);
    f.latency_ns = kRoceLatencyNs;
  }
  return f;
}
}  // namespace

// At a peer's first use: the caller's own HCCS ports as they are now (re-read, as a link may have
// gone down or come up since discovery), the peer's record from the table. The re-read is skipped
// when no port can reach the peer's server: every cabled port was up at discovery with its partner
// on another server (a cable does not change ends; a port down then might be up now, to anyone).
// At 8192 ranks a barrier meets about 13 such peers per rank, each a read of 8 port registers.
PairLink discovered_link(hcomm_comm_t comm, const RankDesc& peer) {
  const Topo* t = comm->ctx->topo.get();
  const std::uint32_t a = global_rank(comm, comm->rank), b = global_rank(comm, peer.rank);
  TopoRecord ra, rb;
  if (!t || !t->record(comm->ctx, a, &ra) || !t->record(comm->ctx, b, &rb)) return PairLink::None;
  const bool may_reach = std::any_of(ra.ports, ra.ports + ra.nports, [&](const TopoPort& p) {
    return !p.up || p.partner_server == rb.server;
  });
  if (a != b && may_reach) probe_hccs_ports(comm->ctx, &ra);
  return facts(ra, rb, a, b).use;
}

bool relay_for(hcomm_context_t ctx, std::uint32_t a, std::uint32_t b, std::uint32_t* k, std::uint64_t* Bps,
               const std::vector<std::pair<std::uint32_t, std::uint32_t>>* dead) {
  const Topo* t = ctx->topo.get();
  TopoRecord ra, rb;
  if (!t || !t->exchanged || a == b || !t->record(ctx, a, &ra) || !t->record(ctx, b, &rb) || ra.server != rb.server) return false;
  probe_hccs_ports(ctx, &ra);  // my own ports as they are now; the others' as discovered, less the known-dead links
  auto known_dead = [&](std::uint32_t x, std::uint32_t y) {
    return dead && std::any_of(dead->begin(), dead->end(), [&](const std::pair<std::uint32_t, std::uint32_t>& p) {
             return (p.first == x && p.second == y) || (p.first == y && p.second == x);
           });
  };
  auto hop = [&](const TopoRecord& x, std::uint32_t xr, const TopoRecord& y, std::uint32_t yr) -> std::uint64_t {
    if (known_dead(xr, yr)) return 0;
    const LinkFacts f = facts(x, y, xr, yr);
    return f.use == PairLink::Hccs ? f.bandwidth_Bps : 0;
  };
  // Discovery's choice, while my link to its relay is still up.
  for (const Topo::RelayPair& p : t->relays)
    if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) {
      TopoRecord rk;
      if (t->record(ctx, p.k, &rk) && hop(ra, a, rk, p.k) && hop(rk, p.k, rb, b)) {
        *k = p.k;
        *Bps = std::min(hop(ra, a, rk, p.k), hop(rk, p.k, rb, b));
        return true;
      }
    }
  // Chosen now (a link found down after discovery), by the same rule; the count of pairs relayed
  // through each candidate is discovery's.
  const std::vector<std::uint32_t> server = server_ranks(ctx, t->nranks);
  std::uint32_t best = ~0u, best_count = 0;
  std::uint64_t best_bw = 0;
  for (std::uint32_t c : server) {
    TopoRecord rk;
    if (c == a || c == b || !t->record(ctx, c, &rk)) continue;
    const std::uint64_t bw = std::min(hop(ra, a, rk, c), hop(rk, c, rb, b));
    if (!bw) continue;
    std::uint32_t count = 0;
    for (const Topo::RelayPair& p : t->relays) count += p.k == c;
    if (best == ~0u || bw > best_bw || (bw == best_bw && count < best_count)) { best = c; best_bw = bw; best_count = count; }
  }
  if (best == ~0u) return false;
  *k = best;
  *Bps = best_bw;
  return true;
}

}  // namespace hcomm::detail

namespace {
std::uint32_t link_bit(PairLink l) {
  switch (l) {
    case PairLink::Local: return HCOMM_LINK_LOCAL;
    case PairLink::Hccs: return HCOMM_LINK_HCCS;
    case PairLink::Pcie: return HCOMM_LINK_PCIE;
    case PairLink::Roce: return HCOMM_LINK_ROCE;
    default: return HCOMM_LINK_NONE;
  }
}
}  // namespace

extern "C" {

hcomm_result_t hcomm_get_topology(hcomm_comm_t comm, uint32_t a, uint32_t b, hcomm_topo_link_t* out) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!out) return HCOMM_E_PTR;
  if (a >= comm->nranks || b >= comm->nranks) return HCOMM_E_PARA;
  LinkFacts f;
  if (!link_facts(comm->ctx, global_rank(comm, a), global_rank(comm, b), &f)) return HCOMM_E_NOT_FOUND;
  out->link_types = f.types;
  out->link_type = link_bit(f.use);
  out->bandwidth_Bps = f.bandwidth_Bps;
  out->latency_ns = f.latency_ns;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_get_topology_rank(hcomm_comm_t comm, uint32_t rank, hcomm_topo_rank_t* out) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!out) return HCOMM_E_PTR;
  if (rank >= comm->nranks) return HCOMM_E_PARA;
  TopoRecord r;
  if (!comm->ctx->topo || !comm->ctx->topo->record(comm->ctx, global_rank(comm, rank), &r)) return HCOMM_E_NOT_FOUND;
  std::memset(out, 0, sizeof(*out));
  out->rank = r.rank;
  out->server = r.server;
  out->device_id = r.device_id;
  out->host_ip = r.host_ip;
  out->pcie_peers = r.pcie_peers;
  out->nic_known = r.nic_known;
  out->nic_present = r.nic_present;
  out->nic_up = r.nic_up;
  out->nic_ip = r.nic_ip;
  out->nic_speed_bps = r.nic_speed_bps;
  out->nports = r.nports;
  std::snprintf(out->nic_neighbor, sizeof(out->nic_neighbor), "%s", r.nic_neighbor.c_str());
  out->nic_neighbor_port = r.nic_neighbor_port;
  for (std::uint32_t i = 0; i < r.nports && i < 8; ++i) {
    out->ports[i].port = r.ports[i].port;
    out->ports[i].up = r.ports[i].up;
    out->ports[i].lanes = r.ports[i].lanes;
    out->ports[i].partner_device_id = r.ports[i].partner_device_id;
    out->ports[i].partner_server = r.ports[i].partner_server;
    out->ports[i].bandwidth_Bps = r.ports[i].bandwidth_Bps;
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_get_discovery_error(hcomm_context_t ctx, const char** msg) {
  if (!live(ctx, kCtx)) return HCOMM_E_UNAVAIL;
  if (!msg) return HCOMM_E_PTR;
  *msg = ctx->discovery_error.c_str();
  return HCOMM_SUCCESS;
}

}  // extern "C"
