// The trace-reading commands (docs/tools.md): hcsim trace, top, health, plot, and hcomm_test
// --plot, against traces made by running the simulator on small fixtures.
// Usage: obs_tools_test HCSIM HCOMM_TEST (SOURCE_DIR is compiled in).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "svg_plot.h"
#include "top_view.h"

namespace {

std::string g_hcsim, g_hcomm_test, g_tmp;
const std::string kSrc = HCSIM_SOURCE_DIR;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string quote(const std::string& a) {
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs argv in g_tmp with stdout and stderr captured.
Result run(const std::vector<std::string>& argv) {
  std::string cmd = "cd " + quote(g_tmp) + " &&";
  for (auto& a : argv) cmd += " " + quote(a);
  cmd += " > " + quote(g_tmp + "/cmd.out") + " 2> " + quote(g_tmp + "/cmd.err");
  const int st = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(g_tmp + "/cmd.out");
  r.err = slurp(g_tmp + "/cmd.err");
  return r;
}

std::string path(const std::string& f) { return g_tmp + "/" + f; }

// Traces made once for every test.
class ObsTools : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (auto [fixture, db] : std::vector<std::pair<std::string, std::string>>{{"small.json", "small.db"},
                                                                               {"lane-degrade.json", "lane.db"},
                                                                               {"crc-small.json", "crc.db"},
                                                                               {"sizes-2node.json", "sizes.db"},
                                                                               {"clos3-traffic.json", "clos3.db"},
                                                                               {"clos3-barrier.json", "barrier.db"}}) {
      Result r = run({g_hcsim, "run", kSrc + "/tests/fixtures/" + fixture, "--db", db, "-q"});
      ASSERT_EQ(r.code, 0) << fixture << ": " << r.out << r.err;
    }
  }
};

sqlite3* open_db(const std::string& p) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  return db;
}

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << " in " << sql;
}

std::vector<std::int64_t> ints(const std::string& db_path, const std::string& sql) {
  sqlite3* db = open_db(db_path);
  sqlite3_stmt* s = nullptr;
  std::vector<std::int64_t> v;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
  while (sqlite3_step(s) == SQLITE_ROW) v.push_back(sqlite3_column_int64(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

void copy_file(const std::string& from, const std::string& to) {
  std::ofstream(to, std::ios::binary) << slurp(from);
}

// The trace-event format: every event has ph, ts, pid, tid; X events dur >= 0; names strings.
nlohmann::json export_and_check(const std::vector<std::string>& extra, const std::string& db, const std::string& out) {
  std::vector<std::string> argv = {g_hcsim, "trace", db, "-o", out};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Result r = run(argv);
  EXPECT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(slurp(path(out)));  // throws (fails the test) if not JSON
  EXPECT_TRUE(j.is_object());
  EXPECT_TRUE(j["traceEvents"].is_array());
  for (auto& e : j["traceEvents"]) {
    const bool good = e.contains("ph") && e["ph"].is_string() && e.contains("ts") && e["ts"].is_number() && e.contains("pid") &&
                      e["pid"].is_number_integer() && e.contains("tid") && e["tid"].is_number_integer() && e.contains("name") &&
                      e["name"].is_string();
    EXPECT_TRUE(good) << "lacks ph, ts, pid, tid or a string name: " << e.dump();
    if (!good) return j;
    const std::string ph = e["ph"];
    EXPECT_TRUE(ph == "X" || ph == "M" || ph == "C" || ph == "i") << e.dump();
    if (ph == "X") {
      EXPECT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e.value("dur", -1.0), 0) << e.dump();
    }
    if (ph == "i") {  // global (faults, failovers), or on a rank's track (an operation that never started)
      EXPECT_TRUE(e["s"] == "g" || (e["s"] == "t" && e.value("cat", "") == "op")) << e.dump();
    }
    if (ph == "M") {
      EXPECT_TRUE(e["args"].is_object());
    }
  }
  // Every slice is on a named thread of a named process.
  std::set<std::pair<std::int64_t, std::int64_t>> threads;
  std::set<std::int64_t> processes;
  for (auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.emplace(e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>());
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["pid"].get<std::int64_t>());
  }
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X") {
      EXPECT_TRUE(threads.count({e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>()})) << e.dump();
      EXPECT_TRUE(processes.count(e["pid"].get<std::int64_t>())) << e.dump();
    }
  return j;
}

