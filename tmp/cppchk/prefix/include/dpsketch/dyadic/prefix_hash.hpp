// Row hashes of the CountSketch levels of a dyadic hierarchy (docs/algorithms.md §4, §6): one
// strongly universal hash per (level, row), each seeded independently from the one public hash seed.
//
// A level-j key is a j-bit prefix p < 2^j. Dietzfelbinger's multiply-add-shift
//   h(p) = ((a·p + b) mod 2^W) >> (W - l)     (a, b uniform W-bit)
// is strongly universal from j-bit inputs to l-bit outputs whenever W >= j + l - 1. So:
//   * j <= 32: W = 64, l = 32 -- one 64-bit multiply (prefix_hash32). The 32-bit output's lowest
//     bit is the sign, the other 31 bits give the bucket ((h >> 1)·w) >> 31 (each bucket within
//     w/2^31 of 1/w; sign and bucket exactly independent, each pairwise independent).
//   * j > 32: W = 128, l = 64 -- the MultiplyAddShift of common/hash.hpp on the prefix, with
//     LinearSketch's CountSketch convention: sign = bit 0, bucket = reduce_range(h & ~1, w).
// Pairwise independence is all the CountSketch (Chebyshev) bound needs (§4).
#pragma once

#include <cstdint>

#include "dpsketch/common/hash.hpp"

namespace dpsketch::dyadic {

struct RowHash {
  MultiplyAddShift h;  // for j <= 32 only h.a_lo, h.b_lo are used (a, b of the 64-bit hash)

  // The seed stream of (level, row): independent SplitMix64 streams keyed by the pair.
  static RowHash make(std::uint64_t seed, std::uint32_t level, std::uint32_t row) noexcept {
    std::uint64_t state = seed ^ fmix64((std::uint64_t{level} << 32) | (std::uint64_t{row} + 1));
    return RowHash{MultiplyAddShift::from_stream(state)};
  }

  // Bucket in [0, w) and sign mask (0 for +1, all ones for -1) of prefix p at a level of <= 32 bits.
  static void narrow(std::uint64_t a, std::uint64_t b, std::uint64_t p, std::uint64_t w, std::uint32_t& col,
                     std::int64_t& mask) noexcept {
    const std::uint64_t h = (a * p + b) >> 32;
    mask = static_cast<std::int64_t>(h & 1) - 1;
    col = static_cast<std::uint32_t>(((h >> 1) * w) >> 31);
  }
  // The same for a level of more than 32 bits.
  void wide(std::uint64_t p, std::uint32_t w, std::uint32_t& col, std::int64_t& mask) const noexcept {
    const std::uint64_t v = h(p);
    mask = static_cast<std::int64_t>(v & 1) - 1;
    col = reduce_range(v & ~std::uint64_t{1}, w);
  }
};

}  // namespace dpsketch::dyadic
