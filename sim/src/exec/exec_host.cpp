// hcsim exec's simulator side (docs/exec.md#how-it-works): the rank processes and their proxies.
//
// Each rank process talks to its proxy over a Unix socket pair (sim/exec_protocol.h). The proxy
// runs in the rank's SystemC thread: it reads one request, replays it on the simulated driver
// (blocking calls wait in simulated time, letting other threads run) and answers. While it waits
// for the next request the whole simulation waits with it, so simulated time moves only while
// every live rank is blocked in a driver call: conservative, and deterministic whatever the host
// scheduler does. A process that polls (a test, an awaitable) without letting time pass is made to
// wait for its device's next activity once it has repeated a question kSpinRepeats times at one
// simulated instant.
// Host DMA reaches the process's memory directly (RemoteMemory: process_vm_readv/writev), so
// bulk bytes never cross the socket.
#include "sim/exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <unordered_set>

#include <systemc>

#include "models/mem/host_memory.h"
#include "sim/driver.h"
#include "sim/exec_protocol.h"
#include "sim/kernel.h"
#include "sim/stop.h"

extern char** environ;

namespace sim {

namespace {

using exec::Call;
using exec::Reader;
using exec::Writer;

// A sanitizer build's driver library needs the sanitizer's runtime loaded before it: it is not
// preloaded, and the programs' wall clocks stay the host's (docs/exec.md#time).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
constexpr std::uint32_t kSpinRepeats = 8;           // repeated questions at one instant before the poller waits
constexpr std::uint64_t kSpinWaitNs = 1000 * 1000;  // the longest first wait (nothing happens: 1 ms passes)
constexpr std::uint64_t kSpinWaitMaxNs = 1000 * 1000 * 1000;  // doubling after each wait nothing ended, up to 1 s

// The rank process's address space, for its device's host DMA (cross-memory attach: the
// process's pages are read and written in place, at the modelled time).
class RemoteMemory final : public models::HostMemory {
 public:
  explicit RemoteMemory(pid_t pid) : pid_(pid) {}
  bool read(std::uint64_t addr, void* dst, std::uint64_t len) override { return xfer(addr, dst, len, false); }
  bool write(std::uint64_t addr, const void* src, std::uint64_t len) override { return xfer(addr, const_cast<void*>(src), len, true); }

 private:
  bool xfer(std::uint64_t addr, void* local, std::uint64_t len, bool to_remote) {
    auto* p = static_cast<std::uint8_t*>(local);
    while (len > 0) {
      iovec l{p, len}, r{reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr)), len};
      const ssize_t n = to_remote ? process_vm_writev(pid_, &l, 1, &r, 1, 0) : process_vm_readv(pid_, &l, 1, &r, 1, 0);
      if (n <= 0) return false;
      p += n;
      addr += static_cast<std::uint64_t>(n);
      len -= static_cast<std::uint64_t>(n);
    }
    return true;
  }
  pid_t pid_;
};

bool is_poll(Call c) {
  switch (c) {
    case Call::StreamIdle: case Call::EventCompleted: case Call::EventTimeNs: case Call::NowNs: case Call::CtrlSignalPoll:
    case Call::DeviceEventPoll: case Call::DeviceProgress: case Call::NicCounters:
      return true;
    default: return false;
  }
}

std::string describe_status(int st) {
  if (WIFSIGNALED(st)) return std::string("killed by signal ") + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
  return "ended";
}
int exit_code_of(int st) { return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WIFEXITED(st) ? WEXITSTATUS(st) : 1; }

}  // namespace

struct ExecHost::Rank {
  pid_t child = -1;      // the process hcsim started (a wrapper's, with --wrapper)
  pid_t program = -1;    // the process that speaks to the driver (its Hello's pid)
  int fd = -1;           // our end of the socket
  exec::FrameReader reader;  // its requests, several per read
  int out = -1, err = -1;  // --tag-output: read ends of its stdout / stderr
  std::unique_ptr<RemoteMemory> mem;
  bool said_bye = false, reaped = false, lost = false;
  int status = 0;
  std::uint32_t streams = 0;  // created and not destroyed
  // Polling (serve): the questions asked at simulated instant spin_at since the last other call.
  std::uint64_t spin_at = ~0ull;
  std::unordered_set<std::uint64_t> asked;
  std::uint32_t repeats = 0;
  std::uint64_t wait_ns = kSpinWaitNs;
  std::map<std::uint32_t, std::string> refused;  // stream -> why a posted submit was refused
};

