#include "sim/trace.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sim/stop.h"

namespace sim {

namespace {
const char* kSchema = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE run(id INTEGER PRIMARY KEY, scenario TEXT, topology TEXT, seed INTEGER, ranks INTEGER, payload TEXT,
                 sim_end_ns INTEGER, exit_code INTEGER, status TEXT, wall_seconds REAL);
CREATE TABLE npus(id INTEGER PRIMARY KEY, name TEXT, server INTEGER, device_id INTEGER, model TEXT, hbm_bytes INTEGER);
CREATE TABLE links(id INTEGER PRIMARY KEY, name TEXT, kind TEXT, a INTEGER, b INTEGER, bandwidth_Bps INTEGER,
                   latency_ns REAL);
CREATE TABLE operations(id INTEGER PRIMARY KEY, rank INTEGER, seq INTEGER, kind TEXT, algorithm TEXT, bytes INTEGER,
                        dtype TEXT, reduce_op TEXT, peer INTEGER, step INTEGER, rep INTEGER, start_ns REAL, end_ns REAL,
                        chosen_by TEXT, est_us REAL, runner_up TEXT, runner_up_est_us REAL, status TEXT, error TEXT);
CREATE TABLE link_counters(link_id INTEGER, direction TEXT, sim_time_ns REAL, bytes INTEGER, pieces INTEGER,
                           busy_ns REAL, rx_retry INTEGER, credit_stall_ns REAL);
CREATE TABLE port_counters(node TEXT, port INTEGER, tx_bytes INTEGER, tx_packets INTEGER, drops INTEGER, ecn_marked INTEGER,
                           pause_sent INTEGER, pause_rcv INTEGER, paused_ns REAL, max_queue_bytes INTEGER, busy_ns REAL,
                           peer TEXT, peer_port INTEGER, pfcwd_storms INTEGER);
CREATE TABLE counter_samples(t_ns REAL, interval_ns REAL, kind TEXT, object TEXT, metric TEXT, value REAL);
CREATE TABLE tasks(rank INTEGER, stream INTEGER, op_seq INTEGER, kind TEXT, start_ns REAL, end_ns REAL, bytes INTEGER,
                   peer INTEGER);
CREATE TABLE routes(sim_time_ns REAL, comm INTEGER, src INTEGER, dst INTEGER, qp INTEGER, transport TEXT, nic TEXT,
                    udp_sport INTEGER, hops TEXT, bandwidth_GBps REAL, latency_us REAL, congestion REAL, cost REAL,
                    reason TEXT, trigger TEXT);
CREATE TABLE failovers(id INTEGER PRIMARY KEY, comm INTEGER, fault TEXT, fault_at_ns REAL, detected_at_ns REAL,
                       detected_by INTEGER, origin INTEGER, op_seq INTEGER, action TEXT, path_before TEXT, path_after TEXT,
                       bytes_resent INTEGER, resumed_at_ns REAL, code INTEGER);
CREATE TABLE counters(name TEXT PRIMARY KEY, value REAL);
CREATE TABLE faults(id INTEGER PRIMARY KEY, type TEXT, target TEXT, fired INTEGER, injected_at_ns REAL, transitions INTEGER,
                    first_detected_ns REAL, last_detected_ns REAL, actions TEXT, resumed_at_ns REAL, bytes_resent INTEGER,
                    step INTEGER, rep INTEGER, op_time_us REAL, median_us REAL);
CREATE TABLE provenance(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE logs(id INTEGER PRIMARY KEY, sim_time_ns REAL, rank INTEGER, level INTEGER, message TEXT);
CREATE TABLE checks(rank INTEGER, step INTEGER, rep INTEGER, ok INTEGER, mismatches INTEGER, detail TEXT, mode TEXT,
                    tolerance REAL);
CREATE TABLE summary(step INTEGER, rep INTEGER, kind TEXT, bytes INTEGER, time_us REAL, algbw_GBps REAL,
                     busbw_GBps REAL);
CREATE TABLE train_steps(step INTEGER, rep INTEGER, ranks INTEGER, critical_rank INTEGER, iteration_us REAL,
                         compute_us REAL, comm_us REAL, exposed_comm_us REAL, overlap REAL, grad_bytes INTEGER);
)SQL";
}  // namespace

Trace::~Trace() { close(); }

int open_sqlite_readonly(const std::string& path, bool immutable, sqlite3** db) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%') uri += "%25";
    else if (c == '?') uri += "%3f";
    else if (c == '#') uri += "%23";
    else uri += c;
  }
  if (immutable) uri += "?immutable=1";
  return sqlite3_open_v2(uri.c_str(), db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
}

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Is `path` (a regular file) a trace hcsim wrote? Read-only: the header is read with stdio and
// the meta table through an immutable SQLite connection (no journal, no locks, no writes).
bool is_hcsim_trace(const std::string& path, std::string* why) {
  char head[16] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) { *why = "cannot read it: " + errno_text(errno); return false; }
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n == 0) { *why = "an empty file"; return false; }
  if (n < sizeof head || std::memcmp(head, "SQLite format 3", 16) != 0) { *why = "not an SQLite database"; return false; }
  sqlite3* db = nullptr;
  bool ok = false;
  if (open_sqlite_readonly(path, true, &db) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='generator'", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* v = sqlite3_column_text(s, 0);
      ok = v && std::strcmp(reinterpret_cast<const char*>(v), "hcsim") == 0;
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  if (!ok) *why = "an SQLite database hcsim did not write (no meta generator=hcsim)";
  return ok;
}

