// SQLite trace (docs/trace-schema.md). Rows are buffered in one open transaction and committed
// every `batch` rows and at close, so a killed run leaves a valid database of what was committed.
#pragma once
#include <cstdint>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace sim {

constexpr int kTraceSchemaVersion = 2;

class Trace {
 public:
  Trace() = default;
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  /// Create a fresh database at `path` (an existing file is replaced). False + `why` on failure.
  bool open(const std::string& path, std::string* why);
  bool is_open() const { return db_ != nullptr; }
  void close();

  void run(const std::string& scenario, const std::string& topology, std::uint64_t seed, std::uint32_t ranks,
           const std::string& payload);
  void run_end(std::uint64_t sim_end_ns, int exit_code, const std::string& status, double wall_s);
  void npu(std::uint32_t id, const std::string& name, std::uint32_t server, std::uint32_t device_id,
           const std::string& model, std::uint64_t hbm_bytes);
  void link(std::uint32_t id, const std::string& name, const std::string& kind, std::int64_t a, std::int64_t b,
            std::uint64_t bw, double latency_ns);
  void operation(std::uint32_t rank, std::uint64_t seq, const std::string& kind, const std::string& algo,
                 std::uint64_t bytes, const std::string& dtype, const std::string& op, std::int64_t peer,
                 std::uint32_t step, std::uint32_t rep, double start_ns, double end_ns);
  void link_counter(std::uint32_t link, const std::string& dir, double t_ns, std::uint64_t bytes, std::uint64_t pieces,
                    double busy_ns, std::uint64_t rx_retry, double credit_stall_ns);
  void port_counter(const std::string& node, std::uint32_t port, std::uint64_t tx_bytes, std::uint64_t tx_packets,
                    std::uint64_t drops, std::uint64_t ecn_marked, std::uint64_t pause_sent, std::uint64_t pause_rcv,
                    double paused_ns, std::uint64_t max_queue_bytes);
  void counter(const std::string& name, double value);
  void log(double t_ns, std::int64_t rank, int level, const std::string& msg);
  void check(std::uint32_t rank, std::uint32_t step, std::uint32_t rep, bool ok, std::uint64_t mismatches,
             const std::string& detail);
  void summary(std::uint32_t step, std::uint32_t rep, const std::string& kind, std::uint64_t bytes, double time_us,
               double algbw, double busbw);

 private:
  sqlite3_stmt* prep(const char* sql);
  void exec(const char* sql);
  void row_done();
  sqlite3* db_ = nullptr;
  sqlite3_stmt *st_npu_ = nullptr, *st_link_ = nullptr, *st_op_ = nullptr, *st_ctr_ = nullptr, *st_log_ = nullptr,
               *st_check_ = nullptr, *st_sum_ = nullptr,
               *st_port_ = nullptr, *st_counter_ = nullptr;
  std::uint64_t pending_ = 0, batch_ = 2000;
};

}  // namespace sim
