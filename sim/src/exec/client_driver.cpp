// The emulation driver (docs/exec.md#how-it-works): loaded into a user's rank process by libhcomm
// (HCOMM_DRIVER, hcomm_driver_open) under `hcsim exec`. Every hcomm::Driver call becomes one request
// to the rank's proxy in the simulator over the inherited socket HCSIM_EXEC_FD, and the caller
// blocks until the answer (the simulator's time advances only while every rank is blocked so).
// Trace-only reports (route_decided, profile_op, log, failover_reported) are sent without waiting.
// Host buffers stay where they are: the simulator's host DMA reads and writes this process's
// memory at the modelled time, so no bulk bytes cross the socket.
#include <atomic>
#include <cstdio>
#include <mutex>
#include <cstdlib>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sim/exec_protocol.h"

namespace sim::exec {
namespace {

class ClientDriver final : public hcomm::Driver {
 public:
  explicit ClientDriver(int fd) : fd_(fd) {
    const char* m = std::getenv("HCSIM_EXEC_HOST_TIME");
    measure_cpu_ = m && *m && std::string(m) != "zero";  // --host-time measured: the thread's CPU clock is read
  }

  bool hello(std::string* why) {
    Reader r = call(Call::Hello, kProtocolVersion, static_cast<std::uint32_t>(::getpid()));
    std::uint32_t st = 0;
    r(st);
    r(rank_);
    r(world_);
    if (r.bad || st != 0) {
      *why = st == 1 ? "the simulator speaks another protocol version" : "the simulator refused the connection";
      return false;
    }
    return true;
  }
  void bye() {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0) return;
    Writer w;
    w(Call::Bye);
    w(std::uint64_t{0});
    append_frame(&out_, w.buf);
    write_bytes(fd_, out_);
    out_.clear();
    ::close(fd_);
    fd_ = -1;
  }

  /// The simulated time of the last answer (ns): with host code costing nothing, the process's now.
  std::uint64_t sim_ns() const { return sim_ns_.load(std::memory_order_relaxed); }

