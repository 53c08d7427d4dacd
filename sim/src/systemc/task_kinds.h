// The task descriptor's enumerations across the layers (docs/architecture.md#sim). A stream task
// is an hcomm::DrvTask at the driver interface, a models::Task in the NPU's stream engine, an
// SqeWire in a submission-queue entry written over TLM (sim/npu_tlm.h) and a `tasks` row of the
// trace (models::task_kind_name). SimRuntime::submit converts DrvTaskKind to TaskKind and
// hcomm_reduce_op_t to models::ReduceOp by value (static_cast), and SqeWire carries TaskKind's and
// ReduceOp's values, so the numberings must agree. Here every enumerator is mapped by name, in
// switches where a missing case is an error (-Wswitch): a kind or operation added to one side
// and not mapped fails to compile, and the static_asserts below fail when the values disagree (an
// enumeration reordered, or a new enumerator inserted anywhere but at the same place on both
// sides).
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

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

// ---- fields ----
// The descriptor's fields are converted one by one (SimRuntime::submit: DrvTask -> Task;
// encode_sqe / decode_sqe: Task <-> SqeWire). A field added to either struct changes its count
// below and fails the build until the conversions carry it and the count is updated.
struct AnyField {
  template <class T>
  constexpr operator T() const;  // never defined: only for brace-initialisation checks
};
template <class T, std::size_t... I>
constexpr auto brace_init_with(std::index_sequence<I...>) -> decltype(T{(void(I), AnyField{})...}, true) { return true; }
template <class T>
constexpr bool brace_init_with(...) { return false; }
/// The number of fields of aggregate T (no array or nested-aggregate members).
template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (brace_init_with<T>(std::make_index_sequence<N + 1>{})) return field_count<T, N + 1>();
  else return N;
}
static_assert(field_count<hcomm::DrvTask>() == 23, "hcomm::DrvTask changed: convert the new field in SimRuntime::submit, then update 23");
static_assert(field_count<models::Task>() == 24,
              "models::Task changed: carry the new field in SimRuntime::submit and in SqeWire (encode_sqe, decode_sqe), then update 24");

/// The models' data type of an hcomm_data_type_t value (fp32 for one the models lack).
inline models::DType models_dtype(int t) {
  switch (t) {
    case 0: return models::DType::Int8;
    case 1: return models::DType::Int16;
    case 2: return models::DType::Int32;
    case 3: return models::DType::Fp16;
    case 4: return models::DType::Fp32;
    case 5: return models::DType::Int64;
    case 10: return models::DType::Fp64;
    case 11: return models::DType::Bf16;
    default: return models::DType::Fp32;
  }
}

}  // namespace task_kinds
}  // namespace sim
