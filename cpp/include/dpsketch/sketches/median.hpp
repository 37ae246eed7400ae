// The CountSketch median of docs/algorithms.md §4 (the mean of the two middle values when d is
// even), used by the linear sketches and the dyadic sketch alike: median(v, d) below. Exact order
// statistics, so the value is the same as sorting v.
//
// For 9 to 64 values, the two middle order statistics with no data-dependent branch (middle_pair):
// a value v with |v| < 2^51 becomes the double whose bits are v + 0x4338000000000000, i.e. exactly
// 1.5 * 2^52 + v, so double order is integer order and min/max on vectors of doubles (SSE2 is
// baseline x86-64) are compare-exchanges on 2 or 4 values at once. The d values go into N slots,
// padded with low and high sentinels so the wanted ranks land on N/2 - 1 and N/2, arranged as
// rows of a vector each: every lane is a column. A sorting network applied row-wise sorts all
// columns. With two sorted columns A, B of N/2 (bitonic split) L_j = min(A_j, B_{N/2-1-j}) are the
// N/2 smallest of all N and H_j = max(...) the N/2 largest, so rank N/2 - 1 is max L and rank N/2
// is min H. The selected doubles are inputs unchanged: subtracting the offset gives back the exact
// integers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "dpsketch/common/simd.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dpsketch::detail {

// The most values median() takes: the row count of a sketch (kMaxDepth, linear_sketch.hpp).
inline constexpr std::uint32_t kMaxMedianValues = 255;

// Sorting networks on rows r[0..n), as sequences of CEX(a, b) (compare-exchange: a gets the min).
// Batcher's odd-even merge sort for 8 (19 compare-exchanges):
#define DPSKETCH_SORT8(CEX, r)                                              \
  CEX(r[0], r[1]); CEX(r[2], r[3]); CEX(r[4], r[5]); CEX(r[6], r[7]);     \
  CEX(r[0], r[2]); CEX(r[1], r[3]); CEX(r[4], r[6]); CEX(r[5], r[7]);     \
  CEX(r[1], r[2]); CEX(r[5], r[6]);                                         \
  CEX(r[0], r[4]); CEX(r[1], r[5]); CEX(r[2], r[6]); CEX(r[3], r[7]);     \
  CEX(r[2], r[4]); CEX(r[3], r[5]);                                         \
  CEX(r[1], r[2]); CEX(r[3], r[4]); CEX(r[5], r[6])
// Green's network for 16 (60 compare-exchanges, 10 layers):
#define DPSKETCH_SORT16(CEX, r)                                                                          \
  CEX(r[0], r[13]); CEX(r[1], r[12]); CEX(r[2], r[15]); CEX(r[3], r[14]); CEX(r[4], r[8]);             \
  CEX(r[5], r[6]); CEX(r[7], r[11]); CEX(r[9], r[10]);                                                  \
  CEX(r[0], r[5]); CEX(r[1], r[7]); CEX(r[2], r[9]); CEX(r[3], r[4]); CEX(r[6], r[13]);                \
  CEX(r[8], r[14]); CEX(r[10], r[15]); CEX(r[11], r[12]);                                               \
  CEX(r[0], r[1]); CEX(r[2], r[3]); CEX(r[4], r[5]); CEX(r[6], r[8]); CEX(r[7], r[9]);                 \
  CEX(r[10], r[11]); CEX(r[12], r[13]); CEX(r[14], r[15]);                                              \
  CEX(r[0], r[2]); CEX(r[1], r[3]); CEX(r[4], r[10]); CEX(r[5], r[11]); CEX(r[6], r[7]);               \
  CEX(r[8], r[9]); CEX(r[12], r[14]); CEX(r[13], r[15]);                                                \
  CEX(r[1], r[2]); CEX(r[3], r[12]); CEX(r[4], r[6]); CEX(r[5], r[7]); CEX(r[8], r[10]);               \
  CEX(r[9], r[11]); CEX(r[13], r[14]);                                                                  \
  CEX(r[1], r[4]); CEX(r[2], r[6]); CEX(r[5], r[8]); CEX(r[7], r[10]); CEX(r[9], r[13]);               \
  CEX(r[11], r[14]);                                                                                    \
  CEX(r[2], r[4]); CEX(r[3], r[6]); CEX(r[9], r[12]); CEX(r[11], r[13]);                               \
  CEX(r[3], r[5]); CEX(r[6], r[8]); CEX(r[7], r[9]); CEX(r[10], r[12]);                                \
  CEX(r[3], r[4]); CEX(r[5], r[6]); CEX(r[7], r[8]); CEX(r[9], r[10]); CEX(r[11], r[12]);              \
  CEX(r[6], r[7]); CEX(r[8], r[9])

