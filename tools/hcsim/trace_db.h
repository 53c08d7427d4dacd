// Read-only access to a finished hcsim trace (docs/trace-schema.md) for the commands that read
// one: trace, top, health, plot (docs/tools.md). Opens the file immutable (no journal, no locks,
// never modified) after checking it is an SQLite database whose meta table says generator = hcsim.
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

 private:
  sqlite3_stmt* s_;
};

class TraceDb {
 public:
  TraceDb() = default;
  TraceDb(const TraceDb&) = delete;
  TraceDb& operator=(const TraceDb&) = delete;
  ~TraceDb();
  /// False with `why` ("FILE: no such file", "FILE: not an SQLite database", "FILE: not an hcsim
  /// trace (...)") when it cannot be read as an hcsim trace.
  bool open(const std::string& path, std::string* why);
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
};

/// "10us", "1.5ms", "250ns", "2s", or a bare number of nanoseconds → nanoseconds. False on
/// anything else (negative, no number, unknown unit).
bool parse_time_ns(const std::string& s, double* ns);

/// "0-7,12" → sorted distinct ranks; false with `why` on a malformed list.
bool parse_rank_list(const std::string& s, std::vector<std::int64_t>* ranks, std::string* why);

}  // namespace hcsim
