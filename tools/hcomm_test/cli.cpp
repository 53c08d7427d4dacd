// hcomm_test's command-line surface (tools/hcomm_test/cli.h).
#include "cli.h"

#include <cstdio>
#include <optional>

#include "sim/config/units.h"

namespace hcomm_test_cli {

const char* const kUsage =
    "usage: hcomm_test OPERATION [options]\n"
    "  OPERATION  allreduce allgather reducescatter broadcast reduce scatter alltoall alltoallv sendrecv\n"
    "  -b SIZE   minimum bytes (default 8K; units B, K, M, G). The size is per rank, as in hccl_test and\n"
    "            nccl-tests: the vector for allreduce, broadcast, reduce, sendrecv; the whole buffer of\n"
    "            n blocks for allgather (output), reducescatter (input), scatter (root's input),\n"
    "            alltoall and alltoallv\n"
    "  -e SIZE   maximum bytes (default 64M)\n"
    "  -f N      multiply the size by N each step (default 2)\n"
    "  -d TYPE   int8 int16 int32 int64 fp16 bf16 fp32 fp64 (default fp32)\n"
    "  -o OP     sum prod max min (default sum; allreduce, reducescatter, reduce)\n"
    "  -r N      root rank (default 0; broadcast, reduce, scatter); must be a rank of the run\n"
    "  -p N      NPUs per server to use (default: all of the topology's)\n"
    "  -n N      timed iterations per size (default 20)\n"
    "  -w N      warm-up iterations (default 5)\n"
    "  -c 0|1    check results against a host reference (default 1)\n"
    "  --topology FILE  cluster to simulate (default topologies/atlas800t-a2.json)\n"
    "  --fidelity TIER  RoCE network granularity: packet, chunk (default, 64 KiB units) or flow\n"
    "  --algo SPEC      force the algorithm (the communicator's config.algo, HCOMM_ALGO syntax):\n"
    "                   \"level0:NA;level1:NHR\", per operation \"allgather=level0:NA;level1:NB\", or one\n"
    "                   family for both levels: NA ring H-D_R NHR NB DOUBLE_TREE pairwise star mesh\n"
    "                   pipeline\n"
    "  --max-memory SIZE  refuse (exit 2) when the checked run needs more host memory (default: MemAvailable)\n"
    "  --plot FILE      also write busbw against size as an SVG plot, one line per algorithm chosen\n"
    "  --db FILE        also write the run's SQLite trace, tasks included (docs/trace-schema.md)\n"
    "  --force          replace an existing --plot FILE that is not an SVG plot, or --db FILE that is not\n"
    "                   an hcsim trace (without it: exit 2). Neither may be the --topology file, its rank\n"
    "                   table or the other output, even with --force (docs/tools.md#outputs)\n"
    "  -h, --help       this text\n"
    "The collective buffer is 512 MiB per rank unless HCOMM_BUFFSIZE_MB or HCCL_BUFFSIZE says otherwise\n"
    "(the library's own default is 256 MiB). Columns: data_size(Bytes) aveg_time(us) alg_bandwidth(GB/s)\n"
    "check_result (as hccl_test), then bus_bandwidth(GB/s) (algbw x nccl-tests' factor: allreduce\n"
    "2(n-1)/n; allgather, reducescatter, scatter, alltoall(v) (n-1)/n; broadcast, reduce, sendrecv 1)\n"
    "and the algorithm the library chose for that size.\n";

int usage(const std::string& m) {
  std::fprintf(stderr, "hcomm_test: %s\n\n%s", m.c_str(), kUsage);
  return 2;
}

// The first `len` characters as an integer of the number grammar (sim/config/units.h: digits only, no
// sign or spaces, at most 2^64 - 1).
bool parse_u64(const std::string& s, std::size_t len, std::uint64_t* out) {
  std::string why;
  auto v = len <= s.size() ? sim::parse_uint(s.substr(0, len), &why) : std::nullopt;
  if (v) *out = *v;
  return v.has_value();
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

namespace {
const OpDesc kOps[] = {
    {"allreduce", Op::AllReduce, "allreduce", true, false, false},
    {"allgather", Op::AllGather, "allgather", false, false, true},
    {"reducescatter", Op::ReduceScatter, "reduce_scatter", true, false, true},
    {"broadcast", Op::Broadcast, "broadcast", false, true, false},
    {"reduce", Op::Reduce, "reduce", true, true, false},
    {"scatter", Op::Scatter, "scatter", false, true, true},
    {"alltoall", Op::AllToAll, "alltoall", false, false, true},
    {"alltoallv", Op::AllToAllV, "alltoallv", false, false, true},
    {"sendrecv", Op::SendRecv, "send", false, false, false},
};
}  // namespace

const OpDesc* find_op(const std::string& name) {
  for (const auto& o : kOps)
    if (name == o.name) return &o;
  return nullptr;
}

// nccl-tests' bus bandwidth factors (PERFORMANCE.md): what each rank's busiest link carries
// relative to the size.
double busbw_factor(Op op, std::uint32_t n) {
  const double d = n;
  switch (op) {
    case Op::AllReduce: return 2 * (d - 1) / d;
    case Op::AllGather:
    case Op::ReduceScatter:
    case Op::Scatter:
    case Op::AllToAll:
    case Op::AllToAllV: return (d - 1) / d;
    default: return 1;
  }
}

// alltoallv's uneven counts: rank i sends j c + ((i + j) mod 3) - 1 elements (at least 0), so
// the counts differ per pair while the mean stays c. Symmetric: what i sends j, j sends i.
std::uint64_t v_count(std::uint64_t c, std::uint32_t i, std::uint32_t j) {
  const std::uint64_t d = (i + j) % 3;
  return d == 0 ? (c > 0 ? c - 1 : 0) : c + d - 1;
}

}  // namespace hcomm_test_cli
