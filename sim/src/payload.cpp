#include "sim/payload.h"

#include "models/mem/simd.h"
#include "models/splitmix64.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

namespace sim {
namespace {

using models::splitmix64;

bool is_int(models::DType t) {
  return t == models::DType::Int8 || t == models::DType::Int16 || t == models::DType::Int32 || t == models::DType::Int64;
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
  return splitmix64(k.seed ^ splitmix64((static_cast<std::uint64_t>(rank) << 40) ^ (static_cast<std::uint64_t>(k.step) << 20) ^ k.rep));
}

constexpr std::uint64_t kStride = 0x9e3779b97f4a7c15ULL;

// The value grids (docs/algorithms/mesh.md#result-checks). Every dtype's bulk value is a function
// of h % m alone, m the grid's size: integers h % 201 - 100 (prod: h % 5 - 2); floats k / D with
// k = h % m - m/2 (prod: +-1). `half` is the largest |k|, `prec` the significand's bits.
struct Grid1 {
  std::uint32_t m;
  double denom;
  std::uint32_t half;
  int prec;
};
Grid1 grid_of(models::DType t, bool prod) {
  if (is_int(t)) return prod ? Grid1{5, 1, 2, 64} : Grid1{201, 1, 100, 64};
  if (prod) return Grid1{2, 1, 1, 0};
  switch (t) {
    case models::DType::Fp16: return {64, 16, 32, 11};
    case models::DType::Bf16: return {32, 8, 16, 8};
    case models::DType::Fp64: return {4096, 512, 2048, 53};
    default: return {4096, 512, 2048, 24};
  }
}

inline double bulk_value(std::uint64_t h, models::DType t, bool prod) {
  const Grid1 g = grid_of(t, prod);
  if (is_int(t)) return static_cast<double>(h % g.m) - (prod ? 2 : 100);
  if (prod) return (h & 1) ? -1.0 : 1.0;
  return (static_cast<double>(h & (g.m - 1)) - g.half) / g.denom;
}

// Probe elements: in every even block of `world` elements ([2jW, (2j+1)W)), element i belongs to
// rank i mod W, whose input there alone decides the result: a sum's other ranks hold 0, a
// product's hold +-1, and the owner holds a non-zero value (sum), a factor +-2 or +-1/2 (+-2, +-3
// for integers) (prod), a value above (max) or below (min) every other rank's grid. Any 2W
// consecutive elements hold one probe of every rank.
inline bool probe_element(std::uint32_t world, std::uint64_t i) { return world != 0 && (i / world) % 2 == 0; }

inline double special_value(std::uint64_t h, models::DType t, models::ReduceOp op) {
  const bool ints = is_int(t);
  const Grid1 g = grid_of(t, false);
  switch (op) {
    case models::ReduceOp::Sum: {
      const double v = bulk_value(h, t, false);
      return v != 0 ? v : 1 / g.denom;
    }
    case models::ReduceOp::Prod: {
      static constexpr double kInt[4] = {2, -2, 3, -3}, kFloat[4] = {2, -2, 0.5, -0.5};
      return (ints ? kInt : kFloat)[h & 3];
    }
    case models::ReduceOp::Max: return (g.half + 1 + static_cast<double>(h % 8)) / g.denom;
    case models::ReduceOp::Min: return -(g.half + 1 + static_cast<double>(h % 8)) / g.denom;
  }
  return 0;
}

// A non-owner's value at a probe element.
inline double probe_other(std::uint64_t h, models::DType t, models::ReduceOp op) {
  if (op == models::ReduceOp::Sum) return 0;
  if (op == models::ReduceOp::Prod) return (h & 1) ? -1.0 : 1.0;
  return bulk_value(h, t, false);
}

// f(a, b) for every run [a, b) of probe elements inside [first, first + n).
template <typename F>
void for_probe_runs(std::uint32_t world, std::uint64_t first, std::uint64_t n, F f) {
  if (world == 0) return;
  const std::uint64_t end = first + n;
  std::uint64_t i = first;
  while (i < end) {
    const std::uint64_t blk = i / world;
    const std::uint64_t b = std::min(end, (blk + 1) * world);
    if (blk % 2 == 0) f(i, b);
    i = blk % 2 == 0 ? b : std::min(end, (blk + 1) * world);
  }
}
}  // namespace

double input_value(const PayloadKey& k, std::uint32_t rank, std::uint64_t i, models::DType t, models::ReduceOp op) {
  const std::uint64_t h = splitmix64(stream_base(k, rank) + i * kStride);
  if (probe_element(k.world, i)) return i % k.world == rank ? special_value(h, t, op) : probe_other(h, t, op);
  return bulk_value(h, t, op == models::ReduceOp::Prod);
}

bool reduction_exact(models::DType t, models::ReduceOp op, std::uint32_t nranks) {
  if (is_int(t) || op != models::ReduceOp::Sum) return true;
  const Grid1 g = grid_of(t, false);
  return static_cast<double>(nranks) * g.half <= std::ldexp(1.0, g.prec);
}

namespace {
// fp32, the common payload: the values of bulk_value computed in integers, then scaled by 2^-9
// (exact: every value is k/512 with |k| <= 2048), so the loops vectorise (models/mem/simd.h).
HCSIM_VECTOR_CLONES void fill_fp32(float* f, std::uint64_t n, std::uint64_t b, bool prod) {
  if (prod)  // +-1
    for (std::uint64_t i = 0; i < n; ++i) f[i] = 1.0f - 2.0f * static_cast<float>(splitmix64(b + i * kStride) & 1);
  else  // (h % 4096 - 2048) / 512
    for (std::uint64_t i = 0; i < n; ++i) f[i] = static_cast<float>(static_cast<std::int32_t>(splitmix64(b + i * kStride) & 4095) - 2048) * (1.0f / 512);
}

// A float sum's bulk numerators (k of k/D, m a power of two) added into acc exactly in integers,
// their absolute values into aacc when it is given.
HCSIM_VECTOR_CLONES void sum_numerators(std::int64_t* acc, std::int64_t* aacc, std::uint64_t n, std::uint64_t b, std::uint64_t mask,
                                        std::int64_t half, bool first) {
  if (first)
    for (std::uint64_t i = 0; i < n; ++i) acc[i] = static_cast<std::int64_t>(splitmix64(b + i * kStride) & mask) - half;
  else
    for (std::uint64_t i = 0; i < n; ++i) acc[i] += static_cast<std::int64_t>(splitmix64(b + i * kStride) & mask) - half;
  if (!aacc) return;
  if (first)
    for (std::uint64_t i = 0; i < n; ++i) { const std::int64_t v = static_cast<std::int64_t>(splitmix64(b + i * kStride) & mask) - half; aacc[i] = v < 0 ? -v : v; }
  else
    for (std::uint64_t i = 0; i < n; ++i) { const std::int64_t v = static_cast<std::int64_t>(splitmix64(b + i * kStride) & mask) - half; aacc[i] += v < 0 ? -v : v; }
}

template <std::uint32_t M>
inline std::uint32_t mod_u64(std::uint64_t h) {
  constexpr std::uint32_t k = static_cast<std::uint32_t>((std::uint64_t{1} << 32) % M);
  const auto hi = static_cast<std::uint32_t>(h >> 32), lo = static_cast<std::uint32_t>(h);
  return (hi % M * k + lo % M) % M;
}

// The residues of a block of elements: a mask for powers of two; for 201 and 5 the 64-bit
// residue from the 32-bit halves, h % m = ((h >> 32) % m * (2^32 % m) + (h mod 2^32) % m) % m,
// which vectorises.
HCSIM_VECTOR_CLONES void residues(std::uint32_t* r, std::uint64_t n, std::uint64_t b, std::uint32_t m) {
  if (m == 201) for (std::uint64_t i = 0; i < n; ++i) r[i] = mod_u64<201>(splitmix64(b + i * kStride));
  else if (m == 5) for (std::uint64_t i = 0; i < n; ++i) r[i] = mod_u64<5>(splitmix64(b + i * kStride));
  else for (std::uint64_t i = 0; i < n; ++i) r[i] = static_cast<std::uint32_t>(splitmix64(b + i * kStride) & (m - 1));
}

// The grid's values (double) and their encodings in the dtype, by residue: store() of each, so a
// table lookup gives the bytes the per-element formula gives.
struct Grid {
  std::vector<double> value;
  std::vector<std::uint8_t> bytes;
  Grid(models::DType t, bool prod) {
    const std::uint32_t m = grid_of(t, prod).m;
    value.resize(m);
    bytes.resize(std::size_t{m} * models::dtype_size(t));
    for (std::uint32_t r = 0; r < m; ++r) {
      value[r] = bulk_value(r, t, prod);
      store(bytes.data(), r, t, value[r], static_cast<std::uint64_t>(static_cast<std::int64_t>(value[r])));
    }
  }
};

template <typename T>
void encode(void* out, const std::uint32_t* r, std::uint64_t n, const std::uint8_t* table) {
  auto* o = static_cast<unsigned char*>(out);
  for (std::uint64_t i = 0; i < n; ++i) std::memcpy(o + i * sizeof(T), table + std::size_t{r[i]} * sizeof(T), sizeof(T));
}

inline void store_value(void* buf, std::uint64_t i, models::DType t, double v) {
  store(buf, i, t, v, static_cast<std::uint64_t>(static_cast<std::int64_t>(v)));
}
}  // namespace

void fill_input(void* buf, std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k, std::uint32_t rank,
                std::uint64_t first) {
  const std::uint64_t sbase = stream_base(k, rank), base = sbase + first * kStride;
  const bool prod = op == models::ReduceOp::Prod;
  const std::size_t esz = models::dtype_size(t);
  if (t == models::DType::Fp32) {
    fill_fp32(static_cast<float*>(buf), count, base, prod);
  } else {  // other dtypes: residues by block, then the grid's encoding of each
    const Grid g(t, prod);
    const std::uint32_t m = grid_of(t, prod).m;
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
  // The probe elements of [first, first + count): the other ranks' values, then this rank's own.
  const bool ints = is_int(t);
  for_probe_runs(k.world, first, count, [&](std::uint64_t a, std::uint64_t b) {
    if (op == models::ReduceOp::Sum) std::memset(static_cast<unsigned char*>(buf) + (a - first) * esz, 0, (b - a) * esz);  // +0 in every dtype
    if (prod && ints)
      for (std::uint64_t i = a; i < b; ++i) store_value(buf, i - first, t, probe_other(splitmix64(sbase + i * kStride), t, op));
    const std::uint64_t own = a - a % k.world + rank;
    if (rank < k.world && own >= a && own < b) store_value(buf, own - first, t, special_value(splitmix64(sbase + own * kStride), t, op));
  });
}

void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         std::uint32_t nranks, Reference* out) {
  std::vector<std::uint32_t> ranks(nranks);
  for (std::uint32_t r = 0; r < nranks; ++r) ranks[r] = r;
  allreduce_reference(count, t, op, k, ranks, out);
}

void allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                         const std::vector<std::uint32_t>& ranks, Reference* out) {
  const auto nranks = static_cast<std::uint32_t>(ranks.size());
  const bool prod = op == models::ReduceOp::Prod, ints = is_int(t);
  const std::size_t esz = models::dtype_size(t);
  constexpr std::uint64_t kBlock = 2048;
  std::vector<std::uint64_t> base(nranks);
  for (std::uint32_t r = 0; r < nranks; ++r) base[r] = stream_base(k, ranks[r]);
  // How often each rank of the world contributes (a probe element's result is its owner's value
  // that many times: 0 for a rank not in the list).
  std::vector<std::uint32_t> mult(k.world, 0);
  for (std::uint32_t q : ranks)
    if (q < k.world) ++mult[q];
  auto owner_h = [&](std::uint64_t i) { return splitmix64(stream_base(k, static_cast<std::uint32_t>(i % k.world)) + i * kStride); };
  out->bytes.resize(count * esz);
  out->tol.clear();
  const Grid1 g1 = grid_of(t, prod);

  if (op == models::ReduceOp::Sum) {
    // Sums in integers, exactly: floats' numerators k of k/D (D a power of two), integers wrapping
    // modulo 2^64 and truncated on store. Per block of elements, ranks outer and elements inner:
    // each element accumulates rank 0, 1, ... in a block that stays in L1.
    const bool bound = !reduction_exact(t, op, nranks);
    if (bound) out->tol.assign(count, 0.0);
    const double limit = std::ldexp(1.0, g1.prec), u = std::ldexp(1.0, -g1.prec);
    std::int64_t acc[kBlock], aacc[kBlock];
    std::uint32_t res[kBlock];
    float f[kBlock];
    for (std::uint64_t i0 = 0; i0 < count; i0 += kBlock) {
      const std::uint64_t n = std::min(kBlock, count - i0);
      if (nranks == 0) std::fill(acc, acc + n, 0), std::fill(aacc, aacc + n, 0);
      for (std::uint32_t r = 0; r < nranks; ++r) {
        if (!ints) {
          sum_numerators(acc, bound ? aacc : nullptr, n, base[r] + i0 * kStride, g1.m - 1, g1.half, r == 0);
          continue;
        }
        residues(res, n, base[r] + i0 * kStride, g1.m);
        if (r == 0) for (std::uint64_t j = 0; j < n; ++j) acc[j] = static_cast<std::int64_t>(res[j]) - 100;
        else for (std::uint64_t j = 0; j < n; ++j) acc[j] = static_cast<std::int64_t>(static_cast<std::uint64_t>(acc[j]) + static_cast<std::uint64_t>(static_cast<std::int64_t>(res[j]) - 100));
      }
      for_probe_runs(k.world, i0, n, [&](std::uint64_t a, std::uint64_t b) {
        for (std::uint64_t i = a; i < b; ++i) {
          const auto v = static_cast<std::int64_t>(special_value(owner_h(i), t, op) * g1.denom);  // its numerator
          const std::uint32_t c = mult[i % k.world];
          acc[i - i0] = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) * c);
          aacc[i - i0] = (v < 0 ? -v : v) * c;
        }
      });
      if (bound)
        for (std::uint64_t j = 0; j < n; ++j) {
          const double s = static_cast<double>(aacc[j]);
          // Exact in any order while every partial sum's numerator fits the significand; else
          // the any-order bound of recursive summation, (p - 1) u sum|x_i|.
          out->tol[i0 + j] = s <= limit ? 0.0 : static_cast<double>(nranks - 1) * u * s / g1.denom;
        }
      if (t == models::DType::Fp32) {
        for (std::uint64_t j = 0; j < n; ++j) f[j] = static_cast<float>(static_cast<double>(acc[j]) * (1.0 / 512));
        std::memcpy(out->bytes.data() + 4 * i0, f, 4 * n);
      } else {
        for (std::uint64_t j = 0; j < n; ++j)
          store(out->bytes.data(), i0 + j, t, static_cast<double>(acc[j]) / g1.denom, static_cast<std::uint64_t>(acc[j]));
      }
    }
    return;
  }

  // Prod, max, min: each rank's values (its probes applied) folded in double (floats, exact:
  // products of +-1, +-2, +-1/2) and in wrapping uint64 (integers).
  const Grid g(t, prod);
  double acc[kBlock], v[kBlock];
  std::uint64_t iacc[kBlock];
  std::uint32_t res[kBlock];
  for (std::uint64_t i0 = 0; i0 < count; i0 += kBlock) {
    const std::uint64_t n = std::min(kBlock, count - i0);
    for (std::uint32_t r = 0; r < nranks; ++r) {
      residues(res, n, base[r] + i0 * kStride, g1.m);
      for (std::uint64_t j = 0; j < n; ++j) v[j] = g.value[res[j]];
      for_probe_runs(k.world, i0, n, [&](std::uint64_t a, std::uint64_t b) {
        if (prod && ints)
          for (std::uint64_t i = a; i < b; ++i) v[i - i0] = probe_other(splitmix64(base[r] + i * kStride), t, op);
        const std::uint64_t own = a - a % k.world + ranks[r];
        if (ranks[r] < k.world && own >= a && own < b) v[own - i0] = special_value(splitmix64(base[r] + own * kStride), t, op);
      });
      if (r == 0) {
        for (std::uint64_t j = 0; j < n; ++j) acc[j] = v[j];
        if (ints) for (std::uint64_t j = 0; j < n; ++j) iacc[j] = static_cast<std::uint64_t>(static_cast<std::int64_t>(v[j]));
        continue;
      }
      switch (op) {
        case models::ReduceOp::Prod:
          if (ints) for (std::uint64_t j = 0; j < n; ++j) iacc[j] *= static_cast<std::uint64_t>(static_cast<std::int64_t>(v[j]));
          else for (std::uint64_t j = 0; j < n; ++j) acc[j] *= v[j];
          break;
        case models::ReduceOp::Max: for (std::uint64_t j = 0; j < n; ++j) acc[j] = std::max(acc[j], v[j]); break;
        default: for (std::uint64_t j = 0; j < n; ++j) acc[j] = std::min(acc[j], v[j]); break;
      }
    }
    if (nranks == 0) std::fill(acc, acc + n, 0.0), std::fill(iacc, iacc + n, 0);
    if (ints && !prod) for (std::uint64_t j = 0; j < n; ++j) iacc[j] = static_cast<std::uint64_t>(static_cast<std::int64_t>(acc[j]));
    for (std::uint64_t j = 0; j < n; ++j) store(out->bytes.data(), i0 + j, t, acc[j], ints ? iacc[j] : 0);
  }
}

