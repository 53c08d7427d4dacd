// hcomm_test's command-line surface (tools/hcomm_test/main.cpp): the usage text, hccl_test's size
// grammar, the operations it runs with their properties, nccl-tests' bus bandwidth factors and
// alltoallv's uneven counts. Plain C++: no simulator state.
#pragma once
#include <cstdint>
#include <string>

namespace hcomm_test_cli {

extern const char* const kUsage;

/// Prints `m` and the usage text on stderr; returns 2 (bad usage).
int usage(const std::string& m);

/// The first `len` characters as an integer of the number grammar (sim/config/units.h: digits only, no
/// sign or spaces, at most 2^64 - 1).
bool parse_u64(const std::string& s, std::size_t len, std::uint64_t* out);

/// hccl_test sizes: plain bytes or K/M/G suffixes (powers of 1024); positive, no overflow.
bool parse_size(const std::string& s, std::uint64_t* out);

enum class Op { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Scatter, AllToAll, AllToAllV, SendRecv };

struct OpDesc {
  const char* name;
  Op op;
  const char* kind;  ///< OpInfo.kind the library reports for it
  bool reduces, rooted;
  bool blocks;       ///< the size is n blocks of size / n
};
/// The operation of that command-line name, or nullptr.
const OpDesc* find_op(const std::string& name);

/// nccl-tests' bus bandwidth factors (PERFORMANCE.md): what each rank's busiest link carries
/// relative to the size.
double busbw_factor(Op op, std::uint32_t n);

/// alltoallv's uneven counts: rank i sends j c + ((i + j) mod 3) - 1 elements (at least 0), so
/// the counts differ per pair while the mean stays c. Symmetric: what i sends j, j sends i.
std::uint64_t v_count(std::uint64_t c, std::uint32_t i, std::uint32_t j);

}  // namespace hcomm_test_cli
