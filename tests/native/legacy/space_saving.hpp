// Reference counter core: an independent SpaceSaving / Misra-Gries with linked count groups and
// an 8-byte-entry probing table, frozen, kept only as the oracle of
// tests/native/counters_differential.cpp (library core vs this one on random operation sequences)
// and as a fixed yardstick in dpsketch_bench. Not part of the library. Its slot table
// (common/slot_table.hpp, also used by SketchHeavyHitters) and merge step are the library's own.
// SpaceSaving with the exact recency tie rule (docs/algorithms.md §3; Holland, Algorithm 2).
//
// update(x): tracked -> c[x] += 1; else a free slot -> c[x] = 1; else evict, among the items with
// the minimum count, the one whose most recent occurrence is latest, and give x its slot with
// c[x] = c_min + 1. O(1) per update: one slot-table probe (expected O(1) at load <= 1/8) plus
// constant link surgery.
// Guarantees: f(x) <= c(x) <= f(x) + c_min,  c_min <= n / capacity,  sum of counts == n.
//
// merge() (docs/algorithms.md §8) goes through the isomorphism with Misra-Gries (Agarwal et al.):
// each side's MG form is g_i(x) = c_i(x) - m_i (0 if untracked), m_i = min_count(); the MG forms
// are added key-wise, the (capacity+1)-th largest sum s is subtracted, and the positive results r(x)
// are kept with count r(x) + E, E = m_1 + m_2 + s. The result satisfies the same guarantees with
// n = n1 + n2 and min_count() >= E (every untracked x has f(x) <= min_count()), except that the sum
// of counts may exceed n while slots are free: a merged summary has a floor E, a newcomer in a
// free slot starts at E + 1, and min_count() is E while slots are free. Proof:
// docs/distributed.md §Merging counter summaries. Invariant kept by every step (checked on load):
// sum over tracked x of (c(x) - floor) + capacity * floor <= n, with equality when never merged.
#pragma once

#include <algorithm>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/limits.hpp"
#include "dpsketch/counters/mg_merge.hpp"
#include "dpsketch/common/serialization.hpp"
#include "dpsketch/common/slot_table.hpp"  // the library's table
#include "dpsketch/counters/flat_slots.hpp"  // for_each_hashed
#include "count_groups.hpp"

namespace dpsketch::legacy {

template <class Key>
class SpaceSaving {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;
  using Groups = detail::CountGroups;

 public:
  using key_type = Key;

  explicit SpaceSaving(std::uint64_t capacity)
      : capacity_((check_capacity(capacity), static_cast<std::uint32_t>(capacity))),
        keys_(capacity), groups_(capacity), table_(capacity) {}

  // Throws StreamLimitError (nothing changed) when n would exceed kMaxStreamLength (limits.hpp).
  void update(const View& x) {
    check_stream_room(n_, 1);
    absorb(Traits::table_hash(x), x);
  }

  // Same result as update() on each item in order, but all-or-nothing at the stream limit: the
  // room for the whole batch is checked first. Hashes a block of items ahead of the
  // updates, so the hit/miss branch of each update resolves without waiting for the hash.
  template <class It>
  void update_many(It first, It last) {
    check_stream_room(n_, static_cast<std::uint64_t>(std::distance(first, last)));
    dpsketch::detail::for_each_hashed<Traits>(first, last, [this](std::uint64_t h, const auto& x) { absorb(h, x); });
  }

  // Throws StreamLimitError unless `more` updates still fit (for batches fed item by item).
  void check_room(std::uint64_t more) const { check_stream_room(n_, more); }

  // update(x) given h == Traits::table_hash(x).
  void update_hashed(std::uint64_t h, const View& x) {
    check_stream_room(n_, 1);
    absorb(h, x);
  }

 private:
  // The update itself; the caller has checked the stream limit (so no count can reach 2^64 - 1,
  // the group list's sentinel value).
  void absorb(std::uint64_t h, const View& x) {
    const auto found = table_.probe(h, x, keys_);
    ++n_;
    if (found.slot != dpsketch::detail::SlotTable<Key>::kEmpty) {
      groups_.increment(found.slot);
    } else if (size_ < capacity_) {
      const auto s = static_cast<std::int32_t>(size_++);
      Traits::assign(keys_[s], x);
      table_.insert_at(found.pos, h, s);
      groups_.attach_above(Groups::kNone, s, floor_ + 1);  // floor_ is 0 unless merged
    } else {
      // Eviction register: newest slot of the minimum group (the recency tie rule). x's entry goes
      // where the probe ended before the victim's is erased by position: no second probe, no
      // rehash of the victim's key.
      const std::int32_t s = groups_.min_first_slot();
      const std::size_t victim_entry = table_.position(s);
      table_.insert_at(found.pos, h, s);
      table_.erase_at(victim_entry);
      Traits::assign(keys_[s], x);
      groups_.increment(s);  // c[x] = c_min + 1, and x becomes newest of its group
    }
  }

