// What composes a run (docs/architecture.md#sim): elaborate the cluster, trace its devices, run the
// ranks, then summarize, count, trace and judge against the expectations.
#include "sim/runner.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <tuple>
#include <cstdlib>
#include <memory>
#include <vector>

#include <systemc>

#include "run/cluster.h"
#include "run/expect.h"
#include "run/live.h"
#include "run/report.h"
#include "run/summary.h"
#include "run/trace_sink.h"
#include "sim/provenance.h"
#include "sim/counters.h"
#include "sim/kernel.h"
#include "sim/stop.h"

namespace sim {

namespace {

// What the trace records besides its default tables: counter samples every `interval_ps` (0: off)
// and stream tasks.
void enable_observation(Cluster& c, models::Tick interval_ps, bool tasks, bool routes) {
  c.machine().enable_sampling(interval_ps);
  if (c.network()) c.network()->enable_sampling(interval_ps);
  c.driver().trace_tasks(tasks);
  c.driver().observer().trace_routes(routes);
}

// Operations that did not end (docs/trace-schema.md, operations.status): one row per operation a
// rank announced without its end marker, and one per rank that failed in a step before any
// operation of it was announced; each rank's outcome for the summary.
void record_outcomes(const Scenario& sc, Cluster& c, Trace& trace, RunResult& res) {
  const std::uint32_t n = c.nranks();
  using Key = std::pair<std::uint32_t, std::uint32_t>;
  auto status_of = [](const Cluster::StepError* e) -> std::string {
    if (!e) return "unfinished";
    return e->rc == HCOMM_E_TIMEOUT ? "timeout" : "failed";
  };
  auto err_at = [&](std::uint32_t r, const Key& k) -> const Cluster::StepError* {
    auto it = c.step_errors_[r].find(k);
    return it == c.step_errors_[r].end() ? nullptr : &it->second;
  };
  std::vector<OpRecord> open = c.driver().observer().unfinished_ops();
  std::sort(open.begin(), open.end(), [](const OpRecord& a, const OpRecord& b) {
    return std::make_tuple(a.info.rank, a.step, a.rep, a.info.seq, a.info.kind) <
           std::make_tuple(b.info.rank, b.step, b.rep, b.info.seq, b.info.kind);
  });
  std::set<std::pair<std::uint32_t, Key>> has_row;  // (rank, (step, rep)) with an unfinished operation
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& o : open) {
    const std::uint32_t r = o.info.rank;
    if (r >= n) continue;
    const Key k{o.step, o.rep};
    has_row.insert({r, k});
    const Cluster::StepError* e = err_at(r, k);
    trace.operation(r, o.info.seq, o.info.kind, o.info.algorithm, o.info.bytes, "", "", o.info.peer, o.step, o.rep,
                    o.started ? static_cast<double>(o.start) / 1e3 : nan, nan,
                    OpChoice{o.info.chosen_by, o.info.runner_up, o.info.est_ns / 1e3, o.info.runner_up_ns / 1e3},
                    OpOutcome{status_of(e), e ? e->error : std::string()});
  }
  auto lib_kind = [](const WorkloadStep& w) {  // the library's operation name
    if (w.kind == WorkloadOp::ReduceScatter) return std::string("reduce_scatter");
    if (w.kind == WorkloadOp::SendRecv) return std::string("send");
    return w.kind == WorkloadOp::Incast ? std::string("rdma_write") : w.op;
  };
  for (std::uint32_t r = 0; r < n; ++r) {
    // A step that failed before it announced an operation (e.g. its input copy) has a row too.
    for (const auto& [k, e] : c.step_errors_[r])
      if (!has_row.count({r, k}) && k.first < sc.workload.size())
        trace.operation(r, 0, lib_kind(sc.workload[k.first]), "", sc.workload[k.first].bytes, "", "", -1, k.first, k.second, nan,
                        static_cast<double>(e.t) / 1e3, OpChoice{}, OpOutcome{status_of(&e), e.error});
    if (c.done_[r] && c.step_errors_[r].empty()) continue;
    const std::string npu = sc.topology.npus[sc.topology.rank_to_npu[r]].name;
    auto where = [&](const Key& k) {
      if (k.first >= sc.workload.size()) return std::string();
      return " in step " + std::to_string(k.first) + " rep " + std::to_string(k.second) + " (" + sc.workload[k.first].op + ")";
    };
    if (!c.step_errors_[r].empty()) {
      const auto& [k, e] = *c.step_errors_[r].begin();
      const bool recovered = !c.workload().recovery()[r].empty() && c.done_[r] && !c.stopped_[r];
      (recovered ? res.rank_recovered : res.rank_outcomes).push_back("rank " + std::to_string(r) + " (" + npu + "): " + status_of(&e) + where(k) + ": " + e.error +
                                  (c.step_errors_[r].size() > 1 ? " (and in " + std::to_string(c.step_errors_[r].size() - 1) + " later steps)" : "") +
                                  (c.workload().recovery()[r].empty() ? "" : "; then " + c.workload().recovery()[r] + (c.done_[r] && !c.stopped_[r] ? ", finished its workload" : "")));
    } else {
      res.rank_outcomes.push_back("rank " + std::to_string(r) + " (" + npu + "): did not finish" + where(c.rank_at_[r]));
    }
  }
  res.faults = c.faults().log();
}

}  // namespace

