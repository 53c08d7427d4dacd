// The cluster's rank lifecycle: construction (elaboration, the driver), one SC_THREAD per rank,
// the host-side rendezvous, and what every rank's program shares.
#include "run/cluster.h"

namespace sim {

Cluster::Cluster(sc_core::sc_module_name n, const Scenario& sc, const RunOptions& opt, Trace* trace)
    : sc_core::sc_module(n), sc_(sc),
      elab_(sc.topology, sc.net, sc.store_bytes,
            opt.piece_bytes ? opt.piece_bytes : (sc.net.flow ? 4096 * 1024 : 256 * 1024)),
      nranks_(static_cast<std::uint32_t>(sc.topology.rank_to_npu.size())) {
  driver_ = std::make_unique<SimDriver>(elab_.machine, sc.topology, trace, opt.echo_logs);
  driver_->set_wait_queue(&elab_.sched);
  driver_->events().set_port_event_params({sc.net.port_events, sc.net.port_event_ps, sc.net.port_debounce_ps});
  driver_->heartbeats().set_close_notice(sc.net.close_notice);
  hcomm::set_driver(driver_->parts());
  faults_ = std::make_unique<FaultInjector>(sc, elab_, *driver_, static_cast<FaultTarget&>(*this), opt.echo_logs);
  crashed_.assign(nranks_, false);
  checks_ = std::make_unique<ResultChecks>(sc, nranks_, trace, *driver_, failures);
  train_ = std::make_unique<TrainSteps>(sc, nranks_, elab_.machine, *driver_, static_cast<RankServices&>(*this));
  workload_ = std::make_unique<Workload>(sc, nranks_, elab_.machine, *driver_, static_cast<RankServices&>(*this), *faults_, *checks_, *train_,
                                         failures);
  done_.assign(nranks_, false);
  stopped_.assign(nranks_, false);
  ops_done_.assign(nranks_, 0);
  for (const auto& w : sc.workload) ops_total_ += w.repeat;
  for (const auto& w : sc.workload)  // a train step's communication time: the ops' intervals per NPU
    if (w.train) { driver_->observer().log_op_intervals(static_cast<std::uint32_t>(sc.topology.npus.size())); break; }
  departed_.assign(nranks_, false);
  rank_error_.assign(nranks_, "");
  rank_rc_.assign(nranks_, HCOMM_SUCCESS);
  rank_at_.assign(nranks_, {0u, 0u});
  rank_err_ps_.assign(nranks_, 0);
  rank_err_at_.assign(nranks_, {0u, 0u});
  step_errors_.assign(nranks_, {});
  rv_expected_ = nranks_;
}

void Cluster::start_ranks() {
  for (std::uint32_t r = 0; r < nranks_; ++r) {
    sc_core::sc_spawn_options o;
    o.set_stack_size(kStack);
    std::string name = "rank" + std::to_string(r);
    sc_core::sc_process_handle h = sc_core::sc_spawn([this, r] { rank_main(r); }, name.c_str(), &o);
    driver_->ranks().bind(h.name(), r);
    procs_.push_back(h);
  }
}

// Rank r's thread: its own program (run_program), its process under exec (RankHost), or the
// scenario's workload.
void Cluster::rank_main(std::uint32_t r) {
  if (r < crashed_.size() && crashed_[r]) return;  // crashed at time 0, before it first ran (counted as killed)
  if (program) {
    program(r);
  } else if (host_) {  // hcsim exec: the rank's own process drives it (RankHost)
    host_->run(r);
  } else if (!workload_->run(r)) {  // it could not start: it leaves without finishing
    depart(r);
    return;
  }
  rank_finished(r);
}

// The run ends when the last rank is done: stale timers (e.g. disarmed RDMA retransmit
// timeouts) left in the event queue must not advance simulated time.
void Cluster::rank_finished(std::uint32_t r) {
  driver_->heartbeats().rank_exited(r);  // its heartbeat agent stops; not a loss
  depart(r);
  done_[r] = true;
  if (!program && !stopped_[r]) ops_done_[r] = ops_total_;
  if (++finished_ == nranks_) sc_core::sc_stop();
}

// Host-side rendezvous after the input copies (hccl_test's MPI_Barrier between iterations):
// copies that contend at the host end at different times, and the timed operation should not
// include that skew. Costs no simulated time and puts nothing on the devices. Ranks that end or
// die leave it, so nobody waits for them.
void Cluster::rv_release() {
  rv_arrived_ = 0;
  ++rv_gen_;
  rv_ev_.notify();
}
void Cluster::rendezvous() {
  if (++rv_arrived_ >= rv_expected_) { rv_release(); return; }
  const std::uint64_t g = rv_gen_;
  while (rv_gen_ == g) sc_core::wait(rv_ev_);
}
void Cluster::depart(std::uint32_t r) {
  if (r >= departed_.size() || departed_[r]) return;
  departed_[r] = true;
  --rv_expected_;
  if (rv_arrived_ > 0 && rv_arrived_ >= rv_expected_) rv_release();
}

bool Cluster::ok(std::uint32_t r, const char* what, hcomm_result_t rc) {
  if (rc == HCOMM_SUCCESS) return true;
  if (r < step_errors_.size())
    step_errors_[r].try_emplace(rank_at_[r], StepError{rc, std::string(what) + ": " + hcomm_result_string(rc), now_ps()});
  if (r < rank_error_.size() && rank_error_[r].empty()) {
    rank_error_[r] = std::string(what) + ": " + hcomm_result_string(rc);
    rank_rc_[r] = rc;
    rank_err_ps_[r] = now_ps();
    rank_err_at_[r] = rank_at_[r];
  }
  failures.push_back({FailureKind::ApiCall, "rank " + std::to_string(r) + ": " + what + " failed: " + hcomm_result_string(rc)});
  return false;
}

void Cluster::enter(std::uint32_t r, std::uint32_t s, std::uint32_t rep) {
  driver_->observer().set_phase(r, s, rep);
  rank_at_[r] = {s, rep};
}

// A rank_crash fault. A killed rank counts as ended: the run stops when the survivors are done,
// not when the dead NIC's last retransmission gives up.
void Cluster::crash_fault(std::uint32_t r) {
  if (crash_rank(r, "rank crashed (rank_crash fault)", true) && ++finished_ == nranks_) sc_core::sc_stop();
}

bool Cluster::crash_rank(std::uint32_t r, const std::string& why, bool kill_thread) {
  const Topology& t = sc_.topology;
  models::Machine& m = elab_.machine;
  const std::uint32_t npu = t.rank_to_npu[r];
  if (r < crashed_.size()) crashed_[r] = true;
  m.crash_npu(npu);
  driver_->heartbeats().rank_crashed(r);  // its host's heartbeat agent falls silent
  const auto& nic = elab_.nic;
  if (network() && npu < nic.size() && nic[npu] != ~0u) network()->set_link_up(nic[npu], 0, false);
  bool killed = false;
  if (kill_thread && r < procs_.size() && !procs_[r].terminated()) {
    procs_[r].kill();
    killed = true;
    if (host_) host_->killed(r);
  }
  if (r < rank_error_.size() && rank_error_[r].empty()) {
    rank_error_[r] = why;
    rank_err_ps_[r] = now_ps();
    rank_err_at_[r] = rank_at_[r];
    step_errors_[r].try_emplace(rank_at_[r], StepError{HCOMM_E_RUNTIME, rank_error_[r], rank_err_ps_[r]});
  }
  depart(r);
  return killed;
}

void Cluster::end_thread(std::uint32_t r) {
  if (r < procs_.size() && procs_[r].valid() && !procs_[r].terminated() && procs_[r] != sc_core::sc_get_current_process_handle())
    procs_[r].kill();
}

void Cluster::died(std::uint32_t r, const std::string& why) {
  faults_->announce(r, 0, "[HCSIM_ERR] " + why);
  crash_rank(r, why, false);
}

}  // namespace sim
