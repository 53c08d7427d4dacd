// hcsim top: the hcomm_top view of a finished trace (docs/tools.md#top); rendering in top_view.cpp.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "top_view.h"
#include "trace_db.h"

namespace hcsim {
namespace {

int top_main(const std::vector<std::string>& argv) {
  std::string file;
  TopOptions opt;
  const Args args(kTop,
                  {{"-n", "", "N", "a number", "rows per table (default 10)",
                    [&](const std::string& v) { return parse_count("-n", v, &opt.rows); }}},
                  {"DB", "the trace database (hcsim run --db)", [&](const std::string& a) {
                     if (!file.empty()) return std::string("top takes one trace database, got a second: ") + a;
                     file = a;
                     return std::string();
                   }});
  if (auto rc = args.parse(argv)) return *rc;
  if (file.empty()) return args.usage_error("top needs a trace database");
  TraceDb db;
  std::string why;
  if (!db.open(file, &why)) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  db.print_banner();
  TopData d;
  const std::string no_end = db.state() == TraceState::kBeingWritten ? "being written (running)" : "unfinished (killed?)";
  if (db.state() != TraceState::kFinished) d.status = no_end;  // also without a run row
  bool ok = db.query("SELECT scenario, status, sim_end_ns FROM run WHERE id=1", [&](const Row& r) {
    d.title = r.s(0);
    d.status = db.state() == TraceState::kFinished ? r.s(1) : no_end;
    d.sim_ns = r.d(2);
  }, &why);
  std::map<std::int64_t, TopRank> ranks;
  if (ok && db.has_table("npus"))
    ok = db.query("SELECT id, name FROM npus ORDER BY id", [&](const Row& r) {
      TopRank& t = ranks[r.i(0)];
      t.rank = r.i(0);
      t.name = r.s(1);
    }, &why);
  ok = ok && db.query("SELECT rank, COUNT(*), TOTAL(end_ns - start_ns), MAX(end_ns) FROM operations"
                      " WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL GROUP BY rank ORDER BY rank",  // operations that ended
                      [&](const Row& r) {
                        TopRank& t = ranks[r.i(0)];
                        t.rank = r.i(0);
                        t.ops = static_cast<std::uint64_t>(r.i(1));
                        t.op_time_ns = r.d(2);
                        if (d.sim_ns <= 0) d.sim_ns = std::max(d.sim_ns, r.d(3));  // an unfinished run: its last operation
                      },
                      &why);
  for (auto& [k, t] : ranks) d.ranks.push_back(t);
  if (ok && db.has_table("link_counters") && db.has_table("links"))
    ok = db.query("SELECT l.name, l.kind, c.direction, c.bytes, c.busy_ns, c.rx_retry FROM link_counters c JOIN links l ON l.id = c.link_id "
                  "ORDER BY l.id, c.direction",
                  [&](const Row& r) {
                    d.links.push_back({r.s(0), r.s(1), r.s(2), static_cast<std::uint64_t>(r.i(3)), r.d(4), static_cast<std::uint64_t>(r.i(5))});
                  },
                  &why);
  if (ok && db.has_table("port_counters"))
    ok = db.query("SELECT node, port, tx_bytes, drops, ecn_marked, pause_sent, paused_ns FROM port_counters ORDER BY node, port",
                  [&](const Row& r) {
                    TopPort p;
                    p.node = r.s(0);
                    p.port = r.i(1);
                    p.tx_bytes = static_cast<std::uint64_t>(r.i(2));
                    p.drops = static_cast<std::uint64_t>(r.i(3));
                    p.ecn_marked = static_cast<std::uint64_t>(r.i(4));
                    p.pause_sent = static_cast<std::uint64_t>(r.i(5));
                    p.paused_ns = r.d(6);
                    d.ports.push_back(p);
                  },
                  &why);
  if (ok && db.has_table("counters")) {
    std::map<std::string, double> c;
    ok = db.query("SELECT name, value FROM counters", [&](const Row& r) { c[r.s(0)] = r.d(1); }, &why);
    for (const char* n : {"drops", "ecn_marked", "rdma_cnp_rcv", "pfc_pause_sent", "hccs_rx_retry_cnt", "rdma_retransmits",
                          "rdma_timeouts", "rdma_access_errors", "hccs_credit_stall_ns", "pcie_flow_ctrl_ns"})
      if (c.count(n)) d.errors.emplace_back(n, c[n]);
  }
  d.have_faults = db.has_table("faults");
  if (ok && d.have_faults)
    ok = db.query("SELECT id, type, target, fired, injected_at_ns, first_detected_ns, last_detected_ns, resumed_at_ns, actions, "
                  "step, rep, op_time_us, median_us FROM faults ORDER BY id",
                  [&](const Row& r) {
                    TopFault f;
                    f.id = r.i(0);
                    f.type = r.s(1);
                    f.target = r.s(2);
                    f.fired = r.i(3) != 0;
                    f.injected_ns = r.null(4) ? -1 : r.d(4);
                    f.first_detected_ns = r.null(5) ? -1 : r.d(5);
                    f.last_detected_ns = r.null(6) ? -1 : r.d(6);
                    f.resumed_ns = r.null(7) ? -1 : r.d(7);
                    f.actions = r.s(8);
                    f.step = r.null(9) ? -1 : r.i(9);
                    f.rep = r.null(10) ? -1 : r.i(10);
                    f.op_time_us = r.null(11) ? -1 : r.d(11);
                    f.median_us = r.null(12) ? -1 : r.d(12);
                    d.faults.push_back(f);
                  },
                  &why);
  if (ok && db.has_column("failovers", "action") && db.has_column("failovers", "resumed_at_ns"))
    ok = db.query("SELECT detected_by, action, fault_at_ns, detected_at_ns, resumed_at_ns FROM failovers ORDER BY id",
                  [&](const Row& r) {
                    d.failovers.push_back({r.i(0), r.s(1), r.null(2) ? -1 : r.d(2), r.d(3), r.null(4) ? -1 : r.d(4)});
                  },
                  &why);
  if (!ok) { std::fprintf(stderr, "hcsim: %s\n", why.c_str()); return kBadInput; }
  std::fputs(render_top(d, opt).c_str(), stdout);
  return kOk;
}

}  // namespace

const Command kTop = {
    "top", "top DB [-n N]",
    "        the hcomm_top view of a finished trace: sim time, operations per rank, the slowest\n"
    "        ranks, the busiest HCCS/PCIe links and RoCE ports, error counters, faults and failovers\n",
    top_main};

}  // namespace hcsim
