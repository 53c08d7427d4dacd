// The NPUs' SDMA engines (docs/models/npu.md): copies and reduce-copies (local, over HCCS or
// through a PCIe switch) and host DMA (paths and landing in HostDma), cut into pieces; each piece
// reserves its SDMA channel and every port of its path ("busy until T"). SdmaEngines owns the
// transfers in flight and every NPU's channel occupancy.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/event_queue.h"
#include "models/npu/task_host.h"

#include "models/npu/task.h"
#include "models/time.h"

namespace models {

class HostDma;
class Links;
class NpuDevices;

/// One SDMA transfer in flight.
struct Transfer {
  std::uint32_t stream = 0;
  Task task;
  std::uint64_t done = 0;           // bytes reserved so far
  std::uint64_t bw = 0;
  Tick latency = 0;                 // path latency after the last byte leaves
  Tick earliest = 0;                // first byte may not leave before (SDMA setup)
  std::uint32_t engine = 0, npu = 0;
  int port = -1;                    // link port used, -1 for local
  int port2 = -1;                   // second hop (PCIe peer-to-peer through a switch; root complex)
  int port3 = -1;                   // third hop (host DMA through a PCIe switch and the root complex)
  int hbm_src = -1, hbm_dst = -1;   // HBM ports read and written (the same port twice for a local copy)
  std::uint64_t epoch = 0;          // the stream's epoch when the transfer started
  std::uint32_t inflight = 0;       // piece arrivals scheduled and not yet processed
  bool sending = false;             // a kPieceSent event is scheduled
  bool aborted = false;             // the stream failed or a link died: no more bytes move
};

class SdmaEngines final : public EventHandler {
 public:
  SdmaEngines(Scheduler& sch, TaskHost& streams, NpuDevices& devs, Links& links, HostDma& host, std::uint64_t piece_bytes)
      : sch_(sch), streams_(streams), devs_(devs), links_(links), host_(host), piece_bytes_(piece_bytes) {}
  /// The next NPU, with `channels` SDMA channels.
  void add_npu(std::uint32_t channels) { busy_.emplace_back(channels, 0); }
  std::uint64_t piece_bytes() const { return piece_bytes_; }
  std::uint64_t pieces() const { return pieces_; }
  /// A copy, reduce-copy or host DMA task at the head of stream s starts.
  void start(std::uint32_t s, const Task& t);

  void on_event(std::uint64_t a, std::uint64_t b) override;
  void prefetch(std::uint64_t a, std::uint64_t b) override;

 private:
  enum Ev : std::uint64_t { kPieceSent = 1, kPieceArrive };
  static constexpr std::uint64_t ev(std::uint64_t type, std::uint64_t id) { return type | (id << 8); }
  void send_piece(std::uint32_t xfer);
  void arrive_piece(std::uint32_t xfer, std::uint64_t off);
  std::uint32_t alloc_xfer();
  /// An aborted transfer's slot is reused only once none of its events is pending.
  void abort_transfer(std::uint32_t xfer);
  /// Abort the transfer and fail its stream.
  void fail(std::uint32_t xfer, const std::string& why);

  Scheduler& sch_;
  TaskHost& streams_;
  NpuDevices& devs_;
  Links& links_;
  HostDma& host_;
  std::uint64_t piece_bytes_;
  std::vector<Transfer> xfers_;
  std::vector<std::uint32_t> free_xfers_;
  std::vector<std::vector<Tick>> busy_;  // per NPU, per SDMA channel: busy until
  std::uint64_t pieces_ = 0;
};

}  // namespace models
