// Contribution bounding of the privacy unit (docs/privacy.md §Privacy unit): per unit, keep the m
// distinct keys with the smallest pair hash h(unit, key) and at most c rows of each; the bounded
// count of a key is the number of kept rows over all units.
//
// Invariants the privacy argument needs (what a unit keeps depends on its own rows alone, not on
// their order and not on other units):
//  * h is a function of the unit's and the key's *values*: pair_hash of their salted value hashes
//    (salted_int_hash: splitmix64's finaliser of value ^ salt, a bijection of the value;
//    salted_bytes_hash for strings). Dictionary codes, which depend on the whole data set and its
//    order, only name groups: rows share a code iff their values are equal (every hash match is
//    confirmed on the values, or for strings of at most 8 bytes on their lengths, which together
//    with the hash determine them: BytesCodes).
//  * Within a unit, ties of h between distinct keys are broken by key_rank (the keys' rank in value
//    order). Without ranks, bound_counts breaks them by code and reports whether such a tie
//    decided what a unit kept, so the caller reruns with ranks. Ties need equal key hashes in one
//    unit (h is a bijection of the key hash for a fixed unit): never for int keys, a 64-bit
//    collision for strings.
//  * Sizes: bound_counts allocates everything before its per-unit loop: unit offsets (n_units + 1
//    of 4 bytes, 8 from 2^32 rows on), the rows' key codes grouped by unit (4 bytes a row) and a
//    scratch of the largest unit's rows. ValueCodes' table doubles when half full (allocation only at doublings).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dpsketch/common/errors.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace dpsketch::privacy_unit {

namespace detail {

inline void prefetch(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

// A zeroed array of n trivially copyable T. From 2 MB on it is aligned to 2 MB and, on Linux,
// marked for transparent huge pages: ValueCodes reads its table at random, and with 4 KB pages
// nearly every probe of a large table would also miss the TLB.
template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T>, "the array is zeroed and moved as bytes");

 public:
  ZeroedArray() = default;
  // zero = false leaves the elements unset (for an array every element of which is written before
  // it is read): the kernel's fresh pages are zero anyway, and a memset would touch them twice.
  explicit ZeroedArray(std::size_t n, bool zero = true) : n_(n) {
    if (n == 0) return;
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_alloc();
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__)
    constexpr std::size_t kHuge = std::size_t{1} << 21;
    if (bytes >= kHuge) {
      const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
      p_ = static_cast<T*>(std::aligned_alloc(kHuge, rounded));
      if (p_) (void)madvise(p_, rounded, MADV_HUGEPAGE);  // advice only: fine if refused
    }
#endif
    if (!p_) p_ = static_cast<T*>(std::malloc(bytes));
    if (!p_) throw std::bad_alloc();
    if (zero) std::memset(static_cast<void*>(p_), 0, bytes);
  }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ZeroedArray(ZeroedArray&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    if (this != &o) {
      std::free(p_);
      p_ = o.p_;
      n_ = o.n_;
      o.p_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }
  ~ZeroedArray() { std::free(p_); }

  T& operator[](std::size_t i) noexcept { return p_[i]; }
  const T& operator[](std::size_t i) const noexcept { return p_[i]; }
  std::size_t size() const noexcept { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace detail

// splitmix64's finaliser: a bijection on 64-bit words (python/dpsketch/privacy_unit.py `_mix`).
inline constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Keys are hashed with salt ^ kKeySaltTweak, units with salt: a unit and a key of equal value get
// unrelated hashes.
inline constexpr std::uint64_t kKeySaltTweak = 0x5A5A5A5A5A5A5A5AULL;

inline constexpr std::uint64_t salted_int_hash(std::int64_t v, std::uint64_t salt) noexcept {
  return mix64(static_cast<std::uint64_t>(v) ^ salt);
}

// A keyed 64-bit hash of a byte string: the length and the salt seed the state, then each 8-byte
// little-endian word (the last one zero-padded) is folded in by one finaliser round. Strings of
// equal length are padded alike and the length separates the others. Bounding needs only that it
// is a deterministic function of (salt, bytes); its spread decides which keys a unit keeps, not
// whether a unit's contribution is bounded.
inline std::uint64_t salted_bytes_hash(std::string_view s, std::uint64_t salt) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t len = s.size();
  std::uint64_t h = mix64(salt ^ (static_cast<std::uint64_t>(s.size()) * 0x9E3779B97F4A7C15ULL));
  while (len >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = mix64(h ^ w);
    p += 8;
    len -= 8;
  }
  if (len > 0) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, len);
    h = mix64(h ^ w);
  }
  return h;
}

