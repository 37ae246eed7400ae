// Misra-Gries, Lebeda-Tetek variant (docs/algorithms.md §2), the summary PMG releases.
//
// m slots, initially empty. update(x): x stored (even with count 0) -> c[x] += 1; else a slot with
// count 0 exists -> x takes it with c[x] = 1, choosing the slot that reached 0 most recently (ties:
// the one incremented most recently; never-used slots last, lowest index first); else every counter
// decreases by 1 and x is not stored. A key whose count reaches 0 stays stored until its slot is
// reused. Guarantee: f(x) - n/(m+1) <= c(x) <= f(x).
//
// Representation: flat per-slot arrays (detail::FlatSlots) holding
// value = count + base and the time of the slot's last increment; "decrement all" is base += 1, so
// a slot's count is 0 iff value <= base, and the value at which it reached 0 is its value. The
// reuse order is therefore value descending (reached 0 most recently first), then time descending
// (incremented most recently first); never-used slots have value 0 and times making the lowest
// index the newest. A hit on a positive count writes the value and the time. The order is kept
// only where needed,
// in one detail::SplitStack (cands_):
//   * low stack: the count-0 slots, reuse order from the top. A decrement that zeroes slots pushes
//     them as a new layer (their value is the new base, above every older zero's value). Entries go
//     stale when their slot leaves 0 (a hit, a reuse); an entry is valid iff its slot's value <=
//     base and no entry above it names the same slot: a slot zeroed again has a newer entry above
//     the old one, which is popped (and the slot taken) first, so the old one is stale by the time
//     it is reached. Popping skips entries whose slot is not at count 0; when the buffer fills, the
//     stale entries (duplicates included) are dropped in O(capacity), after >= capacity / 4 of
//     them were made.
//   * high list: the slots that reached count 1 (value base + 1, by a reuse or a hit on a count-0
//     key) since the last decrement, in time order. A decrement zeroes exactly the count-1 slots:
//     the still-valid high entries, after those that already had count 1 at the previous decrement
//     (time < epoch_start_, sorted by time; they came down from count 2).
//   * min_value_ <= the smallest positive value (exact after each scan; base + 1 after a reuse):
//     a decrement zeroes nothing, and scans nothing, while base < min_value_. Scans happen at
//     decrements only, and there are at most n / (m + 1) decrements, so their O(m) cost is O(n) in
//     all: O(1) amortized per update. Nothing allocates after construction.
//
// merge() (docs/algorithms.md §8, Agarwal et al. "Mergeable summaries"): counts are added key-wise,
// the (m+1)-th largest sum s is subtracted, the positive results are kept. decrements() is then the
// undercount bound E = E1 + E2 + s, and the union with n = n1 + n2 satisfies
//   f(x) - E <= c(x) <= f(x),   E <= (n - sum of counts)/(m+1) <= n/(m+1)
// (docs/distributed.md §Merging counter summaries). A merged summary keeps accepting updates (they
// keep both inequalities) and is flagged (header flag bit 0): PMG refuses it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dpsketch/common/compiler.hpp"
#include "dpsketch/common/errors.hpp"
#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/limits.hpp"
#include "dpsketch/common/serialization.hpp"
#include "dpsketch/counters/counter_summary.hpp"
#include "dpsketch/counters/flat_slots.hpp"
#include "dpsketch/counters/mg_merge.hpp"

namespace dpsketch {

template <class Key>
class MisraGries : public detail::CounterSummary<MisraGries<Key>, Key> {
  using Base = detail::CounterSummary<MisraGries<Key>, Key>;
  friend Base;  // calls absorb()
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;
  using Slots = detail::FlatSlots<Key>;
  static constexpr std::int32_t kNone = Slots::kEmpty;
  static constexpr std::uint64_t kNoValue = ~std::uint64_t{0};

 public:
  explicit MisraGries(std::uint64_t capacity)
      : MisraGries((check_capacity(capacity), static_cast<std::uint32_t>(capacity)), Rebuild{}) {
    // All slots start never used, with count 0 (value 0); slot 0 on top of the zero stack.
    for (std::uint32_t i = capacity_; i-- > 0;) push_zero(static_cast<std::int32_t>(i));
    finish_rebuild();
  }

  // update(), update_many(), update_hashed(), check_room(): detail::CounterSummary.

 private:
  // The update itself. At the stream limit it throws before any change, so values (count + base
  // <= 2n <= 2^63) stay far from 2^64 - 1.
  DPSKETCH_ALWAYS_INLINE void absorb(std::uint64_t h, const View& x) {
    const auto found = slots_.probe(h, x);
    check_stream_room(n_, 1);
    ++n_;
    const std::uint32_t t = slots_.tick(epoch_start_);
    if (found.slot != kNone) {
      auto& slot = slots_[found.slot];
      slots_.time(found.slot) = t;
      if (slot.count > base_) {
        ++slot.count;
      } else {
        revive(found.slot);
      }
    } else {
      miss(found.pos, h, x, t);
    }
  }

