// What the library reports (hcomm::DriverObserver) and what the simulator notes, turned into the
// trace and the runner's records (docs/trace-schema.md): operations between their markers
// (`operations` rows, per-phase spans, per-NPU intervals), route decisions with the hops the
// hardware forwards on (`routes`), logs, failovers, stream tasks (`tasks`).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "hcomm/driver.h"
#include "models/machine.h"
#include "sim/config/topology.h"
#include "sim/driver/host_waits.h"
#include "sim/trace.h"

namespace sim {

struct OpRecord {
  hcomm::OpInfo info;
  std::uint32_t step = 0, rep = 0;
  models::Tick start = 0, end = 0;
  bool started = false, ended = false;
};

class SimObserver final : public hcomm::DriverObserver {
 public:
  SimObserver(const models::Machine& m, const Topology& t, const RankMap& ranks, Trace* trace, bool echo_logs);

  // hcomm::DriverObserver
  void route_decided(std::uint32_t device, const hcomm::RouteInfo& r) override;
  bool route_reports() override { return trace_ && trace_routes_; }
  void profile_op(std::uint32_t device, std::uint64_t begin_key, std::uint64_t end_key, const hcomm::OpInfo& info) override;
  void log(std::uint32_t device, int level, const std::string& line) override;
  void failover_reported(std::uint32_t device, const hcomm::FailoverInfo& f) override;

  /// A simulator-side log line (trace only, not echoed).
  void note(std::uint32_t rank, int level, const std::string& line);
  std::uint64_t log_lines(int level) const { return level >= 0 && level < 4 ? log_count_[level] : 0; }
  /// Write the library's route decisions as `routes` rows (the default), or not (/trace/routes).
  void trace_routes(bool on) { trace_routes_ = on; }
  /// Write one `tasks` row per completed stream task (docs/trace-schema.md).
  void trace_tasks(bool on) { task_rows_ = on && trace_; }
  bool task_rows() const { return task_rows_; }
  /// A `tasks` row for task `t` of stream `s` of NPU `npu`.
  void task_done(std::uint32_t npu, std::uint32_t s, const models::Task& t, models::Tick start, models::Tick end);

  /// Step/rep labels attached to operations the rank announces from now on.
  void set_phase(std::uint32_t rank, std::uint32_t step, std::uint32_t rep) { phase_.at(rank) = {step, rep}; }
  /// The operation tag of a task submitted now on NPU `npu` (the open operation's seq, -1: none);
  /// the open operation's end marker closes it.
  std::int64_t tag_task(std::uint32_t npu, bool marker, std::uint64_t key);
  /// A marker task of NPU `npu` completed at `t`: an announced operation starts or ends.
  void on_marker(std::uint32_t npu, std::uint64_t key, models::Tick t);
  /// An operation timed by the host (e.g. a workload's host<->device copy): recorded like the
  /// library's operations, in the current phase of `rank`.
  void record_host_op(std::uint32_t rank, const std::string& kind, std::uint64_t bytes, models::Tick start, models::Tick end);
  /// Completed operations, aggregated as they complete (memory follows the workload's phases,
  /// not the number of operations): per (step, rep, kind), the first start and the last end.
  struct OpSpan { models::Tick start = 0, end = 0; };
  using SpanKey = std::tuple<std::uint32_t, std::uint32_t, std::string>;
  const std::map<SpanKey, OpSpan>& op_spans() const { return spans_; }
  /// Called when an announced operation starts (its begin marker), with its step/rep labels:
  /// the runner's fault injector times faults relative to a step by it.
  std::function<void(std::uint32_t step, std::uint32_t rep, const hcomm::OpInfo& info, models::Tick t)> on_op_start;
  /// Keep, per NPU, the [begin marker, end marker] interval of every announced operation that
  /// completes from now on (a train step's communication time, run/train_step.cpp).
  void log_op_intervals(std::uint32_t npus) { op_iv_.assign(npus, {}); }
  std::vector<std::pair<models::Tick, models::Tick>>& op_intervals(std::uint32_t npu) { return op_iv_.at(npu); }
  /// Operations announced whose end marker was not seen (failed, timed out, or cut short).
  std::vector<OpRecord> unfinished_ops() const;
  /// A fault was injected now (the failovers table's fault_at_ns).
  void fault_injected();
  const std::vector<models::Tick>& fault_times() const { return fault_ps_; }
  /// Every failover the library reported, in report order.
  const std::vector<hcomm::FailoverInfo>& failovers() const { return failovers_; }

 private:
  /// The path traffic from NPU a to NPU b over `transport` takes, as the hardware forwards it.
  std::string route_hops(std::uint32_t a, std::uint32_t b, const std::string& transport, std::uint16_t sport) const;
  void finish_op(const OpRecord& r);
  const models::Machine& m_;
  const Topology& topo_;
  const RankMap& ranks_;
  Trace* trace_;
  bool echo_;
  bool trace_routes_ = true, task_rows_ = false;
  std::uint64_t log_count_[4] = {0, 0, 0, 0};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> phase_;  // per rank: step, rep
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::size_t> begin_key_, end_key_;  // (npu,key) -> pending op
  std::vector<OpRecord> pending_;          // announced ops whose end marker has not been seen
  std::vector<std::size_t> free_pending_;  // slots of pending_ free for reuse
  std::map<SpanKey, OpSpan> spans_;
  std::vector<std::vector<std::pair<models::Tick, models::Tick>>> op_iv_;  // log_op_intervals
  // Per device: the operation the library is submitting (its seq and end marker key; seq -1: none).
  // Tasks submitted meanwhile, on any stream of the device, belong to it (tasks.op_seq).
  std::vector<std::pair<std::int64_t, std::uint64_t>> open_op_;
  std::vector<hcomm::FailoverInfo> failovers_;
  std::vector<models::Tick> fault_ps_;  // when each fault was injected
};

}  // namespace sim
