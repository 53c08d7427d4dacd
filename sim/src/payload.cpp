#include "sim/payload.h"

#include "models/mem/simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace sim {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool is_int(models::DType t) {
  return t == models::DType::Int8 || t == models::DType::Int16 || t == models::DType::Int32 || t == models::DType::Int64;
}

double unit_roundoff(models::DType t) {
  switch (t) {
    case models::DType::Fp16: return std::ldexp(1.0, -11);
    case models::DType::Bf16: return std::ldexp(1.0, -8);
    case models::DType::Fp32: return std::ldexp(1.0, -24);
    case models::DType::Fp64: return std::ldexp(1.0, -53);
    default: return 0;
  }
}

double max_abs_input(models::DType t) {
  switch (t) {
    case models::DType::Fp16: return 2;
    case models::DType::Bf16: return 2;
    default: return is_int(t) ? 100 : 4;
  }
}

void store(void* buf, std::uint64_t i, models::DType t, double v, std::uint64_t int_bits) {
  auto* b = static_cast<std::uint8_t*>(buf);
  switch (t) {
    case models::DType::Int8: { auto x = static_cast<std::uint8_t>(int_bits); std::memcpy(b + i, &x, 1); break; }
    case models::DType::Int16: { auto x = static_cast<std::uint16_t>(int_bits); std::memcpy(b + 2 * i, &x, 2); break; }
    case models::DType::Int32: { auto x = static_cast<std::uint32_t>(int_bits); std::memcpy(b + 4 * i, &x, 4); break; }
    case models::DType::Int64: { std::memcpy(b + 8 * i, &int_bits, 8); break; }
    case models::DType::Fp16: { auto x = models::float_to_half(static_cast<float>(v)); std::memcpy(b + 2 * i, &x, 2); break; }
    case models::DType::Bf16: { auto x = models::float_to_bf16(static_cast<float>(v)); std::memcpy(b + 2 * i, &x, 2); break; }
    case models::DType::Fp32: { auto x = static_cast<float>(v); std::memcpy(b + 4 * i, &x, 4); break; }
    case models::DType::Fp64: { std::memcpy(b + 8 * i, &v, 8); break; }
  }
}

double load(const void* buf, std::uint64_t i, models::DType t) {
  auto* b = static_cast<const std::uint8_t*>(buf);
  switch (t) {
    case models::DType::Int8: { std::int8_t x; std::memcpy(&x, b + i, 1); return x; }
    case models::DType::Int16: { std::int16_t x; std::memcpy(&x, b + 2 * i, 2); return x; }
    case models::DType::Int32: { std::int32_t x; std::memcpy(&x, b + 4 * i, 4); return x; }
    case models::DType::Int64: { std::int64_t x; std::memcpy(&x, b + 8 * i, 8); return static_cast<double>(x); }
    case models::DType::Fp16: { std::uint16_t x; std::memcpy(&x, b + 2 * i, 2); return models::half_to_float(x); }
    case models::DType::Bf16: { std::uint16_t x; std::memcpy(&x, b + 2 * i, 2); return models::bf16_to_float(x); }
    case models::DType::Fp32: { float x; std::memcpy(&x, b + 4 * i, 4); return x; }
    case models::DType::Fp64: { double x; std::memcpy(&x, b + 8 * i, 8); return x; }
  }
  return 0;
}

std::uint64_t load_bits(const void* buf, std::uint64_t i, std::size_t esz) {
  std::uint64_t x = 0;
  std::memcpy(&x, static_cast<const std::uint8_t*>(buf) + esz * i, esz);
  return x;
}

}  // namespace

namespace {
std::uint64_t stream_base(const PayloadKey& k, std::uint32_t rank) {
  return mix(k.seed ^ mix((static_cast<std::uint64_t>(rank) << 40) ^ (static_cast<std::uint64_t>(k.step) << 20) ^ k.rep));
}
// One splitmix per element; the value grids are chosen so that sums of up to 8 ranks are exact.
inline double value_from(std::uint64_t h, models::DType t, bool prod) {
  if (is_int(t)) return prod ? static_cast<double>(h % 5) - 2 : static_cast<double>(h % 201) - 100;
  switch (t) {
    case models::DType::Fp16: return prod ? 1 + (static_cast<double>(h % 16) - 8) / 64 : (static_cast<double>(h % 64) - 32) / 16;
    case models::DType::Bf16: return prod ? 1 + (static_cast<double>(h % 8) - 4) / 32 : (static_cast<double>(h % 32) - 16) / 8;
    default: return prod ? 1 + (static_cast<double>(h % 64) - 32) / 1024 : (static_cast<double>(h % 8192) - 4096) / 1024;
  }
}
}  // namespace

