// Reduce-inline arithmetic of the SDMA engine: dst[i] = op(dst[i], src[i]) over real element types.
// fp16 and bf16 are converted to fp32, combined, and rounded back to nearest-even, as the
// hardware's reduce units do per element.
#pragma once
#include <cstddef>
#include <cstdint>

namespace models {

enum class DType : std::uint8_t { Int8, Int16, Int32, Int64, Fp16, Bf16, Fp32, Fp64 };
enum class ReduceOp : std::uint8_t { Sum, Prod, Max, Min };

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);
const char* reduce_op_name(ReduceOp op);

/// Apply the reduction over `bytes` bytes (must be a multiple of dtype_size). In-place on dst.
void reduce_inplace(void* dst, const void* src, std::size_t bytes, DType t, ReduceOp op);

float half_to_float(std::uint16_t h);
std::uint16_t float_to_half(float f);
float bf16_to_float(std::uint16_t b);
std::uint16_t float_to_bf16(float f);

}  // namespace models
