// The simulated driver's host network (docs/models/host-network.md): the hosts' kernel sockets
// over the front-end network (/host_network of the topology: one NIC per server, one switch) that
// protocol TCP's point-to-point goes over. A socket operation is queued on a stream as a Marker
// and a NotifyWait on a driver key: when the stream reaches the marker the operation runs here,
// and its end records that notify, so the stream goes on in order.
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

#include "sim/driver.h"

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

DrvStatus SimDriver::host_socket(std::uint32_t s, const hcomm::HostSocketOp& op) {
  const std::uint32_t n = rank_count();
  if (!m_.stream_valid(s) || op.rank >= n || op.peer >= n || op.rank == op.peer || (op.bytes && !op.host_addr))
    return DrvStatus::Invalid;
  const std::uint32_t npu = m_.stream_npu(s);
  if (npu >= npu_rank_.size() || npu_rank_[npu] != op.rank) return DrvStatus::Invalid;  // the stream's own rank
  if (hn_send_free_.size() < n) { hn_send_free_.resize(n, 0); hn_recv_free_.resize(n, 0); }
  if (hn_tx_free_.size() < topo_.servers.size()) { hn_tx_free_.resize(topo_.servers.size(), 0); hn_rx_free_.resize(topo_.servers.size(), 0); }
  if (!hn_wake_) hn_wake_ = std::make_unique<sc_core::sc_event>();
  if (!hn_spawned_) {
    hn_spawned_ = true;
    sc_core::sc_spawn_options o;
    o.spawn_method();
    o.set_sensitivity(hn_wake_.get());
    o.dont_initialize();
    sc_core::sc_spawn([this] { hn_run(); }, "host_network", &o);
  }
  const std::uint64_t id = ++hn_next_;
  HnOp h;
  h.op = op;
  h.npu = npu;
  h.notify = kNotifyBase | (id & kNotifyMask);
  hn_ops_[kMarkerBit | id] = h;
  hcomm::DrvTask mk;
  mk.kind = hcomm::DrvTaskKind::Marker;
  mk.key = kMarkerBit | id;
  hcomm::DrvTask wait;
  wait.kind = hcomm::DrvTaskKind::NotifyWait;
  wait.key = h.notify;
  DrvStatus st = submit(s, mk);
  if (st == DrvStatus::Ok) st = submit(s, wait);
  if (st != DrvStatus::Ok) hn_ops_.erase(kMarkerBit | id);
  return st;
}

bool SimDriver::hn_copy_in(std::uint32_t npu, std::uint64_t addr, void* dst, std::uint64_t n) {
  if (!n) return true;
  if (models::HostMemory* hm = m_.host_memory(npu)) return hm->read(addr, dst, n);
  std::memcpy(dst, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(addr)), n);
  return true;
}

bool SimDriver::hn_copy_out(std::uint32_t npu, std::uint64_t addr, const void* src, std::uint64_t n) {
  if (!n) return true;
  if (models::HostMemory* hm = m_.host_memory(npu)) return hm->write(addr, src, n);
  std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr)), src, n);
  return true;
}

void SimDriver::hn_push(HnAction a) {
  a.seq = ++hn_seq_;
  hn_heap_.push_back(std::move(a));
  std::push_heap(hn_heap_.begin(), hn_heap_.end(), std::greater<HnAction>());
  const models::Tick now = now_ps();
  const models::Tick at = hn_heap_.front().at;
  wake_at(*hn_wake_, at > now ? at : now);
}

