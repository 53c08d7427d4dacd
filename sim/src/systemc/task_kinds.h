// The task descriptor's enumerations across the layers (docs/architecture.md#sim). A stream task
// is an hcomm::DrvTask at the driver interface, a models::Task in the NPU's stream engine, an
// SqeWire in a submission-queue entry written over TLM (sim/npu_tlm.h) and a `tasks` row of the
// trace (models::task_kind_name). SimDriver::submit converts DrvTaskKind to TaskKind and
// hcomm_reduce_op_t to models::ReduceOp by value (static_cast), and SqeWire carries TaskKind's and
// ReduceOp's values, so the numberings must agree. Here every enumerator is mapped by name, in
// switches where a missing case is an error (-Wswitch): a kind or operation added to one side
// and not mapped fails to compile, and the static_asserts below fail when the values disagree (an
// enumeration reordered, or a new enumerator inserted anywhere but at the same place on both
// sides).
#pragma once
#include <type_traits>

#include "hcomm/driver.h"
#include "hcomm/hcomm.h"
#include "models/npu/task.h"

namespace sim {
namespace task_kinds {

template <typename E>
constexpr int raw(E e) {
  return static_cast<int>(static_cast<std::underlying_type_t<E>>(e));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"

/// The value of the models' kind named like `k`; -1 when `k` is no declared kind.
constexpr int models_value(hcomm::DrvTaskKind k) {
  using D = hcomm::DrvTaskKind;
  using M = models::TaskKind;
  switch (k) {
    case D::Copy: return raw(M::Copy);
    case D::ReduceCopy: return raw(M::ReduceCopy);
    case D::NotifyRecord: return raw(M::NotifyRecord);
    case D::NotifyWait: return raw(M::NotifyWait);
    case D::EventRecord: return raw(M::EventRecord);
    case D::EventWait: return raw(M::EventWait);
    case D::HostToDevice: return raw(M::HostToDevice);
    case D::DeviceToHost: return raw(M::DeviceToHost);
    case D::Marker: return raw(M::Marker);
    case D::RdmaWrite: return raw(M::RdmaWrite);
    case D::RdmaFence: return raw(M::RdmaFence);
    case D::Compute: return raw(M::Compute);
  }
  return -1;
}

/// The value of the driver interface's kind named like `k`; -1 when `k` is no declared kind.
constexpr int driver_value(models::TaskKind k) {
  using D = hcomm::DrvTaskKind;
  using M = models::TaskKind;
  switch (k) {
    case M::Copy: return raw(D::Copy);
    case M::ReduceCopy: return raw(D::ReduceCopy);
    case M::NotifyRecord: return raw(D::NotifyRecord);
    case M::NotifyWait: return raw(D::NotifyWait);
    case M::EventRecord: return raw(D::EventRecord);
    case M::EventWait: return raw(D::EventWait);
    case M::HostToDevice: return raw(D::HostToDevice);
    case M::DeviceToHost: return raw(D::DeviceToHost);
    case M::Marker: return raw(D::Marker);
    case M::RdmaWrite: return raw(D::RdmaWrite);
    case M::RdmaFence: return raw(D::RdmaFence);
    case M::Compute: return raw(D::Compute);
  }
  return -1;
}

/// The value of the models' reduce operation named like `op`; -1 when none.
constexpr int models_value(hcomm_reduce_op_t op) {
  using M = models::ReduceOp;
  switch (op) {
    case HCOMM_REDUCE_SUM: return raw(M::Sum);
    case HCOMM_REDUCE_PROD: return raw(M::Prod);
    case HCOMM_REDUCE_MAX: return raw(M::Max);
    case HCOMM_REDUCE_MIN: return raw(M::Min);
  }
  return -1;
}

/// The value of the library's reduce operation named like `op`; -1 when none.
constexpr int hcomm_value(models::ReduceOp op) {
  using M = models::ReduceOp;
  switch (op) {
    case M::Sum: return HCOMM_REDUCE_SUM;
    case M::Prod: return HCOMM_REDUCE_PROD;
    case M::Max: return HCOMM_REDUCE_MAX;
    case M::Min: return HCOMM_REDUCE_MIN;
  }
  return -1;
}

#pragma GCC diagnostic pop

/// Every value of the underlying type: declared on both sides with the same name, or on neither.
constexpr bool kinds_agree() {
  for (int v = 0; v < 256; ++v) {
    const int m = models_value(static_cast<hcomm::DrvTaskKind>(v));
    const int d = driver_value(static_cast<models::TaskKind>(v));
    if (m != d || (m >= 0 && m != v)) return false;
  }
  return true;
}

/// Every models operation has the library's operation of its name at its value, and back.
constexpr bool reduce_ops_agree() {
  for (int v = 0; v < 256; ++v) {
    const int h = hcomm_value(static_cast<models::ReduceOp>(v));
    if (h >= 0 && (h != v || models_value(static_cast<hcomm_reduce_op_t>(h)) != v)) return false;
  }
  return true;
}

static_assert(std::is_same_v<std::underlying_type_t<hcomm::DrvTaskKind>, std::underlying_type_t<models::TaskKind>>,
              "DrvTaskKind and TaskKind convert by value: same underlying type");
static_assert(kinds_agree(), "hcomm::DrvTaskKind and models::TaskKind must declare the same kinds at the same values");
static_assert(reduce_ops_agree(), "hcomm_reduce_op_t and models::ReduceOp must declare the same operations at the same values");

}  // namespace task_kinds
}  // namespace sim
