// SpaceSaving with the exact recency tie rule (docs/algorithms.md §3; Holland, Algorithm 2).
//
// update(x): tracked -> c[x] += 1; else a free slot -> c[x] = 1; else evict, among the items with
// the minimum count, the one whose most recent occurrence is latest, and give x its slot with
// c[x] = c_min + 1. Guarantees: f(x) <= c(x) <= f(x) + c_min,  c_min <= n / capacity,  sum of
// counts == n.
//
// Representation: flat per-slot arrays (detail::FlatSlots) -- key and
// count side by side, and the time of the slot's last increment -- plus a compact slot table.
// Every update increments exactly one slot and makes it the newest (a hit: the item's slot; a
// miss: the victim's), so the state is fully described by (count, time) per slot: the structure
// order is count ascending, time descending within a count, and the next victim is its first
// element. A hit writes the count and the time (and appends to a list when it leaves the
// minimum). Only the eviction candidates are kept in order, in `stage` form:
//   * the low stack of cands_: the slots with count == cmin_ (the minimum), time ascending (top =
//     newest). A hit on one of them leaves a stale entry (its count moved on; counts never
//     decrease), skipped when popped, or dropped when the buffer fills.
//   * the high list of cands_: the slots that reached cmin_ + 1 during the current stage, in time
//     order (appended by the hit on a count-cmin_ slot and by each eviction).
// When the low stack runs dry the stage ends: one scan finds the new minimum m; if m == cmin_ + 1
// its slots are the still-valid high-list entries (already in time order) after the slots that had
// count m before the stage began (time < stage_start_, sorted by time -- few: they reached m by
// hits before the minimum caught up); otherwise all slots with count m, sorted by time. A stage ends only when
// the minimum rises, and the minimum is <= n / capacity, so the scans cost O(n) in all: O(1)
// amortized per update. Nothing allocates after construction.
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
#include <cstdint>
#include <string>
#include <type_traits>
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
class SpaceSaving : public detail::CounterSummary<SpaceSaving<Key>, Key> {
  using Base = detail::CounterSummary<SpaceSaving<Key>, Key>;
  friend Base;  // calls absorb()
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;
  using Slots = detail::FlatSlots<Key>;
  static constexpr std::int32_t kEmpty = Slots::kEmpty;
  static constexpr std::uint64_t kNoStage = ~std::uint64_t{0};  // cmin_ before the first eviction

 public:
  explicit SpaceSaving(std::uint64_t capacity)
      : capacity_((check_capacity(capacity), static_cast<std::uint32_t>(capacity))), slots_(capacity_), cands_(capacity_) {}

  // update(), update_many(), update_hashed(), check_room(): detail::CounterSummary.

 private:
  // The update itself. At the stream limit it throws before any change, so counts and n stay
  // below 2^63.
  // Inlined into the caller's loop; the rare cases (a hit leaving the minimum, a stage start) are
  // out of line.
  DPSKETCH_ALWAYS_INLINE void absorb(std::uint64_t h, const View& x) {
    const auto found = slots_.probe(h, x);
    check_stream_room(n_, 1);
    ++n_;
    const std::uint32_t t = slots_.tick(stage_start_);
    if (found.slot != kEmpty) {
      auto& slot = slots_[found.slot];
      const std::uint64_t c = slot.count;
      slot.count = c + 1;
      slots_.time(found.slot) = t;
      // It reached cmin_ + 1 in this stage iff it had cmin_ (never true before the first eviction).
      // Rare on skewed streams, so a branch: the common hit path then does no append at all.
      if (c == cmin_) leave_minimum(found.slot);
    } else if constexpr (std::is_arithmetic_v<Key>) {
      miss(found.pos, h, x, t);
    } else {  // string keys: the miss path (a key copy) out of line keeps the hit path lean
      miss_out_of_line(found.pos, h, x, t);
    }
  }
  DPSKETCH_NOINLINE void miss_out_of_line(std::size_t pos, std::uint64_t h, const View& x, std::uint32_t t) {
    miss(pos, h, x, t);
  }

  // Appends slot s, which just left the minimum count, to the stage's high list. A full buffer
  // drops the low stack's stale entries (s's among them): O(capacity) after >= capacity / 4 such
  // hits.
  DPSKETCH_NOINLINE void leave_minimum(std::int32_t s) {
    cands_.push_high(s);
    if (cands_.used() == cands_.size()) cands_.filter_low([this](std::int32_t t) { return slots_[t].count == cmin_; });
  }

