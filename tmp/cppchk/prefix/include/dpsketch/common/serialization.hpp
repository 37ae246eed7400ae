// Little-endian byte writer/reader with bounds checks, and the common header of every serialized
// dpsketch object:  "DPSK" | version u8 | family u8 | key type u8 | flags u8.
// Flags byte (0 in old bytes, which keep loading): bit 0 = merged counter summary (kFlagMerged);
// bits 1-3 are reserved for release state; a reader rejects any bit it does not know.
// The reader never reads past its buffer and throws DeserializeError on any inconsistency, so
// corrupt input becomes a Python ValueError, never a crash or an oversized allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dpsketch/common/errors.hpp"

namespace dpsketch {

enum class Family : std::uint8_t {
  misra_gries = 1,
  space_saving = 2,
  count_min = 3,
  count_sketch = 4,
};

inline constexpr std::uint8_t kFormatVersion = 1;
inline constexpr char kMagic[4] = {'D', 'P', 'S', 'K'};
inline constexpr std::size_t kHeaderBytes = 8;
inline constexpr std::uint8_t kFlagMerged = 1;  // a Misra-Gries / SpaceSaving built by merge()

class ByteWriter {
 public:
  void u8(std::uint8_t v) { buf_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void i64(std::int64_t v) { raw(&v, 8); }
  void bytes(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    buf_.append(s.data(), s.size());
  }
  void raw(const void* p, std::size_t n) {
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "dpsketch serializes little-endian");
    if (n != 0) buf_.append(static_cast<const char*>(p), n);  // p may be null when n == 0
  }
  void header(Family f, std::uint8_t key_tag, std::uint8_t flags = 0) {
    buf_.append(kMagic, 4);
    u8(kFormatVersion);
    u8(static_cast<std::uint8_t>(f));
    u8(key_tag);
    u8(flags);
  }
  std::string take() { return std::move(buf_); }
  void reserve(std::size_t n) { buf_.reserve(n); }

 private:
  std::string buf_;
};

class ByteReader {
 public:
  ByteReader(const char* data, std::size_t size) : p_(data), size_(size) {}
  explicit ByteReader(std::string_view s) : ByteReader(s.data(), s.size()) {}

  std::size_t remaining() const noexcept { return size_ - pos_; }

  std::uint8_t u8() { std::uint8_t v; raw(&v, 1, "u8"); return v; }
  std::uint32_t u32() { std::uint32_t v; raw(&v, 4, "u32"); return v; }
  std::uint64_t u64() { std::uint64_t v; raw(&v, 8, "u64"); return v; }
  std::int64_t i64() { std::int64_t v; raw(&v, 8, "i64"); return v; }
  std::string_view bytes() {
    const std::uint32_t n = u32();
    need(n, "string key");
    std::string_view s(p_ + pos_, n);
    pos_ += n;
    return s;
  }
  void raw(void* out, std::size_t n, const char* what) {
    need(n, what);
    if (n == 0) return;  // out may be null (an empty vector's data()): memcpy(nullptr, ., 0) is UB
    std::memcpy(out, p_ + pos_, n);
    pos_ += n;
  }
  // Checks that `count` records of at least `min_bytes` each can still be present before anything
  // of that size is allocated.
  void need_records(std::uint64_t count, std::size_t min_bytes, const char* what) const {
    if (min_bytes != 0 && count > remaining() / min_bytes)
      throw DeserializeError(std::string("too few bytes for the declared number of ") + what);
  }
  // Returns the flags byte; bits outside `known_flags` are rejected.
  std::uint8_t header(Family f, std::uint8_t key_tag, std::uint8_t known_flags = 0) {
    char magic[4];
    raw(magic, 4, "magic");
    if (std::memcmp(magic, kMagic, 4) != 0) throw DeserializeError("not dpsketch bytes (bad magic)");
    const std::uint8_t version = u8();
    if (version != kFormatVersion)
      throw DeserializeError("unsupported format version " + std::to_string(version) +
                             " (this build reads version " + std::to_string(kFormatVersion) + ")");
    const std::uint8_t fam = u8();
    if (fam != static_cast<std::uint8_t>(f))
      throw DeserializeError("bytes hold a different summary type (family " + std::to_string(fam) +
                             ", expected " + std::to_string(static_cast<int>(f)) + ")");
    const std::uint8_t tag = u8();
    if (tag != key_tag)
      throw DeserializeError("bytes hold a different key type (tag " + std::to_string(tag) +
                             ", expected " + std::to_string(key_tag) + ")");
    const std::uint8_t flags = u8();
    if (flags & ~known_flags)
      throw DeserializeError("unknown flag bits " + std::to_string(flags & ~known_flags) +
                             " in header byte 7 (written by a newer dpsketch?)");
    return flags;
  }
  void finish() const {
    if (pos_ != size_)
      throw DeserializeError(std::to_string(size_ - pos_) + " trailing bytes after the payload");
  }

 private:
  void need(std::size_t n, const char* what) const {
    if (n > size_ - pos_) throw DeserializeError(std::string("truncated while reading ") + what);
  }
  const char* p_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace dpsketch
