// The wire between a rank's own process and the simulator under `hcsim exec`
// (docs/exec.md#how-it-works): the emulation driver in the user's process (sim/exec/client_driver.cpp)
// turns each hcomm::Driver call into one request on a Unix socket; the rank's proxy in the
// simulator (sim/src/exec/proxy.cpp) replays it on the simulated driver and answers. Bulk bytes do
// not travel here: host DMA reads and writes the process's memory directly (remote_memory.cpp).
//
// A frame is a 32-bit little-endian length, then that many bytes: a 16-bit call id, then the
// arguments (requests) or the results (replies), each field in declaration order — integers as
// their bytes, strings and vectors as a 32-bit count then the elements. `fields()` lists each
// structure's fields once for both directions. No SystemC here: the client links none.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hcomm/driver.h"

namespace sim::exec {

constexpr std::uint32_t kProtocolVersion = 1;
constexpr std::uint32_t kMaxFrame = 64u << 20;  ///< a frame larger than this is a protocol error

/// One id per driver call, plus the session's own messages.
enum class Call : std::uint16_t {
  Hello = 1,  ///< client: version, pid. reply: status (0 ok, 1 other version), rank, world size (rank_count)
  Bye,        ///< client: the process is ending normally (its exit handler); no reply
  RankDesc, DeviceOf, PairLink, NicInfo, NicCounters, ProbePaths, ProbeEgress, QpConnect,
  RouteDecided,  ///< no reply
  RouteReports, DeviceMemorySize, MemAlloc, MemFree, MrRegister, MrDeregister, StreamCreate, StreamDestroy,
  Submit, StreamSynchronize, StreamIdle, EventCompleted, EventTimeNs, NowNs, HostDelay,
  ProfileOp,     ///< no reply
  Log,           ///< no reply
  HccsPort, PciePeer, DeviceRank, CtrlSend, CtrlRecv, CtrlSignal, CtrlSignalPoll, DeviceAbort, NotifyReset,
  DeviceProgress, DeviceEventPoll, HeartbeatRegister,
  FailoverReported,  ///< no reply
  HostSocket,
  SubmitPosted,  ///< a submit without a reply (a refusal fails the stream's next synchronize); no reply
  Last
};
inline bool has_reply(Call c) {
  return c != Call::Bye && c != Call::RouteDecided && c != Call::ProfileOp && c != Call::Log && c != Call::FailoverReported &&
         c != Call::SubmitPosted;
}

/// Appends fields to a frame body.
class Writer {
 public:
  Writer() { buf.reserve(256); }
  std::vector<std::uint8_t> buf;
  template <class T>
  std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>> operator()(const T& v) {
    const std::size_t at = buf.size();
    buf.resize(at + sizeof v);
    std::memcpy(buf.data() + at, &v, sizeof v);
  }
  void operator()(const std::string& s) {
    (*this)(static_cast<std::uint32_t>(s.size()));
    buf.insert(buf.end(), s.begin(), s.end());
  }
  void operator()(const std::vector<std::uint8_t>& v) {
    (*this)(static_cast<std::uint32_t>(v.size()));
    buf.insert(buf.end(), v.begin(), v.end());
  }
  template <class T>
  void operator()(const std::vector<T>& v);
  template <class A, class B>
  void operator()(const std::pair<A, B>& p) { (*this)(p.first); (*this)(p.second); }
  template <class T>
  auto operator()(const T& v) -> decltype(fields(std::declval<Writer&>(), const_cast<T&>(v)), void()) {
    fields(*this, const_cast<T&>(v));
  }
};

/// Reads fields back; any overrun or bad count sets `bad` and yields zeros from then on.
class Reader {
 public:
  Reader(const std::uint8_t* p, std::size_t n) : p_(p), end_(p + n) {}
  bool bad = false;
  bool done() const { return p_ == end_; }
  template <class T>
  std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>> operator()(T& v) {
    if (bad || static_cast<std::size_t>(end_ - p_) < sizeof v) { bad = true; v = T{}; return; }
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
  }
  void operator()(std::string& s) {
    std::uint32_t n = 0;
    (*this)(n);
    if (bad || static_cast<std::size_t>(end_ - p_) < n) { bad = true; s.clear(); return; }
    s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
  }
  void operator()(std::vector<std::uint8_t>& v) {
    std::uint32_t n = 0;
    (*this)(n);
    if (bad || static_cast<std::size_t>(end_ - p_) < n) { bad = true; v.clear(); return; }
    v.assign(p_, p_ + n);
    p_ += n;
  }
  template <class T>
  void operator()(std::vector<T>& v);
  template <class A, class B>
  void operator()(std::pair<A, B>& p) { (*this)(p.first); (*this)(p.second); }
  template <class T>
  auto operator()(T& v) -> decltype(fields(std::declval<Reader&>(), v), void()) { fields(*this, v); }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

// The driver's structures, field by field (both directions).
template <class A> void fields(A& a, hcomm::RankDesc& x) {
  a(x.rank); a(x.device); a(x.device_id); a(x.server); a(x.host_ip); a(x.device_base_addr);
  for (auto& b : x.hccs_port_map) a(b);
}
template <class A> void fields(A& a, hcomm::NicInfo& x) {
  a(x.present); a(x.link_up); a(x.speed_bps); a(x.ip); a(x.neighbor); a(x.neighbor_port); a(x.neighbor_down_Bps); a(x.neighbor_up_Bps);
}
template <class A> void fields(A& a, hcomm::NicCounters& x) { a(x.cnp_rcv); a(x.retransmits); a(x.timeouts); a(x.tx_bytes); }
template <class A> void fields(A& a, hcomm::PathHop& x) { a(x.node); a(x.in_port); a(x.out_port); }
template <class A> void fields(A& a, hcomm::ProbeEgress& x) { a(x.first_out_port); a(x.switches); }
template <class A> void fields(A& a, hcomm::RouteInfo& x) {
  a(x.comm); a(x.src_rank); a(x.dst_rank); a(x.dst_device); a(x.transport); a(x.qp); a(x.udp_sport); a(x.relay_device);
  a(x.via_device); a(x.bandwidth_Bps); a(x.latency_ns); a(x.congestion); a(x.cost); a(x.reason); a(x.trigger);
}
template <class A> void fields(A& a, hcomm::OpInfo& x) {
  a(x.rank); a(x.nranks); a(x.kind); a(x.algorithm); a(x.bytes); a(x.dtype); a(x.op); a(x.peer); a(x.seq); a(x.chosen_by);
  a(x.est_ns); a(x.runner_up); a(x.runner_up_ns);
}
template <class A> void fields(A& a, hcomm::HccsPortInfo& x) {
  a(x.cabled); a(x.up); a(x.lanes); a(x.bandwidth_Bps); a(x.partner_device_id); a(x.partner_server);
}
template <class A> void fields(A& a, hcomm::FailoverInfo& x) {
  a(x.comm); a(x.rank); a(x.origin); a(x.op_seq); a(x.fault); a(x.action); a(x.path_before); a(x.path_after); a(x.code);
  a(x.bytes_resent); a(x.detected_ns); a(x.resumed_ns);
}
template <class A> void fields(A& a, hcomm::DeviceEvent& x) {
  a(x.kind); a(x.since_ns); a(x.at_ns); a(x.peer); a(x.reporter); a(x.text);
}
template <class A> void fields(A& a, hcomm::HostSocketOp& x) { a(x.send); a(x.rank); a(x.peer); a(x.conn); a(x.host_addr); a(x.bytes); }
template <class A> void fields(A& a, hcomm::HeartbeatSpec& x) { a(x.period_ns); a(x.miss_limit); a(x.neighbours); a(x.notify); }
/// A task; `host` travels as the address in the rank's own process (host DMA reaches it there).
template <class A> void fields(A& a, hcomm::DrvTask& x) {
  a(x.kind); a(x.src); a(x.dst); a(x.bytes); a(x.dtype); a(x.op); a(x.target); a(x.key); a(x.value);
  std::uint64_t host = reinterpret_cast<std::uintptr_t>(x.host);
  a(host);
  x.host = reinterpret_cast<void*>(static_cast<std::uintptr_t>(host));
  a(x.rkey); a(x.qp_count); a(x.qp_base); a(x.rate_cap_Bps); a(x.retry_count); a(x.width); a(x.spitch); a(x.dpitch); a(x.via);
  a(x.wait_cqe); a(x.passive); a(x.flops); a(x.efficiency);
}

template <class T>
void Writer::operator()(const std::vector<T>& v) {
  (*this)(static_cast<std::uint32_t>(v.size()));
  for (const T& e : v) (*this)(e);
}
template <class T>
void Reader::operator()(std::vector<T>& v) {
  std::uint32_t n = 0;
  (*this)(n);
  if (bad || n > static_cast<std::size_t>(end_ - p_)) { bad = true; v.clear(); return; }  // every element takes >= 1 byte
  v.assign(n, T{});
  for (T& e : v) (*this)(e);
}

/// Blocking frame I/O on a stream socket. read_frame: false at end of file or on an error
/// (`eof` tells which); write_frame: false when the peer is gone.
bool write_frame(int fd, const std::vector<std::uint8_t>& body);
bool read_frame(int fd, std::vector<std::uint8_t>* body, bool* eof);
/// A frame appended to a batch (the client gathers the requests that need no answer), and the
/// batch written at once.
void append_frame(std::vector<std::uint8_t>* out, const std::vector<std::uint8_t>& body);
bool write_bytes(int fd, const std::vector<std::uint8_t>& bytes);
/// Poll fd without sleeping for up to spin_us (true: something to read, or the peer is gone).
bool await_readable(int fd, int spin_us);
constexpr int kSpinUs = 20;  ///< how long either end polls for the other's next frame before it sleeps

/// Reads frames from a stream socket through a buffer: one read takes every frame that has arrived.
class FrameReader {
 public:
  /// The next frame (blocking); false at end of file (`eof`) or on an error.
  bool next(int fd, std::vector<std::uint8_t>* body, bool* eof);
  /// Whether a whole frame is buffered already (next() will not block).
  bool has_frame() const;

 private:
  std::vector<std::uint8_t> buf_;
  std::size_t pos_ = 0, end_ = 0;
};

}  // namespace sim::exec
