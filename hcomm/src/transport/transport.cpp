// Transport choice and put-with-notify (docs/architecture.md#hcomm).
#include "transport/transport.h"

#include "driver_port.h"
#include "route/route.h"
#include "transport/relay.h"
#include "transport/tasks.h"

namespace hcomm::detail {

namespace {
// Writes into a lender's NIC (docs/failover.md#nic-borrowing): its port then takes its own rail
// peer's writes and the borrowed ones; unstriped (one QP each) so that DCQCN has two flows to
// settle rather than 2 x num_qp (the chunk tier's 2:1 incast with 8 QPs each ran 5x slower).
RdmaPolicy policy_to(hcomm_comm_t comm, const RankDesc& peer, const PeerRoute& r) {
  RdmaPolicy p = route::rdma_policy(comm);
  if (comm->rec.nic_lender.empty()) return p;
  bool lender = r.via_device != ~0u;
  for (const auto& [dead, l] : comm->rec.nic_lender) lender = lender || l == peer.rank;
  if (lender) p.qp_count = 1;
  return p;
}
}  // namespace

// The link to a peer: route/ decides it at first use from discovery's facts (discovery/view.cpp:
// HCCS partner on an up port, PCIe peer-to-peer in the server, RoCE).
bool via_sdma(hcomm_comm_t comm, const RankDesc& peer) {
  const PairLink l = route::to(comm, peer).link;
  return l == PairLink::Hccs || l == PairLink::Pcie;
}

const char* p2p_link_name(hcomm_comm_t comm, const RankDesc& peer) {
  const PeerRoute& r = route::to(comm, peer);
  switch (r.link) {
    case PairLink::Hccs: return r.relay_device != ~0u ? "p2p-hccs-relay" : "p2p-hccs";
    case PairLink::Pcie: return "p2p-pcie";
    default: return "p2p-roce";
  }
}

hcomm_result_t sdma_write(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                          std::uint64_t bytes, bool reduce, int dtype, int op) {
  const PeerRoute& r = route::to(comm, peer);
  if (r.relay_device != ~0u) return relay::write(s, comm, r, peer, dst, src, bytes, reduce, dtype, op);
  if (!bytes) return HCOMM_SUCCESS;
  return reduce ? reduce_copy(s, dst, src, bytes, dtype, op) : copy(s, dst, src, bytes);
}

hcomm_result_t sdma_read(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                         std::uint64_t bytes) {
  const PeerRoute& r = route::to(comm, peer);
  if (r.relay_device != ~0u) return relay::read(s, comm, r, peer, dst, src, bytes);
  return bytes ? copy(s, dst, src, bytes) : HCOMM_SUCCESS;
}

hcomm_result_t remote_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t key) {
  // A notify alone carries no data: a peer that needs path probes is not probed for it (route.h).
  // A dead NIC at either end: borrowed (docs/failover.md#nic-borrowing).
  const PeerRoute& r = route::to_control(comm, peer);
  if (r.link == PairLink::Hccs || r.link == PairLink::Pcie)
    return r.relay_device != ~0u ? relay::notify(s, comm, r, peer, key) : notify_record(s, peer.device, key);
  if (comm->cfg.protocol != HCOMM_PROTOCOL_RDMA) return HCOMM_E_NOT_SUPPORT;  // SHM, TCP: no device RDMA
  if (r.borrow) return relay::notify(s, comm, r, peer, key);
  return rdma_write(s, peer.device, 0, 0, 0, true, key, 0, policy_to(comm, peer, r), r.via_device);
}

hcomm_result_t put_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                          std::uint64_t bytes, std::uint64_t key, std::uint32_t rkey, QpSlice qs) {
  if (via_sdma(comm, peer)) {
    if (hcomm_result_t rc = sdma_write(s, comm, peer, dst, src, bytes, false, 0, 0); rc != HCOMM_SUCCESS) return rc;
    return remote_notify(s, comm, peer, key);
  }
  if (comm->cfg.protocol != HCOMM_PROTOCOL_RDMA) return HCOMM_E_NOT_SUPPORT;  // SHM, TCP: no device RDMA
  const PeerRoute& r = route::to(comm, peer);
  if (r.borrow) {  // my NIC is down: HCCS into the lender's staging, RDMA from its NIC, then the notify
    if (hcomm_result_t rc = relay::write(s, comm, r, peer, dst, src, bytes, false, 0, 0, rkey); rc != HCOMM_SUCCESS) return rc;
    return relay::notify(s, comm, r, peer, key);
  }
  if (bytes) comm->rdma_unfenced = true;  // the op's end fences it (take_unfenced_writes)
  return rdma_write(s, peer.device, dst, src, bytes, true, key, rkey, policy_to(comm, peer, r), r.via_device, false, qs);
}

bool take_unfenced_writes(hcomm_comm_t comm) {
  const bool was = comm->rdma_unfenced;
  comm->rdma_unfenced = false;
  return was;
}

}  // namespace hcomm::detail
