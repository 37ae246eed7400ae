// What a summary needs to know about its key type: how to hash it for the slot table, how to
// fingerprint it for the linear sketches, how to (de)serialize it, and its heap footprint.
// Keys are 64-bit signed integers or byte strings (UTF-8 from Python).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dpsketch/common/hash.hpp"
#include "dpsketch/common/serialization.hpp"

namespace dpsketch {

template <class Key>
struct KeyTraits;

template <>
struct KeyTraits<std::int64_t> {
  using view_type = std::int64_t;
  static constexpr std::uint8_t tag = 1;
  static constexpr const char* name = "int";
  // Slot-table hash: one multiply by an odd constant (a bijection) folded so the low bits, which
  // pick the home position, depend on all input bits. Tables only need spread, not independence.
  static std::uint64_t table_hash(std::int64_t k) noexcept {
    const std::uint64_t h = static_cast<std::uint64_t>(k) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 32);
  }
  // Linear sketches hash the integer itself (the row families are strongly universal on 64 bits).
  static std::uint64_t fingerprint(std::int64_t k, std::uint64_t /*poly_seed*/) noexcept {
    return static_cast<std::uint64_t>(k);
  }
  static bool equal(std::int64_t a, std::int64_t b) noexcept { return a == b; }
  static void assign(std::int64_t& slot, std::int64_t k) noexcept { slot = k; }
  static void write(ByteWriter& w, std::int64_t k) { w.i64(k); }
  static std::size_t serialized_bytes(std::int64_t) noexcept { return 8; }
  static std::int64_t read(ByteReader& r) { return r.i64(); }
  static constexpr std::size_t min_serialized_bytes = 8;
  static std::size_t heap_bytes(std::int64_t) noexcept { return 0; }
};
static_assert(KeyTraits<std::int64_t>::tag == kInt64KeyTag, "untyped bytes use the int64 layout");

template <>
struct KeyTraits<std::string> {
  using view_type = std::string_view;
  static constexpr std::uint8_t tag = 2;
  static constexpr const char* name = "str";
  template <class U>
  static U load(const char* p) noexcept {
    U u;
    std::memcpy(&u, p, sizeof u);
    return u;
  }
  // The m < 8 bytes at p as a little-endian word, zero-padded; loads stay inside the m bytes.
  static std::uint64_t padded_word(const char* p, std::size_t m) noexcept {
    if (m >= 4) return load<std::uint32_t>(p) | (std::uint64_t{load<std::uint32_t>(p + m - 4)} >> (8 * (8 - m)) << 32);
    if (m == 0) return 0;
    // bytes 0, m/2, m-1 are bytes 0, 1, 2 for m = 3, and hold bytes 0..m-1 in their low m for m < 3
    const std::uint64_t w = std::uint64_t{static_cast<unsigned char>(p[0])} |
                            std::uint64_t{static_cast<unsigned char>(p[m / 2])} << 8 |
                            std::uint64_t{static_cast<unsigned char>(p[m - 1])} << 16;
    return w & low_bytes(m);
  }
  // The mask of the low m <= 8 bytes of a word.
  static std::uint64_t low_bytes(std::size_t m) noexcept {
    return m >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * m)) - 1;
  }
  static std::uint64_t short_hash(std::uint64_t lo, std::uint64_t hi, std::size_t n) noexcept {
    std::uint64_t h = (kTableSeed ^ (n * 0x9e3779b97f4a7c15ULL) ^ lo) * 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
    h = (h ^ hi) * 0xc4ceb9fe1a85ec53ULL;
    return fmix64(h);
  }
  // Fixed table seed: the table only needs spread, not secrecy.
  static constexpr std::uint64_t kTableSeed = 0x1d8e4e27c47d124fULL % (kMersenne61 - 1) + 1;
  // Slot-table hash: tables need spread, not the provable collision bound of the seeded
  // fingerprint below, so a cheap mix is enough. A key of up to 16 bytes (most words and tokens)
  // is two little-endian words, zero-padded, mixed with its length: the text reader's split
  // computes exactly that from a 16-byte load (table_hash_padded), with no branch on the length.
  // Longer keys: 8 bytes per multiply, then a full avalanche.
  static std::uint64_t table_hash(std::string_view k) noexcept {
    const char* p = k.data();
    std::size_t n = k.size();
    if (n <= 16) {
      if (n < 8) return short_hash(padded_word(p, n), 0, n);
      // bytes 8..n-1 are the high ones of the last 8 bytes
      return short_hash(load<std::uint64_t>(p), n > 8 ? load<std::uint64_t>(p + n - 8) >> (8 * (16 - n)) : 0, n);
    }
    std::uint64_t h = kTableSeed ^ (n * 0x9e3779b97f4a7c15ULL);
    for (; n >= 8; n -= 8, p += 8) {
      h = (h ^ load<std::uint64_t>(p)) * 0xff51afd7ed558ccdULL;
      h ^= h >> 29;
    }
    if (n > 0) h = (h ^ padded_word(p, n)) * 0xc4ceb9fe1a85ec53ULL;
    return fmix64(h);
  }
  // table_hash of the n <= 16 bytes at p, when 16 bytes may be read at p (what follows the key is
  // masked off).
  static std::uint64_t table_hash_padded(const char* p, std::size_t n) noexcept {
    const std::uint64_t lo = load<std::uint64_t>(p) & low_bytes(n);
    const std::uint64_t hi = load<std::uint64_t>(p + 8) & low_bytes(n > 8 ? n - 8 : 0);
    return short_hash(lo, hi, n);
  }
  // Seeded fingerprint; collision bound in common/hash.hpp (docs/algorithms.md §4).
  static std::uint64_t fingerprint(std::string_view k, std::uint64_t poly_seed) noexcept {
    return poly61(k, poly_seed);
  }
  // Keys of up to 16 bytes (most words and tokens) are compared by two overlapping loads on each
  // side instead of a call to memcmp.
  static bool equal(const std::string& a, std::string_view b) noexcept {
    const std::size_t n = b.size();
    if (a.size() != n) return false;
    const char* p = a.data();
    const char* q = b.data();
    if (n > 16) return std::memcmp(p, q, n) == 0;
    if (n >= 8) return (load<std::uint64_t>(p) ^ load<std::uint64_t>(q)) == 0 &&
                       (load<std::uint64_t>(p + n - 8) ^ load<std::uint64_t>(q + n - 8)) == 0;
    if (n >= 4) return load<std::uint32_t>(p) == load<std::uint32_t>(q) &&
                       load<std::uint32_t>(p + n - 4) == load<std::uint32_t>(q + n - 4);
    return n == 0 || (p[0] == q[0] && p[n / 2] == q[n / 2] && p[n - 1] == q[n - 1]);
  }
  static void assign(std::string& slot, std::string_view k) { slot.assign(k.data(), k.size()); }
  static void write(ByteWriter& w, const std::string& k) { w.bytes(k); }
  static std::size_t serialized_bytes(const std::string& k) noexcept { return 4 + k.size(); }
  static std::string read(ByteReader& r) { return std::string(r.bytes()); }
  static constexpr std::size_t min_serialized_bytes = 4;
  static std::size_t heap_bytes(const std::string& s) noexcept {
    // libstdc++ keeps up to 15 bytes inline (SSO).
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
  }
};

}  // namespace dpsketch
