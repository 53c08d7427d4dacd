// HCCS through a relay NPU (docs/routing.md#relay): traffic between two NPUs of a server that
// have neither an HCCS link nor PCIe peer-to-peer goes a -> k -> b over two real HCCS hops,
// staged in the relay's work area (hcomm_context_s::relay_addr, reserved by the relay's own
// context) in slices of kRelaySliceBytes, two slots per channel, so that hop 2 of slice i
// overlaps hop 1 of slice i+1. A channel is one origin stream's traffic to one peer: two streams
// this rank created on the relay's device (hop 1, which also forwards notifies, and hop 2),
// synchronised with notify record/wait only. The origin stream waits for a transfer to land (as
// for a direct SDMA copy); a notify goes after every transfer posted before it on that stream.
#pragma once
#include <cstdint>

#include "core/objects.h"

namespace hcomm::detail::relay {

/// Copy (reduce: dst = dst op src) `bytes` from my `src` into `dst` in the peer's HBM through the relay of `r`.
/// A borrowed NIC (r.borrow, docs/failover.md#nic-borrowing) is the same channel whose hop 2 is an
/// RDMA write from the lender's NIC (region `rkey`; no reduce).
hcomm_result_t write(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, std::uint64_t dst,
                     std::uint64_t src, std::uint64_t bytes, bool reduce, int dtype, int op, std::uint32_t rkey = 0);
/// Copy `bytes` from `src` in the peer's HBM into my `dst` through the relay of `r`.
hcomm_result_t read(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, std::uint64_t dst,
                    std::uint64_t src, std::uint64_t bytes);
/// Record notify `key` on the peer's device through the relay (after this stream's earlier transfers to it).
hcomm_result_t notify(hcomm_stream_t s, hcomm_comm_t comm, const PeerRoute& r, const RankDesc& peer, std::uint64_t key);

/// Let go of every relay channel this rank drives (an op retry's later round, after every member
/// stopped its device): hop streams destroyed, numbers and staging areas free, key sequences
/// kept; made anew at the next transfer. The channels are transport's: only this room writes them.
void drop_channels(hcomm_context_t ctx);
}  // namespace hcomm::detail::relay
