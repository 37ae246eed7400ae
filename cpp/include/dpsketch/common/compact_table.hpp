// Compact index from key to slot for the counter summaries.
//
// Open addressing over groups of 16 control bytes (as in SwissTable), with the slot ids in a
// parallel array. Positions: a power of two >= kSpread * capacity, in groups of 16.
//   * ctrl_: one byte per position, 0 when free, else 0x80 | a 7-bit tag (bits 57-63 of the key's
//     table hash; the home group comes from the low bits). Byte 15 of a group is not a position:
//     it is the group's overflow flag, 1 while some key homed at or before the group lives past
//     it. Tags have bit 7 set, so the flag never matches one.
//   * ids_: the slot index stored at each position; over_: per group, how many keys live past it
//     (the flag is over_ != 0; the count makes erasure exact); where_: each slot's position, so an
//     erasure needs no probe.
// A key lives in the first free lane of its home group unless that group is full; then in the first
// later group with a free lane, and every group it passed counts it in over_ (15 lanes at a load
// <= 1/4: a full group takes >= 15 keys where 4 are expected, probability ~10^-5).
//   * A lookup loads the home group's 16 control bytes once and compares all tags at once (SSE2; a
//     byte loop elsewhere); each tag match checks its slot's key (a key matches a foreign tag 1 time
//     in 128 per occupied lane); a key is absent when no match holds and the flag is clear, which
//     is the overwhelmingly common case.
//   * Why this layout (docs/benchmarks.md §Counters): the control bytes are 4 per slot, so up to
//     a few thousand slots they stay in L1, and a miss -- which on a skewed stream follows a
//     mispredicted hit/miss branch -- is settled by an L1 load rather than an L2 load.
//   * An insertion takes the free lane the lookup returned; an erasure clears the lane, and only
//     a displaced entry (the global count of displaced entries says whether any exists) walks from
//     its home group to uncount itself.
// Memory per slot: kSpread * 5 bytes of control and ids, kSpread / 4 of over_, and 4 of where_
// (25.25 at kSpread = 4 and a power-of-two capacity). All memory is allocated at construction:
// no operation allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "dpsketch/common/compiler.hpp"
#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/slot_probe.hpp"

// The byte loop elsewhere; DPSKETCH_PORTABLE_TABLE forces it on x86 too (the differential test
// builds it both ways).
#if defined(__SSE2__) && !defined(DPSKETCH_PORTABLE_TABLE)
#define DPSKETCH_TABLE_SSE2 1
#include <emmintrin.h>
#endif

namespace dpsketch::detail {

template <class Key>
class CompactTable {
  using Traits = KeyTraits<Key>;

 public:
  static constexpr std::int32_t kEmpty = kNoSlot;
  static constexpr std::size_t kGroup = 16;      // control bytes per group: 15 lanes + the flag
  static constexpr std::size_t kSpread = 4;      // positions per slot (2 is slower on miss-heavy streams, 8 no faster)
  static constexpr unsigned kLanes = 0x7FFFu;    // mask bits of the 15 lanes
  static constexpr unsigned kNoOverflow = 0x8000u;  // mask bit of a clear flag, in a free-byte mask

  // pos: the key's position, or the free lane where it would be inserted.
  using Probe = SlotProbe;

  explicit CompactTable(std::uint32_t max_entries) : where_(max_entries, 0) {
    const std::size_t positions = table_positions(max_entries, kSpread, kGroup);
    gmask_ = positions / kGroup - 1;
    // 64-byte aligned control bytes: a group never straddles a cache line.
    ctrl_storage_.assign(positions + 64, 0);
    const auto addr = reinterpret_cast<std::uintptr_t>(ctrl_storage_.data());
    ctrl_ = ctrl_storage_.data() + (64 - addr % 64) % 64;
    ids_.assign(positions, 0);
    over_.assign(positions / kGroup, 0);
  }
  CompactTable(const CompactTable& o) : CompactTable(static_cast<std::uint32_t>(o.where_.size())) { copy_from(o); }
  CompactTable& operator=(const CompactTable& o) {
    if (this != &o) {
      CompactTable t(o);
      swap(t);
    }
    return *this;
  }
  CompactTable(CompactTable&& o) noexcept { swap(o); }
  CompactTable& operator=(CompactTable&& o) noexcept {
    swap(o);
    return *this;
  }