// --tag-output: one thread copies every rank's output to ours, a line at a time, prefixed.
struct ExecHost::Tagger {
  std::thread th;
  std::atomic<bool> stop{false};
  void start(std::vector<std::pair<int, std::string>> fds) {
    th = std::thread([this, fds = std::move(fds)] {
      std::vector<std::string> part(fds.size());
      std::vector<bool> open(fds.size(), true);
      std::vector<pollfd> p(fds.size());
      for (;;) {
        std::size_t live = 0;
        for (std::size_t i = 0; i < fds.size(); ++i) {
          p[i] = pollfd{open[i] ? fds[i].first : -1, POLLIN, 0};
          live += open[i];
        }
        if (!live) break;
        if (::poll(p.data(), p.size(), 100) < 0 && errno != EINTR) break;
        for (std::size_t i = 0; i < fds.size(); ++i) {
          if (!open[i] || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          char buf[4096];
          const ssize_t n = ::read(fds[i].first, buf, sizeof buf);
          if (n <= 0) {
            if (!part[i].empty()) std::fprintf(stdout, "%s%s\n", fds[i].second.c_str(), part[i].c_str());
            open[i] = false;
            continue;
          }
          part[i].append(buf, static_cast<std::size_t>(n));
          for (std::size_t nl; (nl = part[i].find('\n')) != std::string::npos; part[i].erase(0, nl + 1))
            std::fprintf(stdout, "%s%s\n", fds[i].second.c_str(), part[i].substr(0, nl).c_str());
          std::fflush(stdout);
        }
      }
    });
  }
};

ExecHost::ExecHost(const Topology& topo, ExecOptions opt) : topo_(topo), opt_(std::move(opt)) {}

ExecHost::~ExecHost() {
  kill_all(SIGKILL);
  for (auto& k : ranks_) {
    if (!k->reaped && k->child > 0) waitpid(k->child, nullptr, 0);
    if (k->fd >= 0) ::close(k->fd);
  }
  if (tagger_ && tagger_->th.joinable()) tagger_->th.join();
}

bool ExecHost::launch(std::string* why) {
  const std::uint32_t n = static_cast<std::uint32_t>(topo_.rank_to_npu.size());
  std::vector<std::pair<int, std::string>> tagged;
  // The simulated clock's epoch: the wall time at launch (time.time() under exec, docs/exec.md#time).
  const auto epoch_ns = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  for (std::uint32_t r = 0; r < n; ++r) {
    auto k = std::make_unique<Rank>();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) { *why = std::string("socketpair: ") + strerror(errno); return false; }
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    if (opt_.tag_output && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) { *why = std::string("pipe: ") + strerror(errno); return false; }
    // Everything the child needs, built before fork (the child only calls async-signal-safe functions).
    const auto& npu = topo_.npus[topo_.rank_to_npu[r]];
    std::vector<std::string> env;
    // The caller's environment, as the caller had it: hcsim's own malloc tuning (host_process.cpp)
    // is not the program's.
    const char* caller_tunables = std::getenv("HCSIM_CALLER_GLIBC_TUNABLES");
    for (char** e = environ; *e; ++e) {
      const std::string v(*e);
      if (caller_tunables && (v.rfind("GLIBC_TUNABLES=", 0) == 0 || v.rfind("HCSIM_CALLER_GLIBC_TUNABLES=", 0) == 0)) continue;
      env.push_back(v);
    }
    if (caller_tunables && *caller_tunables) env.push_back(std::string("GLIBC_TUNABLES=") + caller_tunables);
    auto set = [&](const std::string& key, const std::string& v) {
      for (auto& e : env)
        if (e.compare(0, key.size() + 1, key + "=") == 0) { e = key + "=" + v; return; }
      env.push_back(key + "=" + v);
    };
    for (const auto& [key, v] : opt_.env) set(key, v);
    set("HCOMM_DRIVER", opt_.driver_path);
    set("HCSIM_EXEC_FD", std::to_string(sv[1]));
    set("RANK", std::to_string(r));
    set("WORLD_SIZE", std::to_string(n));
    set("LOCAL_RANK", std::to_string(npu.device_id));
    set("RANK_ID", std::to_string(r));     // the CANN / HCCL names
    set("RANK_SIZE", std::to_string(n));
    set("DEVICE_ID", std::to_string(npu.device_id));
    set("HCSIM_NPU", npu.name);
    set("HCSIM_EXEC_EPOCH_NS", std::to_string(epoch_ns));
    if (opt_.host_time_scale > 0) set("HCSIM_EXEC_HOST_TIME", "measured");  // the driver reads its CPU clock
    if (opt_.virtual_clocks && !kSanitized) {  // the driver library stands in for the wall clocks (client_driver.cpp)
      std::string pre = opt_.driver_path;
      if (const char* old = std::getenv("LD_PRELOAD"); old && *old) pre += std::string(":") + old;
      set("LD_PRELOAD", pre);
    }
    std::vector<std::string> args;
    if (!opt_.wrapper.empty() && (opt_.wrapper_rank < 0 || opt_.wrapper_rank == r)) args = opt_.wrapper;
    args.insert(args.end(), opt_.argv.begin(), opt_.argv.end());
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) { *why = std::string("fork: ") + strerror(errno); return false; }
    if (pid == 0) {
      // A rank does not outlive hcsim: killed with it (SIGKILL to hcsim cannot be caught to end them).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(125);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGPIPE, SIG_DFL);
      const int fl = fcntl(sv[1], F_GETFD);
      fcntl(sv[1], F_SETFD, fl & ~FD_CLOEXEC);  // the program inherits its end
      if (out[1] >= 0) { dup2(out[1], 1); dup2(err[1], 2); }
      execvpe(argv[0], argv.data(), envp.data());
      const char* m = "[hcsim exec] cannot start the program: ";
      (void)!write(2, m, strlen(m));
      (void)!write(2, argv[0], strlen(argv[0]));
      (void)!write(2, ": ", 2);
      (void)!write(2, strerror(errno), strlen(strerror(errno)));
      (void)!write(2, "\n", 1);
      _exit(127);
    }
    ::close(sv[1]);
    k->child = pid;
    k->fd = sv[0];
    if (out[1] >= 0) {
      ::close(out[1]);
      ::close(err[1]);
      tagged.emplace_back(out[0], "[" + std::to_string(r) + "] ");
      tagged.emplace_back(err[0], "[" + std::to_string(r) + "] ");
    }
    ranks_.push_back(std::move(k));
  }
  if (!tagged.empty()) {
    tagger_ = std::make_unique<Tagger>();
    tagger_->start(std::move(tagged));
  }
  return true;
}

