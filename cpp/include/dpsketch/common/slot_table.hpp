// Compact open-addressing map from key to slot index for the counter summaries.
// Linear probing with backward-shift deletion (no tombstones). Entries are 8 bytes (low 32 bits of
// the key's hash + slot index) and the table is at most 1/kSpread full, so lookups rarely probe
// more than one entry; a hit is confirmed against the stored key. All memory is allocated at
// construction: updates never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "dpsketch/common/key_traits.hpp"

namespace dpsketch::detail {

// Items hashed ahead per block by the summaries' update_many (a 512-byte stack buffer).
inline constexpr std::size_t kHashBlock = 64;

// Calls f(table_hash(x), x) for each x in [first, last), in order, hashing a block of items ahead
// so that each update's hit/miss branch does not wait for its hash.
template <class Traits, class It, class F>
void for_each_hashed(It first, It last, F&& f) {
  std::uint64_t hs[kHashBlock];
  while (first != last) {
    It it = first;
    std::size_t m = 0;
    for (; m < kHashBlock && it != last; ++m, ++it) hs[m] = Traits::table_hash(*it);
    for (std::size_t i = 0; i < m; ++i, ++first) f(hs[i], *first);
  }
}

template <class Key>
class SlotTable {
  using Traits = KeyTraits<Key>;

 public:
  static constexpr std::int32_t kEmpty = -1;
  static constexpr std::size_t kSpread = 8;  // measured: 4 -> 8 cut SpaceSaving misses ~35%

  explicit SlotTable(std::uint32_t max_entries) {
    std::size_t cap = 8;
    while (cap < kSpread * static_cast<std::size_t>(max_entries)) cap <<= 1;
    entries_.assign(cap, Entry{0, kEmpty});
    mask_ = cap - 1;
  }

  // Slot of `key` (whose table hash is h), or kEmpty.
  template <class View>
  std::int32_t find(std::uint64_t h, const View& key, const std::vector<Key>& keys) const noexcept {
    std::size_t i = h & mask_;
    for (;;) {
      const Entry& e = entries_[i];
      if (e.slot == kEmpty) return kEmpty;
      if (e.hash == static_cast<std::uint32_t>(h) && Traits::equal(keys[e.slot], key)) return e.slot;
      i = (i + 1) & mask_;
    }
  }

  // Precondition: the key is absent and the table holds fewer than max_entries.
  void insert(std::uint64_t h, std::int32_t slot) noexcept {
    std::size_t i = h & mask_;
    while (entries_[i].slot != kEmpty) i = (i + 1) & mask_;
    entries_[i] = Entry{static_cast<std::uint32_t>(h), slot};
  }

  // Removes the entry for `slot` (whose key hashed to h). Precondition: present.
  void erase(std::uint64_t h, std::int32_t slot) noexcept {
    std::size_t i = h & mask_;
    while (entries_[i].slot != slot) i = (i + 1) & mask_;
    // Backward-shift: pull later entries of the probe run into the hole when their home allows.
    std::size_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      if (entries_[j].slot == kEmpty) break;
      const std::size_t home = entries_[j].hash & mask_;
      // Entry j may move to i iff its home is not cyclically within (i, j].
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        entries_[i] = entries_[j];
        i = j;
      }
    }
    entries_[i].slot = kEmpty;
  }

  std::size_t memory_bytes() const noexcept { return entries_.capacity() * sizeof(Entry); }

 private:
  struct Entry {
    std::uint32_t hash;  // low 32 bits of the table hash (the home position is hash & mask)
    std::int32_t slot;
  };
  std::vector<Entry> entries_;
  std::size_t mask_ = 0;
};

// Each slot's table hash, needed to erase the slot's key. Stored only for key types whose hash is
// expensive (strings); integer keys recompute it (3 instructions), saving 8 bytes per counter.
template <class Key>
class SlotHashes {
  using Traits = KeyTraits<Key>;

 public:
  explicit SlotHashes(std::size_t slots) : hashes_(Traits::cache_table_hash ? slots : 0) {}
  void set(std::int32_t s, std::uint64_t h) noexcept {
    if constexpr (Traits::cache_table_hash) hashes_[s] = h;
  }
  std::uint64_t get(std::int32_t s, const Key& key) const noexcept {
    if constexpr (Traits::cache_table_hash) return hashes_[s];
    else return Traits::table_hash(key);
  }
  std::size_t memory_bytes() const noexcept { return hashes_.capacity() * sizeof(std::uint64_t); }

 private:
  std::vector<std::uint64_t> hashes_;
};

}  // namespace dpsketch::detail
