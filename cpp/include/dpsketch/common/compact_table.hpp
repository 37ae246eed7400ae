// Compact open-addressing index from key to slot for the counter summaries (issue 13).
//
// Entries are 4 bytes: a 24-bit slot index (kMaxCapacity = 2^24, limits.hpp) under a 7-bit tag
// from the top of the key's table hash, with the high bit set so that 0 marks an empty entry. The
// table has at least kSpread entries per slot (load <= 1/4), so 16 bytes per slot, a quarter of the
// earlier 8-byte entries at load 1/8; a probe rarely goes past its home entry, and a non-matching
// entry needs a key comparison only when its tag matches too (1 in 128). Linear probing with
// backward-shift deletion: no tombstones, so the constant re-keying of a full summary never
// degrades it. Entries do not store the hash; the owner supplies `home_of(slot)` (the slot key's
// hash, recomputed for int keys, stored for string keys) to the operations that move entries.
// All memory is allocated at construction: no operation allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "dpsketch/common/key_traits.hpp"

namespace dpsketch::detail {

template <class Key>
class CompactTable {
  using Traits = KeyTraits<Key>;

 public:
  static constexpr std::int32_t kEmpty = -1;
  // Load <= 1/4. Measured against 1/8 (same binary, int keys, Zipf 1.1 / 0.8 / uniform, k~ 256 to
  // 4096): docs/benchmarks.md §Counters v2.
  static constexpr std::size_t kSpread = 4;

  struct Probe {
    std::size_t pos;     // the key's entry, or the empty entry where it would be inserted
    std::int32_t slot;   // kEmpty when absent
  };

  explicit CompactTable(std::uint32_t max_entries) {
    std::size_t cap = 8;
    while (cap < kSpread * static_cast<std::size_t>(max_entries)) cap <<= 1;
    entries_.assign(cap, 0);
    mask_ = cap - 1;
  }

  // `key_of(slot)` returns the slot's stored key (compared only on a tag match).
  template <class View, class KeyOf>
  Probe probe(std::uint64_t h, const View& key, KeyOf&& key_of) const noexcept {
    const std::uint32_t want = tag(h);
    std::size_t i = h & mask_;
    for (;;) {
      const std::uint32_t e = entries_[i];
      if (e == 0) return {i, kEmpty};
      if ((e & kTagMask) == want && Traits::equal(key_of(slot_of(e)), key)) return {i, slot_of(e)};
      i = (i + 1) & mask_;
    }
  }

  // Stores slot's entry at `pos`, the empty entry a probe() for its key (hash h) returned, with no
  // table change in between.
  void insert_at(std::size_t pos, std::uint64_t h, std::int32_t slot) noexcept {
    entries_[pos] = tag(h) | static_cast<std::uint32_t>(slot);
  }

  // Precondition: the key is absent.
  void insert(std::uint64_t h, std::int32_t slot) noexcept {
    std::size_t i = h & mask_;
    while (entries_[i] != 0) i = (i + 1) & mask_;
    insert_at(i, h, slot);
  }

  // Position of slot's entry; h is the hash of the slot's key. Precondition: the slot has one
  // entry (re-keying: call this before insert_at of the new key, then erase_at the result).
  std::size_t position(std::uint64_t h, std::int32_t slot) const noexcept {
    std::size_t i = h & mask_;
    while (entries_[i] == 0 || slot_of(entries_[i]) != slot) i = (i + 1) & mask_;
    return i;
  }

  // Removes the entry at position i. Backward shift: each later entry of the probe run moves into
  // the hole when its home (home_of(slot) & mask) is not cyclically within (hole, its position].
  template <class HomeOf>
  void erase_at(std::size_t i, HomeOf&& home_of) noexcept {
    std::size_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      const std::uint32_t e = entries_[j];
      if (e == 0) break;
      const std::size_t home = static_cast<std::size_t>(home_of(slot_of(e))) & mask_;
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        entries_[i] = e;
        i = j;
      }
    }
    entries_[i] = 0;
  }

  std::size_t memory_bytes() const noexcept { return entries_.capacity() * sizeof(std::uint32_t); }

 private:
  static constexpr std::uint32_t kSlotMask = (1u << 24) - 1;
  static constexpr std::uint32_t kTagMask = ~kSlotMask;
  // Top 7 bits of the hash (the home position uses the low bits), high bit forced: never 0.
  static std::uint32_t tag(std::uint64_t h) noexcept {
    return (static_cast<std::uint32_t>(h >> 32) | 0x80000000u) & kTagMask;
  }
  static std::int32_t slot_of(std::uint32_t e) noexcept { return static_cast<std::int32_t>(e & kSlotMask); }

  std::vector<std::uint32_t> entries_;
  std::size_t mask_ = 0;
};

}  // namespace dpsketch::detail
