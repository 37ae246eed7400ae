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
#include <memory>
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

  // Codes are kept in chunks of kChunk rows, allocated as rows arrive: no copy when the column
  // grows and no spare capacity beyond the last chunk.
  static constexpr std::size_t kChunkBits = 18, kChunk = std::size_t{1} << kChunkBits;

  explicit ColumnCodes(std::uint64_t salt) : salt_(salt) {}

  void add_ints(const std::int64_t* values, std::size_t n) {
    begin_batch(Kind::ints, n);
    if (!ints_) ints_.emplace(salt_);
    for_each_segment(n, [&](std::size_t first, std::size_t count, std::uint32_t* out) {
      ints_->encode(values + first, count, out);
    });
    finish_batch(n);
  }

  // Byte strings in Arrow's (large_)string layout: value i is data[offsets[i], offsets[i + 1]), for
  // i < n (offsets holds n + 1 entries; a sliced array's offsets start past 0). Offsets outside
  // [0, data_size] or decreasing are refused.
  template <class Offset>
  void add_strings(const Offset* offsets, const char* data, std::size_t data_size, std::size_t n) {
    static_assert(std::is_integral_v<Offset>, "offsets are integers");
    begin_batch(Kind::bytes, n);
    if (!bytes_) bytes_.emplace(salt_);
    for_each_segment(n, [&](std::size_t first, std::size_t count, std::uint32_t* out) {
      bytes_->encode_arrow(offsets + first, data, data_size, count, out);
    });
    finish_batch(n);
  }

  Kind kind() const noexcept { return kind_; }
  // A batch threw part-way: the codes are no longer those of the batches added.
  bool failed() const noexcept { return failed_; }
  std::size_t rows() const noexcept { return rows_; }
  std::size_t distinct() const noexcept { return ints_ ? ints_->values().size() : bytes_ ? bytes_->size() : 0; }
  // Row i's code (i < rows()).
  std::uint32_t code(std::size_t i) const noexcept { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  // Every row's code, in a new vector.
  std::vector<std::uint32_t> codes() const {
    std::vector<std::uint32_t> out(rows_);
    for (std::size_t i = 0; i < rows_; ++i) out[i] = code(i);
    return out;
  }
  const std::vector<std::uint64_t>& hashes() const noexcept {
    static const std::vector<std::uint64_t> none;
    return ints_ ? ints_->hashes() : bytes_ ? bytes_->hashes() : none;
  }
  // The value of code c (c < distinct(); the column's kind decides which one applies).
  std::int64_t int_value(std::uint32_t c) const { return ints_->values()[c]; }
  std::string_view bytes_value(std::uint32_t c) const { return bytes_->value(c); }

  // Frees the lookup table of the distinct values (about 32 bytes per distinct value); the next batch
  // rebuilds it from the values' hashes. Codes, hashes and values stay.
  void release_table() noexcept {
    if (ints_) ints_->release_table();
    if (bytes_) bytes_->release_table();
  }

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
    while (chunks_.size() * kChunk < rows_ + n) chunks_.emplace_back(new std::uint32_t[kChunk]);
  }
  void finish_batch(std::size_t n) noexcept {
    rows_ += n;
    failed_ = false;
  }
  // f(first, count, out) over the batch's rows [first, first + count) that share a chunk, in order;
  // out: where row first's code goes.
  template <class F>
  void for_each_segment(std::size_t n, F&& f) {
    for (std::size_t first = 0; first < n;) {
      const std::size_t at = rows_ + first;
      const std::size_t count = std::min(n - first, kChunk - (at & (kChunk - 1)));
      f(first, count, chunks_[at >> kChunkBits].get() + (at & (kChunk - 1)));
      first += count;
    }
  }

  std::uint64_t salt_;
  Kind kind_ = Kind::unset;
  bool failed_ = false;
  std::optional<IntCodes> ints_;
  std::optional<BytesCodes> bytes_;
  std::vector<std::unique_ptr<std::uint32_t[]>> chunks_;  // the rows' codes, kChunk a chunk
  std::size_t rows_ = 0;
};

// bound_counts (bound_contributions.hpp) over the rows of two columns coded batch by batch: row i
// is (units.codes()[i], keys.codes()[i]). Writes counts[0, keys.distinct()).
inline bool bound_counts(const ColumnCodes& units, const ColumnCodes& keys, std::uint64_t m, std::uint64_t c,
                         const std::uint64_t* key_rank, std::int64_t* counts) {
  if (units.failed() || keys.failed()) throw ParameterError("a batch failed part-way; code the columns again");
  if (units.rows() != keys.rows()) throw ParameterError("the unit and key columns hold different numbers of rows");
  struct Codes {  // a column's codes as bound_counts reads them: codes[i]
    const ColumnCodes& col;
    std::uint32_t operator[](std::size_t i) const noexcept { return col.code(i); }
  };
  return detail::bound_counts_indexed(Codes{units}, Codes{keys}, keys.rows(), units.hashes().data(), units.distinct(),
                      keys.hashes().data(), keys.distinct(), m, c, key_rank, counts);
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
