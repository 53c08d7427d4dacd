// Stream tasks: what a driver writes into an NPU's submission queue (docs/models/npu.md).
#pragma once
#include <cstdint>

#include "models/mem/reduce.h"

namespace models {

enum class TaskKind : std::uint8_t {
  Copy,          ///< SDMA copy src -> dst (either may be a peer's HBM reached over HCCS)
  ReduceCopy,    ///< SDMA copy with inline reduction into dst
  NotifyRecord,  ///< increment notify `key` on NPU `target` (remote: a posted write over HCCS)
  NotifyWait,    ///< wait until notify `key` on this NPU is > 0, then decrement
  EventRecord,   ///< mark event `key` complete up to sequence `value`
  EventWait,     ///< wait until event `key` completed sequence >= `value`
  HostToDevice,  ///< DMA host memory -> device over PCIe
  DeviceToHost,  ///< DMA device -> host memory over PCIe
  Marker,        ///< timestamp marker (profiling); reported to the listener
  RdmaWrite,     ///< RoCE write src (local) -> dst (NPU `target`), then, if value != 0, notify `key`
                 ///< on `target` (an ordered second write on the same QP); bytes may be 0. Ends
                 ///< when its doorbell is rung (posted), or with wait_ack when acknowledged
  RdmaFence,     ///< ends when every RDMA write this NPU's streams posted before it is acknowledged
                 ///< (the completions polled before the buffers the writes read are used again)
  Compute,       ///< AI-core work: the stream is busy for `value` ns, or (flops > 0) for flops of
                 ///< `dtype` at the NPU's peak for that dtype (NpuParams) times `efficiency`
};
const char* task_kind_name(TaskKind k);

struct Task {
  TaskKind kind = TaskKind::Marker;
  std::uint64_t src = 0, dst = 0, bytes = 0;
  DType dtype = DType::Fp32;
  ReduceOp op = ReduceOp::Sum;
  std::uint32_t target = 0;    ///< NotifyRecord: NPU that owns the notify
  std::uint64_t key = 0;       ///< notify key / event id / marker id
  std::uint64_t value = 0;     ///< event sequence
  void* host = nullptr;        ///< host buffer of H2D / D2H (must stay valid until the task ends)
  std::uint32_t rkey = 0;      ///< RdmaWrite: remote key of the target's memory region
  std::uint32_t qp_count = 1;  ///< RdmaWrite: stripe the data over this many QPs to that NPU (num_qp)
  std::uint32_t qp_base = 0;   ///< RdmaWrite: the stripes use QP indices qp_base .. qp_base + qp_count - 1 to that NPU
  std::uint64_t rate_cap_Bps = 0;  ///< RdmaWrite: cap the QP's rate (bandwidth_limit); 0 = line rate
  std::uint32_t retry_count = ~0u; ///< RdmaWrite: QP retransmit retries (~0u: the network's default)
  std::uint32_t via = ~0u;     ///< RdmaWrite: the NPU whose NIC receives (it writes on into the target over HCCS); ~0u: the target's
  bool wait_ack = false;       ///< RdmaWrite: complete when every write is acknowledged, not at the doorbell
  /// EventRecord: a progress mark — the engine writes the event when the task before it completes
  /// (with that task's completion), without dispatching it as a task of its own: no stream time.
  bool passive = false;
  std::int64_t tag = -1;       ///< opaque to the models: given back with the task (MachineListener::on_task_done)
  /// Copy / ReduceCopy: strided (2-D) when width != 0 — bytes / width rows of `width` bytes, row i
  /// read at src + i * spitch and written at dst + i * dpitch (aclrtMemcpy2dAsync's shape).
  std::uint64_t width = 0, spitch = 0, dpitch = 0;
  double flops = 0, efficiency = 1;  ///< Compute: operations and the share of the peak (flops 0: `value` ns)
};
/// The bytes a 2-D task's rows span from their first address with pitch `pitch` (bytes itself when not 2-D).
inline std::uint64_t task_extent(const Task& t, std::uint64_t pitch) {
  if (t.width == 0 || t.bytes == 0) return t.bytes;
  return (t.bytes / t.width - 1) * pitch + t.width;
}

}  // namespace models
