// Scenario "faults" (docs/scenario-format.md): each fault's kind parsed once (FaultKind), its
// fields read, and the devices it names resolved against the topology.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "scenario_readers.h"
#include "sim/config/units.h"

namespace sim {

namespace {
constexpr FaultKind kAllKinds[] = {FaultKind::HbmBitflip,     FaultKind::LinkDown,       FaultKind::LinkUp,       FaultKind::CrcRate,
                                   FaultKind::LaneDegrade,    FaultKind::DropRate,       FaultKind::NicDown,      FaultKind::NicUp,
                                   FaultKind::RankCrash,      FaultKind::SwitchLinkDown, FaultKind::SwitchLinkUp, FaultKind::LinkFlap,
                                   FaultKind::NicFlap,        FaultKind::PacketCorruption, FaultKind::PcieLinkDown, FaultKind::PcieLinkUp,
                                   FaultKind::NpuStall,       FaultKind::PfcStorm};

// The keys each fault type takes (docs/scenario-format.md#faults); any other key is an error
// naming the type and these, not ignored.
std::vector<const char*> fault_keys(FaultKind k) {
  switch (k) {
    case FaultKind::HbmBitflip: return {"type", "rank", "step", "rep", "byte", "bit"};
    case FaultKind::LinkDown:
    case FaultKind::LinkUp: return {"type", "at", "a", "b"};
    case FaultKind::CrcRate: return {"type", "at", "a", "b", "rate"};
    case FaultKind::LaneDegrade: return {"type", "at", "a", "b", "lanes"};
    case FaultKind::LinkFlap: return {"type", "at", "a", "b", "switch", "port", "npu", "duration", "count", "period"};
    case FaultKind::SwitchLinkDown:
    case FaultKind::SwitchLinkUp: return {"type", "at", "switch", "port", "npu"};
    case FaultKind::PacketCorruption: return {"type", "at", "switch", "port", "npu", "rate"};
    case FaultKind::NicDown:
    case FaultKind::NicUp:
    case FaultKind::PcieLinkDown:
    case FaultKind::PcieLinkUp: return {"type", "at", "npu"};
    case FaultKind::NicFlap: return {"type", "at", "npu", "duration", "count", "period"};
    case FaultKind::NpuStall:
    case FaultKind::PfcStorm: return {"type", "at", "npu", "duration"};
    case FaultKind::RankCrash: return {"type", "at", "rank"};
    case FaultKind::DropRate: return {"type", "at", "rate"};
  }
  return {};
}
// Every key some fault type takes: what the readers below accept once accepted_keys has kept the type's own.
#define HCSIM_ALL_FAULT_KEYS \
  {"type", "at", "rank", "step", "rep", "byte", "bit", "a", "b", "rate", "lanes", "switch", "port", "npu", "duration", "count", "period"}

// The fault's keys that its type takes; any other is an error naming the type and the keys it takes.
json accepted_keys(const json& fj, const std::string& fp, Diagnostics& d, FaultKind k) {
  const auto keys = fault_keys(k);
  std::string list;
  for (const char* x : keys) list += (list.empty() ? "" : ", ") + std::string(x);
  json kept = json::object();
  for (auto it = fj.begin(); it != fj.end(); ++it) {
    if (std::any_of(keys.begin(), keys.end(), [&](const char* x) { return it.key() == x; })) {
      kept[it.key()] = *it;
      continue;
    }
    std::string token;
    for (char c : it.key()) token += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    d.error(fp + "/" + token, std::string(fault_kind_name(k)) + " does not take \"" + it.key() + "\" (" + fault_kind_name(k) + " takes " + list + ")");
  }
  return kept;
}

std::string fmt_rate(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", r);
  return b;
}
std::string format_duration(models::Tick ps) {
  char b[48];
  std::snprintf(b, sizeof b, "%g us", static_cast<double>(ps) / 1e6);
  return b;
}
}  // namespace

const char* fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::HbmBitflip: return "hbm_bitflip";
    case FaultKind::LinkDown: return "link_down";
    case FaultKind::LinkUp: return "link_up";
    case FaultKind::CrcRate: return "crc_rate";
    case FaultKind::LaneDegrade: return "lane_degrade";
    case FaultKind::DropRate: return "drop_rate";
    case FaultKind::NicDown: return "nic_down";
    case FaultKind::NicUp: return "nic_up";
    case FaultKind::RankCrash: return "rank_crash";
    case FaultKind::SwitchLinkDown: return "switch_link_down";
    case FaultKind::SwitchLinkUp: return "switch_link_up";
    case FaultKind::LinkFlap: return "link_flap";
    case FaultKind::NicFlap: return "nic_flap";
    case FaultKind::PacketCorruption: return "packet_corruption";
    case FaultKind::PcieLinkDown: return "pcie_link_down";
    case FaultKind::PcieLinkUp: return "pcie_link_up";
    case FaultKind::NpuStall: return "npu_stall";
    case FaultKind::PfcStorm: return "pfc_storm";
  }
  return "?";
}