inline constexpr std::uint64_t kOrderedDoubleOffset = 0x4338000000000000ULL;  // bits of 1.5 * 2^52
// Pads: -2^51 and 2^51 - 1 bound every accepted value, and a pad tying a value changes no rank's value.
inline constexpr std::int64_t kPadLow = -(std::int64_t{1} << 51), kPadHigh = (std::int64_t{1} << 51) - 1;

#if defined(__SSE2__)
using Lanes2 = __m128d;
inline Lanes2 lanes_min(Lanes2 a, Lanes2 b) noexcept { return _mm_min_pd(a, b); }
inline Lanes2 lanes_max(Lanes2 a, Lanes2 b) noexcept { return _mm_max_pd(a, b); }
inline Lanes2 lanes_load(const double* p) noexcept { return _mm_load_pd(p); }
inline Lanes2 lanes_lo(Lanes2 a, Lanes2 b) noexcept { return _mm_unpacklo_pd(a, b); }  // (a0, b0)
inline Lanes2 lanes_hi(Lanes2 a, Lanes2 b) noexcept { return _mm_unpackhi_pd(a, b); }  // (a1, b1)
inline void lanes_store(double* p, Lanes2 a) noexcept { _mm_store_pd(p, a); }
#else
struct Lanes2 {
  double x0, x1;
};
inline Lanes2 lanes_min(Lanes2 a, Lanes2 b) noexcept { return {b.x0 < a.x0 ? b.x0 : a.x0, b.x1 < a.x1 ? b.x1 : a.x1}; }
inline Lanes2 lanes_max(Lanes2 a, Lanes2 b) noexcept { return {a.x0 < b.x0 ? b.x0 : a.x0, a.x1 < b.x1 ? b.x1 : a.x1}; }
inline Lanes2 lanes_load(const double* p) noexcept { return {p[0], p[1]}; }
inline Lanes2 lanes_lo(Lanes2 a, Lanes2 b) noexcept { return {a.x0, b.x0}; }
inline Lanes2 lanes_hi(Lanes2 a, Lanes2 b) noexcept { return {a.x1, b.x1}; }
inline void lanes_store(double* p, Lanes2 a) noexcept { p[0] = a.x0; p[1] = a.x1; }
#endif

inline void lanes_cex(Lanes2& a, Lanes2& b) noexcept {
  const Lanes2 lo = lanes_min(a, b);
  b = lanes_max(a, b);
  a = lo;
}