RunResult run_scenario(const Scenario& sc, const RunOptions& opt) {
  auto wall0 = std::chrono::steady_clock::now();
  RunResult res;
  Trace trace;
  Trace* tp = nullptr;
  if (!opt.db_path.empty()) {
    std::string why;
    if (!trace.open(opt.db_path, &why, opt.force_db, "--force")) throw std::runtime_error(opt.db_path + ": cannot create trace database: " + why);
    tp = &trace;
  }
  configure_kernel();
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);  // "simulation stopped by user"
  auto cluster = std::make_unique<Cluster>("cluster", sc, opt, tp);
  cluster->trace_ = tp;
  if (tp)
    enable_observation(*cluster, opt.sample_interval_ps >= 0 ? static_cast<models::Tick>(opt.sample_interval_ps) : sc.sample_interval_ps,
                       opt.trace_tasks || sc.trace_tasks, sc.trace_routes);
  const std::uint32_t n = cluster->nranks();
  trace.run(sc.file, sc.topology.file, sc.seed, n, sc.store_bytes ? "real" : "timing");
  trace_devices(trace, sc.topology, cluster->machine(), n);
  trace.provenance("hcsim_version", build_version());
  trace.provenance("hcsim_commit", build_commit());
  for (const auto& [k, v] : opt.provenance) trace.provenance(k, v);
  trace.provenance("scenario_json", sc.scenario_json);
  trace.provenance("topology_json", sc.topology_json);
  for (const auto& [k, v] : sc.hcomm_env) setenv(k.c_str(), v.c_str(), 1);  // the library reads them at init
  cluster->faults().schedule();
  if (opt.host) {
    cluster->host_ = opt.host;
    opt.host->attach(cluster->driver(), *cluster);
  }
  cluster->start_ranks();
  std::unique_ptr<LiveMonitor> live;  // progress / --top: reads the wall clock every poll_events events
  if (opt.live.report) {
    live = std::make_unique<LiveMonitor>(*cluster, opt.live);
    cluster->sched().set_poll([m = live.get()] { m->poll(); }, opt.live.poll_events);
  }
  sc_core::sc_start();
  hcomm_finalize();  // what ranks that died (or failed) still held
  res.sim_end_ps = cluster->sched().reached();
  res.events = cluster->sched().events_processed();
  res.events_peak = cluster->sched().events_pending_peak();

  std::vector<Failure> failures = cluster->failures;
  for (std::uint32_t r = 0; r < n; ++r)
    if (!cluster->done_[r] && failures.size() < 100)
      failures.push_back({FailureKind::Unfinished, "rank " + std::to_string(r) + " did not finish its workload"});
  res.steps = summarize(sc, cluster->driver().observer().op_spans(), n, [&](std::uint32_t step) {
    std::uint64_t senders = 0;
    for (std::uint32_t q = 0; q < n; ++q) senders += cluster->workload().incast_sender(sc.workload[step], q) ? 1 : 0;
    return senders;
  });
  for (auto& s : res.steps) {
    const auto& by_rep = cluster->checks().tallies()[s.step].by_rep;
    auto tally = by_rep.find(s.rep);
    if (tally != by_rep.end()) { s.checked = tally->second.first; s.failed = tally->second.second; }
  }
  {  // train_step repetitions: a summary row each (the iteration time) and their train_steps rows
    res.train = cluster->train().reports();
    for (const auto& t : res.train) {
      StepSummary u;
      u.step = t.step;
      u.rep = t.rep;
      u.kind = "train_step";
      u.bytes = t.grad_bytes;
      u.time_us = t.iteration_us;
      res.steps.push_back(u);
      trace.train_step({t.step, t.rep, t.ranks, t.critical_rank, t.iteration_us, t.compute_us, t.comm_us, t.exposed_comm_us, t.overlap,
                        t.grad_bytes});
    }
    if (!res.train.empty())
      std::stable_sort(res.steps.begin(), res.steps.end(),
                       [](const StepSummary& a, const StepSummary& b) { return std::tie(a.step, a.rep) < std::tie(b.step, b.rep); });
  }
  trace_summaries(trace, res.steps);
  record_outcomes(sc, *cluster, trace, res);
  expect_limits(sc.expect, res.steps, failures);
  expect_steps(sc, res.steps, failures);
  std::size_t expected_ops = 0;
  for (auto& w : sc.workload) expected_ops += w.repeat;
  if (res.steps.size() != expected_ops && failures.empty())
    failures.push_back({FailureKind::Incomplete, "only " + std::to_string(res.steps.size()) + " of " + std::to_string(expected_ops) +
                                                     " operations completed"});
  // Hardware counters: traced, and checked against the scenario's bounds.
  res.counters = read_counters(cluster->machine(), cluster->network());
  trace_counters(trace, res.counters);
  expect_counters(sc.expect, res.counters, failures);
  expect_failovers(sc.expect, cluster->driver().observer().failovers(), cluster->driver().observer().fault_times(), failures);
  // What each fault did, and the pathologies no expectation asked about (run/report.h).
  const FaultFirings& firings = cluster->faults().firings();
  std::vector<StepSummary> spans = res.steps;  // and the repetitions that began and never ended
  for (const auto& [key, o] : cluster->driver().observer().op_spans())
    if (o.end == 0 && std::get<0>(key) < sc.workload.size()) {
      StepSummary u;
      u.step = std::get<0>(key);
      u.rep = std::get<1>(key);
      u.kind = sc.workload[u.step].op;
      u.start_ps = o.start;
      u.end_ps = res.sim_end_ps;
      u.time_us = -1;
      spans.push_back(u);
    }
  res.fault_reports = fault_reports(sc, firings, cluster->driver().observer().failovers(), spans);
  pathologies(sc, res.steps, res.counters, cluster->network(), res.sim_end_ps, res.fault_reports, &res.warnings, &failures);
  // The hint to turn op retry on: only when it was off (an abort with it on was its NO-GO).
  const char* op_retry = std::getenv("HCOMM_OP_RETRY");
  const bool op_retry_off = op_retry && std::string(op_retry) == "0";
  for (const auto& fo : cluster->driver().observer().failovers())
    if (fo.action == "abort" && op_retry_off) res.op_retry_off_abort = true;
  trace_faults(trace, res.fault_reports);
  expect_outcome(sc.expect, failures);
  {  // what the run did, in expect/outcome's terms
    RunOutcome o;
    bool api = false, crash = false, shrunk = false;
    for (const auto& f : cluster->failures) api = api || f.kind == FailureKind::ApiCall;
    for (std::uint32_t r = 0; r < n; ++r) {
      if (cluster->crashed(r)) { crash = true; continue; }
      shrunk = shrunk || !cluster->workload().recovery()[r].empty();
      if (!cluster->done_[r] || cluster->stopped_[r]) o.unfinished.push_back(r);
    }
    o.what = !api && !crash && o.unfinished.empty() ? "survived" : shrunk && o.unfinished.empty() ? "shrunk" : "aborted";
    res.outcome = o.what;
    expect_run_outcome(sc.expect, o, failures);
  }
  for (auto& f : failures) res.failures.push_back(f.message);
  trace_link_counters(trace, cluster->machine(), res.sim_end_ps);
  trace_port_counters(trace, cluster->network());
  if (tp) trace_samples(trace, cluster->machine(), cluster->network(), res.sim_end_ps);

  res.exit_code = res.failures.empty() ? 0 : 1;
  if (stop_reason() > 0) res.signal = stop_reason(), res.exit_code = 128 + res.signal;  // SIGINT 130, SIGTERM 143
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  // run.status: how the run ended; the exit code says whether that was what the scenario expected.
  res.status = res.signal ? "interrupted" : !res.rank_outcomes.empty() ? "failed" : res.exit_code ? "expectations failed" : "ok";
  trace.run_end(res.sim_end_ps / 1000, res.exit_code, res.status, res.wall_s);
  trace.close();
  if (trace.failed()) res.trace_error = trace.error(), res.exit_code = 2;
  // The cluster is kept, not destroyed: SystemC runs one simulation per process, and taking it
  // apart (every rank thread and its stack, every model table: 8192 ranks, about 0.5 s) only
  // hands memory back that the exit returns anyway. Reachable from here, so not a leak to LSan.
  static std::vector<std::unique_ptr<Cluster>>* kept = new std::vector<std::unique_ptr<Cluster>>;
  kept->push_back(std::move(cluster));
  return res;
}

