// sim/ pieces that need no kernel: units, strict JSON reading, topology validation, payload checks.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>
#include <fstream>

#include "sim/config/json_reader.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/config/units.h"
#include "sim/payload.h"
#include "sim/trace.h"

using namespace sim;

TEST(Units, Bandwidth) {
  std::string why;
  EXPECT_EQ(parse_bandwidth("28GB/s", &why), 28000000000ULL);
  EXPECT_EQ(parse_bandwidth("200Gb/s", &why), 25000000000ULL);
  EXPECT_EQ(parse_bandwidth("1.6TB/s", &why), 1600000000000ULL);
  EXPECT_EQ(parse_bandwidth("1GiB/s", &why), 1073741824ULL);
  EXPECT_FALSE(parse_bandwidth("28GB", &why));
  EXPECT_FALSE(parse_bandwidth("-5GB/s", &why));
  EXPECT_NE(why.find("negative"), std::string::npos);
  EXPECT_FALSE(parse_bandwidth("fast", &why));
  EXPECT_FALSE(parse_bandwidth("0GB/s", &why));
  EXPECT_FALSE(parse_bandwidth("1e400GB/s", &why));
}

TEST(Units, SizeAndDuration) {
  std::string why;
  EXPECT_EQ(parse_size("64MiB", &why), 64ULL << 20);
  EXPECT_EQ(parse_size("64GB", &why), 64000000000ULL);
  EXPECT_EQ(parse_size("512 B", &why), 512u);
  EXPECT_FALSE(parse_size("64", &why));
  EXPECT_FALSE(parse_size("99999999999999999999999TiB", &why));
  EXPECT_EQ(parse_duration("500ns", &why), 500000u);
  EXPECT_EQ(parse_duration("0.5us", &why), 500000u);
  EXPECT_EQ(parse_duration("1.5\xC2\xB5s", &why), 1500000u);
  EXPECT_EQ(parse_duration("2ms", &why), 2000000000u);
  EXPECT_FALSE(parse_duration("3 fortnights", &why));
}

namespace {
json a2() {
  return json::parse(R"({"format":"hcsim-topology","version":1,"name":"t","servers":[
    {"name":"s0","type":"atlas800t-a2","host_ip":"10.0.0.1"}]})");
}
std::vector<std::string> errors_of(const json& j) {
  Diagnostics d("t.json");
  topology_from_json(j, d);
  return d.messages();
}
bool has(const std::vector<std::string>& v, const std::string& needle) {
  for (auto& s : v) if (s.find(needle) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(Topology, A2PresetHasFullMesh) {
  Diagnostics d("t.json");
  auto t = topology_from_json(a2(), d);
  ASSERT_TRUE(t) << (d.messages().empty() ? "" : d.messages()[0]);
  EXPECT_EQ(t->npus.size(), 8u);
  EXPECT_EQ(t->links.size(), 8u * 7 / 2);  // full mesh: n(n-1)/2
  for (auto& l : t->links) {
    EXPECT_EQ(l.params.bandwidth_Bps, 28000000000ULL);
    EXPECT_EQ(l.params.latency_ps, 500000u);
  }
  EXPECT_EQ(t->npus[0].params.hbm.capacity_bytes, 64ULL << 30);
}

TEST(Topology, EveryRuleReportsFileAndPointer) {
  json j = a2();
  j["servers"][0]["colour"] = "blue";
  EXPECT_TRUE(has(errors_of(j), "t.json: /servers/0/colour: unknown key"));
  j = a2();
  j["servers"][0]["hccs"] = {{"bandwidth", "28GB"}};
  EXPECT_TRUE(has(errors_of(j), "t.json: /servers/0/hccs/bandwidth: bandwidth needs a unit"));
  j = a2();
  j["servers"].push_back(j["servers"][0]);
  auto e = errors_of(j);
  EXPECT_TRUE(has(e, "/servers/1/name: duplicate device name \"s0\""));
  EXPECT_TRUE(has(e, "/servers/1/host_ip: IP 10.0.0.1 of s0 is already used by s0"));
  j = a2();
  j["servers"][0].erase("host_ip");
  EXPECT_TRUE(has(errors_of(j), "/servers/0/host_ip: missing required key"));
  j = a2();
  j["servers"][0]["npus"] = {{"count", -3}};
  EXPECT_TRUE(has(errors_of(j), "/servers/0/npus/count: expected a non-negative integer"));
  j = a2();
  j["servers"][0]["npus"] = {{"count", 1e300}};
  EXPECT_TRUE(has(errors_of(j), "/servers/0/npus/count"));
  j = a2();
  j["servers"][0]["type"] = "dgx";
  EXPECT_TRUE(has(errors_of(j), "/servers/0/type: unknown server type"));
  j = a2();
  j["version"] = 2;
  EXPECT_TRUE(has(errors_of(j), "/version: value 2 out of range"));
  EXPECT_TRUE(has(errors_of(json::array()), "t.json: /: expected an object"));
}

TEST(Topology, ServersWithoutANetworkCannotReachEachOther) {
  json j = a2();
  j["servers"].push_back({{"name", "s1"}, {"type", "atlas800t-a2"}, {"host_ip", "10.0.0.2"}});
  EXPECT_TRUE(has(errors_of(j), "NPUs cannot reach each other: s1/npu0 has no path to s0/npu0"));
}

TEST(Topology, ManyErrorsAreAllReportedUpToTheLimit) {
  json j = a2();
  for (int i = 0; i < 100; ++i) j["servers"][0]["bad" + std::to_string(i)] = i;
  Diagnostics d("t.json");
  EXPECT_FALSE(topology_from_json(j, d));
  EXPECT_EQ(d.count(), 100u);
  EXPECT_EQ(d.messages().size(), 51u);  // 50 messages and "further errors omitted"
}

TEST(JsonReader, RejectsJunkWithoutCrashing) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + name) << text;
    return dir + name;
  };
  struct Case { std::string text, expect; } cases[] = {
      {"", "file is empty"},
      {"not json at all", "not valid JSON at byte"},
      {"{\"a\": [1, 2", "not valid JSON"},
      {std::string(100, '[') + std::string(100, ']'), "nesting deeper than 64 levels"},
  };
  for (auto& c : cases) {
    Diagnostics d("x");
    auto path = write("junk.json", c.text);
    EXPECT_FALSE(read_json_file(path, d));
    ASSERT_FALSE(d.messages().empty());
    EXPECT_NE(d.messages()[0].find(c.expect), std::string::npos) << d.messages()[0];
  }
  Diagnostics d("x");
  EXPECT_FALSE(read_json_file(dir + "does-not-exist.json", d));
  EXPECT_NE(d.messages()[0].find("cannot open file"), std::string::npos);
}