// Two columns: ranks N/2 - 1 and N/2 of s[0..N), N = 2 * Rows (s 16-byte aligned), as doubles.
template <int Rows>
inline void lanes_middle(const double* s, double& lower, double& upper) noexcept {
  Lanes2 r[Rows];
  for (int j = 0; j < Rows; ++j) r[j] = lanes_load(s + 2 * j);
  if constexpr (Rows == 8) {
    DPSKETCH_SORT8(lanes_cex, r);
  } else {
    DPSKETCH_SORT16(lanes_cex, r);
  }
  // Row j holds (A_j, B_j); pair A_j with B_{Rows-1-j} (and A_{Rows-1-j} with B_j).
  Lanes2 lmax = lanes_min(lanes_lo(r[0], r[Rows - 1]), lanes_hi(r[Rows - 1], r[0]));
  Lanes2 hmin = lanes_max(lanes_lo(r[0], r[Rows - 1]), lanes_hi(r[Rows - 1], r[0]));
  for (int j = 1; j < Rows / 2; ++j) {
    const Lanes2 a = lanes_lo(r[j], r[Rows - 1 - j]), b = lanes_hi(r[Rows - 1 - j], r[j]);
    lmax = lanes_max(lmax, lanes_min(a, b));
    hmin = lanes_min(hmin, lanes_max(a, b));
  }
  alignas(16) double l[2], h[2];
  lanes_store(l, lmax);
  lanes_store(h, hmin);
  lower = l[1] < l[0] ? l[0] : l[1];
  upper = h[1] < h[0] ? h[1] : h[0];
}

// Portable path, 9 <= d <= 32 (N = 16 or 32). False when some |v| >= 2^51.
inline bool middle_pair_lanes2(const std::int64_t* v, std::uint32_t d, std::int64_t& lower, std::int64_t& upper) noexcept {
  const std::uint32_t n = d <= 16 ? 16 : 32, low_end = d + n / 2 - d / 2;
  alignas(16) double x[32];
  std::uint64_t range = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint64_t u = static_cast<std::uint64_t>(i < d ? v[i] : i < low_end ? kPadLow : kPadHigh);
    range |= (u + (std::uint64_t{1} << 51)) >> 52;  // nonzero iff outside [-2^51, 2^51)
    const std::uint64_t bits = u + kOrderedDoubleOffset;
    std::memcpy(&x[i], &bits, 8);
  }
  if (range) return false;
  double lo, hi;
  if (n == 16) lanes_middle<8>(x, lo, hi);
  else lanes_middle<16>(x, lo, hi);
  std::uint64_t lb, hb;
  std::memcpy(&lb, &lo, 8);
  std::memcpy(&hb, &hi, 8);
  lower = static_cast<std::int64_t>(lb - kOrderedDoubleOffset);
  upper = static_cast<std::int64_t>(hb - kOrderedDoubleOffset);
  return true;
}

#ifdef DPSKETCH_X86_DISPATCH
// AVX2, 17 <= d <= 64: N = 4 * Rows slots (Rows = 8 or 16) in rows of 4 lanes (columns C0..C3).
// Sort the columns; merge C0 with C1 and C2 with C3 (bitonic split of C0 against reversed C1, then
// a bitonic merger on each half), which leaves A = C0 u C1 sorted in lanes 0, 1 and B = C2 u C3 in
// lanes 2, 3; then the bitonic split of A against reversed B. Values are loaded, padded and
// converted in registers (masked loads: no staging copy, whose reloads stall).
template <int Rows>
__attribute__((target("avx2"))) inline bool middle_pair_avx2(const std::int64_t* v, std::uint32_t d, std::int64_t& lower,
                                                             std::int64_t& upper) noexcept {
  constexpr std::uint32_t n = 4 * Rows;
  const std::uint32_t low_end = d + n / 2 - d / 2;
  const __m256i off = _mm256_set1_epi64x(static_cast<long long>(kOrderedDoubleOffset));
  const __m256i bias = _mm256_set1_epi64x(std::int64_t{1} << 51);
  const __m256i dv = _mm256_set1_epi64x(d), lowv = _mm256_set1_epi64x(low_end);
  const __m256i pad_lo = _mm256_set1_epi64x(kPadLow), pad_hi = _mm256_set1_epi64x(kPadHigh);
  __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
  __m256i bad = _mm256_setzero_si256();
  __m256d r[Rows];
  for (std::uint32_t j = 0; j < Rows; ++j, lane = _mm256_add_epi64(lane, _mm256_set1_epi64x(4))) {
    __m256i x;
    if (d == n) {  // no padding (d = 32 or 64)
      x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 4 * j));
    } else {
      x = _mm256_blendv_epi8(pad_hi, pad_lo, _mm256_cmpgt_epi64(lowv, lane));
      if (4 * j < d) {
        const __m256i real = _mm256_cmpgt_epi64(dv, lane);
        x = _mm256_blendv_epi8(x, _mm256_maskload_epi64(reinterpret_cast<const long long*>(v + 4 * j), real), real);
      }
    }
    bad = _mm256_or_si256(bad, _mm256_srli_epi64(_mm256_add_epi64(x, bias), 52));
    r[j] = _mm256_castsi256_pd(_mm256_add_epi64(x, off));
  }
  if (!_mm256_testz_si256(bad, bad)) return false;
  // Compare-exchange of two rows (a macro: a lambda would not inherit the avx2 target).