// h(unit, key) from the two salted value hashes. For a fixed unit it is a bijection of the key hash.
inline constexpr std::uint64_t pair_hash(std::uint64_t unit_hash, std::uint64_t key_hash) noexcept {
  return mix64(unit_hash ^ mix64(key_hash));
}

// Dictionary codes of one column in order of first appearance (code i: the i-th distinct value),
// with each distinct value's salted hash. Open addressing with linear probing on that hash; the
// table holds (hash, tag, code) and doubles when half full, so a probe touches one slot on average.
// A match of the hash and the tag (a caller's 32 bits of the value, e.g. its length) is confirmed
// by `same(code)`: codes identify values exactly.
class ValueCodes {
 public:
  static constexpr std::uint32_t kMaxDistinct = std::numeric_limits<std::uint32_t>::max() - 1;

  explicit ValueCodes(std::size_t expected_distinct = 0) {
    std::size_t cap = 1024;
    while (cap < 2 * expected_distinct) cap *= 2;
    resize_table(cap);
    hashes_.reserve(cap / 2);
  }

  // The code of the value hashed to h with tag `tag`; `same(code)` says whether that code's value
  // (of equal hash and tag) is this one, `on_new()` runs once when the value is new (before its
  // code is returned).
  template <class Same, class OnNew>
  std::uint32_t find_or_insert(std::uint64_t h, std::uint32_t tag, Same&& same, OnNew&& on_new) {
    std::size_t pos = static_cast<std::size_t>(h) & mask_;
    for (;;) {
      Slot& s = slots_[pos];
      if (s.code_plus_one == 0) break;
      if (s.hash == h && s.tag == tag && same(s.code_plus_one - 1)) return s.code_plus_one - 1;
      pos = (pos + 1) & mask_;
    }
    if (hashes_.size() >= kMaxDistinct)
      throw ParameterError(
          "a column has more than 2^32 - 2 distinct values, more than bounding in memory codes; use the Spark route");
    const auto code = static_cast<std::uint32_t>(hashes_.size());
    on_new();
    hashes_.push_back(h);
    slots_[pos] = Slot{h, code + 1, tag};
    if (2 * hashes_.size() > slots_.size()) grow();
    return code;
  }

  // Brings h's home slot towards the cache ahead of its find_or_insert.
  void prefetch(std::uint64_t h) const noexcept { detail::prefetch(&slots_[static_cast<std::size_t>(h) & mask_]); }

  // The code of the first slot holding hash h, or kNone: a guess (not confirmed on the value) for
  // prefetching what find_or_insert will compare.
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t peek(std::uint64_t h) const noexcept {
    for (std::size_t pos = static_cast<std::size_t>(h) & mask_;; pos = (pos + 1) & mask_) {
      const Slot& s = slots_[pos];
      if (s.code_plus_one == 0) return kNone;
      if (s.hash == h) return s.code_plus_one - 1;
    }
  }

  std::size_t size() const noexcept { return hashes_.size(); }
  const std::vector<std::uint64_t>& hashes() const noexcept { return hashes_; }
  std::size_t memory_bytes() const noexcept { return slots_.size() * sizeof(Slot) + hashes_.capacity() * 8; }

