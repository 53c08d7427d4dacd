/* pipeline.c: a pipeline-parallel chain. Rank r is stage r of WORLD_SIZE stages: for every
 * micro-batch it receives the activations from rank r-1, computes on them, and sends them on to
 * rank r+1 (rank 0 starts from data it copied in from the host; the last rank keeps them).
 *
 * What it shows:
 *   - three streams per rank: receives, compute (hcomm_launch_compute) and sends, ordered by
 *     events (recv m -> compute m -> send m), so that while micro-batch m computes, m+1 is already
 *     arriving and m-1 is leaving: compute overlaps communication;
 *   - p2p isend / irecv with one tag per micro-batch, every micro-batch in its own buffer;
 *   - checking the bytes: every rank copies every micro-batch it received back to the host and
 *     compares it with values the host computes on its own (micro-batch m, element i: m * 1000 + i % 997);
 *   - the simulated iteration time (hcomm_wtime) against the closed form of a pipeline of identical
 *     micro-batches (a flow shop): with S stages, M micro-batches, t_c the compute time of one
 *     micro-batch on one stage and t_h the transfer time of one micro-batch over hop h (h = 0..S-2),
 *       T = S * t_c + sum_h t_h + (M - 1) * max(t_c, max_h t_h)
 *     (the first micro-batch passes every stage and hop; each further one leaves the slowest of them
 *     one period later). t_h is estimated from what topology discovery reports for the pair
 *     (hcomm_get_topology): latency_ns + bytes / bandwidth_Bps. Without overlap (one stream, every
 *     micro-batch through the whole chain before the next) it would be M * (S * t_c + sum_h t_h).
 * The compute is simulated time only: hcomm_launch_compute keeps the stream busy but does not
 * change the bytes, so the activations arrive at the last stage exactly as rank 0 sent them.
 *
 * Usage:  pipeline [MICROBATCHES [BYTES [COMPUTE_US]]]   (defaults 8, 4194304, 100)
 * Build:  cc -std=c99 pipeline.c $(pkg-config --cflags --libs hcomm) -o pipeline
 * Run:    hcsim exec --topology a2-2node -n 4 --ranks-per-server 2 -- ./pipeline
 *         (4 stages, two on each server: hops 0 and 2 over HCCS, hop 1 over RoCE)
 * Prints one line per rank ("rank R: stage R received M micro-batches, 0 wrong elements") and, on
 * the last rank, the measured and the expected iteration time. Exit code 0 when every byte is right. */
#include <hcomm/hcomm.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_MB 64

