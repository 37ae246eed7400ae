// The key and unit columns of contribution bounding coded batch by batch (docs/privacy.md §Privacy
// unit): each batch of rows is dictionary-coded as it arrives (column_codes.hpp) and only the
// codes and the code tables are kept. Batches are plain views (an int64 column, or an Arrow
// (large_)string layout), so the caller may code them without holding any interpreter lock; the
// Python class dpsketch._core.privacy_unit.PairCoder (bindings/bind_privacy_unit.cpp) wraps this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/privacy_unit/column_codes.hpp"

namespace dpsketch::privacy_unit {

// One batch of a column: n int64 values, or n byte strings in Arrow's (large_)string layout
// (offsets32 or offsets64 holds n + 1 entries into data[0, data_size)).
struct ColumnBatch {
  ColumnCodes::Kind kind = ColumnCodes::Kind::unset;
  std::size_t n = 0;
  const std::int64_t* ints = nullptr;
  const std::int32_t* offsets32 = nullptr;
  const std::int64_t* offsets64 = nullptr;
  const char* data = nullptr;
  std::size_t data_size = 0;
};

// Codes one batch into its column (the kind was checked by check_kind).
inline void code_batch(ColumnCodes& col, const ColumnBatch& b) {
  if (b.kind == ColumnCodes::Kind::ints)
    col.add_ints(b.ints, b.n);
  else if (b.offsets32)
    col.add_strings(b.offsets32, b.data, b.data_size, b.n);
  else
    col.add_strings(b.offsets64, b.data, b.data_size, b.n);
}

class PairCoder {
 public:
  PairCoder(std::uint64_t key_salt, std::uint64_t unit_salt) : keys_(key_salt), units_(unit_salt) {}

  // Codes one batch of rows: keys[i] and ids[i] are row i.
  void add(const ColumnBatch& keys, const ColumnBatch& ids) {
    if (keys.n != ids.n) throw ParameterError("keys and privacy_id must have the same length (one privacy id per row)");
    check_kind(keys_, keys);
    check_kind(units_, ids);
    code_batch(keys_, keys);
    code_batch(units_, ids);
  }

  // One column's half of add: the two columns may be coded in two threads at once (one thread per
  // column), each column's batches in row order; bound() checks that they hold the same rows.
  void add_keys(const ColumnBatch& keys) { add_one(keys_, keys); }
  void add_ids(const ColumnBatch& ids) { add_one(units_, ids); }

  // Checks the arguments of bound() (key_rank: one rank per key code, or none).
  void check_rank(bool has_rank, std::size_t rank_size) const {
    if (has_rank && rank_size != keys_.distinct()) throw ParameterError("key_rank must give one rank per key code");
  }

  // Writes the bounded count of each key code to out[0, distinct_keys()); returns whether a tie of
  // the pair hash was broken by key code (bound_counts in column_codes.hpp).
  // The lookup tables are not needed to bound (a later batch rebuilds them): they are freed first,
  // so that bounding's arrays take their place.
  bool bound(std::uint64_t m, std::uint64_t c, const std::uint64_t* key_rank, std::int64_t* out) {
    keys_.release_table();
    units_.release_table();
    return bound_counts(units_, keys_, m, c, key_rank, out);
  }

  // The codes of the keys with a positive count (counts as bound() writes them), in value order.
  std::vector<std::uint32_t> positive_codes(const std::int64_t* counts, std::size_t n) const {
    if (n != keys_.distinct()) throw ParameterError("counts must give one count per key code");
    return positive_codes_in_value_order(keys_, counts);
  }

  // Throws unless every code is one of a key.
  void check_codes(const std::int64_t* codes, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i)
      if (codes[i] < 0 || static_cast<std::size_t>(codes[i]) >= keys_.distinct())
        throw ParameterError("a key code is out of range");
  }

  // The code points of the str keys of codes (checked): every value's code points appended to
  // points, ends[i] the end of value i's; false as soon as a value is not valid UTF-8.
  bool key_code_points(const std::int64_t* codes, std::size_t n, std::vector<std::uint32_t>& points,
                       std::vector<std::size_t>& ends) const {
    ends.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!append_code_points(keys_.bytes_value(static_cast<std::uint32_t>(codes[i])), points)) return false;
      ends[i] = points.size();
    }
    return true;
  }

  // Appends the code points of UTF-8 bytes; false (nothing to trust) on an invalid sequence:
  // a bad lead or continuation byte, an overlong form, a surrogate or a point above U+10FFFF.
  static bool append_code_points(std::string_view s, std::vector<std::uint32_t>& out) {
    const auto* b = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    for (std::size_t i = 0; i < n;) {
      const unsigned lead = b[i];
      if (lead < 0x80) {
        out.push_back(lead);
        ++i;
        continue;
      }
      const std::size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
      if (len == 0 || lead > 0xF4 || i + len > n) return false;
      std::uint32_t cp = lead & (0x7Fu >> len);
      for (std::size_t j = 1; j < len; ++j) {
        if ((b[i + j] & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (b[i + j] & 0x3Fu);
      }
      static constexpr std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
      out.push_back(cp);
      i += len;
    }
    return true;
  }

  // A column's batches must all be of one kind.
  static void check_kind(const ColumnCodes& col, const ColumnBatch& b) {
    if (col.kind() != ColumnCodes::Kind::unset && col.kind() != b.kind)
      throw ParameterError("a column's batches must all hold ints or all hold strs");
  }

  const ColumnCodes& keys() const noexcept { return keys_; }
  const ColumnCodes& units() const noexcept { return units_; }
  ColumnCodes::Kind key_kind() const noexcept { return keys_.kind(); }
  std::size_t rows() const noexcept { return keys_.rows(); }
  std::size_t distinct_keys() const noexcept { return keys_.distinct(); }

 private:
  static void add_one(ColumnCodes& col, const ColumnBatch& b) {
    check_kind(col, b);
    code_batch(col, b);
  }

  ColumnCodes keys_, units_;
};

}  // namespace dpsketch::privacy_unit
