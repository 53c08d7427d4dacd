// Scenario "faults" (docs/scenario-format.md): each fault's kind parsed once (FaultKind), its
// fields read, and the devices it names resolved against the topology.
#include <map>

#include "scenario_readers.h"

namespace sim {

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
  }
  return "?";
}

std::optional<FaultKind> fault_kind_from(const std::string& name) {
  for (FaultKind k : {FaultKind::HbmBitflip, FaultKind::LinkDown, FaultKind::LinkUp, FaultKind::CrcRate, FaultKind::LaneDegrade,
                      FaultKind::DropRate, FaultKind::NicDown, FaultKind::NicUp, FaultKind::RankCrash})
    if (name == fault_kind_name(k)) return k;
  return std::nullopt;
}

namespace scenario_detail {

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
        if (kind == FaultKind::HbmBitflip || type.empty() || !fj.is_object()) {
          ObjectReader f(fj, fp, d, {"type", "rank", "step", "rep", "byte", "bit"});
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
          ObjectReader f(fj, fp, d, {"type", "at", "a", "b", "rate", "lanes"});
          ft.at_ps = f.duration("at", true).value_or(0);
          auto a = f.str("a", true), b = f.str("b", true);
          if (kind == FaultKind::CrcRate) ft.rate = f.number("rate", true, 0, 0.5).value_or(0);
          // An HCCS link has 8 lanes (models::LinkParams::lanes, kHccsLanes): keep 1 to 8 of them.
          if (kind == FaultKind::LaneDegrade)
            if (auto lanes = f.uint("lanes", true, 0, ~0ULL)) {
              if (*lanes < 1 || *lanes > 8)
                d.error(f.child("lanes"), "lanes " + std::to_string(*lanes) + " out of range [1, 8]: an HCCS link has 8 lanes and keeps 1 to 8 of them");
              else ft.lanes = static_cast<std::uint32_t>(*lanes);
            }
          if (a && b) refs.push_back({sc.faults.size(), fp, *a, *b, ""});
        } else if (kind == FaultKind::NicDown || kind == FaultKind::NicUp) {
          ObjectReader f(fj, fp, d, {"type", "at", "npu"});
          ft.at_ps = f.duration("at", true).value_or(0);
          if (auto n = f.str("npu", true)) refs.push_back({sc.faults.size(), fp, "", "", *n});
        } else if (kind == FaultKind::RankCrash) {
          ObjectReader f(fj, fp, d, {"type", "at", "rank"});
          ft.at_ps = f.duration("at", true).value_or(0);
          ft.rank = static_cast<std::uint32_t>(f.uint("rank", true, 0, 1u << 20).value_or(0));
          ft.what = "rank " + std::to_string(ft.rank) + " crashed";
        } else if (kind == FaultKind::DropRate) {
          ObjectReader f(fj, fp, d, {"type", "at", "rate"});
          ft.at_ps = f.duration("at", true).value_or(0);
          ft.rate = f.number("rate", true, 0, 1).value_or(0);
          ft.what = "packet drop rate " + std::to_string(ft.rate);
        } else {
          d.error(fp + "/type", "unknown fault type \"" + type + "\" (hbm_bitflip, link_down, link_up, crc_rate, lane_degrade, nic_down, nic_up, drop_rate, rank_crash)");
          continue;
        }
        sc.faults.push_back(ft);
      }
  }
}

void resolve_faults(const std::vector<PendingRef>& refs, Scenario& sc, Diagnostics& d, bool faults_aligned) {
  std::map<std::string, std::uint32_t> npu_by_name;
  for (std::uint32_t i = 0; i < sc.topology.npus.size(); ++i) npu_by_name[sc.topology.npus[i].name] = i;
  for (const auto& r : refs) {
    Fault& f = sc.faults[r.fault];
    auto find = [&](const std::string& n, const char* key) -> std::int64_t {
      auto it = npu_by_name.find(n);
      if (it == npu_by_name.end()) { d.error(r.ptr + "/" + key, "no NPU named \"" + n + "\" in " + sc.topology_path); return -1; }
      return it->second;
    };
    if (!r.npu.empty()) {
      f.npu = find(r.npu, "npu");
      bool cabled = false;
      for (auto& l : sc.topology.links)
        if (l.type == LinkType::Roce && ((!l.a.is_switch && l.a.index == f.npu) || (!l.b.is_switch && l.b.index == f.npu))) cabled = true;
      if (f.npu >= 0 && !cabled) d.error(r.ptr + "/npu", r.npu + " has no cabled NIC");
      f.what = "NIC of " + r.npu + (f.kind == FaultKind::NicDown ? " down" : " up");
      continue;
    }
    std::int64_t a = find(r.a, "a"), b = find(r.b, "b");
    if (a < 0 || b < 0) continue;
    for (std::size_t k = 0; k < sc.topology.links.size(); ++k) {
      const auto& l = sc.topology.links[k];
      if (l.type == LinkType::Hccs && ((l.a.index == a && l.b.index == b) || (l.a.index == b && l.b.index == a))) f.link = static_cast<std::int64_t>(k);
    }
    if (f.link < 0) { d.error(r.ptr, "no HCCS link between " + r.a + " and " + r.b); continue; }
    f.what = "HCCS link " + sc.topology.links[f.link].name + " " +
             (f.kind == FaultKind::LinkDown ? "down" : f.kind == FaultKind::LinkUp ? "up" : f.kind == FaultKind::CrcRate ? "CRC error rate " + std::to_string(f.rate)
                                                                                                : "degraded to " + std::to_string(f.lanes) + " lanes");
  }
  for (std::size_t i = 0; faults_aligned && i < sc.faults.size(); ++i)
    if ((sc.faults[i].kind == FaultKind::HbmBitflip || sc.faults[i].kind == FaultKind::RankCrash) && sc.faults[i].rank >= sc.topology.npus.size())
      d.error("/faults/" + std::to_string(i) + "/rank", "rank " + std::to_string(sc.faults[i].rank) + " does not exist (" +
                                                           std::to_string(sc.topology.npus.size()) + " ranks)");
}

}  // namespace scenario_detail
}  // namespace sim
