// The hosts' kernel sockets (sim/driver/host_sockets.h; docs/models/host-network.md).
//
// Costs (docs/models/host-network.md has the closed forms), B bytes:
//   send(): send_cost, then the copy into the kernel, B / copy_bandwidth; the stream goes on then;
//   the wire: the bytes leave as they are copied, B / NIC on the sender's NIC (not before the copy
//   ends), then latency; another server's NIC takes B / its NIC too, overlapped; the same server:
//   loopback, no NIC, no latency;
//   recv(): copies as the bytes arrive once the receive was reached (B / copy_bandwidth, not
//   before the last byte is there), then recv_cost.
// Each rank's send side and receive side, and each server NIC's two directions, serve one
// message at a time (busy-until times, as the control channel's host links, driver_ctrl.cpp).
#include <algorithm>
#include <cstring>

#include "sim/driver/host_sockets.h"
#include "sim/driver/observer.h"

namespace sim {

using hcomm::DrvStatus;

namespace {
constexpr std::uint64_t kMarkerBit = 1ULL << 63;
// Driver notify keys: hcomm's key layout (comm 8 bits, purpose 6 bits at 50) with purpose 63,
// which the library never uses (transport/notify_keys.h).
constexpr std::uint64_t kNotifyBase = 63ULL << 50;
constexpr std::uint64_t kNotifyMask = (1ULL << 50) - 1;

models::Tick bytes_ps(std::uint64_t bytes, std::uint64_t Bps) {
  return static_cast<models::Tick>(static_cast<unsigned __int128>(bytes) * models::kPsPerSec / (Bps ? Bps : 1));
}
}  // namespace

DrvStatus HostSockets::host_socket(std::uint32_t s, const hcomm::HostSocketOp& op) {
  const std::uint32_t n = ranks_.count();
  if (!m_.stream_valid(s) || op.rank >= n || op.peer >= n || op.rank == op.peer || (op.bytes && !op.host_addr))
    return DrvStatus::Invalid;
  const std::uint32_t npu = m_.stream_npu(s);
  if (ranks_.rank_of(npu) != op.rank) return DrvStatus::Invalid;  // the stream's own rank
  if (send_free_.size() < n) { send_free_.resize(n, 0); recv_free_.resize(n, 0); }
  if (tx_free_.size() < topo_.servers.size()) { tx_free_.resize(topo_.servers.size(), 0); rx_free_.resize(topo_.servers.size(), 0); }
  if (!wake_) wake_ = std::make_unique<sc_core::sc_event>();
  if (!spawned_) {
    spawned_ = true;
    spawn_method_on(*wake_, "host_network", [this] { run(); });
  }
  const std::uint64_t id = ++next_;
  Op h;
  h.op = op;
  h.npu = npu;
  h.notify = kNotifyBase | (id & kNotifyMask);
  ops_[kMarkerBit | id] = h;
  hcomm::DrvTask mk;
  mk.kind = hcomm::DrvTaskKind::Marker;
  mk.key = kMarkerBit | id;
  hcomm::DrvTask wait;
  wait.kind = hcomm::DrvTaskKind::NotifyWait;
  wait.key = h.notify;
  DrvStatus st = runtime_.submit(s, mk);
  if (st == DrvStatus::Ok) st = runtime_.submit(s, wait);
  if (st != DrvStatus::Ok) ops_.erase(kMarkerBit | id);
  return st;
}

bool HostSockets::copy_in(std::uint32_t npu, std::uint64_t addr, void* dst, std::uint64_t n) {
  if (!n) return true;
  if (models::HostMemory* hm = m_.host_memory(npu)) return hm->read(addr, dst, n);
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(addr)), n);
  return true;
}

bool HostSockets::copy_out(std::uint32_t npu, std::uint64_t addr, const void* src, std::uint64_t n) {
  if (!n) return true;
  if (models::HostMemory* hm = m_.host_memory(npu)) return hm->write(addr, src, n);
  std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr)), src, n);
  return true;
}

void HostSockets::push(Action a) {
  a.seq = ++seq_;
  heap_.push_back(std::move(a));
  std::push_heap(heap_.begin(), heap_.end(), std::greater<Action>());
  const models::Tick now = now_ps();
  const models::Tick at = heap_.front().at;
  wake_at(*wake_, at > now ? at : now);
}

