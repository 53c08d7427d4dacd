// Link port timing (docs/models/links.md): rate from lanes and credits, CRC replay, credit stalls.
#include "models/link/port.h"

#include <algorithm>
#include <cmath>

namespace models {

const char* link_kind_name(LinkKind k) { return k == LinkKind::Hccs ? "hccs" : k == LinkKind::Pcie ? "pcie" : "hbm"; }

std::uint64_t Port::rate() const {
  const std::uint32_t lanes = p.lanes ? p.lanes : 1;
  std::uint64_t r = p.bandwidth_Bps / lanes * active_lanes;
  // Credit-based flow control: at most rx_buffer_bytes in flight per round trip.
  if (p.rx_buffer_bytes && p.latency_ps) {
    unsigned __int128 credit = static_cast<unsigned __int128>(p.rx_buffer_bytes) * kPsPerSec / (2 * p.latency_ps);
    if (credit < r) r = static_cast<std::uint64_t>(credit);
  }
  return r;
}

Tick replay_frames(Port& p, std::uint64_t len, std::uint64_t bw) {
  // Frames failing their CRC are replayed: each costs a round trip plus the frame again.
  Tick lost = 0;
  const std::uint64_t fb = p.p.frame_bytes ? p.p.frame_bytes : len;
  const std::uint64_t frames = (len + fb - 1) / fb;
  p.frames += frames;
  if (p.p.crc_error_rate > 0) {
    const double lq = std::log1p(-std::min(p.p.crc_error_rate, 0.999999));
    std::uint64_t pos = 0, errors = 0;
    for (;;) {  // geometric gaps between errors
      p.rng ^= p.rng << 13; p.rng ^= p.rng >> 7; p.rng ^= p.rng << 17;
      double u = (static_cast<double>(p.rng >> 11) + 0.5) / 9007199254740992.0;
      pos += static_cast<std::uint64_t>(std::floor(std::log(u) / lq)) + 1;
      if (pos > frames) break;
      ++errors;
    }
    if (errors) {
      lost = errors * (2 * p.p.latency_ps + serialization_ps(fb, bw));
      p.rx_retry += errors;
      p.retry_ps += lost;
    }
  }
  return lost;
}

void note_credit_stall(Port& p, std::uint64_t len, std::uint64_t bw) {
  // Credit stalls: the time the credit limit adds over the lanes' rate.
  const std::uint64_t lane_rate = p.p.bandwidth_Bps / (p.p.lanes ? p.p.lanes : 1) * p.active_lanes;
  if (bw < lane_rate && bw == p.rate()) p.credit_stall_ps += serialization_ps(len, bw) - serialization_ps(len, lane_rate);
}

}  // namespace models
