// SQLite trace (docs/trace-schema.md). Rows are buffered in one open transaction and committed
// every `batch` rows and at close, so a killed run leaves a valid database of what was committed.
// While open the database is in WAL mode (readers see committed batches without stalling the
// commits; a killed run's are in "<path>-wal"); close() checkpoints it back into one file.
//
// The database is written in place at its final path (not into a temporary file renamed at the
// end), so the batches committed before a crash, kill or full disk are found where the user asked.
// For the same reason a run must not replace a trace another run is writing: open() takes an
// exclusive flock(2) on "<path>.lock" (created beside the database, removed at close) before it
// replaces anything, and holds it until close().
//
// No method throws after open(): the first SQLite error (a full disk, an I/O error) rolls back the
// batch in progress, keeps what was committed, stops further writes, asks the simulation to stop
// (sim/stop.h) and is reported by failed()/error().
#pragma once
#include <cstdint>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace sim {

// 3: operations.chosen_by, est_us, runner_up, runner_up_est_us.
// 4: counter_samples, tasks, port_counters.busy_ns.
// 5: routes; port_counters.peer, peer_port.
// 6: operations.status, error (failed, timed-out and unfinished operations have rows).
/// Opens the SQLite database `path` read-only, by URI (the name's %, ? and # escaped); `immutable`
/// adds immutable=1: no locks, no journal or WAL read, no file created (a finished trace nobody
/// writes). Returns sqlite3_open_v2's code; *db is set as it sets it (close it in every case).
/// The one read-only open of hcsim: the trace writer's check of a file it would replace and the
/// trace-reading commands (tools/hcsim/trace_db.cpp) use it.
int open_sqlite_readonly(const std::string& path, bool immutable, sqlite3** db);

constexpr int kTraceSchemaVersion = 11;  // 11: train_steps; 10: port_counters.pfcwd_storms (docs/trace-schema.md#versions)

/// One `routes` row: a route the library chose, with the path the hardware forwards it on.
/// One row of `failovers` (docs/trace-schema.md): what one rank's library did about a fault.
/// A train_steps row (the runner's TrainStepReport).
struct TrainStepRow {
  std::uint32_t step = 0, rep = 0, ranks = 0, critical_rank = 0;
  double iteration_us = 0, compute_us = 0, comm_us = 0, exposed_comm_us = 0, overlap = 0;
  std::uint64_t grad_bytes = 0;
};

struct FailoverRow {
  std::uint32_t comm = 0, detected_by = 0;
  std::int64_t origin = -1;
  std::uint64_t op_seq = 0, bytes_resent = 0;
  std::string fault, action, path_before, path_after;
  double fault_at_ns = 0, detected_ns = 0, resumed_ns = 0;  ///< NaN: none (fault_at: no injected fault before it)
  int code = 0;
};
struct RouteRow {
  double t_ns = 0;
  std::uint32_t comm = 0, src = 0, dst = 0, qp = 0, udp_sport = 0;
  std::string transport, nic, hops, reason, trigger;
  double bandwidth_GBps = 0, latency_us = 0, congestion = 0, cost = 0;
};

/// How a collective's algorithm was chosen (operations.chosen_by .. runner_up_est_us; empty for
/// operations that are not a choice).
struct OpChoice {
  std::string by, runner_up;
  double est_us = 0, runner_up_est_us = 0;
};

/// How an operation ended (operations.status, error): "ok", "failed", "timeout" or "unfinished",
/// and the error its rank got ("" for none: NULL).
struct OpOutcome {
  std::string status = "ok", error;
};

/// An injected fault's outcome (the `faults` table).
struct FaultRow {
  std::uint32_t id = 0;           ///< its index in the scenario's /faults (after --fault and --chaos)
  std::string type, target;       ///< "link_down", and what it hit
  bool fired = false;             ///< its injection time was reached before the run ended
  double injected_ns = 0;         ///< the first transition (NaN: never)
  std::uint32_t transitions = 0;  ///< down/up transitions applied (a flap of count 2: 4)
  double first_detected_ns = 0, last_detected_ns = 0;  ///< failovers rows it led to (NaN: none)
  std::string actions;            ///< "retry: ranks 0-15; warn: ranks 3" (empty: none)
  double resumed_ns = 0;          ///< the last rank's traffic resumed (NaN: none)
  std::uint64_t bytes_resent = 0;
  std::int64_t step = -1, rep = -1;   ///< the workload repetition in flight when it fired
  double op_time_us = 0, median_us = 0;  ///< that repetition's time; its step's untouched repetitions' median (NaN: none)
};

