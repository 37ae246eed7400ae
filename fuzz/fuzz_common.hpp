// Shared pieces of the fuzz targets and the sanitized unit driver: every deserializer by family
// and key type, an input cursor, and a hard failure that a sanitizer run reports.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/release/counter_release.hpp"
#include "dpsketch/release/private_sketch.hpp"
#include "dpsketch/release/sketch_heavy_hitters.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace fuzz {

using dpsketch::SketchKind;
using I64 = std::int64_t;
using Str = std::string;

[[noreturn]] inline void fail(const char* what, int line) {
  std::fprintf(stderr, "dpsketch fuzz check failed (line %d): %s\n", line, what);
  std::abort();
}
#define FUZZ_CHECK(cond)                        \
  do {                                          \
    if (!(cond)) ::fuzz::fail(#cond, __LINE__); \
  } while (0)

// Reads little pieces of the fuzz input; past the end it yields zeros (the run then ends).
class Cursor {
 public:
  Cursor(const std::uint8_t* p, std::size_t n) : p_(p), n_(n) {}
  bool done() const { return i_ >= n_; }
  std::uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= std::uint32_t{u8()} << (8 * k);
    return v;
  }
  std::uint64_t u64() { return std::uint64_t{u32()} | (std::uint64_t{u32()} << 32); }
  std::string_view rest() {
    std::string_view s(reinterpret_cast<const char*>(p_ + i_), n_ - i_);
    i_ = n_;
    return s;
  }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
  std::size_t i_ = 0;
};

// A key from a small alphabet (so streams repeat keys), as int and as string.
inline I64 int_key(std::uint8_t b) { return static_cast<I64>(b % 24) - 3 + (b >= 240 ? (I64{1} << 62) : 0); }
inline Str str_key(std::uint8_t b) {
  static const char* const alphabet[] = {"", "a", "b", "ab", "\xc3\xa9", "a long key well beyond SSO size ....", "7", "x"};
  return std::string(alphabet[b % 8]) + std::to_string(b / 8 % 4);
}

// A key of either type from one input byte.
template <class Key>
Key key_of(std::uint8_t b) {
  if constexpr (std::is_same_v<Key, I64>) return int_key(b);
  else return str_key(b);
}

}  // namespace fuzz
