// DCQCN reaction point (docs/models/roce-nic.md): Zhu et al., SIGCOMM 2015, with the parameters
// of the authors' ns-3 code.
#include "models/nic/dcqcn.h"

#include <algorithm>
#include <cmath>

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
  ri_ticks(qp, host_.cc_now());
  q.line = line;
  q.rc = std::min(q.rc, line);
  q.rt = std::min(q.rt, line);
  if (!q.limited) q.rc = q.rt = line;
}

double Dcqcn::rate_Bps(std::uint32_t qp) {
  ri_ticks(qp, host_.cc_now());
  return qps_[qp].rc;
}

void Dcqcn::on_sent(std::uint32_t qp, std::uint64_t bytes) {
  State& q = qps_[qp];
  if (!p_.enabled || !q.limited) return;
  const Tick now = host_.cc_now();
  ri_ticks(qp, now);  // (rate_Bps, read for this packet, applied them already)
  if (!q.limited) return;  // a tick brought the rate back to the line: the byte counter stops too
  q.bytes_since += bytes;  // byte counter
  if (q.bytes_since >= p_.byte_counter) { q.bytes_since = 0; ++q.bc_stage; rate_increase(qp, now, false); }
}

void Dcqcn::on_cnp(std::uint32_t qi) {
  State& q = qps_[qi];
  const DcqcnParams& d = p_;
  if (!d.enabled) return;
  const Tick now = host_.cc_now();
  ri_ticks(qi, now);
  alpha_ticks(q, now, true);  // an alpha tick at this instant counts first (see alpha_ticks)
  // At most one cut per rate_reduce_period: a CNP inside it raises alpha only.
  const bool cut = !q.limited || d.rate_reduce_period_ps == 0 || now >= q.last_cut + d.rate_reduce_period_ps;
  if (cut) cut_rate(q, now);
  q.alpha = (1 - d.g) * q.alpha + d.g;
  q.cnp_this_period = true;
  if (!cut) return;
  q.t_stage = q.bc_stage = 0;
  q.bytes_since = 0;
  q.ri_next = now + d.rate_increase_timer_ps;  // restart the rate-increase timer
  if (!q.limited) {
    q.limited = true;
    q.alpha_next = now + d.alpha_timer_ps;
    q.alpha_first = false;  // the alpha timer starts after the rate-increase timer
  } else {
    q.alpha_first = q.alpha_next == now + d.alpha_timer_ps;  // a tick fell now, before this CNP restarted the other timer
  }
}

// The rate cut of one CNP: the target rate is clamped to the current one unless the profile
// keeps it (clamp_target false: only after a timer increase, or on the first cut).
void Dcqcn::cut_rate(State& q, Tick now) {
  const DcqcnParams& d = p_;
  if (!q.limited || d.clamp_target || (d.clamp_target_after_timer && q.timer_inc)) q.rt = q.rc;
  q.rc = std::max(static_cast<double>(d.min_rate_Bps), q.rc * (1 - q.alpha / 2));
  q.last_cut = now;
  q.timer_inc = false;
}

// A batch of CNPs that a packet-level receiver would have sent spacing_ps apart. The first reacts
// now as one CNP does; each later one stands for a CNP spacing_ps after the previous: it cuts the
// rate if a rate_reduce_period has passed since the last cut, and raises alpha. A cut's slot is
// remembered (last_cut), so a batch arriving before an earlier batch's slots have passed cuts
// only in the slots after them: as a NIC, the sender never cuts more than once a period; between two of
// them the alpha timer ticks spacing_ps / alpha_timer_ps times, the first spared (a CNP came in
// its period). The rate-increase timer, restarted by every cut, does not tick inside a batch
// spaced closer than its period (4 us against 300 us and 50 us against 55 us in the profiles).
void Dcqcn::on_cnps(std::uint32_t qi, std::uint64_t count, Tick spacing_ps) {
  if (!p_.enabled || count == 0) return;
  on_cnp(qi);
  State& q = qps_[qi];
  const Tick now = host_.cc_now();
  const std::uint64_t decays = p_.alpha_timer_ps > 0 ? spacing_ps / p_.alpha_timer_ps : 0;
  const double decay = decays > 1 ? std::pow(1 - p_.g, static_cast<double>(decays - 1)) : 1.0;
  // The time since the last cut: 0 if the first CNP cut; else less than a period, or negative
  // when an earlier batch's cuts stand for CNPs spread past this instant (last_cut is the
  // instant its last cut stands for): a batch never cuts more often than once a period of
  // the QP's time, whatever the spacing of the batches.
  std::int64_t since_cut = static_cast<std::int64_t>(now) - static_cast<std::int64_t>(q.last_cut);
  Tick at = now;
  for (std::uint64_t i = 1; i < count; ++i) {
    since_cut += static_cast<std::int64_t>(spacing_ps);
    at += spacing_ps;
    q.alpha *= decay;
    if (since_cut >= static_cast<std::int64_t>(p_.rate_reduce_period_ps)) {
      cut_rate(q, now);
      q.last_cut = at;
      since_cut = 0;
    }
    q.alpha = (1 - p_.g) * q.alpha + p_.g;
  }
}

