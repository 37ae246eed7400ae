// Little-endian byte writer/reader with bounds checks, and the common header of every serialized
// dpsketch object:  "DPSK" | version u8 | family u8 | key type u8 | flags u8  (docs/format.md).
// Flags byte (0 in old bytes, which keep loading): bit 0 = merged counter summary (kFlagMerged);
// bit 1 = a release-state trailer closes the bytes; bit 2 = published private sketch; bit 3 =
// seeded (reproducible, not secret) noise; a reader rejects any bit it does not know. Key type 0
// marks an empty summary whose key type is not fixed yet (int64 layout). WireState carries the
// release state and the untyped mark through every family's serialize()/deserialize().
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
inline constexpr std::uint8_t kFlagMerged = 0x01;         // a Misra-Gries / SpaceSaving built by merge()
inline constexpr std::uint8_t kFlagReleaseTrailer = 0x02;  // a release-state trailer closes the bytes
inline constexpr std::uint8_t kFlagPublished = 0x04;       // a published (released) private sketch
inline constexpr std::uint8_t kFlagSeeded = 0x08;          // noise from a user seed: reproducible, not secret
inline constexpr std::uint8_t kReleaseStateFlags = kFlagReleaseTrailer | kFlagPublished | kFlagSeeded;
inline constexpr std::uint8_t kUntypedKeyTag = 0;  // an empty summary whose key type is not fixed yet
inline constexpr std::uint8_t kInt64KeyTag = 1;   // KeyTraits<std::int64_t>::tag (the untyped layout)
// Release-state trailer: release count u64, then its extension version u8.
inline constexpr std::uint8_t kReleaseTrailerVersion = 1;
inline constexpr std::size_t kReleaseTrailerBytes = 9;

// What every copy of an object carries about its releases (docs/privacy.md §Publishing and the
// release-once rule, §Seeds): how many times it was released (a published copy: its release index),
// whether it is a published read-only copy of a private sketch, whether its noise came from a user
// seed. Header bits 1-3 and the trailer.
struct ReleaseState {
  std::uint64_t count = 0;
  bool published = false;
  bool seeded = false;
  bool operator==(const ReleaseState& o) const noexcept {
    return count == o.count && published == o.published && seeded == o.seeded;
  }
  bool operator!=(const ReleaseState& o) const noexcept { return !(*this == o); }
};

