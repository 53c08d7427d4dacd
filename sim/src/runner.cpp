#include "sim/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <memory>
#include <cstring>
#include <sstream>

#include <systemc>

#include "hcomm/hcomm.h"
#include "models/huge_alloc.h"
#include "models/machine.h"
#include "sim/driver.h"
#include "sim/kernel.h"
#include "sim/payload.h"
#include "sim/stop.h"
#include "sim/trace.h"
#include "sim/units.h"

namespace sim {
namespace {

hcomm_data_type_t to_hcomm(models::DType t) {
  switch (t) {
    case models::DType::Int8: return HCOMM_DATA_TYPE_INT8;
    case models::DType::Int16: return HCOMM_DATA_TYPE_INT16;
    case models::DType::Int32: return HCOMM_DATA_TYPE_INT32;
    case models::DType::Int64: return HCOMM_DATA_TYPE_INT64;
    case models::DType::Fp16: return HCOMM_DATA_TYPE_FP16;
    case models::DType::Bf16: return HCOMM_DATA_TYPE_BFP16;
    case models::DType::Fp32: return HCOMM_DATA_TYPE_FP32;
    case models::DType::Fp64: return HCOMM_DATA_TYPE_FP64;
  }
  return HCOMM_DATA_TYPE_FP32;
}

class Cluster : public sc_core::sc_module {
 public:
  Cluster(sc_core::sc_module_name n, const Scenario& sc, const RunOptions& opt, Trace* trace)
      : sc_core::sc_module(n), sc_(sc), sched_("fabric"), machine_(sched_, opt.piece_bytes),
        nranks_(static_cast<std::uint32_t>(sc.topology.rank_to_npu.size())) {
    for (const auto& npu : sc.topology.npus) {
      models::NpuParams p = npu.params;
      p.hbm.store_bytes = sc.store_bytes;
      machine_.add_npu(p);
    }
    hccs_link_.assign(sc.topology.links.size(), ~0u);
    for (std::size_t k = 0; k < sc.topology.links.size(); ++k) {
      const auto& l = sc.topology.links[k];
      if (l.type == LinkType::Hccs) hccs_link_[k] = machine_.add_link(models::LinkKind::Hccs, l.a.index, l.b.index, l.params, l.name);
    }
    // PCIe switches joining NPUs of a server (peer-to-peer DMA), and their links.
    std::vector<std::uint32_t> pcie_sw(sc.topology.switches.size(), ~0u);
    for (std::size_t i = 0; i < sc.topology.switches.size(); ++i)
      if (sc.topology.switches[i].kind == SwitchKind::Pcie)
        pcie_sw[i] = machine_.add_pcie_switch(sc.topology.switches[i].name, sc.topology.switches[i].latency_ps);
    for (const auto& l : sc.topology.links)
      if (l.type == LinkType::Pcie && !l.a.is_switch && l.b.is_switch && pcie_sw[l.b.index] != ~0u)
        machine_.add_pcie_switch_link(l.a.index, pcie_sw[l.b.index], l.params, l.name);
    // One root complex per server carries the host-memory side of its NPUs' host DMA; a server's
    // PCIe switch reaches it over its upstream port (a link at the switch's port bandwidth).
    for (const auto& srv : sc.topology.servers) {
      models::LinkParams rp{srv.root_complex_Bps, srv.root_complex_latency_ps, 16, 256, 0, 0};  // no credit limit
      const std::uint32_t rc = machine_.add_root_complex(srv.name + "/root-complex", rp);
      if (srv.pcie_switch >= 0 && pcie_sw[static_cast<std::size_t>(srv.pcie_switch)] != ~0u) {
        const auto& sw = sc.topology.switches[static_cast<std::size_t>(srv.pcie_switch)];
        models::LinkParams up = models::NpuParams{}.host_link;
        up.bandwidth_Bps = sw.port_Bps;
        up.latency_ps = 0;  // the switch's own latency is charged on the path
        machine_.add_pcie_switch_upstream(pcie_sw[static_cast<std::size_t>(srv.pcie_switch)], rc, up, sw.name + "/upstream");
      }
      for (std::uint32_t n : srv.npus) machine_.attach_host(n, rc);
    }
    if (sc.topology.has_network()) build_network(sc);
    driver_ = std::make_unique<SimDriver>(machine_, sc.topology, trace, opt.echo_logs);
    hcomm::set_driver(driver_.get());
    checks_.assign(sc.workload.size(), {});
    done_.assign(nranks_, false);
    departed_.assign(nranks_, false);
    rv_expected_ = nranks_;
  }

  RankProgram program;

