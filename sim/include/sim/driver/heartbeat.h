// The hosts' heartbeat agents (docs/failover.md#heartbeat-with-neighbours). HCCL runs a heartbeat
// thread per process beside the application; here the agents of all ranks are one SystemC method
// process, woken at each agent's period. At each tick an agent sends a heartbeat (kBytes) to each
// of its neighbours over the control channel and checks its neighbours: one from which no
// heartbeat arrived for miss x period is LOST. Its host then gets a PeerLost device event at once
// and every rank of its notify set gets a notice (a control message of kBytes), raised as PeerLost
// on that rank's device when it arrives. A crashed rank's agent stops sending and its host's kernel
// closes its connections; an exited rank's agent stops and its neighbours stop watching it.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <systemc>

#include "hcomm/driver.h"
#include "sim/driver/ctrl_channel.h"
#include "sim/driver/device_events.h"

namespace sim {

class HeartbeatAgents {
 public:
  static constexpr std::uint64_t kBytes = 64;  ///< one heartbeat, LOST notice or close on the control channel
  HeartbeatAgents(const RankMap& ranks, CtrlChannel& ctrl, DeviceEvents& events, SimObserver& obs)
      : ranks_(ranks), ctrl_(ctrl), events_(events), obs_(obs) {}
  /// Start (or change, or with no neighbours stop) `rank`'s agent.
  hcomm::DrvStatus register_agent(std::uint32_t rank, const hcomm::HeartbeatSpec& spec);
  /// The rank's process died (rank_crash): its agent stops sending, and its host's kernel closes
  /// the process's control-channel connections (docs/failover.md#rank-loss): unless set off, every
  /// other live rank's host sees its connection close (a PeerLost event, reporter = the lost rank)
  /// one control message after the crash, and a receive from it fails from then on.
  void rank_crashed(std::uint32_t rank);
  void set_close_notice(bool on) { close_notice_ = on; }
  /// The rank's program ended: its agent stops and its neighbours stop watching it (the process
  /// closed its connections: not a loss).
  void rank_exited(std::uint32_t rank);
  std::uint64_t sent() const { return sent_; }
  std::uint64_t lost() const { return lost_; }  ///< LOST declarations (agents' own detections)

 private:
  struct Agent {
    bool on = false;
    std::uint64_t gen = 0;
    models::Tick period_ps = 0, base = 0;
    models::Tick first_reg = ~models::Tick{0};  // its first registration (the connections to its neighbours exist from then)
    std::uint32_t miss = 3;
    std::vector<std::uint32_t> nb;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> notify;
    std::vector<std::uint32_t> lost_known;  // sorted
  };
  struct Pair { std::deque<models::Tick> flight; models::Tick last = 0; };
  struct Tick {
    models::Tick at;
    std::uint32_t rank;
    std::uint64_t gen;
    bool operator>(const Tick& o) const { return at != o.at ? at > o.at : rank > o.rank; }
  };
  void run();
  void tick(std::uint32_t rank, models::Tick now);
  void declare(std::uint32_t m, std::uint32_t r, models::Tick last, models::Tick now);
  void arm();
  const RankMap& ranks_;
  CtrlChannel& ctrl_;
  DeviceEvents& events_;
  SimObserver& obs_;
  bool close_notice_ = true;
  std::vector<Agent> agents_;
  std::vector<std::uint8_t> state_;  // 0 alive, 1 crashed, 2 exited
  std::unordered_map<std::uint64_t, Pair> pair_;
  std::unordered_set<std::uint64_t> closed_;  // (from, to): `from` no longer heartbeats `to` (deregistered)
  std::vector<Tick> heap_;
  std::unique_ptr<sc_core::sc_event> wake_;
  bool spawned_ = false;
  std::uint64_t sent_ = 0, lost_ = 0;
};

}  // namespace sim