double input_value(const PayloadKey& k, std::uint32_t rank, std::uint64_t i, models::DType t, models::ReduceOp op) {
  return value_from(mix(stream_base(k, rank) + i * 0x9e3779b97f4a7c15ULL), t, op == models::ReduceOp::Prod);
}

namespace {
// fp32, the common payload: the values of value_from computed in integers, then scaled by 2^-10
// (exact: every value is k/1024 with |k| <= 4096), so the loops vectorise (models/mem/simd.h).

constexpr std::uint64_t kStride = 0x9e3779b97f4a7c15ULL;

HCSIM_VECTOR_CLONES void fill_fp32(float* f, std::uint64_t n, std::uint64_t b, bool prod) {
  if (prod)  // 1 + (h % 64 - 32) / 1024
    for (std::uint64_t i = 0; i < n; ++i) f[i] = static_cast<float>(static_cast<std::int32_t>(mix(b + i * kStride) & 63) + 992) * (1.0f / 1024);
  else  // (h % 8192 - 4096) / 1024
    for (std::uint64_t i = 0; i < n; ++i) f[i] = static_cast<float>(static_cast<std::int32_t>(mix(b + i * kStride) & 8191) - 4096) * (1.0f / 1024);
}

// fp32 sum reference: the inputs' numerators (k of k/1024) summed exactly in integers; the double
// sum of the general path is the same number (exact below 2^53 / 1024), so the bytes are the same.
HCSIM_VECTOR_CLONES void sum_fp32_numerators(std::int64_t* acc, std::uint64_t n, std::uint64_t b, bool first) {
  if (first)
    for (std::uint64_t i = 0; i < n; ++i) acc[i] = static_cast<std::int32_t>(mix(b + i * kStride) & 8191) - 4096;
  else
    for (std::uint64_t i = 0; i < n; ++i) acc[i] += static_cast<std::int32_t>(mix(b + i * kStride) & 8191) - 4096;
}
// Every dtype's value is a function of h % m alone (value_from), m the size of its grid: 201 or 5
// for integers, a power of two for floats. The residues of a block of elements: a mask for powers
// of two; for 201 and 5 the 64-bit residue from the 32-bit halves,
// h % m = ((h >> 32) % m * (2^32 % m) + (h mod 2^32) % m) % m, which vectorises.
std::uint32_t grid_size(models::DType t, bool prod) {
  if (is_int(t)) return prod ? 5 : 201;
  switch (t) {
    case models::DType::Fp16: return prod ? 16 : 64;
    case models::DType::Bf16: return prod ? 8 : 32;
    default: return prod ? 64 : 8192;
  }
}

template <std::uint32_t M>
inline std::uint32_t mod_u64(std::uint64_t h) {
  constexpr std::uint32_t k = static_cast<std::uint32_t>((std::uint64_t{1} << 32) % M);
  const auto hi = static_cast<std::uint32_t>(h >> 32), lo = static_cast<std::uint32_t>(h);
  return (hi % M * k + lo % M) % M;
}

HCSIM_VECTOR_CLONES void residues(std::uint32_t* r, std::uint64_t n, std::uint64_t b, std::uint32_t m) {
  if (m == 201) for (std::uint64_t i = 0; i < n; ++i) r[i] = mod_u64<201>(mix(b + i * kStride));
  else if (m == 5) for (std::uint64_t i = 0; i < n; ++i) r[i] = mod_u64<5>(mix(b + i * kStride));
  else for (std::uint64_t i = 0; i < n; ++i) r[i] = static_cast<std::uint32_t>(mix(b + i * kStride) & (m - 1));
}

// The grid's values (double) and their encodings in the dtype, by residue: store() of each, so a
// table lookup gives the bytes the per-element formula gives.
struct Grid {
  std::vector<double> value;
  std::vector<std::uint8_t> bytes;
  Grid(models::DType t, bool prod) {
    const std::uint32_t m = grid_size(t, prod);
    value.resize(m);
    bytes.resize(std::size_t{m} * models::dtype_size(t));
    for (std::uint32_t r = 0; r < m; ++r) {
      value[r] = value_from(r, t, prod);
      store(bytes.data(), r, t, value[r], static_cast<std::uint64_t>(static_cast<std::int64_t>(value[r])));
    }
  }
};

template <typename T>
void encode(void* out, const std::uint32_t* r, std::uint64_t n, const std::uint8_t* table) {
  auto* o = static_cast<unsigned char*>(out);
  for (std::uint64_t i = 0; i < n; ++i) std::memcpy(o + i * sizeof(T), table + std::size_t{r[i]} * sizeof(T), sizeof(T));
}
}  // namespace

