// Transport choice (docs/architecture.md#hcomm, docs/algorithms/README.md): SDMA copies and
// notify records when discovery (docs/discovery.md) found an HCCS link or a PCIe peer-to-peer path
// to the peer, else RoCE (RdmaWrite tasks through the NPU's NIC: data, then an ordered notify write).
#pragma once
#include <cstdint>

#include "core/objects.h"

namespace hcomm::detail {
/// True when the peer is reached by SDMA (discovery's choice, cached per peer).
bool via_sdma(hcomm_comm_t comm, const RankDesc& peer);
/// "p2p-hccs", "p2p-hccs-relay", "p2p-pcie" or "p2p-roce": the algorithm name a p2p operation reports.
const char* p2p_link_name(hcomm_comm_t comm, const RankDesc& peer);
/// SDMA write into the peer's HBM (reduce: dst = dst op src), directly or through an HCCS relay
/// (transport/relay.h); the stream continues once the bytes have landed. Peer must be via_sdma.
hcomm_result_t sdma_write(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                          std::uint64_t bytes, bool reduce, int dtype, int op);
/// SDMA read from the peer's HBM into mine, directly or through an HCCS relay.
hcomm_result_t sdma_read(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                         std::uint64_t bytes);
/// Notify `key` on the peer's device over whichever transport reaches it.
hcomm_result_t remote_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t key);
/// Write bytes to the peer (dst is an address in its HBM, in the region of `rkey`), then notify `key` there.
hcomm_result_t put_notify(hcomm_stream_t s, hcomm_comm_t comm, const RankDesc& peer, std::uint64_t dst, std::uint64_t src,
                          std::uint64_t bytes, std::uint64_t key, std::uint32_t rkey, QpSlice qs = {});
/// Whether a data write put_notify posted since the last call ended at its doorbell (the
/// operation must fence before it ends, docs/algorithms/README.md#the-executor); clears it.
/// The flag is the transport's: only this room writes it.
bool take_unfenced_writes(hcomm_comm_t comm);
}  // namespace hcomm::detail