  // Timed faults from the scenario, applied by the fabric at their simulated time.
  struct Injector : models::EventHandler {
    Cluster* c = nullptr;
    void on_event(std::uint64_t i, std::uint64_t) override { c->apply_fault(c->sc_.faults[i]); }
  } injector_;
  void schedule_faults() {
    injector_.c = this;
    for (std::size_t i = 0; i < sc_.faults.size(); ++i)
      if (sc_.faults[i].type != "hbm_bitflip") sched_.schedule(sc_.faults[i].at_ps, &injector_, i, 0);
  }
  std::vector<sc_core::sc_process_handle> procs_;  // rank threads
  void apply_fault(const Fault& f) {
    if (f.type == "rank_crash") {  // the process dies; so does its device (streams, links, NIC)
      const std::uint32_t npu = sc_.topology.rank_to_npu[f.rank];
      driver_->note(f.rank, 0, "[HCSIM_ERR] fault injected: " + f.what);
      machine_.crash_npu(npu);
      if (net_ && npu < nic_.size() && nic_[npu] != ~0u) net_->set_link_up(nic_[npu], 0, false);
      if (f.rank < procs_.size() && !procs_[f.rank].terminated()) procs_[f.rank].kill();
      depart(f.rank);
      return;
    }
    if (f.type == "link_down" || f.type == "link_up") machine_.set_link_up(hccs_link_[f.link], f.type == "link_up");
    else if (f.type == "crc_rate") machine_.set_link_crc_rate(hccs_link_[f.link], f.rate);
    else if (f.type == "lane_degrade") machine_.set_link_lanes(hccs_link_[f.link], f.lanes);
    else if (f.type == "drop_rate" && net_) net_->set_drop_rate(f.rate);
    else if ((f.type == "nic_down" || f.type == "nic_up") && net_) net_->set_link_up(nic_[f.npu], 0, f.type == "nic_up");
    const auto& t = sc_.topology;
    const std::uint32_t rank = f.npu >= 0 ? npu_rank(static_cast<std::uint32_t>(f.npu))
                                          : f.link >= 0 ? npu_rank(t.links[f.link].a.index) : 0;
    driver_->note(rank, 1, "[HCSIM_WARN] fault injected: " + f.what);
  }
  std::uint32_t npu_rank(std::uint32_t npu) const {
    for (std::uint32_t r = 0; r < sc_.topology.rank_to_npu.size(); ++r)
      if (sc_.topology.rank_to_npu[r] == npu) return r;
    return 0;
  }
  std::vector<std::uint32_t> hccs_link_;  // topology link index -> machine link id (HCCS only)
  std::vector<std::uint32_t> nic_;        // NPU -> network host node

  /// Hardware counters summed over the cluster (names: counter_names()).
  std::map<std::string, double> counters() const {
    std::map<std::string, double> c;
    for (auto& n : counter_names()) c[n] = 0;
    for (const auto& p : machine_.ports())
      if (p.kind == models::LinkKind::Hccs) {
        c["hccs_rx_retry_cnt"] += static_cast<double>(p.rx_retry);
        c["hccs_frames"] += static_cast<double>(p.frames);
        c["hccs_credit_stall_ns"] += static_cast<double>(p.credit_stall_ps) / 1e3;
      } else if (p.kind == models::LinkKind::Pcie) {
        c["pcie_flow_ctrl_ns"] += static_cast<double>(p.credit_stall_ps) / 1e3;  // time stalled on PCIe credits
      }
    c["rdma_access_errors"] = static_cast<double>(machine_.rdma_access_errors());
    c["npu_interrupts"] = static_cast<double>(machine_.interrupts());
    if (net_) {
      for (std::uint32_t q = 0; q < net_->qp_count(); ++q) {
        const auto& st = net_->qp_stats(q);
        c["rdma_cnp_rcv"] += static_cast<double>(st.cnp_rcv);
        c["rdma_retransmits"] += static_cast<double>(st.retransmits);
        c["rdma_timeouts"] += static_cast<double>(st.timeouts);
      }
      for (std::uint32_t n = 0; n < net_->nodes(); ++n)
        for (std::uint32_t k = 0; k < net_->node_ports(n); ++k) {
          const auto& ps = net_->port_stats(n, k);
          c["pfc_pause_sent"] += static_cast<double>(ps.pause_sent);
          c["drops"] += static_cast<double>(ps.drops);
          c["ecn_marked"] += static_cast<double>(ps.ecn_marked);
        }
    }
    return c;
  }