  std::uint32_t rank_count() override { return world_; }
  hcomm::DrvStatus rank_desc(std::uint32_t rank, hcomm::RankDesc* out) override { return status_out(call(Call::RankDesc, rank), out); }
  hcomm::DrvStatus device_of(std::uint32_t device_id, std::uint32_t* device) override {
    return status_out(call(Call::DeviceOf, device_id), device);
  }
  hcomm::PairLink pair_link(std::uint32_t a, std::uint32_t b) override { return value<hcomm::PairLink>(call(Call::PairLink, a, b)); }
  hcomm::DrvStatus nic_info(std::uint32_t device, hcomm::NicInfo* out) override { return status_out(call(Call::NicInfo, device), out); }
  hcomm::DrvStatus nic_counters(std::uint32_t device, hcomm::NicCounters* out) override {
    return status_out(call(Call::NicCounters, device), out);
  }
  hcomm::DrvStatus probe_paths(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                               std::vector<hcomm::PathHop>* hops, std::vector<std::uint32_t>* start) override {
    if (n && (!targets || !sports)) return hcomm::DrvStatus::Invalid;
    Reader r = call(Call::ProbePaths, device, std::vector<std::uint32_t>(targets, targets + n), std::vector<std::uint16_t>(sports, sports + n));
    hcomm::DrvStatus st{};
    std::vector<hcomm::PathHop> h;
    std::vector<std::uint32_t> s;
    r(st); r(h); r(s);
    if (hops) *hops = std::move(h);
    if (start) *start = std::move(s);
    return checked(r, st);
  }
  hcomm::DrvStatus probe_egress(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                std::vector<hcomm::ProbeEgress>* out) override {
    if (!out || (n && (!targets || !sports))) return hcomm::DrvStatus::Invalid;
    return status_out(call(Call::ProbeEgress, device, std::vector<std::uint32_t>(targets, targets + n),
                           std::vector<std::uint16_t>(sports, sports + n)), out);
  }
  hcomm::DrvStatus qp_connect(std::uint32_t device, std::uint32_t target, std::uint32_t qp, std::uint16_t sport) override {
    return status(call(Call::QpConnect, device, target, qp, sport));
  }
  void route_decided(std::uint32_t device, const hcomm::RouteInfo& r) override { post(Call::RouteDecided, device, r); }
  bool route_reports() override {
    if (route_reports_ < 0) route_reports_ = value<bool>(call(Call::RouteReports)) ? 1 : 0;
    return route_reports_ == 1;
  }
  std::uint64_t device_memory_size(std::uint32_t device) override { return value<std::uint64_t>(call(Call::DeviceMemorySize, device)); }
  hcomm::DrvStatus mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) override {
    return status_out(call(Call::MemAlloc, device, bytes), addr);
  }
  hcomm::DrvStatus mem_free(std::uint32_t device, std::uint64_t addr) override { return status(call(Call::MemFree, device, addr)); }
  hcomm::DrvStatus mr_register(std::uint32_t device, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                               std::uint32_t* key) override {
    return status_out(call(Call::MrRegister, device, addr, bytes, access), key);
  }
  hcomm::DrvStatus mr_deregister(std::uint32_t device, std::uint32_t key) override { return status(call(Call::MrDeregister, device, key)); }
  hcomm::DrvStatus stream_create(std::uint32_t device, std::uint32_t* stream) override {
    return status_out(call(Call::StreamCreate, device), stream);
  }
  hcomm::DrvStatus stream_destroy(std::uint32_t stream) override { return status(call(Call::StreamDestroy, stream)); }
  // A task is queued without waiting for the answer (a collective queues hundreds): the proxy
  // replays the submits in order, so simulated time is the same; a submit the device refuses (a
  // dead device, a full queue that never drains) fails the stream's next synchronize instead of
  // this call. A compute task by FLOPs waits for its answer: a dtype without a peak is the
  // caller's error (HCOMM_E_NOT_SUPPORT at once).
  hcomm::DrvStatus submit(std::uint32_t stream, const hcomm::DrvTask& t) override {
    if (t.kind == hcomm::DrvTaskKind::Compute && t.flops > 0) return status(call(Call::Submit, stream, t));
    post(Call::SubmitPosted, stream, t);
    return hcomm::DrvStatus::Ok;
  }
  hcomm::DrvStatus stream_synchronize(std::uint32_t stream, std::uint64_t timeout_ns, std::string* error) override {
    Reader r = call(Call::StreamSynchronize, stream, timeout_ns);
    hcomm::DrvStatus st{};
    std::string e;
    r(st); r(e);
    if (error) *error = std::move(e);
    return checked(r, st);
  }
  bool stream_idle(std::uint32_t stream) override { return value<bool>(call(Call::StreamIdle, stream)); }
  std::uint64_t event_completed(std::uint32_t device, std::uint64_t event) override {
    return value<std::uint64_t>(call(Call::EventCompleted, device, event));
  }
  std::uint64_t event_time_ns(std::uint32_t device, std::uint64_t event) override {
    return value<std::uint64_t>(call(Call::EventTimeNs, device, event));
  }
  std::uint64_t now_ns() override { return value<std::uint64_t>(call(Call::NowNs)); }
  void host_delay(std::uint64_t ns) override { call(Call::HostDelay, ns); }
  void profile_op(std::uint32_t device, std::uint64_t begin_key, std::uint64_t end_key, const hcomm::OpInfo& info) override {
    post(Call::ProfileOp, device, begin_key, end_key, info);
  }
  void log(std::uint32_t device, int level, const std::string& line) override { post(Call::Log, device, level, line); }
  hcomm::DrvStatus hccs_port(std::uint32_t device, std::uint32_t port, hcomm::HccsPortInfo* out) override {
    return status_out(call(Call::HccsPort, device, port), out);
  }
  hcomm::DrvStatus pcie_peer(std::uint32_t device, std::uint32_t peer_device, bool* reachable) override {
    return status_out(call(Call::PciePeer, device, peer_device), reachable);
  }
  hcomm::DrvStatus device_rank(std::uint32_t device, std::uint32_t* rank) override { return status_out(call(Call::DeviceRank, device), rank); }
  hcomm::DrvStatus ctrl_send(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) override {
    return status(call(Call::CtrlSend, from, to, msg ? *msg : std::vector<std::uint8_t>{}));
  }
  hcomm::DrvStatus ctrl_recv(std::uint32_t to, std::uint32_t from, std::uint64_t timeout_ns, hcomm::CtrlMsg* msg) override {
    return msg_out(call(Call::CtrlRecv, to, from, timeout_ns), nullptr, msg);
  }
  hcomm::DrvStatus ctrl_signal(std::uint32_t from, std::uint32_t to, hcomm::CtrlMsg msg) override {
    return status(call(Call::CtrlSignal, from, to, msg ? *msg : std::vector<std::uint8_t>{}));
  }
  hcomm::DrvStatus ctrl_signal_poll(std::uint32_t to, std::uint32_t* from, hcomm::CtrlMsg* msg) override {
    return msg_out(call(Call::CtrlSignalPoll, to), from, msg);
  }
  hcomm::DrvStatus device_abort(std::uint32_t device) override { return status(call(Call::DeviceAbort, device)); }
  hcomm::DrvStatus notify_reset(std::uint32_t device) override { return status(call(Call::NotifyReset, device)); }
  hcomm::DrvStatus device_progress(std::uint32_t device, std::uint64_t* completed, bool* head_not_started) override {
    Reader r = call(Call::DeviceProgress, device);
    hcomm::DrvStatus st{};
    std::uint64_t c = 0;
    bool h = false;
    r(st); r(c); r(h);
    if (completed) *completed = c;
    if (head_not_started) *head_not_started = h;
    return checked(r, st);
  }
  hcomm::DrvStatus device_event_poll(std::uint32_t device, hcomm::DeviceEvent* out) override {
    return status_out(call(Call::DeviceEventPoll, device), out);
  }
  hcomm::DrvStatus heartbeat_register(std::uint32_t rank, const hcomm::HeartbeatSpec& spec) override {
    return status(call(Call::HeartbeatRegister, rank, spec));
  }
  void failover_reported(std::uint32_t device, const hcomm::FailoverInfo& f) override { post(Call::FailoverReported, device, f); }
  hcomm::DrvStatus host_socket(std::uint32_t stream, const hcomm::HostSocketOp& op) override {
    return status(call(Call::HostSocket, stream, op));
  }

