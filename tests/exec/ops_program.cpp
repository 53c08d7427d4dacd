// The exec identity test's rank program (ops_program.h): all-reduces of three sizes, an
// all-gather, a broadcast, a ring of send/recv, isend/irecv waited by polling hcomm_test, and a
// barrier — every result checked against values computed here on the host.
#include "ops_program.h"

#include <cmath>
#include <cstring>

#include "hcomm/hcomm.h"

namespace exec_test {
namespace {

std::uint64_t now_ns() { return static_cast<std::uint64_t>(std::llround(hcomm_wtime() * 1e9)); }

float input(std::uint32_t rank, std::uint64_t i) { return static_cast<float>((rank + 1) * ((i * 7 + 3) % 101)); }

}  // namespace

OpsResult run_ops(std::uint32_t rank, std::uint32_t size, std::uint32_t device_id) {
  OpsResult res;
  hcomm_context_t ctx = nullptr;
  hcomm_comm_t comm = nullptr;
  hcomm_stream_t st = nullptr, st2 = nullptr;
  auto ok = [&](const char* what, hcomm_result_t rc) {
    if (rc != HCOMM_SUCCESS && res.error.empty()) res.error = std::string(what) + ": " + hcomm_result_string(rc);
    return rc == HCOMM_SUCCESS;
  };
  if (!ok("create_context", hcomm_create_context(device_id, &ctx)) || !ok("comm_init", hcomm_comm_init(ctx, size, rank, &comm)) ||
      !ok("create_stream", hcomm_create_stream(ctx, &st)) || !ok("create_stream", hcomm_create_stream(ctx, &st2)))
    return res;
  const std::uint64_t max_count = std::uint64_t{1} << 20;
  void *a = nullptr, *b = nullptr;
  if (!ok("malloc", hcomm_malloc(ctx, max_count * 4 * size, &a)) || !ok("malloc", hcomm_malloc(ctx, max_count * 4 * size, &b))) return res;
  std::vector<float> host(max_count * size), got(max_count * size);
  auto stamp = [&] { res.times_ns.push_back(now_ns()); };
  // All-reduce (sum) of 1 KiB, 256 KiB and 4 MiB.
  for (std::uint64_t count : {std::uint64_t{256}, std::uint64_t{65536}, max_count}) {
    for (std::uint64_t i = 0; i < count; ++i) host[i] = input(rank, i);
    if (!ok("h2d", hcomm_memcpy_host_to_device(a, host.data(), count * 4, st)) ||
        !ok("allreduce", hcomm_allreduce(a, a, count, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, comm, st)) ||
        !ok("d2h", hcomm_memcpy_device_to_host(got.data(), a, count * 4, st)) || !ok("sync", hcomm_stream_synchronize(st)))
      return res;
    stamp();
    for (std::uint64_t i = 0; i < count; ++i) {
      float want = 0;
      for (std::uint32_t r = 0; r < size; ++r) want += input(r, i);
      res.wrong += got[i] != want;
    }
  }
  // All-gather of 64 KiB per rank.
  const std::uint64_t ag = 16384;
  for (std::uint64_t i = 0; i < ag; ++i) host[i] = input(rank, i);
  if (!ok("h2d", hcomm_memcpy_host_to_device(a, host.data(), ag * 4, st)) ||
      !ok("allgather", hcomm_allgather(a, b, ag, HCOMM_DATA_TYPE_FP32, comm, st)) ||
      !ok("d2h", hcomm_memcpy_device_to_host(got.data(), b, ag * 4 * size, st)) || !ok("sync", hcomm_stream_synchronize(st)))
    return res;
  stamp();
  for (std::uint32_t r = 0; r < size; ++r)
    for (std::uint64_t i = 0; i < ag; ++i) res.wrong += got[r * ag + i] != input(r, i);
  // Broadcast of 1 MiB from the last rank.
  const std::uint64_t bc = 262144;
  for (std::uint64_t i = 0; i < bc; ++i) host[i] = input(rank, i);
  if (!ok("h2d", hcomm_memcpy_host_to_device(a, host.data(), bc * 4, st)) ||
      !ok("broadcast", hcomm_broadcast(a, bc, HCOMM_DATA_TYPE_FP32, size - 1, comm, st)) ||
      !ok("d2h", hcomm_memcpy_device_to_host(got.data(), a, bc * 4, st)) || !ok("sync", hcomm_stream_synchronize(st)))
    return res;
  stamp();
  for (std::uint64_t i = 0; i < bc; ++i) res.wrong += got[i] != input(size - 1, i);
  // A ring: send 256 KiB to the next rank, receive from the previous (blocking calls; even ranks
  // send first so that the ring does not wait on itself).
  const std::uint64_t p2p = 65536;
  const std::uint32_t next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (std::uint64_t i = 0; i < p2p; ++i) host[i] = input(rank, i);
  if (!ok("h2d", hcomm_memcpy_host_to_device(a, host.data(), p2p * 4, st)) || !ok("sync", hcomm_stream_synchronize(st))) return res;
  if (rank % 2 == 0) {
    if (!ok("send", hcomm_send(a, p2p, HCOMM_DATA_TYPE_FP32, next, 7, comm)) || !ok("recv", hcomm_recv(b, p2p, HCOMM_DATA_TYPE_FP32, prev, 7, comm)))
      return res;
  } else {
    if (!ok("recv", hcomm_recv(b, p2p, HCOMM_DATA_TYPE_FP32, prev, 7, comm)) || !ok("send", hcomm_send(a, p2p, HCOMM_DATA_TYPE_FP32, next, 7, comm)))
      return res;
  }
  stamp();
  if (!ok("d2h", hcomm_memcpy_device_to_host(got.data(), b, p2p * 4, st)) || !ok("sync", hcomm_stream_synchronize(st))) return res;
  for (std::uint64_t i = 0; i < p2p; ++i) res.wrong += got[i] != input(prev, i);
  // isend / irecv the other way round, on two streams (a stream's receive waits for its data),
  // completed by hcomm_waitall.
  hcomm_request_t rq[2];
  if (!ok("irecv", hcomm_irecv(b, p2p, HCOMM_DATA_TYPE_FP32, next, 9, comm, st, &rq[0])) ||
      !ok("isend", hcomm_isend(a, p2p, HCOMM_DATA_TYPE_FP32, prev, 9, comm, st2, &rq[1])) || !ok("waitall", hcomm_waitall(2, rq)))
    return res;
  stamp();
  if (!ok("d2h", hcomm_memcpy_device_to_host(got.data(), b, p2p * 4, st)) || !ok("sync", hcomm_stream_synchronize(st))) return res;
  for (std::uint64_t i = 0; i < p2p; ++i) res.wrong += got[i] != input(next, i);
  if (!ok("barrier", hcomm_barrier(comm, nullptr))) return res;
  stamp();
  hcomm_free(ctx, a);
  hcomm_free(ctx, b);
  hcomm_destroy_stream(st);
  hcomm_destroy_stream(st2);
  hcomm_comm_destroy(comm);
  hcomm_destroy_context(ctx);
  return res;
}

}  // namespace exec_test