#define DPSKETCH_CEX4(a, b)                     \
  do {                                          \
    const __m256d cex_lo = _mm256_min_pd(a, b); \
    b = _mm256_max_pd(a, b);                    \
    a = cex_lo;                                 \
  } while (0)
  if constexpr (Rows == 8) {
    DPSKETCH_SORT8(DPSKETCH_CEX4, r);
  } else {
    DPSKETCH_SORT16(DPSKETCH_CEX4, r);
  }
  // Lanes (0, 2) of t[j] take min(C0[j], C1[Rows-1-j]) (the smaller half of C0 u C1, bitonic) and
  // lanes (1, 3) max(C1[j], C0[Rows-1-j]) (the larger half); likewise C2, C3.
  __m256d t[Rows];
  for (int j = 0; j < Rows; ++j) {
    const __m256d sw = _mm256_permute_pd(r[Rows - 1 - j], 0x5);  // (x1, x0, x3, x2)
    t[j] = _mm256_blend_pd(_mm256_min_pd(r[j], sw), _mm256_max_pd(r[j], sw), 0xA);
  }
  // Bitonic merger: sorts every (bitonic) column.
  for (int half = Rows / 2; half >= 1; half /= 2)
    for (int j = 0; j < Rows; ++j)
      if ((j & half) == 0) DPSKETCH_CEX4(t[j], t[j + half]);
#undef DPSKETCH_CEX4
  // Lanes 0, 1 now hold A (A_j, A_{Rows+j}); lanes 2, 3 hold B. Pair A_k with B_{2Rows-1-k}.
  __m256d lmax = _mm256_setzero_pd(), hmin = _mm256_setzero_pd();
  for (int j = 0; j < Rows / 2; ++j) {
    const __m256d rev = _mm256_permute4x64_pd(t[Rows - 1 - j], 0x1B);  // (x3, x2, x1, x0)
    const __m256d lo = _mm256_min_pd(t[j], rev), hi = _mm256_max_pd(t[j], rev);
    lmax = j == 0 ? lo : _mm256_max_pd(lmax, lo);
    hmin = j == 0 ? hi : _mm256_min_pd(hmin, hi);
  }
  const __m128d l2 = _mm_max_pd(_mm256_castpd256_pd128(lmax), _mm256_extractf128_pd(lmax, 1));
  const __m128d h2 = _mm_min_pd(_mm256_castpd256_pd128(hmin), _mm256_extractf128_pd(hmin, 1));
  const __m128d l1 = _mm_max_sd(l2, _mm_unpackhi_pd(l2, l2)), h1 = _mm_min_sd(h2, _mm_unpackhi_pd(h2, h2));
  lower = _mm_cvtsi128_si64(_mm_castpd_si128(l1)) - static_cast<std::int64_t>(kOrderedDoubleOffset);
  upper = _mm_cvtsi128_si64(_mm_castpd_si128(h1)) - static_cast<std::int64_t>(kOrderedDoubleOffset);
  return true;
}
#endif

inline void cex(std::int64_t& a, std::int64_t& b) noexcept {
  const std::int64_t lo = std::min(a, b), hi = std::max(a, b);
  a = lo;
  b = hi;
}
// Sorts s[0..8) with the 8-network above, one value per compare-exchange.
inline void sort8(std::int64_t* s) noexcept { DPSKETCH_SORT8(cex, s); }

