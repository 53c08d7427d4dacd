// Result strings and data type sizes (docs/architecture.md#hcomm).
#include "hcomm/hcomm.h"

extern "C" {

const char* hcomm_result_string(hcomm_result_t r) {
  switch (r) {
    case HCOMM_SUCCESS: return "success";
    case HCOMM_E_PARA: return "parameter error";
    case HCOMM_E_PTR: return "invalid pointer";
    case HCOMM_E_MEMORY: return "out of memory";
    case HCOMM_E_INTERNAL: return "internal error";
    case HCOMM_E_NOT_SUPPORT: return "not supported";
    case HCOMM_E_NOT_FOUND: return "not found";
    case HCOMM_E_UNAVAIL: return "resource unavailable";
    case HCOMM_E_SYSCALL: return "system call failed";
    case HCOMM_E_TIMEOUT: return "timeout";
    case HCOMM_E_OPEN_FILE_FAILURE: return "cannot open file";
    case HCOMM_E_TCP_CONNECT: return "TCP connect failed";
    case HCOMM_E_ROCE_CONNECT: return "RoCE connect failed";
    case HCOMM_E_TCP_TRANSFER: return "TCP transfer failed";
    case HCOMM_E_ROCE_TRANSFER: return "RoCE transfer failed";
    case HCOMM_E_RUNTIME: return "device task failed";
    case HCOMM_E_DRV: return "driver error";
    case HCOMM_E_NETWORK: return "network error";
    case HCOMM_E_AGAIN: return "try again";
    case HCOMM_E_REMOTE: return "remote error";
    case E_HCOMM_ADDR_MISMATCH: return "rank descriptor address mismatch";
    case HCOMM_E_RANK_LOST: return "rank lost";
    case HCOMM_I_FAILOVER: return "fault survived (informational)";
  }
  return "unknown";
}

uint32_t hcomm_data_type_size(hcomm_data_type_t t) {
  switch (t) {
    case HCOMM_DATA_TYPE_INT8: return 1;
    case HCOMM_DATA_TYPE_INT16: case HCOMM_DATA_TYPE_FP16: case HCOMM_DATA_TYPE_BFP16: return 2;
    case HCOMM_DATA_TYPE_INT32: case HCOMM_DATA_TYPE_FP32: return 4;
    case HCOMM_DATA_TYPE_INT64: case HCOMM_DATA_TYPE_FP64: return 8;
  }
  return 0;
}

}  // extern "C"