std::multiset<std::int64_t> op_ids(const nlohmann::json& j) {
  std::multiset<std::int64_t> ids;
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e.value("cat", "") == "op") ids.insert(e["args"]["id"].get<std::int64_t>());
  return ids;
}

TEST_F(ObsTools, TraceEveryOperationOnce) {
  for (std::string db : {"small.db", "lane.db", "sizes.db", "clos3.db", "barrier.db"}) {
    SCOPED_TRACE(db);
    auto j = export_and_check({}, db, db + ".json");
    auto ids = ints(path(db), "SELECT id FROM operations ORDER BY id");
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(op_ids(j), std::multiset<std::int64_t>(ids.begin(), ids.end()));
    for (auto& e : j["traceEvents"])
      if (e["ph"] == "X") {
        EXPECT_TRUE(e["args"].contains("algorithm"));
        EXPECT_TRUE(e["args"].contains("chosen_by"));
        EXPECT_TRUE(e["args"].contains("est_us"));
        EXPECT_TRUE(e["args"].contains("runner_up"));
        EXPECT_TRUE(e["args"].contains("bytes"));
      }
  }
}

TEST_F(ObsTools, TraceDeterministic) {
  export_and_check({"--detail", "all"}, "clos3.db", "a.json");
  export_and_check({"--detail", "all"}, "clos3.db", "b.json");
  EXPECT_EQ(slurp(path("a.json")), slurp(path("b.json")));
}

TEST_F(ObsTools, TraceFaultIsAGlobalInstant) {
  auto j = export_and_check({}, "lane.db", "lane.json");
  int faults = 0;
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "i") {
      ++faults;
      EXPECT_NE(e["name"].get<std::string>().find("degraded to 2 lanes"), std::string::npos);
    }
  EXPECT_EQ(faults, 1);
}

TEST_F(ObsTools, TraceFilters) {
  auto j = export_and_check({"--ranks", "0-1,5"}, "sizes.db", "r.json");
  std::set<std::int64_t> ranks;
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X") ranks.insert(e["tid"].get<std::int64_t>() / 1024);
  EXPECT_EQ(ranks, (std::set<std::int64_t>{0, 1, 5}));
  auto ids = ints(path("sizes.db"), "SELECT id FROM operations WHERE rank IN (0,1,5)");
  EXPECT_EQ(op_ids(j), std::multiset<std::int64_t>(ids.begin(), ids.end()));
  // A time window keeps exactly the operations overlapping it.
  j = export_and_check({"--from", "100us", "--to", "0.5ms"}, "sizes.db", "w.json");
  ids = ints(path("sizes.db"), "SELECT id FROM operations WHERE end_ns >= 100000 AND start_ns <= 500000");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(op_ids(j), std::multiset<std::int64_t>(ids.begin(), ids.end()));
}

