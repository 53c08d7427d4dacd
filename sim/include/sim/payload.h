// Workload payloads and their host-side reference results. The inputs are a pure function of
// (seed, rank, step, rep, element) so that every rank and the checker agree without exchanging
// data; references are computed on the host with plain arithmetic, independently of the models.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/reduce.h"

namespace sim {

struct PayloadKey {
  std::uint64_t seed = 1;
  std::uint32_t step = 0, rep = 0;
};

/// Element i of rank r's input, as a double exactly representable in the dtype.
double input_value(const PayloadKey& k, std::uint32_t rank, std::uint64_t i, models::DType t, models::ReduceOp op);
/// Fill `buf` (count elements of dtype t) with rank r's input, from element `first` on.
void fill_input(void* buf, std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k, std::uint32_t rank,
                std::uint64_t first = 0);

/// Host reference of an all-reduce over `nranks` ranks, encoded in the dtype.
std::vector<std::uint8_t> allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op,
                                              const PayloadKey& k, std::uint32_t nranks);
/// The same into *out, reusing its storage (a run computes one reference per repetition).
void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         std::uint32_t nranks, std::vector<std::uint8_t>* out);
/// The same over the inputs of the given ranks, in that order (a shrunk communicator's survivors).
void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         const std::vector<std::uint32_t>& ranks, std::vector<std::uint8_t>* out);

struct CheckResult {
  std::uint64_t mismatches = 0;
  std::uint64_t first_bad = 0;
  double max_err = 0, tolerance = 0;  ///< max_err: the largest error of a mismatch, NaN if one was NaN
  std::string detail;  ///< empty when ok
  bool ok() const { return mismatches == 0; }
};

/// Compare `got` against `ref` element-wise: integers exactly, floats within the summation bound
/// (see docs/checks.md): sum |err| <= (p+1)*p*u*max|x|, prod |err| <= 2(p+1)*u*|ref|, max/min exact.
/// `index_base`: the index of got[0] and ref[0] in the whole buffer, for first_bad and the detail
/// (a buffer compared in parts, merged by merge_check).
CheckResult compare(const void* got, const void* ref, std::uint64_t count, models::DType t, models::ReduceOp op,
                    std::uint32_t nranks, std::uint64_t index_base = 0);
/// Compare `count` elements at `got` exactly with rank `rank`'s input from element `first` on
/// (`op`: the reduction the input was generated for), generating the input a part at a time:
/// the result of compare against the whole input, indices counted from `got`.
CheckResult compare_input(const void* got, std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                          std::uint32_t rank, std::uint64_t first = 0);
/// Fold the result of comparing the next part of a buffer (compare with its index_base) into
/// `into`, the result of the parts before it: the same result as one compare of them all.
void merge_check(CheckResult* into, const CheckResult& part);

}  // namespace sim