#define CHECK(call)                                                                    \
  do {                                                                                 \
    hcomm_result_t rc_ = (call);                                                       \
    if (rc_ != HCOMM_SUCCESS) {                                                        \
      fprintf(stderr, "rank %u: %s failed: %s\n", rank, #call, hcomm_result_string(rc_)); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

static float expected(uint32_t mb, uint64_t i) { return (float)(mb * 1000u + (uint32_t)(i % 997u)); }

int main(int argc, char** argv) {
  const uint32_t rank = (uint32_t)atoi(getenv("RANK")), size = (uint32_t)atoi(getenv("WORLD_SIZE"));
  const uint32_t device = (uint32_t)atoi(getenv("LOCAL_RANK"));
  const uint32_t nmb = argc > 1 ? (uint32_t)atoi(argv[1]) : 8;
  const uint64_t bytes = argc > 2 ? (uint64_t)atoll(argv[2]) : 4u << 20;
  const uint64_t compute_ns = (argc > 3 ? (uint64_t)atoll(argv[3]) : 100) * 1000;
  if (nmb == 0 || nmb > MAX_MB || bytes < sizeof(float) || bytes % sizeof(float) || compute_ns == 0 || size < 2) {
    fprintf(stderr, "usage: pipeline [MICROBATCHES (1..%d) [BYTES (a multiple of 4) [COMPUTE_US (> 0)]]] on 2 or more ranks\n",
            MAX_MB);
    return 2;
  }
  const uint64_t count = bytes / sizeof(float);
  const int first = rank == 0, last = rank == size - 1;

  hcomm_context_t ctx;
  hcomm_comm_t comm;
  hcomm_stream_t recv_st, comp_st, send_st;
  hcomm_event_t got[MAX_MB], done[MAX_MB];
  void* act[MAX_MB];
  CHECK(hcomm_create_context(device, &ctx));
  CHECK(hcomm_comm_init(ctx, size, rank, &comm));
  CHECK(hcomm_create_stream(ctx, &recv_st));
  CHECK(hcomm_create_stream(ctx, &comp_st));
  CHECK(hcomm_create_stream(ctx, &send_st));
  float* host = malloc(bytes);
  if (!host) return 1;
  for (uint32_t m = 0; m < nmb; ++m) {
    CHECK(hcomm_malloc(ctx, bytes, &act[m]));
    CHECK(hcomm_create_event(ctx, &got[m]));
    CHECK(hcomm_create_event(ctx, &done[m]));
    if (first) { /* the input micro-batches, before the timed part */
      for (uint64_t i = 0; i < count; ++i) host[i] = expected(m, i);
      CHECK(hcomm_memcpy_host_to_device(act[m], host, bytes, recv_st));
      CHECK(hcomm_stream_synchronize(recv_st));
    }
  }

  CHECK(hcomm_barrier(comm, NULL)); /* every stage starts together */
  const double t0 = hcomm_wtime();
  hcomm_request_t reqs[2 * MAX_MB]; /* released by hcomm_waitall after the timed part */
  uint32_t nreq = 0;
  for (uint32_t m = 0; m < nmb; ++m) {
    if (!first) { /* receive stream: post every receive at once, each in its own buffer */
      CHECK(hcomm_irecv(act[m], count, HCOMM_DATA_TYPE_FP32, rank - 1, m, comm, recv_st, &reqs[nreq++]));
      CHECK(hcomm_record_event(got[m], recv_st));
      CHECK(hcomm_wait_event(got[m], comp_st)); /* compute m after receive m */
    }
    CHECK(hcomm_launch_compute(comp_st, compute_ns));
    CHECK(hcomm_record_event(done[m], comp_st));
    if (!last) { /* send stream: micro-batch m leaves once its compute is done */
      CHECK(hcomm_wait_event(done[m], send_st));
      CHECK(hcomm_isend(act[m], count, HCOMM_DATA_TYPE_FP32, rank + 1, m, comm, send_st, &reqs[nreq++]));
    }
  }
  /* The requests complete with their streams' tasks: synchronizing the streams is enough for the
   * time; hcomm_waitall then releases them (a request is freed only by hcomm_test / hcomm_wait). */
  CHECK(hcomm_stream_synchronize(recv_st));
  CHECK(hcomm_stream_synchronize(comp_st));
  CHECK(hcomm_stream_synchronize(send_st));
  const double t1 = hcomm_wtime();
  CHECK(hcomm_waitall(nreq, reqs));

  /* Check what arrived (outside the timed part). */
  uint64_t bad = 0;
  for (uint32_t m = 0; m < nmb; ++m) {
    CHECK(hcomm_memcpy_device_to_host(host, act[m], bytes, recv_st));
    CHECK(hcomm_stream_synchronize(recv_st));
    for (uint64_t i = 0; i < count; ++i)
      if (host[i] != expected(m, i)) ++bad;
  }
  printf("rank %u: stage %u %s %u micro-batches, %llu wrong elements\n", rank, rank, first ? "sent" : "received", nmb,
         (unsigned long long)bad);

  if (last) {
    const double tc = compute_ns * 1e-9;
    double sum_hops = 0, slowest = tc;
    for (uint32_t h = 0; h + 1 < size; ++h) {
      hcomm_topo_link_t link;
      CHECK(hcomm_get_topology(comm, h, h + 1, &link));
      const double th = link.latency_ns * 1e-9 + (double)bytes / (double)link.bandwidth_Bps;
      printf("hop %u -> %u: %s, %.1f GB/s, %.3f us per micro-batch (expected)\n", h, h + 1,
             link.link_type == HCOMM_LINK_HCCS ? "HCCS" : link.link_type == HCOMM_LINK_ROCE ? "RoCE" : "PCIe",
             link.bandwidth_Bps / 1e9, th * 1e6);
      sum_hops += th;
      if (th > slowest) slowest = th;
    }
    const double closed = size * tc + sum_hops + (nmb - 1) * slowest;
    const double serial = nmb * (size * tc + sum_hops);
    printf("pipeline: %u stages, %u micro-batches of %llu bytes, compute %.3f us per micro-batch and stage\n", size, nmb,
           (unsigned long long)bytes, tc * 1e6);
    printf("pipeline: iteration %.3f us (simulated); closed form %.3f us (ratio %.3f); without overlap %.3f us\n",
           (t1 - t0) * 1e6, closed * 1e6, (t1 - t0) / closed, serial * 1e6);
  }

  for (uint32_t m = 0; m < nmb; ++m) {
    CHECK(hcomm_free(ctx, act[m]));
    CHECK(hcomm_destroy_event(got[m]));
    CHECK(hcomm_destroy_event(done[m]));
  }
  free(host);
  CHECK(hcomm_destroy_stream(recv_st));
  CHECK(hcomm_destroy_stream(comp_st));
  CHECK(hcomm_destroy_stream(send_st));
  CHECK(hcomm_comm_destroy(comm));
  CHECK(hcomm_destroy_context(ctx));
  return bad ? 1 : 0;
}
