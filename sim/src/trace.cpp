#include "sim/trace.h"

#include <sqlite3.h>

#include <cstdio>
#include <stdexcept>

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
                        dtype TEXT, reduce_op TEXT, peer INTEGER, step INTEGER, rep INTEGER, start_ns REAL, end_ns REAL);
CREATE TABLE link_counters(link_id INTEGER, direction TEXT, sim_time_ns REAL, bytes INTEGER, pieces INTEGER,
                           busy_ns REAL, rx_retry INTEGER, credit_stall_ns REAL);
CREATE TABLE port_counters(node TEXT, port INTEGER, tx_bytes INTEGER, tx_packets INTEGER, drops INTEGER, ecn_marked INTEGER,
                           pause_sent INTEGER, pause_rcv INTEGER, paused_ns REAL, max_queue_bytes INTEGER);
CREATE TABLE counters(name TEXT PRIMARY KEY, value REAL);
CREATE TABLE logs(id INTEGER PRIMARY KEY, sim_time_ns REAL, rank INTEGER, level INTEGER, message TEXT);
CREATE TABLE checks(rank INTEGER, step INTEGER, rep INTEGER, ok INTEGER, mismatches INTEGER, detail TEXT);
CREATE TABLE summary(step INTEGER, rep INTEGER, kind TEXT, bytes INTEGER, time_us REAL, algbw_GBps REAL,
                     busbw_GBps REAL);
)SQL";
}  // namespace

Trace::~Trace() { close(); }

bool Trace::open(const std::string& path, std::string* why) {
  std::remove(path.c_str());
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    *why = db_ ? sqlite3_errmsg(db_) : "cannot open";
    sqlite3_close(db_);
    db_ = nullptr;
    return false;
  }
  char* err = nullptr;
  // journal_mode=DELETE: one file; each committed batch is durable on its own.
  if (sqlite3_exec(db_, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=NORMAL;", nullptr, nullptr, &err) != SQLITE_OK ||
      sqlite3_exec(db_, kSchema, nullptr, nullptr, &err) != SQLITE_OK) {
    *why = err ? err : "cannot create schema";
    sqlite3_free(err);
    sqlite3_close(db_);
    db_ = nullptr;
    return false;
  }
  exec(("INSERT INTO meta VALUES('schema_version','" + std::to_string(kTraceSchemaVersion) + "');").c_str());
  exec("INSERT INTO meta VALUES('generator','hcsim');");
  st_npu_ = prep("INSERT INTO npus VALUES(?,?,?,?,?,?)");
  st_link_ = prep("INSERT INTO links VALUES(?,?,?,?,?,?,?)");
  st_op_ = prep("INSERT INTO operations(rank,seq,kind,algorithm,bytes,dtype,reduce_op,peer,step,rep,start_ns,end_ns) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  st_ctr_ = prep("INSERT INTO link_counters VALUES(?,?,?,?,?,?,?,?)");
  st_port_ = prep("INSERT INTO port_counters VALUES(?,?,?,?,?,?,?,?,?,?)");
  st_counter_ = prep("INSERT INTO counters VALUES(?,?)");
  st_log_ = prep("INSERT INTO logs(sim_time_ns,rank,level,message) VALUES(?,?,?,?)");
  st_check_ = prep("INSERT INTO checks VALUES(?,?,?,?,?,?)");
  st_sum_ = prep("INSERT INTO summary VALUES(?,?,?,?,?,?,?)");
  exec("BEGIN");
  return true;
}

void Trace::close() {
  if (!db_) return;
  exec("COMMIT");
  for (auto* s : {st_npu_, st_link_, st_op_, st_ctr_, st_log_, st_check_, st_sum_, st_port_, st_counter_}) sqlite3_finalize(s);
  sqlite3_close(db_);
  db_ = nullptr;
}

sqlite3_stmt* Trace::prep(const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("trace: ") + sqlite3_errmsg(db_));
  return s;
}

void Trace::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("trace: " + m);
  }
}

void Trace::row_done() {
  if (++pending_ >= batch_) {
    exec("COMMIT");
    exec("BEGIN");
    pending_ = 0;
  }
}

namespace {
struct Binder {
  sqlite3_stmt* s;
  int i = 1;
  Binder& operator()(std::int64_t v) { sqlite3_bind_int64(s, i++, v); return *this; }
  Binder& operator()(double v) { sqlite3_bind_double(s, i++, v); return *this; }
  Binder& operator()(const std::string& v) { sqlite3_bind_text(s, i++, v.c_str(), -1, SQLITE_TRANSIENT); return *this; }
  void step(sqlite3* db) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) throw std::runtime_error(std::string("trace: ") + sqlite3_errmsg(db));
  }
};
using I = std::int64_t;
}  // namespace

