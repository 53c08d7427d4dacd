// hcomm_test: HCOMM's performance test on a simulated cluster, compatible with Huawei's
// hccl_test (flags -b -e -f -d -o -p -n -w -c, its output columns). It runs the operation through
// the public hcomm API on every rank of the topology and reports simulated times.
//
//   hcomm_test allreduce|sendrecv [-b 8K] [-e 64M] [-f 2] [-d fp32] [-o sum] [-p 8] [-n 20] [-w 5] [-c 1]
//              [--topology FILE]
// Exit codes: 0 ok (and every check passed), 1 a check or call failed, 2 bad usage or input.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <systemc>

#include "hcomm/hcomm.h"
#include "models/huge_alloc.h"
#include "sim/host_limits.h"
#include "sim/payload.h"
#include "sim/runner.h"
#include "sim/units.h"

namespace {

const char* kUsage =
    "usage: hcomm_test allreduce|sendrecv [options]\n"
    "  -b SIZE   minimum bytes (default 8K; units B, K, M, G)\n"
    "  -e SIZE   maximum bytes (default 64M)\n"
    "  -f N      multiply the size by N each step (default 2)\n"
    "  -d TYPE   int8 int16 int32 int64 fp16 bf16 fp32 fp64 (default fp32)\n"
    "  -o OP     sum prod max min (default sum; all-reduce)\n"
    "  -p N      NPUs per server to use (default: all of the topology's)\n"
    "  -n N      timed iterations per size (default 20)\n"
    "  -w N      warm-up iterations (default 5)\n"
    "  -c 0|1    check results against a host reference (default 1)\n"
    "  --topology FILE  cluster to simulate (default topologies/atlas800t-a2.json)\n"
    "  --fidelity TIER  RoCE network granularity: packet, chunk (default, 64 KiB units) or flow\n"
    "  --max-memory SIZE  refuse (exit 2) when the checked run needs more host memory (default: MemAvailable)\n";

int usage(const std::string& m) {
  std::fprintf(stderr, "hcomm_test: %s\n\n%s", m.c_str(), kUsage);
  return 2;
}

// A plain decimal number: digits only (no sign, no spaces), no overflow.
bool parse_u64(const std::string& s, std::size_t len, std::uint64_t* out) {
  if (len == 0 || len > s.size()) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// hccl_test sizes: plain bytes or K/M/G suffixes (powers of 1024); positive, no overflow.
bool parse_size(const std::string& s, std::uint64_t* out) {
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  std::uint64_t v = 0;
  if (!parse_u64(s, n, &v)) return false;
  const std::string u = s.substr(n);
  std::uint64_t m = 1;
  if (u == "K" || u == "k") m = 1ULL << 10;
  else if (u == "M" || u == "m") m = 1ULL << 20;
  else if (u == "G" || u == "g") m = 1ULL << 30;
  else if (!u.empty() && u != "B") return false;
  if (v == 0 || v > UINT64_MAX / m) return false;
  *out = v * m;
  return true;
}

struct Row { std::uint64_t bytes; double us; bool ok; };

}  // namespace

int sc_main(int argc, char* argv[]) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.empty() || a[0] == "-h" || a[0] == "--help") {
    if (a.empty()) return usage("no operation given");
    std::printf("%s", kUsage);
    return 0;
  }
  const std::string op = a[0];
  if (op != "allreduce" && op != "sendrecv") return usage("unknown operation \"" + op + "\"");
  std::uint64_t minb = 8 << 10, maxb = 64 << 20, factor = 2, iters = 20, warm = 5, per_server = 0;
  bool check = true;
  std::uint64_t max_memory = 0;  // 0: what the machine has available
  std::string fidelity = "chunk";
  std::string dtype = "fp32", rop = "sum", topo_file = std::string(HCSIM_SOURCE_DIR) + "/topologies/atlas800t-a2.json";
  for (std::size_t i = 1; i < a.size(); ++i) {
    auto need = [&](const char* f) -> const std::string* {
      if (i + 1 >= a.size()) { usage(std::string(f) + " needs a value"); return nullptr; }
      return &a[++i];
    };
    const std::string& f = a[i];
    const std::string* v = nullptr;
    if (f == "-b" || f == "-e") {
      if (!(v = need(f.c_str()))) return 2;
      if (!parse_size(*v, f == "-b" ? &minb : &maxb)) return usage("bad size for " + f + ": " + *v);
    } else if (f == "-f" || f == "-n" || f == "-w" || f == "-p" || f == "-c") {
      if (!(v = need(f.c_str()))) return 2;
      std::uint64_t x = 0;
      if (!parse_u64(*v, v->size(), &x)) return usage("bad number for " + f + ": " + *v + " (a decimal number >= 0)");
      if (f == "-f") factor = x; else if (f == "-n") iters = x; else if (f == "-w") warm = x; else if (f == "-p") per_server = x;
      else check = x != 0;
    } else if (f == "-d") {
      if (!(v = need("-d"))) return 2;
      dtype = *v;
    } else if (f == "-o") {
      if (!(v = need("-o"))) return 2;
      rop = *v;
    } else if (f == "--max-memory") {
      if (!(v = need("--max-memory"))) return 2;
      if (!parse_size(*v, &max_memory)) return usage("bad size for --max-memory: " + *v);
    } else if (f == "--topology") {
      if (!(v = need("--topology"))) return 2;
      topo_file = *v;
    } else if (f == "--fidelity") {
      if (!(v = need("--fidelity"))) return 2;
      models::NetParams probe;
      if (!sim::set_fidelity(probe, *v)) return usage("--fidelity must be packet, chunk or flow, got " + *v);
      fidelity = *v;
    } else {
      return usage("unknown option " + f);
    }
  }
  static const std::map<std::string, std::pair<hcomm_data_type_t, models::DType>> types = {
      {"int8", {HCOMM_DATA_TYPE_INT8, models::DType::Int8}},   {"int16", {HCOMM_DATA_TYPE_INT16, models::DType::Int16}},
      {"int32", {HCOMM_DATA_TYPE_INT32, models::DType::Int32}}, {"int64", {HCOMM_DATA_TYPE_INT64, models::DType::Int64}},
      {"fp16", {HCOMM_DATA_TYPE_FP16, models::DType::Fp16}},   {"bf16", {HCOMM_DATA_TYPE_BFP16, models::DType::Bf16}},
      {"fp32", {HCOMM_DATA_TYPE_FP32, models::DType::Fp32}},   {"fp64", {HCOMM_DATA_TYPE_FP64, models::DType::Fp64}}};
  static const std::map<std::string, std::pair<hcomm_reduce_op_t, models::ReduceOp>> ops = {
      {"sum", {HCOMM_REDUCE_SUM, models::ReduceOp::Sum}}, {"prod", {HCOMM_REDUCE_PROD, models::ReduceOp::Prod}},
      {"max", {HCOMM_REDUCE_MAX, models::ReduceOp::Max}}, {"min", {HCOMM_REDUCE_MIN, models::ReduceOp::Min}}};
  if (!types.count(dtype)) return usage("unknown data type " + dtype);
  if (!ops.count(rop)) return usage("unknown reduce op " + rop);
  if (factor < 2) return usage("-f must be at least 2");
  if (minb > maxb) return usage("-b is larger than -e");
  if (iters == 0) return usage("-n must be at least 1");
  const auto [ht, mt] = types.at(dtype);
  const auto [hop, mop] = ops.at(rop);
  const std::uint64_t esz = hcomm_data_type_size(ht);
  sim::Diagnostics d(topo_file);
  auto topo = sim::load_topology(topo_file, d);
  if (!topo) {
    for (auto& m : d.messages()) std::fprintf(stderr, "%s\n", m.c_str());
    return 2;
  }
  if (per_server) {  // keep the first p NPUs of every server (as hccl_test -p)
    sim::Topology t = *topo;
    std::vector<std::uint32_t> keep;
    for (auto& s : t.servers) {
      if (per_server > s.npus.size()) return usage("-p " + std::to_string(per_server) + " exceeds the server's NPUs");
      for (std::uint64_t k = 0; k < per_server; ++k) keep.push_back(s.npus[k]);
    }
    t.rank_to_npu = keep;
    topo = t;
  }
  const auto nranks = static_cast<std::uint32_t>(topo->rank_to_npu.size());
  if (op == "sendrecv" && nranks % 2) return usage("sendrecv needs an even number of ranks");
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t b = minb; b <= maxb; b *= factor) {  // never wraps: stops before b * factor overflows
    sizes.push_back(std::max<std::uint64_t>(esz, b / esz * esz));
    if (b > UINT64_MAX / factor) break;
  }
  // Refuse up front what this machine cannot hold: real bytes are in + out in HBM, the host
  // buffer and the expected result per rank (a timing run, -c 0, stores none).
  if (sizes.back() > UINT64_MAX / 4 / std::max<std::uint64_t>(1, nranks)) return usage("-e is too large");
  const std::uint64_t need = check ? std::uint64_t{nranks} * 3 * sizes.back() + sizes.back() : 0;
  const std::string fit = sim::check_host_fit(nranks, need, max_memory, sim::read_host_limits());
  if (!fit.empty()) {
    std::fprintf(stderr, "hcomm_test: %s\n", fit.c_str());
    return 2;
  }
  std::vector<Row> rows(sizes.size());
  std::vector<std::string> errors;
  std::printf("the minbytes is %llu, maxbytes is %llu, iters is %llu, warmup_iters is %llu\n", (unsigned long long)minb,
              (unsigned long long)maxb, (unsigned long long)iters, (unsigned long long)warm);
  std::fflush(stdout);
  setenv("HCOMM_BUFFSIZE_MB", "512", 0);

  sim::RunOptions opt;
  opt.fidelity = fidelity;
  opt.echo_logs = true;
  auto program = [&](std::uint32_t r) {
    auto fail = [&](const char* what, hcomm_result_t rc) {
      if (rc == HCOMM_SUCCESS) return false;
      if (errors.size() < 20) errors.push_back("rank " + std::to_string(r) + ": " + what + ": " + hcomm_result_string(rc));
      return true;
    };
    hcomm_context_t ctx = nullptr;
    hcomm_comm_t comm = nullptr;
    hcomm_stream_t st = nullptr, st2 = nullptr;
    hcomm_event_t e0 = nullptr, e1 = nullptr;
    void *in = nullptr, *out = nullptr;
    struct Cleanup {  // every exit path releases what was created
      std::function<void()> f;
      ~Cleanup() { f(); }
    } cleanup{[&] {
      if (e0) hcomm_destroy_event(e0);
      if (e1) hcomm_destroy_event(e1);
      if (st) hcomm_destroy_stream(st);
      if (st2) hcomm_destroy_stream(st2);
      if (in) hcomm_free(ctx, in);
      if (out) hcomm_free(ctx, out);
      if (comm) hcomm_comm_destroy(comm);
      if (ctx) hcomm_destroy_context(ctx);
    }};
    const auto& npu = topo->npus[topo->rank_to_npu[r]];
    if (fail("hcomm_create_context", hcomm_create_context(npu.device_id, &ctx)) || fail("hcomm_comm_init", hcomm_comm_init(ctx, nranks, r, &comm)) ||
        fail("hcomm_create_stream", hcomm_create_stream(ctx, &st)) || fail("hcomm_create_stream", hcomm_create_stream(ctx, &st2)) ||
        fail("hcomm_create_event", hcomm_create_event(ctx, &e0)) || fail("hcomm_create_event", hcomm_create_event(ctx, &e1)))
      return;
    if (fail("hcomm_malloc", hcomm_malloc(ctx, sizes.back(), &in)) || fail("hcomm_malloc", hcomm_malloc(ctx, sizes.back(), &out))) return;
    models::HugeBuffer host(check ? sizes.back() : 1);
    const std::uint32_t peer = r ^ 1u;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const std::uint64_t bytes = sizes[k], count = bytes / esz;
      sim::PayloadKey key{1, static_cast<std::uint32_t>(k), 0};
      auto run_once = [&]() -> bool {
        if (op == "allreduce") return !fail("hcomm_allreduce", hcomm_allreduce(in, out, count, ht, hop, comm, st));
        hcomm_request_t q[2];
        return !fail("hcomm_isend", hcomm_isend(in, count, ht, peer, 0, comm, st, &q[0])) &&
               !fail("hcomm_irecv", hcomm_irecv(out, count, ht, peer, 0, comm, st2, &q[1])) && !fail("hcomm_waitall", hcomm_waitall(2, q));
      };
      if (check) {
        sim::fill_input(host.get(), count, mt, mop, key, r);
        if (fail("hcomm_memcpy_host_to_device", hcomm_memcpy_host_to_device(in, host.get(), bytes, st))) return;
      }
      if (fail("hcomm_barrier", hcomm_barrier(comm, st)) || fail("sync", hcomm_stream_synchronize(st))) return;
      for (std::uint64_t w = 0; w < warm; ++w)
        if (!run_once()) return;
      if (fail("sync", hcomm_stream_synchronize(st)) || fail("hcomm_barrier", hcomm_barrier(comm, nullptr))) return;
      hcomm_record_event(e0, st);
      for (std::uint64_t it = 0; it < iters; ++it)
        if (!run_once()) return;
      hcomm_record_event(e1, st);
      if (fail("sync", hcomm_stream_synchronize(st))) return;
      float ms = 0;
      hcomm_event_elapsed_time(e0, e1, &ms);
      if (r == 0) { rows[k].bytes = bytes; rows[k].us = ms * 1e3 / static_cast<double>(iters); rows[k].ok = true; }
      if (check) {
        if (fail("hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(host.get(), out, bytes, st)) || fail("sync", hcomm_stream_synchronize(st))) return;
        sim::CheckResult cr;
        if (op == "allreduce") {
          auto ref = sim::allreduce_reference(count, mt, mop, key, nranks);
          cr = sim::compare(host.get(), ref.data(), count, mt, mop, nranks);
        } else {
          std::vector<std::uint8_t> expect(bytes);
          sim::fill_input(expect.data(), count, mt, mop, key, peer);
          cr = sim::compare(host.get(), expect.data(), count, mt, models::ReduceOp::Max, 1);
        }
        if (!cr.ok()) { rows[k].ok = false; if (errors.size() < 20) errors.push_back("rank " + std::to_string(r) + " size " + std::to_string(bytes) + ": " + cr.detail); }
        if (r != 0 && !cr.ok()) rows[k].ok = false;
      }
    }
  };
  sim::run_program(*topo, program, opt, check);
  std::printf("%-20s %-18s %-22s %s\n", "data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):", "check_result:");
  bool all_ok = errors.empty();
  for (const Row& row : rows) {
    const double bw = row.us > 0 ? static_cast<double>(row.bytes) / (row.us * 1e3) : 0;
    std::printf("%-20llu %-18.2f %-22.5f %s\n", (unsigned long long)row.bytes, row.us, bw,
                !check ? "NULL" : (row.ok ? "success" : "failed"));
    all_ok = all_ok && (!check || row.ok);
  }
  for (auto& e : errors) std::fprintf(stderr, "hcomm_test: %s\n", e.c_str());
  return all_ok ? 0 : 1;
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