// The fields of the common header that every family parses the same way.
struct HeaderInfo {
  std::uint8_t native_flags = 0;  // the family's own bits (kFlagMerged)
  ReleaseState release;
  bool untyped = false;  // key tag 0
};

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
  // Magic, format version and family: the first 6 bytes of every family's header.
  void magic_version_family(Family f) {
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
  }
  // Returns the flags byte; bits outside `known_flags` are rejected.
  std::uint8_t header(Family f, std::uint8_t key_tag, std::uint8_t known_flags = 0) {
    magic_version_family(f);
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
  // The common header of `f` with every flag bit and the release-state trailer: `native_flags` are
  // the family's own bits; published and seeded need a private family (`can_publish`); key tag 0
  // (untyped) is accepted only by the int64-key reader (`key_tag` 1) when `untyped_ok`. The trailer,
  // when bit 1 is set, is validated and removed from the end of the buffer, so the payload parser
  // and finish() never see it.
  HeaderInfo read_header(Family f, std::uint8_t key_tag, std::uint8_t native_flags, bool can_publish,
                         bool untyped_ok) {
    magic_version_family(f);
    HeaderInfo h;
    const std::uint8_t tag = u8();
    if (tag == kUntypedKeyTag && untyped_ok && key_tag == kInt64KeyTag) {
      h.untyped = true;
    } else if (tag != key_tag) {
      throw DeserializeError("bytes hold a different key type (tag " + std::to_string(tag) + ", expected " +
                             std::to_string(key_tag) +
                             (tag == kUntypedKeyTag && untyped_ok
                                  ? "; tag 0, an empty summary without a key type, is read with int64 keys)"
                                  : ")"));
    }
    const std::uint8_t flags = u8();
    const std::uint8_t unknown = static_cast<std::uint8_t>(flags & ~(native_flags | kReleaseStateFlags));
    if (unknown != 0) {
      static const char* hex = "0123456789abcdef";
      throw DeserializeError(std::string("unknown header flags 0x") + hex[unknown >> 4] + hex[unknown & 15] +
                             " in byte 7 (written by a newer dpsketch? upgrade to read them)");
    }
    h.native_flags = flags & native_flags;
    h.release.published = (flags & kFlagPublished) != 0;
    h.release.seeded = (flags & kFlagSeeded) != 0;
    if ((h.release.published || h.release.seeded) && !can_publish)
      throw DeserializeError(std::string("only private sketches can be marked ") +
                             (h.release.published ? "published" : "seeded"));
    if (flags & kFlagReleaseTrailer) {
      if (remaining() < kReleaseTrailerBytes) throw DeserializeError("truncated release-state trailer");
      const char* t = p_ + size_ - kReleaseTrailerBytes;
      std::memcpy(&h.release.count, t, 8);
      const auto trailer_version = static_cast<std::uint8_t>(t[8]);
      if (trailer_version != kReleaseTrailerVersion)
        throw DeserializeError("release-state extension version " + std::to_string(trailer_version) +
                               " (this build reads version " + std::to_string(kReleaseTrailerVersion) + ")");
      if (h.release.count == 0)
        throw DeserializeError("a release-state trailer must count >= 1 release");
      size_ -= kReleaseTrailerBytes;
    } else if (h.release.published) {
      throw DeserializeError("a published sketch must record its release index (release-state trailer)");
    }
    return h;
  }
  // The bytes before the release-state trailer (all of them if there is none).
  std::string_view region() const noexcept { return std::string_view(p_, size_); }
  // Drops the last `n` bytes of the region (a checksum the caller verified).
  void drop_tail(std::size_t n) {
    need(n, "checksum");
    size_ -= n;
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

// Release state and untyped mark of one object (header bits 1-3, trailer, key tag 0), shared by
// every family. CanPublish: a private sketch (the only objects that are published or seeded).
template <bool CanPublish>
class WireState {
 public:
  const ReleaseState& release_state() const noexcept { return release_; }
  std::uint64_t release_count() const noexcept { return release_.count; }
  bool published() const noexcept { return release_.published; }
  bool seeded() const noexcept { return release_.seeded; }
  // Checked like the bytes: published and seeded only on private sketches; published needs count >= 1.
  void set_release_state(const ReleaseState& s) {
    if ((s.published || s.seeded) && !CanPublish)
      throw ParameterError("only private sketches can be published or seeded");
    if (s.published && s.count == 0) throw ParameterError("a published sketch must record its release index (>= 1)");
    release_ = s;
  }
  // Untyped: read from key tag 0, or marked by the caller (the Python layer, before the key type is
  // fixed). Written as tag 0 only while the object is still empty (each family's test); after the
  // first update it is written with its own key type.
  bool untyped() const noexcept { return untyped_; }
  void set_untyped(bool u) noexcept { untyped_ = u; }

 protected:
  std::uint8_t wire_key_tag(std::uint8_t tag, bool empty) const noexcept {
    return untyped_ && empty && tag == kInt64KeyTag ? kUntypedKeyTag : tag;
  }
  std::uint8_t wire_flags(std::uint8_t native) const noexcept {
    return static_cast<std::uint8_t>(native | (release_.count ? kFlagReleaseTrailer : 0) |
                                     (release_.published ? kFlagPublished : 0) | (release_.seeded ? kFlagSeeded : 0));
  }
  void append_trailer(std::string& out) const {
    if (release_.count == 0) return;
    out.append(reinterpret_cast<const char*>(&release_.count), 8);
    out.push_back(static_cast<char>(kReleaseTrailerVersion));
  }
  std::size_t trailer_bytes() const noexcept { return release_.count ? kReleaseTrailerBytes : 0; }
  void restore_wire(const HeaderInfo& h) noexcept {
    release_ = h.release;
    untyped_ = h.untyped;
  }

  ReleaseState release_;
  bool untyped_ = false;
};

}  // namespace dpsketch
