// Compact bucketed index from key to slot for the counter summaries (issue 13).
//
// The table is an array of 32-byte buckets, one bucket (at least) per slot: 7 entry lanes and an
// overflow counter. An entry is 4 bytes: bit 31 set (0 marks an empty lane), a 7-bit tag from the
// top of the key's table hash (bits 24-30), and the 24-bit slot index (kMaxCapacity = 2^24,
// limits.hpp). A key lives in its home bucket (low bits of the hash) unless that bucket is full;
// then in the first later bucket with a free lane, and every bucket it passed counts it in its
// overflow counter (Poisson(1) keys per bucket: a full home bucket has probability ~10^-5).
//   * A lookup checks lane 0 first (insertions take the lowest free lane, so most keys are
//     there), then compares the other 6 tags at once (SSE2; a scalar loop elsewhere), checks the
//     key of each tag match (a non-matching entry matches the tag 1 time in 128), and goes on to
//     the next bucket only while the overflow counter is non-zero.
//   * Why buckets and not linear probing (the 4-byte-entry linear-probing table at load 1/8, with
//     backward-shift deletion, was measured against it): on a miss, linear probing's probe and its
//     backward shift each end in a data-dependent loop exit; the buckets have none, and
//     the counters got 1.15-1.3x faster on uniform and Zipf 0.8 streams. Hits cost more (a key
//     outside lane 0 takes the SIMD path; promote() moves often-hit keys to lane 0), so on Zipf
//     1.1 the linear table stayed 1.02-1.08x faster (docs/benchmarks.md §Counters v2).
//   * An insertion on a miss takes the first free lane the lookup saw; an erasure clears the lane
//     (where_ maps each slot to its entry), and only a displaced entry -- which the global count
//     of displaced entries reveals -- walks back to its home to uncount itself.
// Memory: 32 bytes of buckets per slot (k rounded up to a power of two) plus 4 for where_.
// All memory is allocated at construction: no operation allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "dpsketch/common/key_traits.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dpsketch::detail {

template <class Key>
class CompactTable {
  using Traits = KeyTraits<Key>;

 public:
  static constexpr std::int32_t kEmpty = -1;
  static constexpr std::size_t kLanes = 8;      // 7 entries + the overflow counter
  static constexpr std::size_t kEntryLanes = 7;

  struct Probe {
    std::size_t pos;     // the key's entry, or the free lane where it would be inserted
    std::int32_t slot;   // kEmpty when absent
  };

  explicit CompactTable(std::uint32_t max_entries) : where_(max_entries, 0) {
    std::size_t buckets = 1;
    while (buckets < max_entries) buckets <<= 1;
    mask_ = buckets - 1;
    // 32-byte aligned buckets (a bucket never straddles a cache line).
    storage_.assign(buckets * kLanes + kLanes, 0);
    const auto addr = reinterpret_cast<std::uintptr_t>(storage_.data());
    buckets_ = storage_.data() + ((32 - addr % 32) % 32) / sizeof(std::uint32_t);
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
    const std::size_t b = h & mask_;
    const std::uint32_t* B = buckets_ + b * kLanes;
    // Lane 0 first, scalar: insertions take the lowest free lane, so most keys sit there.
    const std::uint32_t e0 = B[0];
    if ((e0 & kTagMask) == want && Traits::equal(key_of(slot_of(e0)), key)) return {b * kLanes, slot_of(e0)};
    for (unsigned match = match_mask(B, want) & ~1u; match; match &= match - 1) {
      const unsigned lane = static_cast<unsigned>(__builtin_ctz(match));
      const std::int32_t s = slot_of(B[lane]);
      if (Traits::equal(key_of(s), key)) return {b * kLanes + lane, s};
    }
    const unsigned empty = empty_mask(B);
    // Absent once no key homed at b went past b (the overwhelmingly common case).
    if (B[kEntryLanes] == 0 && empty) return {b * kLanes + static_cast<unsigned>(__builtin_ctz(empty)), kEmpty};
    return probe_chain(h, key, key_of);
  }

  // Stores slot's entry at `pos`, the free lane a probe() for its key (hash h) returned, with no
  // table change in between.
  void insert_at(std::size_t pos, std::uint64_t h, std::int32_t slot) noexcept {
    buckets_[pos] = tag(h) | static_cast<std::uint32_t>(slot);
    where_[static_cast<std::size_t>(slot)] = static_cast<std::uint32_t>(pos);
    const std::size_t home = h & mask_, at = pos / kLanes;
    if (at != home) {  // displaced (rare): count it in every bucket it passed
      for (std::size_t b = home; b != at; b = (b + 1) & mask_) ++buckets_[b * kLanes + kEntryLanes];
      ++displaced_;
    }
  }

  // Moves the entry at `pos` to lane 0 of its bucket (swapping with what is there), so that a key
  // found elsewhere in its bucket is found by the scalar lane-0 check next time: the keys a
  // stream hits often gather there. Entries stay in their bucket, so overflow counts hold.
  void promote(std::size_t pos) noexcept {
    const std::size_t first = pos - pos % kLanes;
    const std::uint32_t e = buckets_[pos], f = buckets_[first];
    buckets_[first] = e;
    buckets_[pos] = f;
    where_[static_cast<std::size_t>(slot_of(e))] = static_cast<std::uint32_t>(first);
    if (f != 0) where_[static_cast<std::size_t>(slot_of(f))] = static_cast<std::uint32_t>(pos);
  }
  static bool in_first_lane(std::size_t pos) noexcept { return pos % kLanes == 0; }