void fill_input(void* buf, std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k, std::uint32_t rank,
                std::uint64_t first) {
  const std::uint64_t base = stream_base(k, rank) + first * kStride;
  const bool prod = op == models::ReduceOp::Prod;
  if (t == models::DType::Fp32) {
    fill_fp32(static_cast<float*>(buf), count, base, prod);
    return;
  }
  // Other dtypes: residues by block, then the grid's encoding of each.
  const Grid g(t, prod);
  const std::uint32_t m = grid_size(t, prod);
  const std::size_t esz = models::dtype_size(t);
  constexpr std::uint64_t kBlock = 2048;
  std::uint32_t r[kBlock];
  for (std::uint64_t i0 = 0; i0 < count; i0 += kBlock) {
    const std::uint64_t n = std::min(kBlock, count - i0);
    residues(r, n, base + i0 * kStride, m);
    void* out = static_cast<unsigned char*>(buf) + i0 * esz;
    switch (esz) {
      case 1: encode<std::uint8_t>(out, r, n, g.bytes.data()); break;
      case 2: encode<std::uint16_t>(out, r, n, g.bytes.data()); break;
      case 4: encode<std::uint32_t>(out, r, n, g.bytes.data()); break;
      default: encode<std::uint64_t>(out, r, n, g.bytes.data()); break;
    }
  }
}

void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         std::uint32_t nranks, std::vector<std::uint8_t>* out) {
  std::vector<std::uint32_t> ranks(nranks);
  for (std::uint32_t r = 0; r < nranks; ++r) ranks[r] = r;
  allreduce_reference(count, t, op, k, ranks, out);
}

void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         const std::vector<std::uint32_t>& ranks, std::vector<std::uint8_t>* out) {
  const auto nranks = static_cast<std::uint32_t>(ranks.size());
  // Per block of elements, ranks outer and elements inner: each element accumulates rank 0, 1, ...
  // in that order, in double (floats) and in wrapping uint64 (integers), in a block that stays in
  // L1 — no count-sized accumulator, and the output is written once.
  const bool prod = op == models::ReduceOp::Prod, ints = is_int(t);
  constexpr std::uint64_t kBlock = 2048;
  double acc[kBlock];
  std::uint64_t iacc[kBlock];
  std::vector<std::uint64_t> base(nranks);
  for (std::uint32_t r = 0; r < nranks; ++r) base[r] = stream_base(k, ranks[r]);
  out->resize(count * models::dtype_size(t));
  if (t == models::DType::Fp32 && op == models::ReduceOp::Sum) {
    std::int64_t num[kBlock];
    float f[kBlock];
    for (std::uint64_t i0 = 0; i0 < count; i0 += kBlock) {
      const std::uint64_t n = std::min(kBlock, count - i0);
      for (std::uint32_t r = 0; r < nranks; ++r) sum_fp32_numerators(num, n, base[r] + i0 * kStride, r == 0);
      for (std::uint64_t j = 0; j < n; ++j) f[j] = static_cast<float>(static_cast<double>(num[j]) * (1.0 / 1024));
      std::memcpy(out->data() + 4 * i0, f, 4 * n);
    }
    return;
  }
  const Grid g(t, prod);  // each element's value by its residue (value_from's, looked up)
  const std::uint32_t m = grid_size(t, prod);
  std::uint32_t res[kBlock];
  for (std::uint64_t i0 = 0; i0 < count; i0 += kBlock) {
    const std::uint64_t n = std::min(kBlock, count - i0);
    for (std::uint32_t r = 0; r < nranks; ++r) {
      residues(res, n, base[r] + i0 * kStride, m);
      auto val = [&](std::uint64_t j) { return g.value[res[j]]; };
      if (r == 0) {
        for (std::uint64_t j = 0; j < n; ++j) acc[j] = val(j);
        if (ints) for (std::uint64_t j = 0; j < n; ++j) iacc[j] = static_cast<std::uint64_t>(static_cast<std::int64_t>(acc[j]));
        continue;
      }
      // One loop per operation (the op and the dtype class hoisted out of the element loop).
      switch (op) {
        case models::ReduceOp::Sum:
          if (ints) for (std::uint64_t j = 0; j < n; ++j) { const double v = val(j); acc[j] += v; iacc[j] += static_cast<std::uint64_t>(static_cast<std::int64_t>(v)); }  // wraps modulo 2^64; truncated on store
          else for (std::uint64_t j = 0; j < n; ++j) acc[j] += val(j);
          break;
        case models::ReduceOp::Prod:
          if (ints) for (std::uint64_t j = 0; j < n; ++j) { const double v = val(j); acc[j] *= v; iacc[j] *= static_cast<std::uint64_t>(static_cast<std::int64_t>(v)); }
          else for (std::uint64_t j = 0; j < n; ++j) acc[j] *= val(j);
          break;
        case models::ReduceOp::Max:
          for (std::uint64_t j = 0; j < n; ++j) acc[j] = std::max(acc[j], val(j));
          if (ints) for (std::uint64_t j = 0; j < n; ++j) iacc[j] = static_cast<std::uint64_t>(static_cast<std::int64_t>(acc[j]));
          break;
        case models::ReduceOp::Min:
          for (std::uint64_t j = 0; j < n; ++j) acc[j] = std::min(acc[j], val(j));
          if (ints) for (std::uint64_t j = 0; j < n; ++j) iacc[j] = static_cast<std::uint64_t>(static_cast<std::int64_t>(acc[j]));
          break;
      }
    }
    if (t == models::DType::Fp32) {
      float f[kBlock];
      for (std::uint64_t j = 0; j < n; ++j) f[j] = static_cast<float>(acc[j]);
      std::memcpy(out->data() + 4 * i0, f, 4 * n);
    } else {
      for (std::uint64_t j = 0; j < n; ++j) store(out->data(), i0 + j, t, acc[j], ints ? iacc[j] : 0);
    }
  }
}