// The optional tables (tasks, counter_samples, failovers) when a trace has them.
TEST_F(ObsTools, TraceOptionalTables) {
  copy_file(path("small.db"), path("extra.db"));
  sqlite3* db = open_db(path("extra.db"));
  // Schema 4 traces carry empty tasks / counter_samples tables: replace them with known rows.
  exec(db, "DROP TABLE IF EXISTS tasks");
  exec(db, "DROP TABLE IF EXISTS counter_samples");
  exec(db, "CREATE TABLE tasks(rank INTEGER, stream INTEGER, op_seq INTEGER, kind TEXT, start_ns REAL, end_ns REAL, bytes INTEGER, peer INTEGER)");
  exec(db, "INSERT INTO tasks VALUES(0,0,0,'sdma_copy',100,200,4096,1),(0,0,0,'notify_record',200,210,0,1),"
           "(0,1,0,'notify_wait',150,260,0,2),(3,0,1,'reduce',300,450,8192,-1)");
  exec(db, "CREATE TABLE counter_samples(t_ns REAL, interval_ns REAL, kind TEXT, object TEXT, metric TEXT, value REAL)");
  exec(db, "INSERT INTO counter_samples VALUES(1000,1000,'link','server0/hccs0-1','util',0.5),(2000,1000,'link','server0/hccs0-1','util',0),"
           "(1000,1000,'link','server0/hccs0-1','bytes',14000),(1000,1000,'port','leaf0:3','queue_bytes',4096)");
  exec(db, "DROP TABLE IF EXISTS failovers");  // schema 7 has one (empty here): replace it with another shape
  exec(db, "CREATE TABLE failovers(t_ns REAL, rank INTEGER, from_link TEXT, to_link TEXT)");
  exec(db, "INSERT INTO failovers VALUES(1500, 2, 'server0/hccs2-3', 'roce')");
  sqlite3_close(db);
  auto j = export_and_check({"--detail", "all"}, "extra.db", "extra.json");
  int tasks = 0, counters = 0, busy = 0, failovers = 0;
  std::set<std::int64_t> task_tids;
  for (auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "task") { ++tasks; task_tids.insert(e["tid"].get<std::int64_t>()); }
    if (e["ph"] == "C") ++counters;
    if (e["ph"] == "X" && e["cat"] == "link") {
      ++busy;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.0);  // the interval [1000, 2000) ns
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.0);
    }
    if (e["ph"] == "i" && e["cat"] == "failover") ++failovers;
  }
  EXPECT_EQ(tasks, 4);
  EXPECT_EQ(task_tids.size(), 3u);  // (0,0), (0,1), (3,0)
  EXPECT_EQ(counters, 4);
  EXPECT_EQ(busy, 1);  // util > 0 only
  EXPECT_EQ(failovers, 1);
  // --detail ops leaves tasks and counters out; tasks adds the tasks only.
  j = export_and_check({}, "extra.db", "ops.json");
  for (auto& e : j["traceEvents"]) EXPECT_TRUE(e["ph"] != "C" && e.value("cat", "") != "task");
  j = export_and_check({"--detail", "tasks"}, "extra.db", "tasks.json");
  tasks = counters = 0;
  for (auto& e : j["traceEvents"]) {
    tasks += e.value("cat", "") == "task";
    counters += e["ph"] == "C";
  }
  EXPECT_EQ(tasks, 4);
  EXPECT_EQ(counters, 0);
}

// A trace of schema version 2 (no selection columns) still exports.
TEST_F(ObsTools, TraceSchemaV2) {
  copy_file(path("small.db"), path("v2.db"));
  sqlite3* db = open_db(path("v2.db"));
  exec(db, "ALTER TABLE operations DROP COLUMN chosen_by");
  sqlite3_close(db);
  auto j = export_and_check({}, "v2.db", "v2.json");
  EXPECT_EQ(op_ids(j).size(), ints(path("v2.db"), "SELECT id FROM operations").size());
}

