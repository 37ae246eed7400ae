// Reference counter core: an independent SpaceSaving / Misra-Gries with linked count groups and
// an 8-byte-entry probing table, frozen, kept only as the oracle of
// tests/native/counters_differential.cpp (library core vs this one on random operation sequences)
// and as a fixed yardstick in dpsketch_bench. Not part of the library. Its slot table
// (common/slot_table.hpp, also used by SketchHeavyHitters) and merge step are the library's own.
// Misra-Gries, Lebeda-Tetek variant (docs/algorithms.md §2), the summary PMG releases.
//
// m slots, initially empty. update(x): x stored (even with count 0) -> c[x] += 1; else a slot with
// count 0 exists -> x takes it with c[x] = 1, choosing the slot that reached 0 most recently (ties:
// the one incremented most recently; never-used slots last, lowest index first); else every counter
// decreases by 1 and x is not stored. A key whose count reaches 0 stays stored until its slot is
// reused. Guarantee: f(x) - n/(m+1) <= c(x) <= f(x).
//
// O(1) per update (constant link surgery plus one slot-table probe, expected O(1) at load <= 1/8;
// no step touches more than a constant number of slots): counts are group values minus a running
// `base`, so "decrement all"
// is base += 1. Groups at or below the base hold the zero-count slots, and they already are the
// reuse stack: the highest such group reached 0 most recently, and within a group the newest slot
// was incremented most recently. So a decrement that zeroes the minimum group just moves the
// `zero_top_` marker onto it, and reuse takes the newest slot of the zero_top_ group.
//
// merge() (docs/algorithms.md §8, Agarwal et al. "Mergeable summaries"): counts are added key-wise,
// the (m+1)-th largest sum s is subtracted, the positive results are kept. decrements() is then the
// undercount bound E = E1 + E2 + s, and the union with n = n1 + n2 satisfies
//   f(x) - E <= c(x) <= f(x),   E <= (n - sum of counts)/(m+1) <= n/(m+1)
// (docs/distributed.md §Merging counter summaries). A merged summary keeps accepting updates (they
// keep both inequalities) and is flagged (header flag bit 0): PMG refuses it.
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
#include "dpsketch/common/serialization.hpp"
#include "dpsketch/common/slot_table.hpp"  // the library's table
#include "dpsketch/counters/flat_slots.hpp"  // for_each_hashed
#include "count_groups.hpp"
#include "dpsketch/common/limits.hpp"
#include "dpsketch/counters/mg_merge.hpp"

namespace dpsketch::legacy {

template <class Key>
class MisraGries {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;
  using Groups = detail::CountGroups;
  static constexpr std::int32_t kNone = Groups::kNone;

 public:
  using key_type = Key;

  explicit MisraGries(std::uint64_t capacity)
      : capacity_((check_capacity(capacity), static_cast<std::uint32_t>(capacity))),
        keys_(capacity), groups_(capacity), table_(capacity) {
    // All slots start with count 0 in one zero group, slot 0 newest (reused first).
    for (std::uint32_t s = capacity_; s-- > 0;) push_zero(static_cast<std::int32_t>(s));
  }

  // Throws StreamLimitError (nothing changed) when n would exceed kMaxStreamLength (limits.hpp).
  void update(const View& x) {
    check_stream_room(n_, 1);
    absorb(Traits::table_hash(x), x);
  }

  // Same result as update() on each item in order, but all-or-nothing at the stream limit (the
  // room for the whole batch is checked first). (Hashing a block ahead, as SpaceSaving does,
  // measured ~9% slower here: 13.1 vs 12.0 ns/update on Zipf 1.1, k = 256.)
  template <class It>
  void update_many(It first, It last) {
    check_stream_room(n_, static_cast<std::uint64_t>(std::distance(first, last)));
    for (; first != last; ++first) absorb(Traits::table_hash(*first), *first);
  }

  // Throws StreamLimitError unless `more` updates still fit (for batches fed item by item).
  void check_room(std::uint64_t more) const { check_stream_room(n_, more); }