  // A hit on a key stored with count 0: back to count 1 (its zero-stack entry goes stale). Out of
  // line, as SpaceSaving's leave_minimum, so the common hit path keeps fewer registers.
  DPSKETCH_NOINLINE void revive(std::int32_t s) {
    slots_[s].count = base_ + 1;
    if (cands_.used() == cands_.size()) drop_stale_zeros(base_);  // frees this slot's entry at least
    arrive_at_one(s);
  }

  void arrive_at_one(std::int32_t s) noexcept {
    cands_.push_high(s);
    min_value_ = base_ + 1;
  }

  void miss(std::size_t pos, std::uint64_t h, const View& x, std::uint32_t t) {
    // Reuse the slot that reached 0 most recently (ties: incremented most recently), §2: the first
    // valid entry from the top (popped entries of slots that left 0 since are stale). The pop frees
    // the entry the arrival takes.
    std::int32_t s;
    do {
      if (cands_.low() == 0) return decrement(t);
      s = cands_.pop();
    } while (slots_[s].count > base_);
    if (keyed_[static_cast<std::size_t>(s)] & 1) {
      slots_.rekey(s, pos, h, x);
    } else {
      slots_.key_fresh(s, pos, h, x);
      keyed_[static_cast<std::size_t>(s)] = 1;
    }
    slots_.time(s) = t;
    slots_[s].count = base_ + 1;
    arrive_at_one(s);
  }

  // Decrement all (no count-0 slot is left): every slot has a count >= 1, i.e. a value >= base + 1.
  DPSKETCH_NOINLINE void decrement(std::uint32_t t) {
    ++base_;
    ++decrements_;
    if (base_ == min_value_) zero_layer();
    cands_.clear_high();  // every arrival was zeroed just now (or moved on): a new epoch
    epoch_start_ = t;
  }

  // After a decrement with base_ == min_value_: pushes the slots that just reached 0 (value ==
  // base_) as the new top layer, time ascending, and makes min_value_ exact again.
  DPSKETCH_NOINLINE void zero_layer() {
    // One pass: the smallest value above base_ (kNoValue if none), and the slots at value base_
    // with time < epoch_start_ (count 1 at the previous decrement, so not in the high list),
    // pushed. They fit: a decrement happens only when no zero is left (miss() pops stale entries
    // until a valid one or none), so the low stack is empty here, and these slots and the high
    // list's are distinct -- at most capacity entries in a buffer of 1.25 * capacity + 2, with
    // room for the branch-free push, so one scan suffices and nothing needs counting first. The
    // pushes are unchecked, so the precondition is checked.
    if (cands_.low() != 0) throw std::logic_error("MisraGries: zero layer over a non-empty stack (internal error)");
    const std::uint64_t next_min =
        slots_.scan(capacity_, base_, base_, epoch_start_, [this](std::int32_t s, bool match) { cands_.push_if(s, match); });
    slots_.sort_by_time(cands_.low_data(), cands_.low_data() + cands_.low(), cands_.free_data(), cands_.free_size());
    // The epoch's arrivals at count 1 still there: newer, in order.
    cands_.move_high_to_low([this](std::int32_t s) { return slots_[s].count == base_; });
    min_value_ = next_min;
  }

  // Drops every zero-stack entry that is not valid (slot value above `limit` -- base_, or base_ - 1
  // while a new layer is being made -- or a lower duplicate), keeping the order. Uses bit 1 of
  // keyed_ as a scratch mark.
  void drop_stale_zeros(std::uint64_t limit) {
    std::int32_t* z = cands_.low_data();
    for (std::uint32_t r = cands_.low(); r-- > 0;) {  // from the top: the first entry of a slot is its valid one
      auto& mark = keyed_[static_cast<std::size_t>(z[r])];
      if (slots_[z[r]].count > limit || (mark & 2)) z[r] = kNone;
      else mark |= 2;
    }
    cands_.filter_low([this](std::int32_t s) {
      if (s == kNone) return false;
      keyed_[static_cast<std::size_t>(s)] &= 1;
      return true;
    });
  }

 public:
  // Stored count of x (0 when not stored or stored with count 0).
  std::uint64_t estimate(const View& x) const {
    const std::int32_t s = slots_.find(x);
    return s == kNone || slots_[s].count <= base_ ? 0 : slots_[s].count - base_;
  }
  bool contains(const View& x) const { return slots_.find(x) != kNone; }

  std::uint64_t n() const noexcept { return n_; }
  std::uint32_t capacity() const noexcept { return capacity_; }
  // Number of "decrement all" steps so far; n - sum of counts == decrements * (capacity + 1).
  // After a merge: the undercount bound E (f(x) - E <= c(x)), and n - sum >= decrements * (capacity + 1).
  std::uint64_t decrements() const noexcept { return decrements_; }

