// The failover C API (hcomm.h, docs/failover.md#the-applications-view): the communicator's
// asynchronous error, its callback and the lost ranks.
#include <cstring>

#include "core/handles.h"
#include "recovery/failover.h"

using namespace hcomm::detail;

extern "C" {

hcomm_result_t hcomm_get_async_error(hcomm_comm_t comm, hcomm_result_t* error) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!error) return HCOMM_E_PTR;
  *error = failover::check(comm);
  if (*error == HCOMM_SUCCESS && comm->notice != HCOMM_SUCCESS) {  // a survived fault: reported once
    *error = comm->notice;
    comm->notice = HCOMM_SUCCESS;
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_get_async_error_string(hcomm_comm_t comm, const char** msg) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!msg) return HCOMM_E_PTR;
  failover::check(comm);
  *msg = comm->error.code != HCOMM_SUCCESS ? comm->error.text.c_str() : comm->notice_text.c_str();
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_comm_set_error_callback(hcomm_comm_t comm, hcomm_error_callback_t cb, void* user_data) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  comm->error_cb = cb;
  comm->error_cb_data = cb ? user_data : nullptr;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_comm_lost_ranks(hcomm_comm_t comm, uint32_t cap, uint32_t* ranks, uint32_t* n) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!n || (cap && !ranks)) return HCOMM_E_PTR;
  failover::check(comm);
  *n = static_cast<uint32_t>(comm->lost.size());
  for (std::uint32_t i = 0; i < cap && i < comm->lost.size(); ++i) ranks[i] = comm->lost[i];
  return HCOMM_SUCCESS;
}

}  // extern "C"
