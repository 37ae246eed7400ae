// The counters' probe-only floor, shared by dpsketch_bench (bench_main.cpp) and
// bench/datasketches/bench_vs_datasketches.cpp: the counters' per-update lower bound on a stream.
// ProbeFloor uses the same table hash and slot storage as SpaceSaving / MisraGries
// (detail::FlatSlots: key and count side by side, CompactTable index), preloaded with the k most
// frequent keys of the stream (ties: smaller key first); an update hashes, probes, and increments
// the slot's count on a hit, and does nothing on a miss (no eviction, no count order to keep).
// EvictionFloor is the same storage evicting round-robin on a miss: the floor of any evicting
// summary. Both use the counters' internals.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/counters/flat_slots.hpp"

namespace dpsketch::bench {

// The k most frequent keys of the stream (ties: smaller key first).
template <class View>
std::vector<View> top_keys(std::uint64_t k, const std::vector<View>& stream) {
  std::unordered_map<View, std::uint64_t> freq;
  for (const auto& x : stream) ++freq[x];
  std::vector<std::pair<std::uint64_t, View>> by_count;
  by_count.reserve(freq.size());
  for (const auto& [x, c] : freq) by_count.emplace_back(c, x);
  const std::size_t m = std::min<std::size_t>(k, by_count.size());
  std::partial_sort(by_count.begin(), by_count.begin() + m, by_count.end(),
                    [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<View> out;
  for (std::size_t i = 0; i < m; ++i) out.push_back(by_count[i].second);
  return out;
}

template <class Key>
class ProbeFloor {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;

 public:
  ProbeFloor(std::uint64_t k, const std::vector<View>& stream) : slots_(static_cast<std::uint32_t>(k)) {
    std::int32_t s = 0;
    for (const auto& x : top_keys(k, stream)) slots_.place(s++, Key(x));
  }
  void update(const View& x) {
    const auto found = slots_.probe(Traits::table_hash(x), x);
    if (found.slot != detail::FlatSlots<Key>::kEmpty) {
      ++slots_[found.slot].count;
    }
  }
  std::size_t memory_bytes() const { return slots_.memory_bytes(); }

 private:
  detail::FlatSlots<Key> slots_;
};

// The eviction floor: the same storage with the cheapest eviction there is. A miss on a full
// summary gives the key the next slot in round-robin order (no count order, no tie rule, no
// candidate lists): one table erase and insert, and the slot's key and count written. Any
// summary that must evict on a miss -- SpaceSaving, or Misra-Gries reusing a zero -- does at
// least this, so on a stream of misses (uniform) it bounds from below what the counters can reach
// against ProbeFloor, whose miss does nothing (docs/benchmarks.md §Counters). Its counts mean
// nothing; only its time is of interest.
template <class Key>
class EvictionFloor {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;
  using Slots = detail::FlatSlots<Key>;

 public:
  explicit EvictionFloor(std::uint64_t k) : slots_(static_cast<std::uint32_t>(k)), capacity_(static_cast<std::uint32_t>(k)) {}
  void update(const View& x) {
    const std::uint64_t h = Traits::table_hash(x);
    const auto found = slots_.probe(h, x);
    if (found.slot != Slots::kEmpty) {
      ++slots_[found.slot].count;
    } else if (size_ < capacity_) {
      const auto s = static_cast<std::int32_t>(size_++);
      slots_.key_fresh(s, found.pos, h, x);
      slots_[s].count = 1;
    } else {
      const auto v = static_cast<std::int32_t>(next_);
      next_ = next_ + 1 == capacity_ ? 0 : next_ + 1;
      slots_.rekey(v, found.pos, h, x);
      ++slots_[v].count;
    }
  }
  std::size_t memory_bytes() const { return slots_.memory_bytes(); }

 private:
  detail::FlatSlots<Key> slots_;
  std::uint32_t capacity_, size_ = 0, next_ = 0;
};

}  // namespace dpsketch::bench