  // Position of slot's entry (re-keying: read it before insert_at of the new key, then erase_at
  // it; the slot briefly has two entries, and erase_at works by position).
  std::size_t position(std::int32_t slot) const noexcept { return where_[static_cast<std::size_t>(slot)]; }

  // Removes the entry at position pos. `home_of(slot)` gives the slot key's table hash; it is
  // asked only while some entry is displaced.
  template <class HomeOf>
  void erase_at(std::size_t pos, HomeOf&& home_of) noexcept {
    const std::uint32_t e = buckets_[pos];
    buckets_[pos] = 0;
    if (displaced_ == 0) return;
    const std::size_t home = static_cast<std::size_t>(home_of(slot_of(e))) & mask_, at = pos / kLanes;
    if (at != home) {
      for (std::size_t b = home; b != at; b = (b + 1) & mask_) --buckets_[b * kLanes + kEntryLanes];
      --displaced_;
    }
  }

  std::size_t memory_bytes() const noexcept {
    return (storage_.capacity() + where_.capacity()) * sizeof(std::uint32_t);
  }

 private:
  static constexpr std::uint32_t kSlotMask = (1u << 24) - 1;
  static constexpr std::uint32_t kTagMask = ~kSlotMask;
  static constexpr std::size_t kNoLane = ~std::size_t{0};
  // Bits 57-63 of the hash (the home bucket uses the low bits), with bit 31 forced: never 0.
  static std::uint32_t tag(std::uint64_t h) noexcept {
    return (static_cast<std::uint32_t>(h >> 32) | 0x80000000u) & kTagMask;
  }
  static std::int32_t slot_of(std::uint32_t e) noexcept { return static_cast<std::int32_t>(e & kSlotMask); }

  // Bit i: lane i's tag is `want` (entry lanes only).
  static unsigned match_mask(const std::uint32_t* B, std::uint32_t want) noexcept {
#if defined(__SSE2__)
    const __m128i lo = _mm_load_si128(reinterpret_cast<const __m128i*>(B));
    const __m128i hi = _mm_load_si128(reinterpret_cast<const __m128i*>(B + 4));
    const __m128i tm = _mm_set1_epi32(static_cast<int>(kTagMask)), w = _mm_set1_epi32(static_cast<int>(want));
    return (static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(lo, tm), w)))) |
            static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(hi, tm), w)))) << 4) &
           0x7Fu;
#else
    unsigned m = 0;
    for (unsigned lane = 0; lane < kEntryLanes; ++lane) m |= static_cast<unsigned>((B[lane] & kTagMask) == want) << lane;
    return m;
#endif
  }
  // Bit i: lane i is free (entry lanes only).
  static unsigned empty_mask(const std::uint32_t* B) noexcept {
#if defined(__SSE2__)
    const __m128i lo = _mm_load_si128(reinterpret_cast<const __m128i*>(B));
    const __m128i hi = _mm_load_si128(reinterpret_cast<const __m128i*>(B + 4));
    const __m128i z = _mm_setzero_si128();
    return (static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(lo, z)))) |
            static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(hi, z)))) << 4) &
           0x7Fu;
#else
    unsigned m = 0;
    for (unsigned lane = 0; lane < kEntryLanes; ++lane) m |= static_cast<unsigned>(B[lane] == 0) << lane;
    return m;
#endif
  }

  // The lookup beyond a home bucket that is full or that keys went past (rare).
  template <class View, class KeyOf>
  Probe probe_chain(std::uint64_t h, const View& key, KeyOf&& key_of) const noexcept {
    const std::uint32_t want = tag(h);
    std::size_t b = h & mask_;
    std::size_t first_free = kNoLane;
    for (;;) {
      const std::uint32_t* B = buckets_ + b * kLanes;
      for (unsigned match = match_mask(B, want); match; match &= match - 1) {
        const unsigned lane = static_cast<unsigned>(__builtin_ctz(match));
        const std::int32_t s = slot_of(B[lane]);
        if (Traits::equal(key_of(s), key)) return {b * kLanes + lane, s};
      }
      const unsigned empty = empty_mask(B);
      if (first_free == kNoLane && empty) first_free = b * kLanes + static_cast<unsigned>(__builtin_ctz(empty));
      if (B[kEntryLanes] == 0) return {first_free != kNoLane ? first_free : free_lane_after(b), kEmpty};
      b = (b + 1) & mask_;
    }
  }

  // First free lane at or after bucket b (the home bucket was full; the load stays <= 1/7).
  std::size_t free_lane_after(std::size_t b) const noexcept {
    for (;;) {
      b = (b + 1) & mask_;
      const std::uint32_t* B = buckets_ + b * kLanes;
      for (std::size_t lane = 0; lane < kEntryLanes; ++lane)
        if (B[lane] == 0) return b * kLanes + lane;
    }
  }

  void copy_from(const CompactTable& o) {
    for (std::size_t i = 0; i < (mask_ + 1) * kLanes; ++i) buckets_[i] = o.buckets_[i];
    where_ = o.where_;
    displaced_ = o.displaced_;
  }
  void swap(CompactTable& o) noexcept {
    storage_.swap(o.storage_);
    std::swap(buckets_, o.buckets_);
    where_.swap(o.where_);
    std::swap(mask_, o.mask_);
    std::swap(displaced_, o.displaced_);
  }

  std::vector<std::uint32_t> storage_;
  std::uint32_t* buckets_ = nullptr;  // into storage_, 32-byte aligned
  std::vector<std::uint32_t> where_;
  std::size_t mask_ = 0;
  std::size_t displaced_ = 0;  // entries outside their home bucket
};

}  // namespace dpsketch::detail
