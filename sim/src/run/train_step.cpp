// The "train_step" workload op (docs/training-steps.md): one training iteration of a GPT-style
// transformer per repetition, run by every rank through the public hcomm API — compute tasks for
// the layers' forward and backward passes, Megatron-LM tensor-parallel all-reduces on the compute
// stream, GPipe pipeline sends and receives on streams of their own, and the data-parallel
// gradient all-reduce in buckets on a communication stream, each launched (record / wait event) as
// soon as the last micro-batch's backward has produced its gradients.
#include "run/train_step.h"

#include <algorithm>

#include "sim/kernel.h"

namespace sim {

TrainCosts train_costs(const TrainStepSpec& t) {
  TrainCosts c;
  const double b = static_cast<double>(t.micro_batch), s = static_cast<double>(t.seq_len), h = static_cast<double>(t.hidden),
               f = static_cast<double>(t.ffn), v = static_cast<double>(t.vocab), T = t.tp;
  c.attn_fwd_flops = (8 * b * s * h * h + 4 * b * s * s * h) / T;
  c.mlp_fwd_flops = 4 * b * s * h * f / T * (t.experts ? static_cast<double>(t.top_k) : 1.0);
  c.logits_fwd_flops = 2 * b * s * h * v / T;
  const std::uint64_t esz = models::dtype_size(t.dtype);
  c.act_bytes = t.micro_batch * t.seq_len * t.hidden * esz;
  c.layer_grad_bytes = (4 * t.hidden * t.hidden + (t.experts ? 0 : 2 * t.hidden * t.ffn)) / t.tp * esz;
  c.expert_grad_bytes = t.experts ? t.experts / t.ep * (2 * t.hidden * t.ffn / t.tp) * esz : 0;
  c.a2a_bytes = t.experts && t.ep > 1 ? t.micro_batch * t.seq_len * t.top_k * t.hidden * esz : 0;
  c.embed_grad_bytes = t.vocab * t.hidden / t.tp * esz;
  c.layers_per_stage = t.layers / t.pp;
  return c;
}

std::vector<GradBucket> grad_buckets(std::uint64_t bucket_bytes, std::uint64_t layers, std::uint64_t per_layer, std::uint64_t first_extra) {
  std::vector<GradBucket> out;
  std::uint64_t acc = 0;
  for (std::uint64_t l = layers; l-- > 0;) {
    acc += per_layer + (l == 0 ? first_extra : 0);
    if (acc >= bucket_bytes || l == 0) {
      out.push_back({acc, l});
      acc = 0;
    }
  }
  return out;
}

namespace {

hcomm_data_type_t hdtype(models::DType t) {
  switch (t) {
    case models::DType::Fp16: return HCOMM_DATA_TYPE_FP16;
    case models::DType::Bf16: return HCOMM_DATA_TYPE_BFP16;
    default: return HCOMM_DATA_TYPE_FP32;
  }
}

// The measure of the union of intervals (sorted in place): the time at least one was in progress.
models::Tick union_length(std::vector<std::pair<models::Tick, models::Tick>>& iv, models::Tick from) {
  std::sort(iv.begin(), iv.end());
  models::Tick total = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (auto [a, b] : iv) {
    if (b < from) continue;
    a = std::max(a, from);
    if (open && a <= cur_e) { cur_e = std::max(cur_e, b); continue; }
    if (open) total += cur_e - cur_s;
    cur_s = a, cur_e = b, open = true;
  }
  if (open) total += cur_e - cur_s;
  return total;
}

}  // namespace

bool TrainSteps::run(std::uint32_t r, std::uint32_t s, const WorkloadStep& w, hcomm_context_t ctx, hcomm_comm_t world,
                     std::uint64_t* started) {
  const TrainStepSpec& t = *w.train;
  const TrainCosts c = train_costs(t);
  const TrainCoords me = train_coords(t, r);
  const bool first = me.pp == 0, last = me.pp + 1 == t.pp;
  const std::uint32_t npu = sc_.topology.rank_to_npu[r];
  const hcomm_data_type_t dt = hdtype(t.dtype);
  const std::uint64_t act_count = c.act_bytes / models::dtype_size(t.dtype);
  // Gradient buckets: the dense parameters' over the data-parallel group; with MoE the experts'
  // over the expert-data-parallel group (the dp / ep ranks holding the same experts).
  const std::uint32_t edp = t.dp / t.ep;
  const std::vector<GradBucket> buckets =
      t.dp > 1 ? grad_buckets(t.bucket_bytes, c.layers_per_stage, c.layer_grad_bytes, first ? c.embed_grad_bytes : 0) : std::vector<GradBucket>{};
  const std::vector<GradBucket> ebuckets =
      t.experts && edp > 1 ? grad_buckets(t.bucket_bytes, c.layers_per_stage, c.expert_grad_bytes, 0) : std::vector<GradBucket>{};
  std::uint64_t max_bucket = 0, grad_bytes = 0;
  for (const auto* list : {&buckets, &ebuckets})
    for (const auto& b : *list) max_bucket = std::max(max_bucket, b.bytes), grad_bytes += b.bytes;
  const std::uint64_t a2a_count = c.a2a_bytes / models::dtype_size(t.dtype) / t.ep;  // per destination

  // The groups, as Megatron-LM's initialize_model_parallel forms them (split keys: the index in
  // the group). A dimension of size 1 has no communicator: it never communicates.
  hcomm_comm_t tpc = nullptr, dpc = nullptr, ppc = nullptr, epc = nullptr, edpc = nullptr;
  hcomm_stream_t cs = nullptr, ds = nullptr, ss = nullptr, rs = nullptr;
  void *a0 = nullptr, *a1 = nullptr, *psend = nullptr, *precv = nullptr, *g0 = nullptr, *g1 = nullptr, *x0 = nullptr, *x1 = nullptr;
  std::vector<hcomm_event_t> events;
  bool good = true;
  auto call = [&](const char* what, hcomm_result_t rc) { return good = good && ranks_.ok(r, what, rc); };
  ranks_.enter(r, s, 0);
  // The splits exchange records through device memory: with a timing payload the HBM keeps bytes
  // while every rank splits (between two rendezvous), then only as configured again.
  ranks_.rendezvous();
  machine_.keep_bytes(true);
  if (t.tp > 1) call("hcomm_comm_split", hcomm_comm_split(world, me.dp + t.dp * me.pp, me.tp, &tpc));
  if (t.dp > 1) call("hcomm_comm_split", hcomm_comm_split(world, me.tp + t.tp * me.pp, me.dp, &dpc));
  if (t.pp > 1) call("hcomm_comm_split", hcomm_comm_split(world, me.tp + t.tp * me.dp, me.pp, &ppc));
  // Expert parallelism: groups of ep consecutive data-parallel indices (Megatron-LM's order).
  if (t.ep > 1) call("hcomm_comm_split", hcomm_comm_split(world, me.tp + t.tp * (me.pp + t.pp * (me.dp / t.ep)), me.dp % t.ep, &epc));
  if (t.experts && edp > 1 && t.ep > 1)
    call("hcomm_comm_split", hcomm_comm_split(world, me.tp + t.tp * (me.pp + t.pp * (me.dp % t.ep)), me.dp / t.ep, &edpc));
  hcomm_comm_t const edp_comm = t.ep > 1 ? edpc : dpc;  // ep 1: every data-parallel rank holds every expert
  ranks_.rendezvous();
  machine_.keep_bytes(false);
  for (hcomm_stream_t* st : {&cs, &ds, &ss, &rs}) call("hcomm_create_stream", hcomm_create_stream(ctx, st));
  for (void** p : {&a0, &a1, &psend, &precv}) call("hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(c.act_bytes, 1), p));
  for (void** p : {&g0, &g1}) call("hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(max_bucket, 1), p));
  for (void** p : {&x0, &x1}) call("hcomm_malloc", hcomm_malloc(ctx, std::max<std::uint64_t>(c.a2a_bytes, 1), p));
  auto event = [&]() -> hcomm_event_t {
    hcomm_event_t e = nullptr;
    if (call("hcomm_create_event", hcomm_create_event(ctx, &e))) events.push_back(e);
    return e;
  };
  // `to` runs after what `from` has queued so far.
  auto after = [&](hcomm_stream_t from, hcomm_stream_t to) {
    hcomm_event_t e = event();
    call("hcomm_record_event", good ? hcomm_record_event(e, from) : HCOMM_SUCCESS);
    call("hcomm_wait_event", good ? hcomm_wait_event(e, to) : HCOMM_SUCCESS);
  };
  auto compute = [&](double flops) {
    if (flops > 0) call("hcomm_launch_compute_flops", good ? hcomm_launch_compute_flops(cs, flops, dt, t.efficiency) : HCOMM_SUCCESS);
  };
  auto tp_allreduce = [&]() {
    if (tpc) call("hcomm_allreduce", good ? hcomm_allreduce(a0, a1, act_count, dt, HCOMM_REDUCE_SUM, tpc, cs) : HCOMM_SUCCESS);
  };
  // MoE: the tokens to their experts' ranks and back (all-to-all over the expert-parallel group),
  // on the critical path; uniform routing: every rank sends b s top_k / ep tokens to each.
  auto a2a = [&]() {
    if (epc) call("hcomm_alltoall", good ? hcomm_alltoall(x0, x1, a2a_count, dt, epc, cs) : HCOMM_SUCCESS);
  };
  auto reduce_bucket = [&](const GradBucket& b, hcomm_comm_t comm) {
    after(cs, ds);
    const std::uint64_t n = b.bytes / models::dtype_size(t.dtype);
    call("hcomm_allreduce", good ? hcomm_allreduce(g0, g1, n, dt, HCOMM_REDUCE_SUM, comm, ds) : HCOMM_SUCCESS);
  };
  std::vector<hcomm_request_t> reqs;
  // Pipeline messages: activations (forward, tag m) and their gradients (backward, tag M + m)
  // between this rank and its counterpart (same tp and dp index) in the neighbouring stage.
  // A receive is posted when the compute stream reaches it (as Megatron's schedule posts it), so
  // its operation's time is the wait for the neighbour from that point on, not from the iteration's start.
  auto recv_into_cs = [&](std::uint32_t from_stage, std::uint32_t tag) {
    after(cs, rs);
    hcomm_request_t q = nullptr;
    if (call("hcomm_irecv", good ? hcomm_irecv(precv, act_count, dt, from_stage, tag, ppc, rs, &q) : HCOMM_SUCCESS)) reqs.push_back(q);
    after(rs, cs);
  };
  auto send_from_cs = [&](std::uint32_t to_stage, std::uint32_t tag) {
    after(cs, ss);
    hcomm_request_t q = nullptr;
    if (call("hcomm_isend", good ? hcomm_isend(psend, act_count, dt, to_stage, tag, ppc, ss, &q) : HCOMM_SUCCESS)) reqs.push_back(q);
  };

  const std::uint32_t M = t.micro_batches;
  for (std::uint32_t rep = 0; rep < w.repeat && good; ++rep) {
    ranks_.enter(r, s, rep);
    ranks_.ops_done(r, (*started)++);
    ranks_.rendezvous();
    Meas meas;
    meas.t0 = now_ps();
    const models::Tick c0 = machine_.npu_compute_ps(npu);
    driver_.observer().op_intervals(npu).clear();
    for (std::uint32_t m = 0; m < M && good; ++m) {  // GPipe: every micro-batch's forward ...
      if (!first) recv_into_cs(me.pp - 1, m);
      for (std::uint64_t l = 0; l < c.layers_per_stage; ++l) {
        compute(c.attn_fwd_flops);
        tp_allreduce();
        a2a();
        compute(c.mlp_fwd_flops);
        a2a();
        tp_allreduce();
      }
      if (last) compute(c.logits_fwd_flops);
      if (!last) send_from_cs(me.pp + 1, m);
    }
    for (std::uint32_t m = 0; m < M && good; ++m) {  // ... then every backward
      if (!last) recv_into_cs(me.pp + 1, M + m);
      if (last) compute(2 * c.logits_fwd_flops);
      std::size_t next_bucket = 0, next_ebucket = 0;
      for (std::uint64_t l = c.layers_per_stage; l-- > 0;) {
        a2a();
        compute(2 * c.mlp_fwd_flops);
        a2a();
        tp_allreduce();
        compute(2 * c.attn_fwd_flops);
        tp_allreduce();
        // A bucket whose gradients are complete is reduced on the communication stream while the
        // backward of the remaining layers goes on.
        if (m + 1 == M && next_bucket < buckets.size() && buckets[next_bucket].after_layer == l) reduce_bucket(buckets[next_bucket++], dpc);
        if (m + 1 == M && next_ebucket < ebuckets.size() && ebuckets[next_ebucket].after_layer == l)
          reduce_bucket(ebuckets[next_ebucket++], edp_comm);
      }
      if (!first) send_from_cs(me.pp - 1, M + m);
    }
    if (!reqs.empty()) call("hcomm_waitall", good ? hcomm_waitall(static_cast<std::uint32_t>(reqs.size()), reqs.data()) : HCOMM_SUCCESS);
    reqs.clear();
    for (hcomm_stream_t st : {cs, ds, ss, rs}) call("hcomm_stream_synchronize", good ? hcomm_stream_synchronize(st) : HCOMM_SUCCESS);
    for (hcomm_event_t e : events) hcomm_destroy_event(e);
    events.clear();
    if (!good) break;
    meas.done = true;
    meas.end = now_ps();
    meas.compute = machine_.npu_compute_ps(npu) - c0;
    meas.comm = union_length(driver_.observer().op_intervals(npu), meas.t0);
    meas.grad_bytes = grad_bytes;
    auto& v = meas_[{s, rep}];
    if (v.size() < nranks_) v.resize(nranks_);
    v[r] = meas;
  }
  for (hcomm_event_t e : events) hcomm_destroy_event(e);
  for (void* p : {a0, a1, psend, precv, g0, g1, x0, x1})
    if (p) hcomm_free(ctx, p);
  for (hcomm_stream_t st : {cs, ds, ss, rs})
    if (st) hcomm_destroy_stream(st);
  for (hcomm_comm_t cm : {tpc, dpc, ppc, epc, edpc})
    if (cm) hcomm_comm_destroy(cm);
  return good;
}

// What a repetition measured (docs/training-steps.md#what-is-reported): the iteration time, and on
// the critical rank (the one that finished last) its compute time, its communication time and the
// communication it did not hide behind compute.
std::vector<TrainStepReport> TrainSteps::reports() const {
  std::vector<TrainStepReport> out;
  for (const auto& [key, v] : meas_) {
    if (v.size() != nranks_ || !std::all_of(v.begin(), v.end(), [](const Meas& m) { return m.done; })) continue;
    models::Tick t0 = v[0].t0;
    std::uint32_t crit = 0;
    for (std::uint32_t r = 0; r < nranks_; ++r) {
      t0 = std::min(t0, v[r].t0);
      if (v[r].end > v[crit].end) crit = r;  // the lowest rank among those that finished last
    }
    const Meas& m = v[crit];
    TrainStepReport rep;
    rep.step = key.first;
    rep.rep = key.second;
    rep.ranks = nranks_;
    rep.critical_rank = crit;
    const models::Tick iter = m.end - t0;
    rep.iteration_us = static_cast<double>(iter) / 1e6;
    rep.compute_us = static_cast<double>(m.compute) / 1e6;
    rep.comm_us = static_cast<double>(m.comm) / 1e6;
    rep.exposed_comm_us = static_cast<double>(iter - std::min(iter, m.compute)) / 1e6;
    rep.overlap = m.comm > 0 ? std::max(0.0, 1.0 - rep.exposed_comm_us / rep.comm_us) : 0.0;
    rep.grad_bytes = m.grad_bytes;
    out.push_back(rep);
  }
  return out;
}

}  // namespace sim