// May open() put a new trace at `path`? Directories and special files never; regular files if
// they are hcsim traces, or with `force`.
bool replaceable(const std::string& path, bool force, const char* force_flag, std::string* why) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    *why = "cannot inspect it: " + errno_text(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) { *why = "is a directory; --db needs a file name"; return false; }
  if (!S_ISREG(st.st_mode)) { *why = "is not a regular file (a device, FIFO or socket); refusing to replace it"; return false; }
  std::string what;
  if (force || is_hcsim_trace(path, &what)) return true;
  *why = "exists and is not an hcsim trace (" + what + "); refusing to replace it";
  if (force_flag) *why += std::string(" (") + force_flag + " replaces it)";
  return false;
}

}  // namespace

bool Trace::lock(std::string* why) {
  lock_path_ = path_ + ".lock";
  for (int attempt = 0; attempt < 50; ++attempt) {
    int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) { *why = "cannot create lock file " + lock_path_ + ": " + errno_text(errno); return false; }
    // A reader (hcsim top, health, ...) tests the lock with a shared flock it drops at once: wait
    // out such a probe (up to 0.2 s) before concluding that another run holds it.
    int rc = ::flock(fd, LOCK_EX | LOCK_NB);
    for (int wait = 0; rc != 0 && errno == EWOULDBLOCK && wait < 40; ++wait) {
      ::usleep(5000);
      rc = ::flock(fd, LOCK_EX | LOCK_NB);
    }
    if (rc != 0) {
      const int e = errno;
      ::close(fd);
      *why = e == EWOULDBLOCK ? "another hcsim run is writing this trace (it holds the lock " + lock_path_ + ")"
                              : "cannot lock " + lock_path_ + ": " + errno_text(e);
      return false;
    }
    // The previous holder unlinks the lock file before releasing it: if ours was unlinked between
    // open and flock, lock the file now at the path instead.
    struct stat a{}, b{};
    if (::fstat(fd, &a) == 0 && ::stat(lock_path_.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      lock_fd_ = fd;
      return true;
    }
    ::close(fd);
  }
  *why = "cannot lock " + lock_path_ + ": it keeps being replaced";
  return false;
}

