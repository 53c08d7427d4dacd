// The simulated driver: hcomm's driver boundary implemented over the hardware models.
// Blocking calls (stream synchronize) wait in the calling rank's SC_THREAD on a per-stream event.
#pragma once
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <systemc>

#include "sim/kernel.h"

#include "hcomm/driver.h"
#include "models/machine.h"
#include "sim/device_heap.h"
#include "sim/config/topology.h"
#include "sim/trace.h"

namespace sim {

struct OpRecord {
  hcomm::OpInfo info;
  std::uint32_t step = 0, rep = 0;
  models::Tick start = 0, end = 0;
  bool started = false, ended = false;
};

class SimDriver final : public hcomm::Driver, public models::MachineListener {
 public:
  SimDriver(models::Machine& m, const Topology& t, Trace* trace, bool echo_logs);

  /// An operation timed by the host (e.g. a workload's host<->device copy): recorded like the
  /// library's operations, in the current phase of `rank`.
  void record_host_op(std::uint32_t rank, const std::string& kind, std::uint64_t bytes, models::Tick start, models::Tick end);

  /// Associate the calling SystemC process with a rank (its device and server).
  void bind_process(const std::string& process_name, std::uint32_t rank);
  /// Step/rep labels attached to operations the rank announces from now on.
  void set_phase(std::uint32_t rank, std::uint32_t step, std::uint32_t rep);
  /// A simulator-side log line (trace only, not echoed).
  void note(std::uint32_t rank, int level, const std::string& line);
  /// Completed operations, aggregated as they complete (memory follows the workload's phases,
  /// not the number of operations): per (step, rep, kind), the first start and the last end.
  struct OpSpan { models::Tick start = 0, end = 0; };
  using SpanKey = std::tuple<std::uint32_t, std::uint32_t, std::string>;
  const std::map<SpanKey, OpSpan>& op_spans() const { return spans_; }
  /// Write one `tasks` row per completed stream task (docs/trace-schema.md).
  void trace_tasks(bool on);
  /// hcsim exec: keep a per-device activity event that every completed task of the device
  /// notifies, for wait_activity (docs/exec.md#time).
  void watch_activity();
  /// hcsim exec: block the calling rank's thread until its device completes a task, a control
  /// message, urgent message or device event arrives for it, or max_ns of simulated time passes
  /// (what a polling program waits for when its poll answers "not done"). False: nothing came.
  bool wait_activity(std::uint32_t rank, std::uint64_t max_ns);
  /// hcsim exec: the host memory NPU `npu`'s host DMA reaches (the rank process's).
  void set_host_memory(std::uint32_t npu, models::HostMemory* m) { m_.set_host_memory(npu, m); }
  /// Write the library's route decisions as `routes` rows (the default), or not (/trace/routes).
  void trace_routes(bool on) { trace_routes_ = on; }
  std::uint64_t log_lines(int level) const { return level >= 0 && level < 4 ? log_count_[level] : 0; }
  /// Called when an announced operation starts (its begin marker), with its step/rep labels:
  /// the runner's fault injector times faults relative to a step by it.
  std::function<void(std::uint32_t step, std::uint32_t rep, const hcomm::OpInfo& info, models::Tick t)> on_op_start;
  /// Keep, per NPU, the [begin marker, end marker] interval of every announced operation that
  /// completes from now on (a train step's communication time, run/train_step.cpp).
  void log_op_intervals(std::uint32_t npus) { op_iv_.assign(npus, {}); }
  std::vector<std::pair<models::Tick, models::Tick>>& op_intervals(std::uint32_t npu) { return op_iv_.at(npu); }
  /// Operations announced whose end marker was not seen (failed, timed out, or cut short).
  std::vector<OpRecord> unfinished_ops() const;