  // `key_of(slot)` returns the slot's stored key (compared only on a tag match).
  template <class View, class KeyOf>
  Probe probe(std::uint64_t h, const View& key, KeyOf&& key_of) const noexcept {
    const std::uint32_t want = tag(h);
    const std::size_t g = h & gmask_;
    const std::uint8_t* G = ctrl_ + g * kGroup;
    const Masks m = masks(G, want);
    // The match loop written out (not find_in_group) returns straight from a key match: no sentinel
    // to test again, and the caller's hit test folds into it (slot ids are >= 0).
    for (unsigned match = m.match; match; match &= match - 1) {
      const std::size_t pos = lane(g, match);
      const std::int32_t s = ids_[pos];
      if (Traits::equal(key_of(s), key)) {
        DPSKETCH_ASSUME(s >= 0);
        return {pos, s};
      }
    }
    // Absent once no key went past the group; then it has a free lane (a full group sets its flag).
    if ((m.free & kNoOverflow) && (m.free & kLanes)) return {lane(g, m.free & kLanes), kEmpty};
    return probe_chain(h, key, key_of);
  }

  // Stores slot's entry at `pos`, the free lane a probe() for its key (hash h) returned, with no
  // insertion in between.
  void insert_at(std::size_t pos, std::uint64_t h, std::int32_t slot) noexcept {
    ctrl_[pos] = static_cast<std::uint8_t>(tag(h));
    ids_[pos] = slot;
    where_[static_cast<std::size_t>(slot)] = static_cast<std::uint32_t>(pos);
    const std::size_t home = h & gmask_, at = pos / kGroup;
    if (at != home) {  // displaced (rare): count it in every group it passed
      for (std::size_t g = home; g != at; g = (g + 1) & gmask_) {
        ++over_[g];
        ctrl_[g * kGroup + kGroup - 1] = 1;
      }
      ++displaced_;
    }
  }

  // Position of slot's entry (re-keying: read it before insert_at of the new key, then erase_at
  // it; the slot briefly has two entries, and erase_at works by position).
  std::size_t position(std::int32_t slot) const noexcept { return where_[static_cast<std::size_t>(slot)]; }

  // Removes the entry at position pos. `home_of(slot)` gives the slot key's table hash; it is
  // asked only while some entry is displaced.
  template <class HomeOf>
  void erase_at(std::size_t pos, HomeOf&& home_of) noexcept {
    ctrl_[pos] = 0;
    if (displaced_ == 0) return;
    const std::size_t home = static_cast<std::size_t>(home_of(ids_[pos])) & gmask_, at = pos / kGroup;
    if (at != home) {
      for (std::size_t g = home; g != at; g = (g + 1) & gmask_)
        if (--over_[g] == 0) ctrl_[g * kGroup + kGroup - 1] = 0;
      --displaced_;
    }
  }

  std::size_t memory_bytes() const noexcept {
    return ctrl_storage_.capacity() + (ids_.capacity() + over_.capacity() + where_.capacity()) * sizeof(std::uint32_t);
  }

 private:
  static constexpr std::size_t kNoLane = ~std::size_t{0};

  // Bits 57-63 of the hash with bit 7 set: never 0 (free) or 1 (a set flag).
  static std::uint32_t tag(std::uint64_t h) noexcept { return static_cast<std::uint32_t>(h >> 57) | 0x80u; }

