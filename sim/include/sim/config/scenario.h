// Scenario files (docs/scenario-format.md): a topology, a workload run by every rank through the
// public hcomm API, faults, and expectations that decide the exit code.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/network.h"
#include "models/mem/reduce.h"
#include "sim/counters.h"  // counter_names(): what expect/counters_min|max may name
#include "sim/config/json_reader.h"
#include "sim/config/topology.h"

namespace sim {

/// A "train_step" workload step (docs/training-steps.md): one training iteration of a GPT-style
/// transformer, laid out over tensor (tp), data (dp) and pipeline (pp) parallel groups.
struct TrainStepSpec {
  std::uint64_t layers = 0, hidden = 0, seq_len = 0, micro_batch = 0;  ///< model: L, h, s, b
  std::uint64_t ffn = 0;    ///< MLP inner size (default 4h)
  std::uint64_t vocab = 0;  ///< 0: no embedding / logits layer
  std::uint64_t experts = 0, top_k = 1;  ///< MoE: experts per layer (0: dense MLP), experts per token
  models::DType dtype = models::DType::Bf16;
  std::uint32_t tp = 1, pp = 1, dp = 1;
  std::uint32_t ep = 1;  ///< expert parallelism: a divisor of dp (groups of ep consecutive data-parallel ranks)
  std::uint32_t micro_batches = 1;                 ///< M per iteration (per data-parallel replica)
  std::uint64_t bucket_bytes = 25ULL << 20;        ///< data-parallel gradient bucket
  double efficiency = 0.5;                         ///< share of the NPU's peak the compute runs at
};

/// What a workload step does (docs/scenario-format.md#workload); parsed once, at load.
enum class WorkloadOp { AllReduce, AllGather, ReduceScatter, Broadcast, AllToAll, SendRecv, Incast, Barrier, H2D, D2H, TrainStep };
/// The scenario file's name of an op ("allreduce", ...); workload_op_from is its inverse.
const char* workload_op_name(WorkloadOp k);
std::optional<WorkloadOp> workload_op_from(const std::string& name);
/// The collectives: allreduce, allgather, reducescatter, broadcast, alltoall.
bool is_collective(WorkloadOp k);

struct WorkloadStep {
  WorkloadOp kind = WorkloadOp::AllReduce;
  std::string op = "allreduce";  ///< kind's name (messages, trace): "allreduce", "sendrecv", "incast" (one-sided RDMA writes to one root), ...
  std::uint64_t bytes = 0;
  models::DType dtype = models::DType::Fp32;
  models::ReduceOp reduce = models::ReduceOp::Sum;
  std::uint32_t repeat = 1;
  bool check = true;
  std::string pattern = "pairs";  ///< sendrecv: "pairs" (r <-> r^1) or "halves" (r <-> r +- n/2)
  std::uint32_t root = 0;         ///< incast: the rank every sender writes to
  std::string senders = "all";    ///< incast: "all" other ranks, "remote" (other servers) or "remote:N"
  std::uint32_t senders_count = 0;  ///< incast "remote:N": N, the first N remote ranks after the root
  /// /workload/i/expect: this step's own limits, besides the global ones.
  std::optional<double> max_op_time_us;
  std::optional<bool> checks_pass;
  std::shared_ptr<const TrainStepSpec> train;  ///< op "train_step": the model and its layout
  void set_op(WorkloadOp k) {
    kind = k;
    op = workload_op_name(k);
  }
};

/// What a fault does (docs/scenario-format.md#faults); parsed once, at load.
enum class FaultKind {
  HbmBitflip, LinkDown, LinkUp, CrcRate, LaneDegrade, DropRate, NicDown, NicUp, RankCrash,
  SwitchLinkDown, SwitchLinkUp, LinkFlap, NicFlap, PacketCorruption, PcieLinkDown, PcieLinkUp, NpuStall, PfcStorm
};
/// The scenario file's name of a kind ("hbm_bitflip", ...); fault_kind_from is its inverse.
const char* fault_kind_name(FaultKind k);
std::optional<FaultKind> fault_kind_from(const std::string& name);

struct Fault {
  FaultKind kind = FaultKind::HbmBitflip;
  std::uint32_t rank = 0, step = 0, rep = 0, bit = 0;  ///< hbm_bitflip: where
  std::uint64_t byte = 0;
  models::Tick at_ps = 0;     ///< timed faults: when (simulated); relative ones: after what `at_step` names
  /// "at": {"step", "rep", "after"}: relative to the start of that step's repetition on the first
  /// rank (its begin marker); at_step -1: `at_ps` is absolute.
  std::int64_t at_step = -1;
  std::uint32_t at_rep = 0;
  double after_pct = -1;      ///< "after": "40%": that share of the operation's estimate (operations.est_us); <0: at_ps
  std::int64_t link = -1;     ///< HCCS faults (and link_flap of an HCCS link): index into topology.links
  std::int64_t roce_link = -1;  ///< switch-link / NIC faults, packet_corruption, pfc_storm: index of the RoCE cable in topology.links
  std::int64_t npu = -1;      ///< NIC, PCIe, stall faults: NPU index
  double rate = 0;            ///< crc_rate, drop_rate, packet_corruption
  std::uint32_t lanes = 0;    ///< lane_degrade
  models::Tick duration_ps = 0;  ///< flaps: how long each down lasts; npu_stall, pfc_storm: how long
  std::uint32_t count = 1;       ///< flaps: how many times
  models::Tick period_ps = 0;    ///< flaps: from one down to the next
  std::string what;           ///< human description for logs
};

/// Command-line changes to a scenario (hcsim run --set, --fault), applied to its JSON before it
/// is read, so that they are checked like the file's own keys (docs/scenario-format.md#from-the-command-line).
struct ScenarioOverrides {
  /// --set POINTER=VALUE, in order: the value parsed as JSON when it parses, else a string.
  std::vector<std::pair<std::string, std::string>> sets;
  /// --fault 'TYPE key=value ...': appended to /faults in order; `text` names it in errors.
  struct CliFault { std::string text; json object; };
  std::vector<CliFault> faults;
};
/// A --fault string as a fault object: "TYPE k=v k2=v2", values parsed as JSON when they parse
/// (numbers, true/false) else strings, "at.step=0" nests ({"at": {"step": 0}}). nullopt + `why`.
std::optional<json> parse_fault_text(const std::string& text, std::string* why);

struct Expectations {
  bool checks_pass = true;
  bool api_errors = false;    ///< true: the run passes only if some hcomm call fails (fault scenarios)
  std::optional<double> max_op_time_us;
  std::optional<double> min_busbw_GBps;
  std::map<std::string, double> counters_min, counters_max;  ///< hardware counters at the end of the run
  /// Failover (docs/failover.md): at least this many recoveries (failovers rows whose traffic
  /// resumed), and each of them resumed within this time of the fault it follows.
  std::optional<double> failovers_min, max_failover_us;
  std::optional<double> detections_min, max_detection_us;  ///< failovers rows (not "warn") and their detection after the fault
  bool faults_fired = true;  ///< false: a fault whose time the run never reached is only a warning
  /// Fail when a repetition takes more than this many times the median of its step's other
  /// repetitions (at least 3 of them).
  std::optional<double> max_step_slowdown;
  /// expect/outcome (docs/scenario-format.md#expect): "survived" (every rank finished, no call
  /// failed), "aborted" (a call failed and the ranks stopped), "shrunk" (a rank was lost and every
  /// survivor finished its workload on a shrunk communicator); empty: not stated.
  std::string outcome;
};


/// Network granularity (docs/scenario-format.md /fidelity): chunk is the default.
constexpr std::uint32_t kDefaultChunkBytes = 64 * 1024;
/// Set `p` to a tier: "packet", "chunk" (units of chunk_bytes) or "flow"; false for other names.
bool set_fidelity(models::NetParams& p, const std::string& tier, std::uint32_t chunk_bytes = kDefaultChunkBytes);
inline models::NetParams default_net() {
  models::NetParams p;
  set_fidelity(p, "chunk");
  return p;
}

/// Shortest sampling interval of counter_samples (docs/scenario-format.md /trace/sample_interval).
constexpr models::Tick kMinSampleIntervalPs = 100 * models::kPsPerNs;
/// A sampling interval: "off" or "0" (0: no sampling), or a duration of at least 100 ns, in ps;
/// nullopt and `why` otherwise. The scenario's /trace/sample_interval and `hcsim run --sample-interval`.
std::optional<models::Tick> parse_sample_interval(const std::string& s, std::string* why);

struct Scenario {
  std::string file, name, description, topology_path;
  Topology topology;
  std::uint64_t seed = 1;
  bool store_bytes = true;    ///< payload "real" (bytes checked) or "timing" (no bytes stored)
  models::NetParams net = default_net();  ///< RoCE network parameters (scenario "fidelity", "network")
  std::map<std::string, std::string> hcomm_env;  ///< HCOMM_*/HCCL_* variables set for the run (numbers as decimal strings)
  /// /on_rank_loss "shrink": after a failed operation whose recovery agreement named lost ranks,
  /// the survivors shrink the communicator and re-run the operation on it (docs/failover.md#shrink).
  bool shrink_on_rank_loss = false;
  /// /chaos {"seed", "faults"}: a fault campaign `hcsim run` draws as for --chaos SEED:N (faults 0: none).
  struct Chaos { std::uint64_t seed = 0; std::uint32_t faults = 0; } chaos;
  std::vector<WorkloadStep> workload;
  std::vector<Fault> faults;
  Expectations expect;
  models::Tick sample_interval_ps = 0;  ///< /trace/sample_interval: counter_samples every this long (0: off)
  bool trace_tasks = false;             ///< /trace/tasks: one `tasks` row per stream task
  bool trace_routes = true;             ///< /trace/routes: the `routes` rows (false: none)
  std::vector<std::string> warnings;  ///< "file: /pointer: warning: ..." (e.g. an HCOMM_* name hcomm does not read)
  /// The documents as read, compact JSON: the scenario after --set and --fault, and its topology
  /// file (the trace's provenance, docs/trace-schema.md#provenance).
  std::string scenario_json, topology_json;
};

/// hcsim run --chaos SEED:N: N faults drawn reproducibly from SEED (splitmix64) among the types
/// the layout supports (HCCS link flaps, CRC errors and lane loss; NIC and switch-cable flaps and
/// packet corruption; NPU stalls), each timed inside a workload step's span (relative to a random
/// step and repetition: a percentage of a collective's estimate, else a few microseconds), as
/// --fault strings (docs/scenario-format.md#chaos).
std::vector<std::string> chaos_faults(const Scenario& sc, std::uint64_t seed, std::uint32_t n);
/// A fault object as a --fault string ("TYPE k=v ...", nested objects as "at.step=0").
std::string fault_text(const json& fault);

/// Load and validate; on failure nullopt with every problem in `errors`. Warnings (not errors) go to
/// `warnings` when given, and to Scenario::warnings.
std::optional<Scenario> load_scenario(const std::string& path, std::vector<std::string>* errors,
                                      std::vector<std::string>* warnings = nullptr);
/// The same with command-line overrides; errors in what they added name the option
/// ("--fault 'TEXT': /faults/3/lanes: ...", "--set /x=v: ...").
std::optional<Scenario> load_scenario(const std::string& path, const ScenarioOverrides& ov, std::vector<std::string>* errors,
                                      std::vector<std::string>* warnings = nullptr);

}  // namespace sim
