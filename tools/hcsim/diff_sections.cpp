// The route, timing-golden and JUnit parts of hcsim diff (diff_sections.h, docs/tools.md#diff).
#include "diff_sections.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "trace_db.h"

namespace hcsim {

const char* const kJunitHead = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"hcsim diff\"";

namespace {

// Changed aggregates sorted by |change| (largest first), then by name in natural order.
struct Changed {
  std::string name, line;
  long long change;
};
std::vector<Aggregate> sorted(std::vector<Changed> v) {
  std::sort(v.begin(), v.end(), [](const Changed& x, const Changed& y) {
    if (std::llabs(x.change) != std::llabs(y.change)) return std::llabs(x.change) > std::llabs(y.change);
    return natural_less(x.name, y.name);
  });
  std::vector<Aggregate> out;
  for (auto& c : v) out.push_back({c.name, c.line});
  return out;
}

std::string ports_list(const std::set<std::string>& s) {
  std::vector<std::string> v(s.begin(), s.end());
  std::sort(v.begin(), v.end(), natural_less);
  std::string o;
  for (const auto& p : v) o += (o.empty() ? "" : " ") + p;
  return o.empty() ? "none" : o;
}

std::string xml(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace

RoutesDiff diff_routes(const std::vector<RouteLine>& a, const std::vector<RouteLine>& b) {
  RoutesDiff d;
  const RouteLoad la = route_load(a), lb = route_load(b);
  std::vector<Changed> ch;
  std::set<std::string> names;
  for (const auto& [s, p] : la.uplinks) names.insert(s);
  for (const auto& [s, p] : lb.uplinks) names.insert(s);
  d.switches = names.size();
  const std::set<std::string> none;
  for (const auto& s : names) {
    auto ia = la.uplinks.find(s), ib = lb.uplinks.find(s);
    const auto& pa = ia == la.uplinks.end() ? none : ia->second;
    const auto& pb = ib == lb.uplinks.end() ? none : ib->second;
    if (pa == pb) continue;
    const long long x = static_cast<long long>(pa.size()), y = static_cast<long long>(pb.size());
    ch.push_back({s, s + " uplinks used " + std::to_string(x) + " -> " + std::to_string(y) + " (ports " + ports_list(pa) + " -> " +
                         ports_list(pb) + ")",
                  y - x});
  }
  d.uplinks = sorted(std::move(ch));
  ch.clear();
  names.clear();
  for (const auto& [p, n] : la.ports) names.insert(p);
  for (const auto& [p, n] : lb.ports) names.insert(p);
  d.links = names.size();
  for (const auto& p : names) {
    auto ia = la.ports.find(p), ib = lb.ports.find(p);
    const long long x = ia == la.ports.end() ? 0 : static_cast<long long>(ia->second);
    const long long y = ib == lb.ports.end() ? 0 : static_cast<long long>(ib->second);
    if (x == y) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, " %lld -> %lld (%+lld)", x, y, y - x);
    ch.push_back({p, p + buf, y - x});
  }
  d.ports = sorted(std::move(ch));

  // Decisions by (comm, src, dst, qp, n): numbers compare as numbers.
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>;
  std::map<Key, std::pair<const RouteLine*, const RouteLine*>> all;
  for (const auto& r : a) all[{r.comm, r.src, r.dst, r.qp, r.n}].first = &r;
  for (const auto& r : b) all[{r.comm, r.src, r.dst, r.qp, r.n}].second = &r;
  for (const auto& [k, ab] : all) {
    const auto [x, y] = ab;
    if (!y) d.moved.push_back("removed " + x->key() + ": " + x->decision());
    else if (!x) d.moved.push_back("added   " + y->key() + ": " + y->decision());
    else if (x->decision() != y->decision() || x->trigger != y->trigger)
      d.moved.push_back("changed " + x->key() + ": " + x->decision() + "  ->  " + y->decision());
  }
  return d;
}

std::vector<DiffCase> diff_timing(const std::vector<TimingRow>& a, const std::vector<TimingRow>& b, double tol_pct) {
  std::map<std::int64_t, std::pair<const TimingRow*, const TimingRow*>> all;
  for (const auto& r : a) all[r.step].first = &r;
  for (const auto& r : b) all[r.step].second = &r;
  std::vector<DiffCase> cases;
  auto name = [](const TimingRow& r) { return "step " + std::to_string(r.step) + " " + r.op + " " + std::to_string(r.bytes) + " B"; };
  for (const auto& [step, ab] : all) {
    const auto [x, y] = ab;
    DiffCase c;
    c.name = "summary " + name(x ? *x : *y);
    if (!y) c.items.push_back("removed " + name(*x) + " (not in B)");
    else if (!x) c.items.push_back("added   " + name(*y) + " (not in A)");
    else {
      if (x->op != y->op || x->bytes != y->bytes) c.items.push_back(name(*x) + ": is " + y->op + " " + std::to_string(y->bytes) + " B in B");
      if (x->algorithm != y->algorithm) c.items.push_back(name(*x) + ": algorithm " + x->algorithm + " -> " + y->algorithm);
      if (x->reps != y->reps)
        c.items.push_back(name(*x) + ": repetitions " + std::to_string(x->reps) + " -> " + std::to_string(y->reps));
      const double pct = x->time_us > 0 ? 100.0 * (y->time_us - x->time_us) / x->time_us : (y->time_us > 0 ? INFINITY : 0);
      if (std::fabs(pct) > tol_pct) {
        char buf[256];
        std::snprintf(buf, sizeof buf, ": median time %.3f -> %.3f us (%+.2f %%, tolerance %.2f %%)", x->time_us, y->time_us, pct, tol_pct);
        c.items.push_back(name(*x) + buf);
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

void print_list(const std::vector<std::string>& v, std::size_t max_lines, const char* indent) {
  for (std::size_t i = 0; i < v.size() && i < max_lines; ++i) std::printf("%s%s\n", indent, v[i].c_str());
  if (v.size() > max_lines) std::printf("%s... and %zu more (-n to show more)\n", indent, v.size() - max_lines);
}

std::string junit_xml(const std::vector<DiffCase>& cases, std::size_t max_lines) {
  std::size_t failures = 0, skipped = 0;
  for (const auto& c : cases) {
    failures += c.compared && !c.items.empty();
    skipped += !c.compared;
  }
  std::string x = std::string(kJunitHead) + " tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failures) +
                  "\" skipped=\"" + std::to_string(skipped) + "\">\n";
  for (const auto& c : cases) {
    x += "  <testcase classname=\"hcsim.diff\" name=\"" + xml(c.name) + "\">";
    if (!c.compared) {
      x += "<skipped message=\"not compared\"/>";
    } else if (!c.items.empty()) {
      x += "<failure message=\"" + std::to_string(c.items.size()) + (c.items.size() == 1 ? " difference" : " differences") + "\">";
      for (std::size_t i = 0; i < c.items.size() && i < max_lines; ++i) x += xml(c.items[i]) + "\n";
      if (c.items.size() > max_lines) x += "... and " + std::to_string(c.items.size() - max_lines) + " more (-n to show more)\n";
      x += "</failure>";
    }
    x += "</testcase>\n";
  }
  return x + "</testsuite>\n";
}

}  // namespace hcsim
