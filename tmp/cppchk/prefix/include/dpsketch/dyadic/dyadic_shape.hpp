// Shape of a dyadic hierarchy over [0, 2^L) (docs/algorithms.md §6): L levels, level j (1..L)
// counting the j-bit prefixes x >> (L - j). Every level has the same cell budget d·w; a level whose
// 2^j nodes fit that budget is an exact array, every other level a d x w CountSketch. Since 2^j
// grows with j, the exact levels are always levels 1..E with E = min(L, floor(log2(d·w))).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace dpsketch::dyadic {

inline constexpr std::uint32_t kMaxUniverseBits = 64;
// Total cells over all levels (same limit as one linear sketch: 2 GiB of int64 cells).
inline constexpr std::uint64_t kMaxTotalCells = kMaxCells;
// Bound on the absolute mass Σ|count| a sketch may absorb (plus its starting max |cell|): every cell
// and n stay within ±2^62, so sums of two of them, noise (|DLap| and |DGauss| draws are far below
// 2^62 at every allowed scale) and medians never overflow int64.
inline constexpr std::uint64_t kMaxMass = kMaxCellMass;

struct DyadicShape {
  std::uint32_t bits = 32;   // L
  std::uint32_t depth = 1;   // d
  std::uint32_t width = 1;   // w
  std::uint32_t exact = 0;   // E: levels 1..E are exact arrays

  std::uint64_t budget() const noexcept { return std::uint64_t{depth} * width; }
  bool is_exact(std::uint32_t level) const noexcept { return level <= exact; }
  std::uint64_t level_cells(std::uint32_t level) const noexcept {
    return is_exact(level) ? (std::uint64_t{1} << level) : budget();
  }
  std::uint64_t total_cells() const noexcept {
    std::uint64_t t = 0;
    for (std::uint32_t j = 1; j <= bits; ++j) t += level_cells(j);
    return t;
  }
  std::uint32_t sketch_levels() const noexcept { return bits - exact; }
  bool operator==(const DyadicShape& o) const noexcept {
    return bits == o.bits && depth == o.depth && width == o.width && exact == o.exact;
  }
  std::string to_string() const {
    return "universe_bits=" + std::to_string(bits) + ", depth=" + std::to_string(depth) + ", width=" +
           std::to_string(width);
  }
};

// Validates (L, d, w) and derives E. Throws ParameterError with what to change.
inline DyadicShape make_shape(std::uint64_t bits, std::uint64_t width, std::uint64_t depth) {
  if (bits < 1 || bits > kMaxUniverseBits)
    throw ParameterError("universe_bits must be between 1 and 64, got " + std::to_string(bits));
  check_shape(width, depth);
  DyadicShape s;
  s.bits = static_cast<std::uint32_t>(bits);
  s.width = static_cast<std::uint32_t>(width);
  s.depth = static_cast<std::uint32_t>(depth);
  std::uint32_t e = 0;
  while (e < s.bits && (std::uint64_t{1} << (e + 1)) <= s.budget()) ++e;
  s.exact = e;
  if (s.total_cells() > kMaxTotalCells)
    throw ParameterError("the hierarchy would need " + std::to_string(s.total_cells()) +
                         " cells (more than 2^28 = 2 GiB); lower width, depth or universe_bits, or raise gamma");
  return s;
}

// Zhao et al.'s parameters for target rank error γ (docs/algorithms.md §6; the paper gives only
// d = Θ(log(log U/γ)), w = O(√(log U·log(log U/γ))/γ), the spec fixes the constants to 1):
//   d = ⌈ln(L/γ)⌉,  w = ⌈(1/γ)·√(L·ln(L/γ))⌉.
// For L = 32, γ = 0.01: d = 9, w = 1608 (14,472 cells per level; levels 1..13 exact).
inline void zhao_parameters(std::uint32_t bits, double gamma, std::uint64_t& width, std::uint64_t& depth) {
  if (!(gamma > 0 && gamma < 1)) throw ParameterError("gamma must be in (0, 1)");
  const double lg = std::log(static_cast<double>(bits) / gamma);
  depth = static_cast<std::uint64_t>(std::ceil(lg));
  if (depth < 1) depth = 1;
  const double w = std::ceil(std::sqrt(static_cast<double>(bits) * lg) / gamma);
  if (!(w <= static_cast<double>(std::uint64_t{1} << 31)))
    throw ParameterError("gamma is too small: the width would exceed 2^31; raise gamma");
  width = static_cast<std::uint64_t>(w);
}

}  // namespace dpsketch::dyadic
