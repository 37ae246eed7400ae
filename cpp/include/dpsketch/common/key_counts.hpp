// KeyCounts: the distinct 64-bit keys of a batch with their multiplicities, for the linear
// structures, where update(x, c) equals c unit updates of x: a skewed batch is fed as its distinct
// keys, one counted update each, with the same cells as feeding every item.
//
// Open addressing with linear probing over keys and counts kept side by side; the table starts
// small and doubles at load 1/2, so its memory follows the distinct keys (a skewed batch stays in
// cache). Slot occupancy is a non-zero count: every stored key has count >= 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dpsketch/common/hash.hpp"

namespace dpsketch {

class KeyCounts {
 public:
  explicit KeyCounts(std::size_t initial_slots = std::size_t{1} << 12) { resize(pow2_at_least(initial_slots)); }

  void add(std::uint64_t x) {
    std::size_t i = fmix64(x) & mask_;
    for (;;) {
      Slot& s = slots_[i];
      if (s.count == 0) {
        s.key = x;
        s.count = 1;
        if (++size_ * 2 > slots_.size()) grow();
        return;
      }
      if (s.key == x) {
        ++s.count;
        return;
      }
      i = (i + 1) & mask_;
    }
  }

  std::size_t size() const noexcept { return size_; }

  // The distinct keys and their counts, in table order (the order does not change a linear
  // structure's cells).
  void drain(std::vector<std::uint64_t>& keys, std::vector<std::int64_t>& counts) const {
    keys.clear();
    counts.clear();
    keys.reserve(size_);
    counts.reserve(size_);
    for (const Slot& s : slots_)
      if (s.count) {
        keys.push_back(s.key);
        counts.push_back(s.count);
      }
  }

 private:
  struct Slot {
    std::uint64_t key;
    std::int64_t count;
  };
  static std::size_t pow2_at_least(std::size_t n) {
    std::size_t p = 16;
    while (p < n) p <<= 1;
    return p;
  }
  void resize(std::size_t n) {
    slots_.assign(n, Slot{0, 0});
    mask_ = n - 1;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    resize(old.size() * 2);
    for (const Slot& s : old) {
      if (!s.count) continue;
      std::size_t i = fmix64(s.key) & mask_;
      while (slots_[i].count) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace dpsketch