void Trace::run(const std::string& scenario, const std::string& topology, std::uint64_t seed, std::uint32_t ranks,
                const std::string& payload) {
  if (!db_) return;
  sqlite3_stmt* s = prep("INSERT INTO run(id,scenario,topology,seed,ranks,payload) VALUES(1,?,?,?,?,?)");
  Binder{s}(scenario)(topology)(static_cast<I>(seed))(static_cast<I>(ranks))(payload).step(db_);
  sqlite3_finalize(s);
  row_done();
}

void Trace::run_end(std::uint64_t sim_end_ns, int exit_code, const std::string& status, double wall_s) {
  if (!db_) return;
  sqlite3_stmt* s = prep("UPDATE run SET sim_end_ns=?, exit_code=?, status=?, wall_seconds=? WHERE id=1");
  Binder{s}(static_cast<I>(sim_end_ns))(static_cast<I>(exit_code))(status)(wall_s).step(db_);
  sqlite3_finalize(s);
  row_done();
}

void Trace::npu(std::uint32_t id, const std::string& name, std::uint32_t server, std::uint32_t device_id,
                const std::string& model, std::uint64_t hbm) {
  if (!db_) return;
  Binder{st_npu_}(static_cast<I>(id))(name)(static_cast<I>(server))(static_cast<I>(device_id))(model)(static_cast<I>(hbm)).step(db_);
  row_done();
}

void Trace::link(std::uint32_t id, const std::string& name, const std::string& kind, std::int64_t a, std::int64_t b,
                 std::uint64_t bw, double lat) {
  if (!db_) return;
  Binder{st_link_}(static_cast<I>(id))(name)(kind)(a)(b)(static_cast<I>(bw))(lat).step(db_);
  row_done();
}

void Trace::operation(std::uint32_t rank, std::uint64_t seq, const std::string& kind, const std::string& algo,
                      std::uint64_t bytes, const std::string& dtype, const std::string& op, std::int64_t peer,
                      std::uint32_t step, std::uint32_t rep, double start_ns, double end_ns) {
  if (!db_) return;
  Binder{st_op_}(static_cast<I>(rank))(static_cast<I>(seq))(kind)(algo)(static_cast<I>(bytes))(dtype)(op)(peer)(
      static_cast<I>(step))(static_cast<I>(rep))(start_ns)(end_ns).step(db_);
  row_done();
}

void Trace::link_counter(std::uint32_t link, const std::string& dir, double t, std::uint64_t bytes, std::uint64_t pieces,
                         double busy, std::uint64_t rx_retry, double credit_stall) {
  if (!db_) return;
  Binder{st_ctr_}(static_cast<I>(link))(dir)(t)(static_cast<I>(bytes))(static_cast<I>(pieces))(busy)(static_cast<I>(rx_retry))(credit_stall).step(db_);
  row_done();
}

void Trace::port_counter(const std::string& node, std::uint32_t port, std::uint64_t tx_bytes, std::uint64_t tx_packets,
                         std::uint64_t drops, std::uint64_t ecn, std::uint64_t ps, std::uint64_t pr, double paused, std::uint64_t maxq) {
  if (!db_) return;
  Binder{st_port_}(node)(static_cast<I>(port))(static_cast<I>(tx_bytes))(static_cast<I>(tx_packets))(static_cast<I>(drops))(static_cast<I>(ecn))(
      static_cast<I>(ps))(static_cast<I>(pr))(paused)(static_cast<I>(maxq)).step(db_);
  row_done();
}

void Trace::counter(const std::string& name, double value) {
  if (!db_) return;
  Binder{st_counter_}(name)(value).step(db_);
  row_done();
}

void Trace::log(double t, std::int64_t rank, int level, const std::string& msg) {
  if (!db_) return;
  Binder{st_log_}(t)(rank)(static_cast<I>(level))(msg).step(db_);
  row_done();
}

void Trace::check(std::uint32_t rank, std::uint32_t step, std::uint32_t rep, bool ok, std::uint64_t mism,
                  const std::string& detail) {
  if (!db_) return;
  Binder{st_check_}(static_cast<I>(rank))(static_cast<I>(step))(static_cast<I>(rep))(static_cast<I>(ok))(
      static_cast<I>(mism))(detail).step(db_);
  row_done();
}

void Trace::summary(std::uint32_t step, std::uint32_t rep, const std::string& kind, std::uint64_t bytes, double t,
                    double algbw, double busbw) {
  if (!db_) return;
  Binder{st_sum_}(static_cast<I>(step))(static_cast<I>(rep))(kind)(static_cast<I>(bytes))(t)(algbw)(busbw).step(db_);
  row_done();
}

}  // namespace sim