#undef DPSKETCH_SORT8
#undef DPSKETCH_SORT16

// Order statistics mid - 1 and mid (mid = d / 2; for odd d only `upper`, the median, is set) of
// v[0..d). Returns false, doing nothing, when d is outside the range these networks serve (d <= 8:
// the scalar sort8 of order_pair wins; d > 64, or d > 32 without AVX2) or some |v| >= 2^51; the
// caller then falls back. avx2: the caller checked the CPU (for d <= 16 the two-lane network is
// the quicker one).
inline bool middle_pair(const std::int64_t* v, std::uint32_t d, std::int64_t& lower, std::int64_t& upper,
                        bool avx2) noexcept {
  if (d <= 8 || d > 64) return false;
#ifdef DPSKETCH_X86_DISPATCH
  if (avx2 && d > 16)
    return d <= 32 ? middle_pair_avx2<8>(v, d, lower, upper) : middle_pair_avx2<16>(v, d, lower, upper);
#else
  (void)avx2;
#endif
  return d <= 32 && middle_pair_lanes2(v, d, lower, upper);
}

inline std::int64_t median3(std::int64_t a, std::int64_t b, std::int64_t c) noexcept {
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}

// The (k-1)-th and k-th smallest of v[0..n) (0-based, 1 <= k < n, n <= kMaxMedianValues); v is
// clobbered. Quickselect with a median-of-3 pivot and a branchless three-way split (less in place,
// greater to a second buffer), finished by sort8 once at most 8 values remain.
inline void order_pair(std::int64_t* v, std::uint32_t n, std::uint32_t k, std::int64_t& lower,
                       std::int64_t& upper) noexcept {
  std::int64_t spare[kMaxMedianValues];
  std::int64_t* cur = v;
  std::int64_t* other = spare;
  while (n > 8) {
    const std::int64_t p = median3(cur[0], cur[n / 2], cur[n - 1]);
    std::uint32_t lt = 0, gt = 0;
    for (std::uint32_t j = 0; j < n; ++j) {
      const std::int64_t x = cur[j];
      cur[lt] = x;
      other[gt] = x;
      lt += x < p;
      gt += x > p;
    }
    const std::uint32_t le = n - gt;  // lt + number of values equal to p
    if (k < lt) {
      n = lt;
    } else if (k - 1 >= le) {
      k -= le;
      n = gt;
      std::swap(cur, other);
    } else {
      // k - 1 < le and k >= lt: the two ranks straddle or sit in the block equal to p.
      if (k - 1 < lt) {
        lower = cur[0];
        for (std::uint32_t j = 1; j < lt; ++j) lower = std::max(lower, cur[j]);
      } else {
        lower = p;
      }
      if (k < le) {
        upper = p;
      } else {
        upper = other[0];
        for (std::uint32_t j = 1; j < gt; ++j) upper = std::min(upper, other[j]);
      }
      return;
    }
  }
  std::int64_t s[8];
  for (std::uint32_t j = 0; j < 8; ++j) s[j] = j < n ? cur[j] : INT64_MAX;  // padding sorts last
  sort8(s);
  lower = s[k - 1];
  upper = s[k];
}

// Median of v[0..d), 1 <= d <= kMaxMedianValues; the mean of the two middle values when d is even.
// v is clobbered.
inline double median(std::int64_t* v, std::uint32_t d) noexcept {
  if (d == 1) return static_cast<double>(v[0]);
  const std::uint32_t mid = d / 2;
  std::int64_t lower, upper;  // order statistics mid - 1 and mid (0-based)
  if (!middle_pair(v, d, lower, upper, simd::avx2())) order_pair(v, d, mid, lower, upper);
  if (d & 1) return static_cast<double>(upper);
  return (static_cast<double>(lower) + static_cast<double>(upper)) / 2.0;
}

}  // namespace dpsketch::detail