std::optional<FaultKind> fault_kind_from(const std::string& name) {
  for (FaultKind k : kAllKinds)
    if (name == fault_kind_name(k)) return k;
  return std::nullopt;
}

namespace scenario_detail {

namespace {

// "at": a duration ("1.3ms"), or {"step", "rep", "after"}: after the start of that step's
// repetition on the first rank, a duration or a percentage of the operation's estimate.
void read_at(const ObjectReader& f, Fault& ft, const Scenario& sc, const json* wl) {
  const json* at = f.get("at", true);
  if (!at) return;
  if (at->is_string()) { ft.at_ps = f.duration("at", true).value_or(0); return; }
  ObjectReader r(*at, f.child("at"), f.diag(), {"step", "rep", "after"});
  if (!r.valid()) return;
  const auto step = r.uint("step", true, 0, 1u << 20);
  ft.at_rep = static_cast<std::uint32_t>(r.uint("rep", false, 0, 1u << 20).value_or(0));
  if (step) {
    ft.at_step = static_cast<std::int64_t>(*step);
    if (*step < sc.workload.size()) {
      if (ft.at_rep >= sc.workload[*step].repeat) r.diag().error(r.child("rep"), "the step has fewer repetitions");
    } else if (wl) {
      r.diag().error(r.child("step"), "no such workload step");
    }
  }
  auto after = r.str("after", false);
  if (!after) return;
  if (!after->empty() && after->back() == '%') {
    double pct = -1;
    std::string unit, why;
    if (!parse_decimal_unit(*after, &pct, &unit, &why) || unit != "%" || !(pct >= 0 && pct <= 1000)) {
      r.diag().error(r.child("after"), "expected a percentage from 0% to 1000% (a decimal number and %: no sign, hex or exponent) or a duration, got \"" + *after + "\"");
      return;
    }
    if (step && *step < sc.workload.size() && !is_collective(sc.workload[*step].kind)) {
      r.diag().error(r.child("after"), "a percentage is of the operation's estimate (operations.est_us), which only collectives "
                                       "(allreduce, allgather, reducescatter, broadcast, alltoall) have; step " +
                                           std::to_string(*step) + " is " + sc.workload[*step].op + ": give a duration such as \"50us\"");
      return;
    }
    ft.after_pct = pct;
    return;
  }
  ft.at_ps = r.duration("after", false).value_or(0);
}

// Flaps: down at `at` for `duration`, `count` times, one every `period` (default 2 x duration).
void read_flap(const ObjectReader& f, Fault& ft) {
  ft.duration_ps = f.duration("duration", true).value_or(0);
  if (ft.duration_ps == 0 && f.get("duration", false)) f.diag().error(f.child("duration"), "must be positive");
  ft.count = static_cast<std::uint32_t>(f.uint("count", false, 1, 10000).value_or(1));
  ft.period_ps = f.duration("period", false).value_or(2 * ft.duration_ps);
  if (ft.count > 1 && ft.period_ps <= ft.duration_ps)
    f.diag().error(f.child("period"), "the period must be longer than the duration (the link must come up before it goes down again)");
  // The last transition, at + (count - 1) x period + duration, must be a time of the simulated
  // clock (as every duration, below 2^63 ps): it would wrap around to the start of the run.
  constexpr models::Tick kLimit = 9223372036854775807ULL;
  models::Tick room = kLimit - std::min(ft.at_ps, kLimit);
  const bool fits = ft.duration_ps <= room && (room -= ft.duration_ps, ft.count <= 1 || ft.period_ps <= room / (ft.count - 1));
  if (!fits)
    f.diag().error(f.child(ft.count > 1 && f.get("period", false) ? "period" : ft.count > 1 ? "count" : "duration"),
                   std::string(fault_kind_name(ft.kind)) + ": its last transition, at + (count - 1) x period + duration = " +
                       format_duration(ft.at_ps) + " + " + std::to_string(ft.count - 1) + " x " + format_duration(ft.period_ps) + " + " +
                       format_duration(ft.duration_ps) + ", is past the simulated clock's range (2^63 - 1 ps, about 106 days)");
}

// The RoCE cable a fault names: "switch" + "port", or the NIC of "npu".
void cable_ref(const ObjectReader& f, const std::string& fp, std::size_t idx, std::vector<PendingRef>& refs) {
  const bool by_switch = f.get("switch", false) || f.get("port", false);
  if (by_switch) {
    if (f.get("npu", false)) f.diag().error(f.child("npu"), "name the cable by switch + port or by npu, not both");
    auto sw = f.str("switch", true);
    auto port = f.uint("port", true, 0, 1u << 20);
    if (sw && port) {
      PendingRef r{idx, fp, "", "", ""};
      r.target = PendingRef::RoceCable;
      r.sw = *sw;
      r.port = static_cast<std::int64_t>(*port);
      refs.push_back(r);
    }
    return;
  }
  if (auto n = f.str("npu", false)) {
    PendingRef r{idx, fp, "", "", *n};
    r.target = PendingRef::Nic;
    refs.push_back(r);
    return;
  }
  f.diag().error(fp, "name the cable: \"switch\" and \"port\", or \"npu\" (its NIC's cable)");
}

}  // namespace

void read_faults(const ObjectReader& top, const json* wl, Scenario& sc, Diagnostics& d, std::vector<PendingRef>& refs) {
  if (const json* fl = top.get("faults", false)) {
    if (!fl->is_array()) d.error(top.child("faults"), "expected an array");
    else
      for (std::size_t i = 0; i < fl->size(); ++i) {
        const std::string fp = top.child("faults") + "/" + std::to_string(i);
        const json& fj = (*fl)[i];
        std::string type = fj.is_object() && fj.contains("type") && fj["type"].is_string() ? fj["type"].get<std::string>() : "";
        const std::optional<FaultKind> kind = fault_kind_from(type);
        Fault ft;
        ft.kind = kind.value_or(FaultKind::HbmBitflip);
        const std::size_t idx = sc.faults.size();
        // A known type: only the keys it takes are read (the others are errors, accepted_keys).
        const json kept = kind && fj.is_object() ? accepted_keys(fj, fp, d, *kind) : json();
        const json& src = kind && fj.is_object() ? kept : fj;
        // No type, or not a string: the reader says so (hbm_bitflip's keys); "" is an unknown type.
        const bool typeless = !fj.is_object() || !fj.contains("type") || !fj["type"].is_string();
        if (kind == FaultKind::HbmBitflip || typeless) {
          ObjectReader f(src, fp, d, {"type", "rank", "step", "rep", "byte", "bit"});
          if (!f.valid()) continue;
          f.str("type", true);
          ft.rank = static_cast<std::uint32_t>(f.uint("rank", true, 0, 1u << 20).value_or(0));
          ft.step = static_cast<std::uint32_t>(f.uint("step", false, 0, 1u << 20).value_or(0));
          ft.rep = static_cast<std::uint32_t>(f.uint("rep", false, 0, 1u << 20).value_or(0));
          ft.byte = f.uint("byte", false, 0, 16ULL << 30).value_or(0);
          ft.bit = static_cast<std::uint32_t>(f.uint("bit", false, 0, 7).value_or(0));
          if (ft.step < sc.workload.size()) {
            if (ft.byte >= sc.workload[ft.step].bytes) d.error(f.child("byte"), "beyond the step's buffer");
            if (ft.rep >= sc.workload[ft.step].repeat) d.error(f.child("rep"), "the step has fewer repetitions");
          } else if (wl) {
            d.error(f.child("step"), "no such workload step");
          }
        } else if (kind == FaultKind::LinkDown || kind == FaultKind::LinkUp || kind == FaultKind::CrcRate || kind == FaultKind::LaneDegrade) {
          ObjectReader f(src, fp, d, HCSIM_ALL_FAULT_KEYS);
          read_at(f, ft, sc, wl);
          auto a = f.str("a", true), b = f.str("b", true);
          if (kind == FaultKind::CrcRate) ft.rate = f.number("rate", true, 0, 0.5).value_or(0);
          // An HCCS link has 8 lanes (models::LinkParams::lanes, kHccsLanes): keep 1 to 8 of them.
          if (kind == FaultKind::LaneDegrade)
            if (auto lanes = f.uint("lanes", true, 0, ~0ULL)) {
              if (*lanes < 1 || *lanes > 8)
                d.error(f.child("lanes"), "lanes " + std::to_string(*lanes) + " out of range [1, 8]: an HCCS link has 8 lanes and keeps 1 to 8 of them");
              else ft.lanes = static_cast<std::uint32_t>(*lanes);
            }
          if (a && b) refs.push_back({idx, fp, *a, *b, ""});
        } else if (kind == FaultKind::LinkFlap) {
          // An HCCS link (a, b) or a RoCE cable (switch + port, or npu).
          ObjectReader f(src, fp, d, HCSIM_ALL_FAULT_KEYS);
          read_at(f, ft, sc, wl);
          read_flap(f, ft);
          if (f.get("a", false) || f.get("b", false)) {
            if (f.get("switch", false) || f.get("port", false) || f.get("npu", false))
              d.error(fp, "name an HCCS link (a, b) or a RoCE cable (switch + port, or npu), not both");
            auto a = f.str("a", true), b = f.str("b", true);
            if (a && b) refs.push_back({idx, fp, *a, *b, ""});
          } else {
            cable_ref(f, fp, idx, refs);
          }
        } else if (kind == FaultKind::SwitchLinkDown || kind == FaultKind::SwitchLinkUp || kind == FaultKind::PacketCorruption) {
          ObjectReader f(src, fp, d, HCSIM_ALL_FAULT_KEYS);
          read_at(f, ft, sc, wl);
          if (kind == FaultKind::PacketCorruption) ft.rate = f.number("rate", true, 0, 1).value_or(0);
          cable_ref(f, fp, idx, refs);
        } else if (kind == FaultKind::NicDown || kind == FaultKind::NicUp || kind == FaultKind::NicFlap || kind == FaultKind::PfcStorm) {
          ObjectReader f(src, fp, d, HCSIM_ALL_FAULT_KEYS);
          read_at(f, ft, sc, wl);
          if (kind == FaultKind::NicFlap) read_flap(f, ft);
          if (kind == FaultKind::PfcStorm) {  // the NIC pauses its switch port for `duration`
            ft.duration_ps = f.duration("duration", true).value_or(0);
            if (ft.duration_ps == 0 && f.get("duration", false)) d.error(f.child("duration"), "must be positive");
            else if (ft.duration_ps > 3600 * models::kPsPerSec) d.error(f.child("duration"), "a pause storm of at most 1 h");
          }
          if (auto n = f.str("npu", true)) {
            PendingRef r{idx, fp, "", "", *n};
            r.target = PendingRef::Nic;
            refs.push_back(r);
          }
        } else if (kind == FaultKind::PcieLinkDown || kind == FaultKind::PcieLinkUp || kind == FaultKind::NpuStall) {
          ObjectReader f(src, fp, d, HCSIM_ALL_FAULT_KEYS);
          read_at(f, ft, sc, wl);
          if (kind == FaultKind::NpuStall) {
            ft.duration_ps = f.duration("duration", true).value_or(0);
            if (ft.duration_ps == 0 && f.get("duration", false)) d.error(f.child("duration"), "must be positive");
          }
          if (auto n = f.str("npu", true)) {
            PendingRef r{idx, fp, "", "", *n};
            r.target = PendingRef::Npu;
            refs.push_back(r);
          }
        } else if (kind == FaultKind::RankCrash) {
          ObjectReader f(src, fp, d, HCSIM_ALL_FAULT_KEYS);
          read_at(f, ft, sc, wl);
          ft.rank = static_cast<std::uint32_t>(f.uint("rank", true, 0, 1u << 20).value_or(0));
          ft.what = "rank " + std::to_string(ft.rank) + " crashed";
        } else if (kind == FaultKind::DropRate) {
          ObjectReader f(src, fp, d, HCSIM_ALL_FAULT_KEYS);
          read_at(f, ft, sc, wl);
          ft.rate = f.number("rate", true, 0, 1).value_or(0);
          ft.what = "packet drop rate " + fmt_rate(ft.rate);
        } else {
          std::string list;
          for (FaultKind k : kAllKinds) list += (list.empty() ? "" : ", ") + std::string(fault_kind_name(k));
          d.error(fp + "/type", "unknown fault type \"" + type + "\" (" + list + ")");
          continue;
        }
        // The flow tier has no packets: faults acting on packets change nothing there.
        if (sc.net.flow && (ft.kind == FaultKind::DropRate || ft.kind == FaultKind::PacketCorruption))
          d.warn(fp + "/type", std::string(fault_kind_name(ft.kind)) + " has no effect in the flow tier (\"fidelity\": \"flow\" has no packets to " +
                                   (ft.kind == FaultKind::DropRate ? "drop" : "corrupt") + "); use the chunk or packet tier");
        if (ft.kind == FaultKind::PfcStorm) {  // nor PFC; a lossy fabric's switches ignore pause frames
          if (sc.net.flow)
            d.warn(fp + "/type", "pfc_storm has no effect in the flow tier (\"fidelity\": \"flow\" has no queues to pause); use the chunk or packet tier");
          else if (!sc.net.pfc.enabled)
            d.warn(fp + "/type", "pfc_storm has no effect with /network/pfc/enabled false (the switches ignore pause frames)");
        }
        sc.faults.push_back(ft);
      }
  }
}

void resolve_faults(const std::vector<PendingRef>& refs, Scenario& sc, Diagnostics& d, bool faults_aligned) {
  std::map<std::string, std::uint32_t> npu_by_name, sw_by_name;
  const Topology& t = sc.topology;
  for (std::uint32_t i = 0; i < t.npus.size(); ++i) npu_by_name[t.npus[i].name] = i;
  for (std::uint32_t i = 0; i < t.switches.size(); ++i) sw_by_name[t.switches[i].name] = i;
  auto flap_text = [](const Fault& f) {
    return " flapping (down " + format_duration(f.duration_ps) + ", " + std::to_string(f.count) + (f.count == 1 ? " time" : " times") +
           (f.count > 1 ? ", every " + format_duration(f.period_ps) : std::string()) + ")";
  };
  for (const auto& r : refs) {
    Fault& f = sc.faults[r.fault];
    auto find = [&](const std::string& n, const char* key) -> std::int64_t {
      auto it = npu_by_name.find(n);
      if (it == npu_by_name.end()) { d.error(r.ptr + "/" + key, "no NPU named \"" + n + "\" in " + sc.topology_path); return -1; }
      return it->second;
    };
    const char* kn = fault_kind_name(f.kind);
    if (r.target == PendingRef::Npu) {
      f.npu = find(r.npu, "npu");
      if (f.npu < 0) continue;
      if (f.kind == FaultKind::NpuStall) f.what = r.npu + " stream engine stalled for " + format_duration(f.duration_ps);
      else f.what = "PCIe link of " + r.npu + (f.kind == FaultKind::PcieLinkDown ? " down" : " up");
      continue;
    }
    if (r.target == PendingRef::Nic || r.target == PendingRef::RoceCable) {
      std::string cable_name;
      if (r.target == PendingRef::Nic) {
        f.npu = find(r.npu, "npu");
        if (f.npu < 0) continue;
        for (std::size_t k = 0; k < t.links.size() && f.roce_link < 0; ++k) {
          const auto& l = t.links[k];
          if (l.type == LinkType::Roce && ((!l.a.is_switch && l.a.index == f.npu) || (!l.b.is_switch && l.b.index == f.npu)))
            f.roce_link = static_cast<std::int64_t>(k);
        }
        if (f.roce_link < 0) { d.error(r.ptr + "/npu", r.npu + " has no cabled NIC"); continue; }
      } else {
        auto it = sw_by_name.find(r.sw);
        if (it == sw_by_name.end() || t.switches[it->second].kind != SwitchKind::Ethernet) {
          d.error(r.ptr + "/switch", "no Ethernet switch named \"" + r.sw + "\" in " + sc.topology_path);
          continue;
        }
        for (std::size_t k = 0; k < t.links.size() && f.roce_link < 0; ++k) {
          const auto& l = t.links[k];
          if (l.type != LinkType::Roce) continue;
          if ((l.a.is_switch && l.a.index == it->second && l.a.port == r.port) || (l.b.is_switch && l.b.index == it->second && l.b.port == r.port))
            f.roce_link = static_cast<std::int64_t>(k);
        }
        if (f.roce_link < 0) {
          d.error(r.ptr + "/port", "port " + std::to_string(r.port) + " of " + r.sw + " is not cabled (" +
                                       std::to_string(t.switches[it->second].ports) + " ports)");
          continue;
        }
        const auto& l = t.links[static_cast<std::size_t>(f.roce_link)];
        // The NPU end of a switch-to-NIC cable (its NIC faults are the same cable).
        if (!l.a.is_switch) f.npu = l.a.index;
        else if (!l.b.is_switch) f.npu = l.b.index;
      }
      // A cable the topology lists as missing (/as_built cable_missing) has no port to act on.
      if (std::find(t.as_built.cables_missing.begin(), t.as_built.cables_missing.end(), static_cast<std::uint32_t>(f.roce_link)) !=
          t.as_built.cables_missing.end()) {
        d.error(r.ptr + (r.target == PendingRef::Nic ? "/npu" : "/port"),
                "cable " + t.links[static_cast<std::size_t>(f.roce_link)].name + " is missing (/as_built in " + sc.topology_path + "): a fault on it has nothing to act on");
        continue;
      }
      cable_name = (r.target == PendingRef::Nic ? "NIC of " + r.npu + " (cable " : "cable ") + t.links[static_cast<std::size_t>(f.roce_link)].name +
                   (r.target == PendingRef::Nic ? ")" : "");
      switch (f.kind) {
        case FaultKind::PacketCorruption: f.what = cable_name + " corrupts packets with probability " + fmt_rate(f.rate); break;
        case FaultKind::PfcStorm: f.what = cable_name + " sends PFC pause frames for " + format_duration(f.duration_ps) + " (pause storm)"; break;
        case FaultKind::LinkFlap:
        case FaultKind::NicFlap: f.what = cable_name + flap_text(f); break;
        case FaultKind::NicDown:
        case FaultKind::SwitchLinkDown: f.what = cable_name + " down"; break;
        default: f.what = cable_name + " up"; break;
      }
      (void)kn;
      continue;
    }
    std::int64_t a = find(r.a, "a"), b = find(r.b, "b");
    if (a < 0 || b < 0) continue;
    for (std::size_t k = 0; k < t.links.size(); ++k) {
      const auto& l = t.links[k];
      if (l.type == LinkType::Hccs && ((l.a.index == a && l.b.index == b) || (l.a.index == b && l.b.index == a))) f.link = static_cast<std::int64_t>(k);
    }
    if (f.link < 0) { d.error(r.ptr, "no HCCS link between " + r.a + " and " + r.b); continue; }
    std::string change;
    switch (f.kind) {
      case FaultKind::LinkDown: change = " down"; break;
      case FaultKind::LinkUp: change = " up"; break;
      case FaultKind::CrcRate: change = " CRC error rate " + fmt_rate(f.rate); break;
      case FaultKind::LinkFlap: change = flap_text(f); break;
      default: change = " degraded to " + std::to_string(f.lanes) + " lanes"; break;
    }
    f.what = "HCCS link " + t.links[f.link].name + change;
  }
  for (std::size_t i = 0; faults_aligned && i < sc.faults.size(); ++i)
    if ((sc.faults[i].kind == FaultKind::HbmBitflip || sc.faults[i].kind == FaultKind::RankCrash) && sc.faults[i].rank >= sc.topology.npus.size())
      d.error("/faults/" + std::to_string(i) + "/rank", "rank " + std::to_string(sc.faults[i].rank) + " does not exist (" +
                                                           std::to_string(sc.topology.npus.size()) + " ranks)");
}

}  // namespace scenario_detail
}  // namespace sim