  // hcomm::Driver
  std::uint32_t rank_count() override;
  hcomm::DrvStatus rank_desc(std::uint32_t rank, hcomm::RankDesc* out) override;
  hcomm::DrvStatus device_of(std::uint32_t device_id, std::uint32_t* device) override;
  hcomm::PairLink pair_link(std::uint32_t a, std::uint32_t b) override;
  hcomm::DrvStatus nic_info(std::uint32_t device, hcomm::NicInfo* out) override;
  hcomm::DrvStatus nic_counters(std::uint32_t device, hcomm::NicCounters* out) override;
  hcomm::DrvStatus probe_paths(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                               std::vector<hcomm::PathHop>* hops, std::vector<std::uint32_t>* start) override;
  hcomm::DrvStatus probe_egress(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                std::vector<hcomm::ProbeEgress>* out) override;
  hcomm::DrvStatus qp_connect(std::uint32_t device, std::uint32_t target, std::uint32_t qp, std::uint16_t sport) override;
  void route_decided(std::uint32_t device, const hcomm::RouteInfo& r) override;
  bool route_reports() override { return trace_ && trace_routes_; }
  /// Time a path probe costs besides its round trip: the NIC sends probes from one posted template
  /// at about its line rate (a 64-byte frame is 2.6 ns at 200 Gb/s) and the host reads each reply.
  /// An assumption, docs/routing.md.
  static constexpr std::uint64_t kProbeHostNs = 5;
  std::uint64_t device_memory_size(std::uint32_t device) override;
  hcomm::DrvStatus mem_alloc(std::uint32_t device, std::uint64_t bytes, std::uint64_t* addr) override;
  hcomm::DrvStatus mem_free(std::uint32_t device, std::uint64_t addr) override;
  hcomm::DrvStatus mr_register(std::uint32_t device, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                               std::uint32_t* key) override;
  hcomm::DrvStatus mr_deregister(std::uint32_t device, std::uint32_t key) override;
  hcomm::DrvStatus stream_create(std::uint32_t device, std::uint32_t* stream) override;
  hcomm::DrvStatus stream_destroy(std::uint32_t stream) override;
  hcomm::DrvStatus submit(std::uint32_t stream, const hcomm::DrvTask& t) override;
  hcomm::DrvStatus stream_synchronize(std::uint32_t stream, std::uint64_t timeout_ns, std::string* error) override;
  bool stream_idle(std::uint32_t stream) override;
  std::uint64_t event_completed(std::uint32_t device, std::uint64_t event) override;
  std::uint64_t event_time_ns(std::uint32_t device, std::uint64_t event) override;
  std::uint64_t now_ns() override;
  void host_delay(std::uint64_t ns) override;
  void profile_op(std::uint32_t device, std::uint64_t begin_key, std::uint64_t end_key, const hcomm::OpInfo& info) override;
  void log(std::uint32_t device, int level, const std::string& line) override;

