// recovery/'s implementation of core/recovery.h: each method is the failover function of the same
// name (recovery/failover.h). hcomm_create_context (init/init.cpp) hands it to every context.
#include "core/recovery.h"
#include "recovery/failover.h"

namespace hcomm::detail::failover {
namespace {

class Hooks final : public Recovery {
 public:
  hcomm_result_t check(hcomm_comm_t comm) const override { return failover::check(comm); }
  hcomm_result_t on_sync_failure(hcomm_stream_t s, hcomm_result_t rc, const std::string& why) const override {
    return failover::on_sync_failure(s, rc, why);
  }
  hcomm_result_t owed_port_event(hcomm_stream_t s) const override { return failover::owed_port_event(s); }
  std::uint64_t heartbeat_ns(hcomm_stream_t s) const override { return failover::heartbeat_ns(s); }
  void uses(hcomm_comm_t comm, hcomm_stream_t s) const override { failover::uses(comm, s); }
  void op_submitted(hcomm_comm_t comm, hcomm_stream_t s, const PendingOp& op) const override {
    failover::op_submitted(comm, s, op);
  }
  void synced(hcomm_stream_t s) const override { failover::synced(s); }
  void slice_done(hcomm_comm_t comm, hcomm_stream_t s, std::uint64_t done, std::uint64_t total) const override {
    failover::slice_done(comm, s, done, total);
  }
  hcomm_result_t agree_ids(hcomm_comm_t parent, const std::vector<std::uint32_t>& survivors, const std::uint32_t used[8],
                           std::uint32_t all[8]) const override {
    return failover::agree_ids(parent, survivors, used, all);
  }
  void maybe_restore(hcomm_comm_t comm) const override { failover::maybe_restore(comm); }
  void comm_created(hcomm_comm_t comm) const override { failover::comm_created(comm); }
  void comm_destroyed(hcomm_comm_t comm) const override { failover::comm_destroyed(comm); }
};

}  // namespace

const Recovery& hooks() {
  static const Hooks h;  // stateless; constructed at the first context's creation
  return h;
}

}  // namespace hcomm::detail::failover
