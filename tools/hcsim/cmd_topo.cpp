// hcsim topo: describe a topology (docs/architecture.md#tools, docs/topology-format.md).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "commands.h"
#include "outputs.h"
#include "sim/config/topology.h"

namespace hcsim {
namespace {

int topo_main(const std::vector<std::string>& argv) {
  std::string file, out, what = "summary", rt_version;
  bool full = false, force = false;
  auto show = [&what](const char* w) { return [&what, w](const std::string&) { what = w; return std::string(); }; };
  const Args args(kTopo,
                  {{"--summary", "", "", "", "device and link counts, bisection bandwidth, diameter (the default)", show("summary")},
                   {"--dot", "", "", "", "a Graphviz DOT picture", show("dot")},
                   {"--svg", "", "", "", "a self-contained SVG picture", show("svg")},
                   {"--ranktable", "", "1.0|1.2", "a version: 1.0 or 1.2", "an Ascend rank table of its rank order, in that version",
                    [&](const std::string& v) {
                      what = "ranktable";
                      rt_version = v;
                      return v == "1.0" || v == "1.2" ? std::string() : std::string("--ranktable needs a version: 1.0 or 1.2");
                    }},
                   {"--full", "", "", "", "draw every device (large layouts are collapsed to server groups and switch tiers)",
                    [&](const std::string&) { full = true; return std::string(); }},
                   {"-o", "", "OUT", "a file name", "write to OUT instead of stdout",
                    [&](const std::string& v) { out = v; return v.empty() ? std::string("-o needs a file name") : std::string(); }},
                   {"--force", "", "", "", "replace OUT even if it is not something hcsim topo writes (docs/tools.md#outputs)",
                    [&](const std::string&) { force = true; return std::string(); }}},
                  {"FILE", "the topology file", [&](const std::string& a) {
                     if (!file.empty()) return std::string("topo takes one file");
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("topo needs a topology file");
  sim::Diagnostics d(file);
  auto t = sim::load_topology(file, d);
  if (!t) {
    for (auto& e : d.messages()) std::fprintf(stderr, "%s\n", e.c_str());
    return kBadInput;
  }
  if (!out.empty()) {
    // What hcsim topo writes begins with one of these: the summary, DOT, SVG, a rank table.
    const std::string bad = check_outputs(
        {{"input FILE", file}, {"the topology's rank table", t->rank_table}},
        {{"-o", out, {"topology ", "graph \"", "<svg xmlns=\"http://www.w3.org/2000/svg\"", "{\n  \"server_count\":"},
          "a summary, DOT, SVG or rank table of hcsim topo"}},
        force);
    if (!bad.empty()) { std::fprintf(stderr, "hcsim: %s\n", bad.c_str()); return kBadInput; }
  }
  std::string text;
  if (what == "summary") text = sim::format_summary(*t, sim::summarize(*t));
  else if (what == "dot") text = sim::to_dot(*t, full ? SIZE_MAX : 64);
  else if (what == "svg") text = sim::to_svg(*t, full ? SIZE_MAX : 64);
  else {
    for (auto& n : t->npus)
      if (!n.device_ip) {
        std::fprintf(stderr, "%s: /servers: %s has no device IP; a rank table needs one per NPU (set nic.device_ip)\n", file.c_str(), n.name.c_str());
        return kBadInput;
      }
    text = sim::export_rank_table(*t, rt_version).dump(2) + "\n";
  }
  if (out.empty()) { std::fputs(text.c_str(), stdout); return kOk; }
  std::ofstream f(out, std::ios::binary);
  if (!(f << text)) { std::fprintf(stderr, "hcsim: %s: cannot write\n", out.c_str()); return kBadInput; }
  return kOk;
}

}  // namespace

const Command kTopo = {
    "topo", "topo FILE [--summary] [--dot] [--svg] [--ranktable 1.0|1.2] [--full] [-o OUT] [--force]",
    "        describe a topology: counts, bisection bandwidth and diameter (--summary, the default),\n"
    "        a Graphviz DOT or SVG picture (large layouts collapsed unless --full), or an Ascend\n"
    "        rank table for its rank order; written to OUT or stdout\n",
    topo_main};

}  // namespace hcsim
