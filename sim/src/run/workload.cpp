// The workload interpreter (docs/scenario-format.md#workload): the program every rank runs in its
// SC_THREAD through the public hcomm API — allocate, fill, run each step's operation, check.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "models/mem/huge_alloc.h"
#include "run/workload.h"
#include "sim/kernel.h"

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

Workload::Workload(const Scenario& sc, std::uint32_t nranks, models::Machine& machine, SimDriver& driver, RankServices& ranks,
                   FaultInjector& faults, ResultChecks& checks, TrainSteps& train, std::vector<Failure>& failures)
    : sc_(sc), nranks_(nranks), machine_(machine), driver_(driver), ranks_(ranks), faults_(faults), checks_(checks), train_(train),
      failures_(failures), recovery_(nranks), async_reports_(nranks) {
  for (std::uint32_t r = 0; r < nranks_; ++r) cb_ctx_.push_back({this, r});
}

bool Workload::run(std::uint32_t r) {
  const auto& npu = sc_.topology.npus[sc_.topology.rank_to_npu[r]];
  // The communicator's ranks in its rank order (original rank numbers) and this rank's index: all
  // of them, until /on_rank_loss "shrink" replaces the communicator by a lost rank's survivors.
  RankState k{r, nullptr, nullptr, nullptr, nullptr, 0, Members{nranks_, {}}, r};
  if (!ranks_.ok(r, "hcomm_create_context", hcomm_create_context(npu.device_id, &k.ctx))) return false;
  if (!ranks_.ok(r, "hcomm_comm_init", hcomm_comm_init(k.ctx, nranks_, r, &k.comm)) ||
      !ranks_.ok(r, "hcomm_create_stream", hcomm_create_stream(k.ctx, &k.st)) ||
      !ranks_.ok(r, "hcomm_create_stream", hcomm_create_stream(k.ctx, &k.st2))) {
    hcomm_destroy_context(k.ctx);
    return false;
  }
  watch(r, k.comm);
  for (std::uint32_t s = 0; s < sc_.workload.size(); ++s)
    if (!run_step(k, s)) break;
  hcomm_destroy_stream(k.st);
  hcomm_destroy_stream(k.st2);
  hcomm_comm_destroy(k.comm);
  hcomm_destroy_context(k.ctx);
  return true;
}

// One workload step, all its repetitions (false: this rank's program ends here).
bool Workload::run_step(RankState& k, std::uint32_t s) {
  const std::uint32_t r = k.r;
  const WorkloadStep& w = sc_.workload[s];
  if (w.kind == WorkloadOp::TrainStep) {  // a training iteration (train_step.cpp)
    if (train_.run(r, s, w, k.ctx, k.comm, &k.started)) return true;
    ranks_.stop(r);
    return false;
  }
  const std::size_t esz = models::dtype_size(w.dtype);
  const bool real = sc_.store_bytes && w.check && w.kind != WorkloadOp::Barrier;
  void *in = nullptr, *out = nullptr;
  // Output bytes: the gathered buffer (all-gather), one block (reduce-scatter), else the input's
  // (sized for the whole communicator: a shrunk one needs no more).
  const std::uint64_t max_out = w.kind == WorkloadOp::AllGather ? w.bytes * nranks_ : w.bytes;
  if (!ranks_.ok(r, "hcomm_malloc", hcomm_malloc(k.ctx, std::max<std::uint64_t>(w.bytes, 1), &in)) ||
      !ranks_.ok(r, "hcomm_malloc", hcomm_malloc(k.ctx, std::max<std::uint64_t>(max_out, 1), &out)))
    return false;
  // Host bytes: a checked payload's input and result, and every byte of a host copy whose HBM
  // keeps bytes (checked or not: the DMA reads or writes them all). Otherwise no mapping per
  // rank and operation (8192 mmap/munmap pairs per operation at 1024 servers); the API still
  // gets a valid pointer, whose bytes nothing touches.
  alignas(64) static unsigned char no_payload[64];
  const bool host_bytes = real || ((w.kind == WorkloadOp::H2D || w.kind == WorkloadOp::D2H) && sc_.store_bytes);
  models::HugeBuffer host_mem(host_bytes ? std::max(w.bytes, max_out) : 0);
  unsigned char* const host = host_bytes ? host_mem.get() : no_payload;
  if (!host) {
    failures_.push_back({FailureKind::HostMemory, "rank " + std::to_string(r) + ": out of host memory"});
    return false;
  }
  const StepBuffers b{w, s, w.bytes / esz, real, in, out, host};
  bool go = true;
  for (std::uint32_t rep = 0; rep < w.repeat && go; ++rep) {
    for (bool redo = false;; redo = true) {  // redo: re-running the repetition on a shrunk communicator
      ranks_.enter(r, s, rep);
      if (!redo) ranks_.ops_done(r, k.started++);
      if (run_rep(k, b, rep)) break;
      // /on_rank_loss "shrink": the survivors of the lost ranks go on, on a shrunk communicator,
      // from this repetition (re-run from its inputs); otherwise this rank's program ends here.
      // "stop" (the default) ends the program at once: no later repetition or step, no wait.
      if (!shrink_comm(r, s, rep, &k.comm, &k.members, &k.me)) {
        ranks_.stop(r);
        go = false;
        break;
      }
    }
  }
  hcomm_free(k.ctx, in);
  hcomm_free(k.ctx, out);
  return go;
}