  // The RoCE network: one host node per cabled NIC, the topology's Ethernet switches, its links.
  void build_network(const Scenario& sc) {
    net_ = std::make_unique<models::Network>(sched_, sc.net);
    const auto& t = sc.topology;
    std::vector<std::uint32_t> sw_node(t.switches.size(), ~0u), nic(t.npus.size(), ~0u);
    for (std::size_t i = 0; i < t.switches.size(); ++i)
      if (t.switches[i].kind == SwitchKind::Ethernet)
        sw_node[i] = net_->add_switch(t.switches[i].name, t.switches[i].ports, t.switches[i].buffer_bytes, t.switches[i].latency_ps);
    auto node = [&](const Endpoint& e) {
      if (e.is_switch) return sw_node[e.index];
      if (nic[e.index] == ~0u) nic[e.index] = net_->add_host(t.npus[e.index].name);
      return nic[e.index];
    };
    for (const auto& l : t.links)
      if (l.type == LinkType::Roce) {
        std::uint32_t a = node(l.a), b = node(l.b);
        net_->connect(a, l.a.is_switch ? l.a.port : 0, b, l.b.is_switch ? l.b.port : 0, l.params.bandwidth_Bps, l.params.latency_ps);
      }
    net_->build_routes();
    nic_ = nic;
    machine_.attach_network(net_.get(), nic);
  }
  models::Network* network() { return net_.get(); }

  void start_ranks() {
    for (std::uint32_t r = 0; r < nranks_; ++r) {
      sc_core::sc_spawn_options o;
      o.set_stack_size(kStack);
      std::string name = "rank" + std::to_string(r);
      sc_core::sc_process_handle h = sc_core::sc_spawn([this, r] { rank_main(r); }, name.c_str(), &o);
      driver_->bind_process(h.name(), r);
      procs_.push_back(h);
    }
  }

  models::Machine& machine() { return machine_; }
  SimDriver& driver() { return *driver_; }
  ScScheduler& sched() { return sched_; }
  std::vector<std::string> failures;
  struct CheckTally { std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> by_rep; };  // rep -> (checked, failed)
  std::vector<CheckTally> checks_;
  std::vector<bool> done_;
  std::uint32_t nranks() const { return nranks_; }
  bool incast_sender(const WorkloadStep& w, std::uint32_t r) const {
    if (r == w.root) return false;
    if (w.senders == "all") return true;
    const auto& t = sc_.topology;
    return t.npus[t.rank_to_npu[r]].server != t.npus[t.rank_to_npu[w.root]].server;
  }

#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t kStack = 1024 * 1024;
#else
  static constexpr std::size_t kStack = 128 * 1024;
#endif

