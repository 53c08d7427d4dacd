// hcomm_test: HCOMM's performance test on a simulated cluster, compatible with Huawei's
// hccl_test (flags -b -e -f -d -o -p -n -w -c, its output columns, then busbw and the algorithm).
// It runs one operation through the public hcomm API on every rank of the topology and reports
// simulated times; with -c 1 every rank's result is checked against a host reference.
//
//   hcomm_test OPERATION [-b 8K] [-e 64M] [-f 2] [-d fp32] [-o sum] [-r 0] [-p 8] [-n 20] [-w 5] [-c 1]
//              [--topology FILE] [--fidelity TIER] [--algo SPEC] [--max-memory SIZE] [--plot OUT.svg] [--db FILE] [--force]
// Exit codes: 0 ok (and every check passed), 1 a check or call failed, 2 bad usage or input.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <systemc>

#include "hcomm/driver.h"
#include "hcomm/hcomm.h"
#include "cli.h"
#include "tap.h"
#include "models/mem/huge_alloc.h"
#include "sim/host_limits.h"
#include "sim/host_process.h"
#include "sim/payload.h"
#include "sim/provenance.h"
#include "sim/runner.h"
#include "sim/stop.h"
#include "sim/config/units.h"
#include "outputs.h"
#include "svg_plot.h"