void ExecHost::attach(SimDriver& drv, RankLife& life) {
  drv_ = &drv;
  life_ = &life;
  drv.watch_activity();
}

void ExecHost::kill_all(int sig) {
  for (auto& k : ranks_)
    if (!k->reaped && k->child > 0) ::kill(k->child, sig);
}

// The run cannot go on (the watchdog, Ctrl-C): every rank process ends and the simulation stops
// at this instant; the runner then writes the trace as for any stopped run.
void ExecHost::end_run(std::uint32_t self, const std::string& why) {
  if (ending_) return;
  ending_ = true;
  // The other ranks' threads are unwound where they wait (what they hold is freed), then the
  // simulation stops at this instant.
  for (std::uint32_t q = 0; q < ranks_.size(); ++q)
    if (q != self) life_->end_thread(q);
  if (!why.empty()) {
    messages_.push_back(why);
    std::fprintf(stderr, "[hcsim exec] %s\n", why.c_str());
  }
  kill_all(SIGKILL);
  sc_core::sc_stop();
}

void ExecHost::killed(std::uint32_t r) {
  // A rank_crash fault: the rank's process dies as its thread did.
  if (r < ranks_.size() && ranks_[r]->child > 0 && !ranks_[r]->reaped) {
    ::kill(ranks_[r]->child, SIGKILL);
    ranks_[r]->lost = true;
  }
}

