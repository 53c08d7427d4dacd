// A training step's arithmetic (docs/training-steps.md): the Megatron-LM rank layout, the FLOPs
// of a transformer layer's forward and backward passes, the sizes of what the parallel groups
// exchange, and the data-parallel gradient buckets. Pure functions of the scenario's spec: the
// rank program (train_step.cpp) runs what they say, tests check them against the formulas.
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "hcomm/hcomm.h"
#include "models/machine.h"
#include "run/rank_services.h"
#include "sim/config/scenario.h"
#include "sim/driver.h"
#include "sim/run_types.h"

namespace sim {

/// Where rank r sits (Megatron-LM's order: tensor-parallel index fastest, then data, then pipeline):
/// r = tp + T * (dp + D * pp).
struct TrainCoords {
  std::uint32_t tp = 0, dp = 0, pp = 0;
};
inline TrainCoords train_coords(const TrainStepSpec& t, std::uint32_t r) {
  return {r % t.tp, (r / t.tp) % t.dp, r / (t.tp * t.dp)};
}
inline std::uint32_t train_rank(const TrainStepSpec& t, TrainCoords c) { return c.tp + t.tp * (c.dp + t.dp * c.pp); }

/// One gradient bucket: its bytes, and the layer (index in the stage) whose backward completes it.
struct GradBucket {
  std::uint64_t bytes = 0;
  std::uint64_t after_layer = 0;
};

/// Per tensor-parallel rank and micro-batch (Narayanan et al. 2021, "Efficient Large-Scale Language
/// Model Training on GPU Clusters Using Megatron-LM", section 5.1: 24bsh^2 + 4bs^2h per layer
/// forward with ffn = 4h, backward twice the forward; here with the MLP size F as given):
struct TrainCosts {
  double attn_fwd_flops = 0;    ///< (8bsh^2 + 4bs^2h) / T: QKV and output projections, scores and values
  double mlp_fwd_flops = 0;     ///< 4bshF / T: the two MLP matrices (MoE: top_k times that, the experts' tokens)
  double logits_fwd_flops = 0;  ///< 2bshV / T on the last stage (0 without a vocabulary)
  std::uint64_t act_bytes = 0;  ///< b s h elements: one tensor-parallel all-reduce, one pipeline message
  std::uint64_t layer_grad_bytes = 0;  ///< (4h^2 + 2hF) / T parameters' gradients (biases, norms ignored); MoE: 4h^2 / T
  std::uint64_t expert_grad_bytes = 0; ///< MoE: (experts / ep) x 2hF / T, reduced over the expert-data-parallel group
  std::uint64_t a2a_bytes = 0;         ///< MoE with ep > 1: b s top_k h elements, one all-to-all's send buffer
  std::uint64_t embed_grad_bytes = 0;  ///< V h / T on the first stage (0 without a vocabulary)
  std::uint64_t layers_per_stage = 0;
};
TrainCosts train_costs(const TrainStepSpec& t);

/// A stage's gradient buckets in the order backward fills them (last layer first): `layers`
/// layers of `per_layer` bytes, the first layer `first_extra` more (the embedding on the first
/// stage); a bucket closes when it holds at least bucket_bytes, or at the stage's first layer.
std::vector<GradBucket> grad_buckets(std::uint64_t bucket_bytes, std::uint64_t layers, std::uint64_t per_layer, std::uint64_t first_extra);

/// The train_step steps of a run (train_step.cpp): each rank's training iterations through the
/// public hcomm API, and what every repetition measured (docs/training-steps.md#what-is-reported).
class TrainSteps {
 public:
  TrainSteps(const Scenario& sc, std::uint32_t nranks, models::Machine& machine, SimDriver& driver, RankServices& ranks)
      : sc_(sc), nranks_(nranks), machine_(machine), driver_(driver), ranks_(ranks) {}
  /// Rank r's repetitions of train_step step s on `world` (false: a call failed, the program
  /// ends); *started counts the operations it began.
  bool run(std::uint32_t r, std::uint32_t s, const WorkloadStep& w, hcomm_context_t ctx, hcomm_comm_t world, std::uint64_t* started);
  /// The repetitions every rank finished, in (step, rep) order: the iteration time, and on the
  /// critical rank (the one that finished last) its compute, communication and exposed time.
  std::vector<TrainStepReport> reports() const;

 private:
  /// What one rank measured in one repetition.
  struct Meas {
    bool done = false;
    models::Tick t0 = 0, end = 0, compute = 0, comm = 0;
    std::uint64_t grad_bytes = 0;
  };
  const Scenario& sc_;
  std::uint32_t nranks_;
  models::Machine& machine_;
  SimDriver& driver_;
  RankServices& ranks_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Meas>> meas_;  // (step, rep) -> per rank
};

}  // namespace sim