  // Frees the table (the codes' hashes stay); find_or_insert, peek and prefetch need ensure_table first.
  void release_table() noexcept {
    if (slots_.size() == 0) return;
    released_ = slots_.size();
    slots_ = detail::ZeroedArray<Slot>();
    mask_ = 0;
  }
  // Rebuilds a released table, of the size it had, from the hashes and tag_of(code).
  template <class TagOf>
  void ensure_table(TagOf&& tag_of) {
    if (slots_.size() != 0) return;
    resize_table(released_);
    for (std::size_t c = 0; c < hashes_.size(); ++c) {
      std::size_t pos = static_cast<std::size_t>(hashes_[c]) & mask_;
      while (slots_[pos].code_plus_one != 0) pos = (pos + 1) & mask_;
      slots_[pos] = Slot{hashes_[c], static_cast<std::uint32_t>(c + 1), tag_of(static_cast<std::uint32_t>(c))};
    }
  }

 private:
  struct Slot {
    std::uint64_t hash;
    std::uint32_t code_plus_one;  // 0: free
    std::uint32_t tag;            // fills what would be padding
  };

  void resize_table(std::size_t cap) {
    slots_ = detail::ZeroedArray<Slot>(cap);  // zero bytes: free slots
    mask_ = cap - 1;
  }

  void grow() {
    detail::ZeroedArray<Slot> old = std::move(slots_);
    resize_table(old.size() * 2);
    constexpr std::size_t kAhead = 16;  // new home slots prefetched this many old slots ahead
    for (std::size_t i = 0; i < old.size(); ++i) {
      if (i + kAhead < old.size() && old[i + kAhead].code_plus_one != 0)
        detail::prefetch(&slots_[static_cast<std::size_t>(old[i + kAhead].hash) & mask_]);
      const Slot& s = old[i];
      if (s.code_plus_one == 0) continue;
      std::size_t pos = static_cast<std::size_t>(s.hash) & mask_;
      while (slots_[pos].code_plus_one != 0) pos = (pos + 1) & mask_;
      slots_[pos] = s;
    }
    hashes_.reserve(slots_.size() / 2);
  }

  detail::ZeroedArray<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t released_ = 0;  // the size of a released table
  std::vector<std::uint64_t> hashes_;  // per code
};

// Codes of an int64 column. salted_int_hash is a bijection of the value, so a hash match is a
// value match and no value is re-read while probing.
class IntCodes {
 public:
  explicit IntCodes(std::uint64_t salt, std::size_t expected_distinct = 0)
      : salt_(salt), codes_(expected_distinct) {
    values_.reserve(expected_distinct);
  }

