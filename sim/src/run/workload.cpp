// The workload interpreter (docs/scenario-format.md#workload): the program every rank runs in its
// SC_THREAD through the public hcomm API — allocate, fill, run each step's operation, check.
#include <algorithm>
#include <cstring>

#include "models/huge_alloc.h"
#include "run/cluster.h"

namespace sim {
namespace {

hcomm_data_type_t to_hcomm(models::DType t) {
  switch (t) {
    case models::DType::Int8: return HCOMM_DATA_TYPE_INT8;
    case models::DType::Int16: return HCOMM_DATA_TYPE_INT16;
    case models::DType::Int32: return HCOMM_DATA_TYPE_INT32;
    case models::DType::Int64: return HCOMM_DATA_TYPE_INT64;
    case models::DType::Fp16: return HCOMM_DATA_TYPE_FP16;
    case models::DType::Bf16: return HCOMM_DATA_TYPE_BFP16;
    case models::DType::Fp32: return HCOMM_DATA_TYPE_FP32;
    case models::DType::Fp64: return HCOMM_DATA_TYPE_FP64;
  }
  return HCOMM_DATA_TYPE_FP32;
}

}  // namespace

void Cluster::rank_main(std::uint32_t r) {
  if (program) {
    program(r);
    rank_finished(r);
    return;
  }
  const auto& npu = sc_.topology.npus[sc_.topology.rank_to_npu[r]];
  hcomm_context_t ctx = nullptr;
  hcomm_comm_t comm = nullptr;
  hcomm_stream_t st = nullptr, st2 = nullptr;
  if (!ok(r, "hcomm_create_context", hcomm_create_context(npu.device_id, &ctx))) { depart(r); return; }
  if (!ok(r, "hcomm_comm_init", hcomm_comm_init(ctx, nranks_, r, &comm)) ||
      !ok(r, "hcomm_create_stream", hcomm_create_stream(ctx, &st)) ||
      !ok(r, "hcomm_create_stream", hcomm_create_stream(ctx, &st2))) {
    hcomm_destroy_context(ctx);
    depart(r);
    return;
  }
  std::uint64_t started = 0;  // operations begun: the ones before the current are done (live.h)
  for (std::uint32_t s = 0; s < sc_.workload.size(); ++s) {
    const WorkloadStep& w = sc_.workload[s];
    const std::size_t esz = models::dtype_size(w.dtype);
    const std::uint64_t count = w.bytes / esz;
    const bool real = sc_.store_bytes && w.check && w.op != "barrier";
    void *in = nullptr, *out = nullptr;
    // Output bytes: the gathered buffer (all-gather), one block (reduce-scatter), else the input's.
    const std::uint64_t out_bytes = w.op == "allgather" ? w.bytes * nranks_ : w.op == "reducescatter" ? w.bytes / nranks_ : w.bytes;
    if (!ok(r, "hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(w.bytes, 1), &in)) ||
        !ok(r, "hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(out_bytes, 1), &out)))
      break;
    models::HugeBuffer host(real ? std::max(w.bytes, out_bytes) : 1);
    if (!host) { failures.push_back({FailureKind::HostMemory, "rank " + std::to_string(r) + ": out of host memory"}); break; }
    for (std::uint32_t rep = 0; rep < w.repeat; ++rep) {
      driver_->set_phase(r, s, rep);
      rank_at_[r] = {s, rep};
      ops_done_[r] = started++;
      PayloadKey key{sc_.seed, s, rep};
      if (w.op == "h2d" || w.op == "d2h") {
        if (!host_copy(r, w, s, rep, st, in, host.get(), real)) goto out;
        continue;
      }
      if (real) {
        fill_input(host.get(), count, w.dtype, w.reduce, key, r);
        if (!ok(r, "hcomm_memcpy_host_to_device", hcomm_memcpy_host_to_device(in, host.get(), w.bytes, st)) ||
            !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
          goto out;
        rendezvous();
      }
      if (w.op == "barrier") {
        if (!ok(r, "hcomm_barrier", hcomm_barrier(comm, st)) || !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st))) goto out;
        continue;
      }
      if (w.op == "allreduce" || w.op == "allgather" || w.op == "reducescatter" || w.op == "broadcast" || w.op == "alltoall") {
        const auto dt = to_hcomm(w.dtype);
        const auto ro = static_cast<hcomm_reduce_op_t>(w.reduce);
        hcomm_result_t rc;
        if (w.op == "allreduce") rc = hcomm_allreduce(in, out, count, dt, ro, comm, st);
        else if (w.op == "allgather") rc = hcomm_allgather(in, out, count, dt, comm, st);
        else if (w.op == "reducescatter") rc = hcomm_reduce_scatter(in, out, count / nranks_, dt, ro, comm, st);
        else if (w.op == "alltoall") rc = hcomm_alltoall(in, out, count / nranks_, dt, comm, st);
        else rc = hcomm_broadcast(r == w.root ? in : out, count, dt, w.root, comm, st);
        if (!ok(r, ("hcomm_" + (w.op == "reducescatter" ? std::string("reduce_scatter") : w.op)).c_str(), rc) ||
            !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
          goto out;
      } else if (w.op == "incast") {
        if (!incast(r, w, s, rep, ctx, comm, st, in, real ? host.get() : nullptr)) goto out;
        continue;  // incast checks its own results at the root
      } else {  // sendrecv: partners exchange buffers, send and receive on separate streams
        const std::uint32_t peer = partner(w, r);
        hcomm_request_t reqs[2];
        if (!ok(r, "hcomm_isend", hcomm_isend(in, count, to_hcomm(w.dtype), peer, rep, comm, st, &reqs[0])) ||
            !ok(r, "hcomm_irecv", hcomm_irecv(out, count, to_hcomm(w.dtype), peer, rep, comm, st2, &reqs[1])) ||
            !ok(r, "hcomm_waitall", hcomm_waitall(2, reqs)))
          goto out;
      }
      inject_bitflips(r, s, rep, out);
      if (real) {
        // The broadcast root's result is its input, left in place.
        void* result = w.op == "broadcast" && r == w.root ? in : out;
        if (!ok(r, "hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(host.get(), result, out_bytes, st)) ||
            !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
          goto out;
        CheckResult cr;
        if (w.op == "allreduce") {
          cr = compare(host.get(), reference(s, rep).data(), count, w.dtype, w.reduce, nranks_);
          release_reference(s, rep);
        } else if (w.op == "reducescatter") {  // block r of the all-reduce of the inputs
          cr = compare(host.get(), reference(s, rep).data() + r * out_bytes, count / nranks_, w.dtype, w.reduce, nranks_);
          release_reference(s, rep);
        } else if (w.op == "allgather" || w.op == "alltoall") {
          // Block j of the output is rank j's input (all-gather) or block r of it (all-to-all).
          const bool a2a = w.op == "alltoall";
          const std::uint64_t blk = a2a ? w.bytes / nranks_ : w.bytes, bcount = a2a ? count / nranks_ : count;
          const std::uint64_t from = a2a ? r * blk : 0;
          std::vector<std::uint8_t> expect(w.bytes);
          for (std::uint32_t j = 0; j < nranks_; ++j) {
            fill_input(expect.data(), count, w.dtype, w.reduce, key, j);
            const CheckResult b =
                compare(host.get() + j * blk, expect.data() + from, bcount, w.dtype, models::ReduceOp::Max, 1);
            if (b.mismatches && !cr.mismatches) {
              cr = b;
              cr.first_bad += j * bcount;
              cr.detail = "block " + std::to_string(j) + ": " + b.detail;
            } else {
              cr.mismatches += b.mismatches;
            }
          }
        } else if (w.op == "broadcast") {  // the root's input
          std::vector<std::uint8_t> expect(w.bytes);
          fill_input(expect.data(), count, w.dtype, w.reduce, key, w.root);
          cr = compare(host.get(), expect.data(), count, w.dtype, models::ReduceOp::Max, 1);
        } else {
          std::vector<std::uint8_t> expect(w.bytes);
          fill_input(expect.data(), count, w.dtype, w.reduce, key, partner(w, r));
          cr = compare(host.get(), expect.data(), count, w.dtype, models::ReduceOp::Max, 1);
        }
        record_check(r, s, rep, w, cr, count);
      }
    }
  out:
    hcomm_free(ctx, in);
    hcomm_free(ctx, out);
  }
  hcomm_destroy_stream(st);
  hcomm_destroy_stream(st2);
  hcomm_comm_destroy(comm);
  hcomm_destroy_context(ctx);
  rank_finished(r);
}

// Incast: every sender RDMA-writes `bytes` into the root's symmetric buffer at offset
// rank x bytes (one-sided, registered memory); a barrier; the root checks every segment.
bool Cluster::incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_context_t ctx, hcomm_comm_t comm,
                     hcomm_stream_t st, void* in, unsigned char* host) {
  const std::uint64_t seg = w.bytes;
  void* sym = nullptr;
  hcomm_mr_t mr{};
  bool good = ok(r, "hcomm_buffer_alloc", hcomm_buffer_alloc(ctx, seg * nranks_, &sym)) &&
              ok(r, "hcomm_reg_mr", hcomm_reg_mr(ctx, sym, seg * nranks_, HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE, &mr)) &&
              ok(r, "hcomm_barrier", hcomm_barrier(comm, nullptr));
  if (good && incast_sender(w, r)) {
    std::uint64_t remote = 0;
    good = ok(r, "hcomm_remote_addr", hcomm_remote_addr(comm, w.root, static_cast<unsigned char*>(sym) + r * seg, &remote)) &&
           ok(r, "hcomm_rdma_write", hcomm_rdma_write(in, seg, w.root, remote, mr.rkey, comm, st)) &&
           ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st));
  }
  good = good && ok(r, "hcomm_barrier", hcomm_barrier(comm, nullptr));
  if (good && r == w.root && host && !check_incast(r, w, s, rep, st, sym, host)) return false;
  if (sym) { hcomm_dereg_mr(ctx, &mr); hcomm_buffer_free(ctx, sym); }
  return good;
}

// h2d / d2h: every rank copies `bytes` between the host and its device at once (after the
// rendezvous), timed by the host from submit to synchronize; with real payload the bytes that
// arrive are compared with the bytes sent (device memory read back by the backdoor for h2d).
bool Cluster::host_copy(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* dev,
                        std::uint8_t* host, bool real) {
  const std::uint64_t count = w.bytes / models::dtype_size(w.dtype);
  const std::uint64_t dev_addr = reinterpret_cast<std::uint64_t>(dev);
  const bool h2d = w.op == "h2d";
  std::vector<std::uint8_t> expect;
  if (real) {
    expect.resize(w.bytes);
    fill_input(expect.data(), count, w.dtype, w.reduce, PayloadKey{sc_.seed, s, rep}, r);
    if (h2d) std::memcpy(host, expect.data(), w.bytes);
    else elab_.machine.backdoor_write(dev_addr, expect.data(), w.bytes);
  }
  rendezvous();
  const models::Tick t0 = sc_core::sc_time_stamp().value();
  if (driver_->on_op_start) driver_->on_op_start(s, rep, hcomm::OpInfo{}, t0);
  if (!ok(r, h2d ? "hcomm_memcpy_host_to_device" : "hcomm_memcpy_device_to_host",
          h2d ? hcomm_memcpy_host_to_device(dev, host, w.bytes, st) : hcomm_memcpy_device_to_host(host, dev, w.bytes, st)) ||
      !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
    return false;
  driver_->record_host_op(r, w.op, w.bytes, t0, sc_core::sc_time_stamp().value());
  if (real) {
    std::vector<std::uint8_t> got(w.bytes);
    if (h2d) elab_.machine.backdoor_read(dev_addr, got.data(), w.bytes);
    else std::memcpy(got.data(), host, w.bytes);
    record_check(r, s, rep, w, compare(got.data(), expect.data(), count, w.dtype, models::ReduceOp::Max, 1), count);
  }
  return true;
}

}  // namespace sim