// The stream reached a socket operation's marker.
void HostSockets::on_marker(std::uint32_t npu, std::uint64_t key) {
  auto it = ops_.find(key);
  if (it == ops_.end()) return;
  Op h = it->second;
  ops_.erase(it);
  const HostNetwork& net = topo_.host_network;
  const models::Tick now = now_ps();
  const hcomm::HostSocketOp& op = h.op;
  if (!op.send) {  // a receive: waits for its message on the connection
    h.posted = now;
    const auto conn = std::make_tuple(op.peer, op.rank, op.conn);
    conn_[conn].recvs.push_back(h);
    match(conn, now);
    return;
  }
  // send(): the bytes are taken now (the buffer is the library's until the stream goes on); the
  // stack copies them into the kernel after its per-call cost, and they leave on the wire as they
  // are copied (at the slower of the copy and the NIC).
  auto data = std::make_shared<std::vector<std::uint8_t>>(op.bytes);
  if (!copy_in(npu, op.host_addr, data->data(), op.bytes))
    obs_.note(op.rank, 0, "[HCSIM_ERR] host network: rank " + std::to_string(op.rank) + "'s send buffer could not be read");
  const models::Tick start = std::max(now, send_free_[op.rank]);
  const models::Tick copy_begin = start + net.send_ps;
  const models::Tick sent = copy_begin + bytes_ps(op.bytes, net.copy_Bps);
  send_free_[op.rank] = sent;
  const std::uint32_t sa = topo_.npus[topo_.rank_to_npu[op.rank]].server, sb = topo_.npus[topo_.rank_to_npu[op.peer]].server;
  models::Tick first = copy_begin, arrival = sent;  // the same host: loopback, no NIC
  if (sa != sb) {
    const models::Tick wire_begin = std::max(copy_begin, tx_free_[sa]);
    const models::Tick tx_end = std::max(sent, wire_begin + bytes_ps(op.bytes, net.nic_of(sa)));
    tx_free_[sa] = tx_end;
    arrival = std::max(tx_end + net.latency_ps, rx_free_[sb] + bytes_ps(op.bytes, net.nic_of(sb)));
    rx_free_[sb] = arrival;
    first = wire_begin + net.latency_ps;
  }
  ++msgs_;
  bytes_ += op.bytes;
  Action done;
  done.at = sent;
  done.kind = 0;
  done.npu = npu;
  done.notify = h.notify;
  push(std::move(done));
  Action arrive;  // the first bytes reach the receiver's kernel: a recv() may start copying
  arrive.at = first;
  arrive.kind = 1;
  arrive.conn = std::make_tuple(op.rank, op.peer, op.conn);
  arrive.msg = Msg{arrival, std::move(data)};
  push(std::move(arrive));
}

// Pair the connection's arrived messages with its receives, in order: each recv() runs once both
// are there, after the rank's previous recv().
void HostSockets::match(const ConnKey& key, models::Tick now) {
  auto it = conn_.find(key);
  if (it == conn_.end()) return;
  Conn& c = it->second;
  const HostNetwork& net = topo_.host_network;
  while (!c.arrived.empty() && !c.recvs.empty()) {
    Msg m = std::move(c.arrived.front());
    c.arrived.pop_front();
    Op r = c.recvs.front();
    c.recvs.pop_front();
    const std::uint32_t to = r.op.rank;
    if (m.data->size() != r.op.bytes)
      obs_.note(to, 0, "[HCSIM_ERR] host network: rank " + std::to_string(to) + " received " + std::to_string(m.data->size()) +
                      " bytes from rank " + std::to_string(r.op.peer) + " on a receive of " + std::to_string(r.op.bytes) +
                      " (sizes must match on both sides)");
    // recv(): copies as the bytes come in (from their first arrival, `now` here, or from when the
    // receive was reached), ends no earlier than the last byte's arrival, then its per-call cost.
    const models::Tick start = std::max({now, r.posted, recv_free_[to]});
    const std::uint64_t n = std::min<std::uint64_t>(m.data->size(), r.op.bytes);
    const models::Tick end = std::max(m.arrival, start + bytes_ps(n, net.copy_Bps)) + net.recv_ps;
    recv_free_[to] = end;
    Action a;
    a.at = end;
    a.kind = 2;
    a.npu = r.npu;
    a.notify = r.notify;
    a.op = r.op;
    a.op.bytes = n;
    a.msg = std::move(m);
    push(std::move(a));
  }
  if (c.arrived.empty() && c.recvs.empty()) conn_.erase(it);
}

void HostSockets::run() {
  const models::Tick now = now_ps();
  while (!heap_.empty() && heap_.front().at <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<Action>());
    Action a = std::move(heap_.back());
    heap_.pop_back();
    switch (a.kind) {
      case 0: m_.host_notify(a.npu, a.notify); break;
      case 1: {
        conn_[a.conn].arrived.push_back(std::move(a.msg));
        match(a.conn, now);
        break;
      }
      default:
        if (!copy_out(a.npu, a.op.host_addr, a.msg.data->data(), a.op.bytes))
          obs_.note(a.op.rank, 0, "[HCSIM_ERR] host network: rank " + std::to_string(a.op.rank) + "'s receive buffer could not be written");
        m_.host_notify(a.npu, a.notify);
        break;
    }
  }
  if (!heap_.empty()) {
    const models::Tick at = heap_.front().at;
    wake_at(*wake_, at > now ? at : now);
  }
}

}  // namespace sim