 private:
  // This thread's CPU time, ns: what --host-time measured charges between two calls.
  static std::uint64_t cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
  }
  template <class... In>
  void send(Call c, const In&... in) {
    Writer w;
    w(c);
    const std::uint64_t now = measure_cpu_ ? cpu_ns() : 0;
    w(static_cast<std::uint64_t>(last_cpu_ && now > last_cpu_ ? now - last_cpu_ : 0));  // host code since the last call
    if (measure_cpu_) last_cpu_ = now;
    (w(in), ...);
    if (fd_ < 0) lost("send");
    append_frame(&out_, w.buf);
  }
  // The requests gathered so far go out at once (before a call waits for its answer): the proxy
  // meets them in the same order, and simulated time cannot move while this process runs anyway.
  void flush() {
    if (out_.empty()) return;
    if (fd_ < 0 || !write_bytes(fd_, out_)) lost("send");
    out_.clear();
  }
  template <class... In>
  void post(Call c, const In&... in) {
    std::lock_guard<std::mutex> lock(mu_);
    send(c, in...);
    if (out_.size() >= kBatchBytes) flush();
  }
  // One call at a time: a program's threads take turns (a call blocks the others until it returns).
  // Every reply starts with the simulated time it was given at (what the process clocks report).
  template <class... In>
  Reader call(Call c, const In&... in) {
    std::lock_guard<std::mutex> lock(mu_);
    send(c, in...);
    flush();
    await_readable(fd_, kSpinUs);
    bool eof = false;
    if (!read_frame(fd_, &reply_, &eof)) lost(eof ? "the simulator closed the connection" : "read");
    if (measure_cpu_) last_cpu_ = cpu_ns();
    Reader r(reply_.data(), reply_.size());
    std::uint64_t now = 0;
    r(now);
    sim_ns_.store(now, std::memory_order_relaxed);
    return r;
  }
  // The simulator is gone (it ended the run, or died): this rank cannot go on.
  [[noreturn]] void lost(const char* what) {
    std::fprintf(stderr, "[hcsim exec] rank %u: lost the simulator (%s); exiting\n", rank_, what);
    std::fflush(stderr);
    ::_exit(125);
  }
  template <class T>
  T value(Reader r) {
    T v{};
    r(v);
    if (r.bad) lost("malformed reply");
    return v;
  }
  hcomm::DrvStatus checked(const Reader& r, hcomm::DrvStatus st) {
    if (r.bad) lost("malformed reply");
    return st;
  }
  hcomm::DrvStatus status(Reader r) {
    hcomm::DrvStatus st{};
    r(st);
    return checked(r, st);
  }
  template <class T>
  hcomm::DrvStatus status_out(Reader r, T* out) {
    hcomm::DrvStatus st{};
    T v{};
    r(st);
    r(v);
    if (out && st == hcomm::DrvStatus::Ok) *out = std::move(v);
    return checked(r, st);
  }
  hcomm::DrvStatus msg_out(Reader r, std::uint32_t* from, hcomm::CtrlMsg* msg) {
    hcomm::DrvStatus st{};
    std::uint32_t f = 0;
    std::vector<std::uint8_t> bytes;
    r(st); r(f); r(bytes);
    if (st == hcomm::DrvStatus::Ok) {
      if (from) *from = f;
      if (msg) *msg = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
    }
    return checked(r, st);
  }

  int fd_;
  std::uint32_t rank_ = ~0u, world_ = 0;
  int route_reports_ = -1;
  std::mutex mu_;
  std::uint64_t last_cpu_ = 0;
  bool measure_cpu_ = false;
  std::atomic<std::uint64_t> sim_ns_{0};
  std::vector<std::uint8_t> reply_;
  std::vector<std::uint8_t> out_;  // requests not sent yet (flush)
  static constexpr std::size_t kBatchBytes = 256 * 1024;
};

