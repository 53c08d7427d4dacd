// Scenario "workload" steps of op "train_step" (docs/scenario-format.md#train_step,
// docs/training-steps.md): the model, its parallel layout, and the checks against the topology.
#include "models/machine.h"
#include "scenario_readers.h"
#include "sim/config/units.h"

namespace sim::scenario_detail {

void read_train_step(const json& j, const std::string& ptr, Scenario& sc, Diagnostics& d) {
  ObjectReader w(j, ptr, d, {"op", "model", "parallel", "micro_batches", "bucket", "efficiency", "repeat", "expect"});
  if (!w.valid()) return;
  WorkloadStep st;
  st.set_op(WorkloadOp::TrainStep);
  st.check = false;  // nothing to compare: the step moves gradients and activations, not a payload
  auto spec = std::make_shared<TrainStepSpec>();
  if (const json* mj = w.get("model", true)) {
    ObjectReader m(*mj, w.child("model"), d, {"layers", "hidden", "seq_len", "micro_batch", "dtype", "vocab", "ffn", "experts", "top_k"});
    if (m.valid()) {
      spec->layers = m.uint("layers", true, 1, 100000).value_or(0);
      spec->hidden = m.uint("hidden", true, 1, 1u << 20).value_or(0);
      spec->seq_len = m.uint("seq_len", true, 1, 1u << 24).value_or(0);
      spec->micro_batch = m.uint("micro_batch", true, 1, 1u << 16).value_or(0);
      spec->vocab = m.uint("vocab", false, 1, 1u << 24).value_or(0);
      spec->ffn = m.uint("ffn", false, 1, 1u << 22).value_or(4 * spec->hidden);
      spec->experts = m.uint("experts", false, 1, 1u << 16).value_or(0);
      spec->top_k = m.uint("top_k", false, 1, 1u << 16).value_or(1);
      if (m.get("top_k", false) && !spec->experts) d.error(m.child("top_k"), "top_k applies to an MoE model (experts)");
      else if (spec->experts && spec->top_k > spec->experts)
        d.error(m.child("top_k"), "top_k " + std::to_string(spec->top_k) + " is more than the " + std::to_string(spec->experts) + " experts");
      if (auto s = m.str("dtype", false)) {
        if (*s == "fp16") spec->dtype = models::DType::Fp16;
        else if (*s == "bf16") spec->dtype = models::DType::Bf16;
        else if (*s == "fp32") spec->dtype = models::DType::Fp32;
        else d.error(m.child("dtype"), "unknown training dtype \"" + *s + "\" (fp16, bf16, fp32)");
      }
      // Activations (b s h) and one layer's gradients must fit an operation's buffer.
      const std::uint64_t act = spec->micro_batch * spec->seq_len * spec->hidden * models::dtype_size(spec->dtype);
      if (act > (16ULL << 30)) d.error(m.child("micro_batch"), "activations b x s x h = " + format_bytes(act) + " per micro-batch, more than 16 GiB");
    }
  }
  if (const json* pj = w.get("parallel", true)) {
    ObjectReader p(*pj, w.child("parallel"), d, {"tp", "pp", "dp", "ep"});
    if (p.valid()) {
      spec->tp = static_cast<std::uint32_t>(p.uint("tp", false, 1, 1u << 20).value_or(1));
      spec->pp = static_cast<std::uint32_t>(p.uint("pp", false, 1, 1u << 20).value_or(1));
      spec->dp = static_cast<std::uint32_t>(p.uint("dp", false, 1, 1u << 20).value_or(1));
      spec->ep = static_cast<std::uint32_t>(p.uint("ep", false, 1, 1u << 20).value_or(1));
    }
  }
  spec->micro_batches = static_cast<std::uint32_t>(w.uint("micro_batches", false, 1, 4096).value_or(1));
  if (auto b = w.size("bucket", false)) {
    if (*b == 0 || *b > (4ULL << 30)) d.error(w.child("bucket"), "a gradient bucket must be in (0, 4 GiB]");
    else spec->bucket_bytes = *b;
  }
  if (auto e = w.number("efficiency", false, 0, 1)) {
    if (!(*e > 0)) d.error(w.child("efficiency"), "must be in (0, 1]: the share of the NPU's peak the compute runs at");
    else spec->efficiency = *e;
  }
  st.repeat = static_cast<std::uint32_t>(w.uint("repeat", false, 1, 100000).value_or(1));
  if (const json* ej = w.get("expect", false)) {
    ObjectReader e(*ej, w.child("expect"), d, {"max_op_time_us"});
    if (e.valid()) st.max_op_time_us = e.number("max_op_time_us", false, 0, 1e15);
  }
  st.dtype = spec->dtype;
  st.train = spec;
  sc.workload.push_back(st);
}

void check_train_step(const WorkloadStep& w, const std::string& wp, const Scenario& sc, Diagnostics& d) {
  const TrainStepSpec& t = *w.train;
  const std::uint64_t nranks = sc.topology.rank_to_npu.size();
  const std::uint64_t world = static_cast<std::uint64_t>(t.tp) * t.pp * t.dp;
  if (world != nranks)
    d.error(wp + "/parallel", "tp x pp x dp = " + std::to_string(t.tp) + " x " + std::to_string(t.pp) + " x " + std::to_string(t.dp) + " = " +
                                  std::to_string(world) + " ranks, the topology has " + std::to_string(nranks));
  if (t.layers % t.pp != 0)
    d.error(wp + "/model/layers", std::to_string(t.layers) + " layers do not divide into " + std::to_string(t.pp) + " pipeline stages");
  if (t.hidden % t.tp != 0 || t.ffn % t.tp != 0)
    d.error(wp + "/model/hidden", "hidden " + std::to_string(t.hidden) + " and ffn " + std::to_string(t.ffn) + " must divide by tp " +
                                      std::to_string(t.tp) + " (Megatron splits the weight matrices evenly)");
  if (t.vocab && t.vocab % t.tp != 0)
    d.error(wp + "/model/vocab", "vocab " + std::to_string(t.vocab) + " must divide by tp " + std::to_string(t.tp));
  if (t.ep > 1 || t.experts) {
    // Megatron-LM carves expert-parallel groups out of the data-parallel ranks; every rank holds
    // experts / ep experts, and the all-to-all splits a rank's b x s x top_k tokens evenly.
    if (!t.experts) d.error(wp + "/parallel/ep", "expert parallelism needs an MoE model (model/experts)");
    else if (t.dp % t.ep != 0) d.error(wp + "/parallel/ep", "ep " + std::to_string(t.ep) + " must divide dp " + std::to_string(t.dp));
    else if (t.experts % t.ep != 0)
      d.error(wp + "/model/experts", std::to_string(t.experts) + " experts do not divide among ep " + std::to_string(t.ep) + " ranks");
    else if ((t.micro_batch * t.seq_len * t.top_k) % t.ep != 0)
      d.error(wp + "/parallel/ep", "b x s x top_k = " + std::to_string(t.micro_batch * t.seq_len * t.top_k) +
                                       " tokens do not divide into ep " + std::to_string(t.ep) + " equal all-to-all blocks");
  }
  for (auto n : sc.topology.rank_to_npu) {
    if (models::compute_peak(sc.topology.npus[n].params, t.dtype) <= 0) {
      d.error(wp + "/model/dtype", "the NPU model " + sc.topology.npus[n].params.model + " has no documented " +
                                       models::dtype_name(t.dtype) + " peak (docs/models/npu.md#compute)");
      break;
    }
  }
}

}  // namespace sim::scenario_detail