  template <class Code>
  void encode(const std::int64_t* values, std::size_t n, Code* out) {
    static_assert(std::is_integral_v<Code> && sizeof(Code) >= 4, "codes are at least 32-bit integers");
    codes_.ensure_table([](std::uint32_t) { return std::uint32_t{0}; });
    // Row i + kAhead's hash is computed and its slot prefetched while row i is probed, so a
    // window of misses is always in flight.
    constexpr std::size_t kAhead = 16;
    std::uint64_t h[kAhead];
    for (std::size_t i = 0; i < std::min(kAhead, n); ++i) {
      h[i] = salted_int_hash(values[i], salt_);
      codes_.prefetch(h[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t hi = h[i % kAhead];
      if (i + kAhead < n) {
        h[i % kAhead] = salted_int_hash(values[i + kAhead], salt_);
        codes_.prefetch(h[i % kAhead]);
      }
      const std::int64_t v = values[i];
      out[i] = static_cast<Code>(
          codes_.find_or_insert(hi, 0, [](std::uint32_t) { return true; }, [&] { values_.push_back(v); }));
    }
  }

  const std::vector<std::int64_t>& values() const noexcept { return values_; }  // per code
  const std::vector<std::uint64_t>& hashes() const noexcept { return codes_.hashes(); }
  void release_table() noexcept { codes_.release_table(); }  // rebuilt by the next encode

 private:
  std::uint64_t salt_;
  ValueCodes codes_;
  std::vector<std::int64_t> values_;
};

// Codes of a byte-string column. The distinct values are kept (one copy each) to confirm hash
// matches; the caller records what else it needs of a new value (say, its first row) in on_new.
// A value's length is its slot's tag, and values of at most kWord bytes are not re-read: for a
// fixed length <= 8, salted_bytes_hash folds one zero-padded word into a length-dependent state by
// a bijection (mix64 of state ^ word), so equal lengths and equal hashes mean equal bytes.
class BytesCodes {
 public:
  static constexpr std::size_t kBlock = 32;
  static constexpr std::size_t kWord = 8;

  explicit BytesCodes(std::uint64_t salt) : salt_(salt) {
    ends_.reserve(1024);
    for (std::size_t len = 0; len < kSeeds; ++len)
      seed_[len] = mix64(salt ^ (static_cast<std::uint64_t>(len) * 0x9E3779B97F4A7C15ULL));
  }

  // salted_bytes_hash(s, salt), the same bits: the length's starting state is looked up, and a value of
  // at most kWord bytes with 8 bytes readable from its start (readable8) is read as one word and
  // masked to its length instead of being copied byte by byte.
  std::uint64_t hash(std::string_view s, bool readable8) const noexcept {
    const std::size_t len = s.size();
    if (len >= kSeeds) return salted_bytes_hash(s, salt_);
    std::uint64_t h = seed_[len];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (len <= kWord && readable8) {
      if (len == 0) return h;
      std::uint64_t w;
      std::memcpy(&w, s.data(), 8);
      if (len < 8) w &= (std::uint64_t{1} << (8 * len)) - 1;  // the value's bytes, zero-padded
      return mix64(h ^ w);
    }
#else
    (void)readable8;
#endif
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    std::size_t rest = len;
    while (rest >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      h = mix64(h ^ w);
      p += 8;
      rest -= 8;
    }
    if (rest > 0) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, rest);
      h = mix64(h ^ w);
    }
    return h;
  }

