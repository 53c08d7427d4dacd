// DCQCN reaction point (Zhu et al., SIGCOMM 2015; docs/models/roce-nic.md): per QP a current
// rate rc and target rate rt, cut on CNPs by alpha/2, recovered by timer and byte-counter stages
// (fast recovery, additive and hyper increase).
#pragma once
#include <cstdint>
#include <vector>

#include "models/nic/congestion_control.h"
#include "models/nic/dcqcn_params.h"

namespace models {

class Dcqcn final : public CongestionControl {
 public:
  Dcqcn(const DcqcnParams& p, CcHost& host) : p_(p), host_(host) {}

  void add_qp(std::uint32_t qp, double line_Bps) override;
  void set_line_rate(std::uint32_t qp, double line_Bps) override;
  double rate_Bps(std::uint32_t qp) override;
  Tick next_rate_change(std::uint32_t qp) const override { return qps_[qp].limited ? qps_[qp].ri_next : kTickMax; }
  void on_sent(std::uint32_t qp, std::uint64_t wire_bytes) override;
  void on_cnp(std::uint32_t qp) override;
  void on_cnps(std::uint32_t qp, std::uint64_t count, Tick spacing_ps) override;

 private:
  struct State {
    double rc = 0, rt = 0, alpha = 1, line = 0;
    std::uint32_t t_stage = 0, bc_stage = 0;
    std::uint64_t bytes_since = 0;
    bool limited = false, cnp_this_period = false;
    bool alpha_first = false;  // at an instant where both timers tick, the alpha tick comes first
    bool timer_inc = false;    // the rate-increase timer raised the rate since the last cut
    Tick last_cut = 0;         // the last rate cut (rate_reduce_period)
    Tick ri_next = 0;     // while limited: the rate-increase timer's next tick (ri_ticks)
    Tick alpha_next = 0;  // while limited: the alpha timer's next tick (alpha_ticks)
  };
  void cut_rate(State& q, Tick now);
  void rate_increase(std::uint32_t qp, Tick at, bool timer);
  void ri_ticks(std::uint32_t qp, Tick t);
  void alpha_ticks(State& q, Tick t, bool inclusive);

  DcqcnParams p_;
  CcHost& host_;
  std::vector<State> qps_;
};

}  // namespace models