  // update(x) given h == Traits::table_hash(x).
  void update_hashed(std::uint64_t h, const View& x) {
    check_stream_room(n_, 1);
    absorb(h, x);
  }

 private:
  // The update itself; the caller has checked the stream limit, so group values (count + base
  // <= 2n <= 2^63) never reach 2^64 - 1, the group list's sentinel value.
  void absorb(std::uint64_t h, const View& x) {
    const auto found = table_.probe(h, x, keys_);
    std::int32_t s = found.slot;
    ++n_;
    if (s != kNone) {
      if (groups_.value_of(s) > base_) {
        groups_.increment(s);
      } else {  // stored with count 0
        take_zero(s);
        groups_.attach_above(zero_top_, s, base_ + 1);
      }
    } else if (zero_top_ != kNone) {
      // Reuse the slot that reached 0 most recently (ties: incremented most recently), §2.
      s = groups_.first_slot(zero_top_);
      take_zero(s);
      // x's entry goes where the probe ended, then the slot's old entry (if any) is erased by
      // position: no second probe, no rehash of the old key.
      const bool had_key = table_.has_entry(s);
      const std::size_t old_entry = table_.position(s);
      table_.insert_at(found.pos, h, s);
      if (had_key) table_.erase_at(old_entry);
      Traits::assign(keys_[s], x);
      groups_.attach_above(zero_top_, s, base_ + 1);
    } else {
      // Decrement all: every slot has a count >= 1, i.e. a group value >= base + 1.
      ++base_;
      ++decrements_;
      const std::int32_t g = groups_.min_group();
      if (groups_.value(g) == base_) zero_top_ = g;  // its slots now count 0: the top of the stack
    }
  }

 public:

  // Stored count of x (0 when not stored or stored with count 0).
  std::uint64_t estimate(const View& x) const {
    const std::int32_t s = table_.find(Traits::table_hash(x), x, keys_);
    return s == kNone || groups_.value_of(s) <= base_ ? 0 : groups_.value_of(s) - base_;
  }
  bool contains(const View& x) const {
    return table_.find(Traits::table_hash(x), x, keys_) != kNone;
  }

  std::uint64_t n() const noexcept { return n_; }
  std::uint32_t capacity() const noexcept { return capacity_; }
  // Number of "decrement all" steps so far; n - sum of counts == decrements * (capacity + 1).
  // After a merge: the undercount bound E (f(x) - E <= c(x)), and n - sum >= decrements * (capacity + 1).
  std::uint64_t decrements() const noexcept { return decrements_; }

  // Visits every stored key with its count, positive counts first in ascending order (newest first
  // within a count), then the zero-count keys in stack order (next to be reused first).
  template <class Visit>
  void for_each(Visit&& visit, bool include_zero = true) const {
    for (std::int32_t g = min_positive_group(); g != kNone; g = groups_.next_group(g))
      for (std::int32_t s = groups_.first_slot(g); s != kNone; s = groups_.next_slot(s))
        visit(keys_[s], groups_.value(g) - base_);
    if (include_zero)
      for_each_zero([&](std::int32_t s) {
        if (table_.has_entry(s)) visit(keys_[s], std::uint64_t{0});
      });
  }

  // True once this summary is (or was built from) the result of merge().
  bool merged() const noexcept { return merged_; }

