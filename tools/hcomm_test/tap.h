// hcomm_test's driver decorator: forwards every call to the simulator's driver and keeps what the
// library reports about rank 0's operations of one kind (the algorithm it selected and why).
// Installed before any context exists, so libhcomm itself is unchanged.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hcomm/driver.h"

namespace hcomm_tool {

class OpTap final : public hcomm::Driver {
 public:
  hcomm::Driver* d = nullptr;
  std::string kind;                       // the kind to watch
  std::string algorithm, chosen_by;       // rank 0's most recent one
  std::uint32_t rank_count() override { return d->rank_count(); }
  hcomm::DrvStatus rank_desc(std::uint32_t r, hcomm::RankDesc* o) override { return d->rank_desc(r, o); }
  hcomm::DrvStatus device_of(std::uint32_t id, std::uint32_t* dev) override { return d->device_of(id, dev); }
  hcomm::PairLink pair_link(std::uint32_t a, std::uint32_t b) override { return d->pair_link(a, b); }
  hcomm::DrvStatus nic_info(std::uint32_t dev, hcomm::NicInfo* o) override { return d->nic_info(dev, o); }
  hcomm::DrvStatus nic_counters(std::uint32_t dev, hcomm::NicCounters* o) override { return d->nic_counters(dev, o); }
  hcomm::DrvStatus probe_paths(std::uint32_t dev, const std::uint32_t* t, const std::uint16_t* s, std::uint32_t n,
                               std::vector<hcomm::PathHop>* h, std::vector<std::uint32_t>* st) override {
    return d->probe_paths(dev, t, s, n, h, st);
  }
  hcomm::DrvStatus probe_egress(std::uint32_t dev, const std::uint32_t* t, const std::uint16_t* s, std::uint32_t n,
                                std::vector<hcomm::ProbeEgress>* o) override {
    return d->probe_egress(dev, t, s, n, o);
  }
  hcomm::DrvStatus qp_connect(std::uint32_t dev, std::uint32_t t, std::uint32_t qp, std::uint16_t s) override {
    return d->qp_connect(dev, t, qp, s);
  }
  void route_decided(std::uint32_t dev, const hcomm::RouteInfo& r) override { d->route_decided(dev, r); }
  bool route_reports() override { return d->route_reports(); }
  std::uint64_t device_memory_size(std::uint32_t dev) override { return d->device_memory_size(dev); }
  // discovery (docs/discovery.md)
  hcomm::DrvStatus hccs_port(std::uint32_t dev, std::uint32_t p, hcomm::HccsPortInfo* o) override { return d->hccs_port(dev, p, o); }
  hcomm::DrvStatus pcie_peer(std::uint32_t dev, std::uint32_t peer, bool* r) override { return d->pcie_peer(dev, peer, r); }
  hcomm::DrvStatus device_rank(std::uint32_t dev, std::uint32_t* r) override { return d->device_rank(dev, r); }
  hcomm::DrvStatus ctrl_send(std::uint32_t f, std::uint32_t t, hcomm::CtrlMsg m) override { return d->ctrl_send(f, t, std::move(m)); }
  hcomm::DrvStatus ctrl_recv(std::uint32_t t, std::uint32_t f, std::uint64_t ns, hcomm::CtrlMsg* m) override {
    return d->ctrl_recv(t, f, ns, m);
  }
  hcomm::DrvStatus mem_alloc(std::uint32_t dev, std::uint64_t b, std::uint64_t* a) override { return d->mem_alloc(dev, b, a); }
  hcomm::DrvStatus mem_free(std::uint32_t dev, std::uint64_t a) override { return d->mem_free(dev, a); }
  hcomm::DrvStatus mr_register(std::uint32_t dev, std::uint64_t a, std::uint64_t b, std::uint32_t acc, std::uint32_t* k) override {
    return d->mr_register(dev, a, b, acc, k);
  }
  hcomm::DrvStatus mr_deregister(std::uint32_t dev, std::uint32_t k) override { return d->mr_deregister(dev, k); }
  hcomm::DrvStatus stream_create(std::uint32_t dev, std::uint32_t* s) override { return d->stream_create(dev, s); }
  hcomm::DrvStatus stream_destroy(std::uint32_t s) override { return d->stream_destroy(s); }
  hcomm::DrvStatus submit(std::uint32_t s, const hcomm::DrvTask& t) override { return d->submit(s, t); }
  hcomm::DrvStatus stream_synchronize(std::uint32_t s, std::uint64_t ns, std::string* e) override { return d->stream_synchronize(s, ns, e); }
  bool stream_idle(std::uint32_t s) override { return d->stream_idle(s); }
  std::uint64_t event_completed(std::uint32_t dev, std::uint64_t e) override { return d->event_completed(dev, e); }
  std::uint64_t event_time_ns(std::uint32_t dev, std::uint64_t e) override { return d->event_time_ns(dev, e); }
  std::uint64_t now_ns() override { return d->now_ns(); }
  void host_delay(std::uint64_t ns) override { d->host_delay(ns); }
  void profile_op(std::uint32_t dev, std::uint64_t b, std::uint64_t e, const hcomm::OpInfo& info) override {
    if (info.rank == 0 && info.kind == kind) {
      algorithm = info.algorithm;
      chosen_by = info.chosen_by;
    }
    d->profile_op(dev, b, e, info);
  }
  void log(std::uint32_t dev, int level, const std::string& line) override { d->log(dev, level, line); }
  // failover (docs/failover.md)
  hcomm::DrvStatus ctrl_signal(std::uint32_t f, std::uint32_t t, hcomm::CtrlMsg m) override { return d->ctrl_signal(f, t, std::move(m)); }
  hcomm::DrvStatus ctrl_signal_poll(std::uint32_t t, std::uint32_t* f, hcomm::CtrlMsg* m) override { return d->ctrl_signal_poll(t, f, m); }
  hcomm::DrvStatus device_abort(std::uint32_t dev) override { return d->device_abort(dev); }
  hcomm::DrvStatus notify_reset(std::uint32_t dev) override { return d->notify_reset(dev); }
  hcomm::DrvStatus device_progress(std::uint32_t dev, std::uint64_t* c, bool* h) override { return d->device_progress(dev, c, h); }
  hcomm::DrvStatus device_event_poll(std::uint32_t dev, hcomm::DeviceEvent* e) override { return d->device_event_poll(dev, e); }
  void failover_reported(std::uint32_t dev, const hcomm::FailoverInfo& f) override { d->failover_reported(dev, f); }
};

}  // namespace hcomm_tool
