// loop_program.h's rank program.
#include "loop_program.h"

#include <cmath>
#include <vector>

#include "hcomm/hcomm.h"

namespace exec_test {

LoopResult run_loop(std::uint32_t rank, std::uint32_t size, std::uint32_t device_id, std::uint64_t bytes, std::uint32_t iters) {
  LoopResult res;
  hcomm_context_t ctx = nullptr;
  hcomm_comm_t comm = nullptr;
  hcomm_stream_t st = nullptr;
  void* buf = nullptr;
  auto ok = [&](const char* what, hcomm_result_t rc) {
    if (rc != HCOMM_SUCCESS && res.error.empty()) res.error = std::string(what) + ": " + hcomm_result_string(rc);
    return rc == HCOMM_SUCCESS;
  };
  const std::uint64_t count = bytes / 4;
  if (!ok("create_context", hcomm_create_context(device_id, &ctx)) || !ok("comm_init", hcomm_comm_init(ctx, size, rank, &comm)) ||
      !ok("create_stream", hcomm_create_stream(ctx, &st)) || !ok("malloc", hcomm_malloc(ctx, count * 4, &buf)))
    return res;
  std::vector<float> host(count);
  for (std::uint64_t i = 0; i < count; ++i) host[i] = static_cast<float>((rank + 1) * (i % 64));
  for (std::uint32_t it = 0; it < iters; ++it) {
    if (!ok("h2d", hcomm_memcpy_host_to_device(buf, host.data(), count * 4, st)) ||
        !ok("allreduce", hcomm_allreduce(buf, buf, count, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, comm, st)) ||
        !ok("sync", hcomm_stream_synchronize(st)))
      return res;
  }
  std::vector<float> got(count);
  if (!ok("d2h", hcomm_memcpy_device_to_host(got.data(), buf, count * 4, st)) || !ok("sync", hcomm_stream_synchronize(st))) return res;
  const float ranks = static_cast<float>(size) * static_cast<float>(size + 1) / 2;
  for (std::uint64_t i = 0; i < count; ++i) res.wrong += got[i] != ranks * static_cast<float>(i % 64);
  res.end_ns = static_cast<std::uint64_t>(std::llround(hcomm_wtime() * 1e9));
  hcomm_free(ctx, buf);
  hcomm_destroy_stream(st);
  hcomm_comm_destroy(comm);
  hcomm_destroy_context(ctx);
  return res;
}

}  // namespace exec_test
