// TLM-2.0 target socket over an NPU's MMIO window (sim/npu_tlm.h).
#include "sim/npu_tlm.h"

#include <cstring>

#include "systemc/task_kinds.h"  // the wire's kind and op are the models' (and the driver interface's) values

namespace sim {

static_assert(task_kinds::field_count<SqeWire>() == 23,
              "SqeWire changed: every models::Task field but wait_ack and passive (its flags) has a field of its own");

SqeWire encode_sqe(const models::Task& t) {
  SqeWire w{};
  w.kind = static_cast<std::uint8_t>(t.kind);
  w.dtype = static_cast<std::uint8_t>(t.dtype);
  w.op = static_cast<std::uint8_t>(t.op);
  w.target = t.target;
  w.src = t.src;
  w.dst = t.dst;
  w.bytes = t.bytes;
  w.key = t.key;
  w.value = t.value;
  w.host = reinterpret_cast<std::uintptr_t>(t.host);
  w.rkey = t.rkey;
  w.qp_count = t.qp_count;
  w.rate_cap_Bps = t.rate_cap_Bps;
  w.retry_count = t.retry_count;
  w.qp_base = t.qp_base;
  w.via = t.via;
  w.flags = static_cast<std::uint8_t>((t.wait_ack ? 1 : 0) | (t.passive ? 2 : 0));
  w.tag = static_cast<std::int32_t>(t.tag);
  w.width = t.width;
  w.spitch = t.spitch;
  w.dpitch = t.dpitch;
  w.flops = t.flops;
  w.efficiency = t.efficiency;
  return w;
}

models::Task decode_sqe(const SqeWire& w) {
  models::Task t;
  t.kind = static_cast<models::TaskKind>(w.kind);
  t.dtype = static_cast<models::DType>(w.dtype);
  t.op = static_cast<models::ReduceOp>(w.op);
  t.target = w.target;
  t.src = w.src;
  t.dst = w.dst;
  t.bytes = w.bytes;
  t.key = w.key;
  t.value = w.value;
  t.host = reinterpret_cast<void*>(static_cast<std::uintptr_t>(w.host));
  t.rkey = w.rkey;
  t.qp_count = w.qp_count;
  t.rate_cap_Bps = w.rate_cap_Bps;
  t.retry_count = w.retry_count;
  t.qp_base = w.qp_base;
  t.via = w.via;
  t.wait_ack = w.flags & 1;
  t.passive = w.flags & 2;
  t.tag = w.tag;
  t.width = w.width;
  t.spitch = w.spitch;
  t.dpitch = w.dpitch;
  t.flops = w.flops;
  t.efficiency = w.efficiency;
  return t;
}

NpuTlmTarget::NpuTlmTarget(sc_core::sc_module_name name, models::Machine& m, std::uint32_t npu)
    : sc_core::sc_module(name), socket("socket"), m_(m), npu_(npu) {
  socket.register_b_transport(this, &NpuTlmTarget::b_transport);
}

sc_core::sc_time NpuTlmTarget::mmio_latency() const {
  return sc_core::sc_time::from_value(m_.npu_params(npu_).mmio_latency_ps);  // kernel resolution is 1 ps (sim/kernel.h)
}

void NpuTlmTarget::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  delay += mmio_latency();
  const std::uint64_t addr = gp.get_address();
  const unsigned len = gp.get_data_length();
  unsigned char* data = gp.get_data_ptr();
  if (gp.get_byte_enable_ptr() || gp.get_streaming_width() != len) {
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  if (addr >= kSqeBase) {  // a submission-queue entry: written whole
    const std::uint64_t s = (addr - kSqeBase) / kSqeBytes;
    if (!gp.is_write() || (addr - kSqeBase) % kSqeBytes || len != kSqeBytes) {
      gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
      return;
    }
    if (s > 0xffffffffu || !m_.stream_valid(static_cast<std::uint32_t>(s)) || m_.stream_npu(static_cast<std::uint32_t>(s)) != npu_) {
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    SqeWire w;
    std::memcpy(&w, data, sizeof w);
    m_.enqueue(static_cast<std::uint32_t>(s), decode_sqe(w));
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  if (len != 8) {  // 8-byte registers
    gp.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  const auto off = static_cast<std::uint32_t>(addr);
  bool ok = false;
  if (gp.is_read()) {
    std::uint64_t v = 0;
    ok = m_.mmio_read(npu_, off, &v);
    if (ok) std::memcpy(data, &v, 8);
  } else if (gp.is_write()) {
    std::uint64_t v = 0;
    std::memcpy(&v, data, 8);
    ok = m_.mmio_write(npu_, off, v);
  } else {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  // Unmapped offsets, read-only registers and refused doorbells answer with an address error.
  gp.set_response_status(ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

}  // namespace sim