  // Visits every stored key with its count, positive counts first in ascending order (newest first
  // within a count), then the zero-count keys in stack order (next to be reused first).
  template <class Visit>
  void for_each(Visit&& visit, bool include_zero = true) const {
    for (std::int32_t s : positive_order(false)) visit(slots_[s].key, slots_[s].count - base_);
    if (include_zero)
      for (std::int32_t s : zero_order())
        if (keyed_[static_cast<std::size_t>(s)] & 1) visit(slots_[s].key, std::uint64_t{0});
  }

  // True once this summary is (or was built from) the result of merge().
  bool merged() const noexcept { return merged_; }

  // Agarwal et al. merge of `other` into *this (see the header comment). The merged state is
  // canonical: positive counts ascending, equal counts ordered by key (ascending key = older, so
  // the largest key is "incremented most recently"), no zero-count keys; the exact
  // order-of-occurrence rules of §2 describe only unmerged summaries. a.merge(b) and b.merge(a)
  // give identical states.
  void merge(const MisraGries& other) {
    this->check_mergeable("Misra-Gries", other);  // nothing changed if it throws
    std::vector<std::pair<Key, std::uint64_t>> all = items(false);
    {
      auto more = other.items(false);
      all.insert(all.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    const std::uint64_t s = detail::combine_and_cut(all, capacity_);  // the (m+1)-th largest combined count
    std::vector<std::pair<std::uint64_t, Key>> kept;
    for (auto& kv : all)
      if (kv.second > s) kept.emplace_back(kv.second - s, std::move(kv.first));
    std::sort(kept.begin(), kept.end());  // count ascending, then key ascending
    MisraGries out(capacity_, Rebuild{});
    std::int32_t slot = 0;
    for (auto& [c, k] : kept) out.store_positive(slot++, std::move(k), c);  // appended as newest
    // The rest are never used; the highest index is reused first (as the stack was built before).
    for (; slot < static_cast<std::int32_t>(capacity_); ++slot) out.push_zero(slot);
    out.n_ = n_ + other.n_;
    out.decrements_ = decrements_ + other.decrements_ + s;
    out.merged_ = true;
    out.finish_rebuild();
    *this = std::move(out);
  }

  std::vector<std::pair<Key, std::uint64_t>> items(bool include_zero = false) const {
    std::vector<std::pair<Key, std::uint64_t>> out;
    for_each([&](const Key& k, std::uint64_t c) { out.emplace_back(k, c); }, include_zero);
    return out;
  }

  std::size_t memory_bytes() const noexcept {
    std::size_t b = sizeof(*this) + slots_.memory_bytes() + keyed_.capacity() + cands_.memory_bytes();
    for (std::uint32_t s = 0; s < capacity_; ++s)
      if (keyed_[s] & 1) b += slots_.key_heap_bytes(static_cast<std::int32_t>(s));
    return b;
  }

  // Payload: capacity u32, n u64, decrements u64, positive-count records then the zero stack.
  //   positive: u32 count of records, then (key, count u64) ascending, oldest first within a count;
  //   zero stack: u32 length (== capacity - positive), then from bottom to top: u8 has_key [, key].
  std::string serialize() const {
    ByteWriter w;
    this->write_opening(w, Family::misra_gries, this->untyped() && n_ == 0 && !holds_keys(), merged_);
    w.u64(decrements_);
    const auto positive = positive_order();
    w.u32(static_cast<std::uint32_t>(positive.size()));
    for (std::int32_t s : positive) {
      Traits::write(w, slots_[s].key);
      w.u64(slots_[s].count - base_);
    }
    const auto zeros = zero_order();
    w.u32(static_cast<std::uint32_t>(zeros.size()));
    for (auto it = zeros.rbegin(); it != zeros.rend(); ++it) {
      const bool has = keyed_[static_cast<std::size_t>(*it)] & 1;
      w.u8(has ? 1 : 0);
      if (has) Traits::write(w, slots_[*it].key);
    }
    std::string out = w.take();
    this->append_trailer(out);
    return out;
  }

  // serialize().size(), without writing the bytes.
  std::size_t serialized_size() const {
    std::size_t b = kHeaderBytes + 4 + 8 + 8 + 4 + 4 + this->trailer_bytes();
    for (std::int32_t s : positive_order()) b += Traits::serialized_bytes(slots_[s].key) + 8;
    for (std::int32_t s : zero_order())
      b += 1 + ((keyed_[static_cast<std::size_t>(s)] & 1) ? Traits::serialized_bytes(slots_[s].key) : 0);
    return b;
  }

  static MisraGries deserialize(std::string_view bytes) {
    ByteReader r(bytes);
    const auto [h, merged, capacity] = Base::read_opening(r, Family::misra_gries);
    r.need_records(capacity, 1, "slots");  // every slot is listed (>= 1 byte) before we allocate
    const std::uint64_t n = Base::read_length(r, h);
    const std::uint64_t decrements = r.u64();
    const std::uint32_t positive = r.u32();
    if (positive > capacity) throw DeserializeError("more counters than capacity");
    r.need_records(positive, Traits::min_serialized_bytes + 8, "counters");
    // Rebuilt with base 0: positive slots take value = count; the zero stack (its order is all that
    // matters) is rebuilt with value 0 under them, in the serialized order.
    MisraGries mg(capacity, Rebuild{});
    std::int32_t next_slot = 0;
    std::uint64_t prev = 0, total = 0;
    for (std::uint32_t i = 0; i < positive; ++i) {
      Key k = Traits::read(r);
      const std::uint64_t c = r.u64();
      if (c == 0 || c < prev) throw DeserializeError("counts must be positive and non-decreasing");
      if (c > n - total) throw DeserializeError("counts exceed the stream length");
      mg.store_positive(next_slot++, std::move(k), c);
      prev = c;
      total += c;
    }
    const std::uint32_t zeros = r.u32();
    if (zeros != capacity - positive) throw DeserializeError("zero stack length does not match capacity");
    r.need_records(zeros, 1, "zero slots");
    for (std::uint32_t i = 0; i < zeros; ++i) {
      const std::uint8_t has = r.u8();
      if (has > 1) throw DeserializeError("bad slot flag");
      if (has && h.untyped) throw DeserializeError("an untyped summary (key tag 0) must hold no key");
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
    mg.restore_wire(h);
    mg.finish_rebuild();
    return mg;
  }

 private:
  struct Rebuild {};
  bool holds_keys() const noexcept {
    for (const auto k : keyed_)
      if (k & 1) return true;
    return false;
  }
  // An empty summary to be filled by store_positive / push_zero (merge, deserialization): no slot
  // is stacked yet, base 0.
  MisraGries(std::uint32_t capacity, Rebuild)
      : capacity_(capacity), slots_(capacity_), keyed_(capacity_, 0), cands_(capacity_) {}
  // Ends a rebuild: every rebuilt slot predates the first epoch.
  void finish_rebuild() noexcept { epoch_start_ = slots_.tick(epoch_start_) + 1; }

  void store_key(std::int32_t s, Key k) {
    if (!slots_.place(s, std::move(k))) throw DeserializeError("duplicate key");
    keyed_[static_cast<std::size_t>(s)] = 1;
  }
  // Rebuild: s gets key k and count c (values arrive non-decreasing), as the newest slot.
  void store_positive(std::int32_t s, Key k, std::uint64_t c) {
    store_key(s, std::move(k));
    slots_[s].count = c;
    slots_.time(s) = slots_.tick(epoch_start_);
    min_value_ = std::min(min_value_, c);
  }
  // Rebuild: s (count 0, value 0) goes on top of the zero stack.
  void push_zero(std::int32_t s) noexcept {
    slots_[s].count = 0;
    slots_.time(s) = slots_.tick(epoch_start_);
    cands_.push(s);
  }

  // Positive-count slots by count ascending, then time ascending (oldest first: the serialized
  // order) or descending (newest first: the structure order).
  std::vector<std::int32_t> positive_order(bool oldest_first = true) const {
    std::vector<std::int32_t> out;
    for (std::uint32_t i = 0; i < capacity_; ++i)
      if (slots_[static_cast<std::int32_t>(i)].count > base_) out.push_back(static_cast<std::int32_t>(i));
    slots_.sort_slots(out, true, oldest_first);
    return out;
  }
  // Count-0 slots in reuse order (next reused first): value descending, then time descending.
  std::vector<std::int32_t> zero_order() const {
    std::vector<std::int32_t> out;
    for (std::uint32_t i = 0; i < capacity_; ++i)
      if (slots_[static_cast<std::int32_t>(i)].count <= base_) out.push_back(static_cast<std::int32_t>(i));
    slots_.sort_slots(out, false, false);
    return out;
  }

  std::uint32_t capacity_;
  std::uint64_t n_ = 0;
  std::uint64_t base_ = 0;
  std::uint64_t decrements_ = 0;
  bool merged_ = false;
  Slots slots_;                      // .count holds the value count + base_
  std::vector<std::uint8_t> keyed_;  // bit 0: the slot has a key (never-used slots: 0); bit 1: scratch
  // Reuse order and decrement bookkeeping (header comment).
  detail::SplitStack cands_;         // low: the zero stack; high: this epoch's arrivals at count 1
  std::uint64_t min_value_ = kNoValue;
  std::uint32_t epoch_start_ = 0;    // time of the last decrement
};

}  // namespace dpsketch
