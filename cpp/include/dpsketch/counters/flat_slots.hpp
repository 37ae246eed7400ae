// The storage shared by SpaceSaving and MisraGries.
//
// FlatSlots: per slot, the key and its count side by side (a probe's key comparison brings the
// count's cache line with it), the time of the slot's last increment, and a CompactTable from key
// to slot. String keys also keep their table hash, since rehashing a string to move its table
// entry would cost a pass over its bytes; int keys recompute theirs (two instructions).
//
// Times are 32-bit ticks of a logical clock, one per update (and one per slot a rebuild stamps).
// Only their order matters (they order slots of equal count), so when the clock reaches
// kClockLimit they are renumbered by rank, 1..capacity, in O(capacity log capacity) once per
// ~4 * 10^9 ticks, and the owner's stage / epoch boundary is translated with them (a boundary b
// becomes 1 + #slots with time < b). Invariant: every stored time is <= clock_ < kClockLimit
// (capacity + 1 < kClockLimit, so a renumbered clock has room).
//
// SplitStack: one buffer holding two stacks that grow toward each other, so the summaries' two
// candidate lists share 1.25 * capacity entries instead of taking 2 * capacity: a "low" stack of
// eviction / reuse candidates, popped from its top, and a "high" list of the slots that arrived at
// the next count during the current stage, in arrival order.
//
// Nothing allocates after construction.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "dpsketch/common/compact_table.hpp"
#include "dpsketch/common/compiler.hpp"
#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/simd.hpp"

