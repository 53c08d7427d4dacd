#include "models/mem/reduce.h"

#include "models/mem/simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace models {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::Int8: return 1;
    case DType::Int16: case DType::Fp16: case DType::Bf16: return 2;
    case DType::Int32: case DType::Fp32: return 4;
    case DType::Int64: case DType::Fp64: return 8;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Fp16: return "fp16";
    case DType::Bf16: return "bf16";
    case DType::Fp32: return "fp32";
    case DType::Fp64: return "fp64";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? std::nanf("") : INFINITY;
  else v = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                                     // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    man |= 0x800000u;
    int shift = 14 - e;
    std::uint32_t half = man >> shift;
    std::uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (man >> 13);
  std::uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // carry may round into exponent: correct
  return static_cast<std::uint16_t>(half);
}

float bf16_to_float(std::uint16_t b) {
  std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

std::uint16_t float_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN stays NaN
  std::uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<std::uint16_t>(x >> 16);
}

namespace {

template <typename T>
T combine(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return static_cast<T>(a + b);
    case ReduceOp::Prod: return static_cast<T>(a * b);
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
  }
  return a;
}

// Integer sum/prod wrap modulo 2^bits as the hardware does; computed unsigned to avoid UB.
template <typename T, typename U>
T combine_int(T a, T b, ReduceOp op) {
  switch (op) {
    // Computed in uint64_t (modular, no promotion to signed int) then truncated to the width.
    case ReduceOp::Sum: return static_cast<T>(static_cast<U>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b)));
    case ReduceOp::Prod: return static_cast<T>(static_cast<U>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b)));
    default: return combine(a, b, op);
  }
}

// Element loop over unaligned buffers; Combine is the element arithmetic and Op a constant, so
// the loop has no branch per element and vectorises.
template <typename T, T (*Combine)(T, T, ReduceOp), ReduceOp Op>
inline __attribute__((always_inline)) void reduce_loop(void* dst, const void* src, std::size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  for (std::size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, d + i * sizeof(T), sizeof(T));
    std::memcpy(&b, s + i * sizeof(T), sizeof(T));
    T r = Combine(a, b, Op);
    std::memcpy(d + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename T, T (*Combine)(T, T, ReduceOp)>
inline __attribute__((always_inline)) void reduce_elems_op(void* dst, const void* src, std::size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: reduce_loop<T, Combine, ReduceOp::Sum>(dst, src, n); break;
    case ReduceOp::Prod: reduce_loop<T, Combine, ReduceOp::Prod>(dst, src, n); break;
    case ReduceOp::Max: reduce_loop<T, Combine, ReduceOp::Max>(dst, src, n); break;
    case ReduceOp::Min: reduce_loop<T, Combine, ReduceOp::Min>(dst, src, n); break;
  }
}

// One function per element type, each with its vector clones.
HCSIM_VECTOR_CLONES void reduce_i8(void* d, const void* s, std::size_t n, ReduceOp op) { reduce_elems_op<std::int8_t, combine_int<std::int8_t, std::uint8_t>>(d, s, n, op); }
HCSIM_VECTOR_CLONES void reduce_i16(void* d, const void* s, std::size_t n, ReduceOp op) { reduce_elems_op<std::int16_t, combine_int<std::int16_t, std::uint16_t>>(d, s, n, op); }
HCSIM_VECTOR_CLONES void reduce_i32(void* d, const void* s, std::size_t n, ReduceOp op) { reduce_elems_op<std::int32_t, combine_int<std::int32_t, std::uint32_t>>(d, s, n, op); }
HCSIM_VECTOR_CLONES void reduce_i64(void* d, const void* s, std::size_t n, ReduceOp op) { reduce_elems_op<std::int64_t, combine_int<std::int64_t, std::uint64_t>>(d, s, n, op); }
HCSIM_VECTOR_CLONES void reduce_f32(void* d, const void* s, std::size_t n, ReduceOp op) { reduce_elems_op<float, combine<float>>(d, s, n, op); }
HCSIM_VECTOR_CLONES void reduce_f64(void* d, const void* s, std::size_t n, ReduceOp op) { reduce_elems_op<double, combine<double>>(d, s, n, op); }

template <float (*ToF)(std::uint16_t), std::uint16_t (*FromF)(float)>
void reduce_16(void* dst, const void* src, std::size_t n, ReduceOp op) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t a, b;
    std::memcpy(&a, d + i * 2, 2);
    std::memcpy(&b, s + i * 2, 2);
    std::uint16_t r = FromF(combine(ToF(a), ToF(b), op));
    std::memcpy(d + i * 2, &r, 2);
  }
}

}  // namespace

void reduce_inplace(void* dst, const void* src, std::size_t bytes, DType t, ReduceOp op) {
  std::size_t n = bytes / dtype_size(t);
  switch (t) {
    case DType::Int8: reduce_i8(dst, src, n, op); break;
    case DType::Int16: reduce_i16(dst, src, n, op); break;
    case DType::Int32: reduce_i32(dst, src, n, op); break;
    case DType::Int64: reduce_i64(dst, src, n, op); break;
    case DType::Fp16: reduce_16<half_to_float, float_to_half>(dst, src, n, op); break;
    case DType::Bf16: reduce_16<bf16_to_float, float_to_bf16>(dst, src, n, op); break;
    case DType::Fp32: reduce_f32(dst, src, n, op); break;
    case DType::Fp64: reduce_f64(dst, src, n, op); break;
  }
}

}  // namespace models
