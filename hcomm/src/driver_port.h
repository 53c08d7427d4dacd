// The driver port (docs/architecture.md#hcomm): the ONE place in libhcomm that calls the Driver
// (hcomm/include/hcomm/driver.h). Every other file reaches hardware through these functions;
// tests/layering_test.sh fails when a driver call appears anywhere else.
//
// Status mapping: Ok -> HCOMM_SUCCESS; otherwise the code each function documents. Callers whose
// API contract promises another code (e.g. hcomm_reg_mr -> HCOMM_E_PARA) translate a failure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/objects.h"

namespace hcomm::port {

/// The driver's device handle for `device_id` of the caller's server. No driver: HCOMM_E_DRV;
/// unknown device: HCOMM_E_PARA.
hcomm_result_t open_device(std::uint32_t device_id, DriverSet* drv, std::uint32_t* device);

// Topology queries.
std::uint32_t rank_count(hcomm_context_t ctx);
/// Failure: HCOMM_E_NOT_FOUND.
hcomm_result_t rank_desc(hcomm_context_t ctx, std::uint32_t rank, RankDesc* out);

// Discovery (docs/discovery.md). Failure: HCOMM_E_DRV; ctrl_*: HCOMM_E_NOT_SUPPORT without a
// control channel, HCOMM_E_TIMEOUT when nothing arrived in time.
hcomm_result_t hccs_port(hcomm_context_t ctx, std::uint32_t port, HccsPortInfo* out);
hcomm_result_t pcie_peer(hcomm_context_t ctx, std::uint32_t peer_device, bool* reachable);
hcomm_result_t device_of(hcomm_context_t ctx, std::uint32_t device_id, std::uint32_t* device);
hcomm_result_t device_rank(hcomm_context_t ctx, std::uint32_t device, std::uint32_t* rank);
hcomm_result_t ctrl_send(hcomm_context_t ctx, std::uint32_t from_rank, std::uint32_t to_rank, CtrlMsg msg);
hcomm_result_t ctrl_recv(hcomm_context_t ctx, std::uint32_t to_rank, std::uint32_t from_rank, std::uint64_t timeout_ns,
                         CtrlMsg* msg);

// Failover (docs/failover.md): HCOMM_E_NOT_SUPPORT when the driver has none; ctrl_signal_poll
// HCOMM_E_TIMEOUT when nothing has arrived.
hcomm_result_t ctrl_signal(hcomm_context_t ctx, std::uint32_t from_rank, std::uint32_t to_rank, CtrlMsg msg);
hcomm_result_t ctrl_signal_poll(hcomm_context_t ctx, std::uint32_t to_rank, std::uint32_t* from_rank, CtrlMsg* msg);
hcomm_result_t device_abort(hcomm_context_t ctx);
hcomm_result_t notify_reset(hcomm_context_t ctx);
void failover_reported(hcomm_context_t ctx, const FailoverInfo& f);
hcomm_result_t device_progress(hcomm_context_t ctx, std::uint64_t* completed, bool* head_not_started);
/// The context's device's earliest delivered async event (HCOMM_E_TIMEOUT: none).
hcomm_result_t device_event_poll(hcomm_context_t ctx, DeviceEvent* out);
/// Start / change / stop (no neighbours) the host's heartbeat agent of this context's rank.
hcomm_result_t heartbeat_register(hcomm_context_t ctx, std::uint32_t rank, const HeartbeatSpec& spec);
/// Queue a host-socket operation on stream `s` (protocol TCP, docs/models/host-network.md):
/// HCOMM_E_NOT_SUPPORT when the driver models no host network, HCOMM_E_DRV on a bad argument.
hcomm_result_t host_socket(hcomm_stream_t s, const HostSocketOp& op);

// RoCE routing (route/). Failure: HCOMM_E_DRV; probe_egress / qp_connect without a NIC on either
// end: HCOMM_E_NOT_SUPPORT.
hcomm_result_t nic_info(hcomm_context_t ctx, NicInfo* out);
/// A peer device's NIC as its rank published it (its LLDP neighbour; the simulator reads it from
/// the device, as rank_desc reads the peer's configuration space).
hcomm_result_t peer_nic_info(hcomm_context_t ctx, std::uint32_t device, NicInfo* out);
hcomm_result_t nic_counters(hcomm_context_t ctx, NicCounters* out);
/// Path probes (Driver::probe_egress), each reply reduced to its first switch's egress port and
/// its switch count.
hcomm_result_t probe_egress(hcomm_context_t ctx, const std::uint32_t* targets, const std::uint16_t* sports, std::uint32_t n,
                            std::vector<ProbeEgress>* out);
hcomm_result_t qp_connect(hcomm_context_t ctx, std::uint32_t target, std::uint32_t qp, std::uint16_t sport);
void route_decided(hcomm_context_t ctx, const RouteInfo& r);
bool route_reports(hcomm_context_t ctx);
std::uint64_t now_ns(hcomm_context_t ctx);

// Memory and registration on the context's device. Failure: HCOMM_E_MEMORY (alloc), HCOMM_E_DRV.
hcomm_result_t mem_alloc(hcomm_context_t ctx, std::uint64_t bytes, std::uint64_t* addr);
hcomm_result_t mem_free(hcomm_context_t ctx, std::uint64_t addr);
hcomm_result_t mr_register(hcomm_context_t ctx, std::uint64_t addr, std::uint64_t bytes, std::uint32_t access,
                           std::uint32_t* key);
hcomm_result_t mr_deregister(hcomm_context_t ctx, std::uint32_t key);

// Streams and tasks. Failure: HCOMM_E_DRV.
hcomm_result_t stream_create(hcomm_context_t ctx, std::uint32_t* id);
/// A stream on another NPU of the caller's server (an HCCS relay's hop streams, transport/relay.h).
hcomm_result_t stream_create_on(hcomm_context_t ctx, std::uint32_t device, std::uint32_t* id);
hcomm_result_t stream_destroy(hcomm_stream_t s);
hcomm_result_t submit(hcomm_stream_t s, const DrvTask& t);
/// Block until the stream is idle: HCOMM_E_TIMEOUT after timeout_ns of device time,
/// HCOMM_E_RUNTIME when a task failed (`error` says why), HCOMM_E_REMOTE when an urgent control
/// message or a device event interrupted the wait (ctrl_signal_poll / device_event_poll read them).
hcomm_result_t stream_synchronize(hcomm_stream_t s, std::uint64_t timeout_ns, std::string* error);
bool stream_idle(hcomm_stream_t s);
std::uint64_t event_completed(hcomm_event_t ev);
/// The largest value recorded so far on event `id` of the context's device (0: none).
std::uint64_t event_value(hcomm_context_t ctx, std::uint64_t id);
std::uint64_t event_time_ns(hcomm_event_t ev);

// Host time, profiling, logs.
void host_delay(hcomm_context_t ctx, std::uint64_t ns);
void profile_op(hcomm_context_t ctx, std::uint64_t begin_key, std::uint64_t end_key, const OpInfo& info);
void log(hcomm_context_t ctx, int level, const std::string& line);

}  // namespace hcomm::port
