// Hardware counters summed over the cluster (docs/scenario-format.md, docs/trace-schema.md
// `counters`): ONE registry that both names every counter (what expect/counters_min|max may name)
// and computes it from the models at the end of a run. Plain C++, no SystemC.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace models {
class Machine;
class Network;
}  // namespace models

namespace sim {

/// Names of the counters, in the registry's order.
const std::vector<std::string>& counter_names();

/// Every counter's value; `net` is null when the cluster has no RoCE network (its counters are 0).
std::map<std::string, double> read_counters(const models::Machine& m, const models::Network* net);

}  // namespace sim
