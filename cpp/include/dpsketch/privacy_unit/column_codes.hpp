// Dictionary codes of a column read in batches (docs/privacy.md §Privacy unit): each batch is coded
// as it arrives and only its codes are kept, so a reader can produce the next batch meanwhile and
// no whole column of values is ever held.
//
// The codes and salted hashes equal those IntCodes / BytesCodes (bound_contributions.hpp) give the
// concatenation of the batches in the order added: codes in order of first appearance, one code
// per distinct value (hash matches confirmed on the values), hashes functions of the values alone.
// So bound_counts over two ColumnCodes equals bound_counts over the whole columns.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/privacy_unit/bound_contributions.hpp"

namespace dpsketch::privacy_unit {

class ColumnCodes {
 public:
  // The value type of the column, fixed by its first batch (an empty batch fixes it too).
  enum class Kind : std::uint8_t { unset, ints, bytes };

  explicit ColumnCodes(std::uint64_t salt) : salt_(salt) {}

  void add_ints(const std::int64_t* values, std::size_t n) {
    begin_batch(Kind::ints, n);
    if (!ints_) ints_.emplace(salt_);
    ints_->encode(values, n, codes_.data() + (codes_.size() - n));
    failed_ = false;
  }

  // Byte strings in Arrow's (large_)string layout: value i is data[offsets[i], offsets[i + 1]), for
  // i < n (offsets holds n + 1 entries; a sliced array's offsets start past 0). Offsets outside
  // [0, data_size] or decreasing are refused.
  template <class Offset>
  void add_strings(const Offset* offsets, const char* data, std::size_t data_size, std::size_t n) {
    static_assert(std::is_integral_v<Offset>, "offsets are integers");
    begin_batch(Kind::bytes, n);
    if (!bytes_) bytes_.emplace(salt_);
    std::uint32_t* out = codes_.data() + (codes_.size() - n);
    constexpr std::size_t kBlock = BytesCodes::kBlock;
    std::string_view views[kBlock];
    for (std::size_t first = 0; first < n; first += kBlock) {
      const std::size_t count = std::min(kBlock, n - first);
      for (std::size_t j = 0; j < count; ++j) {
        const Offset begin = offsets[first + j], end = offsets[first + j + 1];
        bool bad = end < begin || static_cast<std::uint64_t>(end) > data_size;
        if constexpr (std::is_signed_v<Offset>) bad = bad || begin < 0;
        if (bad)
          throw ParameterError("string offsets must be non-decreasing and within the data buffer");
        views[j] = std::string_view(data + begin, static_cast<std::size_t>(end - begin));
      }
      bytes_->encode_block(views, count, out + first, [](std::size_t) {});
    }
    failed_ = false;
  }

  Kind kind() const noexcept { return kind_; }
  // A batch threw part-way: the codes are no longer those of the batches added.
  bool failed() const noexcept { return failed_; }
  std::size_t rows() const noexcept { return codes_.size(); }
  std::size_t distinct() const noexcept { return ints_ ? ints_->values().size() : bytes_ ? bytes_->size() : 0; }
  const std::vector<std::uint32_t>& codes() const noexcept { return codes_; }
  const std::vector<std::uint64_t>& hashes() const noexcept {
    static const std::vector<std::uint64_t> none;
    return ints_ ? ints_->hashes() : bytes_ ? bytes_->hashes() : none;
  }
  // The value of code c (c < distinct(); the column's kind decides which one applies).
  std::int64_t int_value(std::uint32_t c) const { return ints_->values()[c]; }
  std::string_view bytes_value(std::uint32_t c) const { return bytes_->value(c); }

 private:
  // Makes room for n codes. A batch that threw part-way has coded some of its values and not
  // stored their rows: every later batch is refused, since the codes would no longer be those of
  // the batches added.
  void begin_batch(Kind kind, std::size_t n) {
    if (failed_) throw ParameterError("an earlier batch of this column failed; code the column again");
    if (kind_ != Kind::unset && kind_ != kind)
      throw ParameterError("a column's batches must all hold ints or all hold strs");
    kind_ = kind;
    failed_ = true;
    codes_.resize(codes_.size() + n);
  }

  std::uint64_t salt_;
  Kind kind_ = Kind::unset;
  bool failed_ = false;
  std::optional<IntCodes> ints_;
  std::optional<BytesCodes> bytes_;
  std::vector<std::uint32_t> codes_;  // one per row added
};

// bound_counts (bound_contributions.hpp) over the rows of two columns coded batch by batch: row i
// is (units.codes()[i], keys.codes()[i]). Writes counts[0, keys.distinct()).
inline bool bound_counts(const ColumnCodes& units, const ColumnCodes& keys, std::uint64_t m, std::uint64_t c,
                         const std::uint64_t* key_rank, std::int64_t* counts) {
  if (units.failed() || keys.failed()) throw ParameterError("a batch failed part-way; code the columns again");
  if (units.rows() != keys.rows()) throw ParameterError("the unit and key columns hold different numbers of rows");
  return bound_counts(units.codes().data(), keys.codes().data(), keys.rows(), units.hashes().data(),
                      units.distinct(), keys.hashes().data(), keys.distinct(), m, c, key_rank, counts);
}

// The codes c < col.distinct() with counts[c] > 0, in the order of their values: ints
// numerically, byte strings bytewise (for UTF-8, the order of the code points). This is the order
// in which bounded keys are published, so it is fixed by the values alone, not by the codes.
inline std::vector<std::uint32_t> positive_codes_in_value_order(const ColumnCodes& col, const std::int64_t* counts) {
  std::vector<std::uint32_t> out;
  if (col.kind() == ColumnCodes::Kind::ints) {
    for (std::size_t c = 0; c < col.distinct(); ++c)
      if (counts[c] > 0) out.push_back(static_cast<std::uint32_t>(c));
    std::sort(out.begin(), out.end(), [&col](std::uint32_t a, std::uint32_t b) { return col.int_value(a) < col.int_value(b); });
    return out;
  }
  // Strings sort on their first 8 bytes read big-endian (zero-padded), which orders them as the
  // bytes do; only equal prefixes of two values longer than 8 bytes read the values again.
  struct Entry {
    std::uint64_t prefix;
    std::uint32_t code;
    bool longer;  // more than 8 bytes
  };
  std::vector<Entry> entries;
  for (std::size_t c = 0; c < col.distinct(); ++c) {
    if (counts[c] <= 0) continue;
    const std::string_view v = col.bytes_value(static_cast<std::uint32_t>(c));
    std::uint64_t prefix = 0;
    for (std::size_t i = 0; i < 8; ++i)
      prefix = (prefix << 8) | (i < v.size() ? static_cast<unsigned char>(v[i]) : 0u);
    entries.push_back(Entry{prefix, static_cast<std::uint32_t>(c), v.size() > 8});
  }
  std::sort(entries.begin(), entries.end(), [&col](const Entry& a, const Entry& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    if (!a.longer && !b.longer)  // zero padding: a shorter value is a prefix of the longer one
      return col.bytes_value(a.code).size() < col.bytes_value(b.code).size();
    return col.bytes_value(a.code) < col.bytes_value(b.code);
  });
  out.reserve(entries.size());
  for (const Entry& e : entries) out.push_back(e.code);
  return out;
}

}  // namespace dpsketch::privacy_unit
