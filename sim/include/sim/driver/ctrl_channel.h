// The host control channel between the ranks' host processes (the bootstrap's TCP,
// docs/discovery.md#costs): ordinary messages in order per pair, urgent ones (ctrl_signal) in a
// queue of their own whose arrival interrupts the receiving host's waits (docs/failover.md), and
// the closes a crashed process's kernel sends (docs/failover.md#rank-loss).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "hcomm/driver.h"
#include "sim/driver/host_waits.h"

namespace sim {

class CtrlChannel {
 public:
  /// Each message costs latency + bytes / bandwidth, serialized on the sender's and on the
  /// receiver's host link. Assumptions (docs/discovery.md#costs): 10 us, 1.25 GB/s (10 GbE
  /// management network).
  struct Params {
    std::uint64_t latency_ps = 10ULL * 1000 * 1000;
    std::uint64_t bandwidth_Bps = 1250ULL * 1000 * 1000;
  };
  CtrlChannel(const RankMap& ranks, HostWaits& waits) : ranks_(ranks), waits_(waits) {}
  void set_params(const Params& p) { p_ = p; }
  const Params& params() const { return p_; }

  hcomm::DrvStatus send(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg);
  hcomm::DrvStatus recv(std::uint32_t to, std::uint32_t from, std::uint64_t timeout_ns, hcomm::CtrlMsg* msg);
  hcomm::DrvStatus signal(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg);
  hcomm::DrvStatus signal_poll(std::uint32_t to, std::uint32_t* from, hcomm::CtrlMsg* msg);

  /// A message of `bytes` from `from` to `to` sent now: its arrival (both host links move on).
  models::Tick arrival(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, models::Tick now);
  /// An urgent message timed by arrival() but delivered elsewhere (a heartbeat notice): counted.
  void count_signal() { ++sigs_; }
  /// Whether `rank`'s process has used the channel (has connections a crash would close).
  bool used(std::uint32_t rank) const { return rank < open_.size() && open_[rank]; }
  /// `from`'s connection to `to` is closed at `at` (its process died): a receive from it fails then.
  void close(std::uint32_t from, std::uint32_t to, models::Tick at);
  /// An urgent message to `rank` has arrived and is not taken.
  bool signal_pending(std::uint32_t rank) const;
  /// The earliest arrival after now of an urgent message to `rank` (~0: none).
  models::Tick next_signal(std::uint32_t rank) const;
  /// The events the arrivals of `rank`'s urgent / ordinary messages notify (made on first use).
  sc_core::sc_event& signals(std::uint32_t rank);
  sc_core::sc_event& messages(std::uint32_t rank);

  std::uint64_t messages_sent() const { return msgs_; }
  std::uint64_t bytes_received() const { return bytes_; }
  std::uint64_t signals_sent() const { return sigs_; }

 private:
  struct Entry { std::uint32_t from; models::Tick arrival; hcomm::CtrlMsg msg; };
  void size();  // the per-rank state covers every rank
  const RankMap& ranks_;
  HostWaits& waits_;
  Params p_;
  std::vector<std::deque<Entry>> box_, sig_box_;  // per receiving rank, in arrival order
  std::vector<models::Tick> tx_free_, rx_free_;
  std::vector<std::unique_ptr<sc_core::sc_event>> ev_, sig_ev_;
  std::vector<bool> open_;
  std::unordered_map<std::uint64_t, models::Tick> closed_;  // (from << 32 | to) -> when `to` sees `from`'s close
  std::uint64_t msgs_ = 0, bytes_ = 0, sigs_ = 0;
};

}  // namespace sim