// The stream reached a socket operation's marker.
void SimDriver::hn_marker(std::uint32_t npu, std::uint64_t key) {
  auto it = hn_ops_.find(key);
  if (it == hn_ops_.end()) return;
  HnOp h = it->second;
  hn_ops_.erase(it);
  const HostNetwork& net = topo_.host_network;
  const models::Tick now = now_ps();
  const hcomm::HostSocketOp& op = h.op;
  if (!op.send) {  // a receive: waits for its message on the connection
    h.posted = now;
    const auto conn = std::make_tuple(op.peer, op.rank, op.conn);
    hn_conn_[conn].recvs.push_back(h);
    hn_match(conn, now);
    return;
  }
  // send(): the bytes are taken now (the buffer is the library's until the stream goes on); the
  // stack copies them into the kernel after its per-call cost, and they leave on the wire as they
  // are copied (at the slower of the copy and the NIC).
  auto data = std::make_shared<std::vector<std::uint8_t>>(op.bytes);
  if (!hn_copy_in(npu, op.host_addr, data->data(), op.bytes))
    note(op.rank, 0, "[HCSIM_ERR] host network: rank " + std::to_string(op.rank) + "'s send buffer could not be read");
  const models::Tick start = std::max(now, hn_send_free_[op.rank]);
  const models::Tick copy_begin = start + net.send_ps;
  const models::Tick sent = copy_begin + bytes_ps(op.bytes, net.copy_Bps);
  hn_send_free_[op.rank] = sent;
  const std::uint32_t sa = topo_.npus[topo_.rank_to_npu[op.rank]].server, sb = topo_.npus[topo_.rank_to_npu[op.peer]].server;
  models::Tick first = copy_begin, arrival = sent;  // the same host: loopback, no NIC
  if (sa != sb) {
    const models::Tick wire_begin = std::max(copy_begin, hn_tx_free_[sa]);
    const models::Tick tx_end = std::max(sent, wire_begin + bytes_ps(op.bytes, net.nic_of(sa)));
    hn_tx_free_[sa] = tx_end;
    arrival = std::max(tx_end + net.latency_ps, hn_rx_free_[sb] + bytes_ps(op.bytes, net.nic_of(sb)));
    hn_rx_free_[sb] = arrival;
    first = wire_begin + net.latency_ps;
  }
  ++hn_msgs_;
  hn_bytes_ += op.bytes;
  HnAction done;
  done.at = sent;
  done.kind = 0;
  done.npu = npu;
  done.notify = h.notify;
  hn_push(std::move(done));
  HnAction arrive;  // the first bytes reach the receiver's kernel: a recv() may start copying
  arrive.at = first;
  arrive.kind = 1;
  arrive.conn = std::make_tuple(op.rank, op.peer, op.conn);
  arrive.msg = HnMsg{arrival, std::move(data)};
  hn_push(std::move(arrive));
}

// Pair the connection's arrived messages with its receives, in order: each recv() runs once both
// are there, after the rank's previous recv().
void SimDriver::hn_match(const std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>& key, models::Tick now) {
  auto it = hn_conn_.find(key);
  if (it == hn_conn_.end()) return;
  HnConn& c = it->second;
  const HostNetwork& net = topo_.host_network;
  while (!c.arrived.empty() && !c.recvs.empty()) {
    HnMsg m = std::move(c.arrived.front());
    c.arrived.pop_front();
    HnOp r = c.recvs.front();
    c.recvs.pop_front();
    const std::uint32_t to = r.op.rank;
    if (m.data->size() != r.op.bytes)
      note(to, 0, "[HCSIM_ERR] host network: rank " + std::to_string(to) + " received " + std::to_string(m.data->size()) +
                      " bytes from rank " + std::to_string(r.op.peer) + " on a receive of " + std::to_string(r.op.bytes) +
                      " (sizes must match on both sides)");
    // recv(): copies as the bytes come in (from their first arrival, `now` here, or from when the
    // receive was reached), ends no earlier than the last byte's arrival, then its per-call cost.
    const models::Tick start = std::max({now, r.posted, hn_recv_free_[to]});
    const std::uint64_t n = std::min<std::uint64_t>(m.data->size(), r.op.bytes);
    const models::Tick end = std::max(m.arrival, start + bytes_ps(n, net.copy_Bps)) + net.recv_ps;
    hn_recv_free_[to] = end;
    HnAction a;
    a.at = end;
    a.kind = 2;
    a.npu = r.npu;
    a.notify = r.notify;
    a.op = r.op;
    a.op.bytes = n;
    a.msg = std::move(m);
    hn_push(std::move(a));
  }
  if (c.arrived.empty() && c.recvs.empty()) hn_conn_.erase(it);
}

void SimDriver::hn_run() {
  const models::Tick now = now_ps();
  while (!hn_heap_.empty() && hn_heap_.front().at <= now) {
    std::pop_heap(hn_heap_.begin(), hn_heap_.end(), std::greater<HnAction>());
    HnAction a = std::move(hn_heap_.back());
    hn_heap_.pop_back();
    switch (a.kind) {
      case 0: m_.host_notify(a.npu, a.notify); break;
      case 1: {
        hn_conn_[a.conn].arrived.push_back(std::move(a.msg));
        hn_match(a.conn, now);
        break;
      }
      default:
        if (!hn_copy_out(a.npu, a.op.host_addr, a.msg.data->data(), a.op.bytes))
          note(a.op.rank, 0, "[HCSIM_ERR] host network: rank " + std::to_string(a.op.rank) + "'s receive buffer could not be written");
        m_.host_notify(a.npu, a.notify);
        break;
    }
  }
  if (!hn_heap_.empty()) {
    const models::Tick at = hn_heap_.front().at;
    wake_at(*hn_wake_, at > now ? at : now);
  }
}

}  // namespace sim