void ExecHost::run(std::uint32_t r) {
  Rank& k = *ranks_.at(r);
  if (serve(k, r)) return;  // ended normally (Bye), or the run is ending
  if (ending_) return;
  // The connection ended without a Bye: the process died or exited without its driver's exit
  // handler. Its status tells which; either way its peers lose it, as they would lose a real host.
  if (!k.reaped && k.child > 0) {
    for (int i = 0; i < 50 && !k.reaped; ++i) {  // it is exiting: its socket closed
      const pid_t w = waitpid(k.child, &k.status, i == 0 ? WNOHANG : 0);
      if (w == k.child) k.reaped = true;
      else if (w == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      else break;
    }
  }
  if (k.program < 0 && k.reaped && WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0) return;  // never used hcomm: nothing lost
  const std::string how = k.reaped ? describe_status(k.status) : "closed its connection";
  const std::string why = "rank " + std::to_string(r) + " (pid " + std::to_string(k.child) + ") " + how +
                          (k.program < 0 ? " before it opened the driver" : " without ending normally") + "; its peers lose it";
  messages_.push_back(why);
  k.lost = true;
  if (k.program >= 0) life_->died(r, why);
}

// One rank's requests until its Bye (true) or the connection's end (false).
bool ExecHost::serve(Rank& k, std::uint32_t r) {
  SimDriver& d = *drv_;
  const hcomm::DriverSet parts = d.parts();
  hcomm::DeviceRuntime& rt = *parts.runtime;
  hcomm::RdmaNic& nic = *parts.rdma;
  hcomm::HostChannel& host = *parts.host;
  hcomm::DriverObserver& obs = *parts.observer;
  std::vector<std::uint8_t> req;
  const auto watchdog = std::chrono::duration<double>(opt_.watchdog_s);
  for (;;) {
    // Wait for the next request: the simulation waits with us (see the file comment).
    const auto t0 = std::chrono::steady_clock::now();
    if (!k.reader.has_frame()) exec::await_readable(k.fd, exec::kSpinUs);  // the next call usually follows at once
    while (!k.reader.has_frame()) {
      pollfd p{k.fd, POLLIN, 0};
      const int n = ::poll(&p, 1, 200);
      if (n > 0) break;
      if (stop_reason() != 0) {
        end_run(r, "interrupted: ending every rank");
        return true;
      }
      if (n < 0 && errno != EINTR) return false;
      if (opt_.watchdog_s > 0 && std::chrono::steady_clock::now() - t0 > watchdog) {
        watchdog_ = true;
        char b[256];
        std::snprintf(b, sizeof b, "watchdog: rank %u (pid %d) made no driver call for %.0f s of wall time while the others wait; ending the run",
                      r, static_cast<int>(k.child), opt_.watchdog_s);
        end_run(r, b);
        return true;
      }
    }
    bool eof = false;
    if (!k.reader.next(k.fd, &req, &eof)) return false;
    Reader in(req.data(), req.size());
    Call c{};
    std::uint64_t host_ns = 0;
    in(c);
    in(host_ns);
    if (in.bad) return false;
    if (opt_.host_time_scale > 0 && host_ns > 0)  // --host-time measured: the process's own CPU time between calls
      rt.host_delay(static_cast<std::uint64_t>(static_cast<double>(host_ns) * opt_.host_time_scale));
    if (c == Call::Bye) {
      k.said_bye = true;
      if (k.streams > 0)
        messages_.push_back("rank " + std::to_string(r) + " exited without destroying " + std::to_string(k.streams) +
                            " stream(s) (its context was not destroyed)");
      return true;
    }
    // A process asking the same question again at one instant (a polling loop) waits, after a few
    // repeats, for its device's next activity: in-process the loop could not spin, and the answer
    // cannot change until something happens. Different questions (testing many requests once
    // each) are not repeats; any other call starts afresh.
    if (is_poll(c)) {
      const std::uint64_t now = rt.now_ns();
      if (now != k.spin_at) { k.spin_at = now; k.asked.clear(); k.repeats = 0; }
      std::uint64_t h = 1469598103934665603ull;  // FNV-1a of the question (call and arguments)
      for (std::size_t i = 10; i < req.size(); ++i) h = (h ^ req[i]) * 1099511628211ull;
      h = (h ^ static_cast<std::uint64_t>(c)) * 1099511628211ull;
      if (!k.asked.insert(h).second && ++k.repeats > kSpinRepeats) {
        // Nothing came last time: wait twice as long (up to 1 s), so a loop waiting for what
        // never comes reaches its own timeout soon in wall time.
        k.wait_ns = d.runtime().wait_activity(r, k.wait_ns) ? kSpinWaitNs : std::min(k.wait_ns * 2, kSpinWaitMaxNs);
        k.spin_at = rt.now_ns();
        k.asked.clear();
        k.repeats = 0;
      }
    } else {
      k.spin_at = ~0ull;
    }
    Writer out;
    out(rt.now_ns());  // every answer starts with the simulated time (the process clocks, docs/exec.md#time)
    bool ok = true;
    auto args = [&](auto&... a) { (in(a), ...); ok = !in.bad; return ok; };
    switch (c) {
      case Call::Hello: {
        std::uint32_t version = 0, pid = 0;
        if (!args(version, pid)) break;
        k.program = static_cast<pid_t>(pid);
        out(static_cast<std::uint32_t>(version == exec::kProtocolVersion ? 0 : 1));
        out(r);
        out(rt.rank_count());
        if (version == exec::kProtocolVersion) {
          k.mem = std::make_unique<RemoteMemory>(k.program);
          d.set_host_memory(topo_.rank_to_npu[r], k.mem.get());
        }
        break;
      }
      case Call::RankDesc: { std::uint32_t a = 0; hcomm::RankDesc o{}; if (args(a)) { out(rt.rank_desc(a, &o)); out(o); } break; }
      case Call::DeviceOf: { std::uint32_t a = 0, o = 0; if (args(a)) { out(rt.device_of(a, &o)); out(o); } break; }
      case Call::PairLink: { std::uint32_t a = 0, b = 0; if (args(a, b)) out(rt.pair_link(a, b)); break; }
      case Call::NicInfo: { std::uint32_t a = 0; hcomm::NicInfo o; if (args(a)) { out(nic.nic_info(a, &o)); out(o); } break; }
      case Call::NicCounters: { std::uint32_t a = 0; hcomm::NicCounters o; if (args(a)) { out(nic.nic_counters(a, &o)); out(o); } break; }
      case Call::ProbePaths: {
        std::uint32_t dev = 0;
        std::vector<std::uint32_t> t;
        std::vector<std::uint16_t> s;
        if (!args(dev, t, s) || t.size() != s.size()) { ok = false; break; }
        std::vector<hcomm::PathHop> hops;
        std::vector<std::uint32_t> start;
        out(nic.probe_paths(dev, t.data(), s.data(), static_cast<std::uint32_t>(t.size()), &hops, &start));
        out(hops);
        out(start);
        break;
      }
      case Call::ProbeEgress: {
        std::uint32_t dev = 0;
        std::vector<std::uint32_t> t;
        std::vector<std::uint16_t> s;
        if (!args(dev, t, s) || t.size() != s.size()) { ok = false; break; }
        std::vector<hcomm::ProbeEgress> o;
        out(nic.probe_egress(dev, t.data(), s.data(), static_cast<std::uint32_t>(t.size()), &o));
        out(o);
        break;
      }
      case Call::QpConnect: {
        std::uint32_t a = 0, b = 0, q = 0;
        std::uint16_t sp = 0;
        if (args(a, b, q, sp)) out(nic.qp_connect(a, b, q, sp));
        break;
      }
      case Call::RouteDecided: { std::uint32_t a = 0; hcomm::RouteInfo o; if (args(a, o)) obs.route_decided(a, o); break; }
      case Call::RouteReports: out(obs.route_reports()); break;
      case Call::DeviceMemorySize: { std::uint32_t a = 0; if (args(a)) out(rt.device_memory_size(a)); break; }
      case Call::MemAlloc: { std::uint32_t a = 0; std::uint64_t b = 0, o = 0; if (args(a, b)) { out(rt.mem_alloc(a, b, &o)); out(o); } break; }
      case Call::MemFree: { std::uint32_t a = 0; std::uint64_t b = 0; if (args(a, b)) out(rt.mem_free(a, b)); break; }
      case Call::MrRegister: {
        std::uint32_t a = 0, acc = 0, o = 0;
        std::uint64_t addr = 0, bytes = 0;
        if (args(a, addr, bytes, acc)) { out(nic.mr_register(a, addr, bytes, acc, &o)); out(o); }
        break;
      }
      case Call::MrDeregister: { std::uint32_t a = 0, b = 0; if (args(a, b)) out(nic.mr_deregister(a, b)); break; }
      case Call::StreamCreate: {
        std::uint32_t a = 0, o = 0;
        if (!args(a)) break;
        const hcomm::DrvStatus st = rt.stream_create(a, &o);
        if (st == hcomm::DrvStatus::Ok) ++k.streams;
        out(st);
        out(o);
        break;
      }
      case Call::StreamDestroy: {
        std::uint32_t a = 0;
        if (!args(a)) break;
        const hcomm::DrvStatus st = rt.stream_destroy(a);
        if (st == hcomm::DrvStatus::Ok && k.streams) --k.streams;
        out(st);
        break;
      }
      case Call::Submit: { std::uint32_t a = 0; hcomm::DrvTask t; if (args(a, t)) out(rt.submit(a, t)); break; }
      case Call::SubmitPosted: {  // the process did not wait: a refusal is kept for the stream's synchronize
        std::uint32_t a = 0;
        hcomm::DrvTask t;
        if (!args(a, t)) break;
        const hcomm::DrvStatus st = rt.submit(a, t);
        if (st != hcomm::DrvStatus::Ok && !k.refused.count(a))
          k.refused[a] = "a task queued on stream " + std::to_string(a) + " was refused by the device (driver status " +
                         std::to_string(static_cast<int>(st)) + ")";
        break;
      }
      case Call::StreamSynchronize: {
        std::uint32_t a = 0;
        std::uint64_t to = 0;
        std::string e;
        if (!args(a, to)) break;
        hcomm::DrvStatus st = rt.stream_synchronize(a, to, &e);
        if (auto it = k.refused.find(a); it != k.refused.end()) {  // a refused posted submit fails the stream here
          if (st == hcomm::DrvStatus::Ok) { st = hcomm::DrvStatus::Failed; e = it->second; }
          k.refused.erase(it);
        }
        out(st);
        out(e);
        break;
      }
      case Call::StreamIdle: { std::uint32_t a = 0; if (args(a)) out(rt.stream_idle(a)); break; }
      case Call::EventCompleted: { std::uint32_t a = 0; std::uint64_t b = 0; if (args(a, b)) out(rt.event_completed(a, b)); break; }
      case Call::EventTimeNs: { std::uint32_t a = 0; std::uint64_t b = 0; if (args(a, b)) out(rt.event_time_ns(a, b)); break; }
      case Call::NowNs: out(rt.now_ns()); break;
      case Call::HostDelay: { std::uint64_t a = 0; if (args(a)) rt.host_delay(a); break; }
      case Call::ProfileOp: {
        std::uint32_t a = 0;
        std::uint64_t b = 0, e = 0;
        hcomm::OpInfo o;
        if (args(a, b, e, o)) obs.profile_op(a, b, e, o);
        break;
      }
      case Call::Log: { std::uint32_t a = 0; int lv = 0; std::string line; if (args(a, lv, line)) obs.log(a, lv, line); break; }
      case Call::HccsPort: { std::uint32_t a = 0, b = 0; hcomm::HccsPortInfo o; if (args(a, b)) { out(rt.hccs_port(a, b, &o)); out(o); } break; }
      case Call::PciePeer: { std::uint32_t a = 0, b = 0; bool o = false; if (args(a, b)) { out(rt.pcie_peer(a, b, &o)); out(o); } break; }
      case Call::DeviceRank: { std::uint32_t a = 0, o = 0; if (args(a)) { out(rt.device_rank(a, &o)); out(o); } break; }
      case Call::CtrlSend:
      case Call::CtrlSignal: {
        std::uint32_t a = 0, b = 0;
        std::vector<std::uint8_t> m;
        if (!args(a, b, m)) break;
        auto msg = std::make_shared<const std::vector<std::uint8_t>>(std::move(m));
        out(c == Call::CtrlSend ? host.ctrl_send(a, b, msg) : host.ctrl_signal(a, b, msg));
        break;
      }
      case Call::CtrlRecv: {
        std::uint32_t a = 0, b = 0;
        std::uint64_t to = 0;
        hcomm::CtrlMsg m;
        if (!args(a, b, to)) break;
        out(host.ctrl_recv(a, b, to, &m));
        out(b);
        out(m ? *m : std::vector<std::uint8_t>{});
        break;
      }
      case Call::CtrlSignalPoll: {
        std::uint32_t a = 0, from = 0;
        hcomm::CtrlMsg m;
        if (!args(a)) break;
        out(host.ctrl_signal_poll(a, &from, &m));
        out(from);
        out(m ? *m : std::vector<std::uint8_t>{});
        break;
      }
      case Call::DeviceAbort: { std::uint32_t a = 0; if (args(a)) out(rt.device_abort(a)); break; }
      case Call::NotifyReset: { std::uint32_t a = 0; if (args(a)) out(rt.notify_reset(a)); break; }
      case Call::DeviceProgress: {
        std::uint32_t a = 0;
        std::uint64_t done = 0;
        bool head = false;
        if (!args(a)) break;
        out(rt.device_progress(a, &done, &head));
        out(done);
        out(head);
        break;
      }
      case Call::DeviceEventPoll: { std::uint32_t a = 0; hcomm::DeviceEvent o; if (args(a)) { out(rt.device_event_poll(a, &o)); out(o); } break; }
      case Call::HeartbeatRegister: { std::uint32_t a = 0; hcomm::HeartbeatSpec s; if (args(a, s)) out(host.heartbeat_register(a, s)); break; }
      case Call::FailoverReported: { std::uint32_t a = 0; hcomm::FailoverInfo f; if (args(a, f)) obs.failover_reported(a, f); break; }
      case Call::HostSocket: { std::uint32_t a = 0; hcomm::HostSocketOp o; if (args(a, o)) out(host.host_socket(a, o)); break; }
      default: ok = false; break;
    }
    if (!ok || !in.done()) {
      messages_.push_back("rank " + std::to_string(r) + ": malformed request (call " + std::to_string(static_cast<int>(c)) + "); closing its connection");
      return false;
    }
    if (ending_) return true;
    if (exec::has_reply(c) && !exec::write_frame(k.fd, out.buf)) return false;
  }
}

ExecOutcome ExecHost::finish() {
  ExecOutcome o;
  o.watchdog = watchdog_;
  // Processes still running (the simulation ended without them: a watchdog, Ctrl-C, a rank whose
  // thread a fault killed) are ended; the others are reaped as they exit.
  for (auto& k : ranks_) {
    if (k->reaped || k->child <= 0) continue;
    if (k->fd >= 0) { ::close(k->fd); k->fd = -1; }  // a rank waiting for its reply learns the simulator is gone
    for (int i = 0; i < 200 && !k->reaped; ++i) {
      if (waitpid(k->child, &k->status, WNOHANG) == k->child) { k->reaped = true; break; }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (i == 100) ::kill(k->child, SIGKILL);
    }
    if (!k->reaped && waitpid(k->child, &k->status, 0) == k->child) k->reaped = true;
  }
  if (tagger_ && tagger_->th.joinable()) tagger_->th.join();
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const Rank& k = *ranks_[r];
    const int code = k.reaped ? exit_code_of(k.status) : -1;
    o.exit_codes.push_back(code);
    o.worst = std::max(o.worst, code);
    if (k.reaped && code != 0 && !k.lost && !ending_)  // (after a watchdog or Ctrl-C: we ended them)
      messages_.push_back("rank " + std::to_string(r) + " (pid " + std::to_string(k.child) + ") " + describe_status(k.status));
  }
  o.messages = messages_;
  return o;
}

}  // namespace sim
