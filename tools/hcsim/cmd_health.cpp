// hcsim health: named health rules with thresholds over a finished trace (docs/tools.md#health).
// Exit 0 every rule passed, 1 some rule found something, 2 bad input (trace or rules file).
#include <algorithm>
#include <optional>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "sim/config/json_reader.h"
#include "sim/config/topology.h"
#include "trace_db.h"

namespace hcsim {
namespace {

struct Rule {
  const char* name;
  const char* what;        ///< the value compared, for the report
  bool above;              ///< fails when value > threshold (else when value < threshold)
  double threshold;
  bool enabled = true;
  // Rule-specific settings (see kRules for which rule reads which).
  std::string metric;      ///< link_below_peers: "bandwidth" or "bytes"
  double min_bytes = 0;    ///< link_below_peers, ecmp_imbalance: ignore objects that carried less
};

std::vector<Rule> default_rules() {
  auto r = [](const char* n, const char* what, bool above, double thr, const char* metric = "", double min_bytes = 0) {
    Rule x{n, what, above, thr, true, metric, min_bytes};
    return x;
  };
  return {
      r("crc_replay_rate", "HCCS CRC replays per 256-byte frame, per link direction", true, 1e-5),
      r("cnp_rate", "CNPs received per packet sent by the NICs, cluster-wide", true, 0.01),
      r("pfc_storm", "fraction of the run a RoCE port was paused by PFC", true, 0.05),
      r("link_below_peers", "a link direction's bandwidth while busy (or bytes) / the median of its kind", false, 0.5,
        "bandwidth", 1 << 20),
      r("ecmp_imbalance", "max / mean bytes over a switch's uplinks", true, 2.0, "", 1 << 20),
      r("slow_rank", "a rank's total operation time / the median rank's", true, 1.5),
      r("failed_operations", "operations whose status is not ok (failed, timeout, unfinished)", true, 0),
      r("slow_failover", "us from an injected fault to traffic resumed, per rank and fault (never resumed: fails)", true, 10000),
      r("rdma_timeouts", "RDMA retransmit timeouts, cluster-wide (counter rdma_timeouts)", true, 0),
      r("rdma_retransmits", "packets the NICs retransmitted, cluster-wide (counter rdma_retransmits)", true, 0),
      r("drops", "packets dropped, per RoCE port (port_counters.drops; counter drops)", true, 0),
      r("outlier_repetition", "a repetition's time / the median of its step's other repetitions (at least 3)", true, 10),
      r("unfired_faults", "injected faults that never fired (faults.fired = 0)", true, 0),
  };
}

struct Finding {
  std::string rule, where, when, detail;
};

// The rules file: {"rules": {"NAME": {"enabled": bool, "threshold": number, ...}}}. Unknown keys
// and rules are errors with their JSON pointer.
bool load_rules(const std::string& path, std::vector<Rule>* rules, std::vector<std::string>* errs) {
  sim::Diagnostics d(path);
  auto j = sim::read_json_file(path, d);
  if (!j) { *errs = d.messages(); return false; }
  auto err = [&](const std::string& ptr, const std::string& why) { errs->push_back(path + ": " + ptr + ": " + why); };
  if (!j->is_object()) { err("/", "expected an object {\"rules\": {...}}"); return false; }
  std::string names;
  for (auto& r : *rules) names += (names.empty() ? "" : ", ") + std::string(r.name);
  for (auto& [k, v] : j->items()) {
    if (k != "rules") { err("/" + k, "unknown key (allowed: rules)"); continue; }
    if (!v.is_object()) { err("/rules", "expected an object of rules"); continue; }
    for (auto& [name, body] : v.items()) {
      const std::string ptr = "/rules/" + name;
      auto it = std::find_if(rules->begin(), rules->end(), [&](const Rule& r) { return name == r.name; });
      if (it == rules->end()) { err(ptr, "unknown rule (allowed: " + names + ")"); continue; }
      if (!body.is_object()) { err(ptr, "expected an object"); continue; }
      std::vector<std::string> allowed = {"enabled", "threshold"};
      if (name == "link_below_peers") allowed = {"enabled", "threshold", "metric", "min_bytes"};
      if (name == "ecmp_imbalance") allowed = {"enabled", "threshold", "min_bytes"};
      std::string allowed_s;
      for (auto& a : allowed) allowed_s += (allowed_s.empty() ? "" : ", ") + a;
      for (auto& [key, val] : body.items()) {
        const std::string p = ptr + "/" + key;
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) { err(p, "unknown key (allowed: " + allowed_s + ")"); continue; }
        if (key == "enabled") {
          if (!val.is_boolean()) err(p, "expected true or false");
          else it->enabled = val.get<bool>();
        } else if (key == "metric") {
          if (!val.is_string() || (val != "bandwidth" && val != "bytes")) err(p, "expected \"bandwidth\" or \"bytes\"");
          else it->metric = val.get<std::string>();
        } else {
          if (!val.is_number() || !std::isfinite(val.get<double>()) || val.get<double>() < 0) err(p, "expected a number >= 0");
          else if (key == "threshold") it->threshold = val.get<double>();
          else it->min_bytes = val.get<double>();
        }
      }
    }
  }
  return errs->empty();
}

std::string g(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}
std::string at_us(double ns) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f us", ns / 1e3);
  return b;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct RuleResult {
  std::size_t checked = 0;   ///< objects the rule looked at
  std::string unit;          ///< "link directions", "ports", ...
  double worst = NAN;        ///< the value closest to failing
  std::string note;          ///< why it was skipped, if it was
  std::string summary;       ///< a line printed above the findings (e.g. counts per status)
  std::vector<Finding> findings;
};

int health_main(const std::vector<std::string>& argv) {
  std::string file, rules_file;
  std::size_t max_findings = 20;
  const Args args(kHealth,
                  {{"--rules", "", "FILE", "a file name", "thresholds and switches overriding the defaults (JSON, docs/tools.md#health)",
                    [&](const std::string& v) { rules_file = v; return v.empty() ? std::string("--rules needs a file name") : std::string(); }},
                   {"-n", "", "N", "a number", "findings printed per rule (default 20)",
                    [&](const std::string& v) { return parse_count("-n", v, &max_findings); }}},
                  {"DB", "the trace database (hcsim run --db)", [&](const std::string& a) {
                     if (!file.empty()) return std::string("health takes one trace database, got a second: ") + a;
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("health needs a trace database");
  std::vector<Rule> rules = default_rules();
  if (!rules_file.empty()) {
    std::vector<std::string> errs;
    if (!load_rules(rules_file, &rules, &errs)) {
      for (auto& e : errs) std::fprintf(stderr, "%s\n", e.c_str());
      return kBadInput;
    }
  }
  TraceDb db;
  std::string why;
  if (!db.open(file, &why) || !db.require_finished("health", &why)) {  // an unfinished run's rules would pass vacuously
    std::fprintf(stderr, "hcsim: %s\n", why.c_str());
    return kBadInput;
  }
  bool ok = true;
  double sim_end = 0;
  std::string topo_file;
  ok = db.query("SELECT sim_end_ns, topology FROM run WHERE id=1", [&](const Row& r) { sim_end = r.d(0); topo_file = r.s(1); }, &why);
  if (sim_end <= 0) sim_end = db.scalar("SELECT MAX(end_ns) FROM operations");

  // Fault notes that name a link or device: "when" for findings about it.
  std::vector<std::pair<double, std::string>> notes;
  if (ok && db.has_table("logs"))
    ok = db.query("SELECT sim_time_ns, message FROM logs WHERE message LIKE '%fault injected:%' ORDER BY sim_time_ns, id",
                  [&](const Row& r) { notes.emplace_back(r.d(0), r.s(1)); }, &why);
  auto when_for = [&](const std::string& object) {
    for (auto& [t, m] : notes)
      if (m.find(object) != std::string::npos) return "from " + at_us(t) + " (" + m.substr(m.find("fault injected:")) + ")";
    return std::string("by run end (") + at_us(sim_end) + ")";
  };

  struct Link { std::string name, kind, dir; double bytes, busy, retry; };
  std::vector<Link> links;
  if (ok && db.has_table("link_counters") && db.has_table("links"))
    ok = db.query("SELECT l.name, l.kind, c.direction, c.bytes, c.busy_ns, c.rx_retry FROM link_counters c JOIN links l ON l.id = c.link_id "
                  "ORDER BY l.id, c.direction",
                  [&](const Row& r) { links.push_back({r.s(0), r.s(1), r.s(2), r.d(3), r.d(4), r.d(5)}); }, &why);
  struct Port { std::string node; std::int64_t port; double tx_bytes, tx_packets, paused_ns, drops; };
  std::vector<Port> ports;
  if (ok && db.has_table("port_counters"))
    ok = db.query("SELECT node, port, tx_bytes, tx_packets, paused_ns, drops FROM port_counters ORDER BY node, port",
                  [&](const Row& r) { ports.push_back({r.s(0), r.i(1), r.d(2), r.d(3), r.d(4), r.d(5)}); }, &why);
  std::set<std::string> npu_names;
  if (ok && db.has_table("npus")) ok = db.query("SELECT name FROM npus", [&](const Row& r) { npu_names.insert(r.s(0)); }, &why);
  std::map<std::string, double> counters;
  if (ok && db.has_table("counters")) ok = db.query("SELECT name, value FROM counters", [&](const Row& r) { counters[r.s(0)] = r.d(1); }, &why);
  struct RankTime { double total = 0, longest = -1, longest_start = 0; std::uint64_t ops = 0; };
  std::map<std::int64_t, RankTime> rank_time;
  if (ok)
    // Operations that ended (a failed or unfinished one, schema 6, has no end_ns).
    ok = db.query("SELECT rank, start_ns, end_ns FROM operations WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL ORDER BY rank, start_ns, id",
                  [&](const Row& r) {
      RankTime& t = rank_time[r.i(0)];
      const double d = std::max(0.0, r.d(2) - r.d(1));
      t.total += d;
      ++t.ops;
      if (d > t.longest) { t.longest = d; t.longest_start = r.d(1); }
    }, &why);
  // Operations that did not end well (schema 6: operations.status).
  std::string run_status;
  if (ok) ok = db.query("SELECT status FROM run WHERE id=1", [&](const Row& r) { run_status = r.s(0); }, &why);
  const bool have_status = db.has_column("operations", "status");
  struct BadOp { std::int64_t rank, step, rep; std::string kind, status, error; double start, end; bool has_start, has_end; };
  std::vector<BadOp> bad_ops;
  double n_operations = 0;
  if (ok && have_status) {
    n_operations = db.scalar("SELECT COUNT(*) FROM operations");
    ok = db.query("SELECT rank, step, rep, kind, status, error, start_ns, end_ns FROM operations WHERE status IS NOT 'ok' "
                  "ORDER BY rank, step, rep, seq, id",
                  [&](const Row& r) {
                    bad_ops.push_back({r.i(0), r.i(1), r.i(2), r.s(3), r.null(4) ? "unknown" : r.s(4), r.s(5), r.d(6), r.d(7),
                                       !r.null(6), !r.null(7)});
                  }, &why);
  }
  struct Failover { std::int64_t comm, rank, op_seq, code; std::string action, fault; double fault_at, detected, resumed; bool has_fault_at, has_resumed; };
  std::vector<Failover> failovers;
  if (ok && db.has_table("failovers"))
    ok = db.query("SELECT comm, detected_by, op_seq, code, action, fault, fault_at_ns, detected_at_ns, resumed_at_ns FROM failovers "
                  "ORDER BY id",
                  [&](const Row& r) {
                    failovers.push_back({r.i(0), r.i(1), r.i(2), r.i(3), r.s(4), r.s(5), r.d(6), r.d(7), r.d(8), !r.null(6), !r.null(8)});
                  }, &why);
  struct Rep { std::int64_t step, rep; std::string kind; std::int64_t bytes; double time_us; };
  std::vector<Rep> reps;
  if (ok && db.has_table("summary"))
    ok = db.query("SELECT step, rep, kind, bytes, time_us FROM summary ORDER BY step, rep",
                  [&](const Row& r) { reps.push_back({r.i(0), r.i(1), r.s(2), r.i(3), r.d(4)}); }, &why);
  struct FaultRow { std::int64_t id; std::string type, target; bool fired; };
  std::vector<FaultRow> faults;
  const bool have_faults = db.has_table("faults");
  if (ok && have_faults)
    ok = db.query("SELECT id, type, target, fired FROM faults ORDER BY id",
                  [&](const Row& r) { faults.push_back({r.i(0), r.s(1), r.s(2), r.i(3) != 0}); }, &why);
  if (!ok) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }

  std::vector<std::pair<const Rule*, RuleResult>> results;
  for (const Rule& rule : rules) {
    RuleResult res;
    const std::string name = rule.name;
    auto consider = [&](double v) {
      if (std::isnan(res.worst) || (rule.above ? v > res.worst : v < res.worst)) res.worst = v;
      return rule.above ? v > rule.threshold : v < rule.threshold;
    };
    if (!rule.enabled) {
      res.note = "disabled";
    } else if (name == "crc_replay_rate") {
      res.unit = "HCCS link directions";
      for (auto& l : links) {
        if (l.kind != "hccs" || l.bytes <= 0) continue;
        ++res.checked;
        const double v = l.retry / std::ceil(l.bytes / 256);
        if (consider(v))
          res.findings.push_back({name, "link " + l.name + " " + l.dir, when_for(l.name),
                                  g(l.retry) + " replays over " + g(std::ceil(l.bytes / 256)) + " frames = " + g(v) + " > " + g(rule.threshold)});
      }
    } else if (name == "cnp_rate") {
      res.unit = "cluster";
      double packets = 0;
      for (auto& p : ports)
        if (npu_names.count(p.node)) packets += p.tx_packets;
      if (packets > 0 && counters.count("rdma_cnp_rcv")) {
        res.checked = 1;
        const double v = counters["rdma_cnp_rcv"] / packets;
        if (consider(v))
          res.findings.push_back({name, "cluster (all NICs)", "by run end (" + at_us(sim_end) + ")",
                                  g(counters["rdma_cnp_rcv"]) + " CNPs over " + g(packets) + " NIC packets = " + g(v) + " > " + g(rule.threshold)});
      } else {
        res.note = "no RoCE traffic";
      }
    } else if (name == "pfc_storm") {
      res.unit = "RoCE ports";
      for (auto& p : ports) {
        if (sim_end <= 0) break;
        ++res.checked;
        const double v = p.paused_ns / sim_end;
        const std::string where = p.node + ":" + std::to_string(p.port);
        if (consider(v))
          res.findings.push_back({name, "port " + where, "by run end (" + at_us(sim_end) + ")",
                                  "paused " + at_us(p.paused_ns) + " of " + at_us(sim_end) + " = " + g(v) + " > " + g(rule.threshold)});
      }
    } else if (name == "link_below_peers") {
      const bool bw = rule.metric != "bytes";
      res.unit = "link directions";
      std::map<std::string, std::vector<const Link*>> by_kind;
      for (auto& l : links)
        if (l.bytes >= rule.min_bytes && l.bytes > 0 && (!bw || l.busy > 0)) by_kind[l.kind].push_back(&l);
      for (auto& [kind, v] : by_kind) {
        if (v.size() < 3) continue;  // no meaningful peer group
        std::vector<double> vals;
        for (auto* l : v) vals.push_back(bw ? l->bytes / l->busy : l->bytes);
        const double med = median(vals);
        if (med <= 0) continue;
        for (std::size_t k = 0; k < v.size(); ++k) {
          ++res.checked;
          const double ratio = vals[k] / med;
          if (consider(ratio))
            res.findings.push_back({name, "link " + v[k]->name + " " + v[k]->dir, when_for(v[k]->name),
                                    (bw ? "bandwidth while busy " + g(vals[k]) + " GB/s" : "bytes " + g(vals[k])) + " = " + g(ratio) +
                                        " x the median of " + std::to_string(v.size()) + " " + kind + " link directions (" +
                                        g(med) + (bw ? " GB/s" : " bytes") + ") < " + g(rule.threshold)});
        }
      }
    } else if (name == "ecmp_imbalance") {
      res.unit = "switches";
      // Uplinks need the topology (the trace names ports, not what they connect to).
      bool have_switch = false;
      for (auto& p : ports)
        if (!npu_names.count(p.node)) have_switch = true;
      if (!have_switch) {
        res.note = "no switch traffic";
      } else {
        sim::Diagnostics d(topo_file);
        std::optional<sim::Topology> t;
        if (!topo_file.empty()) t = sim::load_topology(topo_file, d);
        if (!t) {
          res.note = "skipped: cannot load the run's topology " + (topo_file.empty() ? std::string("(none recorded)") : topo_file);
        } else {
          std::map<std::pair<std::string, std::int64_t>, double> bytes;
          for (auto& p : ports) bytes[{p.node, p.port}] = p.tx_bytes;
          std::map<std::uint32_t, std::vector<std::uint32_t>> up;  // switch → its uplink ports
          for (auto& l : t->links) {
            if (l.type != sim::LinkType::Roce || !l.a.is_switch || !l.b.is_switch) continue;
            const auto& sa = t->switches[l.a.index];
            const auto& sb = t->switches[l.b.index];
            if (sa.tier < sb.tier) up[l.a.index].push_back(l.a.port);
            else if (sb.tier < sa.tier) up[l.b.index].push_back(l.b.port);
          }
          for (auto& [sw, ps] : up) {
            if (ps.size() < 2) continue;
            std::vector<double> v;
            double sum = 0, mx = 0;
            std::uint32_t mx_port = ps[0];
            for (auto p : ps) {
              auto it = bytes.find({t->switches[sw].name, p});
              const double b = it == bytes.end() ? 0 : it->second;
              sum += b;
              if (b > mx) { mx = b; mx_port = p; }
            }
            if (sum < rule.min_bytes || sum <= 0) continue;
            ++res.checked;
            const double ratio = mx / (sum / static_cast<double>(ps.size()));
            if (consider(ratio))
              res.findings.push_back({name, "switch " + t->switches[sw].name + " (" + std::to_string(ps.size()) + " uplinks)",
                                      "by run end (" + at_us(sim_end) + ")",
                                      "uplink port " + std::to_string(mx_port) + " carried " + g(mx) + " bytes = " + g(ratio) +
                                          " x the mean " + g(sum / static_cast<double>(ps.size())) + " > " + g(rule.threshold)});
          }
          if (res.checked == 0) res.note = "no switch with 2 or more uplinks carrying at least min_bytes";
        }
      }
    } else if (name == "slow_rank") {
      res.unit = "ranks";
      std::vector<double> totals;
      for (auto& [r, t] : rank_time) totals.push_back(t.total);
      const double med = median(totals);
      if (rank_time.size() >= 2 && med > 0) {
        for (auto& [r, t] : rank_time) {
          ++res.checked;
          const double ratio = t.total / med;
          if (consider(ratio))
            res.findings.push_back({name, "rank " + std::to_string(r), "longest operation from " + at_us(t.longest_start),
                                    "total operation time " + at_us(t.total) + " = " + g(ratio) + " x the median " + at_us(med) +
                                        " > " + g(rule.threshold)});
        }
      } else {
        res.note = "fewer than 2 ranks with operations";
      }
    } else if (name == "failed_operations") {
      res.unit = "operations";
      if (!have_status) {
        res.note = "no operations.status (a trace before schema 6)";
      } else {
        res.checked = static_cast<std::size_t>(n_operations);
        // One finding per rank: its operations that are not ok, the first of them named.
        std::map<std::string, std::size_t> per_status;
        for (std::size_t k = 0; k < bad_ops.size();) {
          std::size_t e = k;
          std::map<std::string, std::size_t> mine;
          while (e < bad_ops.size() && bad_ops[e].rank == bad_ops[k].rank) ++mine[bad_ops[e++].status];
          for (auto& [st, n] : mine) per_status[st] += n;
          const BadOp& b = bad_ops[k];
          const double n = static_cast<double>(e - k);
          consider(n);
          if (n > rule.threshold) {
            std::string counts;
            for (auto& [st, c] : mine) counts += (counts.empty() ? "" : ", ") + st + " " + std::to_string(c);
            res.findings.push_back({name, "rank " + std::to_string(b.rank),
                                    b.has_start ? "from " + at_us(b.start) : b.has_end ? "at " + at_us(b.end) : "never started",
                                    std::to_string(e - k) + " operation(s) not ok (" + counts + "), first: step " +
                                        std::to_string(b.step) + " rep " + std::to_string(b.rep) + " " + b.kind + " " + b.status +
                                        (b.error.empty() ? "" : ": " + b.error)});
          }
          k = e;
        }
        std::set<std::int64_t> bad_ranks;
        for (auto& b : bad_ops) bad_ranks.insert(b.rank);
        if (!bad_ops.empty()) {
          res.summary = std::to_string(bad_ops.size()) + " of " + g(n_operations) + " operations not ok on " +
                        std::to_string(bad_ranks.size()) + " of " + std::to_string(npu_names.size()) + " ranks:";
          for (auto& [st, c] : per_status) res.summary += " " + st + " " + std::to_string(c);
        }
        if (bad_ops.empty() && run_status == "failed") {  // a failure with no operation row to show for it
          consider(1);
          res.findings.push_back({name, "run", "by run end (" + at_us(sim_end) + ")", "run.status is failed"});
        }
        if (std::isnan(res.worst)) res.worst = 0;
      }
    } else if (name == "slow_failover") {
      res.unit = "rank recoveries";
      if (!db.has_table("failovers")) res.note = "no failovers table (a trace before schema 7)";
      else if (failovers.empty()) res.note = "no failovers";
      // A rank's rows for one fault (an abort then a shrink, or retries) are one recovery: it
      // resumed when the last of them resumed traffic, and never if none did.
      struct Recovery { const Failover* first; std::string actions; double resumed = -1; };
      std::map<std::pair<std::int64_t, double>, Recovery> rec;
      std::vector<std::pair<std::int64_t, double>> order;
      for (auto& f : failovers) {
        if (f.action == "warn") continue;  // a non-fatal report: nothing to resume
        const std::pair<std::int64_t, double> key{f.rank, f.has_fault_at ? f.fault_at : f.detected};
        auto [it, fresh] = rec.emplace(key, Recovery{&f, f.action, -1});
        if (fresh) order.push_back(key);
        else if (it->second.actions.find(f.action) == std::string::npos) it->second.actions += ", " + f.action;
        if (f.has_resumed) it->second.resumed = std::max(it->second.resumed, f.resumed);
      }
      for (auto& key : order) {
        const Recovery& rc = rec[key];
        const Failover& f = *rc.first;
        ++res.checked;
        const double from = key.second;
        const std::string where = "rank " + std::to_string(f.rank) + " (comm " + std::to_string(f.comm) + ", op seq " +
                                  std::to_string(f.op_seq) + ", " + rc.actions + ")";
        const std::string when = (f.has_fault_at ? "fault at " : "detected at ") + at_us(from);
        if (rc.resumed < 0) {
          res.worst = INFINITY;
          res.findings.push_back({name, where, when, "never resumed (code " + std::to_string(f.code) + "): " +
                                                         (f.fault.size() > 90 ? f.fault.substr(0, 87) + "..." : f.fault)});
          continue;
        }
        const double v = (rc.resumed - from) / 1e3;
        if (consider(v))
          res.findings.push_back({name, where, when, "resumed " + g(v) + " us after the " + (f.has_fault_at ? "fault" : "detection") +
                                                         " > " + g(rule.threshold)});
      }
      if (res.checked == 0 && res.note.empty()) res.note = "no failovers that act (only warn rows)";
    } else if (name == "rdma_timeouts" || name == "rdma_retransmits") {
      res.unit = "cluster";
      auto it = counters.find(name);
      if (it == counters.end()) {
        res.note = "no counter " + name;
      } else {
        res.checked = 1;
        if (consider(it->second))
          res.findings.push_back({name, "cluster (all NICs)", "by run end (" + at_us(sim_end) + ")",
                                  g(it->second) + (name == "rdma_timeouts" ? " retransmit timeouts" : " packets retransmitted") + " > " +
                                      g(rule.threshold)});
      }
    } else if (name == "drops") {
      res.unit = "RoCE ports";
      double sum = 0;
      for (auto& p : ports) {
        ++res.checked;
        sum += p.drops;
        if (consider(p.drops))
          res.findings.push_back({name, "port " + p.node + ":" + std::to_string(p.port), when_for(p.node),
                                  g(p.drops) + " packets dropped > " + g(rule.threshold)});
      }
      // Drops the ports do not account for (the cluster counter is their sum and more).
      auto it = counters.find("drops");
      if (it != counters.end() && it->second > sum) {
        if (res.checked == 0) res.checked = 1, res.unit = "cluster";
        if (consider(it->second - sum))
          res.findings.push_back({name, "cluster (counter drops)", "by run end (" + at_us(sim_end) + ")",
                                  g(it->second) + " packets dropped, " + g(it->second - sum) + " of them at no port in port_counters > " +
                                      g(rule.threshold)});
      }
    } else if (name == "outlier_repetition") {
      res.unit = "repetitions";
      std::map<std::int64_t, std::vector<const Rep*>> by_step;
      for (auto& r : reps) by_step[r.step].push_back(&r);
      for (auto& [step, v] : by_step) {
        if (v.size() < 4) continue;  // fewer than 3 others
        for (std::size_t k = 0; k < v.size(); ++k) {
          std::vector<double> others;
          for (std::size_t j = 0; j < v.size(); ++j)
            if (j != k) others.push_back(v[j]->time_us);
          const double med = median(others);
          if (med <= 0) continue;
          ++res.checked;
          const double ratio = v[k]->time_us / med;
          if (consider(ratio))
            res.findings.push_back({name, "step " + std::to_string(step) + " rep " + std::to_string(v[k]->rep) + " (" + v[k]->kind +
                                              " " + std::to_string(v[k]->bytes) + " B)",
                                    "by run end (" + at_us(sim_end) + ")",
                                    "time " + g(v[k]->time_us) + " us = " + g(ratio) + " x the median " + g(med) + " us of its " +
                                        std::to_string(others.size()) + " other repetitions > " + g(rule.threshold)});
        }
      }
      if (res.checked == 0) res.note = "no step with 4 or more repetitions";
    } else if (name == "unfired_faults") {
      res.unit = "faults";
      if (!have_faults) res.note = "no faults table (a trace before schema 9)";
      else if (faults.empty()) res.note = "no faults injected";
      std::size_t unfired = 0;
      for (auto& f : faults) {
        ++res.checked;
        if (!f.fired) ++unfired;
      }
      if (!faults.empty() && consider(static_cast<double>(unfired)))
        for (auto& f : faults)
          if (!f.fired)
            res.findings.push_back({name, "fault " + std::to_string(f.id) + " (" + f.type + " " + f.target + ")",
                                    "run ended at " + at_us(sim_end), "never fired: its time was not reached before the run ended"});
    }
    if (res.note.empty() && res.checked == 0) res.note = "nothing to check (no " + res.unit + " with traffic)";
    results.emplace_back(&rule, std::move(res));
  }

  std::size_t failed = 0;
  std::printf("hcsim health: %s\n", file.c_str());
  std::printf("%-18s %-6s %-10s %-11s %s\n", "rule", "result", "threshold", "worst", "checked");
  for (auto& [rule, res] : results) {
    const bool fail = !res.findings.empty();
    failed += fail;
    const std::string thr = std::string(rule->above ? "> " : "< ") + g(rule->threshold);
    const std::string checked = res.note.empty() ? std::to_string(res.checked) + " " + res.unit : res.note;
    std::printf("%-18s %-6s %-10s %-11s %s\n", rule->name, fail ? "FAIL" : res.note.empty() ? "pass" : "-", thr.c_str(),
                std::isnan(res.worst) ? "-" : g(res.worst).c_str(), checked.c_str());
  }
  for (auto& [rule, res] : results) {
    if (res.findings.empty()) continue;
    std::printf("\n%s (%s): %zu finding(s)\n", rule->name, rule->what, res.findings.size());
    if (!res.summary.empty()) std::printf("  %s\n", res.summary.c_str());
    for (std::size_t k = 0; k < res.findings.size() && k < max_findings; ++k) {
      const Finding& f = res.findings[k];
      std::printf("  FAIL %s: %s, %s: %s\n", f.rule.c_str(), f.where.c_str(), f.when.c_str(), f.detail.c_str());
    }
    if (res.findings.size() > max_findings) std::printf("  ... and %zu more (-n to show more)\n", res.findings.size() - max_findings);
  }
  std::printf("\nhcsim health: %zu of %zu rules failed\n", failed, results.size());
  return failed ? kExpectationFailed : kOk;
}

}  // namespace

const Command kHealth = {
    "health", "health DB [--rules FILE] [-n N]",
    "        check a trace against health rules (CRC replays, CNPs, PFC storms, links below their\n"
    "        peers, ECMP imbalance, slow ranks, failed operations, slow failovers, RDMA timeouts and\n"
    "        retransmits, drops, outlier repetitions, unfired faults); exit 1 when a rule fails\n",
    health_main};

}  // namespace hcsim