  // x (hash h) is not tracked; its probe ended at the free lane `pos`. (Inline for int keys: their
  // miss path is short, and miss-heavy streams pay for a call on every update.)
  void miss(std::size_t pos, std::uint64_t h, const View& x, std::uint32_t t) {
    if (size_ < capacity_) {
      const auto s = static_cast<std::int32_t>(size_++);
      slots_.key_fresh(s, pos, h, x);
      slots_[s].count = floor_ + 1;  // floor_ is 0 unless merged
      slots_.time(s) = t;
    } else {
      evict(pos, h, x, t);
    }
  }

  // Miss on a full summary: the victim is the newest slot with the minimum count (the recency
  // tie rule); x takes its slot with count c_min + 1, as the newest.
  void evict(std::size_t pos, std::uint64_t h, const View& x, std::uint32_t t) {
    std::int32_t v;
    do {
      if (cands_.low() == 0) start_stage(t);
      v = cands_.pop();
    } while (slots_[v].count != cmin_);  // stale: hit since it was stacked
    slots_.rekey(v, pos, h, x);
    slots_[v].count = cmin_ + 1;
    slots_.time(v) = t;
    cands_.push_high(v);
  }

  // Rebuilds the eviction candidates when the low stack is empty (header comment); `t` is the time
  // of the update that needs a victim. Precondition: the summary is full.
  DPSKETCH_NOINLINE void start_stage(std::uint32_t t) {
    // One pass: the new minimum m, and the slots that had count cmin_ + 1 before the stage (the
    // candidates if m == cmin_ + 1, the usual case; no count is 0, so none before the first
    // stage). They are distinct from the high list's slots (times >= stage_start_), so both fit.
    const std::uint64_t next = cmin_ + 1;
    const std::uint64_t m =  // every count is >= 1, so the minimum of the counts above 0 is the minimum
        slots_.scan(capacity_, 0, next, stage_start_, [this](std::int32_t s, bool match) { cands_.push_if(s, match); });
    if (cmin_ == kNoStage || m != next) {  // a count value was skipped (or the first stage): all of m
      cands_.set_low(0);
      cands_.clear_high();
      for (std::uint32_t s = 0; s < capacity_; ++s)
        cands_.push_if(static_cast<std::int32_t>(s), slots_[static_cast<std::int32_t>(s)].count == m);
    }
    slots_.sort_by_time(cands_.low_data(), cands_.low_data() + cands_.low(), cands_.free_data(), cands_.free_size());
    // Then the stage's arrivals at m that are still there: in time order, and all newer.
    cands_.move_high_to_low([this, m](std::int32_t s) { return slots_[s].count == m; });
    cmin_ = m;
    stage_start_ = t;
  }

 public:
  // Tracked count of x, or 0 if x is not tracked (then f(x) <= min_count()).
  std::uint64_t estimate(const View& x) const {
    const std::int32_t s = slots_.find(x);
    return s == kEmpty ? 0 : slots_[s].count;
  }
  bool contains(const View& x) const { return slots_.find(x) != kEmpty; }

  // Minimum tracked count when all slots are used, else the floor (0 unless merged). Every
  // untracked item has f(x) <= min_count(). O(capacity).
  std::uint64_t min_count() const noexcept {
    if (size_ < capacity_) return floor_;
    std::uint64_t m = ~std::uint64_t{0};
    for (std::uint32_t s = 0; s < capacity_; ++s) m = std::min(m, slots_[static_cast<std::int32_t>(s)].count);
    return m;
  }

  bool merged() const noexcept { return merged_; }
  // Count floor of a merged summary (0 otherwise): see the header comment.
  std::uint64_t floor() const noexcept { return floor_; }

  // Merge `other` into *this through the MG isomorphism (header comment). The merged state is
  // canonical: counts ascending, equal counts ordered by key, ascending key = older (so the next
  // victim among the minimum count is its largest key); the recency tie rule of §3 describes only
  // unmerged summaries. a.merge(b) and b.merge(a) give identical states.
  void merge(const SpaceSaving& other) {
    this->check_mergeable("SpaceSaving", other);  // nothing changed if it throws
    const std::uint64_t m1 = min_count(), m2 = other.min_count();
    std::vector<std::pair<Key, std::uint64_t>> all;  // MG forms g_i = c_i - m_i
    all.reserve(size_ + other.size_);
    for_each([&](const Key& k, std::uint64_t c) { if (c > m1) all.emplace_back(k, c - m1); });
    other.for_each([&](const Key& k, std::uint64_t c) { if (c > m2) all.emplace_back(k, c - m2); });
    const std::uint64_t s = detail::combine_and_cut(all, capacity_);  // the (capacity+1)-th largest MG sum
    const std::uint64_t e = m1 + m2 + s;
    std::vector<std::pair<std::uint64_t, Key>> kept;
    for (auto& kv : all)
      if (kv.second > s) kept.emplace_back(kv.second - s + e, std::move(kv.first));
    std::sort(kept.begin(), kept.end());  // count ascending, then key ascending
    SpaceSaving out(capacity_);
    for (auto& [c, k] : kept) out.append(std::move(k), c);  // appended as newest
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
    for (std::int32_t s : ordered(false)) visit(slots_[s].key, slots_[s].count);
  }

