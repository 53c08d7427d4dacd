// Workload payloads and their host-side reference results. The inputs are a pure function of
// (seed, rank, step, rep, world, element) so that every rank and the checker agree without
// exchanging data; references are computed on the host with plain arithmetic, independently of
// the models. The value grids, the probe elements and the comparison rules are described in
// docs/algorithms/mesh.md#result-checks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/mem/reduce.h"

namespace sim {

struct PayloadKey {
  std::uint64_t seed = 1;
  std::uint32_t step = 0, rep = 0;
  /// Ranks whose inputs exist (the world the checked communicators are drawn from): the layout of
  /// the probe elements, where one rank's contribution alone decides the result. 0: no probes.
  std::uint32_t world = 0;
};

/// Element i of rank r's input, as a double exactly representable in the dtype.
double input_value(const PayloadKey& k, std::uint32_t rank, std::uint64_t i, models::DType t, models::ReduceOp op);
/// Fill `buf` (count elements of dtype t) with rank r's input, from element `first` on.
void fill_input(void* buf, std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k, std::uint32_t rank,
                std::uint64_t first = 0);

/// A reference result: the expected bytes and, for a floating-point sum whose inputs do not make
/// every element exact in any order, each element's tolerance (0 where that element is exact);
/// `tol` is empty when every element must match bit for bit.
struct Reference {
  std::vector<std::uint8_t> bytes;
  std::vector<double> tol;
  const double* tol_at(std::uint64_t i) const { return tol.empty() ? nullptr : tol.data() + i; }
};

/// Is a reduction of `nranks` inputs of dtype t exact in any order at every element (so that the
/// comparison is bit for bit)? Integers (wrapping), max, min and prod always; float sums while
/// nranks times the grid's largest |numerator| fits the significand.
bool reduction_exact(models::DType t, models::ReduceOp op, std::uint32_t nranks);

/// Host reference of an all-reduce over ranks 0 .. nranks-1 (`out` reuses its storage).
void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         std::uint32_t nranks, Reference* out);
/// The same over the inputs of the given ranks, in that order (a shrunk communicator's survivors;
/// a rank listed twice counts twice).
void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         const std::vector<std::uint32_t>& ranks, Reference* out);
Reference allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                              std::uint32_t nranks);

struct CheckResult {
  std::uint64_t mismatches = 0;
  std::uint64_t first_bad = 0;
  double max_err = 0;    ///< the largest error of a mismatch, NaN if one was NaN
  double tolerance = 0;  ///< the largest tolerance an element was given (0: bit for bit)
  bool exact = true;     ///< mode: every element compared bit for bit ("exact"), else "bound"
  std::string detail;    ///< empty when ok
  bool ok() const { return mismatches == 0; }
  const char* mode() const { return exact ? "exact" : "bound"; }
};

/// Compare `got` against `ref` element-wise: bit for bit where `tol` is null or tol[i] is 0,
/// else |got - ref| <= tol[i] (a NaN never passes). `index_base`: the index of got[0] and ref[0]
/// in the whole buffer, for first_bad and the detail (a buffer compared in parts, merged by
/// merge_check).
CheckResult compare(const void* got, const void* ref, const double* tol, std::uint64_t count, models::DType t,
                    std::uint64_t index_base = 0);
/// Compare `count` elements at `got` exactly with rank `rank`'s input from element `first` on
/// (`op`: the reduction the input was generated for), generating the input a part at a time:
/// the result of compare against the whole input, indices counted from `got`.
CheckResult compare_input(const void* got, std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                          std::uint32_t rank, std::uint64_t first = 0);
/// Fold the result of comparing the next part of a buffer (compare with its index_base) into
/// `into`, the result of the parts before it: the same result as one compare of them all.
void merge_check(CheckResult* into, const CheckResult& part);

}  // namespace sim