// The rate-increase timer without events. While the QP is limited, its ticks fall every
// rate_increase_timer_ps from the last CNP; each advances the timer stage and raises the rate.
// The rate is read only when the NIC sends (rate_Bps, on_sent) and changed otherwise only by a
// CNP or a new line rate, so the ticks up to an instant are applied there, in order, each at its
// own time (the alpha ticks before a tick that brings the rate back to the line, as the events
// ran). A tick at that very instant counts first (its event was scheduled a period, >= 1 us,
// earlier; a CNP a hop earlier; a paced send long before meeting a tick to the picosecond
// counts the tick first too).
void Dcqcn::ri_ticks(std::uint32_t qi, Tick t) {
  State& q = qps_[qi];
  while (q.limited && q.ri_next <= t) {
    const Tick at = q.ri_next;
    ++q.t_stage;
    rate_increase(qi, at, true);
    q.ri_next = at + p_.rate_increase_timer_ps;
  }
}

// The alpha timer without events. While the QP is limited, its ticks fall every alpha_timer_ps
// from the CNP that limited it; each tick decays alpha by (1 - g) unless a CNP came since the
// previous one. Alpha is read only by a CNP, and the ticks stop when the rate is back at the line,
// so the ticks up to an instant are applied there, one multiplication each, as the timer's events
// applied them. Events at one instant run in the order they were scheduled, and a tick at that
// very instant counts first when its event would have come first: before a CNP or a packet sent
// (taken to be scheduled later than one alpha period, >= 1 us, before: a hop's latency before,
// as a CNP is; a paced send scheduled longer ago meeting a tick to the picosecond counts the tick
// first too), and before the rate-increase timer's tick when the alpha period is the longer one
// (scheduled earlier), or, with equal periods, when the last CNP fell on an alpha tick
// (alpha_first: that tick re-armed the alpha timer before the CNP re-armed the other).
void Dcqcn::alpha_ticks(State& q, Tick t, bool inclusive) {
  if (!q.limited || q.alpha_next > t || (!inclusive && q.alpha_next == t)) return;
  // Ticks due: those at alpha_next + k * period before t (at t too when inclusive). The first
  // spares alpha when a CNP came in its period; the others decay it, (1 - g) each.
  const Tick per = p_.alpha_timer_ps;
  std::uint64_t n = (t - q.alpha_next) / per + 1;
  if (!inclusive && q.alpha_next + (n - 1) * per == t) --n;
  if (!q.cnp_this_period) q.alpha = (1 - p_.g) * q.alpha;
  q.cnp_this_period = false;
  // One multiplication per tick, as the timer's events made them, for the first 1024 ticks (the
  // same bits); beyond them alpha is below (1 - g)^1024 (0.7 % of its value in the NVIDIA
  // profile, 1.8 % in SIGCOMM 2015's) and the rest is applied in closed form.
  const std::uint64_t exact = std::min<std::uint64_t>(n - 1, 1024);
  for (std::uint64_t i = 0; i < exact; ++i) q.alpha *= 1 - p_.g;
  if (n - 1 > exact) q.alpha *= std::pow(1 - p_.g, static_cast<double>(n - 1 - exact));
  q.alpha_next += n * per;
}

void Dcqcn::rate_increase(std::uint32_t qi, Tick at, bool timer) {
  State& q = qps_[qi];
  if (timer) q.timer_inc = true;
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
  if (q.rc >= q.line * (1 - 1e-9)) {  // back at the line: both timers stop
    const Tick ta = p_.alpha_timer_ps, tr = p_.rate_increase_timer_ps;
    alpha_ticks(q, at, !timer || ta > tr || (ta == tr && q.alpha_first));
    q.rc = q.line;
    q.limited = false;
  }
}

}  // namespace models