  std::vector<std::pair<Key, std::uint64_t>> items() const {
    std::vector<std::pair<Key, std::uint64_t>> out;
    out.reserve(size_);
    for_each([&](const Key& k, std::uint64_t c) { out.emplace_back(k, c); });
    return out;
  }

  std::size_t memory_bytes() const noexcept {
    std::size_t b = sizeof(*this) + slots_.memory_bytes() + cands_.memory_bytes();
    for (std::uint32_t s = 0; s < size_; ++s) b += slots_.key_heap_bytes(static_cast<std::int32_t>(s));
    return b;
  }

  // Payload: capacity u32, n u64, size u32, then `size` records (key, count) in structure order
  // reversed within each count (oldest first), so replaying them as successive newest arrivals
  // restores the order; then, only when more than kUnbackedFreeSlots slots are free, one zero byte
  // per free slot (so the reader's allocation is backed by the input's length, limits.hpp).
  std::string serialize() const {
    ByteWriter w;
    this->write_opening(w, Family::space_saving, n_ == 0, merged_);
    if (merged_) w.u64(floor_);  // only in merged bytes: unmerged bytes keep the original layout
    w.u32(size_);
    for (std::int32_t s : ordered(true)) {
      Traits::write(w, slots_[s].key);
      w.u64(slots_[s].count);
    }
    if (capacity_ - size_ > kUnbackedFreeSlots) w.raw(std::string(capacity_ - size_, '\0').data(), capacity_ - size_);
    std::string out = w.take();
    this->append_trailer(out);
    return out;
  }

  // serialize().size(), without writing the bytes.
  std::size_t serialized_size() const {
    std::size_t b = kHeaderBytes + 4 + 8 + (merged_ ? 8 : 0) + 4 + this->trailer_bytes();
    for (std::int32_t s : ordered(true)) b += Traits::serialized_bytes(slots_[s].key) + 8;
    if (capacity_ - size_ > kUnbackedFreeSlots) b += capacity_ - size_;
    return b;
  }

  static SpaceSaving deserialize(std::string_view bytes) {
    ByteReader r(bytes);
    const auto [h, merged, capacity] = Base::read_opening(r, Family::space_saving);
    const std::uint64_t n = Base::read_length(r, h);
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
      if (!ss.append(std::move(k), c)) throw DeserializeError("duplicate key");
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
    ss.restore_wire(h);
    return ss;
  }

 private:
  // Rebuild support (merge, deserialization): k takes the next free slot with count c, as the
  // newest item. Returns false (nothing changed) if k is already tracked.
  bool append(Key k, std::uint64_t c) {
    const auto s = static_cast<std::int32_t>(size_);
    if (!slots_.place(s, std::move(k))) return false;
    ++size_;
    slots_[s].count = c;
    slots_.time(s) = slots_.tick(stage_start_);
    return true;
  }

  // Tracked slots by count ascending, then time ascending (oldest first: the serialized order) or
  // descending (newest first: the structure order).
  std::vector<std::int32_t> ordered(bool oldest_first) const {
    std::vector<std::int32_t> order(size_);
    for (std::uint32_t s = 0; s < size_; ++s) order[s] = static_cast<std::int32_t>(s);
    slots_.sort_slots(order, true, oldest_first);
    return order;
  }

  std::uint32_t capacity_;
  std::uint32_t size_ = 0;
  std::uint64_t n_ = 0;
  std::uint64_t floor_ = 0;  // count floor after a merge (header comment)
  bool merged_ = false;
  Slots slots_;
  // Eviction candidates (header comment); cmin_ is kNoStage until the first eviction.
  detail::SplitStack cands_;
  std::uint64_t cmin_ = kNoStage;
  std::uint32_t stage_start_ = 0;  // time of the update that started the stage
};

}  // namespace dpsketch