// One repetition of a step, dispatched on its kind (false: a call failed).
bool Workload::run_rep(RankState& k, const StepBuffers& b, std::uint32_t rep) {
  switch (b.w.kind) {
    case WorkloadOp::H2D:
    case WorkloadOp::D2H: return host_copy(k.r, b.w, b.s, rep, k.st, b.in, b.host, b.real);
    case WorkloadOp::Barrier: return run_barrier(k);
    case WorkloadOp::Incast:  // checks its own results at the root
      return send_input(k, b, rep) && incast(k.r, b.w, b.s, rep, k.ctx, k.comm, k.st, b.in, b.real ? b.host : nullptr);
    case WorkloadOp::SendRecv:
      if (!send_input(k, b, rep) || !run_sendrecv(k, b, rep)) return false;
      break;
    case WorkloadOp::AllReduce:
    case WorkloadOp::AllGather:
    case WorkloadOp::ReduceScatter:
    case WorkloadOp::Broadcast:
    case WorkloadOp::AllToAll:
      if (!send_input(k, b, rep) || !run_collective(k, b)) return false;
      break;
    case WorkloadOp::TrainStep: return false;  // run_step runs it, never here
  }
  faults_.inject_bitflips(k.r, b.s, rep, b.out);
  return !b.real || check_output(k, b, rep);
}

// A checked step's input: generated on the host, copied to the device; then the rendezvous.
bool Workload::send_input(RankState& k, const StepBuffers& b, std::uint32_t rep) {
  if (!b.real) return true;
  fill_input(b.host, b.count, b.w.dtype, b.w.reduce, PayloadKey{sc_.seed, b.s, rep, nranks_}, k.r);
  if (!ranks_.ok(k.r, "hcomm_memcpy_host_to_device", hcomm_memcpy_host_to_device(b.in, b.host, b.w.bytes, k.st)) ||
      !ranks_.ok(k.r, "hcomm_stream_synchronize", hcomm_stream_synchronize(k.st)))
    return false;
  ranks_.rendezvous();
  return true;
}

bool Workload::run_barrier(RankState& k) {
  return ranks_.ok(k.r, "hcomm_barrier", hcomm_barrier(k.comm, k.st)) && ranks_.ok(k.r, "hcomm_stream_synchronize", hcomm_stream_synchronize(k.st));
}

bool Workload::run_collective(RankState& k, const StepBuffers& b) {
  const WorkloadStep& w = b.w;
  const std::uint32_t n = k.members.size();
  const auto dt = to_hcomm(w.dtype);
  const auto ro = static_cast<hcomm_reduce_op_t>(w.reduce);
  hcomm_result_t rc;
  const char* what;
  switch (w.kind) {
    case WorkloadOp::AllReduce:
      what = "hcomm_allreduce";
      rc = hcomm_allreduce(b.in, b.out, b.count, dt, ro, k.comm, k.st);
      break;
    case WorkloadOp::AllGather:
      what = "hcomm_allgather";
      rc = hcomm_allgather(b.in, b.out, b.count, dt, k.comm, k.st);
      break;
    case WorkloadOp::ReduceScatter:
      what = "hcomm_reduce_scatter";
      rc = hcomm_reduce_scatter(b.in, b.out, b.count / n, dt, ro, k.comm, k.st);
      break;
    case WorkloadOp::AllToAll:
      what = "hcomm_alltoall";
      rc = hcomm_alltoall(b.in, b.out, b.count / n, dt, k.comm, k.st);
      break;
    case WorkloadOp::Broadcast:
      what = "hcomm_broadcast";
      rc = hcomm_broadcast(k.r == w.root ? b.in : b.out, b.count, dt, k.members.index_of(w.root), k.comm, k.st);
      break;
    default: return false;  // not a collective: run_rep never calls this
  }
  return ranks_.ok(k.r, what, rc) && ranks_.ok(k.r, "hcomm_stream_synchronize", hcomm_stream_synchronize(k.st));
}