std::vector<std::uint8_t> allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op,
                                              const PayloadKey& k, std::uint32_t nranks) {
  std::vector<std::uint8_t> out;
  allreduce_reference(count, t, op, k, nranks, &out);
  return out;
}

namespace {
std::string mismatch_detail(std::uint64_t i, double got, double want) {
  std::ostringstream os;
  os << "element " << i << ": got " << got << ", expected " << want;
  return os.str();
}
}  // namespace

void merge_check(CheckResult* into, const CheckResult& part) {
  into->tolerance = std::max(into->tolerance, part.tolerance);
  if (part.mismatches == 0) return;
  if (into->mismatches == 0) {
    into->first_bad = part.first_bad;
    into->detail = part.detail;
  }
  into->mismatches += part.mismatches;
  if (!std::isnan(into->max_err) && !(part.max_err <= into->max_err)) into->max_err = part.max_err;  // NaN sticks
}

CheckResult compare(const void* got, const void* ref, std::uint64_t count, models::DType t, models::ReduceOp op,
                    std::uint32_t p, std::uint64_t index_base) {
  CheckResult r;
  const std::size_t esz = models::dtype_size(t);
  const double u = unit_roundoff(t);
  const double pd = static_cast<double>(p);
  double abs_tol = 0, rel_tol = 0;
  if (!is_int(t)) {
    if (op == models::ReduceOp::Sum) abs_tol = (pd + 1) * pd * u * max_abs_input(t);
    if (op == models::ReduceOp::Prod) rel_tol = 2 * (pd + 1) * u;
  }
  if (std::memcmp(got, ref, count * esz) == 0) {  // fast path: identical bytes need no arithmetic
    r.tolerance = abs_tol;
    return r;
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    bool bad;
    double err = 0;
    if (is_int(t)) {
      bad = load_bits(got, i, esz) != load_bits(ref, i, esz);
      if (bad) err = std::fabs(load(got, i, t) - load(ref, i, t));
    } else {
      double g = load(got, i, t), e = load(ref, i, t);
      err = std::fabs(g - e);
      double tol = abs_tol + rel_tol * std::fabs(e);
      bad = !(err <= tol);  // NaN counts as bad
      r.tolerance = std::max(r.tolerance, tol);
    }
    if (bad) {
      if (r.mismatches == 0) {
        r.first_bad = index_base + i;
        r.detail = mismatch_detail(index_base + i, load(got, i, t), load(ref, i, t));
      }
      ++r.mismatches;
      if (!std::isnan(r.max_err) && !(err <= r.max_err)) r.max_err = err;  // a NaN error sticks
    }
  }
  return r;
}

CheckResult compare_input(const void* got, std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                          std::uint32_t rank, std::uint64_t first) {
  constexpr std::uint64_t kPartElems = 1 << 18;  // 1 MiB of fp32: the expected bytes stay in cache
  const std::size_t esz = models::dtype_size(t);
  std::vector<std::uint8_t> want(std::min(count, kPartElems) * esz);
  CheckResult cr;
  for (std::uint64_t i = 0; i < count; i += kPartElems) {
    const std::uint64_t n = std::min(kPartElems, count - i);
    fill_input(want.data(), n, t, op, k, rank, first + i);
    merge_check(&cr, compare(static_cast<const std::uint8_t*>(got) + i * esz, want.data(), n, t, models::ReduceOp::Max, 1, i));
  }
  return cr;
}

}  // namespace sim
