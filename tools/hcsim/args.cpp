// The option parser shared by every hcsim command (docs/architecture.md#tools).
#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "sim/config/scenario.h"
#include "sim/config/units.h"

namespace hcsim {

Args::Args(const Command& cmd, std::vector<Option> options, Positional positional)
    : cmd_(cmd), options_(std::move(options)), positional_(std::move(positional)) {}

std::optional<int> Args::parse(const std::vector<std::string>& args) const {
  bool options_end = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_end || a.empty() || a[0] != '-') {
      if (auto err = positional_.set(a); !err.empty()) return usage_error(err);
      continue;
    }
    if (a == "--") { options_end = true; continue; }
    if (a == "--help" || a == "-h") { std::fputs(help().c_str(), stdout); return kOk; }
    // "--name=value" for a long option taking a value.
    const auto eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
    const std::string name = a.substr(0, eq);
    auto o = std::find_if(options_.begin(), options_.end(), [&](const Option& o) {
      return name == o.name || (!o.alias.empty() && name == o.alias);
    });
    if (o == options_.end() || (eq != std::string::npos && o->value.empty())) return usage_error("unknown option " + a);
    std::string value;
    if (eq != std::string::npos) value = a.substr(eq + 1);
    else if (!o->value.empty()) {
      if (i + 1 >= args.size()) return usage_error(name + " needs " + o->needs);
      value = args[++i];
    }
    if (auto err = o->set(value); !err.empty()) return usage_error(err);
  }
  return std::nullopt;
}

int Args::usage_error(const std::string& msg) const {
  std::fprintf(stderr, "hcsim: %s\n\n%s", msg.c_str(), help().c_str());
  return kBadInput;
}

std::string Args::help() const {
  std::vector<std::pair<std::string, std::string>> rows;  // left column, help
  for (const auto& o : options_)
    rows.emplace_back((o.alias.empty() ? "" : o.alias + ", ") + o.name + (o.value.empty() ? "" : " " + o.value), o.help);
  rows.emplace_back("-h, --help", "print this help and exit");
  std::size_t width = positional_.name.size();
  for (const auto& r : rows) width = std::max(width, r.first.size());
  auto row = [&](const std::string& left, const std::string& text) {
    return "  " + left + std::string(width + 2 - left.size(), ' ') + text + "\n";
  };
  // The summary is written for `hcsim --help`, indented by 8: indent it by 2 here.
  std::string summary;
  for (const char* p = cmd_.summary; *p;) {
    const char* nl = p;
    while (*nl && *nl != '\n') ++nl;
    std::string line(p, nl);
    summary += "  " + line.substr(std::min(line.find_first_not_of(' '), line.size())) + "\n";
    p = *nl ? nl + 1 : nl;
  }
  std::string h = std::string("usage: hcsim ") + cmd_.synopsis + "\n\n" + summary + "\n";
  if (!positional_.name.empty()) h += "arguments:\n" + row(positional_.name, positional_.help);
  h += "options:\n";
  for (const auto& r : rows) h += row(r.first, r.second);
  return h;
}

Option fault_option(sim::ScenarioOverrides& ov, const std::string& help) {
  return {"--fault", "", "'TYPE KEY=VALUE ...'", "a fault", help, [&ov](const std::string& v) {
            std::string why;
            auto f = sim::parse_fault_text(v, &why);
            if (!f) return "--fault '" + v + "': " + why;
            ov.faults.push_back({v, *f});
            return std::string();
          }};
}

Option set_option(sim::ScenarioOverrides& ov, const std::string& help) {
  return {"--set", "", "/POINTER=VALUE", "a /json/pointer=value", help, [&ov](const std::string& v) {
            const auto eq = v.find('=');
            if (v.empty() || v[0] != '/' || eq == std::string::npos)
              return "--set " + v + ": expected /json/pointer=value (e.g. --set /network/ecmp_hash=src-dst)";
            ov.sets.emplace_back(v.substr(0, eq), v.substr(eq + 1));
            return std::string();
          }};
}

std::string parse_count(const std::string& option, const std::string& v, std::size_t* out) {
  std::string why;
  const auto n = sim::parse_uint(v, &why);
  if (!n || *n == 0 || *n > 999999) return option + " needs a number from 1 to 999999, got \"" + v + "\"";
  *out = static_cast<std::size_t>(*n);
  return std::string();
}

}  // namespace hcsim
