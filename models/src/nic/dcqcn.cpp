// DCQCN reaction point (docs/models/roce-nic.md): Zhu et al., SIGCOMM 2015, with the parameters
// of the authors' ns-3 code.
#include "models/nic/dcqcn.h"

#include <algorithm>

namespace models {

void Dcqcn::add_qp(std::uint32_t qp, double line) {
  if (qps_.size() <= qp) qps_.resize(qp + 1);
  State& s = qps_[qp];
  s = State{};
  s.line = line;
  s.rc = s.rt = line;
}

void Dcqcn::set_line_rate(std::uint32_t qp, double line) {
  State& q = qps_[qp];
  if (line == q.line) return;
  q.line = line;
  q.rc = std::min(q.rc, line);
  q.rt = std::min(q.rt, line);
  if (!q.limited) q.rc = q.rt = line;
}

void Dcqcn::on_sent(std::uint32_t qp, std::uint64_t bytes) {
  State& q = qps_[qp];
  if (p_.enabled && q.limited) {  // byte counter
    q.bytes_since += bytes;
    if (q.bytes_since >= p_.byte_counter) { q.bytes_since = 0; ++q.bc_stage; rate_increase(qp); }
  }
}

void Dcqcn::on_cnp(std::uint32_t qi) {
  State& q = qps_[qi];
  const DcqcnParams& d = p_;
  if (!d.enabled) return;
  q.rt = q.rc;
  q.rc = std::max(static_cast<double>(d.min_rate_Bps), q.rc * (1 - q.alpha / 2));
  q.alpha = (1 - d.g) * q.alpha + d.g;
  q.t_stage = q.bc_stage = 0;
  q.bytes_since = 0;
  q.cnp_this_period = true;
  ++q.timer_gen;  // restart the rate-increase timer
  host_.cc_timer(host_.cc_now() + d.rate_increase_timer_ps, qi, kRateIncrease, q.timer_gen);
  if (!q.limited) {
    q.limited = true;
    host_.cc_timer(host_.cc_now() + d.alpha_timer_ps, qi, kAlpha, ++q.alpha_gen);
  }
}

void Dcqcn::on_timer(std::uint32_t qi, std::uint32_t timer, std::uint64_t gen) {
  State& q = qps_[qi];
  if (timer == kRateIncrease) {
    if (gen != q.timer_gen || !q.limited) return;
    ++q.t_stage;
    rate_increase(qi);
    if (q.limited) host_.cc_timer(host_.cc_now() + p_.rate_increase_timer_ps, qi, kRateIncrease, q.timer_gen);
  } else {
    if (gen != q.alpha_gen || !q.limited) return;
    if (!q.cnp_this_period) q.alpha = (1 - p_.g) * q.alpha;
    q.cnp_this_period = false;
    host_.cc_timer(host_.cc_now() + p_.alpha_timer_ps, qi, kAlpha, q.alpha_gen);
  }
}

void Dcqcn::rate_increase(std::uint32_t qi) {
  State& q = qps_[qi];
  const std::uint32_t F = p_.fast_recovery_stages;
  if (std::max(q.t_stage, q.bc_stage) < F) {
    // fast recovery: towards the target rate
  } else if (std::min(q.t_stage, q.bc_stage) > F) {
    q.rt += static_cast<double>(std::min(q.t_stage, q.bc_stage) - F) * static_cast<double>(p_.rhai_Bps);  // hyper increase
  } else {
    q.rt += static_cast<double>(p_.rai_Bps);  // additive increase
  }
  q.rt = std::min(q.rt, q.line);
  q.rc = std::min((q.rt + q.rc) / 2, q.line);
  if (q.rc >= q.line * (1 - 1e-9)) { q.rc = q.line; q.limited = false; ++q.timer_gen; ++q.alpha_gen; }
}

}  // namespace models