  // ---- discovery (docs/discovery.md) ----
  hcomm::DrvStatus hccs_port(std::uint32_t device, std::uint32_t port, hcomm::HccsPortInfo* out) override;
  hcomm::DrvStatus pcie_peer(std::uint32_t device, std::uint32_t peer_device, bool* reachable) override;
  hcomm::DrvStatus device_rank(std::uint32_t device, std::uint32_t* rank) override;
  hcomm::DrvStatus ctrl_send(std::uint32_t from_rank, std::uint32_t to_rank, hcomm::CtrlMsg msg) override;
  hcomm::DrvStatus ctrl_recv(std::uint32_t to_rank, std::uint32_t from_rank, std::uint64_t timeout_ns, hcomm::CtrlMsg* msg) override;
  /// The host control channel (the bootstrap's TCP between host processes): each message costs
  /// latency + bytes / bandwidth, serialized on the sender's and on the receiver's host link.
  /// Assumptions (docs/discovery.md#costs): 10 us, 1.25 GB/s (10 GbE management network).
  struct CtrlParams {
    std::uint64_t latency_ps = 10ULL * 1000 * 1000;
    std::uint64_t bandwidth_Bps = 1250ULL * 1000 * 1000;
  };
  void set_ctrl_params(const CtrlParams& p) { ctrl_ = p; }
  const CtrlParams& ctrl_params() const { return ctrl_; }
  std::uint64_t ctrl_messages() const { return ctrl_msgs_; }
  std::uint64_t ctrl_bytes() const { return ctrl_bytes_; }
  // ---- end discovery ----
  // ---- failover (docs/failover.md) ----
  hcomm::DrvStatus ctrl_signal(std::uint32_t from_rank, std::uint32_t to_rank, hcomm::CtrlMsg msg) override;
  hcomm::DrvStatus ctrl_signal_poll(std::uint32_t to_rank, std::uint32_t* from_rank, hcomm::CtrlMsg* msg) override;
  hcomm::DrvStatus device_abort(std::uint32_t device) override;
  hcomm::DrvStatus notify_reset(std::uint32_t device) override;
  void failover_reported(std::uint32_t device, const hcomm::FailoverInfo& f) override;
  hcomm::DrvStatus device_progress(std::uint32_t device, std::uint64_t* completed, bool* head_not_started) override;
  /// A fault was injected now (the failovers table's fault_at_ns).
  void fault_injected();
  const std::vector<models::Tick>& fault_times() const { return fault_ps_; }
  /// Every failover the library reported, in report order.
  const std::vector<hcomm::FailoverInfo>& failovers() const { return failovers_; }
  std::uint64_t ctrl_signals() const { return ctrl_sigs_; }
  /// The NIC's port-error event (IBV_EVENT_PORT_ERR, docs/failover.md#nic-port-event): delivered
  /// to the NPU's rank delay_ps after its port's link went down, unless the link came back within
  /// debounce_ps (a flap: no event). Off: no events.
  struct PortEventParams {
    bool on = true;
    models::Tick delay_ps = 100 * models::kPsPerUs;
    models::Tick debounce_ps = 50 * models::kPsPerUs;
  };
  void set_port_event_params(const PortEventParams& p) { port_evp_ = p; }
  /// NPU `npu`'s NIC port (or its cable to the switch) went down / came up now.
  void nic_port_changed(std::uint32_t npu, bool up);
  hcomm::DrvStatus device_event_poll(std::uint32_t device, hcomm::DeviceEvent* out) override;
  /// The host's heartbeat agent (docs/failover.md#heartbeat-with-neighbours), in driver_heartbeat.cpp.
  hcomm::DrvStatus heartbeat_register(std::uint32_t rank, const hcomm::HeartbeatSpec& spec) override;
  /// The rank's process died (rank_crash): its agent stops sending, and its host's kernel closes
  /// the process's control-channel connections (docs/failover.md#rank-loss): unless set off, every
  /// other live rank's host sees its connection close (a PeerLost event, reporter = the lost rank)
  /// one control message after the crash, and a ctrl_recv from it fails from then on.
  void rank_crashed(std::uint32_t rank);
  void set_close_notice(bool on) { close_notice_ = on; }
  /// The rank's program ended: its agent stops and its neighbours stop watching it (the process
  /// closed its connections: not a loss).
  void rank_exited(std::uint32_t rank);
  static constexpr std::uint64_t kHeartbeatBytes = 64;  ///< one heartbeat or LOST notice on the control channel
  std::uint64_t heartbeats_sent() const { return hb_sent_; }
  std::uint64_t peers_lost() const { return hb_lost_; }  ///< LOST declarations (agents' own detections)
  /// CRC storm (docs/failover.md#crc-storm): a link whose CRC error rate (errors per frame) is at
  /// least `threshold` raises LinkErrorStorm on its end devices' hosts `window_ps` after the rate
  /// was set, if it still holds (the firmware counts errors over one window). Off: no events.
  struct CrcStormParams {
    bool on = true;
    double threshold = 1e-5;
    models::Tick window_ps = 1000 * models::kPsPerUs;
  };
  void set_crc_storm_params(const CrcStormParams& p) { crc_p_ = p; }
  /// A link's CRC (or RoCE corruption) rate was set now: `npus` are the devices at its ends.
  void link_error_rate(const std::string& link, const std::vector<std::uint32_t>& npus, double rate);
  std::uint64_t crc_storms() const { return crc_storms_; }  ///< LinkErrorStorm events the hosts took
  std::uint64_t port_events_taken() const { return port_raised_; }       ///< events the library took (device_event_poll)
  std::uint64_t port_events_debounced() const { return port_debounced_; }  ///< downs shorter than the debounce

  // ---- host network (docs/models/host-network.md), driver_hostnet.cpp ----
  hcomm::DrvStatus host_socket(std::uint32_t stream, const hcomm::HostSocketOp& op) override;
  std::uint64_t host_messages() const { return hn_msgs_; }    ///< messages sent on the host network
  std::uint64_t host_bytes() const { return hn_bytes_; }      ///< their bytes

  // models::MachineListener
  void on_stream_idle(std::uint32_t stream) override;
  void on_sq_space(std::uint32_t stream) override;
  /// A submission blocked on a full SQ for this long (simulated) fails with Timeout: the
  /// stream is stuck (e.g. waiting for a notify that never comes), as HCOMM's default timeout.
  static constexpr std::uint64_t kSubmitTimeoutNs = 30ULL * 1000 * 1000 * 1000;
  void on_marker(std::uint32_t npu, std::uint32_t stream, std::uint64_t key, models::Tick t) override;
  void on_task_error(std::uint32_t stream, const std::string& why) override;
  /// Interrupt handler: reads INT_STATUS by MMIO, logs what it says (trace, debug level) and
  /// clears it (write 1 to clear).
  void on_interrupt(std::uint32_t npu, std::uint64_t pending) override;
  void on_task_done(std::uint32_t stream, const models::Task& t, models::Tick start, models::Tick end) override;