std::uint64_t run_program(const Topology& topo, const RankProgram& program, const RunOptions& opt, bool store_bytes) {
  static Scenario sc;  // the cluster keeps a reference: must outlive the (single) simulation
  sc.name = "program";
  sc.topology = topo;
  sc.store_bytes = store_bytes;
  if (!set_fidelity(sc.net, opt.fidelity)) throw std::invalid_argument("unknown fidelity tier " + opt.fidelity);
  configure_kernel();
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  Trace trace;
  if (!opt.db_path.empty()) {
    std::string why;
    if (!trace.open(opt.db_path, &why, opt.force_db, "--force")) throw std::runtime_error(opt.db_path + ": cannot create trace database: " + why);
  }
  auto* cluster = new Cluster("cluster", sc, opt, trace.is_open() ? &trace : nullptr);  // lives until exit
  cluster->trace_ = trace.is_open() ? &trace : nullptr;
  cluster->program = program;
  if (trace.is_open()) enable_observation(*cluster, opt.sample_interval_ps > 0 ? static_cast<models::Tick>(opt.sample_interval_ps) : 0, opt.trace_tasks, true);
  cluster->start_ranks();
  sc_core::sc_start();
  hcomm_finalize();
  if (trace.is_open()) {
    trace_link_counters(trace, cluster->machine(), cluster->sched().reached());
    trace_port_counters(trace, cluster->network());
    trace_samples(trace, cluster->machine(), cluster->network(), cluster->sched().reached());
  }
  trace.close();
  return cluster->sched().reached();
}

}  // namespace sim
