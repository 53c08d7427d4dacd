// The hosts' kernel sockets over the front-end network (docs/models/host-network.md): the
// /host_network of the topology (one NIC per server, one switch) that protocol TCP's
// point-to-point goes over. A socket operation is queued on a stream as a Marker and a NotifyWait
// on a driver key: when the stream reaches the marker the operation runs here, and its end records
// that notify, so the stream goes on in order. Timed actions run in one method process, earliest first.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "hcomm/driver.h"
#include "models/machine.h"
#include "sim/config/topology.h"
#include "sim/driver/host_waits.h"

namespace sim {

class SimObserver;

class HostSockets {
 public:
  /// A marker key of this room: bit 63 set (the library's keys never have it).
  static bool owns_marker(std::uint64_t key) { return key >> 63; }
  /// `runtime` queues the operation's marker and wait on the stream.
  HostSockets(models::Machine& m, const Topology& t, const RankMap& ranks, hcomm::DeviceRuntime& runtime, SimObserver& obs)
      : m_(m), topo_(t), ranks_(ranks), runtime_(runtime), obs_(obs) {}
  hcomm::DrvStatus host_socket(std::uint32_t stream, const hcomm::HostSocketOp& op);
  /// NPU `npu`'s stream reached marker `key` (owns_marker(key)).
  void on_marker(std::uint32_t npu, std::uint64_t key);
  std::uint64_t messages() const { return msgs_; }  ///< messages sent
  std::uint64_t bytes() const { return bytes_; }     ///< their bytes

 private:
  using ConnKey = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>;  // (from, to, conn)
  struct Op { hcomm::HostSocketOp op; std::uint32_t npu = 0; std::uint64_t notify = 0; models::Tick posted = 0; };
  struct Msg { models::Tick arrival = 0; std::shared_ptr<std::vector<std::uint8_t>> data; };
  struct Conn { std::deque<Msg> arrived; std::deque<Op> recvs; };
  struct Action {
    models::Tick at = 0;
    std::uint64_t seq = 0;
    int kind = 0;  // 0: record `notify` on `npu`; 1: a message arrives on `conn`; 2: a recv() ends (write, then record)
    std::uint32_t npu = 0;
    std::uint64_t notify = 0;
    ConnKey conn{};
    Msg msg;
    hcomm::HostSocketOp op;
    bool operator>(const Action& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void push(Action a);
  void run();
  void match(const ConnKey& key, models::Tick now);
  bool copy_in(std::uint32_t npu, std::uint64_t addr, void* dst, std::uint64_t n);
  bool copy_out(std::uint32_t npu, std::uint64_t addr, const void* src, std::uint64_t n);
  models::Machine& m_;
  const Topology& topo_;
  const RankMap& ranks_;
  hcomm::DeviceRuntime& runtime_;
  SimObserver& obs_;
  std::unordered_map<std::uint64_t, Op> ops_;  // marker key -> the operation
  std::map<ConnKey, Conn> conn_;
  std::vector<Action> heap_;
  std::vector<models::Tick> send_free_, recv_free_;  // per rank: its stack's send / receive side busy until
  std::vector<models::Tick> tx_free_, rx_free_;      // per server: its NIC's two directions busy until
  std::unique_ptr<sc_core::sc_event> wake_;
  bool spawned_ = false;
  std::uint64_t seq_ = 0, next_ = 0, msgs_ = 0, bytes_ = 0;
};

}  // namespace sim