Reference allreduce_reference(std::uint64_t count, models::DType t, models::ReduceOp op, const PayloadKey& k,
                              std::uint32_t nranks) {
  Reference out;
  allreduce_reference(count, t, op, k, nranks, &out);
  return out;
}

namespace {
std::string mismatch_detail(std::uint64_t i, double got, double want, std::uint64_t got_bits, std::uint64_t want_bits, std::size_t esz) {
  // Enough digits to tell neighbouring doubles apart, and the bytes: a low bit flipped in an fp32
  // result prints differently from the expected value.
  std::ostringstream os;
  os << std::setprecision(17) << "element " << i << ": got " << got << ", expected " << want << std::hex << std::setfill('0')
     << " (bits 0x" << std::setw(static_cast<int>(2 * esz)) << got_bits << " vs 0x" << std::setw(static_cast<int>(2 * esz))
     << want_bits << ")";
  return os.str();
}
}  // namespace

void merge_check(CheckResult* into, const CheckResult& part) {
  into->tolerance = std::max(into->tolerance, part.tolerance);
  into->exact = into->exact && part.exact;
  if (part.mismatches == 0) return;
  if (into->mismatches == 0) {
    into->first_bad = part.first_bad;
    into->detail = part.detail;
  }
  into->mismatches += part.mismatches;
  if (!std::isnan(into->max_err) && !(part.max_err <= into->max_err)) into->max_err = part.max_err;  // NaN sticks
}