void Trace::unlock() {
  if (lock_fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // while still held: see lock()
  ::close(lock_fd_);
  lock_fd_ = -1;
}

bool Trace::open(const std::string& path, std::string* why, bool force, const char* force_flag) {
  close();
  failed_ = false;
  error_.clear();
  committed_ = pending_ = 0;
  path_ = path;
  // Refuse directories and special files before creating a lock file beside them; check regular
  // files again under the lock (a run holding it may be creating the file right now).
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !replaceable(path, force, force_flag, why)) return false;
  if (!lock(why)) return false;
  if (!replaceable(path, force, force_flag, why)) { unlock(); return false; }
  // Replace the old trace together with any journal it left: a hot journal beside a new database
  // would be rolled back into it.
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) {
    const std::string f = path + suffix;
    if (::unlink(f.c_str()) != 0 && errno != ENOENT) {
      *why = "cannot replace " + f + ": " + errno_text(errno);
      unlock();
      return false;
    }
  }
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    *why = db_ ? sqlite3_errmsg(db_) : "cannot open";
    sqlite3_close(db_);
    db_ = nullptr;
    unlock();
    return false;
  }
  sqlite3_busy_timeout(db_, 10000);  // a reader (sqlite3 X.db ...) delays a commit instead of failing it
  char* err = nullptr;
  // The schema in rollback-journal mode: one file that is an hcsim trace from here on.
  if (sqlite3_exec(db_, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=NORMAL;", nullptr, nullptr, &err) != SQLITE_OK ||
      sqlite3_exec(db_, kSchema, nullptr, nullptr, &err) != SQLITE_OK ||
      sqlite3_exec(db_, ("INSERT INTO meta VALUES('schema_version','" + std::to_string(kTraceSchemaVersion) +
                         "'); INSERT INTO meta VALUES('generator','hcsim');").c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    *why = err ? err : "cannot create schema";
    sqlite3_free(err);
    sqlite3_close(db_);
    db_ = nullptr;
    ::unlink(path.c_str());  // ours, and not a trace
    unlock();
    return false;
  }
  // During the run: WAL, so readers (hcsim top, sqlite3) read committed batches consistently
  // without stalling the commits, and a killed run's committed batches are in FILE-wal, whole
  // (synchronous=FULL: each commit is synced, as each rollback-journal commit was). close()
  // checkpoints it back into one file. The schema above is committed to the file itself first,
  // so even a killed run's file says it is an hcsim trace. (Without WAL support the file system
  // keeps the journal mode above.)
  exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
  st_npu_ = prep("INSERT INTO npus VALUES(?,?,?,?,?,?)");
  st_link_ = prep("INSERT INTO links VALUES(?,?,?,?,?,?,?)");
  st_op_ = prep("INSERT INTO operations(rank,seq,kind,algorithm,bytes,dtype,reduce_op,peer,step,rep,start_ns,end_ns,chosen_by,est_us,runner_up,runner_up_est_us,status,error) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st_ctr_ = prep("INSERT INTO link_counters VALUES(?,?,?,?,?,?,?,?)");
  st_port_ = prep("INSERT INTO port_counters VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st_sample_ = prep("INSERT INTO counter_samples VALUES(?,?,?,?,?,?)");
  st_task_ = prep("INSERT INTO tasks VALUES(?,?,?,?,?,?,?,?)");
  st_route_ = prep("INSERT INTO routes VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st_counter_ = prep("INSERT INTO counters VALUES(?,?)");
  st_fault_ = prep("INSERT INTO faults VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st_prov_ = prep("INSERT OR REPLACE INTO provenance VALUES(?,?)");
  st_failover_ = prep("INSERT INTO failovers(comm,fault,fault_at_ns,detected_at_ns,detected_by,origin,op_seq,action,path_before,path_after,bytes_resent,resumed_at_ns,code) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st_log_ = prep("INSERT INTO logs(sim_time_ns,rank,level,message) VALUES(?,?,?,?)");
  st_check_ = prep("INSERT INTO checks VALUES(?,?,?,?,?,?,?,?)");
  st_sum_ = prep("INSERT INTO summary VALUES(?,?,?,?,?,?,?)");
  st_train_ = prep("INSERT INTO train_steps VALUES(?,?,?,?,?,?,?,?,?,?)");
  exec("BEGIN");
  if (failed_) {
    *why = error_;
    close();
    return false;
  }
  return true;
}

void Trace::close() noexcept {
  if (db_) {
    if (!failed_ && !sqlite3_get_autocommit(db_) && exec("COMMIT")) committed_ += pending_;
    pending_ = 0;
    for (sqlite3_stmt** s : {&st_npu_, &st_link_, &st_op_, &st_ctr_, &st_log_, &st_check_, &st_sum_, &st_train_, &st_port_, &st_counter_, &st_sample_, &st_task_, &st_route_, &st_failover_, &st_fault_, &st_prov_}) {
      sqlite3_finalize(*s);
      *s = nullptr;
    }
    // One file again: checkpoint the WAL into the database and delete FILE-wal and FILE-shm
    // (waits out readers up to the busy timeout). Also after a failure: best effort, what was
    // committed stays readable in FILE-wal if this cannot be done (a full disk).
    sqlite3_exec(db_, "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
    if (sqlite3_close(db_) != SQLITE_OK && !failed_) fail(sqlite3_errmsg(db_));
    db_ = nullptr;
  }
  unlock();
}

void Trace::fail(const std::string& what) {
  if (failed_) return;
  failed_ = true;
  error_ = path_ + ": cannot write the trace: " + what + "; it keeps the " + std::to_string(committed_) +
           " rows committed before";
  // The batch in progress is lost; what was committed stays. (SQLite may already have rolled back.)
  if (db_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  pending_ = 0;
  request_stop(kStopTraceError);
}

sqlite3_stmt* Trace::prep(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (!writable()) return nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) fail(sqlite3_errmsg(db_));
  return s;
}

bool Trace::exec(const char* sql) {
  if (!writable()) return false;
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    fail(m);
    return false;
  }
  return true;
}

bool Trace::put(sqlite3_stmt* s) {
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc == SQLITE_DONE) return true;
  fail(sqlite3_errmsg(db_));
  return false;
}

void Trace::row_done() {
  if (++pending_ >= batch_) {
    if (!exec("COMMIT")) return;
    committed_ += pending_;
    pending_ = 0;
    exec("BEGIN");
  }
}

namespace {
struct Binder {
  sqlite3_stmt* s;
  int i = 1;
  Binder& operator()(std::int64_t v) { sqlite3_bind_int64(s, i++, v); return *this; }
  Binder& operator()(double v) { sqlite3_bind_double(s, i++, v); return *this; }
  Binder& operator()(const std::string& v) { sqlite3_bind_text(s, i++, v.c_str(), -1, SQLITE_TRANSIENT); return *this; }
  Binder& null() { sqlite3_bind_null(s, i++); return *this; }
  /// A REAL that may be unknown (NaN: NULL).
  Binder& maybe(double v) { return v == v ? (*this)(v) : null(); }
  /// A TEXT that may be absent ("": NULL).
  Binder& text_or_null(const std::string& v) { return v.empty() ? null() : (*this)(v); }
  sqlite3_stmt* done() const { return s; }
};
using I = std::int64_t;
}  // namespace

void Trace::run(const std::string& scenario, const std::string& topology, std::uint64_t seed, std::uint32_t ranks,
                const std::string& payload) {
  sqlite3_stmt* s = prep("INSERT INTO run(id,scenario,topology,seed,ranks,payload) VALUES(1,?,?,?,?,?)");
  if (!s) return;
  const bool ok = put(Binder{s}(scenario)(topology)(static_cast<I>(seed))(static_cast<I>(ranks))(payload).done());
  sqlite3_finalize(s);
  if (ok) row_done();
}

void Trace::run_end(std::uint64_t sim_end_ns, int exit_code, const std::string& status, double wall_s) {
  const char* sql = "UPDATE run SET sim_end_ns=?, exit_code=?, status=?, wall_seconds=? WHERE id=1";
  if (db_ && failed_) {
    // Best effort, in a transaction of its own: if the committed part holds the run row, say why
    // the trace ends early. On a full disk this usually fails too; the error stays the first one.
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK) {
      Binder{s}(static_cast<I>(sim_end_ns))(static_cast<I>(2))(std::string("trace error"))(wall_s);
      sqlite3_step(s);
    }
    sqlite3_finalize(s);
    return;
  }
  sqlite3_stmt* s = prep(sql);
  if (!s) return;
  const bool ok = put(Binder{s}(static_cast<I>(sim_end_ns))(static_cast<I>(exit_code))(status)(wall_s).done());
  sqlite3_finalize(s);
  if (ok) row_done();
}

void Trace::npu(std::uint32_t id, const std::string& name, std::uint32_t server, std::uint32_t device_id,
                const std::string& model, std::uint64_t hbm) {
  if (!writable()) return;
  if (!put(Binder{st_npu_}(static_cast<I>(id))(name)(static_cast<I>(server))(static_cast<I>(device_id))(model)(static_cast<I>(hbm)).done())) return;
  row_done();
}

void Trace::link(std::uint32_t id, const std::string& name, const std::string& kind, std::int64_t a, std::int64_t b,
                 std::uint64_t bw, double lat) {
  if (!writable()) return;
  if (!put(Binder{st_link_}(static_cast<I>(id))(name)(kind)(a)(b)(static_cast<I>(bw))(lat).done())) return;
  row_done();
}

void Trace::operation(std::uint32_t rank, std::uint64_t seq, const std::string& kind, const std::string& algo,
                      std::uint64_t bytes, const std::string& dtype, const std::string& op, std::int64_t peer,
                      std::uint32_t step, std::uint32_t rep, double start_ns, double end_ns, const OpChoice& choice,
                      const OpOutcome& outcome) {
  if (!writable()) return;
  Binder b{st_op_};
  b(static_cast<I>(rank))(static_cast<I>(seq))(kind)(algo)(static_cast<I>(bytes))(dtype)(op)(peer)(static_cast<I>(step))(static_cast<I>(rep));
  b.maybe(start_ns).maybe(end_ns)(choice.by)(choice.est_us)(choice.runner_up)(choice.runner_up_est_us)(outcome.status).text_or_null(outcome.error);
  if (!put(b.done())) return;
  row_done();
}

void Trace::link_counter(std::uint32_t link, const std::string& dir, double t, std::uint64_t bytes, std::uint64_t pieces,
                         double busy, std::uint64_t rx_retry, double credit_stall) {
  if (!writable()) return;
  if (!put(Binder{st_ctr_}(static_cast<I>(link))(dir)(t)(static_cast<I>(bytes))(static_cast<I>(pieces))(busy)(static_cast<I>(rx_retry))(credit_stall).done())) return;
  row_done();
}

void Trace::port_counter(const std::string& node, std::uint32_t port, std::uint64_t tx_bytes, std::uint64_t tx_packets,
                         std::uint64_t drops, std::uint64_t ecn, std::uint64_t ps, std::uint64_t pr, double paused, std::uint64_t maxq,
                         double busy, const std::string& peer, std::int64_t peer_port, std::uint64_t pfcwd_storms) {
  if (!writable()) return;
  if (!put(Binder{st_port_}(node)(static_cast<I>(port))(static_cast<I>(tx_bytes))(static_cast<I>(tx_packets))(static_cast<I>(drops))(static_cast<I>(ecn))(
      static_cast<I>(ps))(static_cast<I>(pr))(paused)(static_cast<I>(maxq))(busy)(peer)(peer_port)(static_cast<I>(pfcwd_storms)).done())) return;
  row_done();
}

void Trace::sample(double t, double interval, const char* kind, const std::string& object, const char* metric, double value) {
  if (!writable()) return;
  if (!put(Binder{st_sample_}(t)(interval)(std::string(kind))(object)(std::string(metric))(value).done())) return;
  row_done();
}

void Trace::task(std::uint32_t rank, std::uint32_t stream, std::int64_t op_seq, const char* kind, double start, double end,
                 std::uint64_t bytes, std::int64_t peer) {
  if (!writable()) return;
  if (!put(Binder{st_task_}(static_cast<I>(rank))(static_cast<I>(stream))(op_seq)(std::string(kind))(start)(end)(static_cast<I>(bytes))(peer).done())) return;
  row_done();
}

void Trace::route(const RouteRow& r) {
  if (!writable()) return;
  if (!put(Binder{st_route_}(r.t_ns)(static_cast<I>(r.comm))(static_cast<I>(r.src))(static_cast<I>(r.dst))(static_cast<I>(r.qp))(r.transport)(r.nic)(
               static_cast<I>(r.udp_sport))(r.hops)(r.bandwidth_GBps)(r.latency_us)(r.congestion)(r.cost)(r.reason)(r.trigger)
               .done()))
    return;
  row_done();
}

void Trace::failover(const FailoverRow& f) {
  if (!writable()) return;
  if (!put(Binder{st_failover_}(static_cast<I>(f.comm))(f.fault).maybe(f.fault_at_ns)(f.detected_ns)(static_cast<I>(f.detected_by))(f.origin)(
               static_cast<I>(f.op_seq))(f.action).text_or_null(f.path_before).text_or_null(f.path_after)(static_cast<I>(f.bytes_resent))
               .maybe(f.resumed_ns)(static_cast<I>(f.code))
               .done()))
    return;
  row_done();
}

void Trace::counter(const std::string& name, double value) {
  if (!writable()) return;
  if (!put(Binder{st_counter_}(name)(value).done())) return;
  row_done();
}

void Trace::fault(const FaultRow& f) {
  if (!writable()) return;
  Binder b{st_fault_};
  b(static_cast<I>(f.id))(f.type)(f.target)(static_cast<I>(f.fired)).maybe(f.injected_ns)(static_cast<I>(f.transitions))
      .maybe(f.first_detected_ns).maybe(f.last_detected_ns).text_or_null(f.actions).maybe(f.resumed_ns)(static_cast<I>(f.bytes_resent));
  if (f.step >= 0) b(f.step)(f.rep);
  else b.null().null();
  b.maybe(f.op_time_us).maybe(f.median_us);
  if (!put(b.done())) return;
  row_done();
}

void Trace::provenance(const std::string& key, const std::string& value) {
  if (!writable()) return;
  if (!put(Binder{st_prov_}(key)(value).done())) return;
  row_done();
}

void Trace::log(double t, std::int64_t rank, int level, const std::string& msg) {
  if (!writable()) return;
  if (!put(Binder{st_log_}(t)(rank)(static_cast<I>(level))(msg).done())) return;
  row_done();
}

void Trace::check(std::uint32_t rank, std::uint32_t step, std::uint32_t rep, bool ok, std::uint64_t mism,
                  const std::string& detail, const char* mode, double tolerance) {
  if (!writable()) return;
  if (!put(Binder{st_check_}(static_cast<I>(rank))(static_cast<I>(step))(static_cast<I>(rep))(static_cast<I>(ok))(
      static_cast<I>(mism))(detail)(std::string(mode))(tolerance).done())) return;
  row_done();
}

void Trace::summary(std::uint32_t step, std::uint32_t rep, const std::string& kind, std::uint64_t bytes, double t,
                    double algbw, double busbw) {
  if (!writable()) return;
  if (!put(Binder{st_sum_}(static_cast<I>(step))(static_cast<I>(rep))(kind)(static_cast<I>(bytes))(t)(algbw)(busbw).done())) return;
  row_done();
}

void Trace::train_step(const TrainStepRow& t) {
  if (!writable()) return;
  if (!put(Binder{st_train_}(static_cast<I>(t.step))(static_cast<I>(t.rep))(static_cast<I>(t.ranks))(static_cast<I>(t.critical_rank))(
               t.iteration_us)(t.compute_us)(t.comm_us)(t.exposed_comm_us)(t.overlap)(static_cast<I>(t.grad_bytes)).done()))
    return;
  row_done();
}

}  // namespace sim