class Trace {
 public:
  Trace() = default;
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  /// Create a fresh database at `path`. An existing file is replaced only if it is an hcsim trace
  /// (its meta table says generator=hcsim; checked read-only) or `force` is set; a directory,
  /// device, FIFO or socket is never replaced. Fails if another run holds the path's lock.
  /// False + `why` (the reason, without the path) on failure; nothing is modified then. A caller
  /// whose user can set `force` names the option in `force_flag`: a refused regular file's reason
  /// then says it (e.g. "--force replaces it").
  bool open(const std::string& path, std::string* why, bool force = false, const char* force_flag = nullptr);
  bool is_open() const { return db_ != nullptr; }
  /// Commit what is pending, close the database and release the lock. Never throws.
  void close() noexcept;
  /// The trace could not be written; error() says why and what the file keeps.
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }

  void run(const std::string& scenario, const std::string& topology, std::uint64_t seed, std::uint32_t ranks,
           const std::string& payload);
  void run_end(std::uint64_t sim_end_ns, int exit_code, const std::string& status, double wall_s);
  void npu(std::uint32_t id, const std::string& name, std::uint32_t server, std::uint32_t device_id,
           const std::string& model, std::uint64_t hbm_bytes);
  void link(std::uint32_t id, const std::string& name, const std::string& kind, std::int64_t a, std::int64_t b,
            std::uint64_t bw, double latency_ns);
  void operation(std::uint32_t rank, std::uint64_t seq, const std::string& kind, const std::string& algo,
                 std::uint64_t bytes, const std::string& dtype, const std::string& op, std::int64_t peer,
                 std::uint32_t step, std::uint32_t rep, double start_ns, double end_ns,
                 const OpChoice& choice = OpChoice{}, const OpOutcome& outcome = OpOutcome{});
  void link_counter(std::uint32_t link, const std::string& dir, double t_ns, std::uint64_t bytes, std::uint64_t pieces,
                    double busy_ns, std::uint64_t rx_retry, double credit_stall_ns);
  void port_counter(const std::string& node, std::uint32_t port, std::uint64_t tx_bytes, std::uint64_t tx_packets,
                    std::uint64_t drops, std::uint64_t ecn_marked, std::uint64_t pause_sent, std::uint64_t pause_rcv,
                    double paused_ns, std::uint64_t max_queue_bytes, double busy_ns, const std::string& peer = "",
                    std::int64_t peer_port = -1, std::uint64_t pfcwd_storms = 0);
  /// One `counter_samples` row: `metric` of `object` in [t_ns, t_ns + interval_ns).
  void sample(double t_ns, double interval_ns, const char* kind, const std::string& object, const char* metric, double value);
  /// One `tasks` row: a stream task the NPU executed.
  void task(std::uint32_t rank, std::uint32_t stream, std::int64_t op_seq, const char* kind, double start_ns, double end_ns,
            std::uint64_t bytes, std::int64_t peer);
  void route(const RouteRow& r);
  void failover(const FailoverRow& f);
  void counter(const std::string& name, double value);
  /// One `faults` row: what an injected fault did (docs/trace-schema.md#faults). Times in ns; a
  /// NaN time or a negative step is NULL.
  void fault(const FaultRow& f);
  /// One `provenance` row: how the run was made (hcsim version, command line, overrides, the
  /// effective scenario and topology; docs/trace-schema.md#provenance).
  void provenance(const std::string& key, const std::string& value);
  /// Rows per committed batch (default 2000); the end-of-run bulk (counter_samples) uses larger
  /// batches: a commit costs a sync, and nothing else is written meanwhile.
  void set_batch(std::uint64_t rows) { batch_ = rows ? rows : 1; }
  void log(double t_ns, std::int64_t rank, int level, const std::string& msg);
  /// A result check: `mode` "exact" (bit for bit) or "bound" (a float sum compared within
  /// `tolerance`, the largest an element was given).
  void check(std::uint32_t rank, std::uint32_t step, std::uint32_t rep, bool ok, std::uint64_t mismatches,
             const std::string& detail, const char* mode, double tolerance);
  void summary(std::uint32_t step, std::uint32_t rep, const std::string& kind, std::uint64_t bytes, double time_us,
               double algbw, double busbw);
  /// One train_step repetition (docs/trace-schema.md#train_steps).
  void train_step(const TrainStepRow& t);

 private:
  sqlite3_stmt* prep(const char* sql);
  bool exec(const char* sql);
  bool put(sqlite3_stmt* s);  // step + reset; false (and fail()) on error
  bool writable() const { return db_ && !failed_; }
  void fail(const std::string& what);
  void row_done();
  bool lock(std::string* why);
  void unlock();
  sqlite3* db_ = nullptr;
  std::string path_, lock_path_, error_;
  int lock_fd_ = -1;
  bool failed_ = false;
  std::uint64_t committed_ = 0;
  sqlite3_stmt *st_npu_ = nullptr, *st_link_ = nullptr, *st_op_ = nullptr, *st_ctr_ = nullptr, *st_log_ = nullptr,
               *st_check_ = nullptr, *st_sum_ = nullptr, *st_train_ = nullptr,
               *st_port_ = nullptr, *st_counter_ = nullptr, *st_sample_ = nullptr, *st_task_ = nullptr, *st_route_ = nullptr,
               *st_failover_ = nullptr, *st_fault_ = nullptr, *st_prov_ = nullptr;
  std::uint64_t pending_ = 0, batch_ = 2000;
};

}  // namespace sim