 public:

  // Tracked count of x, or 0 if x is not tracked (then f(x) <= min_count()).
  std::uint64_t estimate(const View& x) const {
    const std::int32_t s = table_.find(Traits::table_hash(x), x, keys_);
    return s == dpsketch::detail::SlotTable<Key>::kEmpty ? 0 : groups_.value_of(s);
  }
  bool contains(const View& x) const {
    return table_.find(Traits::table_hash(x), x, keys_) != dpsketch::detail::SlotTable<Key>::kEmpty;
  }

  // Minimum tracked count when all slots are used, else the floor (0 unless merged). Every
  // untracked item has f(x) <= min_count().
  std::uint64_t min_count() const noexcept {
    return size_ < capacity_ ? floor_ : groups_.value(groups_.min_group());
  }

  bool merged() const noexcept { return merged_; }
  // Count floor of a merged summary (0 otherwise): see the header comment.
  std::uint64_t floor() const noexcept { return floor_; }

  // Merge `other` into *this through the MG isomorphism (header comment). The merged state is
  // canonical: counts ascending, equal counts ordered by key, ascending key = older (so the next
  // victim among the minimum count is its largest key); the recency tie rule of §3 describes only
  // unmerged summaries. a.merge(b) and b.merge(a) give identical states.
  void merge(const SpaceSaving& other) {
    if (other.capacity_ != capacity_)
      throw ParameterError("cannot merge SpaceSaving summaries of different capacity (" + std::to_string(capacity_) +
                           " vs " + std::to_string(other.capacity_) + "); build every part with the same capacity");
    check_stream_room(n_, other.n_);  // the merged n stays within kMaxStreamLength (limits.hpp), nothing changed
    const std::uint64_t m1 = min_count(), m2 = other.min_count();
    std::vector<std::pair<Key, std::uint64_t>> all;  // MG forms g_i = c_i - m_i
    all.reserve(size_ + other.size_);
    for_each([&](const Key& k, std::uint64_t c) { if (c > m1) all.emplace_back(k, c - m1); });
    other.for_each([&](const Key& k, std::uint64_t c) { if (c > m2) all.emplace_back(k, c - m2); });
    const std::uint64_t s = dpsketch::detail::combine_and_cut(all, capacity_);  // the (capacity+1)-th largest MG sum
    const std::uint64_t e = m1 + m2 + s;
    std::vector<std::pair<std::uint64_t, Key>> kept;
    for (auto& kv : all)
      if (kv.second > s) kept.emplace_back(kv.second - s + e, std::move(kv.first));
    std::sort(kept.begin(), kept.end());  // count ascending, then key ascending
    SpaceSaving out(capacity_);
    for (auto& [c, k] : kept) {
      const auto slot = static_cast<std::int32_t>(out.size_++);
      out.place(slot, Traits::table_hash(k), k);
      out.groups_.append_top(slot, c);  // appended as newest
    }
    out.n_ = n_ + other.n_;
    out.floor_ = e;
    out.merged_ = true;
    *this = std::move(out);
  }

  std::uint64_t n() const noexcept { return n_; }
  std::uint32_t capacity() const noexcept { return capacity_; }
  std::uint32_t size() const noexcept { return size_; }

  // Visits (key, count) in structure order: counts ascending; within a count, newest first
  // (so the first visited item is the next eviction victim).
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (std::int32_t g = groups_.min_group(); g != Groups::kNone; g = groups_.next_group(g))
      for (std::int32_t s = groups_.first_slot(g); s != Groups::kNone; s = groups_.next_slot(s))
        visit(keys_[s], groups_.value(g));
  }

  std::vector<std::pair<Key, std::uint64_t>> items() const {
    std::vector<std::pair<Key, std::uint64_t>> out;
    out.reserve(size_);
    for_each([&](const Key& k, std::uint64_t c) { out.emplace_back(k, c); });
    return out;
  }

  std::size_t memory_bytes() const noexcept {
    std::size_t b = sizeof(*this) + keys_.capacity() * sizeof(Key) + groups_.memory_bytes() + table_.memory_bytes();
    for (std::uint32_t s = 0; s < size_; ++s) b += Traits::heap_bytes(keys_[s]);
    return b;
  }