// fill_input (its vectorised fp32 loops included, over a count that is no multiple of any vector
// width) writes input_value (the scalar double formula), encoded in the dtype, for every element.
// The read-only open (sim/trace.h): a name with URI metacharacters is the file it names, both
// modes read it, neither can write it.
TEST(Trace, ReadOnlyOpenTakesTheNameLiterally) {
  char dir[] = "/tmp/hcsim_ro_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/a%25b?c#d.db";
  sqlite3* w = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &w, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(w, "CREATE TABLE t(v); INSERT INTO t VALUES(42);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(w);
  for (bool immutable : {true, false}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(open_sqlite_readonly(path, immutable, &db), SQLITE_OK) << immutable;
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT v FROM t", -1, &s, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(s, 0), 42);
    sqlite3_finalize(s);
    EXPECT_NE(sqlite3_exec(db, "INSERT INTO t VALUES(1)", nullptr, nullptr, nullptr), SQLITE_OK) << immutable;
    sqlite3_close(db);
  }
  std::remove(path.c_str());
  rmdir(dir);
}

TEST(Payload, FillMatchesInputValue) {
  const std::uint64_t n = 4099;
  for (models::DType t : {models::DType::Fp32, models::DType::Fp64, models::DType::Int8, models::DType::Int16, models::DType::Int32,
                          models::DType::Int64, models::DType::Fp16, models::DType::Bf16})
    for (models::ReduceOp op : {models::ReduceOp::Sum, models::ReduceOp::Prod, models::ReduceOp::Max, models::ReduceOp::Min})
      for (std::uint32_t world : {0u, 8u, 13u}) {
      const PayloadKey k{5, 3, 2, world};
      const std::size_t esz = models::dtype_size(t);
      std::vector<std::uint8_t> buf(n * esz + 8, 0xee);
      fill_input(buf.data(), n, t, op, k, 6);
      for (std::uint64_t i = 0; i < n; ++i) {
        const double v = input_value(k, 6, i, t, op);
        double got = 0;
        if (t == models::DType::Fp32) { float f; std::memcpy(&f, buf.data() + 4 * i, 4); got = f; }
        else if (t == models::DType::Fp64) std::memcpy(&got, buf.data() + 8 * i, 8);
        else if (t == models::DType::Int8) got = static_cast<std::int8_t>(buf[i]);
        else if (t == models::DType::Int16) { std::int16_t x; std::memcpy(&x, buf.data() + 2 * i, 2); got = x; }
        else if (t == models::DType::Int32) { std::int32_t x; std::memcpy(&x, buf.data() + 4 * i, 4); got = x; }
        else if (t == models::DType::Int64) { std::int64_t x; std::memcpy(&x, buf.data() + 8 * i, 8); got = static_cast<double>(x); }
        else if (t == models::DType::Bf16) { std::uint16_t h; std::memcpy(&h, buf.data() + 2 * i, 2); got = models::bf16_to_float(h); }
        else { std::uint16_t h; std::memcpy(&h, buf.data() + 2 * i, 2); got = models::half_to_float(h); }
        ASSERT_EQ(got, v) << "dtype " << static_cast<int>(t) << " op " << static_cast<int>(op) << " world " << world << " element " << i;
      }
      EXPECT_EQ(buf[n * esz], 0xee) << "wrote past the count";
    }
}

// The blocked reference against a per-element fold of the inputs (ranks in order, double for
// floats, wrapping 64-bit integers truncated to the dtype), every op, over several blocks and a
// partial one, for 3 and 8 ranks, and for a subset of ranks (a shrunk communicator's survivors:
// ranks 1, 4 and 6, in that order).
TEST(Payload, ReferenceEqualsPerElementFold) {
  const std::uint64_t n = 5000;
  const std::vector<std::vector<std::uint32_t>> lists = {{0, 1, 2}, {0, 1, 2, 3, 4, 5, 6, 7}, {1, 4, 6}};
  for (const auto& list : lists)
    for (models::DType t : {models::DType::Fp32, models::DType::Fp64, models::DType::Int8, models::DType::Int32, models::DType::Int64})
      for (models::ReduceOp op : {models::ReduceOp::Sum, models::ReduceOp::Prod, models::ReduceOp::Max, models::ReduceOp::Min}) {
        PayloadKey k{11, 2, 1, 8};
        Reference ref;
        const auto nr = static_cast<std::uint32_t>(list.size());
        if (list.back() + 1 == nr) allreduce_reference(n, t, op, k, nr, &ref);  // 0..nr-1: the count form
        else allreduce_reference(n, t, op, k, list, &ref);
        const std::size_t esz = models::dtype_size(t);
        ASSERT_EQ(ref.bytes.size(), n * esz);
        EXPECT_TRUE(ref.tol.empty());  // exact: every dtype here at 8 ranks
        const bool ints = t != models::DType::Fp32 && t != models::DType::Fp64;
        for (std::uint64_t i = 0; i < n; i += 7) {
          double a = 0;
          std::uint64_t ia = 0;
          for (std::uint32_t r = 0; r < nr; ++r) {
            const double v = input_value(k, list[r], i, t, op);
            const auto iv = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
            if (r == 0) { a = v; ia = iv; continue; }
            if (op == models::ReduceOp::Sum) { a += v; ia += iv; }
            if (op == models::ReduceOp::Prod) { a *= v; ia *= iv; }
            if (op == models::ReduceOp::Max) a = std::max(a, v);
            if (op == models::ReduceOp::Min) a = std::min(a, v);
          }
          if (op == models::ReduceOp::Max || op == models::ReduceOp::Min) ia = static_cast<std::uint64_t>(static_cast<std::int64_t>(a));
          std::uint8_t want[8];
          if (t == models::DType::Fp32) { const float f = static_cast<float>(a); std::memcpy(want, &f, 4); }
          else if (t == models::DType::Fp64) std::memcpy(want, &a, 8);
          else std::memcpy(want, &ia, esz);  // little-endian truncation to the dtype
          ASSERT_EQ(std::memcmp(ref.bytes.data() + i * esz, want, esz), 0)
              << "dtype " << static_cast<int>(t) << " op " << static_cast<int>(op) << " ranks " << nr << " element " << i << (ints ? " (int)" : "");
        }
      }
}

// A buffer compared in parts (compare with an index base, merge_check) gives what one compare of
// the whole gives: count, first bad index, its detail, the largest error (NaN included), the
// tolerance and the mode, for parts of several sizes, with mismatches in several parts or none,
// bit for bit and with per-element tolerances.
TEST(Payload, CheckInPartsEqualsWholeCheck) {
  const std::uint64_t n = 10000;
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 40; ++trial)
    for (bool bounded : {false, true}) {
      std::vector<float> want(n), got(n);
      std::vector<double> tol(n);
      for (std::uint64_t i = 0; i < n; ++i) {
        want[i] = got[i] = static_cast<float>(rng() % 1000) / 8;
        tol[i] = rng() % 3 == 0 ? 0.0 : static_cast<double>(rng() % 40);
      }
      const int bad = trial % 5 == 0 ? 0 : static_cast<int>(rng() % 12);
      for (int b = 0; b < bad; ++b) {
        const std::uint64_t i = rng() % n;
        got[i] = b % 4 == 3 ? NAN : got[i] + static_cast<float>(rng() % 50 + 1);
      }
      const double* t = bounded ? tol.data() : nullptr;
      const CheckResult whole = compare(got.data(), want.data(), t, n, models::DType::Fp32);
      EXPECT_EQ(whole.exact, !bounded);
      for (std::uint64_t part : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1000}, std::uint64_t{4096}, n}) {
        CheckResult cr;
        for (std::uint64_t i = 0; i < n; i += part) {
          const std::uint64_t len = std::min(part, n - i);
          merge_check(&cr, compare(got.data() + i, want.data() + i, t ? t + i : nullptr, len, models::DType::Fp32, i));
        }
        ASSERT_EQ(cr.mismatches, whole.mismatches) << "trial " << trial << " part " << part;
        EXPECT_EQ(cr.first_bad, whole.first_bad);
        EXPECT_EQ(cr.detail, whole.detail);
        EXPECT_EQ(cr.tolerance, whole.tolerance);
        EXPECT_EQ(cr.exact, whole.exact);
        EXPECT_TRUE(cr.max_err == whole.max_err || (std::isnan(cr.max_err) && std::isnan(whole.max_err)))
            << cr.max_err << " vs " << whole.max_err;
      }
    }
}

