// hcsim run --chaos SEED:N (docs/scenario-format.md#chaos): a seeded random fault campaign,
// drawn as --fault strings so that every drawn fault can be replayed alone. Plain C++.
#include <cstdio>
#include <functional>

#include "models/splitmix64.h"
#include "sim/config/scenario.h"

namespace sim {

namespace {

struct Rng {  // splitmix64: the same SEED draws the same faults on every machine
  models::SplitMix64 g;
  std::uint64_t next() { return g.next(); }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  std::uint64_t in(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
};

}  // namespace

std::string fault_text(const json& f) {
  std::string out = f.contains("type") && f["type"].is_string() ? f["type"].get<std::string>() : "?";
  // Keys in a fixed order (nlohmann's object is sorted by key), nested objects dotted.
  std::function<void(const json&, const std::string&)> walk = [&](const json& o, const std::string& prefix) {
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (prefix.empty() && it.key() == "type") continue;
      if (it->is_object()) walk(*it, prefix + it.key() + ".");
      else out += " " + prefix + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
    }
  };
  walk(f, "");
  return out;
}

std::vector<std::string> chaos_faults(const Scenario& sc, std::uint64_t seed, std::uint32_t n) {
  const Topology& t = sc.topology;
  std::vector<std::size_t> hccs, nic_cables, switch_cables;
  std::vector<char> missing(t.links.size(), 0);  // /as_built cable_missing: no cable to fault
  for (std::uint32_t k : t.as_built.cables_missing) missing[k] = 1;
  for (std::size_t k = 0; k < t.links.size(); ++k) {
    const auto& l = t.links[k];
    if (missing[k]) continue;
    if (l.type == LinkType::Hccs) hccs.push_back(k);
    else if (l.type == LinkType::Roce) (l.a.is_switch && l.b.is_switch ? switch_cables : nic_cables).push_back(k);
  }
  // What the layout supports, in a fixed order.
  enum Kind { HccsFlap, CrcRate, LaneDegrade, NicFlap, Corruption, SwitchFlap, Stall };
  std::vector<Kind> kinds;
  if (!hccs.empty()) kinds.insert(kinds.end(), {HccsFlap, CrcRate, LaneDegrade});
  // Packet corruption acts on packets, which the flow tier does not have (docs/scenario-format.md#faults).
  if (!nic_cables.empty()) kinds.push_back(NicFlap);
  if (!nic_cables.empty() && !sc.net.flow) kinds.push_back(Corruption);
  if (!switch_cables.empty()) kinds.push_back(SwitchFlap);
  kinds.push_back(Stall);
  Rng rng{models::SplitMix64{seed}};
  std::vector<std::string> out;
  auto npu_name = [&](std::uint32_t i) { return t.npus[i].name; };
  auto us = [](std::uint64_t v) { return std::to_string(v) + "us"; };
  for (std::uint32_t i = 0; i < n; ++i) {
    // When: after the start of a random step and repetition, inside its span.
    const auto step = static_cast<std::uint32_t>(rng.below(sc.workload.size()));
    const auto rep = static_cast<std::uint32_t>(rng.below(sc.workload[step].repeat));
    std::string when = " at.step=" + std::to_string(step) + " at.rep=" + std::to_string(rep) + " at.after=";
    if (is_collective(sc.workload[step].kind)) when += std::to_string(rng.below(90)) + "%";
    else when += us(rng.below(10));
    std::string f;
    const Kind k = kinds[rng.below(kinds.size())];
    const std::uint64_t dur = rng.in(1, 20);
    const std::uint64_t count = rng.in(1, 3), period = dur * rng.in(2, 3);
    const std::string flap = " duration=" + us(dur) + " count=" + std::to_string(count) + " period=" + us(period);
    switch (k) {
      case HccsFlap:
      case CrcRate:
      case LaneDegrade: {
        const auto& l = t.links[hccs[rng.below(hccs.size())]];
        const std::string ab = " a=" + npu_name(l.a.index) + " b=" + npu_name(l.b.index);
        if (k == HccsFlap) f = "link_flap" + ab + flap;
        else if (k == CrcRate) f = "crc_rate" + ab + " rate=" + std::to_string(rng.in(1, 100) * 1e-4).substr(0, 6);
        else f = "lane_degrade" + ab + " lanes=" + std::to_string(rng.in(1, 7));
        break;
      }
      case NicFlap:
      case Corruption: {
        const auto& l = t.links[nic_cables[rng.below(nic_cables.size())]];
        const std::string npu = npu_name(l.a.is_switch ? l.b.index : l.a.index);
        if (k == NicFlap) f = "nic_flap npu=" + npu + flap;
        else f = "packet_corruption npu=" + npu + " rate=" + std::to_string(rng.in(1, 100) * 1e-4).substr(0, 6);
        break;
      }
      case SwitchFlap: {
        const auto& l = t.links[switch_cables[rng.below(switch_cables.size())]];
        f = "link_flap switch=" + t.switches[l.a.index].name + " port=" + std::to_string(l.a.port) + flap;
        break;
      }
      case Stall: f = "npu_stall npu=" + npu_name(static_cast<std::uint32_t>(rng.below(t.npus.size()))) + " duration=" + us(dur); break;
    }
    out.push_back(f + when);
  }
  return out;
}

}  // namespace sim