CheckResult compare(const void* got, const void* ref, const double* tol, std::uint64_t count, models::DType t,
                    std::uint64_t index_base) {
  CheckResult r;
  r.exact = tol == nullptr;
  const std::size_t esz = models::dtype_size(t);
  if (tol)
    for (std::uint64_t i = 0; i < count; ++i) r.tolerance = std::max(r.tolerance, tol[i]);
  if (std::memcmp(got, ref, count * esz) == 0) return r;  // fast path: identical bytes need no arithmetic
  for (std::uint64_t i = 0; i < count; ++i) {
    if (load_bits(got, i, esz) == load_bits(ref, i, esz)) continue;
    const double g = load(got, i, t), e = load(ref, i, t);
    const double err = std::fabs(g - e);
    // Bit for bit unless this element has a tolerance; a NaN (or a different NaN) never passes.
    if (tol && tol[i] > 0 && err <= tol[i]) continue;
    if (r.mismatches == 0) {
      r.first_bad = index_base + i;
      r.detail = mismatch_detail(index_base + i, g, e, load_bits(got, i, esz), load_bits(ref, i, esz), esz);
    }
    ++r.mismatches;
    if (!std::isnan(r.max_err) && !(err <= r.max_err)) r.max_err = err;  // a NaN error sticks
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
    merge_check(&cr, compare(static_cast<const std::uint8_t*>(got) + i * esz, want.data(), nullptr, n, t, i));
  }
  return cr;
}

}  // namespace sim