// compare_input (the input generated a part at a time, from an element offset) gives what compare
// against the whole input gives, over more than one part, clean and corrupted.
TEST(Payload, CompareInputEqualsCompareWithTheWholeInput) {
  const std::uint64_t count = 300000, first = 12345;
  const PayloadKey k{3, 1, 4, 16};
  for (models::DType t : {models::DType::Fp32, models::DType::Int8, models::DType::Bf16})
    for (int corrupt : {0, 5}) {
      const std::size_t esz = models::dtype_size(t);
      std::vector<std::uint8_t> input((first + count) * esz);
      fill_input(input.data(), first + count, t, models::ReduceOp::Sum, k, 2);
      std::vector<std::uint8_t> got(input.begin() + static_cast<std::ptrdiff_t>(first * esz), input.end());
      for (int c = 0; c < corrupt; ++c) got[(static_cast<std::uint64_t>(c) * 70001 + 999) % count * esz] ^= 0x21;
      const CheckResult whole = compare(got.data(), input.data() + first * esz, nullptr, count, t);
      const CheckResult parts = compare_input(got.data(), count, t, models::ReduceOp::Sum, k, 2, first);
      EXPECT_EQ(parts.mismatches, whole.mismatches) << "dtype " << static_cast<int>(t);
      EXPECT_EQ(parts.mismatches, static_cast<std::uint64_t>(corrupt));
      EXPECT_EQ(parts.first_bad, whole.first_bad);
      EXPECT_EQ(parts.detail, whole.detail);
      EXPECT_EQ(parts.max_err, whole.max_err);
    }
}

