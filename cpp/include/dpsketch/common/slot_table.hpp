// Compact open-addressing map from key to slot index for the counter summaries.
// Linear probing with backward-shift deletion (no tombstones). Entries are 8 bytes (low 32 bits of
// the key's hash + slot index) and the table is at most 1/kSpread full, so lookups rarely probe
// more than one entry; a hit is confirmed against the stored key. Each slot's entry position is
// kept (4 bytes per slot), so replacing a slot's key needs one probe, for the new key only. All
// memory is allocated at construction: updates never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/slot_probe.hpp"

namespace dpsketch::detail {

template <class Key>
class SlotTable {
  using Traits = KeyTraits<Key>;

 public:
  static constexpr std::int32_t kEmpty = kNoSlot;
  static constexpr std::size_t kSpread = 8;  // load <= 1/8: short probes on a miss

  // pos: the key's entry, or the first empty entry of its probe run.
  using Probe = SlotProbe;

  explicit SlotTable(std::uint32_t max_entries) : where_(max_entries, kNoEntry) {
    const std::size_t cap = table_positions(max_entries, kSpread, 8);
    entries_.assign(cap, Entry{0, kEmpty});
    mask_ = cap - 1;
  }

  template <class View>
  Probe probe(std::uint64_t h, const View& key, const std::vector<Key>& keys) const noexcept {
    std::size_t i = h & mask_;
    for (;;) {
      const Entry& e = entries_[i];
      if (e.slot == kEmpty) return {i, kEmpty};
      if (e.hash == static_cast<std::uint32_t>(h) && Traits::equal(keys[e.slot], key)) return {i, e.slot};
      i = (i + 1) & mask_;
    }
  }

  // Slot of `key` (whose table hash is h), or kEmpty.
  template <class View>
  std::int32_t find(std::uint64_t h, const View& key, const std::vector<Key>& keys) const noexcept {
    return probe(h, key, keys).slot;
  }

  // Stores slot's entry at `pos`, the empty entry a probe() for its key (hash h) returned, with no
  // table change in between. To re-key a slot: old = position(slot), insert_at(pos, h, slot), then
  // erase_at(old) (not erase_slot: where_ already points at the new entry). In between the table
  // holds one entry more than max_entries, which the spread leaves room for, and two entries name
  // the slot; erase_at works by position, so the duplicate id is harmless.
  void insert_at(std::size_t pos, std::uint64_t h, std::int32_t slot) noexcept {
    entries_[pos] = Entry{static_cast<std::uint32_t>(h), slot};
    where_[static_cast<std::size_t>(slot)] = static_cast<std::uint32_t>(pos);
  }

  // Precondition: the key is absent and the table holds fewer than max_entries.
  void insert(std::uint64_t h, std::int32_t slot) noexcept {
    std::size_t i = h & mask_;
    while (entries_[i].slot != kEmpty) i = (i + 1) & mask_;
    insert_at(i, h, slot);
  }

  // Position of slot's entry, to erase it later with erase_at (valid until the next table change).
  std::size_t position(std::int32_t slot) const noexcept { return where_[static_cast<std::size_t>(slot)]; }
  // Whether a key was ever stored for the slot (slots are re-keyed, never emptied, in the summaries).
  bool has_entry(std::int32_t slot) const noexcept { return where_[static_cast<std::size_t>(slot)] != kNoEntry; }

  // Removes the entry at position i. Backward-shift: later entries of the probe run move into the
  // hole when their home allows, so no tombstones are needed and probe runs stay short.
  void erase_at(std::size_t i) noexcept {
    std::size_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      if (entries_[j].slot == kEmpty) break;
      const std::size_t home = entries_[j].hash & mask_;
      // Entry j may move to i iff its home is not cyclically within (i, j].
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        entries_[i] = entries_[j];
        where_[static_cast<std::size_t>(entries_[i].slot)] = static_cast<std::uint32_t>(i);
        i = j;
      }
    }
    entries_[i].slot = kEmpty;
  }

  // Removes slot's entry. Precondition: present.
  void erase_slot(std::int32_t slot) noexcept { erase_at(position(slot)); }

  std::size_t memory_bytes() const noexcept {
    return entries_.capacity() * sizeof(Entry) + where_.capacity() * sizeof(std::uint32_t);
  }

 private:
  struct Entry {
    std::uint32_t hash;  // low 32 bits of the table hash (the home position is hash & mask)
    std::int32_t slot;
  };
  std::vector<Entry> entries_;
  static constexpr std::uint32_t kNoEntry = ~std::uint32_t{0};
  std::vector<std::uint32_t> where_;  // slot -> position of its entry: erasing needs no key or hash
  std::size_t mask_ = 0;
};

}  // namespace dpsketch::detail