  // The codes of n values in Arrow's (large_)string layout (value i: data[offsets[i], offsets[i + 1]),
  // offsets checked against [0, data_size] and for order as each value is reached), in order. One
  // pass, software-pipelined: a value's hash is computed and its home slot prefetched kSlotAhead values
  // before it is coded; for values longer than kWord, the code its hash names (a guess) and that
  // value's end are prefetched kGuessAhead values before, its bytes kBytesAhead before. The exact
  // lookups alone decide the codes (as encode_block).
  template <class Offset, class Code>
  void encode_arrow(const Offset* offsets, const char* data, std::size_t data_size, std::size_t n, Code* out) {
    static_assert(std::is_integral_v<Offset>, "offsets are integers");
    constexpr std::size_t kRing = 32, kSlotAhead = 24, kGuessAhead = 12, kBytesAhead = 6;
    struct Pending {
      std::uint64_t h;
      const char* p;
      std::size_t len;
      std::uint32_t guess;
    };
    Pending ring[kRing];
    ensure_table();
    auto hash_ahead = [&](std::size_t i) {
      const Offset begin = offsets[i], end = offsets[i + 1];
      bool bad = end < begin || static_cast<std::uint64_t>(end) > data_size;
      if constexpr (std::is_signed_v<Offset>) bad = bad || begin < 0;
      if (bad) throw ParameterError("string offsets must be non-decreasing and within the data buffer");
      const auto b = static_cast<std::size_t>(begin);
      const std::string_view v(data + b, static_cast<std::size_t>(end - begin));
      Pending& e = ring[i % kRing];
      e = Pending{hash(v, data_size - b >= 8), v.data(), v.size(), ValueCodes::kNone};
      codes_.prefetch(e.h);
    };
    auto guess_ahead = [&](std::size_t i) {
      Pending& e = ring[i % kRing];
      if (e.len <= kWord) return;
      e.guess = codes_.peek(e.h);
      if (e.guess != ValueCodes::kNone) detail::prefetch(&ends_[e.guess]);
    };
    auto bytes_ahead = [&](std::size_t i) {
      const Pending& e = ring[i % kRing];
      if (e.guess != ValueCodes::kNone) detail::prefetch(bytes_.data() + begin_of(e.guess));
    };
    for (std::size_t i = 0; i < std::min(kSlotAhead, n); ++i) hash_ahead(i);
    for (std::size_t i = 0; i < std::min(kGuessAhead, n); ++i) guess_ahead(i);
    for (std::size_t i = 0; i < std::min(kBytesAhead, n); ++i) bytes_ahead(i);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kSlotAhead < n) hash_ahead(i + kSlotAhead);
      if (i + kGuessAhead < n) guess_ahead(i + kGuessAhead);
      if (i + kBytesAhead < n) bytes_ahead(i + kBytesAhead);
      const Pending& e = ring[i % kRing];
      out[i] = static_cast<Code>(code_hashed(std::string_view(e.p, e.len), e.h, [] {}));
    }
  }

  template <class OnNew>
  std::uint32_t code(std::string_view s, OnNew&& on_new) {
    ensure_table();
    return code_hashed(s, salted_bytes_hash(s, salt_), on_new);
  }
  std::uint32_t code(std::string_view s) {
    return code(s, [] {});
  }

  // The codes of count <= kBlock values, in order (the views need to stay valid during the call
  // only); on_new(j) runs when the j-th value is new. Three prefetch rounds (the home slots, the
  // ends of the values they name, those values' bytes) overlap the block's cache misses before
  // the exact lookups, which alone decide the codes.
  template <class Code, class OnNew>
  void encode_block(const std::string_view* values, std::size_t count, Code* out, OnNew&& on_new) {
    std::uint64_t h[kBlock];
    std::uint32_t guess[kBlock];
    count = std::min(count, kBlock);
    ensure_table();
    for (std::size_t j = 0; j < count; ++j) {
      h[j] = hash(values[j], false);
      codes_.prefetch(h[j]);
    }
    for (std::size_t j = 0; j < count; ++j) {
      guess[j] = values[j].size() <= kWord ? ValueCodes::kNone : codes_.peek(h[j]);
      if (guess[j] != ValueCodes::kNone) detail::prefetch(&ends_[guess[j]]);
    }
    for (std::size_t j = 0; j < count; ++j)
      if (guess[j] != ValueCodes::kNone) detail::prefetch(bytes_.data() + begin_of(guess[j]));
    for (std::size_t j = 0; j < count; ++j)
      out[j] = static_cast<Code>(code_hashed(values[j], h[j], [&] { on_new(j); }));
  }

  std::string_view value(std::uint32_t c) const noexcept {
    const std::size_t begin = begin_of(c);
    return std::string_view(bytes_.data() + begin, ends_[c] - begin);
  }
  std::size_t size() const noexcept { return codes_.size(); }
  const std::vector<std::uint64_t>& hashes() const noexcept { return codes_.hashes(); }
  void release_table() noexcept { codes_.release_table(); }  // rebuilt by the next lookup

 private:
  std::size_t begin_of(std::uint32_t c) const noexcept { return c == 0 ? 0 : ends_[c - 1]; }
  void ensure_table() {
    codes_.ensure_table([this](std::uint32_t c) { return tag_of(ends_[c] - begin_of(c)); });
  }
  static std::uint32_t tag_of(std::size_t len) noexcept {
    return static_cast<std::uint32_t>(std::min<std::size_t>(len, std::numeric_limits<std::uint32_t>::max()));
  }

  template <class OnNew>
  std::uint32_t code_hashed(std::string_view s, std::uint64_t h, OnNew&& on_new) {
    const std::uint32_t tag = tag_of(s.size());
    return codes_.find_or_insert(
        h, tag, [&](std::uint32_t c) { return s.size() <= kWord || value(c) == s; },
        [&] {
          on_new();
          bytes_.append(s.data(), s.size());
          ends_.push_back(bytes_.size());
        });
  }

  static constexpr std::size_t kSeeds = 64;  // lengths whose starting state is kept

  std::uint64_t salt_;
  std::uint64_t seed_[kSeeds];  // salted_bytes_hash's state before the first word, by length
  ValueCodes codes_;
  std::string bytes_;
  std::vector<std::size_t> ends_;
};

