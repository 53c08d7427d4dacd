/* The smallest hcomm program: every rank all-reduces a vector of floats and checks the sum.
 * Build:  cc hello_allreduce.c $(pkg-config --cflags --libs hcomm) -o hello_allreduce
 * Run:    hcsim exec --topology a2-2node -n 4 -- ./hello_allreduce */
#include <hcomm/hcomm.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                    \
  do {                                                                                 \
    hcomm_result_t rc_ = (call);                                                       \
    if (rc_ != HCOMM_SUCCESS) {                                                        \
      fprintf(stderr, "%s failed: %s\n", #call, hcomm_result_string(rc_));             \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main(void) {
  const uint32_t rank = (uint32_t)atoi(getenv("RANK")), size = (uint32_t)atoi(getenv("WORLD_SIZE"));
  const uint32_t device = (uint32_t)atoi(getenv("LOCAL_RANK"));
  const uint64_t count = 1u << 20; /* 4 MiB of fp32 */
  hcomm_context_t ctx;
  hcomm_comm_t comm;
  hcomm_stream_t stream;
  void* dev;
  CHECK(hcomm_create_context(device, &ctx));
  CHECK(hcomm_comm_init(ctx, size, rank, &comm));
  CHECK(hcomm_create_stream(ctx, &stream));
  CHECK(hcomm_malloc(ctx, count * sizeof(float), &dev));
  float* host = malloc(count * sizeof(float));
  for (uint64_t i = 0; i < count; ++i) host[i] = (float)(rank + 1) * (float)(i % 1000);
  CHECK(hcomm_memcpy_host_to_device(dev, host, count * sizeof(float), stream));
  const double t0 = hcomm_wtime();
  CHECK(hcomm_allreduce(dev, dev, count, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM, comm, stream));
  CHECK(hcomm_stream_synchronize(stream));
  const double t1 = hcomm_wtime();
  CHECK(hcomm_memcpy_device_to_host(host, dev, count * sizeof(float), stream));
  CHECK(hcomm_stream_synchronize(stream));
  const float ranks_sum = (float)size * (float)(size + 1) / 2.0f;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < count; ++i)
    if (host[i] != ranks_sum * (float)(i % 1000)) ++bad;
  printf("rank %u: all-reduce of %llu floats took %.3f us (simulated); %llu wrong elements\n", rank,
         (unsigned long long)count, (t1 - t0) * 1e6, (unsigned long long)bad);
  free(host);
  CHECK(hcomm_free(ctx, dev));
  CHECK(hcomm_destroy_stream(stream));
  CHECK(hcomm_comm_destroy(comm));
  CHECK(hcomm_destroy_context(ctx));
  return bad ? 1 : 0;
}