// Test hook: tests/test_counters_differential.py lowers the limit to run the renumbering
// constantly.
#ifndef DPSKETCH_COUNTER_CLOCK_LIMIT
#define DPSKETCH_COUNTER_CLOCK_LIMIT 0xFFFFFFF0u
#endif

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
  static constexpr std::uint32_t kClockLimit = DPSKETCH_COUNTER_CLOCK_LIMIT;
  static constexpr std::size_t kRadixMin = 64;  // below it std::sort (insertion sort) is cheap: not tuned
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
  std::uint32_t& time(std::int32_t s) noexcept { return time_[static_cast<std::size_t>(s)]; }
  std::uint32_t time(std::int32_t s) const noexcept { return time_[static_cast<std::size_t>(s)]; }

  // The next time, for an update or a rebuild's stamp: renumbers first when the clock is at its
  // limit (`boundary` is translated).
  DPSKETCH_ALWAYS_INLINE std::uint32_t tick(std::uint32_t& boundary) {
    if (clock_ == kClockLimit - 1) renumber(boundary);
    return ++clock_;
  }

  // Gives the keyless slot s the key x (hash h), whose probe ended at the empty entry `pos`.
  void key_fresh(std::int32_t s, std::size_t pos, std::uint64_t h, const View& x) {
    table_.insert_at(pos, h, s);
    set_key(s, h, x);
  }

  // Replaces slot s's key by x (hash h, absent; its probe ended at the free lane `pos`): s's old
  // entry is cleared (the erase may need the old key's hash, so it goes first; it moves no other
  // entry), and x's entry goes where the probe ended -- one probe, for the new key only.
  void rekey(std::int32_t s, std::size_t pos, std::uint64_t h, const View& x) {
    table_.erase_at(table_.position(s), [this](std::int32_t t) { return hash_of(t); });
    table_.insert_at(pos, h, s);
    set_key(s, h, x);
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

  // One pass over slots [0, n) for the summaries' O(capacity) scans (a SpaceSaving stage start, a
  // Misra-Gries decrement): returns the smallest count (value) above `above` (~0 if none) and calls
  // mark(s, match), in index order, where match says whether count == eq and time(s) < before, for
  // every slot -- or, in the AVX2 twin for int keys (4 slots per step), at least for every slot
  // with a match (groups of 4 without one are skipped), so mark must do nothing when match is
  // false (branch-free pushes and counts do nothing then). On miss-heavy streams these scans are a
  // large share of the time, hence the vector twin.
  template <class Mark>
  std::uint64_t scan(std::uint32_t n, std::uint64_t above, std::uint64_t eq, std::uint32_t before, Mark&& mark) const {
    std::uint32_t s = 0;
    std::uint64_t m = ~std::uint64_t{0};
#ifdef DPSKETCH_X86_DISPATCH
    if constexpr (sizeof(Slot) == 16 && std::is_same_v<Key, std::int64_t>) {
      if (n >= 4 && simd::avx2()) {
        m = scan_avx2(slots_.data(), time_.data(), n, above, eq, before, mark);
        s = n & ~3u;
      }
    }
#endif
    for (; s < n; ++s) {
      const auto i = static_cast<std::int32_t>(s);
      const std::uint64_t c = slots_[s].count;
      m = std::min(m, c > above ? c : ~std::uint64_t{0});
      mark(i, (unsigned{c == eq} & unsigned{time(i) < before}) != 0);
    }
    return m;
  }

  // Sorts slot indices by count, then time, each ascending or descending (structure orders).
  void sort_slots(std::vector<std::int32_t>& order, bool count_ascending, bool time_ascending) const {
    std::sort(order.begin(), order.end(), [this, count_ascending, time_ascending](std::int32_t a, std::int32_t b) {
      const std::uint64_t ca = (*this)[a].count, cb = (*this)[b].count;
      if (ca != cb) return (ca < cb) == count_ascending;
      return (time(a) < time(b)) == time_ascending && time(a) != time(b);
    });
  }

  // Sorts slot indices [first, last) by time ascending. With `scratch` room for as many indices,
  // and enough of them, by a stable LSD radix sort on the time bytes that differ (no data-dependent
  // branches, unlike a comparison sort on random times); otherwise std::sort. Times of the
  // sorted slots are distinct (a time is the tick of one update), so both orders are the same.
  void sort_by_time(std::int32_t* first, std::int32_t* last, std::int32_t* scratch = nullptr,
                    std::size_t scratch_size = 0) const {
    const auto n = static_cast<std::size_t>(last - first);
    if (n < kRadixMin || scratch_size < n) {
      std::sort(first, last, [this](std::int32_t a, std::int32_t b) { return time(a) < time(b); });
      return;
    }
    std::uint32_t counts[4][256] = {};
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t t = time(first[i]);
      for (unsigned b = 0; b < 4; ++b) ++counts[b][(t >> (8 * b)) & 0xFF];
    }
    std::int32_t* src = first;
    std::int32_t* dst = scratch;
    for (unsigned b = 0; b < 4; ++b) {
      std::uint32_t* c = counts[b];
      if (c[(time(first[0]) >> (8 * b)) & 0xFF] == n) continue;  // every time has this byte
      std::uint32_t sum = 0;
      for (unsigned d = 0; d < 256; ++d) {
        const std::uint32_t k = c[d];
        c[d] = sum;
        sum += k;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t s = src[i];
        dst[c[(time(s) >> (8 * b)) & 0xFF]++] = s;
      }
      std::swap(src, dst);
    }
    if (src != first) std::copy(src, src + n, first);
  }

  std::size_t memory_bytes() const noexcept {
    return slots_.capacity() * sizeof(Slot) + time_.capacity() * sizeof(std::uint32_t) +
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
#ifdef DPSKETCH_X86_DISPATCH
  // scan() over the first n & ~3 slots, n >= 4 (int keys: Slot is {key, count}, 16 bytes). The
  // minimum count above `above` is the unsigned minimum of d = c - above - 1, which wraps to >= 2^63
  // exactly when c <= above (counts and `above` are below 2^63, the stream limit); AVX2 has signed
  // 64-bit compares only, so d is compared with its sign bit flipped (df = c - (above + 1 - 2^63)).
  // No vector is compared with a constant: the running minimum starts from the first four slots.
  // (g++ 12 with AVX-512BW and VL enabled rewrites a compare against a constant INT64_MIN or
  // INT64_MAX lane, such as `c > above` with above == 0 once inlined, into an equality and then
  // blends with the mask inverted; tests/cpp/counters_simd.cpp builds this file with -march=native.)
  template <class Mark>
  __attribute__((target("avx2"))) static std::uint64_t scan_avx2(const Slot* slots, const std::uint32_t* time,
                                                                 std::uint32_t n, std::uint64_t above, std::uint64_t eq,
                                                                 std::uint32_t before, Mark& mark) {
    constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
    const __m256i shift = _mm256_set1_epi64x(static_cast<long long>((above + 1) ^ kSign));
    const __m256i eq_v = _mm256_set1_epi64x(static_cast<long long>(eq));
    const __m256i before_v = _mm256_set1_epi64x(before);
    __m256i min_f = _mm256_setzero_si256();
    const std::uint32_t end = n & ~3u;
    for (std::uint32_t s = 0; s < end; s += 4) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(slots + s));      // k0 c0 k1 c1
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(slots + s + 2));  // k2 c2 k3 c3
      const __m256i c = _mm256_unpackhi_epi64(a, b);                                          // c0 c2 c1 c3
      const __m256i df = _mm256_sub_epi64(c, shift);
      min_f = s == 0 ? df : _mm256_blendv_epi8(min_f, df, _mm256_cmpgt_epi64(min_f, df));
      const __m256i t = _mm256_permute4x64_epi64(
          _mm256_cvtepu32_epi64(_mm_loadu_si128(reinterpret_cast<const __m128i*>(time + s))), 0xD8);  // t0 t2 t1 t3
      const __m256i hit = _mm256_and_si256(_mm256_cmpeq_epi64(c, eq_v), _mm256_cmpgt_epi64(before_v, t));
      const unsigned bits = static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(hit)));
      if (bits) {  // lanes hold slots s, s+2, s+1, s+3
        mark(static_cast<std::int32_t>(s), (bits & 1) != 0);
        mark(static_cast<std::int32_t>(s + 1), (bits & 4) != 0);
        mark(static_cast<std::int32_t>(s + 2), (bits & 2) != 0);
        mark(static_cast<std::int32_t>(s + 3), (bits & 8) != 0);
      }
    }
    alignas(32) std::uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), min_f);
    std::uint64_t d = ~std::uint64_t{0};
    for (std::uint64_t v : lanes) d = std::min(d, v ^ kSign);
    return d >= kSign ? ~std::uint64_t{0} : d + above + 1;
  }
