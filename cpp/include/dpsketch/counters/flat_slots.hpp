// The storage shared by SpaceSaving and MisraGries (issue 13): per slot, the key and its count
// side by side (a probe's key comparison brings the count's cache line with it), the time of the
// slot's last increment, and a CompactTable from key to slot. String keys also keep their table
// hash, since rehashing a string to move its table entry would cost a pass over its bytes; int
// keys recompute theirs (two instructions). No operation allocates after construction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "dpsketch/common/compact_table.hpp"
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
class FlatSlots {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;
  static constexpr bool kStoreHash = !std::is_arithmetic_v<Key>;

 public:
  static constexpr std::int32_t kEmpty = CompactTable<Key>::kEmpty;
  struct Slot {
    Key key{};
    std::uint64_t count = 0;  // SpaceSaving: the count; MisraGries: count + base (see there)
  };
  using Probe = typename CompactTable<Key>::Probe;

  explicit FlatSlots(std::uint32_t capacity)
      : slots_(capacity), time_(capacity, 0), hash_(kStoreHash ? capacity : 0), table_(capacity) {}

  Probe probe(std::uint64_t h, const View& x) const noexcept {
    return table_.probe(h, x, [this](std::int32_t s) -> const Key& { return slots_[static_cast<std::size_t>(s)].key; });
  }
  std::int32_t find(const View& x) const noexcept { return probe(Traits::table_hash(x), x).slot; }

  Slot& operator[](std::int32_t s) noexcept { return slots_[static_cast<std::size_t>(s)]; }
  const Slot& operator[](std::int32_t s) const noexcept { return slots_[static_cast<std::size_t>(s)]; }
  std::uint64_t& time(std::int32_t s) noexcept { return time_[static_cast<std::size_t>(s)]; }
  std::uint64_t time(std::int32_t s) const noexcept { return time_[static_cast<std::size_t>(s)]; }

  // Gives the keyless slot s the key x (hash h), whose probe ended at the empty entry `pos`.
  void key_fresh(std::int32_t s, std::size_t pos, std::uint64_t h, const View& x) {
    table_.insert_at(pos, h, s);
    set_key(s, h, x);
  }

  // Replaces slot s's key by x (hash h, absent; its probe ended at `pos`): x's entry goes where the
  // probe ended, then s's old entry is erased (backward shift) -- one probe, for the new key only.
  void rekey(std::int32_t s, std::size_t pos, std::uint64_t h, const View& x) {
    const std::size_t old_entry = table_.position(hash_of(s), s);
    table_.insert_at(pos, h, s);
    set_key(s, h, x);  // before the erase: its backward shift may move x's entry, homed by x's hash
    table_.erase_at(old_entry, [this](std::int32_t t) { return hash_of(t); });
  }

  // Gives the keyless slot s the key k (deserialization, merge). Returns false, changing nothing,
  // when k is already stored.
  bool place(std::int32_t s, Key k) {
    const std::uint64_t h = Traits::table_hash(k);
    const Probe p = probe(h, k);
    if (p.slot != kEmpty) return false;
    table_.insert_at(p.pos, h, s);
    if constexpr (kStoreHash) hash_[static_cast<std::size_t>(s)] = h;
    slots_[static_cast<std::size_t>(s)].key = std::move(k);
    return true;
  }

  // Slots in [0, n) ordered by (count ascending, time ascending) -- the serialized order.
  std::vector<std::int32_t> by_count_then_time(std::uint32_t n) const {
    std::vector<std::int32_t> order(n);
    for (std::uint32_t s = 0; s < n; ++s) order[s] = static_cast<std::int32_t>(s);
    std::sort(order.begin(), order.end(), [this](std::int32_t a, std::int32_t b) {
      const std::uint64_t ca = (*this)[a].count, cb = (*this)[b].count;
      return ca != cb ? ca < cb : time(a) < time(b);
    });
    return order;
  }

  // Sorts slot indices [first, last) by time ascending.
  void sort_by_time(std::int32_t* first, std::int32_t* last) const {
    std::sort(first, last, [this](std::int32_t a, std::int32_t b) { return time(a) < time(b); });
  }

  std::size_t memory_bytes() const noexcept {
    return slots_.capacity() * sizeof(Slot) + time_.capacity() * sizeof(std::uint64_t) +
           hash_.capacity() * sizeof(std::uint64_t) + table_.memory_bytes();
  }
  std::size_t key_heap_bytes(std::int32_t s) const noexcept { return Traits::heap_bytes((*this)[s].key); }

 private:
  std::uint64_t hash_of(std::int32_t s) const noexcept {
    if constexpr (kStoreHash) return hash_[static_cast<std::size_t>(s)];
    else return Traits::table_hash(slots_[static_cast<std::size_t>(s)].key);
  }
  void set_key(std::int32_t s, std::uint64_t h, const View& x) {
    Traits::assign(slots_[static_cast<std::size_t>(s)].key, x);
    if constexpr (kStoreHash) hash_[static_cast<std::size_t>(s)] = h;
    (void)h;
  }

  std::vector<Slot> slots_;
  std::vector<std::uint64_t> time_;
  std::vector<std::uint64_t> hash_;  // string keys only
  CompactTable<Key> table_;
};

}  // namespace dpsketch::detail