namespace {

using namespace hcomm_test_cli;

struct Row {
  std::uint64_t bytes = 0;
  double us = 0;
  bool ok = true, timed = false, printed = false;
  std::uint32_t done = 0;  // ranks finished with this size
  std::string algo;
};

std::string mib(std::uint64_t b) {
  char s[64];
  if (b % (1ULL << 20) == 0) std::snprintf(s, sizeof s, "%llu MiB", (unsigned long long)(b >> 20));
  else std::snprintf(s, sizeof s, "%llu B", (unsigned long long)b);
  return s;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  std::vector<std::string> a(argv + 1, argv + argc);
  for (const auto& s : a)
    if (s == "-h" || s == "--help") {
      std::printf("%s", kUsage);
      return 0;
    }
  if (a.empty()) return usage("no operation given");
  const OpDesc* od = find_op(a[0]);
  if (!od) return usage("unknown operation \"" + a[0] + "\"");
  const Op op = od->op;
  std::uint64_t minb = 8 << 10, maxb = 64 << 20, factor = 2, iters = 20, warm = 5, per_server = 0, root = 0;
  bool check = true;
  std::uint64_t max_memory = 0;  // 0: what the machine has available
  std::string fidelity = "chunk", algo_spec, plot_file;
  bool algo_given = false, force = false;
  std::string db_file;  // --db: the run's trace
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
    } else if (f == "-f" || f == "-n" || f == "-w" || f == "-p" || f == "-c" || f == "-r") {
      if (!(v = need(f.c_str()))) return 2;
      std::uint64_t x = 0;
      if (!parse_u64(*v, v->size(), &x)) return usage("bad number for " + f + ": " + *v + " (a decimal number >= 0)");
      if (f == "-f") factor = x; else if (f == "-n") iters = x; else if (f == "-w") warm = x; else if (f == "-p") per_server = x;
      else if (f == "-r") root = x;
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
    } else if (f == "--db") {
      if (!(v = need("--db"))) return 2;
      if (v->empty()) return usage("--db needs a file name");
      db_file = *v;
    } else if (f == "--plot") {
      if (!(v = need("--plot"))) return 2;
      if (v->empty()) return usage("--plot needs a file name");
      plot_file = *v;
    } else if (f == "--force") {
      force = true;
    } else if (f == "--topology") {
      if (!(v = need("--topology"))) return 2;
      topo_file = *v;
    } else if (f == "--fidelity") {
      if (!(v = need("--fidelity"))) return 2;
      models::NetParams probe;
      if (!sim::set_fidelity(probe, *v)) return usage("--fidelity must be packet, chunk or flow, got " + *v);
      fidelity = *v;
    } else if (f == "--algo") {
      if (!(v = need("--algo"))) return 2;
      // A bare family name means that family at both levels.
      algo_spec = v->find(':') == std::string::npos && v->find('=') == std::string::npos ? "level0:" + *v + ";level1:" + *v : *v;
      char why[512] = "";
      if (v->empty() || hcomm_config_check("HCOMM_ALGO", algo_spec.c_str(), why, sizeof why) != HCOMM_SUCCESS)
        return usage("bad --algo \"" + *v + "\": " + (why[0] ? why : "empty") +
                     " (--algo takes HCOMM_ALGO syntax or one family: NA ring H-D_R NHR NB DOUBLE_TREE pairwise star mesh)");
      algo_given = true;
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
  {
    // The outputs may not be the topology, its rank table or each other (even with --force); a
    // --plot FILE is replaced if it is an SVG plot, a --db FILE if it is a trace (Trace::open).
    std::vector<hcsim::OutputFile> outs;
    if (!db_file.empty()) {
      outs.push_back({"--db", db_file, {}, ""});
      for (auto& o : hcsim::trace_side_files("--db", db_file)) outs.push_back(o);
    }
    if (!plot_file.empty()) outs.push_back({"--plot", plot_file, {hcsim::kSvgPlotHead}, "an SVG plot"});
    const std::string bad = hcsim::check_outputs({{"--topology", topo_file}, {"the topology's rank table", topo->rank_table}}, outs, force);
    if (!bad.empty()) {
      std::fprintf(stderr, "hcomm_test: %s\n", bad.c_str());
      return 2;
    }
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
  if (op == Op::SendRecv && nranks % 2) return usage("sendrecv needs an even number of ranks");
  if (root >= nranks)
    return usage("-r " + std::to_string(root) + " is out of range: the run has " + std::to_string(nranks) + " ranks (0.." +
                 std::to_string(nranks - 1) + ")");
  const auto rootr = static_cast<std::uint32_t>(root);
  // Sizes actually run: whole elements; for block operations n equal blocks of >= 1 element.
  std::vector<std::uint64_t> sizes;
  if (maxb > UINT64_MAX / 4 / std::max<std::uint64_t>(1, nranks)) return usage("-e is too large");
  for (std::uint64_t b = minb; b <= maxb; b *= factor) {  // never wraps: stops before b * factor overflows
    if (od->blocks) sizes.push_back(std::max<std::uint64_t>(1, b / esz / nranks) * nranks * esz);
    else sizes.push_back(std::max<std::uint64_t>(esz, b / esz * esz));
    if (b > UINT64_MAX / factor) break;
  }
  const std::uint64_t biggest = *std::max_element(sizes.begin(), sizes.end());
  const std::uint64_t cap = biggest + std::uint64_t{nranks} * esz;  // device buffers: alltoallv's blocks may be 1 larger
  // Refuse up front what this machine cannot hold: real bytes are in + out in HBM, the host
  // buffer and the expected result per rank (a timing run, -c 0, stores none).
  const std::uint64_t need = check ? std::uint64_t{nranks} * 3 * cap + cap : 0;
  const std::string fit = sim::check_host_fit(nranks, need, max_memory, sim::read_host_limits());
  if (!fit.empty()) {
    std::fprintf(stderr, "hcomm_test: %s\n", fit.c_str());
    return 2;
  }
  // The library reads its knobs from this process's environment, as HCCL's reads HCCL_*
  // (hccl_test's convention; hcsim runs are hermetic instead): each checked as the library
  // parses it, and named on one line.
  sim::CallerEnv env;
  std::string env_why;
  if (!sim::take_caller_env(true, &env, &env_why)) {
    std::fprintf(stderr, "hcomm_test: %s\n", env_why.c_str());
    return 2;
  }
  std::string env_line, unread;
  for (const auto& [k, v] : env.inherited)
    if (std::find(env.unread.begin(), env.unread.end(), k) == env.unread.end()) env_line += (env_line.empty() ? "" : " ") + k + "=" + v;
  for (const auto& k : env.unread) unread += (unread.empty() ? "; not read by hcomm: " : ", ") + k;
  // The collective buffer: 512 MiB unless the user set one (HCCL_BUFFSIZE counts only when
  // HCOMM_BUFFSIZE_MB is unset, so do not set that over it).
  std::string buf_source = "hcomm_test's default; HCOMM_BUFFSIZE_MB or HCCL_BUFFSIZE override it";
  if (const char* e = std::getenv("HCOMM_BUFFSIZE_MB"); e && *e) buf_source = "HCOMM_BUFFSIZE_MB";
  else if (const char* h = std::getenv("HCCL_BUFFSIZE"); h && *h) buf_source = "HCCL_BUFFSIZE";
  else setenv("HCOMM_BUFFSIZE_MB", "512", 1);

  // --plot is opened before simulating (an unwritable path is a usage error, not a lost run) but not
  // truncated: a run that fails leaves an existing file as it was, and removes one it created.
  int plot = -1;
  bool plot_created = false;
  if (!plot_file.empty()) {
    struct stat st {};
    plot_created = ::stat(plot_file.c_str(), &st) != 0;
    if ((plot = ::open(plot_file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
      return usage("--plot: cannot write " + plot_file + ": " + std::strerror(errno));
  }
  auto drop_plot = [&] {
    if (plot < 0) return;
    ::close(plot);
    if (plot_created) ::unlink(plot_file.c_str());
  };
  std::vector<Row> rows(sizes.size());
  std::vector<std::string> errors;
  std::printf("the minbytes is %llu, maxbytes is %llu, iters is %llu, warmup_iters is %llu\n", (unsigned long long)minb,
              (unsigned long long)maxb, (unsigned long long)iters, (unsigned long long)warm);
  // Banner: what is being measured.
  std::map<std::uint32_t, std::uint32_t> per_srv;
  for (auto npu : topo->rank_to_npu) ++per_srv[topo->npus[npu].server];
  std::set<std::uint32_t> widths;
  for (auto& [s, c] : per_srv) widths.insert(c);
  std::printf("topology: %s (%s)\n", topo_file.c_str(), topo->name.c_str());
  if (widths.size() == 1)
    std::printf("ranks: %zu server(s) x %u NPU(s) = %u\n", per_srv.size(), *widths.begin(), nranks);
  else
    std::printf("ranks: %zu server(s) of unequal size, %u in all\n", per_srv.size(), nranks);
  std::printf("fidelity: %s\n", fidelity.c_str());
  std::printf("environment: %s%s\n",
              env_line.empty() ? "no HCOMM_*/HCCL_* variables the library reads (its defaults)" : (env_line + " (read by the library)").c_str(),
              unread.c_str());
  std::printf("operation: %s, dtype %s, reduce op %s, root %s\n", od->name, dtype.c_str(), od->reduces ? rop.c_str() : "-",
              od->rooted ? std::to_string(rootr).c_str() : "-");
  std::fflush(stdout);

  hcomm_tool::OpTap tap;  // outlives every context (run_program finalizes hcomm before returning)
  tap.kind = od->kind;
  const double bus = busbw_factor(op, nranks);
  std::uint64_t buffer_bytes = 0;
  bool header = false;
  auto print_row = [&](std::size_t k) {
    Row& row = rows[k];
    if (row.printed) return;
    if (!header) {
      std::printf("collective buffer: %s per rank (%s)\n", buffer_bytes ? mib(buffer_bytes).c_str() : "unknown",
                  buf_source.c_str());
      std::string by = tap.chosen_by.empty() ? "the link (point-to-point)" : tap.chosen_by;
      if (algo_given)
        by += tap.chosen_by == "config" ? " = --algo " + algo_spec
                                        : " (--algo " + algo_spec + " forces nothing this operation can run here)";
      std::printf("algorithm: %s (chosen by %s, at %llu bytes; each size's choice in the last column)\n",
                  row.algo.empty() ? "unknown" : row.algo.c_str(), by.c_str(), (unsigned long long)sizes[k]);
      std::printf("%-20s %-18s %-22s %-15s %-22s %s\n", "data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):",
                  "check_result:", "bus_bandwidth(GB/s):", "algorithm:");
      header = true;
    }
    const double bw = row.us > 0 ? static_cast<double>(sizes[k]) / (row.us * 1e3) : 0;
    std::printf("%-20llu %-18.2f %-22.5f %-15s %-22.5f %s\n", (unsigned long long)sizes[k], row.us, bw,
                !check ? "NULL" : (row.ok && row.timed ? "success" : "failed"), bw * bus, row.algo.empty() ? "-" : row.algo.c_str());
    std::fflush(stdout);
    row.printed = true;
  };

  // The allreduce / reduce reference is the same for every rank: computed once per size.
  struct { std::size_t k = SIZE_MAX; sim::Reference v; } shared_ref;

  sim::RunOptions opt;
  opt.fidelity = fidelity;
  opt.echo_logs = true;
  opt.db_path = db_file;
  opt.force_db = force;
  opt.trace_tasks = !db_file.empty();  // the per-task rows are what explains a row's time
  auto program = [&](std::uint32_t r) {
    if (hcomm::drivers().observer != &tap) {  // the first rank to run: tap the observer before any context exists
      hcomm::DriverSet parts = hcomm::drivers();
      tap.d = parts.observer;
      parts.observer = &tap;
      hcomm::set_driver(parts);
    }
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
    hcomm_config_t cfg;
    hcomm_config_init(&cfg);
    cfg.algo = algo_given ? algo_spec.c_str() : nullptr;
    if (fail("hcomm_create_context", hcomm_create_context(npu.device_id, &ctx)) ||
        fail("hcomm_comm_init", algo_given ? hcomm_comm_init_config(ctx, nranks, r, &cfg, &comm) : hcomm_comm_init(ctx, nranks, r, &comm)) ||
        fail("hcomm_create_stream", hcomm_create_stream(ctx, &st)) || fail("hcomm_create_stream", hcomm_create_stream(ctx, &st2)) ||
        fail("hcomm_create_event", hcomm_create_event(ctx, &e0)) || fail("hcomm_create_event", hcomm_create_event(ctx, &e1)))
      return;
    if (r == 0 && fail("hcomm_context_max_buffer_size", hcomm_context_max_buffer_size(ctx, &buffer_bytes))) return;
    if (fail("hcomm_malloc", hcomm_malloc(ctx, cap, &in)) || fail("hcomm_malloc", hcomm_malloc(ctx, cap, &out))) return;
    models::HugeBuffer host(check ? cap : 1);
    auto* hb = static_cast<std::uint8_t*>(host.get());
    const std::uint32_t peer = r ^ 1u;
    const std::uint32_t n = nranks;
    std::vector<std::uint64_t> sc(n), sd(n), rc(n), rd(n);  // alltoallv
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const std::uint64_t bytes = sizes[k], count = bytes / esz, c = od->blocks ? count / n : count;
      // Block j of a rank's input is its own stream (rep j), so a receiver can rebuild exactly the
      // block it gets without generating the sender's whole buffer.
      auto fill = [&](void* buf, std::uint64_t cnt, std::uint32_t rank, std::uint32_t rep) {
        sim::fill_input(buf, cnt, mt, mop, sim::PayloadKey{1, static_cast<std::uint32_t>(k), rep, nranks}, rank);
      };
      std::uint64_t in_total = 0, out_total = 0;  // elements
      if (op == Op::AllToAllV) {
        for (std::uint32_t j = 0; j < n; ++j) {
          sc[j] = rc[j] = v_count(c, r, j);
          sd[j] = in_total;
          rd[j] = in_total;
          in_total += sc[j];
        }
        out_total = in_total;
      }
      auto run_once = [&]() -> bool {
        switch (op) {
          case Op::AllReduce: return !fail("hcomm_allreduce", hcomm_allreduce(in, out, count, ht, hop, comm, st));
          case Op::AllGather: return !fail("hcomm_allgather", hcomm_allgather(in, out, c, ht, comm, st));
          case Op::ReduceScatter: return !fail("hcomm_reduce_scatter", hcomm_reduce_scatter(in, out, c, ht, hop, comm, st));
          case Op::Broadcast: return !fail("hcomm_broadcast", hcomm_broadcast(out, count, ht, rootr, comm, st));
          case Op::Reduce: return !fail("hcomm_reduce", hcomm_reduce(in, out, count, ht, hop, rootr, comm, st));
          case Op::Scatter: return !fail("hcomm_scatter", hcomm_scatter(in, out, c, ht, rootr, comm, st));
          case Op::AllToAll: return !fail("hcomm_alltoall", hcomm_alltoall(in, out, c, ht, comm, st));
          case Op::AllToAllV:
            return !fail("hcomm_alltoallv", hcomm_alltoallv(in, sc.data(), sd.data(), out, rc.data(), rd.data(), ht, comm, st));
          case Op::SendRecv: break;
        }
        hcomm_request_t q[2];
        return !fail("hcomm_isend", hcomm_isend(in, count, ht, peer, 0, comm, st, &q[0])) &&
               !fail("hcomm_irecv", hcomm_irecv(out, count, ht, peer, 0, comm, st2, &q[1])) && !fail("hcomm_waitall", hcomm_waitall(2, q));
      };
      if (check) {  // stage this rank's input
        void* dst = in;
        std::uint64_t n_in = count;
        switch (op) {
          case Op::AllReduce: case Op::Reduce: case Op::SendRecv: fill(hb, count, r, 0); break;
          case Op::Broadcast: n_in = r == rootr ? count : 0; if (n_in) fill(hb, count, r, 0); dst = out; break;
          case Op::AllGather: n_in = c; fill(hb, c, r, 0); break;
          case Op::Scatter: if (r != rootr) { n_in = 0; break; } [[fallthrough]];
          case Op::ReduceScatter: case Op::AllToAll:
            for (std::uint32_t j = 0; j < n; ++j) fill(hb + j * c * esz, c, r, j);
            break;
          case Op::AllToAllV:
            n_in = in_total;
            for (std::uint32_t j = 0; j < n; ++j) fill(hb + sd[j] * esz, sc[j], r, j);
            break;
        }
        if (n_in && fail("hcomm_memcpy_host_to_device", hcomm_memcpy_host_to_device(dst, hb, n_in * esz, st))) return;
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
      if (r == 0) {
        rows[k].bytes = bytes;
        rows[k].us = ms * 1e3 / static_cast<double>(iters);
        rows[k].timed = true;
        rows[k].algo = tap.algorithm;
      }
      if (check) {
        std::uint64_t n_out = 0;  // elements of out to compare
        std::vector<std::uint8_t> expect;
        sim::Reference expect_rs;  // a reduce-scatter's block: bytes and tolerances
        switch (op) {
          case Op::AllReduce:
          case Op::Reduce:
            if (op == Op::Reduce && r != rootr) break;  // recv_buf is significant at the root only
            if (shared_ref.k != k) {
              shared_ref.v = sim::allreduce_reference(count, mt, mop, sim::PayloadKey{1, static_cast<std::uint32_t>(k), 0, n}, n);
              shared_ref.k = k;
            }
            n_out = count;
            break;
          case Op::ReduceScatter:
            n_out = c;
            expect_rs = sim::allreduce_reference(c, mt, mop, sim::PayloadKey{1, static_cast<std::uint32_t>(k), r, n}, n);
            break;
          case Op::Broadcast: n_out = count; expect.resize(count * esz); fill(expect.data(), count, rootr, 0); break;
          case Op::SendRecv: n_out = count; expect.resize(count * esz); fill(expect.data(), count, peer, 0); break;
          case Op::AllGather:
            n_out = n * c;
            expect.resize(n_out * esz);
            for (std::uint32_t j = 0; j < n; ++j) fill(expect.data() + j * c * esz, c, j, 0);
            break;
          case Op::Scatter: n_out = c; expect.resize(c * esz); fill(expect.data(), c, rootr, r); break;
          case Op::AllToAll:
            n_out = n * c;
            expect.resize(n_out * esz);
            for (std::uint32_t j = 0; j < n; ++j) fill(expect.data() + j * c * esz, c, j, r);
            break;
          case Op::AllToAllV:
            n_out = out_total;
            expect.resize(n_out * esz);
            for (std::uint32_t j = 0; j < n; ++j) fill(expect.data() + rd[j] * esz, rc[j], j, r);
            break;
        }
        if (n_out) {
          if (fail("hcomm_memcpy_device_to_host", hcomm_memcpy_device_to_host(hb, out, n_out * esz, st)) ||
              fail("sync", hcomm_stream_synchronize(st)))
            return;
          const sim::Reference* reduced = op == Op::AllReduce || op == Op::Reduce ? &shared_ref.v
                                          : op == Op::ReduceScatter ? &expect_rs : nullptr;
          const sim::CheckResult cr = reduced ? sim::compare(hb, reduced->bytes.data(), reduced->tol_at(0), n_out, mt)
                                              : sim::compare(hb, expect.data(), nullptr, n_out, mt);
          if (!cr.ok()) {
            rows[k].ok = false;
            if (errors.size() < 20) errors.push_back("rank " + std::to_string(r) + " size " + std::to_string(bytes) + ": " + cr.detail);
          }
        }
      }
      if (++rows[k].done == n) print_row(k);  // the last rank through this size prints it
    }
  };
  std::string run_error;
  try {
    sim::run_program(*topo, program, opt, check);
  } catch (const std::exception& e) {  // the trace could not be created (a file that is not ours, a missing directory)
    run_error = e.what();
  }
  if (run_error.empty() && sim::stop_reason() == sim::kStopTraceError)
    run_error = "--db: writing the trace " + db_file + " failed; the run stopped";
  if (!run_error.empty()) {
    std::fprintf(stderr, "hcomm_test: %s\n", run_error.c_str());
    drop_plot();
    return 2;
  }
  bool all_ok = errors.empty();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (!rows[k].printed) {  // a rank stopped early: the size is reported failed
      rows[k].ok = false;
      print_row(k);
    }
    all_ok = all_ok && (!check || (rows[k].ok && rows[k].timed)) && rows[k].done == nranks;
  }
  for (auto& e : errors) std::fprintf(stderr, "hcomm_test: %s\n", e.c_str());
  if (plot >= 0) {  // one line per algorithm the library chose, over the sizes it chose it for
    std::map<std::string, hcsim::PlotSeries> by_algo;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      if (!rows[k].timed || rows[k].us <= 0) continue;
      const std::string name = std::string(od->name) + " " + (rows[k].algo.empty() ? "-" : rows[k].algo);
      by_algo[name].name = name;
      by_algo[name].points.emplace_back(static_cast<double>(sizes[k]), static_cast<double>(sizes[k]) / (rows[k].us * 1e3) * bus);
    }
    std::vector<hcsim::PlotSeries> series;
    for (auto& [name, s] : by_algo) series.push_back(s);
    hcsim::PlotSpec spec;
    spec.title = std::string(od->name) + " on " + topo->name + " (" + std::to_string(nranks) + " ranks, " + dtype + ")";
    const std::string svg = hcsim::svg_line_plot(spec, series);
    struct stat st {};
    bool wrote = ::fstat(plot, &st) == 0 && (!S_ISREG(st.st_mode) || ::ftruncate(plot, 0) == 0);  // a device is written as it is
    for (std::size_t k = 0; wrote && k < svg.size();) {
      const ssize_t n = ::write(plot, svg.data() + k, svg.size() - k);
      if (n < 0 && errno == EINTR) continue;
      wrote = n > 0;
      k += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    if (::close(plot) != 0 || !wrote) {
      std::fprintf(stderr, "hcomm_test: --plot: cannot write %s\n", plot_file.c_str());
      return 2;
    }
  }
  return all_ok ? 0 : 1;
}

int main(int argc, char* argv[]) {
  sim::prepare_host_process(argv);
  return sc_core::sc_elab_and_sim(argc, argv);
}