  struct Masks {
    unsigned match;  // bit i: byte i is the tag (lanes only, as the flag byte never is)
    unsigned free;   // bit i: byte i is 0 (bit 15: the flag is clear)
  };
  static Masks masks(const std::uint8_t* G, std::uint32_t want) noexcept {
#ifdef DPSKETCH_TABLE_SSE2
    const __m128i c = _mm_load_si128(reinterpret_cast<const __m128i*>(G));
    // The broadcast is built in an integer register: gcc's _mm_set1_epi8 of a computed byte goes
    // through a byte store and a 4-byte reload, a store-forwarding stall on every lookup.
    const __m128i w = _mm_set1_epi32(static_cast<int>(want * 0x01010101u));
    return {static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(c, w))),
            static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(c, _mm_setzero_si128())))};
#else
    Masks m{0, 0};
    for (unsigned i = 0; i < kGroup; ++i) {
      m.match |= static_cast<unsigned>(G[i] == want) << i;
      m.free |= static_cast<unsigned>(G[i] == 0) << i;
    }
    return m;
#endif
  }

  // The lookup beyond a home group that is full or that keys went past (rare). key_of by value (a
  // pointer-sized lambda): by reference, the inlined caller stored it to the stack on every update.
  template <class View, class KeyOf>
  DPSKETCH_NOINLINE Probe probe_chain(std::uint64_t h, const View& key, KeyOf key_of) const noexcept {
    const std::uint32_t want = tag(h);
    std::size_t g = h & gmask_;
    std::size_t first_free = kNoLane;
    for (;;) {
      const Masks m = masks(ctrl_ + g * kGroup, want);
      const std::size_t pos = find_in_group(g, m.match, key, key_of);
      if (pos != kNoLane) return {pos, ids_[pos]};
      if (first_free == kNoLane && (m.free & kLanes)) first_free = lane(g, m.free & kLanes);
      if (m.free & kNoOverflow) return {first_free != kNoLane ? first_free : free_lane_after(g), kEmpty};
      g = (g + 1) & gmask_;
    }
  }

  // Position of group g's lowest lane set in `bits` (non-zero).
  static std::size_t lane(std::size_t g, unsigned bits) noexcept { return g * kGroup + static_cast<unsigned>(__builtin_ctz(bits)); }
  // Position of the key among group g's tag matches (bit i: lane i), or kNoLane.
  template <class View, class KeyOf>
  std::size_t find_in_group(std::size_t g, unsigned match, const View& key, KeyOf& key_of) const noexcept {
    for (; match; match &= match - 1) {
      const std::size_t pos = lane(g, match);
      if (Traits::equal(key_of(ids_[pos]), key)) return pos;
    }
    return kNoLane;
  }

  // First free lane after group g (the chain's groups were full; the load stays <= 1/4).
  std::size_t free_lane_after(std::size_t g) const noexcept {
    for (;;) {
      g = (g + 1) & gmask_;
      const unsigned free = masks(ctrl_ + g * kGroup, 0x80u).free & kLanes;  // (no tag wanted)
      if (free) return lane(g, free);
    }
  }

  void copy_from(const CompactTable& o) {
    for (std::size_t i = 0; i < ids_.size(); ++i) ctrl_[i] = o.ctrl_[i];
    ids_ = o.ids_;
    over_ = o.over_;
    where_ = o.where_;
    displaced_ = o.displaced_;
  }
  void swap(CompactTable& o) noexcept {
    ctrl_storage_.swap(o.ctrl_storage_);
    std::swap(ctrl_, o.ctrl_);
    ids_.swap(o.ids_);
    over_.swap(o.over_);
    where_.swap(o.where_);
    std::swap(gmask_, o.gmask_);
    std::swap(displaced_, o.displaced_);
  }

  std::vector<std::uint8_t> ctrl_storage_;
  std::uint8_t* ctrl_ = nullptr;  // into ctrl_storage_, 64-byte aligned
  std::vector<std::int32_t> ids_;
  std::vector<std::uint32_t> over_;
  std::vector<std::uint32_t> where_;
  std::size_t gmask_ = 0;
  std::size_t displaced_ = 0;  // entries outside their home group
};

}  // namespace dpsketch::detail