  /// The deadlines of the host threads' waits go on the fabric's flat event queue `s` instead of
  /// SystemC's timed notifications: with every rank blocked in a timed wait, SystemC kept 8192
  /// entries in its notification heap and reordered it at every time step (docs/architecture.md).
  /// Each stream and control-channel receiver keeps at most one pending record, at the earliest
  /// deadline it has been asked for; a record that comes due before the current wait's deadline is
  /// re-armed there, so the queue holds one record per waiter, not one per wait. Without a queue
  /// (nullptr, the default) the waits are SystemC's timed waits.
  void set_wait_queue(models::Scheduler* s) { wait_q_ = s; }

 private:
  // A waiter's deadline record on the flat queue: when it comes due it wakes the waiter's event
  // if a wait is on and its deadline has come, re-arms itself at a later deadline of the current
  // wait, and is dropped when a record at an earlier deadline superseded it (its number is old).
  class WaitTimer final : public models::EventHandler {
   public:
    explicit WaitTimer(SimDriver& d) : d_(d) {}
    void on_event(std::uint64_t a, std::uint64_t b) override { d_.wait_timer_fired(a, b); }
   private:
    SimDriver& d_;
  };
  static constexpr std::uint64_t kCtrlWait = 1ULL << 63;  // in a timer's `a`: a control-channel receiver, not a stream
  static constexpr models::Tick kNoRecord = ~models::Tick{0};
  struct Waiter {
    models::Tick want = 0;          // the current wait's deadline
    models::Tick armed = kNoRecord;  // the pending record's time (kNoRecord: none pending)
    std::uint64_t record = 0;       // the pending record's number; older numbers are superseded
    bool waiting = false;           // a wait is on
  };
  models::Scheduler* wait_q_ = nullptr;
  WaitTimer wait_timer_{*this};
  std::vector<Waiter> stream_wait_, ctrl_wait_;  // per stream / per control-channel receiver
  Waiter& waiter(std::uint64_t who) {
    auto& v = (who & kCtrlWait) ? ctrl_wait_ : stream_wait_;
    const std::uint64_t i = who & ~kCtrlWait;
    if (v.size() <= i) v.resize(i + 1);
    return v[i];
  }
  /// Block the calling thread until `ev` (an event or an or-list of events) or time `until`.
  template <class Events>
  void wait_until(models::Tick until, std::uint64_t who, const Events& ev) {
    const models::Tick now = now_ps();
    if (!wait_q_) {
      sc_core::wait(sc_core::sc_time::from_value(until > now ? until - now : 0), ev);
      return;
    }
    Waiter& w = waiter(who);
    w.want = until;
    w.waiting = true;
    if (until < w.armed) {  // earlier than the pending record (if any): a new one supersedes it
      w.armed = until;
      wait_q_->schedule(until, &wait_timer_, who, ++w.record);
    }
    sc_core::wait(ev);
    waiter(who).waiting = false;  // (the vector may have grown meanwhile)
  }
  void wait_timer_fired(std::uint64_t who, std::uint64_t n);
  std::int64_t current_rank();
  std::string stuck_report(std::uint32_t stream) const;
  /// The path traffic from NPU a to NPU b over `transport` takes, as the hardware forwards it.
  std::string route_hops(std::uint32_t a, std::uint32_t b, const std::string& transport, std::uint16_t sport) const;
  models::Machine& m_;
  const Topology& topo_;
  Trace* trace_;
  bool trace_routes_ = true;
  bool echo_;
  std::vector<DeviceHeap> heaps_;  // one per device
  std::vector<std::uint32_t> npu_rank_;
  std::vector<std::uint64_t> sq_tail_;  // shadow of each stream's SQ tail doorbell
  std::unordered_map<std::string, std::uint32_t> proc_rank_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> phase_;  // per rank: step, rep
  std::vector<std::unique_ptr<sc_core::sc_event>> stream_ev_;
  bool task_rows_ = false, activity_ = false;  // trace_tasks; watch_activity
  std::vector<std::unique_ptr<sc_core::sc_event>> act_ev_;  // per NPU (watch_activity)
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::size_t> begin_key_, end_key_;  // (npu,key) -> pending op
  std::vector<models::Network::Hop> probe_hops_;  // trace_probes' scratch
  /// Per network node: a switch's cabled bandwidth (toward hosts, toward switches), read once
  /// (nic_info's management view of a NIC's neighbour); ~0ULL first: not read yet.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> switch_bw_;
  hcomm::DrvStatus trace_probes(std::uint32_t device, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                                const std::function<void(std::uint32_t, const std::vector<models::Network::Hop>&)>& on_reply);
  std::vector<std::string> dev_error_;            // per NPU: the first task failure (device in error), "" = none
  std::vector<std::uint32_t> dev_error_stream_;   // per NPU: the stream it happened on (its synchronize clears it)
  bool device_failed(std::uint32_t npu) const { return npu < dev_error_.size() && !dev_error_[npu].empty(); }
  std::vector<OpRecord> pending_;            // announced ops whose end marker has not been seen
  std::vector<std::size_t> free_pending_;    // slots of pending_ free for reuse
  std::map<SpanKey, OpSpan> spans_;
  std::vector<std::vector<std::pair<models::Tick, models::Tick>>> op_iv_;  // log_op_intervals
  // Per device: the operation the library is submitting (its seq and end marker key; seq -1: none).
  // Tasks submitted meanwhile, on any stream of the device, belong to it (tasks.op_seq).
  std::vector<std::pair<std::int64_t, std::uint64_t>> open_op_;
  void finish_op(const OpRecord& r);
  // Discovery: the control channel's messages in flight, per receiving rank, in arrival order.
  struct CtrlEntry { std::uint32_t from; models::Tick arrival; hcomm::CtrlMsg msg; };
  CtrlParams ctrl_;
  std::vector<std::deque<CtrlEntry>> ctrl_box_;
  std::vector<models::Tick> ctrl_tx_free_, ctrl_rx_free_;
  std::vector<std::unique_ptr<sc_core::sc_event>> ctrl_ev_;
  std::uint64_t ctrl_msgs_ = 0, ctrl_bytes_ = 0;
  void ctrl_size();  // the per-rank control-channel state covers every rank
  models::Tick ctrl_arrival(std::uint32_t from, std::uint32_t to, std::uint64_t bytes, models::Tick now);  // a message's arrival; moves both host links on
  /// Urgent messages (ctrl_signal) per receiving rank, in arrival order, and the event their
  /// arrival notifies (stream_synchronize waits on it too).
  std::vector<std::deque<CtrlEntry>> sig_box_;
  std::vector<std::unique_ptr<sc_core::sc_event>> sig_ev_;
  bool signal_pending(std::uint32_t rank) const;
  std::uint64_t ctrl_sigs_ = 0;
  // NIC port events per NPU: queued (arrival order; cancelled while inside their debounce when
  // the link comes back), the time the port went down (~0: up), and the event their arrival
  // notifies (stream_synchronize waits on it too).
  // Other device events (port up, heartbeat LOST, CRC storm) share the queue: kind, and what they say.
  struct PortEvt {
    models::Tick since = 0, arrival = 0, debounce_end = 0;
    hcomm::DeviceEventKind kind = hcomm::DeviceEventKind::NicPortDown;
    std::uint32_t peer = ~0u, reporter = ~0u;
    std::string text;
  };
  void queue_event(std::uint32_t npu, PortEvt e);  // in arrival order; notifies the device's event
  bool dev_events_ = false;  // some event other than port-down may be queued (synchronize waits on port_ev_)
  // A crashed rank's closed connections: (from << 32 | to) -> when `to` sees `from`'s close.
  bool close_notice_ = true;
  std::vector<bool> ctrl_open_;  // per rank: its process has used the control channel (it has connections to close)
  std::unordered_map<std::uint64_t, models::Tick> closed_;
  // The heartbeat agents (driver_heartbeat.cpp): per rank its registration, per ordered pair the
  // heartbeats in flight and the last arrived, and one method process ticking the agents.
  struct HbAgent {
    bool on = false;
    std::uint64_t gen = 0;
    models::Tick period_ps = 0, base = 0;
    models::Tick first_reg = ~models::Tick{0};  // its first registration (the connections to its neighbours exist from then)
    std::uint32_t miss = 3;
    std::vector<std::uint32_t> nb;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> notify;
    std::vector<std::uint32_t> lost_known;  // sorted
  };
  struct HbPair { std::deque<models::Tick> flight; models::Tick last = 0; };
  std::vector<HbAgent> hb_;
  std::vector<std::uint8_t> hb_state_;  // 0 alive, 1 crashed, 2 exited
  std::unordered_map<std::uint64_t, HbPair> hb_pair_;
  std::unordered_set<std::uint64_t> hb_closed_;  // (from, to): `from` no longer heartbeats `to` (deregistered)
  struct HbTick { models::Tick at; std::uint32_t rank; std::uint64_t gen; bool operator>(const HbTick& o) const { return at != o.at ? at > o.at : rank > o.rank; } };
  std::vector<HbTick> hb_heap_;
  std::unique_ptr<sc_core::sc_event> hb_wake_;
  bool hb_spawned_ = false;
  std::uint64_t hb_sent_ = 0, hb_lost_ = 0;
  void hb_run();
  void hb_tick(std::uint32_t rank, models::Tick now);
  void hb_declare(std::uint32_t m, std::uint32_t r, models::Tick last, models::Tick now);
  void hb_arm();
  CrcStormParams crc_p_;
  std::uint64_t crc_storms_ = 0;
  struct CrcWatch { std::string link; std::vector<std::uint32_t> npus; double rate = 0; std::uint64_t gen = 0; };
  std::vector<CrcWatch> crc_watch_;
  PortEventParams port_evp_;
  std::vector<std::deque<PortEvt>> port_box_;
  std::vector<models::Tick> port_down_since_;
  std::vector<std::unique_ptr<sc_core::sc_event>> port_ev_;
  std::uint64_t port_raised_ = 0, port_debounced_ = 0;
  bool port_event_pending(std::uint32_t npu) const;
  void port_size();  // the per-NPU port-event state covers every NPU
  /// The earliest arrival after now of an urgent message to `rank` or a port event of `npu`
  /// (~0: none): a wait is cut there, as an sc_event keeps only its earliest notification.
  models::Tick next_interrupt(std::uint32_t rank, std::uint32_t npu) const;
  std::vector<hcomm::FailoverInfo> failovers_;
  std::vector<models::Tick> fault_ps_;  // when each fault was injected
  std::vector<std::vector<std::uint32_t>> dev_streams_;  // per device: its live streams
  // Host network (driver_hostnet.cpp): a socket operation queued on a stream is a Marker (its
  // key has bit 63 set) and a NotifyWait on a driver key; at the marker the operation runs, and
  // its end records that notify. Timed actions run in one method process, earliest first.
  struct HnOp { hcomm::HostSocketOp op; std::uint32_t npu = 0; std::uint64_t notify = 0; models::Tick posted = 0; };
  struct HnMsg { models::Tick arrival = 0; std::shared_ptr<std::vector<std::uint8_t>> data; };
  struct HnConn { std::deque<HnMsg> arrived; std::deque<HnOp> recvs; };
  struct HnAction {
    models::Tick at = 0;
    std::uint64_t seq = 0;
    int kind = 0;  // 0: record `notify` on `npu`; 1: a message arrives on `conn`; 2: a recv() ends (write, then record)
    std::uint32_t npu = 0;
    std::uint64_t notify = 0;
    std::tuple<std::uint32_t, std::uint32_t, std::uint64_t> conn{};
    HnMsg msg;
    hcomm::HostSocketOp op;
    bool operator>(const HnAction& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::unordered_map<std::uint64_t, HnOp> hn_ops_;  // marker key -> the operation
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, HnConn> hn_conn_;  // (from, to, conn)
  std::vector<HnAction> hn_heap_;
  std::vector<models::Tick> hn_send_free_, hn_recv_free_;  // per rank: its stack's send / receive side busy until
  std::vector<models::Tick> hn_tx_free_, hn_rx_free_;      // per server: its NIC's two directions busy until
  std::unique_ptr<sc_core::sc_event> hn_wake_;
  bool hn_spawned_ = false;
  std::uint64_t hn_seq_ = 0, hn_next_ = 0, hn_msgs_ = 0, hn_bytes_ = 0;
  void hn_marker(std::uint32_t npu, std::uint64_t key);
  void hn_push(HnAction a);
  void hn_run();
  void hn_match(const std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>& key, models::Tick now);
  bool hn_copy_in(std::uint32_t npu, std::uint64_t addr, void* dst, std::uint64_t n);
  bool hn_copy_out(std::uint32_t npu, std::uint64_t addr, const void* src, std::uint64_t n);
  std::uint64_t log_count_[4] = {0, 0, 0, 0};
};

}  // namespace sim
