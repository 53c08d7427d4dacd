// Injected faults (docs/scenario-format.md#faults): timed ones applied by the fabric at their
// simulated time, HBM bit flips by the workload after the operation they corrupt.
#include "run/cluster.h"

namespace sim {

void Cluster::Injector::on_event(std::uint64_t i, std::uint64_t) { c->apply_fault(c->sc_.faults[i]); }

void Cluster::schedule_faults() {
  injector_.c = this;
  for (std::size_t i = 0; i < sc_.faults.size(); ++i)
    if (sc_.faults[i].kind != FaultKind::HbmBitflip) elab_.sched.schedule(sc_.faults[i].at_ps, &injector_, i, 0);
}

void Cluster::apply_fault(const Fault& f) {
  models::Machine& m = elab_.machine;
  models::Network* net = elab_.net.get();
  const auto& nic = elab_.nic;
  const auto& hccs = elab_.hccs_link;
  // A link down from the start (/as_built) has no machine link: its faults change nothing.
  const bool no_link = (f.kind == FaultKind::LinkDown || f.kind == FaultKind::LinkUp || f.kind == FaultKind::CrcRate ||
                        f.kind == FaultKind::LaneDegrade) && hccs[f.link] == ~0u;
  if (no_link) return;
  switch (f.kind) {
    case FaultKind::RankCrash: {  // the process dies; so does its device (streams, links, NIC)
      const std::uint32_t npu = sc_.topology.rank_to_npu[f.rank];
      driver_->note(f.rank, 0, "[HCSIM_ERR] fault injected: " + f.what);
      m.crash_npu(npu);
      if (net && npu < nic.size() && nic[npu] != ~0u) net->set_link_up(nic[npu], 0, false);
      if (f.rank < procs_.size() && !procs_[f.rank].terminated()) procs_[f.rank].kill();
      depart(f.rank);
      return;
    }
    case FaultKind::LinkDown: m.set_link_up(hccs[f.link], false); break;
    case FaultKind::LinkUp: m.set_link_up(hccs[f.link], true); break;
    case FaultKind::CrcRate: m.set_link_crc_rate(hccs[f.link], f.rate); break;
    case FaultKind::LaneDegrade: m.set_link_lanes(hccs[f.link], f.lanes); break;
    case FaultKind::DropRate: if (net) net->set_drop_rate(f.rate); break;
    case FaultKind::NicDown: if (net) net->set_link_up(nic[f.npu], 0, false); break;
    case FaultKind::NicUp: if (net) net->set_link_up(nic[f.npu], 0, true); break;
    case FaultKind::HbmBitflip: break;  // not timed: inject_bitflips
  }
  const auto& t = sc_.topology;
  const std::uint32_t rank = f.npu >= 0 ? npu_rank(static_cast<std::uint32_t>(f.npu))
                                        : f.link >= 0 ? npu_rank(t.links[f.link].a.index) : 0;
  driver_->note(rank, 1, "[HCSIM_WARN] fault injected: " + f.what);
}

// HBM bit flips scheduled for rank r's output of (step s, rep): flip them in device memory.
void Cluster::inject_bitflips(std::uint32_t r, std::uint32_t s, std::uint32_t rep, void* out) {
  for (const Fault& f : sc_.faults)
    if (f.kind == FaultKind::HbmBitflip && f.rank == r && f.step == s && f.rep == rep) {
      std::uint64_t a = reinterpret_cast<std::uint64_t>(out) + f.byte;
      std::uint8_t b = 0;
      elab_.machine.backdoor_read(a, &b, 1);
      b = static_cast<std::uint8_t>(b ^ (1u << f.bit));
      elab_.machine.backdoor_write(a, &b, 1);
      driver_->note(r, 1, "[HCSIM_WARN] fault injected: HBM bit flip on rank " + std::to_string(r) + " at output byte " +
                             std::to_string(f.byte) + " bit " + std::to_string(f.bit));
    }
}

std::uint32_t Cluster::npu_rank(std::uint32_t npu) const {
  for (std::uint32_t r = 0; r < sc_.topology.rank_to_npu.size(); ++r)
    if (sc_.topology.rank_to_npu[r] == npu) return r;
  return 0;
}

}  // namespace sim