TEST_F(ObsTools, BadInput) {
  std::ofstream(path("text.db")) << "not a database\n";
  sqlite3* db = open_db(path("other.db"));
  exec(db, "CREATE TABLE t(x)");
  sqlite3_close(db);
  for (std::string cmd : {"trace", "top", "health", "plot"}) {
    SCOPED_TRACE(cmd);
    Result r = run({g_hcsim, cmd, "missing.db"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("missing.db: cannot open: No such file"), std::string::npos) << r.err;
    r = run({g_hcsim, cmd, "text.db"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("text.db: not an hcsim trace (not an SQLite database)"), std::string::npos) << r.err;
    r = run({g_hcsim, cmd, "other.db"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("other.db: not an hcsim trace"), std::string::npos) << r.err;
    r = run({g_hcsim, cmd, "small.db", "--frobnicate"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("unknown option --frobnicate"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("usage: hcsim " + cmd + " "), std::string::npos) << r.err;
    r = run({g_hcsim, cmd});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("needs a trace database"), std::string::npos) << r.err;
    r = run({g_hcsim, cmd, "--help"});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("usage: hcsim " + cmd + " DB"), std::string::npos) << r.out;
  }
  for (auto bad : std::vector<std::vector<std::string>>{{"--ranks", "3-1"}, {"--ranks", "x"}, {"--ranks", "0-99"},
                                                        {"--from", "10parsecs"}, {"--to", "-1us"}, {"--from", "2ms", "--to", "1ms"},
                                                        {"--detail", "everything"}}) {
    std::vector<std::string> argv = {g_hcsim, "trace", "small.db", "-o", "bad.json"};
    argv.insert(argv.end(), bad.begin(), bad.end());
    Result r = run(argv);
    EXPECT_EQ(r.code, 2) << bad[0] << " " << bad[1];
    EXPECT_FALSE(r.err.empty());
  }
  // -o never overwrites the trace being read, and a failed write is exit 2 (a device stays a device).
  for (std::string cmd : {"trace", "plot"}) {
    const std::string before = slurp(path("sizes.db"));
    Result r = run({g_hcsim, cmd, "sizes.db", "-o", "./sizes.db"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("-o ./sizes.db is the same file as input DB sizes.db"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(path("sizes.db")), before);
  }
  if (access("/dev/full", W_OK) == 0) {
    Result r = run({g_hcsim, "trace", "small.db", "-o", "/dev/full"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("/dev/full: cannot write"), std::string::npos) << r.err;
    struct stat st {};
    EXPECT_TRUE(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
  }
  Result r = run({g_hcsim, "plot", "barrier.db", "-o", "b.svg"});
  // clos3-barrier has a 64 KiB all-reduce besides the barrier: plottable.
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(ObsTools, Top) {
  for (std::string db : {"small.db", "lane.db", "clos3.db"}) {
    SCOPED_TRACE(db);
    Result a = run({g_hcsim, "top", db}), b = run({g_hcsim, "top", db});
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    for (const char* h : {"sim time", "OPERATIONS PER RANK", "slowest ranks", "BUSIEST HCCS LINKS", "BUSIEST PCIE LINKS",
                          "BUSIEST ROCE PORTS", "ERRORS"})
      EXPECT_NE(a.out.find(h), std::string::npos) << h << "\n" << a.out;
    std::istringstream in(a.out);
    for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), 100u) << line;
  }
  // The degraded link is the busiest HCCS link direction.
  Result r = run({g_hcsim, "top", "lane.db", "-n", "2"});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("BUSIEST HCCS LINKS[^\n]*\n[^\n]*\n  server0/hccs0-1 "))) << r.out;
  r = run({g_hcsim, "top", "clos3.db"});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  (leaf|spine|core)[0-9]+:[0-9]+ +[0-9.]+ MiB"))) << r.out;
}

TEST(TopView, RendersFromPlainNumbers) {
  hcsim::TopData d;
  d.title = "t";
  d.status = "running";
  d.sim_ns = 1000;
  d.ranks = {{0, "a/npu0", 5, 500}, {1, "a/npu1", 3, 400}, {2, "a/npu2", 5, 900}};
  d.links = {{"a/hccs0-1", "hccs", "ab", 1000, 500, 2}, {"a/hccs0-2", "hccs", "ab", 0, 0, 0}};
  d.ports = {{"leaf0", 1, 2000, 3, 4, 5, 100}};
  d.errors = {{"drops", 3}};
  const std::string s = hcsim::render_top(d);
  EXPECT_NE(s.find("done:          min 3  median 5  max 5"), std::string::npos) << s;
  // Slowest first: fewest done (rank 1), then the longest op time (rank 2 before rank 0).
  EXPECT_LT(s.find("\n         1  a/npu1"), s.find("\n         2  a/npu2")) << s;
  EXPECT_LT(s.find("\n         2  a/npu2"), s.find("\n         0  a/npu0")) << s;
  EXPECT_NE(s.find("(1 of 2 link directions carried traffic)"), std::string::npos) << s;
  EXPECT_NE(s.find("50.0%"), std::string::npos) << s;  // busy 500 of 1000 ns
  EXPECT_NE(s.find("leaf0:1"), std::string::npos) << s;
  EXPECT_NE(s.find("drops 3"), std::string::npos) << s;
  EXPECT_EQ(s, hcsim::render_top(d));
}

TEST_F(ObsTools, HealthCleanRunPasses) {
  Result r = run({g_hcsim, "health", "small.db"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 of 13 rules failed"), std::string::npos) << r.out;
  for (const char* rule : {"crc_replay_rate", "cnp_rate", "pfc_storm", "link_below_peers", "ecmp_imbalance", "slow_rank",
                           "failed_operations", "slow_failover", "rdma_timeouts", "rdma_retransmits", "drops",
                           "outlier_repetition", "unfired_faults"})
    EXPECT_NE(r.out.find(rule), std::string::npos) << rule;
}

TEST_F(ObsTools, HealthFindsDegradedLane) {
  Result r = run({g_hcsim, "health", "lane.db"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("FAIL link_below_peers: link server0/hccs0-1 ab, from 0\\.000 us \\(fault injected: "
                                                  "HCCS link server0/hccs0-1 degraded to 2 lanes\\): bandwidth while busy [0-9.]+ GB/s = "
                                                  "0\\.25 x the median")))
      << r.out;
  // Only that link (both directions).
  EXPECT_EQ(std::regex_search(r.out, std::regex("FAIL link_below_peers: link server0/hccs[^0]")), false) << r.out;
  // The same run passes once the rule is relaxed and slow_rank is off.
  std::ofstream(path("relaxed.json")) << R"({"rules": {"link_below_peers": {"threshold": 0.2}, "slow_rank": {"enabled": false}}})";
  r = run({g_hcsim, "health", "lane.db", "--rules", "relaxed.json"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("slow_rank          -      > 1.5      -           disabled"), std::string::npos) << r.out;
}

TEST_F(ObsTools, HealthFindsCrcReplays) {
  Result r = run({g_hcsim, "health", "crc.db"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("FAIL crc_replay_rate: link server0/hccs2-3 (ab|ba), from 0\\.000 us"))) << r.out;
}

TEST_F(ObsTools, HealthEcmpImbalance) {
  Result r = run({g_hcsim, "health", "clos3.db"});
  EXPECT_NE(r.code, 2) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("ecmp_imbalance +pass +> 2 +[0-9.]+ +[0-9]+ switches"))) << r.out;
  std::ofstream(path("ecmp.json")) << R"({"rules": {"ecmp_imbalance": {"threshold": 1.1, "min_bytes": 0}}})";
  r = run({g_hcsim, "health", "clos3.db", "--rules", "ecmp.json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("FAIL ecmp_imbalance: switch (leaf|spine)[0-9]+ \\(2 uplinks\\)"))) << r.out;
}

TEST_F(ObsTools, HealthRulesFileErrors) {
  struct Case { const char* text; const char* message; };
  for (const Case& c : {Case{R"({"rules": {"link_below_peers": {"treshold": 0.2}}})",
                             "bad.json: /rules/link_below_peers/treshold: unknown key (allowed: enabled, threshold, metric, min_bytes)"},
                        Case{R"({"rules": {"slow_ranks": {}}})", "bad.json: /rules/slow_ranks: unknown rule (allowed: crc_replay_rate"},
                        Case{R"({"rule": {}})", "bad.json: /rule: unknown key (allowed: rules)"},
                        Case{R"({"rules": {"pfc_storm": {"threshold": "high"}}})", "bad.json: /rules/pfc_storm/threshold: expected a number >= 0"},
                        Case{R"({"rules": {"link_below_peers": {"metric": "latency"}}})",
                             "bad.json: /rules/link_below_peers/metric: expected \"bandwidth\" or \"bytes\""},
                        Case{R"({"rules": )", "bad.json: /: not valid JSON"}}) {
    std::ofstream(path("bad.json")) << c.text;
    Result r = run({g_hcsim, "health", "small.db", "--rules", "bad.json"});
    EXPECT_EQ(r.code, 2) << c.text;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  Result r = run({g_hcsim, "health", "small.db", "--rules", "nope.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
}

// A simple well-formedness check: tags balance, one root <svg>.
bool well_formed(const std::string& s, std::string* why) {
  std::vector<std::string> stack;
  int roots = 0;
  for (std::size_t i = 0; (i = s.find('<', i)) != std::string::npos;) {
    const std::size_t e = s.find('>', i);
    if (e == std::string::npos) { *why = "unterminated tag"; return false; }
    std::string tag = s.substr(i + 1, e - i - 1);
    i = e + 1;
    if (tag.empty()) { *why = "empty tag"; return false; }
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) { *why = "</" + name + "> does not close " + (stack.empty() ? "anything" : stack.back()); return false; }
      stack.pop_back();
      continue;
    }
    const bool self = tag.back() == '/';
    const std::string name = tag.substr(0, tag.find_first_of(" /\n"));
    if (stack.empty()) ++roots;
    if (!self) stack.push_back(name);
    if (std::count(tag.begin(), tag.end(), '"') % 2) { *why = "odd quotes in <" + tag + ">"; return false; }
  }
  if (!stack.empty()) { *why = "unclosed <" + stack.back() + ">"; return false; }
  if (roots != 1) { *why = std::to_string(roots) + " root elements"; return false; }
  return s.find("<svg") != std::string::npos;
}

// The polylines' points: x increases along each.
std::vector<std::vector<std::pair<double, double>>> polylines(const std::string& s) {
  std::vector<std::vector<std::pair<double, double>>> v;
  std::regex re("<polyline[^>]* points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it) {
    std::vector<std::pair<double, double>> pts;
    std::istringstream in((*it)[1].str());
    std::string p;
    while (in >> p) {
      const auto c = p.find(',');
      pts.emplace_back(std::stod(p.substr(0, c)), std::stod(p.substr(c + 1)));
    }
    v.push_back(pts);
  }
  return v;
}

void check_svg(const std::string& svg, std::size_t series) {
  std::string why;
  EXPECT_TRUE(well_formed(svg, &why)) << why;
  auto lines = polylines(svg);
  EXPECT_EQ(lines.size(), series);
  for (auto& l : lines) {
    ASSERT_FALSE(l.empty());
    for (std::size_t k = 1; k < l.size(); ++k) EXPECT_GT(l[k].first, l[k - 1].first);
  }
}

TEST(SvgPlot, OnePolylinePerSeriesMonotoneInSize) {
  hcsim::PlotSpec spec;
  spec.title = "a <title> & more";
  const std::string svg = hcsim::svg_line_plot(spec, {{"ring", {{1 << 20, 30}, {1024, 1}, {64 << 20, 100}}},
                                                      {"NHR", {{4096, 2}, {1 << 20, 40}}},
                                                      {"empty", {}},
                                                      {"bad", {{0, 1}}}});
  check_svg(svg, 2);
  EXPECT_NE(svg.find("a &lt;title&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find(">1K<"), std::string::npos);
  EXPECT_NE(svg.find(">64M<"), std::string::npos);
  EXPECT_NE(svg.find("(log 2)"), std::string::npos);
  EXPECT_EQ(hcsim::size_label(65536), "64K");
  EXPECT_EQ(hcsim::size_label(3), "3");
}

TEST_F(ObsTools, PlotFromSummary) {
  Result r = run({g_hcsim, "plot", "sizes.db", "-o", "sizes.svg"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = slurp(path("sizes.svg"));
  check_svg(svg, 3);  // allreduce mesh+ring, sendrecv p2p-hccs, sendrecv p2p-roce
  for (const char* s : {"allreduce mesh+ring", "sendrecv p2p-hccs", "sendrecv p2p-roce", "busbw (GB/s)", "size (bytes)"})
    EXPECT_NE(svg.find(s), std::string::npos) << s;
  r = run({g_hcsim, "plot", "sizes.db"});
  EXPECT_EQ(r.out, svg);  // deterministic, stdout by default
}

TEST_F(ObsTools, HcommTestPlot) {
  Result r = run({g_hcomm_test, "allreduce", "-b", "64K", "-e", "4M", "-f", "4", "-n", "1", "-w", "0", "-c", "0", "--plot", "ht.svg"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string svg = slurp(path("ht.svg"));
  check_svg(svg, 1);
  EXPECT_NE(svg.find("allreduce mesh"), std::string::npos) << svg;
  EXPECT_EQ(polylines(svg)[0].size(), 4u);  // 64K 256K 1M 4M
  r = run({g_hcomm_test, "allreduce", "-b", "64K", "-e", "64K", "--plot", "/nonexistent-dir/x.svg"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--plot: cannot write /nonexistent-dir/x.svg"), std::string::npos) << r.err;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: obs_tools_test HCSIM HCOMM_TEST\n");
    return 2;
  }
  char* a = realpath(argv[1], nullptr);
  char* b = realpath(argv[2], nullptr);
  if (!a || !b) {
    std::fprintf(stderr, "obs_tools_test: %s or %s does not exist\n", argv[1], argv[2]);
    return 2;
  }
  g_hcsim = a;
  g_hcomm_test = b;
  std::free(a);
  std::free(b);
  char tmpl[] = "/tmp/obs_tools_test.XXXXXX";
  if (!mkdtemp(tmpl)) return 2;
  g_tmp = tmpl;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  const int rc = RUN_ALL_TESTS();
  std::system(("rm -rf " + quote(g_tmp)).c_str());
  return rc;
}
