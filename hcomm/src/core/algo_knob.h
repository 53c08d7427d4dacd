// The algorithm knobs (docs/algorithms/README.md#selection, docs/config.md): HCOMM_ALGO and
// HCCL_ALGO (HCCL's "level0:NA;level1:<algo>" syntax, globally or per operation),
// HCOMM_ALLREDUCE_ALGO, and the communicator config's `algo` — parsed and checked here; the
// selection (algo/select.h) acts on the result.
#pragma once
#include <string>

#include "core/objects.h"

namespace hcomm::detail {

/// Parse the knobs at communicator init (config `algo` if set, else the environment). HCOMM_E_PARA,
/// logged naming the knob and the allowed values, on an unknown operation or algorithm name.
hcomm_result_t parse_algo_override(hcomm_context_t ctx, const char* config_algo, AlgoOverride* out);

/// Check one value of HCOMM_ALGO / HCCL_ALGO (is_allreduce_knob = false) or HCOMM_ALLREDUCE_ALGO:
/// "" when valid, else why not.
std::string check_algo_value(const char* value, bool is_allreduce_knob);

}  // namespace hcomm::detail
