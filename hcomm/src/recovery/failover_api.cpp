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
  if (*error == HCOMM_SUCCESS && comm->rec.notice != HCOMM_SUCCESS) {  // a survived fault: reported once
    *error = comm->rec.notice;
    comm->rec.notice = HCOMM_SUCCESS;
  }
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_get_async_error_string(hcomm_comm_t comm, const char** msg) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!msg) return HCOMM_E_PTR;
  failover::check(comm);
  *msg = comm->rec.error.code != HCOMM_SUCCESS ? comm->rec.error.text.c_str() : comm->rec.notice_text.c_str();
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_comm_set_error_callback(hcomm_comm_t comm, hcomm_error_callback_t cb, void* user_data) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  comm->rec.error_cb = cb;
  comm->rec.error_cb_data = cb ? user_data : nullptr;
  return HCOMM_SUCCESS;
}

hcomm_result_t hcomm_comm_lost_ranks(hcomm_comm_t comm, uint32_t cap, uint32_t* ranks, uint32_t* n) {
  if (!live(comm, kComm)) return HCOMM_E_UNAVAIL;
  if (!n || (cap && !ranks)) return HCOMM_E_PTR;
  failover::check(comm);
  *n = static_cast<uint32_t>(comm->rec.lost.size());
  for (std::uint32_t i = 0; i < cap && i < comm->rec.lost.size(); ++i) ranks[i] = comm->rec.lost[i];
  return HCOMM_SUCCESS;
}

}  // extern "C"