// The result checker catches a deliberately corrupted all-reduce result, and only that.
TEST(Payload, CheckerCatchesCorruption) {
  const std::uint64_t n = 100000;
  PayloadKey k{7, 0, 0, 8};
  for (models::DType t : {models::DType::Fp32, models::DType::Int32, models::DType::Fp16, models::DType::Bf16}) {
    const Reference ref = allreduce_reference(n, t, models::ReduceOp::Sum, k, 8);
    ASSERT_TRUE(ref.tol.empty());
    // Independent recomputation of element 123 (a bulk element: 123 / 8 is odd) from the inputs.
    double sum = 0;
    for (std::uint32_t r = 0; r < 8; ++r) sum += input_value(k, r, 123, t, models::ReduceOp::Sum);
    EXPECT_TRUE(compare(ref.bytes.data(), ref.bytes.data(), nullptr, n, t).ok());
    auto bad = ref.bytes;
    std::size_t esz = models::dtype_size(t);
    bad[123 * esz + esz - 1] ^= 0x40;  // flip a high bit of element 123
    auto cr = compare(bad.data(), ref.bytes.data(), nullptr, n, t);
    EXPECT_EQ(cr.mismatches, 1u);
    EXPECT_EQ(cr.first_bad, 123u);
    // The reference itself equals the host sum (exact: the inputs lie on a grid).
    std::vector<std::uint8_t> one(esz);
    std::memcpy(one.data(), ref.bytes.data() + 123 * esz, esz);
    if (t == models::DType::Fp32) { float f; std::memcpy(&f, one.data(), 4); EXPECT_EQ(f, static_cast<float>(sum)); }
    if (t == models::DType::Int32) { std::int32_t v; std::memcpy(&v, one.data(), 4); EXPECT_EQ(v, static_cast<std::int32_t>(sum)); }
  }
}
