// Scenario "fidelity" and "network" (docs/scenario-format.md): the RoCE network's tier and parameters.
#include "scenario_readers.h"

namespace sim {

bool set_fidelity(models::NetParams& p, const std::string& tier, std::uint32_t chunk_bytes) {
  if (tier == "packet") { p.flow = false; p.unit_bytes = 0; }
  else if (tier == "chunk") { p.flow = false; p.unit_bytes = chunk_bytes; }
  else if (tier == "flow") { p.flow = true; p.unit_bytes = 0; }  // no queues, ECN, DCQCN, PFC
  else return false;
  return true;
}

namespace scenario_detail {

void read_network(const ObjectReader& top, Scenario& sc, Diagnostics& d) {
  sc.net.seed = sc.seed;
  // Fidelity tier: the same inputs at packet granularity (4 KiB MTU), chunk granularity (the
  // default: units of network/chunk bytes on the same mechanism) or as fluid flows.
  const std::string tier = top.str("fidelity", false).value_or("chunk");
  if (!set_fidelity(sc.net, tier)) d.error(top.child("fidelity"), "expected \"packet\", \"chunk\" or \"flow\", got \"" + tier + "\"");
  // The seed draws the payload and, in the packet and chunk tiers, the switches' ECN marks and the
  // drop_rate drops; the flow tier has neither (unless its DCQCN model draws marks: flow_cc
  // "dcqcn"), so another seed changes only the payload's bytes.
  const json* njc = top.get("network", false);
  const bool flow_marks = njc && njc->is_object() && njc->contains("flow_cc") && (*njc)["flow_cc"] == "dcqcn";
  if (sc.net.flow && !flow_marks && sc.seed != 1 && top.get("seed", false))
    d.warn(top.child("seed"), "the flow tier draws no ECN marks or drops from the seed (it has none): seed " + std::to_string(sc.seed) +
                                  " changes only the payload's bytes, not the timing; use the chunk or packet tier to vary them");
  if (const json* nj = top.get("network", false)) {
    ObjectReader n(*nj, top.child("network"), d, {"profile", "mtu", "chunk", "ecmp_hash", "ecmp_salt", "ack_every", "nic_latency", "timeout_exp", "retry_count", "drop_rate", "dcqcn", "ecn", "pfc", "port_event", "port_debounce", "close_notice", "flow_cc"});
    models::NetParams& p = sc.net;
    // The flow tier's congestion control (docs/models/roce-nic.md#flow-tier-congestion-control).
    if (auto v = n.str("flow_cc", false)) {
      if (*v == "dcqcn") p.flow_cc = true;
      else if (*v == "ideal") p.flow_cc = false;
      else d.error(n.child("flow_cc"), "expected \"dcqcn\" or \"ideal\", got \"" + *v + "\"");
    }
    // Congestion-control profile (docs/models/roce-nic.md#dcqcn-profiles): the NIC's DCQCN and the
    // switches' ECN marking as a set; "dcqcn" and "ecn" below override single values of it.
    if (auto v = n.str("profile", false)) {
      if (*v == "nvidia") { p.dcqcn = models::DcqcnParams::nvidia(); p.ecn = models::EcnParams::nvidia(); }
      else if (*v == "sigcomm2015") { p.dcqcn = models::DcqcnParams::sigcomm2015(); p.ecn = models::EcnParams::sigcomm2015(); }
      else d.error(n.child("profile"), "expected \"nvidia\" or \"sigcomm2015\", got \"" + *v + "\"");
    }
    if (auto v = n.size("mtu", false)) { if (*v < 256 || *v > 9216) d.error(n.child("mtu"), "MTU must be 256 B .. 9216 B (jumbo frames)"); else p.mtu = static_cast<std::uint32_t>(*v); }
    if (auto v = n.size("chunk", false)) {
      if (tier != "chunk") d.error(n.child("chunk"), "a chunk size needs \"fidelity\": \"chunk\"");
      else if (*v < 64 * 1024 || *v > (1u << 20)) d.error(n.child("chunk"), "chunk must be 64 KiB .. 1 MiB");
      else p.unit_bytes = static_cast<std::uint32_t>(*v);
    }
    if (auto v = n.str("ecmp_hash", false)) {
      if (*v == "5-tuple") p.ecmp_hash = models::EcmpHash::FiveTuple;
      else if (*v == "src-dst") p.ecmp_hash = models::EcmpHash::SrcDst;
      else d.error(n.child("ecmp_hash"), "expected \"5-tuple\" or \"src-dst\", got \"" + *v + "\"");
    }
    // The switches' ECMP hash seed (docs/models/ethernet-switch.md#ecmp): 0 .. 2^32 - 1.
    if (auto v = n.uint("ecmp_salt", false, 0, 0xffffffffULL)) p.ecmp_salt = static_cast<std::uint32_t>(*v);
    if (auto v = n.uint("ack_every", false, 1, 1024)) p.ack_every = static_cast<std::uint32_t>(*v);
    if (auto v = n.duration("nic_latency", false)) {
      if (*v > models::kPsPerSec) d.error(n.child("nic_latency"), "latency above 1 s");
      else p.nic_latency_ps = *v;
    }
    if (auto v = n.uint("timeout_exp", false, 0, 31)) p.timeout_exp = static_cast<std::uint32_t>(*v);
    if (auto v = n.uint("retry_count", false, 0, 7)) p.retry_count = static_cast<std::uint32_t>(*v);
    if (auto v = n.number("drop_rate", false, 0, 1)) {
      p.drop_rate = *v;
      if (p.flow && *v > 0) d.warn(n.child("drop_rate"), "drop_rate has no effect in the flow tier (\"fidelity\": \"flow\" has no packets to drop); use the chunk or packet tier");
    }
    // The NIC's port-error event (docs/failover.md#nic-port-event): a delay of 1 us .. 1 s, or
    // "off"; the debounce 0 .. the delay (the event is raised once the debounce has passed).
    if (const json* pe = n.get("port_event", false)) {
      if (pe->is_string() && pe->get<std::string>() == "off") {
        p.port_events = false;
      } else if (auto v = n.duration("port_event", false)) {
        if (*v < models::kPsPerUs || *v > models::kPsPerSec) d.error(n.child("port_event"), "port_event must be 1 us .. 1 s, or \"off\"");
        else p.port_event_ps = *v;
      }
    }
    if (auto v = n.str("close_notice", false)) {  // docs/failover.md#rank-loss
      if (*v == "on" || *v == "off") p.close_notice = *v == "on";
      else d.error(n.child("close_notice"), "expected \"on\" or \"off\", got \"" + *v + "\"");
    }
    if (auto v = n.duration("port_debounce", false)) {
      if (*v > p.port_event_ps) d.error(n.child("port_debounce"), "port_debounce must not exceed port_event (the event is raised after the debounce)");
      else p.port_debounce_ps = *v;
    } else if (p.port_debounce_ps > p.port_event_ps) {
      p.port_debounce_ps = p.port_event_ps;  // a detection faster than the default debounce: debounce as long as it
    }
    if (const json* dj = n.get("dcqcn", false)) {
      ObjectReader q(*dj, n.child("dcqcn"), d, {"enabled", "g", "alpha_timer", "rate_increase_timer", "byte_counter", "fast_recovery_stages", "rai", "rhai", "min_rate", "cnp_interval", "rate_reduce_period", "clamp_target", "clamp_target_after_timer"});
      models::DcqcnParams& c = p.dcqcn;
      if (auto v = q.boolean("enabled", false)) c.enabled = *v;
      if (auto v = q.number("g", false, 1e-6, 1)) c.g = *v;
      // Periodic timers of every QP: "0ns" was raised to 1 ps, which schedules a timer event every
      // picosecond per QP (a run that practically never ends). Periods of 1 us .. 1 s.
      for (auto [key, field] : {std::pair<const char*, models::Tick*>{"alpha_timer", &c.alpha_timer_ps}, {"rate_increase_timer", &c.rate_increase_timer_ps}})
        if (auto v = q.duration(key, false)) {
          if (*v < models::kPsPerUs || *v > models::kPsPerSec) d.error(q.child(key), "timer period must be 1 us .. 1 s");
          else *field = *v;
        }
      if (auto v = q.size("byte_counter", false)) c.byte_counter = std::max<std::uint64_t>(*v, 1);
      if (auto v = q.uint("fast_recovery_stages", false, 0, 100)) c.fast_recovery_stages = static_cast<std::uint32_t>(*v);
      if (auto v = q.bandwidth("rai", false)) c.rai_Bps = *v;
      if (auto v = q.bandwidth("rhai", false)) c.rhai_Bps = *v;
      if (auto v = q.bandwidth("min_rate", false)) c.min_rate_Bps = *v;
      if (auto v = q.duration("cnp_interval", false)) c.cnp_interval_ps = *v;
      if (auto v = q.duration("rate_reduce_period", false)) {
        if (*v > models::kPsPerSec) d.error(q.child("rate_reduce_period"), "rate_reduce_period must be 0 .. 1 s");
        else c.rate_reduce_period_ps = *v;
      }
      if (auto v = q.boolean("clamp_target", false)) c.clamp_target = *v;
      if (auto v = q.boolean("clamp_target_after_timer", false)) c.clamp_target_after_timer = *v;
    }
    if (const json* ej = n.get("ecn", false)) {
      ObjectReader e(*ej, n.child("ecn"), d, {"enabled", "mode", "kmin", "kmax", "pmax"});
      if (auto v = e.boolean("enabled", false)) p.ecn.enabled = *v;
      if (auto v = e.str("mode", false)) {
        if (*v == "red") p.ecn.mode = models::EcnParams::Mode::Red;
        else if (*v == "step") p.ecn.mode = models::EcnParams::Mode::Step;
        else d.error(e.child("mode"), "expected \"red\" or \"step\", got \"" + *v + "\"");
      }
      if (auto v = e.size("kmin", false)) p.ecn.kmin_bytes = *v;
      if (auto v = e.size("kmax", false)) p.ecn.kmax_bytes = *v;
      if (auto v = e.number("pmax", false, 0, 1)) p.ecn.pmax = *v;
      if (p.ecn.kmax_bytes <= p.ecn.kmin_bytes) d.error(e.child("kmax"), "kmax must be larger than kmin");
    }
    if (const json* pj = n.get("pfc", false)) {
      ObjectReader f(*pj, n.child("pfc"), d, {"enabled", "watchdog", "detect", "restore", "action"});
      if (auto v = f.boolean("enabled", false)) p.pfc.enabled = *v;
      // PFC watchdog (docs/models/ethernet-switch.md#pfc-watchdog): SONiC's defaults; detection
      // 1 us .. 5 s and restoration 1 us .. 60 s (SONiC takes 100 ms .. 5 s and 100 ms .. 60 s;
      // shorter times keep simulations short).
      if (auto v = f.str("watchdog", false)) {
        if (*v == "on" || *v == "off") p.pfc.watchdog = *v == "on";
        else d.error(f.child("watchdog"), "expected \"on\" or \"off\", got \"" + *v + "\"");
      }
      if (auto v = f.duration("detect", false)) {
        if (*v < models::kPsPerUs || *v > 5 * models::kPsPerSec) d.error(f.child("detect"), "detect must be 1 us .. 5 s");
        else p.pfc.detect_ps = *v;
      }
      if (auto v = f.duration("restore", false)) {
        if (*v < models::kPsPerUs || *v > 60 * models::kPsPerSec) d.error(f.child("restore"), "restore must be 1 us .. 60 s");
        else p.pfc.restore_ps = *v;
      }
      if (auto v = f.str("action", false)) {
        if (*v == "drop") p.pfc.action = models::PfcParams::WdAction::Drop;
        else if (*v == "forward") p.pfc.action = models::PfcParams::WdAction::Forward;
        else d.error(f.child("action"), "expected \"drop\" or \"forward\", got \"" + *v + "\"");
      }
    }
  }
}

}  // namespace scenario_detail
}  // namespace sim