#endif

  // Times become ranks 1..capacity (distinct times keep their order; equal ones -- unused slots'
  // zeros -- stay equal in effect, as nothing compares them).
  DPSKETCH_NOINLINE void renumber(std::uint32_t& boundary) {
    std::vector<std::int32_t> order(slots_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
    sort_by_time(order.data(), order.data() + order.size());
    std::uint32_t below = 0;
    for (std::int32_t s : order) below += time(s) < boundary;
    for (std::size_t r = 0; r < order.size(); ++r) time(order[r]) = static_cast<std::uint32_t>(r + 1);
    boundary = below + 1;
    clock_ = static_cast<std::uint32_t>(order.size());
  }

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> time_;
  std::vector<std::uint64_t> hash_;  // string keys only
  CompactTable<Key> table_;
  std::uint32_t clock_ = 0;  // the last time issued
};

// Two stacks of slot indices in one buffer (header comment). The owner keeps low + high <= size.
class SplitStack {
 public:
  explicit SplitStack(std::uint32_t capacity) : buf_(std::size_t{capacity} + capacity / 4 + 2) {}

  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(buf_.size()); }
  std::uint32_t used() const noexcept { return low_ + high_; }

  // The unused entries between the two stacks (scratch space; what is written there is lost on
  // the next push).
  std::int32_t* free_data() noexcept { return buf_.data() + low_; }
  std::uint32_t free_size() const noexcept { return size() - used(); }

  // Low stack.
  std::uint32_t low() const noexcept { return low_; }
  std::int32_t* low_data() noexcept { return buf_.data(); }
  const std::int32_t* low_data() const noexcept { return buf_.data(); }
  std::int32_t top() const noexcept { return buf_[low_ - 1]; }
  std::int32_t pop() noexcept { return buf_[--low_]; }
  void push(std::int32_t s) noexcept { buf_[low_++] = s; }
  void set_low(std::uint32_t n) noexcept { low_ = n; }
  // Branch-free push: stores s at the top and keeps it only if `keep` (needs used() < size()).
  void push_if(std::int32_t s, bool keep) noexcept {
    buf_[low_] = s;
    low_ += keep;
  }

  // High list, in arrival order (stored downward from the end of the buffer); needs used() < size().
  void push_high(std::int32_t s) noexcept { high_end()[-static_cast<std::ptrdiff_t>(high_++)] = s; }
  void clear_high() noexcept { high_ = 0; }

  // Appends the high entries satisfying `keep`, in arrival order, to the low stack, and empties the
  // high list. The high region is reversed in place first, so the copy runs forward with the read
  // position never behind the write position.
  template <class Keep>
  void move_high_to_low(Keep&& keep) {
    const std::size_t start = buf_.size() - high_;
    std::reverse(buf_.begin() + static_cast<std::ptrdiff_t>(start), buf_.end());
    std::int32_t* b = buf_.data();
    std::uint32_t w = low_;
    for (std::size_t r = start; r < buf_.size(); ++r) {
      b[w] = b[r];  // w <= r
      w += keep(b[r]) ? 1u : 0u;
    }
    low_ = w;
    high_ = 0;
  }

  // Keeps the low entries satisfying `keep`, in order.
  template <class Keep>
  void filter_low(Keep&& keep) {
    std::int32_t* b = buf_.data();
    std::uint32_t w = 0;
    for (std::uint32_t r = 0; r < low_; ++r) {
      b[w] = b[r];
      w += keep(b[r]) ? 1u : 0u;
    }
    low_ = w;
  }

  std::size_t memory_bytes() const noexcept { return buf_.capacity() * sizeof(std::int32_t); }

 private:
  std::int32_t* high_end() noexcept { return buf_.data() + buf_.size() - 1; }

  std::vector<std::int32_t> buf_;
  std::uint32_t low_ = 0, high_ = 0;
};

}  // namespace dpsketch::detail
