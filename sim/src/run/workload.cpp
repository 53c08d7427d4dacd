// The workload interpreter (docs/scenario-format.md#workload): the program every rank runs in its
// SC_THREAD through the public hcomm API — allocate, fill, run each step's operation, check.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "models/mem/huge_alloc.h"
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
  if (r < crashed_.size() && crashed_[r]) return;  // crashed at time 0, before it first ran (counted as killed)
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
  watch(r, comm);
  std::uint64_t started = 0;  // operations begun: the ones before the current are done (live.h)
  bool stopped = false;       // a call failed and /on_rank_loss is "stop" (or the shrink could not go on)
  // The communicator's ranks in its rank order (original rank numbers) and this rank's index: all
  // of them, until /on_rank_loss "shrink" replaces the communicator by a lost rank's survivors.
  Members members{nranks_, {}};
  std::uint32_t me = r;
  for (std::uint32_t s = 0; s < sc_.workload.size(); ++s) {
    const WorkloadStep& w = sc_.workload[s];
    if (w.train) {  // a training iteration (train_step.cpp)
      if (!train_step(r, s, w, ctx, comm, &started)) { stopped = stopped_[r] = true; break; }
      continue;
    }
    const std::size_t esz = models::dtype_size(w.dtype);
    const std::uint64_t count = w.bytes / esz;
    const bool real = sc_.store_bytes && w.check && w.op != "barrier";
    void *in = nullptr, *out = nullptr;
    // Output bytes: the gathered buffer (all-gather), one block (reduce-scatter), else the input's
    // (sized for the whole communicator: a shrunk one needs no more).
    const std::uint64_t max_out = w.op == "allgather" ? w.bytes * nranks_ : w.bytes;
    if (!ok(r, "hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(w.bytes, 1), &in)) ||
        !ok(r, "hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(max_out, 1), &out)))
      break;
    // Host bytes: a checked payload's input and result, and every byte of a host copy whose HBM
    // keeps bytes (checked or not: the DMA reads or writes them all). Otherwise no mapping per
    // rank and operation (8192 mmap/munmap pairs per operation at 1024 servers); the API still
    // gets a valid pointer, whose bytes nothing touches.
    alignas(64) static unsigned char no_payload[64];
    const bool host_bytes = real || ((w.op == "h2d" || w.op == "d2h") && sc_.store_bytes);
    models::HugeBuffer host_mem(host_bytes ? std::max(w.bytes, max_out) : 0);
    unsigned char* const host = host_bytes ? host_mem.get() : no_payload;
    if (!host) { failures.push_back({FailureKind::HostMemory, "rank " + std::to_string(r) + ": out of host memory"}); break; }
    bool redo = false;  // re-running a repetition on a shrunk communicator
    for (std::uint32_t rep = 0; rep < w.repeat; ++rep) {
      {
        const auto n = static_cast<std::uint32_t>(members.size());
        const std::uint64_t out_bytes = w.op == "allgather" ? w.bytes * n : w.op == "reducescatter" ? w.bytes / n : w.bytes;
        driver_->set_phase(r, s, rep);
        rank_at_[r] = {s, rep};
        if (!redo) ops_done_[r] = started++;
        redo = false;
        PayloadKey key{sc_.seed, s, rep, nranks_};
        if (w.op == "h2d" || w.op == "d2h") {
          if (!host_copy(r, w, s, rep, st, in, host, real)) goto failed;
          continue;
        }
        if (real) {
          fill_input(host, count, w.dtype, w.reduce, key, r);
          if (!ok(r, "hcomm_memcpy_host_to_device", hcomm_memcpy_host_to_device(in, host, w.bytes, st)) ||
              !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
            goto failed;
          rendezvous();
        }
        if (w.op == "barrier") {
          if (!ok(r, "hcomm_barrier", hcomm_barrier(comm, st)) || !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st))) goto failed;
          continue;
        }
        if (w.op == "allreduce" || w.op == "allgather" || w.op == "reducescatter" || w.op == "broadcast" || w.op == "alltoall") {
          const auto dt = to_hcomm(w.dtype);
          const auto ro = static_cast<hcomm_reduce_op_t>(w.reduce);
          const std::uint32_t root = members.index_of(w.root);
          hcomm_result_t rc;
          if (w.op == "allreduce") rc = hcomm_allreduce(in, out, count, dt, ro, comm, st);
          else if (w.op == "allgather") rc = hcomm_allgather(in, out, count, dt, comm, st);
          else if (w.op == "reducescatter") rc = hcomm_reduce_scatter(in, out, count / n, dt, ro, comm, st);
          else if (w.op == "alltoall") rc = hcomm_alltoall(in, out, count / n, dt, comm, st);
          else rc = hcomm_broadcast(r == w.root ? in : out, count, dt, root, comm, st);
          if (!ok(r, ("hcomm_" + (w.op == "reducescatter" ? std::string("reduce_scatter") : w.op)).c_str(), rc) ||
              !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
            goto failed;
        } else if (w.op == "incast") {
          if (!incast(r, w, s, rep, ctx, comm, st, in, real ? host : nullptr)) goto failed;
          continue;  // incast checks its own results at the root
        } else {  // sendrecv: partners exchange buffers, send and receive on separate streams
          const std::uint32_t peer = partner(w, r);
          hcomm_request_t reqs[2];
          if (!ok(r, "hcomm_isend", hcomm_isend(in, count, to_hcomm(w.dtype), peer, rep, comm, st, &reqs[0])) ||
              !ok(r, "hcomm_irecv", hcomm_irecv(out, count, to_hcomm(w.dtype), peer, rep, comm, st2, &reqs[1])) ||
              !ok(r, "hcomm_waitall", hcomm_waitall(2, reqs)))
            goto failed;
        }
        inject_bitflips(r, s, rep, out);
        if (real) {
          // The broadcast root's result is its input, left in place.
          void* result = w.op == "broadcast" && r == w.root ? in : out;
          if (!ok(r, "hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(host, result, out_bytes, st)) ||
              !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
            goto failed;
          CheckResult cr;
          if (w.op == "allreduce") {
            const Reference& ref = reference(s, rep, members);
            cr = compare(host, ref.bytes.data(), ref.tol_at(0), count, w.dtype);
            release_reference(s, rep, n);
          } else if (w.op == "reducescatter") {  // block `me` of the all-reduce of the inputs
            const Reference& ref = reference(s, rep, members);
            cr = compare(host, ref.bytes.data() + me * out_bytes, ref.tol_at(me * (count / n)), count / n, w.dtype);
            release_reference(s, rep, n);
          } else if (w.op == "allgather" || w.op == "alltoall") {
            // Block j of the output is member j's input (all-gather) or block `me` of it (all-to-all).
            const bool a2a = w.op == "alltoall";
            const std::uint64_t blk = a2a ? w.bytes / n : w.bytes, bcount = a2a ? count / n : count;
            const std::uint64_t from = a2a ? me * blk : 0;
            for (std::uint32_t j = 0; j < n; ++j) {
              const CheckResult b = compare_input(host + j * blk, bcount, w.dtype, w.reduce, key, members[j], from / esz);
              if (b.mismatches && !cr.mismatches) {
                cr = b;
                cr.first_bad += j * bcount;
                cr.detail = "block " + std::to_string(j) + ": " + b.detail;
              } else {
                cr.mismatches += b.mismatches;
              }
            }
          } else if (w.op == "broadcast") {  // the root's input
            cr = compare_input(host, count, w.dtype, w.reduce, key, w.root);
          } else {
            cr = compare_input(host, count, w.dtype, w.reduce, key, partner(w, r));
          }
          record_check(r, s, rep, w, cr, count);
        }
        continue;
      }
    failed:
      // /on_rank_loss "shrink": the survivors of the lost ranks go on, on a shrunk communicator,
      // from this repetition (re-run from its inputs); otherwise this rank's program ends here.
      // "stop" (the default) ends the program at once: no later repetition or step, no wait.
      if (!shrink_comm(r, &comm, &members, &me)) { stopped = stopped_[r] = true; goto out; }
      redo = true;
      --rep;
    }
  out:
    hcomm_free(ctx, in);
    hcomm_free(ctx, out);
    if (stopped) break;
  }
  hcomm_destroy_stream(st);
  hcomm_destroy_stream(st2);
  hcomm_comm_destroy(comm);
  hcomm_destroy_context(ctx);
  rank_finished(r);
}

// The simulated application's error callback (docs/failover.md#the-applications-view): every
// report is kept per rank and logged (a survived fault's HCOMM_I_FAILOVER as a warning).
void Cluster::on_async_report(hcomm_comm_t, hcomm_result_t code, const char* msg, void* user) {
  const auto* x = static_cast<const CallbackCtx*>(user);
  x->c->async_reports_[x->r].push_back(code);
  const bool info = code == HCOMM_I_FAILOVER;
  x->c->driver_->note(x->r, info ? 1 : 0, std::string(info ? "[HCSIM_WARN]" : "[HCSIM_ERR]") + " rank " + std::to_string(x->r) +
                                                ": error callback: " + hcomm_result_string(code) + " (" + std::to_string(code) + "): " + (msg ? msg : ""));
}

void Cluster::watch(std::uint32_t r, hcomm_comm_t comm) {
  if (comm && r < cb_ctx_.size()) hcomm_comm_set_error_callback(comm, &Cluster::on_async_report, &cb_ctx_[r]);
}

// After a failed call: with /on_rank_loss "shrink", ask the library which ranks its recovery
// agreement found lost (HCOMM_OP_RETRY=1 runs one), shrink the communicator to the survivors and
// go on with it. The operations a shrunk communicator cannot re-run (sendrecv and incast pair
// original ranks; a broadcast whose root was lost; blocks that do not divide among the survivors)
// end the program, with the reason.
bool Cluster::shrink_comm(std::uint32_t r, hcomm_comm_t* comm, Members* members, std::uint32_t* me) {
  if (!sc_.shrink_on_rank_loss) return false;
  std::vector<std::uint32_t> lost(members->size());
  std::uint32_t nl = 0;
  if (hcomm_comm_lost_ranks(*comm, static_cast<std::uint32_t>(lost.size()), lost.data(), &nl) != HCOMM_SUCCESS || nl == 0) {
    driver_->note(r, 0, "[HCSIM_ERR] rank " + std::to_string(r) + ": on_rank_loss shrink: no lost ranks known (the recovery agreement runs with HCOMM_OP_RETRY=1)");
    return false;
  }
  lost.resize(nl);
  hcomm_comm_t next = nullptr;
  if (!ok(r, "hcomm_comm_shrink", hcomm_comm_shrink(*comm, nl, lost.data(), &next))) return false;
  std::vector<std::uint32_t> survivors;
  for (std::uint32_t i = 0; i < members->size(); ++i)
    if (!std::binary_search(lost.begin(), lost.end(), i)) survivors.push_back((*members)[i]);
  std::string names;
  for (std::uint32_t l : lost) names += (names.empty() ? "" : ",") + std::to_string((*members)[l]);
  hcomm_comm_destroy(*comm);
  *comm = next;
  watch(r, next);
  auto same = std::find_if(member_lists_.begin(), member_lists_.end(), [&](const auto& l) { return *l == survivors; });
  if (same == member_lists_.end()) same = member_lists_.insert(member_lists_.end(), std::make_shared<const std::vector<std::uint32_t>>(std::move(survivors)));
  members->list = *same;
  *me = members->index_of(r);
  const auto [s, rep] = rank_at_[r];
  const WorkloadStep& w = sc_.workload[s];
  const auto n = static_cast<std::uint32_t>(members->size());
  std::string why;
  if (w.op == "sendrecv" || w.op == "incast") why = w.op + " pairs the original ranks";
  else if (w.op == "broadcast" && members->index_of(w.root) == n) why = "its root was lost";
  else if ((w.op == "reducescatter" || w.op == "alltoall") && w.bytes % (models::dtype_size(w.dtype) * n) != 0)
    why = std::to_string(w.bytes) + " B do not divide into " + std::to_string(n) + " blocks";
  driver_->note(r, why.empty() ? 1 : 0,
                std::string(why.empty() ? "[HCSIM_WARN]" : "[HCSIM_ERR]") + " rank " + std::to_string(r) + ": rank(s) " + names +
                    " lost; communicator shrunk to " + std::to_string(n) + " ranks" +
                    (why.empty() ? ", step " + std::to_string(s) + " rep " + std::to_string(rep) + " re-run"
                                 : "; step " + std::to_string(s) + " (" + w.op + ") cannot go on: " + why));
  if (why.empty()) {
    char at[48];
    std::snprintf(at, sizeof at, "%.3f us", static_cast<double>(now_ps()) / 1e6);
    rank_recovery_[r] += (rank_recovery_[r].empty() ? "" : ", ") + std::string("shrunk to ") + std::to_string(n) + " ranks (lost " + names +
                         ") at " + at;
  }
  return why.empty();
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
// Nothing payload-sized besides the host buffer and the HBM: h2d sends the input from the host
// buffer and compares the device's bytes with it; d2h writes the input into the device and
// compares what lands in the host buffer with it regenerated, both a part of kPart bytes at a time.
bool Cluster::host_copy(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* dev,
                        std::uint8_t* host, bool real) {
  constexpr std::uint64_t kPart = 1 << 20;  // a multiple of every element size
  const std::size_t esz = models::dtype_size(w.dtype);
  const std::uint64_t count = w.bytes / esz;
  const std::uint64_t dev_addr = reinterpret_cast<std::uint64_t>(dev);
  const bool h2d = w.op == "h2d";
  const PayloadKey key{sc_.seed, s, rep, nranks_};
  std::vector<std::uint8_t> part;
  if (real) {
    if (h2d) {
      fill_input(host, count, w.dtype, w.reduce, key, r);
    } else {
      for (std::uint64_t off = 0; off < count * esz; off += kPart) {
        part.resize(std::min(kPart, count * esz - off));
        fill_input(part.data(), part.size() / esz, w.dtype, w.reduce, key, r, off / esz);
        elab_.machine.backdoor_write(dev_addr + off, part.data(), part.size());
      }
    }
  }
  rendezvous();
  const models::Tick t0 = now_ps();
  if (driver_->on_op_start) driver_->on_op_start(s, rep, hcomm::OpInfo{}, t0);
  if (!ok(r, h2d ? "hcomm_memcpy_host_to_device" : "hcomm_memcpy_device_to_host",
          h2d ? hcomm_memcpy_host_to_device(dev, host, w.bytes, st) : hcomm_memcpy_device_to_host(host, dev, w.bytes, st)) ||
      !ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
    return false;
  driver_->record_host_op(r, w.op, w.bytes, t0, now_ps());
  if (real) {
    CheckResult cr;
    if (h2d) {  // the device's bytes against the input sent from the host buffer
      for (std::uint64_t off = 0; off < count * esz; off += kPart) {
        const std::uint64_t len = std::min(kPart, count * esz - off);
        part.resize(len);
        elab_.machine.backdoor_read(dev_addr + off, part.data(), len);
        merge_check(&cr, compare(part.data(), host + off, nullptr, len / esz, w.dtype, off / esz));
      }
    } else {
      cr = compare_input(host, count, w.dtype, w.reduce, key, r);
    }
    record_check(r, s, rep, w, cr, count);
  }
  return true;
}

}  // namespace sim