  // Agarwal et al. merge of `other` into *this (see the header comment). The merged state is
  // canonical: positive counts ascending, equal counts ordered by key (ascending key = older, so
  // the largest key is "incremented most recently"), no zero-count keys; the exact
  // order-of-occurrence rules of §2 describe only unmerged summaries. a.merge(b) and b.merge(a)
  // give identical states.
  void merge(const MisraGries& other) {
    if (other.capacity_ != capacity_)
      throw ParameterError("cannot merge Misra-Gries summaries of different capacity (" + std::to_string(capacity_) +
                           " vs " + std::to_string(other.capacity_) + "); build every part with the same capacity");
    check_stream_room(n_, other.n_);  // the merged n stays within kMaxStreamLength (limits.hpp), nothing changed
    std::vector<std::pair<Key, std::uint64_t>> all = items(false);
    {
      auto more = other.items(false);
      all.insert(all.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    const std::uint64_t s = dpsketch::detail::combine_and_cut(all, capacity_);  // the (m+1)-th largest combined count
    std::vector<std::pair<std::uint64_t, Key>> kept;
    for (auto& kv : all)
      if (kv.second > s) kept.emplace_back(kv.second - s, std::move(kv.first));
    std::sort(kept.begin(), kept.end());  // count ascending, then key ascending
    MisraGries out(capacity_);
    for (std::uint32_t t = 0; t < capacity_; ++t) out.groups_.detach(static_cast<std::int32_t>(t));
    out.zero_top_ = kNone;
    std::int32_t slot = 0;
    for (auto& [c, k] : kept) {
      out.store_key(slot, std::move(k));
      out.groups_.append_top(slot, c);  // appended as newest: the largest key of a count is newest
      ++slot;
    }
    for (; slot < static_cast<std::int32_t>(capacity_); ++slot) out.push_zero(slot);
    out.n_ = n_ + other.n_;
    out.decrements_ = decrements_ + other.decrements_ + s;
    out.merged_ = true;
    *this = std::move(out);
  }

  std::vector<std::pair<Key, std::uint64_t>> items(bool include_zero = false) const {
    std::vector<std::pair<Key, std::uint64_t>> out;
    for_each([&](const Key& k, std::uint64_t c) { out.emplace_back(k, c); }, include_zero);
    return out;
  }

  std::size_t memory_bytes() const noexcept {
    std::size_t b = sizeof(*this) + keys_.capacity() * sizeof(Key) +
                    groups_.memory_bytes() + table_.memory_bytes();
    for (std::uint32_t s = 0; s < capacity_; ++s) b += table_.has_entry(static_cast<std::int32_t>(s)) ? Traits::heap_bytes(keys_[s]) : 0;
    return b;
  }

  // Payload: capacity u32, n u64, decrements u64, positive-count records then the zero stack.
  //   positive: u32 count of records, then (key, count u64) ascending, oldest first within a count;
  //   zero stack: u32 length (== capacity - positive), then from bottom to top: u8 has_key [, key].
  std::string serialize() const {
    ByteWriter w;
    w.header(Family::misra_gries, Traits::tag, merged_ ? kFlagMerged : 0);
    w.u32(capacity_);
    w.u64(n_);
    w.u64(decrements_);
    std::vector<std::int32_t> order;
    for (std::int32_t g = min_positive_group(); g != kNone; g = groups_.next_group(g)) {
      const std::size_t start = order.size();
      for (std::int32_t s = groups_.first_slot(g); s != kNone; s = groups_.next_slot(s)) order.push_back(s);
      std::reverse(order.begin() + static_cast<std::ptrdiff_t>(start), order.end());
    }
    w.u32(static_cast<std::uint32_t>(order.size()));
    for (std::int32_t s : order) {
      Traits::write(w, keys_[s]);
      w.u64(groups_.value_of(s) - base_);
    }
    std::vector<std::int32_t> zeros;
    for_each_zero([&](std::int32_t s) { zeros.push_back(s); });
    w.u32(static_cast<std::uint32_t>(zeros.size()));
    for (auto it = zeros.rbegin(); it != zeros.rend(); ++it) {
      const bool has = table_.has_entry(*it);
      w.u8(has ? 1 : 0);
      if (has) Traits::write(w, keys_[*it]);
    }
    return w.take();
  }

  static MisraGries deserialize(std::string_view bytes) {
    ByteReader r(bytes);
    const bool merged = r.header(Family::misra_gries, Traits::tag, kFlagMerged) & kFlagMerged;
    const std::uint32_t capacity = r.u32();
    if (capacity < 1 || capacity > kMaxCapacity) throw DeserializeError("capacity out of range");
    r.need_records(capacity, 1, "slots");  // every slot is listed (>= 1 byte) before we allocate
    const std::uint64_t n = r.u64();
    if (n > kMaxStreamLength) throw DeserializeError("stream length above the limit of 2^62");
    const std::uint64_t decrements = r.u64();
    const std::uint32_t positive = r.u32();
    if (positive > capacity) throw DeserializeError("more counters than capacity");
    r.need_records(positive, Traits::min_serialized_bytes + 8, "counters");
    MisraGries mg(capacity);
    // Empty the initial zero group; the serialized stack is rebuilt below, in one zero group (its
    // order is all that matters) under the positive groups.
    for (std::uint32_t t = 0; t < capacity; ++t) mg.groups_.detach(static_cast<std::int32_t>(t));
    mg.zero_top_ = kNone;
    std::int32_t next_slot = 0;
    std::uint64_t prev = 0, total = 0;
    for (std::uint32_t i = 0; i < positive; ++i) {
      Key k = Traits::read(r);
      const std::uint64_t c = r.u64();
      if (c == 0 || c < prev) throw DeserializeError("counts must be positive and non-decreasing");
      if (c > n - total) throw DeserializeError("counts exceed the stream length");
      mg.store_key(next_slot, std::move(k));
      mg.groups_.append_top(next_slot, c);
      ++next_slot;
      prev = c;
      total += c;
    }
    const std::uint32_t zeros = r.u32();
    if (zeros != capacity - positive) throw DeserializeError("zero stack length does not match capacity");
    r.need_records(zeros, 1, "zero slots");
    for (std::uint32_t i = 0; i < zeros; ++i) {
      const std::uint8_t has = r.u8();
      if (has > 1) throw DeserializeError("bad slot flag");
      if (has) mg.store_key(next_slot, Traits::read(r));
      mg.push_zero(next_slot);
      ++next_slot;
    }
    // Each decrement-all removes capacity + 1 from the total (capacity counters and the dropped item).
    // A merge removes at least (capacity + 1) per unit of its undercount bound (>= instead of ==).
    if (decrements > n / (std::uint64_t{capacity} + 1) ||
        (merged ? n - total < decrements * (std::uint64_t{capacity} + 1)
                : n - total != decrements * (std::uint64_t{capacity} + 1)))
      throw DeserializeError("counts are inconsistent with the stream length");
    r.finish();
    mg.n_ = n;
    mg.decrements_ = decrements;
    mg.merged_ = merged;
    return mg;
  }

 private:
  void store_key(std::int32_t s, Key k) {
    const std::uint64_t h = Traits::table_hash(k);
    if (table_.find(h, k, keys_) != kNone) throw DeserializeError("duplicate key");
    keys_[s] = std::move(k);
    table_.insert(h, s);
  }
  // Puts s on top of the zero stack (as newest member of a bottom group of value 0 <= base).
  // Only while the zero stack is the bottom group: construction and deserialization.
  void push_zero(std::int32_t s) noexcept {
    groups_.attach_above(kNone, s, 0);
    zero_top_ = groups_.min_group();
  }
  // Takes a zero-count slot out of its group, moving zero_top_ down when that group empties.
  void take_zero(std::int32_t s) noexcept {
    const std::int32_t g = groups_.group_of(s);
    const std::int32_t below = groups_.prev_group(g);
    if (groups_.detach(s) && g == zero_top_) zero_top_ = below;
  }
  std::int32_t min_positive_group() const noexcept {
    return zero_top_ == kNone ? groups_.min_group() : groups_.next_group(zero_top_);
  }
  // Visits the zero-count slots in stack order (next to be reused first).
  template <class F>
  void for_each_zero(F&& f) const {
    for (std::int32_t g = zero_top_; g != kNone; g = groups_.prev_group(g))
      for (std::int32_t s = groups_.first_slot(g); s != kNone; s = groups_.next_slot(s)) f(s);
  }

  std::uint32_t capacity_;
  std::uint64_t n_ = 0;
  std::uint64_t base_ = 0;
  std::uint64_t decrements_ = 0;
  std::int32_t zero_top_ = kNone;  // highest group with value <= base_ (count 0), or kNone
  bool merged_ = false;
  std::vector<Key> keys_;
  Groups groups_;
  dpsketch::detail::SlotTable<Key> table_;
};

}  // namespace dpsketch
