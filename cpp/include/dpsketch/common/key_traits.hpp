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
  // Fixed table seed: the table only needs spread, not secrecy.
  static constexpr std::uint64_t kTableSeed = 0x1d8e4e27c47d124fULL % (kMersenne61 - 1) + 1;
  // Slot-table hash: 8 bytes per multiply, then a full avalanche. Tables need spread, not the
  // provable collision bound of the seeded fingerprint below, so the cheaper mix is enough.
  static std::uint64_t table_hash(std::string_view k) noexcept {
    const char* p = k.data();
    std::size_t n = k.size();
    std::uint64_t h = kTableSeed ^ (n * 0x9e3779b97f4a7c15ULL);
    for (; n >= 8; n -= 8, p += 8) {
      std::uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 0xff51afd7ed558ccdULL;
      h ^= h >> 29;
    }
    if (n > 0) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, n);
      h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    }
    return fmix64(h);
  }
  // Seeded fingerprint; collision bound in common/hash.hpp (docs/algorithms.md §4).
  static std::uint64_t fingerprint(std::string_view k, std::uint64_t poly_seed) noexcept {
    return poly61(k, poly_seed);
  }
  static bool equal(const std::string& a, std::string_view b) noexcept { return std::string_view(a) == b; }
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
