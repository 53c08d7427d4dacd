// Topology discovery (docs/discovery.md): what each rank probes locally (a fixed-size record),
// the bootstrap that exchanges the records, and the view the transports and hcomm_get_topology
// read. Per-rank state lives in the context (ctx->topo); the table of records is one immutable
// message shared by reference once delivered (its delivery cost is simulated per receiver).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/objects.h"

namespace hcomm::detail {

constexpr std::uint32_t kTopoPorts = 8;  ///< cabled HCCS ports a record keeps (A2: 7, Atlas 800: 3)

/// One rank's probe, decoded.
struct TopoPort {
  std::uint8_t port = 0, up = 0, lanes = 0;
  std::uint32_t partner_device_id = 0, partner_server = 0;
  std::uint64_t bandwidth_Bps = 0;
};
struct TopoRecord {
  std::uint32_t rank = 0, server = 0, device_id = 0, host_ip = 0, device = 0;
  std::uint32_t pcie_peers = 0;                  ///< bit i: PCIe p2p to device id i of the server
  bool nic_known = false, nic_present = false, nic_up = false;
  std::uint32_t nic_ip = 0;
  std::uint64_t nic_speed_bps = 0;
  std::uint32_t nports = 0;
  TopoPort ports[kTopoPorts];
  std::string nic_neighbor;         ///< LLDP neighbour switch (own record only: not carried by the bootstrap)
  std::uint32_t nic_neighbor_port = 0;
};

/// The encoded record: 40 bytes of header + 8 ports x 12 bytes, little endian (docs/discovery.md).
constexpr std::size_t kRecordBytes = 40 + kTopoPorts * 12;
void encode_record(const TopoRecord& r, std::uint8_t* out);
TopoRecord decode_record(const std::uint8_t* in);

/// Control messages: a 12-byte header (type, count, missing rank) and `count` records.
enum : std::uint32_t { kMsgRecords = 1, kMsgTable = 2, kMsgAbort = 3, kMsgAck = 4, kMsgGo = 5 };
constexpr std::size_t kMsgHeader = 12;
constexpr std::uint32_t kNoRank = ~0u;

/// A context's discovered topology.
struct Topo {
  std::uint32_t rank = 0, nranks = 0;
  bool exchanged = false;  ///< false: the driver has no control channel; peers' facts from descriptors only
  TopoRecord mine;
  CtrlMsg table;           ///< kMsgTable: record of rank r at kMsgHeader + r * kRecordBytes
  /// "" or why this rank's server is not an SDMA mesh (a pair of its ranks without HCCS or PCIe):
  /// collectives are refused on it (docs/discovery.md#degrade-refuse).
  std::string server_not_mesh;
  /// The pairs of my server with neither HCCS nor PCIe at discovery and the relay NPU each goes
  /// through (docs/routing.md#relay): world ranks a < b, relay k, the path's bottleneck rate.
  struct RelayPair { std::uint32_t a = 0, b = 0, k = 0; std::uint64_t Bps = 0; };
  std::vector<RelayPair> relays;
  /// Rank r's record; without the exchange, only the descriptor's part for another rank.
  bool record(hcomm_context_t ctx, std::uint32_t r, TopoRecord* out) const;
};

/// Re-read the device's HCCS port status registers into `r` (its ports as they are now).
hcomm_result_t probe_hccs_ports(hcomm_context_t ctx, TopoRecord* r);
/// Probe the context's device: HCCS ports, PCIe peers, NIC (through driver_port only).
hcomm_result_t probe_local(hcomm_context_t ctx, const RankDesc& me, TopoRecord* out);
/// Exchange the records of `nranks` ranks (a root per server, the global root rank 0) and fill
/// `out`. A rank that never joins: HCOMM_E_TIMEOUT, the error naming it (ctx->discovery_error).
hcomm_result_t bootstrap(hcomm_context_t ctx, std::uint32_t rank, std::uint32_t nranks, const TopoRecord& mine,
                         std::uint64_t timeout_ns, Topo* out);
/// Discover once per context (the first communicator's init); later calls reuse it.
hcomm_result_t discover(hcomm_context_t ctx, std::uint32_t rank, std::uint32_t nranks, const RankDesc& me);

/// The link the library uses between world ranks a and b as discovery sees it, the set of
/// available ones (hcomm_link_type_t bits), bandwidth and latency.
struct LinkFacts {
  PairLink use = PairLink::None;
  std::uint32_t types = 0;
  std::uint64_t bandwidth_Bps = 0, latency_ns = 0;
};
bool link_facts(hcomm_context_t ctx, std::uint32_t a, std::uint32_t b, LinkFacts* out);
/// The link the library uses from the communicator's rank to `peer` (None when discovery has no record).
PairLink discovered_link(hcomm_comm_t comm, const RankDesc& peer);
/// The relay NPU for traffic between world ranks `a` (the caller's) and `b` of one server without
/// HCCS or PCIe between them (docs/routing.md#relay): the server rank k with HCCS links up to
/// both, largest bottleneck rate first, then fewest pairs already relayed through k, then lowest
/// rank. Discovery's choice when it still holds (the caller's own link to k re-read), else chosen
/// now. `dead`: HCCS links known to be down besides the caller's own (world-rank pairs, e.g. the
/// ones an op retry's agreement merged from every member's ports): no hop may use one. False: no
/// relay exists.
bool relay_for(hcomm_context_t ctx, std::uint32_t a, std::uint32_t b, std::uint32_t* k, std::uint64_t* Bps,
               const std::vector<std::pair<std::uint32_t, std::uint32_t>>* dead = nullptr);

// Nominal figures where nothing is probed (docs/discovery.md#costs): assumptions.
constexpr std::uint64_t kHccsLatencyNs = 500, kPcieLatencyNs = 2500, kRoceLatencyNs = 3000;
constexpr std::uint64_t kPcieNominalBps = 32ULL * 1000 * 1000 * 1000;  // Gen4 x16
constexpr std::uint64_t kRoceNominalBps = 25ULL * 1000 * 1000 * 1000;  // 200GE

}  // namespace hcomm::detail
