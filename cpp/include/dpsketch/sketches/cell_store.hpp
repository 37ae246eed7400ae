// The int64 cells of the linear sketches (sketches/linear_sketch.hpp) and of the dyadic sketch
// (dyadic/dyadic_count_sketch.hpp), with the mass bound that keeps their arithmetic exact.
//
// Invariant: mass <= kMaxCellMass = 2^62 and every |cell| <= mass, and the owner's net count n has
// |n| <= mass too. The mass grows by |count| with every (turnstile) update before any cell moves by
// it, by the other store's mass in a merge, and restarts from max |cell| (and |n|) when cells are
// overwritten or restored; so a sum of two cells or two masses, a noisy cell and a median never
// overflow int64. The cells are written raw (row-major int64, little-endian) in both families'
// bytes (docs/format.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/common/serialization.hpp"

namespace dpsketch {

// Turnstile bound: a sketch absorbs at most 2^62 of total |count| (plus its starting max |cell|), so
// every |cell| and |n| stays <= 2^62 and sums of two, noise and medians never overflow int64.
inline constexpr std::uint64_t kMaxCellMass = std::uint64_t{1} << 62;

namespace detail {

// |c| as an unsigned value (exact for INT64_MIN too).
inline std::uint64_t magnitude(std::int64_t c) noexcept {
  return c < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(c) : static_cast<std::uint64_t>(c);
}

// max |c| over c[0..n) (0 when n == 0).
inline std::uint64_t max_magnitude(const std::int64_t* c, std::size_t n) noexcept {
  std::uint64_t m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, magnitude(c[i]));
  return m;
}

[[noreturn]] inline void throw_mass_limit() {
  throw std::overflow_error("the sketch would absorb a total |count| above 2^62, where its int64 cells could "
                            "overflow; split the data over several sketches or use smaller counts");
}

// Σ|count| of a batch of counted updates, or std::overflow_error beyond kMaxCellMass.
inline std::uint64_t batch_mass(const std::int64_t* counts, std::size_t m) {
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < m; ++k) {
    const std::uint64_t a = magnitude(counts[k]);
    if (a > kMaxCellMass - total) throw_mass_limit();
    total += a;
  }
  return total;
}

class CellStore {
 public:
  CellStore() = default;
  explicit CellStore(std::size_t cells) : cells_(cells, 0) {}

  std::int64_t* data() noexcept { return cells_.data(); }
  const std::int64_t* data() const noexcept { return cells_.data(); }
  std::size_t size() const noexcept { return cells_.size(); }
  const std::vector<std::int64_t>& values() const noexcept { return cells_; }
  // For writers that keep the invariant themselves (noise added, then set_mass from the cells).
  std::vector<std::int64_t>& values() noexcept { return cells_; }

  std::uint64_t mass() const noexcept { return mass_; }
  // Whether `a` more mass fits under kMaxCellMass.
  bool has_room(std::uint64_t a) const noexcept { return a <= kMaxCellMass - mass_; }
  // Takes `a` of mass before cells move by up to a in total; std::overflow_error (nothing changed)
  // when it does not fit.
  void reserve(std::uint64_t a) {
    if (!has_room(a)) throw_mass_limit();
    mass_ += a;
  }
  // reserve(1) for a caller that checked has_room(1).
  void take_unit() noexcept { ++mass_; }
  // Precondition: m <= kMaxCellMass and m bounds every |cell| and the owner's |n|.
  void set_mass(std::uint64_t m) noexcept { mass_ = m; }

  std::uint64_t max_abs() const noexcept { return max_magnitude(cells_.data(), cells_.size()); }
  bool all_zero() const noexcept {
    for (const std::int64_t c : cells_)
      if (c != 0) return false;
    return true;
  }

  // Cellwise sum with a store of the same size; std::overflow_error (nothing changed) when the
  // masses together pass 2^62. Every |sum| <= mass + o.mass <= 2^62.
  void merge(const CellStore& o) {
    if (!has_room(o.mass_)) throw_mass_limit();
    for (std::size_t c = 0; c < cells_.size(); ++c) cells_[c] += o.cells_[c];
    mass_ += o.mass_;
  }

  std::size_t raw_bytes() const noexcept { return cells_.size() * 8; }
  void write(ByteWriter& w) const { w.raw(cells_.data(), raw_bytes()); }
  // Throws DeserializeError unless `count` cells can still be read: checked before the store that
  // would hold them is allocated.
  static void need(const ByteReader& r, std::uint64_t count) { r.need_records(count, 8, "cells"); }
  // Reads size() cells; the caller sets the mass from what it read.
  void read(ByteReader& r) { r.raw(cells_.data(), raw_bytes(), "cells"); }

  std::size_t memory_bytes() const noexcept { return cells_.capacity() * sizeof(std::int64_t); }

 private:
  std::vector<std::int64_t> cells_;
  std::uint64_t mass_ = 0;
};

}  // namespace detail
}  // namespace dpsketch
