// One direction of a link (docs/models/links.md): analytic "busy until T" timing, lane degrade,
// credit-limited rate, CRC replay of link-layer frames. Pure functions of the port's state; the
// SDMA engine (models/npu) reserves ports piece by piece.
#pragma once
#include <cstdint>
#include <string>

#include "models/link/link_params.h"
#include "models/time.h"

namespace models {

struct Port {
  LinkKind kind = LinkKind::Hccs;
  std::uint32_t link = 0;        ///< index of the (bidirectional) link this port belongs to
  std::uint32_t from = 0, to = 0;  ///< NPU indices; for PCIe the host side is kHost
  LinkParams p;
  bool up = true;
  std::uint32_t active_lanes = 8;
  Tick busy_until = 0;
  std::uint64_t bytes = 0, pieces = 0;
  Tick busy_ps = 0;
  std::uint64_t frames = 0;
  std::uint64_t rx_retry = 0;     ///< frames replayed after a CRC error (hccs_rx_retry_cnt)
  Tick retry_ps = 0;              ///< link time lost to replays
  Tick credit_stall_ps = 0;       ///< time the sender waited for credits (pcie_flow_ctrl on PCIe)
  std::uint64_t rng = 0x853c49e6748fea9bULL;
  /// Current data rate: lanes and credits (buffer / round trip) permitting.
  std::uint64_t rate() const;
};

struct LinkInfo {
  LinkKind kind;
  std::uint32_t a, b;          ///< endpoints (NPU index, or kHost for a host PCIe link)
  std::uint32_t port_ab, port_ba;
  std::string name;
};

/// A piece of `len` bytes sent at `bw` over port `p`: counts its link-layer frames and replays
/// the frames that fail their CRC (each costs a round trip plus the frame again). Returns the
/// link time lost to replays.
Tick replay_frames(Port& p, std::uint64_t len, std::uint64_t bw);
/// Accrue the time the credit limit adds over the lanes' rate when `bw` is the credit rate.
void note_credit_stall(Port& p, std::uint64_t len, std::uint64_t bw);

}  // namespace models
