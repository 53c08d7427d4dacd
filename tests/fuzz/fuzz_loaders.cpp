// libFuzzer target for hcsim's input loaders (docs/fuzzing.md): the bad-input contract says any
// byte string gives either a loaded object or "file: /pointer: reason" diagnostics, never a crash,
// a sanitizer report or a hang. One input exercises, by its first byte:
//   0: a topology document (parse_json_text + topology_from_json, then summary and pictures if it loads)
//   1: a scenario file (written to a scratch directory, load_scenario; it may name the topologies
//      "t.json" (a copy of the fixture small topology) or "../../topologies/...")
//   2: a rank table imported into a fixed 2-server topology
//   3: unit strings and HCOMM_* values (parse_bandwidth/size/duration, hcomm_config_check)
// Build: cmake -DCMAKE_CXX_COMPILER=clang++ -DHCSIM_FUZZ=ON ...; tests/fuzz/run_short.sh does it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "hcomm/hcomm.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/config/units.h"

namespace {

const char* kTwoNode = R"({"format":"hcsim-topology","version":1,"name":"t",
  "servers":[{"name":"a","type":"atlas800t-a2","host_ip":"10.0.0.1","nic":{"device_ip":"10.1.0.1"}},
             {"name":"b","type":"atlas800t-a2","host_ip":"10.0.0.2","nic":{"device_ip":"10.1.0.9"}}],
  "switches":[{"name":"sw","ports":16,"port_bandwidth":"200Gb/s"}],
  "links":[{"type":"roce","a":"a/npu0","b":"sw/0"},{"type":"roce","a":"b/npu0","b":"sw/1"}]})";

std::string scratch_dir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/hcsim_fuzz_XXXXXX";
    std::string d = mkdtemp(tmpl);
    std::ofstream(d + "/t.json") << kTwoNode;
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 4;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (mode) {
    case 0: {
      sim::Diagnostics d("fuzz.json");
      auto j = sim::parse_json_text(text, d);
      if (!j) break;
      auto t = sim::topology_from_json(*j, d, scratch_dir() + "/");
      if (t && t->npus.size() <= 4096) {  // the summary is a max flow: bounded so the fuzzer keeps its pace
        (void)sim::format_summary(*t, sim::summarize(*t));
        (void)sim::to_dot(*t);
        (void)sim::to_svg(*t);
      }
      break;
    }
    case 1: {
      const std::string p = scratch_dir() + "/s.json";
      std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
      std::vector<std::string> errs, warns;
      (void)sim::load_scenario(p, &errs, &warns);
      break;
    }
    case 2: {
      sim::Diagnostics td("t.json");
      static sim::Topology base = *sim::topology_from_json(sim::json::parse(kTwoNode), td);
      sim::Diagnostics d("rt.json");
      auto j = sim::parse_json_text(text, d);
      if (!j) break;
      sim::Topology t = base;
      if (sim::import_rank_table(*j, t, d)) (void)sim::export_rank_table(t, "1.2");
      break;
    }
    default: {
      std::string why;
      (void)sim::parse_bandwidth(text, &why);
      (void)sim::parse_size(text, &why);
      (void)sim::parse_duration(text, &why);
      const auto eq = text.find('=');
      if (eq != std::string::npos) {
        char buf[128];
        const std::string name = text.substr(0, eq), value = text.substr(eq + 1);
        (void)hcomm_config_check(name.c_str(), value.c_str(), buf, sizeof buf);
      }
      break;
    }
  }
  return 0;
}