  // Payload: capacity u32, n u64, size u32, then `size` records (key, count) in structure order
  // reversed within each count (oldest first), so a replay of push-to-front restores the order;
  // then, only when more than kUnbackedFreeSlots slots are free, one zero byte per free slot (so
  // the reader's allocation is backed by the input's length, limits.hpp).
  std::string serialize() const {
    ByteWriter w;
    w.header(Family::space_saving, Traits::tag, merged_ ? kFlagMerged : 0);
    w.u32(capacity_);
    w.u64(n_);
    if (merged_) w.u64(floor_);  // only in merged bytes: unmerged bytes keep the original layout
    w.u32(size_);
    for (std::int32_t g = groups_.min_group(); g != Groups::kNone; g = groups_.next_group(g)) {
      std::vector<std::int32_t> members;
      for (std::int32_t s = groups_.first_slot(g); s != Groups::kNone; s = groups_.next_slot(s)) members.push_back(s);
      for (auto it = members.rbegin(); it != members.rend(); ++it) {
        Traits::write(w, keys_[*it]);
        w.u64(groups_.value(g));
      }
    }
    if (capacity_ - size_ > kUnbackedFreeSlots) w.raw(std::string(capacity_ - size_, '\0').data(), capacity_ - size_);
    return w.take();
  }

  static SpaceSaving deserialize(std::string_view bytes) {
    ByteReader r(bytes);
    const bool merged = r.header(Family::space_saving, Traits::tag, kFlagMerged) & kFlagMerged;
    const std::uint32_t capacity = r.u32();
    if (capacity < 1 || capacity > kMaxCapacity) throw DeserializeError("capacity out of range");
    const std::uint64_t n = r.u64();
    if (n > kMaxStreamLength) throw DeserializeError("stream length above the limit of 2^62");
    const std::uint64_t floor = merged ? r.u64() : 0;
    if (floor > n / capacity) throw DeserializeError("merged count floor exceeds n / capacity");
    const std::uint64_t budget = n - floor * capacity;  // bounds the sum of (count - floor)
    const std::uint32_t size = r.u32();
    if (size > capacity) throw DeserializeError("more items than capacity");
    // Everything is checked against the input's length before the capacity is allocated.
    const std::uint32_t free_slots = capacity - size;
    const std::uint64_t padding = free_slots > kUnbackedFreeSlots ? free_slots : 0;
    r.need_records(size, Traits::min_serialized_bytes + 8, "items");
    if (padding > r.remaining() - std::uint64_t{size} * (Traits::min_serialized_bytes + 8))
      throw DeserializeError("too few bytes for the declared capacity (free slots are padded beyond " +
                             std::to_string(kUnbackedFreeSlots) + ")");
    SpaceSaving ss(capacity);
    std::uint64_t prev = 0, total = 0;
    for (std::uint32_t i = 0; i < size; ++i) {
      Key k = Traits::read(r);
      const std::uint64_t c = r.u64();
      if (c <= floor || c < prev) throw DeserializeError("counts must exceed the floor and be non-decreasing");
      if (c - floor > budget - total) throw DeserializeError("counts exceed the stream length");
      const std::uint64_t h = Traits::table_hash(k);
      if (ss.table_.find(h, k, ss.keys_) != dpsketch::detail::SlotTable<Key>::kEmpty)
        throw DeserializeError("duplicate key");
      const auto s = static_cast<std::int32_t>(ss.size_++);
      ss.place(s, h, k);
      ss.groups_.append_top(s, c);
      prev = c;
      total += c - floor;
    }
    // Every update adds exactly 1 to the sum of counts (an eviction gives c_min + 1 to the newcomer);
    // a merge may lose mass (<=).
    if (merged ? total > budget : total != n) throw DeserializeError("counts do not sum to the stream length");
    for (std::uint64_t i = 0; i < padding; ++i)
      if (r.u8() != 0) throw DeserializeError("free-slot padding must be zero");
    r.finish();
    ss.n_ = n;
    ss.floor_ = floor;
    ss.merged_ = merged;
    return ss;
  }

 private:
  void place(std::int32_t s, std::uint64_t h, const View& x) {
    Traits::assign(keys_[s], x);
    table_.insert(h, s);
  }

  std::uint32_t capacity_;
  std::uint32_t size_ = 0;
  std::uint64_t n_ = 0;
  std::uint64_t floor_ = 0;  // count floor after a merge (header comment)
  bool merged_ = false;
  std::vector<Key> keys_;
  Groups groups_;
  dpsketch::detail::SlotTable<Key> table_;
};

}  // namespace dpsketch