// sendrecv: partners exchange buffers, send and receive on separate streams.
bool Workload::run_sendrecv(RankState& k, const StepBuffers& b, std::uint32_t rep) {
  const std::uint32_t peer = partner(b.w, k.r);
  const auto dt = to_hcomm(b.w.dtype);
  hcomm_request_t reqs[2];
  return ranks_.ok(k.r, "hcomm_isend", hcomm_isend(b.in, b.count, dt, peer, rep, k.comm, k.st, &reqs[0])) &&
         ranks_.ok(k.r, "hcomm_irecv", hcomm_irecv(b.out, b.count, dt, peer, rep, k.comm, k.st2, &reqs[1])) &&
         ranks_.ok(k.r, "hcomm_waitall", hcomm_waitall(2, reqs));
}

// A collective's or sendrecv's result, copied to the host and compared with its reference.
bool Workload::check_output(RankState& k, const StepBuffers& b, std::uint32_t rep) {
  const WorkloadStep& w = b.w;
  const std::uint32_t r = k.r, s = b.s, n = k.members.size(), me = k.me;
  const std::size_t esz = models::dtype_size(w.dtype);
  const std::uint64_t count = b.count;
  const std::uint64_t out_bytes = w.kind == WorkloadOp::AllGather ? w.bytes * n : w.kind == WorkloadOp::ReduceScatter ? w.bytes / n : w.bytes;
  const PayloadKey key{sc_.seed, s, rep, nranks_};
  unsigned char* const host = b.host;
  // The broadcast root's result is its input, left in place.
  void* result = w.kind == WorkloadOp::Broadcast && r == w.root ? b.in : b.out;
  if (!ranks_.ok(r, "hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(host, result, out_bytes, k.st)) ||
      !ranks_.ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(k.st)))
    return false;
  CheckResult cr;
  switch (w.kind) {
    case WorkloadOp::AllReduce: {
      const Reference& ref = checks_.reference(s, rep, k.members);
      cr = compare(host, ref.bytes.data(), ref.tol_at(0), count, w.dtype);
      checks_.release_reference(s, rep, n);
      break;
    }
    case WorkloadOp::ReduceScatter: {  // block `me` of the all-reduce of the inputs
      const Reference& ref = checks_.reference(s, rep, k.members);
      cr = compare(host, ref.bytes.data() + me * out_bytes, ref.tol_at(me * (count / n)), count / n, w.dtype);
      checks_.release_reference(s, rep, n);
      break;
    }
    case WorkloadOp::AllGather:
    case WorkloadOp::AllToAll: {
      // Block j of the output is member j's input (all-gather) or block `me` of it (all-to-all).
      const bool a2a = w.kind == WorkloadOp::AllToAll;
      const std::uint64_t blk = a2a ? w.bytes / n : w.bytes, bcount = a2a ? count / n : count;
      const std::uint64_t from = a2a ? me * blk : 0;
      for (std::uint32_t j = 0; j < n; ++j) {
        const CheckResult c = compare_input(host + j * blk, bcount, w.dtype, w.reduce, key, k.members[j], from / esz);
        if (c.mismatches && !cr.mismatches) {
          cr = c;
          cr.first_bad += j * bcount;
          cr.detail = "block " + std::to_string(j) + ": " + c.detail;
        } else {
          cr.mismatches += c.mismatches;
        }
      }
      break;
    }
    case WorkloadOp::Broadcast:  // the root's input
      cr = compare_input(host, count, w.dtype, w.reduce, key, w.root);
      break;
    default:  // sendrecv: the partner's input
      cr = compare_input(host, count, w.dtype, w.reduce, key, partner(w, r));
      break;
  }
  checks_.record(r, s, rep, w, cr, count);
  return true;
}