namespace detail {

// Rows ahead of use whose random reads are prefetched: the passes below touch tables of up to
// tens of MB at random, and issuing the misses early lets them overlap.
inline constexpr std::size_t kAhead = 32;

// bound_counts with Offset (32 or 64 bits, holding n) for the per-unit row offsets.
// UnitCodes, KeyCodes: pointers to integer codes, or anything else whose [i] gives row i's code.
template <class Offset, class UnitCodes, class KeyCodes>
bool bound_counts_impl(UnitCodes unit_code, KeyCodes key_code, std::size_t n,
                       const std::uint64_t* unit_hash, std::size_t n_units, const std::uint64_t* key_hash,
                       std::size_t n_keys, std::uint64_t m, std::uint64_t c, const std::uint64_t* key_rank,
                       std::int64_t* counts) {
  // Counting sort of the rows by unit: end[u + 1] counts unit u's rows, then end[u] holds where
  // they start, and after the scatter where they end (unit u spans [end[u-1], end[u])).
  detail::ZeroedArray<Offset> end(n_units + 1);
  for (std::size_t i = 0; i < n; ++i) {
    // a negative code converts to a word >= 2^63, which fails the same test
    const auto u = static_cast<std::uint64_t>(unit_code[i]);
    const auto k = static_cast<std::uint64_t>(key_code[i]);
    if (u >= n_units || k >= n_keys) throw ParameterError("a unit or key code is outside [0, number of distinct values)");
    if (i + kAhead < n) {
      const auto ahead = static_cast<std::uint64_t>(unit_code[i + kAhead]);
      if (ahead < n_units) prefetch(&end[ahead + 1]);
    }
    ++end[u + 1];
  }
  std::size_t largest = 0;
  for (std::size_t u = 1; u <= n_units; ++u) {
    largest = std::max<std::size_t>(largest, end[u]);
    end[u] += end[u - 1];
  }
  detail::ZeroedArray<std::uint32_t> grouped(n, /*zero=*/false);  // every element is written below
  for (std::size_t i = 0; i < n; ++i) {
    // two stages: a unit's offset 2·kAhead rows ahead, then where its row will go kAhead ahead
    if (i + 2 * kAhead < n) prefetch(&end[static_cast<std::size_t>(unit_code[i + 2 * kAhead])]);
    if (i + kAhead < n) prefetch(&grouped[end[static_cast<std::size_t>(unit_code[i + kAhead])]]);
    grouped[end[static_cast<std::size_t>(unit_code[i])]++] = static_cast<std::uint32_t>(key_code[i]);
  }

  struct Row {
    std::uint64_t h, tie;  // sort key: (h, tie, key)
    std::uint32_t key;
    bool operator<(const Row& o) const noexcept {
      return h != o.h ? h < o.h : (tie != o.tie ? tie < o.tie : key < o.key);
    }
  };
  std::vector<Row> rows(largest);
  bool tie_by_code = false;
  std::size_t begin = 0;
  std::size_t ahead = 0;  // rows whose key hash and count are prefetched
  for (std::size_t u = 0; u < n_units; ++u) {
    const std::size_t stop = end[u];
    const std::size_t r = stop - begin;
    for (const std::size_t want = std::min(n, stop + kAhead); ahead < want; ++ahead) {
      prefetch(&key_hash[grouped[ahead]]);
      prefetch(&counts[grouped[ahead]]);
    }
    if (r == 1) {  // one row: one key, one row (m, c >= 1)
      counts[grouped[begin]] += 1;
    } else if (r > 1) {
      const std::uint64_t hu = unit_hash[u];
      for (std::size_t j = 0; j < r; ++j) {
        const std::uint32_t k = grouped[begin + j];
        rows[j] = Row{pair_hash(hu, key_hash[k]), key_rank ? key_rank[k] : k, k};
      }
      if (r <= 16) {
        for (std::size_t j = 1; j < r; ++j) {
          const Row x = rows[j];
          std::size_t i = j;
          for (; i > 0 && x < rows[i - 1]; --i) rows[i] = rows[i - 1];
          rows[i] = x;
        }
      } else {
        std::sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(r));
      }
      // Equal keys are adjacent (equal h and tie); take the first m keys, <= c rows each.
      std::uint64_t kept = 0;
      std::size_t j = 0;
      while (j < r && kept < m) {
        std::size_t next = j + 1;
        while (next < r && rows[next].key == rows[j].key) ++next;
        counts[rows[j].key] += static_cast<std::int64_t>(std::min<std::uint64_t>(next - j, c));
        ++kept;
        if (kept == m && next < r && rows[next].h == rows[j].h && !key_rank) tie_by_code = true;
        j = next;
      }
    }
    begin = stop;
  }
  return tie_by_code;
}

}  // namespace detail

