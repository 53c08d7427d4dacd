// Read-only access to an hcsim trace (docs/trace-schema.md#reading) for the commands that read
// one: trace, top, health, plot, routes, diff, summary (docs/tools.md). Never modifies the trace. open()
// tells apart a trace that is finished, unfinished (no end recorded and no run writing it: killed
// or crashed), being written (a run holds FILE.lock: read through the writer's WAL, one
// consistent snapshot) and corrupt (a truncated file, a damaged page: open() fails, "corrupt").
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace hcsim {

/// One result row: column values by index.
class Row {
 public:
  explicit Row(sqlite3_stmt* s) : s_(s) {}
  std::int64_t i(int col) const;
  double d(int col) const;
  std::string s(int col) const;  ///< "" for NULL
  bool null(int col) const;
  bool number(int col) const;  ///< an INTEGER or REAL value

 private:
  sqlite3_stmt* s_;
};

/// What open() found. kUnfinished and kBeingWritten: run.status is NULL (no end recorded); the
/// difference is whether a run holds the trace's lock (flock on FILE.lock, sim::Trace::lock).
enum class TraceState { kFinished, kUnfinished, kBeingWritten };

class TraceDb {
 public:
  TraceDb() = default;
  TraceDb(const TraceDb&) = delete;
  TraceDb& operator=(const TraceDb&) = delete;
  ~TraceDb();
  /// False with `why` ("FILE: no such file", "FILE: not an hcsim trace (...)", "FILE: corrupt:
  /// ...", "FILE: being written: ... nothing committed yet") when it cannot be read as an hcsim
  /// trace. Reads hold one snapshot until the TraceDb is destroyed.
  bool open(const std::string& path, std::string* why);
  TraceState state() const { return state_; }
  /// For commands that show what a trace holds: a one-line warning for an unfinished trace or
  /// one being written ("" for a finished one); print_banner() puts it on stderr.
  std::string banner() const;
  void print_banner() const;
  /// For commands that judge a whole run (health, diff): false with `why` unless it is finished.
  bool require_finished(const char* command, std::string* why) const;
  bool has_table(const std::string& name) const;
  bool has_column(const std::string& table, const std::string& column) const;
  /// Runs `sql` (parameters bound in order: int64 or text), calling `row` per row; false with
  /// `why` on an SQL error (a damaged trace).
  bool query(const std::string& sql, const std::function<void(const Row&)>& row, std::string* why,
             const std::vector<std::string>& text_params = {}) const;
  /// The single value of `sql`, or `fallback` if there is no row or it is NULL.
  double scalar(const std::string& sql, double fallback = 0) const;
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  TraceState state_ = TraceState::kFinished;
};

/// Does FILE start with the SQLite header (so it is a database, possibly a damaged one)?
bool is_sqlite_file(const std::string& path);

/// Does a process hold the flock(2) sim::Trace::lock takes on TRACE.lock (a run writing TRACE)?
/// Probes with a non-blocking shared lock, released at once; never creates the lock file.
bool trace_lock_held(const std::string& trace_path);

/// "10us", "1.5ms", "250ns", "2s", or a bare number of nanoseconds → nanoseconds. False on
/// anything else (negative, no number, unknown unit).
bool parse_time_ns(const std::string& s, double* ns);

/// "0-7,12" → sorted distinct ranks; false with `why` on a malformed list.
bool parse_rank_list(const std::string& s, std::vector<std::int64_t>* ranks, std::string* why);

/// Natural order of names: runs of digits compare as numbers ("leaf2:4" < "leaf10:4",
/// "rank 0 -> 8" < "rank 0 -> 16"), the rest byte by byte; ties broken by plain order.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace hcsim
