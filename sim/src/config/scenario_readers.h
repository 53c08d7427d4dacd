// Internals of the scenario loader (docs/scenario-format.md), one reader per part of the document:
// scenario_network.cpp (fidelity, network), scenario_workload.cpp (workload, hcomm_env, what the
// ops need of the layout), scenario_faults.cpp (faults), scenario_expect.cpp (expect). Plain C++.
#pragma once
#include <string>
#include <vector>

#include "sim/config/json_reader.h"
#include "sim/config/scenario.h"

namespace sim::scenario_detail {

/// A fault naming devices, resolved once the topology is loaded: an HCCS link (a, b), a RoCE
/// cable (switch + port, or the NIC of npu), or an NPU (npu).
struct PendingRef {
  enum Target { Hccs, RoceCable, Nic, Npu };
  std::size_t fault;
  std::string ptr, a, b, npu;
  Target target = Hccs;
  std::string sw;
  std::int64_t port = -1;
  PendingRef(std::size_t f, std::string p, std::string a_, std::string b_, std::string n)
      : fault(f), ptr(std::move(p)), a(std::move(a_)), b(std::move(b_)), npu(std::move(n)) {}
};

void read_network(const ObjectReader& top, Scenario& sc, Diagnostics& d);
void read_hcomm_env(const ObjectReader& top, Scenario& sc, Diagnostics& d);
/// The workload array (null if missing or invalid).
/// /workload/i with op "train_step" (scenario_train.cpp).
void read_train_step(const json& j, const std::string& pointer, Scenario& sc, Diagnostics& d);
/// Its layout against the topology (tp x pp x dp = ranks, divisibility, dtype peak).
void check_train_step(const WorkloadStep& w, const std::string& pointer, const Scenario& sc, Diagnostics& d);
const json* read_workload(const ObjectReader& top, Scenario& sc, Diagnostics& d);
void read_faults(const ObjectReader& top, const json* wl, Scenario& sc, Diagnostics& d, std::vector<PendingRef>& refs);
void read_expect(const ObjectReader& top, Scenario& sc, Diagnostics& d);
/// With the topology loaded: the devices faults name, and (when `faults_aligned`: sc.faults[i] is
/// /faults/i, none skipped for errors) the ranks they name.
void resolve_faults(const std::vector<PendingRef>& refs, Scenario& sc, Diagnostics& d, bool faults_aligned);
/// With the topology loaded: what each op needs of the layout (so that it fails validation rather than the run).
void check_workload(Scenario& sc, Diagnostics& d);

}  // namespace sim::scenario_detail