// The bounded count of every key code. Rows are (unit_code[i], key_code[i]), codes in
// [0, n_units) and [0, n_keys); unit_hash and key_hash are the codes' salted value hashes;
// key_rank, when given, is each key code's rank in value order (ties of h are broken by it); when
// null the key code breaks them. Writes counts[0, n_keys). Returns true iff a tie was broken by
// code where it decided which keys a unit kept (only possible without key_rank): the caller must
// then rerun with key_rank. Throws ParameterError for m or c < 1 and for a code out of range.
namespace detail {

// bound_counts over codes read as unit_code[i], key_code[i] (pointers, or a chunked column's codes).
template <class UnitCodes, class KeyCodes>
bool bound_counts_indexed(UnitCodes unit_code, KeyCodes key_code, std::size_t n, const std::uint64_t* unit_hash,
                          std::size_t n_units, const std::uint64_t* key_hash, std::size_t n_keys, std::uint64_t m,
                          std::uint64_t c, const std::uint64_t* key_rank, std::int64_t* counts) {
  if (m < 1 || c < 1) throw ParameterError("max_keys_per_unit and max_rows_per_key must be >= 1");
  if (n_keys > ValueCodes::kMaxDistinct) throw ParameterError("more than 2^32 - 2 distinct keys");
  std::fill(counts, counts + n_keys, std::int64_t{0});
  if (n <= std::numeric_limits<std::uint32_t>::max())
    return bound_counts_impl<std::uint32_t>(unit_code, key_code, n, unit_hash, n_units, key_hash, n_keys, m, c,
                                            key_rank, counts);
  return bound_counts_impl<std::size_t>(unit_code, key_code, n, unit_hash, n_units, key_hash, n_keys, m, c, key_rank,
                                        counts);
}

}  // namespace detail

template <class UnitCode, class KeyCode>
bool bound_counts(const UnitCode* unit_code, const KeyCode* key_code, std::size_t n, const std::uint64_t* unit_hash,
                  std::size_t n_units, const std::uint64_t* key_hash, std::size_t n_keys, std::uint64_t m,
                  std::uint64_t c, const std::uint64_t* key_rank, std::int64_t* counts) {
  static_assert(std::is_integral_v<UnitCode> && std::is_integral_v<KeyCode>, "codes are integers");
  return detail::bound_counts_indexed(unit_code, key_code, n, unit_hash, n_units, key_hash, n_keys, m, c, key_rank,
                                      counts);
}

}  // namespace dpsketch::privacy_unit