// Incast, at the root: every sender's segment of the symmetric buffer against what it sent.
bool Workload::check_incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* sym,
                           unsigned char* host) {
  const std::uint64_t seg = w.bytes, count = seg / models::dtype_size(w.dtype);
  std::uint32_t checked = 0, failed = 0;
  for (std::uint32_t q = 0; q < nranks_; ++q) {
    if (!incast_sender(w, q)) continue;
    if (!ranks_.ok(r, "hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(host, static_cast<unsigned char*>(sym) + q * seg, seg, st)) ||
        !ranks_.ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
      return false;
    ++checked;
    if (!checks_.incast_segment(r, s, rep, q, compare_input(host, count, w.dtype, w.reduce, PayloadKey{sc_.seed, s, rep, nranks_}, q))) ++failed;
  }
  checks_.tally_incast(s, rep, checked, failed);
  return true;
}

// The simulated application's error callback (docs/failover.md#the-applications-view): every
// report is kept per rank and logged (a survived fault's HCOMM_I_FAILOVER as a warning).
void Workload::on_async_report(hcomm_comm_t, hcomm_result_t code, const char* msg, void* user) {
  const auto* x = static_cast<const CallbackCtx*>(user);
  x->w->async_reports_[x->r].push_back(code);
  const bool info = code == HCOMM_I_FAILOVER;
  x->w->driver_.observer().note(x->r, info ? 1 : 0, std::string(info ? "[HCSIM_WARN]" : "[HCSIM_ERR]") + " rank " + std::to_string(x->r) +
                                                ": error callback: " + hcomm_result_string(code) + " (" + std::to_string(code) + "): " + (msg ? msg : ""));
}

void Workload::watch(std::uint32_t r, hcomm_comm_t comm) {
  if (comm && r < cb_ctx_.size()) hcomm_comm_set_error_callback(comm, &Workload::on_async_report, &cb_ctx_[r]);
}

// After a failed call: with /on_rank_loss "shrink", ask the library which ranks its recovery
// agreement found lost (HCOMM_OP_RETRY=1 runs one), shrink the communicator to the survivors and
// go on with it. The operations a shrunk communicator cannot re-run (sendrecv and incast pair
// original ranks; a broadcast whose root was lost; blocks that do not divide among the survivors)
// end the program, with the reason.
bool Workload::shrink_comm(std::uint32_t r, std::uint32_t s, std::uint32_t rep, hcomm_comm_t* comm, Members* members, std::uint32_t* me) {
  if (!sc_.shrink_on_rank_loss) return false;
  std::vector<std::uint32_t> lost(members->size());
  std::uint32_t nl = 0;
  if (hcomm_comm_lost_ranks(*comm, static_cast<std::uint32_t>(lost.size()), lost.data(), &nl) != HCOMM_SUCCESS || nl == 0) {
    driver_.observer().note(r, 0, "[HCSIM_ERR] rank " + std::to_string(r) + ": on_rank_loss shrink: no lost ranks known (the recovery agreement runs with HCOMM_OP_RETRY=1)");
    return false;
  }
  lost.resize(nl);
  hcomm_comm_t next = nullptr;
  if (!ranks_.ok(r, "hcomm_comm_shrink", hcomm_comm_shrink(*comm, nl, lost.data(), &next))) return false;
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
  const WorkloadStep& w = sc_.workload[s];
  const auto n = static_cast<std::uint32_t>(members->size());
  std::string why;
  if (w.kind == WorkloadOp::SendRecv || w.kind == WorkloadOp::Incast) why = w.op + " pairs the original ranks";
  else if (w.kind == WorkloadOp::Broadcast && members->index_of(w.root) == n) why = "its root was lost";
  else if ((w.kind == WorkloadOp::ReduceScatter || w.kind == WorkloadOp::AllToAll) && w.bytes % (models::dtype_size(w.dtype) * n) != 0)
    why = std::to_string(w.bytes) + " B do not divide into " + std::to_string(n) + " blocks";
  driver_.observer().note(r, why.empty() ? 1 : 0,
                std::string(why.empty() ? "[HCSIM_WARN]" : "[HCSIM_ERR]") + " rank " + std::to_string(r) + ": rank(s) " + names +
                    " lost; communicator shrunk to " + std::to_string(n) + " ranks" +
                    (why.empty() ? ", step " + std::to_string(s) + " rep " + std::to_string(rep) + " re-run"
                                 : "; step " + std::to_string(s) + " (" + w.op + ") cannot go on: " + why));
  if (why.empty()) {
    char at[48];
    std::snprintf(at, sizeof at, "%.3f us", static_cast<double>(now_ps()) / 1e6);
    recovery_[r] += (recovery_[r].empty() ? "" : ", ") + std::string("shrunk to ") + std::to_string(n) + " ranks (lost " + names +
                         ") at " + at;
  }
  return why.empty();
}

// Incast: every sender RDMA-writes `bytes` into the root's symmetric buffer at offset
// rank x bytes (one-sided, registered memory); a barrier; the root checks every segment.
bool Workload::incast(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_context_t ctx, hcomm_comm_t comm,
                     hcomm_stream_t st, void* in, unsigned char* host) {
  const std::uint64_t seg = w.bytes;
  void* sym = nullptr;
  hcomm_mr_t mr{};
  bool good = ranks_.ok(r, "hcomm_buffer_alloc", hcomm_buffer_alloc(ctx, seg * nranks_, &sym)) &&
              ranks_.ok(r, "hcomm_reg_mr", hcomm_reg_mr(ctx, sym, seg * nranks_, HCOMM_ACCESS_LOCAL_WRITE | HCOMM_ACCESS_REMOTE_WRITE, &mr)) &&
              ranks_.ok(r, "hcomm_barrier", hcomm_barrier(comm, nullptr));
  if (good && incast_sender(w, r)) {
    std::uint64_t remote = 0;
    good = ranks_.ok(r, "hcomm_remote_addr", hcomm_remote_addr(comm, w.root, static_cast<unsigned char*>(sym) + r * seg, &remote)) &&
           ranks_.ok(r, "hcomm_rdma_write", hcomm_rdma_write(in, seg, w.root, remote, mr.rkey, comm, st)) &&
           ranks_.ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st));
  }
  good = good && ranks_.ok(r, "hcomm_barrier", hcomm_barrier(comm, nullptr));
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
bool Workload::host_copy(std::uint32_t r, const WorkloadStep& w, std::uint32_t s, std::uint32_t rep, hcomm_stream_t st, void* dev,
                        std::uint8_t* host, bool real) {
  constexpr std::uint64_t kPart = 1 << 20;  // a multiple of every element size
  const std::size_t esz = models::dtype_size(w.dtype);
  const std::uint64_t count = w.bytes / esz;
  const std::uint64_t dev_addr = reinterpret_cast<std::uint64_t>(dev);
  const bool h2d = w.kind == WorkloadOp::H2D;
  const PayloadKey key{sc_.seed, s, rep, nranks_};
  std::vector<std::uint8_t> part;
  if (real) {
    if (h2d) {
      fill_input(host, count, w.dtype, w.reduce, key, r);
    } else {
      for (std::uint64_t off = 0; off < count * esz; off += kPart) {
        part.resize(std::min(kPart, count * esz - off));
        fill_input(part.data(), part.size() / esz, w.dtype, w.reduce, key, r, off / esz);
        machine_.backdoor_write(dev_addr + off, part.data(), part.size());
      }
    }
  }
  ranks_.rendezvous();
  const models::Tick t0 = now_ps();
  if (driver_.observer().on_op_start) driver_.observer().on_op_start(s, rep, hcomm::OpInfo{}, t0);
  if (!ranks_.ok(r, h2d ? "hcomm_memcpy_host_to_device" : "hcomm_memcpy_device_to_host",
          h2d ? hcomm_memcpy_host_to_device(dev, host, w.bytes, st) : hcomm_memcpy_device_to_host(host, dev, w.bytes, st)) ||
      !ranks_.ok(r, "hcomm_stream_synchronize", hcomm_stream_synchronize(st)))
    return false;
  driver_.observer().record_host_op(r, w.op, w.bytes, t0, now_ps());
  if (real) {
    CheckResult cr;
    if (h2d) {  // the device's bytes against the input sent from the host buffer
      for (std::uint64_t off = 0; off < count * esz; off += kPart) {
        const std::uint64_t len = std::min(kPart, count * esz - off);
        part.resize(len);
        machine_.backdoor_read(dev_addr + off, part.data(), len);
        merge_check(&cr, compare(part.data(), host + off, nullptr, len / esz, w.dtype, off / esz));
      }
    } else {
      cr = compare_input(host, count, w.dtype, w.reduce, key, r);
    }
    checks_.record(r, s, rep, w, cr, count);
  }
  return true;
}

bool Workload::incast_sender(const WorkloadStep& w, std::uint32_t r) const {
  if (r == w.root) return false;
  if (w.senders == "all") return true;
  const auto& t = sc_.topology;
  const auto root_server = t.npus[t.rank_to_npu[w.root]].server;
  if (t.npus[t.rank_to_npu[r]].server == root_server) return false;
  if (w.senders_count == 0) return true;
  // "remote:N": the first N remote ranks after the root in rank order (wrapping around).
  const auto n = static_cast<std::uint32_t>(t.rank_to_npu.size());
  std::uint32_t k = 0;
  for (std::uint32_t q = (w.root + 1) % n; k < w.senders_count; q = (q + 1) % n) {
    if (t.npus[t.rank_to_npu[q]].server == root_server) continue;
    if (q == r) return true;
    ++k;
  }
  return false;
}

std::uint32_t Workload::partner(const WorkloadStep& w, std::uint32_t r) const {
  return w.pattern == "halves" ? (r + nranks_ / 2) % nranks_ : r ^ 1u;
}

}  // namespace sim