ClientDriver* g_client = nullptr;

void say_bye() {
  if (g_client) g_client->bye();
}

}  // namespace
}  // namespace sim::exec

/// libhcomm's entry point into this driver (hcomm/src/driver_port.cpp): the process-wide driver,
/// connected to its proxy; null (with the reason on stderr) when the process was not started by
/// hcsim exec or the simulator refuses it.
extern "C" __attribute__((visibility("default"))) hcomm::Driver* hcomm_driver_open() {
  using sim::exec::g_client;
  if (g_client) return g_client;
  const char* v = std::getenv("HCSIM_EXEC_FD");
  char* end = nullptr;
  const long fd = v ? std::strtol(v, &end, 10) : -1;
  if (!v || *end || fd < 0) {
    std::fprintf(stderr, "[hcsim exec] HCSIM_EXEC_FD is not set: run the program under `hcsim exec` (docs/exec.md)\n");
    return nullptr;
  }
  auto* c = new sim::exec::ClientDriver(static_cast<int>(fd));
  std::string why;
  if (!c->hello(&why)) {
    std::fprintf(stderr, "[hcsim exec] %s\n", why.c_str());
    delete c;
    return nullptr;
  }
  g_client = c;
  std::atexit(sim::exec::say_bye);
  return c;
}

// ---- The process clocks (docs/exec.md#time) ----
// hcsim exec preloads this library (LD_PRELOAD), so these definitions stand in for libc's in the
// rank's program: once libhcomm has opened the driver, the wall clocks (time, gettimeofday,
// CLOCK_REALTIME) read HCSIM_EXEC_EPOCH_NS + the simulated time of the last answer, so unmodified
// timing code measures the simulated cluster. Before that, and for every other clock (the
// monotonic ones event loops and timeouts use), the host's clock answers.
namespace {

std::uint64_t exec_epoch_ns() {
  static const std::uint64_t e = [] {
    const char* v = std::getenv("HCSIM_EXEC_EPOCH_NS");
    return v ? std::strtoull(v, nullptr, 10) : 0ull;
  }();
  return e;
}
bool simulated_clock(std::uint64_t* ns) {
  if (!sim::exec::g_client) return false;
  *ns = exec_epoch_ns() + sim::exec::g_client->sim_ns();
  return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec* ts) {
  using Fn = int (*)(clockid_t, struct timespec*);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "clock_gettime"));
  std::uint64_t ns = 0;
  if ((id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) && simulated_clock(&ns)) {
    ts->tv_sec = static_cast<time_t>(ns / 1000000000ull);
    ts->tv_nsec = static_cast<long>(ns % 1000000000ull);
    return 0;
  }
  return real ? real(id, ts) : -1;
}

extern "C" __attribute__((visibility("default"))) int gettimeofday(struct timeval* tv, void* tz) {
  using Fn = int (*)(struct timeval*, void*);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "gettimeofday"));
  std::uint64_t ns = 0;
  if (simulated_clock(&ns)) {
    tv->tv_sec = static_cast<time_t>(ns / 1000000000ull);
    tv->tv_usec = static_cast<suseconds_t>(ns % 1000000000ull / 1000);
    return 0;
  }
  return real ? real(tv, tz) : -1;
}

extern "C" __attribute__((visibility("default"))) time_t time(time_t* out) {
  using Fn = time_t (*)(time_t*);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "time"));
  std::uint64_t ns = 0;
  if (simulated_clock(&ns)) {
    const time_t t = static_cast<time_t>(ns / 1000000000ull);
    if (out) *out = t;
    return t;
  }
  return real ? real(out) : static_cast<time_t>(-1);
}