  // Incast: every sender RDMA-writes `bytes` into the root's symmetric buffer at offset
  // rank x bytes (one-sided, registered memory); a barrier; the root checks every segment.
  bool incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_context_t ctx, hcomm_comm_t comm,
              hcomm_stream_t st, void* in, unsigned char* host) {
    const std::uint64_t seg = w.bytes, count = seg / models::dtype_size(w.dtype);
    void* sym = nullptr;
    hcomm_mr_t mr{};
    bool good = ok(r, "hcomm_buffer_alloc", hcomm_buffer_alloc(ctx, seg * nranks_, &sym)) &&
                ok(r, "hcomm_reg_mr", hcomm_reg_mr(ctx, sym, seg * nranks_, HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE, &mr)) &&
                ok(r, "hcomm_barrier", hcomm_barrier(comm, nullptr));
    if (good && incast_sender(w, r)) {
      std::uint64_t remote = 0;
      good = ok(r, "hcomm_remote_addr", hcomm_remote_addr(comm, w.root, static_cast<unsigned char*>(sym) + r * seg, &remote)) &&
             ok(r, "hcomm_rdma_write", hcomm_rdma_write(in, seg, w.root, remote, mr.rkey, comm, st)) &&
             ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st));
    }
    good = good && ok(r, "hcomm_barrier", hcomm_barrier(comm, nullptr));
    if (good && r == w.root && host) {
      std::uint32_t checked = 0, failed = 0;
      std::vector<std::uint8_t> expect(seg);
      for (std::uint32_t q = 0; q < nranks_; ++q) {
        if (!incast_sender(w, q)) continue;
        if (!ok(r, "hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(host, static_cast<unsigned char*>(sym) + q * seg, seg, st)) ||
            !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
          return false;
        fill_input(expect.data(), count, w.dtype, w.reduce, PayloadKey{sc_.seed, s, rep}, q);
        CheckResult cr = compare(host, expect.data(), count, w.dtype, models::ReduceOp::Max, 1);
        ++checked;
        if (!cr.ok()) {
          ++failed;
          failures.push_back("rank " + std::to_string(r) + " step " + std::to_string(s) + " rep " + std::to_string(rep) +
                             ": result check failed: segment from rank " + std::to_string(q) + ": " + cr.detail);
        }
        if (trace_) trace_->check(q, s, rep, cr.ok(), cr.mismatches, cr.detail);
      }
      auto& tally = checks_[s].by_rep[rep];
      tally.first += checked;
      tally.second += failed;
    }
    if (sym) { hcomm_dereg_mr(ctx, &mr); hcomm_buffer_free(ctx, sym); }
    return good;
  }

  std::uint32_t partner(const WorkloadStep& w, std::uint32_t r) const {
    return w.pattern == "halves" ? (r + nranks_ / 2) % nranks_ : r ^ 1u;
  }

  bool ok(std::uint32_t r, const char* what, hcomm_result_t rc) {
    if (rc == HCOMM_SUCCESS) return true;
    failures.push_back("rank " + std::to_string(r) + ": " + what + " failed: " + hcomm_result_string(rc));
    return false;
  }

  // Reference results are computed once per (step, rep) and shared by the ranks that check them.
  const std::vector<std::uint8_t>& reference(std::uint32_t step, std::uint32_t rep) {
    auto key = std::make_pair(step, rep);
    auto it = refs_.find(key);
    if (it != refs_.end()) return it->second.first;
    const WorkloadStep& w = sc_.workload[step];
    auto ref = allreduce_reference(w.bytes / models::dtype_size(w.dtype), w.dtype, w.reduce, PayloadKey{sc_.seed, step, rep}, nranks_);
    return refs_.emplace(key, std::make_pair(std::move(ref), 0u)).first->second.first;
  }
  void release_reference(std::uint32_t step, std::uint32_t rep) {
    auto it = refs_.find({step, rep});
    if (it != refs_.end() && ++it->second.second == nranks_) refs_.erase(it);
  }

  void rank_main(std::uint32_t r) {
    if (program) {
      program(r);
      rank_finished(r);
      return;
    }
    const auto& npu = sc_.topology.npus[sc_.topology.rank_to_npu[r]];
    hcomm_context_t ctx = nullptr;
    hcomm_comm_t comm = nullptr;
    hcomm_stream_t st = nullptr, st2 = nullptr;
    if (!ok(r, "hcomm_create_context", hcomm_create_context(npu.device_id, &ctx))) { depart(r); return; }
    if (!ok(r, "hcomm_comm_init", hcomm_comm_init(ctx, nranks_, r, &comm)) ||
        !ok(r, "hcomm_create_stream", hcomm_create_stream(ctx, &st)) ||
        !ok(r, "hcomm_create_stream", hcomm_create_stream(ctx, &st2))) {
      hcomm_destroy_context(ctx);
      depart(r);
      return;
    }
    for (std::uint32_t s = 0; s < sc_.workload.size(); ++s) {
      const WorkloadStep& w = sc_.workload[s];
      const std::size_t esz = models::dtype_size(w.dtype);
      const std::uint64_t count = w.bytes / esz;
      const bool real = sc_.store_bytes && w.check && w.op != "barrier";
      void *in = nullptr, *out = nullptr;
      if (!ok(r, "hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(w.bytes, 1), &in)) ||
          !ok(r, "hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(w.bytes, 1), &out)))
        break;
      models::HugeBuffer host(real ? w.bytes : 1);
      if (!host) { failures.push_back("rank " + std::to_string(r) + ": out of host memory"); break; }
      for (std::uint32_t rep = 0; rep < w.repeat; ++rep) {
        driver_->set_phase(r, s, rep);
        PayloadKey key{sc_.seed, s, rep};
        if (w.op == "h2d" || w.op == "d2h") {
          if (!host_copy(r, w, s, rep, st, in, host.get(), real)) goto out;
          continue;
        }
        if (real) {
          fill_input(host.get(), count, w.dtype, w.reduce, key, r);
          if (!ok(r, "hcomm_memcpy_host_to_device", hcomm_memcpy_host_to_device(in, host.get(), w.bytes, st)) ||
              !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
            goto out;
          rendezvous();
        }
        if (w.op == "barrier") {
          if (!ok(r, "hcomm_barrier", hcomm_barrier(comm, st)) || !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st))) goto out;
          continue;
        }
        if (w.op == "allreduce") {
          if (!ok(r, "hcomm_allreduce", hcomm_allreduce(in, out, count, to_hcomm(w.dtype), static_cast<hcomm_reduce_op_t>(w.reduce), comm, st)) ||
              !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
            goto out;
        } else if (w.op == "incast") {
          if (!incast(r, w, s, rep, ctx, comm, st, in, real ? host.get() : nullptr)) goto out;
          continue;  // incast checks its own results at the root
        } else {  // sendrecv: partners exchange buffers, send and receive on separate streams
          const std::uint32_t peer = partner(w, r);
          hcomm_request_t reqs[2];
          if (!ok(r, "hcomm_isend", hcomm_isend(in, count, to_hcomm(w.dtype), peer, rep, comm, st, &reqs[0])) ||
              !ok(r, "hcomm_irecv", hcomm_irecv(out, count, to_hcomm(w.dtype), peer, rep, comm, st2, &reqs[1])) ||
              !ok(r, "hcomm_waitall", hcomm_waitall(2, reqs)))
            goto out;
        }
        for (const Fault& f : sc_.faults)
          if (f.type == "hbm_bitflip" && f.rank == r && f.step == s && f.rep == rep) {
            std::uint64_t a = reinterpret_cast<std::uint64_t>(out) + f.byte;
            std::uint8_t b = 0;
            machine_.backdoor_read(a, &b, 1);
            b = static_cast<std::uint8_t>(b ^ (1u << f.bit));
            machine_.backdoor_write(a, &b, 1);
            driver_->note(r, 1, "[HCSIM_WARN] fault injected: HBM bit flip on rank " + std::to_string(r) + " at output byte " +
                                   std::to_string(f.byte) + " bit " + std::to_string(f.bit));
          }
        if (real) {
          if (!ok(r, "hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(host.get(), out, w.bytes, st)) ||
              !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
            goto out;
          CheckResult cr;
          if (w.op == "allreduce") {
            cr = compare(host.get(), reference(s, rep).data(), count, w.dtype, w.reduce, nranks_);
            release_reference(s, rep);
          } else {
            std::vector<std::uint8_t> expect(w.bytes);
            fill_input(expect.data(), count, w.dtype, w.reduce, key, partner(w, r));
            cr = compare(host.get(), expect.data(), count, w.dtype, models::ReduceOp::Max, 1);
          }
          record_check(r, s, rep, w, cr, count);
        }
      }
    out:
      hcomm_free(ctx, in);
      hcomm_free(ctx, out);
    }
    hcomm_destroy_stream(st);
    hcomm_destroy_stream(st2);
    hcomm_comm_destroy(comm);
    hcomm_destroy_context(ctx);
    rank_finished(r);
  }

  // The run ends when the last rank is done: stale timers (e.g. disarmed RDMA retransmit
  // timeouts) left in the event queue must not advance simulated time.
  void rank_finished(std::uint32_t r) {
    depart(r);
    done_[r] = true;
    if (++finished_ == nranks_) sc_core::sc_stop();
  }
  std::uint32_t finished_ = 0;

  // h2d / d2h: every rank copies `bytes` between the host and its device at once (after the
  // rendezvous), timed by the host from submit to synchronize; with real payload the bytes that
  // arrive are compared with the bytes sent (device memory read back by the backdoor for h2d).
  bool host_copy(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* dev, std::uint8_t* host,
                 bool real) {
    const std::uint64_t count = w.bytes / models::dtype_size(w.dtype);
    const std::uint64_t dev_addr = reinterpret_cast<std::uint64_t>(dev);
    const bool h2d = w.op == "h2d";
    std::vector<std::uint8_t> expect;
    if (real) {
      expect.resize(w.bytes);
      fill_input(expect.data(), count, w.dtype, w.reduce, PayloadKey{sc_.seed, s, rep}, r);
      if (h2d) std::memcpy(host, expect.data(), w.bytes);
      else machine_.backdoor_write(dev_addr, expect.data(), w.bytes);
    }
    rendezvous();
    const models::Tick t0 = sc_core::sc_time_stamp().value();
    if (!ok(r, h2d ? "hcomm_memcpy_host_to_device" : "hcomm_memcpy_device_to_host",
            h2d ? hcomm_memcpy_host_to_device(dev, host, w.bytes, st) : hcomm_memcpy_device_to_host(host, dev, w.bytes, st)) ||
        !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
      return false;
    driver_->record_host_op(r, w.op, w.bytes, t0, sc_core::sc_time_stamp().value());
    if (real) {
      std::vector<std::uint8_t> got(w.bytes);
      if (h2d) machine_.backdoor_read(dev_addr, got.data(), w.bytes);
      else std::memcpy(got.data(), host, w.bytes);
      record_check(r, s, rep, w, compare(got.data(), expect.data(), count, w.dtype, models::ReduceOp::Max, 1), count);
    }
    return true;
  }

  void record_check(std::uint32_t r, std::uint32_t s, std::uint32_t rep, const WorkloadStep& w, const CheckResult& cr, std::uint64_t count) {
    auto& tally = checks_[s].by_rep[rep];
    ++tally.first;
    if (!cr.ok()) {
      ++tally.second;
      failures.push_back("rank " + std::to_string(r) + " step " + std::to_string(s) + " rep " + std::to_string(rep) +
                         ": result check failed: " + std::to_string(cr.mismatches) + " wrong elements, first " + cr.detail);
    }
    if (trace_) trace_->check(r, s, rep, cr.ok(), cr.mismatches, cr.detail);
    driver_->note(r, cr.ok() ? 2 : 0,
                  std::string(cr.ok() ? "[HCSIM_INFO]" : "[HCSIM_ERR]") + " Rank" + std::to_string(r) + " step " + std::to_string(s) +
                      " rep " + std::to_string(rep) + " " + w.op + " check " + (cr.ok() ? "passed" : "FAILED: " + cr.detail) + " (" +
                      std::to_string(count) + " elements)");
  }

  // Host-side rendezvous after the input copies (hccl_test's MPI_Barrier between iterations):
  // copies that contend at the host end at different times, and the timed operation should not
  // include that skew. Costs no simulated time and puts nothing on the devices. Ranks that end or
  // die leave it, so nobody waits for them.
  std::uint32_t rv_expected_ = 0, rv_arrived_ = 0;
  std::uint64_t rv_gen_ = 0;
  sc_core::sc_event rv_ev_;
  std::vector<bool> departed_;
  void rv_release() {
    rv_arrived_ = 0;
    ++rv_gen_;
    rv_ev_.notify();
  }
  void rendezvous() {
    if (++rv_arrived_ >= rv_expected_) { rv_release(); return; }
    const std::uint64_t g = rv_gen_;
    while (rv_gen_ == g) sc_core::wait(rv_ev_);
  }
  void depart(std::uint32_t r) {
    if (r >= departed_.size() || departed_[r]) return;
    departed_[r] = true;
    --rv_expected_;
    if (rv_arrived_ > 0 && rv_arrived_ >= rv_expected_) rv_release();
  }

 public:
  Trace* trace_ = nullptr;

 private:
  const Scenario& sc_;
  ScScheduler sched_;
  models::Machine machine_;
  std::uint32_t nranks_;
  std::unique_ptr<models::Network> net_;
  std::unique_ptr<SimDriver> driver_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::vector<std::uint8_t>, std::uint32_t>> refs_;
};

}  // namespace

RunResult run_scenario(const Scenario& sc, const RunOptions& opt) {
  auto wall0 = std::chrono::steady_clock::now();
  RunResult res;
  Trace trace;
  Trace* tp = nullptr;
  if (!opt.db_path.empty()) {
    std::string why;
    if (!trace.open(opt.db_path, &why, opt.force_db)) throw std::runtime_error(opt.db_path + ": cannot create trace database: " + why);
    tp = &trace;
  }
  configure_kernel();
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);  // "simulation stopped by user"
  auto cluster = std::make_unique<Cluster>("cluster", sc, opt, tp);
  cluster->trace_ = tp;
  const std::uint32_t n = cluster->nranks();
  trace.run(sc.file, sc.topology.file, sc.seed, n, sc.store_bytes ? "real" : "timing");
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto& npu = sc.topology.npus[i];
    trace.npu(i, npu.name, npu.server, npu.device_id, npu.params.model, npu.params.hbm.capacity_bytes);
  }
  const auto& links = cluster->machine().links();
  for (std::uint32_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    const auto& p = cluster->machine().ports()[l.port_ab].p;
    // Ends: NPU index, -1 the host, -2-k PCIe switch k.
    auto end = [&](std::uint32_t e) -> std::int64_t {
      if (e == models::kHost) return -1;
      if (e < n) return e;
      return -2 - static_cast<std::int64_t>(models::kHost - 1 - e);
    };
    trace.link(i, l.name, models::link_kind_name(l.kind), end(l.a), end(l.b), p.bandwidth_Bps, static_cast<double>(p.latency_ps) / 1e3);
  }
  for (const auto& [k, v] : sc.hcomm_env) setenv(k.c_str(), v.c_str(), 1);  // the library reads them at init
  cluster->schedule_faults();
  cluster->start_ranks();
  sc_core::sc_start();
  hcomm_finalize();  // what ranks that died (or failed) still held
  res.sim_end_ps = sc_core::sc_time_stamp().value();
  res.events = cluster->sched().events_processed();
  res.failures = cluster->failures;
  for (std::uint32_t r = 0; r < n; ++r)
    if (!cluster->done_[r] && res.failures.size() < 100) res.failures.push_back("rank " + std::to_string(r) + " did not finish its workload");

  // Per (step, rep): the collective's time is from the first rank's start to the last rank's end.
  std::map<std::pair<std::uint32_t, std::uint32_t>, StepSummary> agg;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<models::Tick, models::Tick>> span;
  auto counts = [&](const WorkloadStep& w, const std::string& kind) {
    if (w.op == "allreduce") return kind == "allreduce";
    if (w.op == "sendrecv") return kind == "send" || kind == "recv";
    if (w.op == "barrier") return kind == "barrier";
    if (w.op == "h2d" || w.op == "d2h") return kind == w.op;
    return kind == "rdma_write";
  };
  for (const auto& [key, o] : cluster->driver().op_spans()) {
    const auto& [step, rep, kind] = key;
    if (step >= sc.workload.size() || !counts(sc.workload[step], kind)) continue;
    auto k = std::make_pair(step, rep);
    auto& s = agg[k];
    s.step = step;
    s.rep = rep;
    s.kind = sc.workload[step].op;
    s.bytes = sc.workload[step].bytes;
    if (s.kind == "incast") {  // aggregate into the root
      std::uint64_t senders = 0;
      for (std::uint32_t q = 0; q < n; ++q) senders += cluster->incast_sender(sc.workload[step], q) ? 1 : 0;
      s.bytes *= senders;
    }
    auto it = span.find(k);
    if (it == span.end()) span[k] = {o.start, o.end};
    else { it->second.first = std::min(it->second.first, o.start); it->second.second = std::max(it->second.second, o.end); }
  }
  for (auto& [k, s] : agg) {
    auto [t0, t1] = span[k];
    s.time_us = static_cast<double>(t1 - t0) / 1e6;
    s.algbw_GBps = s.time_us > 0 ? static_cast<double>(s.bytes) / (s.time_us * 1e3) : 0;
    // busbw: nccl-tests' bus bandwidth for all-reduce; for host copies the aggregate of all ranks.
    s.busbw_GBps = s.kind == "allreduce" ? s.algbw_GBps * 2.0 * (n - 1) / n
                   : (s.kind == "h2d" || s.kind == "d2h") ? s.algbw_GBps * n : s.algbw_GBps;
    auto tally = cluster->checks_[s.step].by_rep.find(s.rep);
    if (tally != cluster->checks_[s.step].by_rep.end()) { s.checked = tally->second.first; s.failed = tally->second.second; }
    trace.summary(s.step, s.rep, s.kind, s.bytes, s.time_us, s.algbw_GBps, s.busbw_GBps);
    res.steps.push_back(s);
    if (sc.expect.max_op_time_us && s.time_us > *sc.expect.max_op_time_us)
      res.failures.push_back("step " + std::to_string(s.step) + " rep " + std::to_string(s.rep) + ": time " + std::to_string(s.time_us) +
                             " us exceeds max_op_time_us " + std::to_string(*sc.expect.max_op_time_us));
    if (sc.expect.min_busbw_GBps && s.busbw_GBps < *sc.expect.min_busbw_GBps)
      res.failures.push_back("step " + std::to_string(s.step) + " rep " + std::to_string(s.rep) + ": busbw " + std::to_string(s.busbw_GBps) +
                             " GB/s below min_busbw_GBps " + std::to_string(*sc.expect.min_busbw_GBps));
  }
  std::size_t expected_ops = 0;
  for (auto& w : sc.workload) expected_ops += w.repeat;
  if (res.steps.size() != expected_ops && res.failures.empty())
    res.failures.push_back("only " + std::to_string(res.steps.size()) + " of " + std::to_string(expected_ops) + " operations completed");
  // Hardware counters: traced, and checked against the scenario's bounds.
  const auto ctr = cluster->counters();
  for (const auto& [name, v] : ctr) trace.counter(name, v);
  for (const auto& [name, lo] : sc.expect.counters_min)
    if (ctr.at(name) < lo) res.failures.push_back("counter " + name + " = " + std::to_string(ctr.at(name)) + " is below counters_min " + std::to_string(lo));
  for (const auto& [name, hi] : sc.expect.counters_max)
    if (ctr.at(name) > hi) res.failures.push_back("counter " + name + " = " + std::to_string(ctr.at(name)) + " exceeds counters_max " + std::to_string(hi));
  res.counters = ctr;
  if (sc.expect.api_errors) {
    // The scenario injects a fault the library must report: API errors are the expected outcome.
    std::vector<std::string> other;
    bool any = false;
    for (auto& f : res.failures) {
      bool api = f.find(" failed: ") != std::string::npos && f.rfind("rank ", 0) == 0 && f.find("result check") == std::string::npos;
      bool unfinished = f.find("did not finish") != std::string::npos || f.find("operations completed") != std::string::npos;
      if (api) any = true;
      if (!api && !unfinished) other.push_back(f);
    }
    res.failures = other;
    if (!any) res.failures.push_back("expected an hcomm call to fail (api_errors: expected), but none did");
  }
  if (!sc.expect.checks_pass) {
    // The scenario expects a check to fail (e.g. an injected corruption): invert that part.
    bool any_check_failed = false;
    std::vector<std::string> other;
    for (auto& f : res.failures) {
      if (f.find("result check failed") != std::string::npos) any_check_failed = true;
      else other.push_back(f);
    }
    res.failures = other;
    if (!any_check_failed) res.failures.push_back("expected a result check to fail (checks_pass: false), but all passed");
  }
  const auto& ports = cluster->machine().ports();
  for (std::uint32_t i = 0; i < links.size(); ++i) {
    const auto& a = ports[links[i].port_ab];
    const auto& b = ports[links[i].port_ba];
    double t = static_cast<double>(res.sim_end_ps) / 1e3;
    trace.link_counter(i, "ab", t, a.bytes, a.pieces, static_cast<double>(a.busy_ps) / 1e3, a.rx_retry, static_cast<double>(a.credit_stall_ps) / 1e3);
    trace.link_counter(i, "ba", t, b.bytes, b.pieces, static_cast<double>(b.busy_ps) / 1e3, b.rx_retry, static_cast<double>(b.credit_stall_ps) / 1e3);
  }
  if (models::Network* net = cluster->network()) {
    for (std::uint32_t n = 0; n < net->nodes(); ++n)
      for (std::uint32_t k = 0; k < net->node_ports(n); ++k) {
        const auto& ps = net->port_stats(n, k);
        if (ps.tx_packets == 0 && ps.drops == 0 && ps.pause_rcv == 0) continue;
        trace.port_counter(net->node_name(n), k, ps.tx_bytes, ps.tx_packets, ps.drops, ps.ecn_marked, ps.pause_sent, ps.pause_rcv,
                           static_cast<double>(ps.paused_ps) / 1e3, ps.max_queue_bytes);
      }
  }
  res.exit_code = res.failures.empty() ? 0 : 1;
  if (stop_reason() > 0) res.signal = stop_reason(), res.exit_code = 128 + res.signal;  // SIGINT 130, SIGTERM 143
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  trace.run_end(res.sim_end_ps / 1000, res.exit_code, res.signal ? "interrupted" : res.exit_code ? "expectations failed" : "ok", res.wall_s);
  trace.close();
  if (trace.failed()) res.trace_error = trace.error(), res.exit_code = 2;
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
    if (!trace.open(opt.db_path, &why)) throw std::runtime_error(opt.db_path + ": cannot create trace database: " + why);
  }
  auto* cluster = new Cluster("cluster", sc, opt, trace.is_open() ? &trace : nullptr);  // lives until exit
  cluster->trace_ = trace.is_open() ? &trace : nullptr;
  cluster->program = program;
  cluster->start_ranks();
  sc_core::sc_start();
  hcomm_finalize();
  trace.close();
  return sc_core::sc_time_stamp().value();
}

std::string format_summary(const Scenario& sc, const RunResult& r) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%5s %5s %-10s %12s %12s %12s %12s  %s\n", "step", "rep", "op", "size", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)", "check");
  os << line;
  for (const auto& s : r.steps) {
    std::string check = s.checked == 0 ? "-" : (s.failed ? "FAILED " + std::to_string(s.failed) + "/" : "ok ") + std::to_string(s.checked) + " ranks";
    if (s.checked && !s.failed) check = "ok (" + std::to_string(s.checked) + " ranks)";
    std::snprintf(line, sizeof line, "%5u %5u %-10s %12s %12.3f %12.2f %12.2f  %s\n", s.step, s.rep, s.kind.c_str(),
                  format_bytes(s.bytes).c_str(), s.time_us, s.algbw_GBps, s.busbw_GBps, check.c_str());
    os << line;
  }
  (void)sc;
  return os.str();
}

}  // namespace sim
