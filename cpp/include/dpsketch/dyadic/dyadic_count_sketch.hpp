// Dyadic CountSketch (docs/algorithms.md §6; Zhao et al. §4, after Wang et al. 2013): a hierarchy
// over [0, 2^L) whose level j counts the j-bit prefixes x >> (L - j). Levels 1..E are exact
// arrays, levels E+1..L are d x w CountSketches (dyadic_shape.hpp, prefix_hash.hpp). Cells are
// signed net counts (turnstile: update(x, c) with any int64 c), n is the net count.
//
// Queries read at most L nodes (rank), or descend from the root (quantile: 2 children per level;
// heavy hitters: the children of every kept node). A CountSketch node's estimate is the median of
// its d signed cells (mean of the two middle values for even d), unbiased (§4).
//
// Batch updates run level-major over chunks of items: for every (level, row) the chunk's items
// update one row of w cells (w·8 bytes, L1-resident for w <= ~4000), so the inner loop is a hash
// and an L1 increment per (item, row) instead of a cache miss; the small exact levels are built
// from one histogram per chunk (add_chunk, fold_exact_levels).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dpsketch/common/compiler.hpp"
#include "dpsketch/common/errors.hpp"
#include "dpsketch/common/key_counts.hpp"
#include "dpsketch/common/serialization.hpp"
#include "dpsketch/common/simd.hpp"
#include "dpsketch/dyadic/dyadic_shape.hpp"
#include "dpsketch/dyadic/prefix_hash.hpp"
#include "dpsketch/sketches/cell_store.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"
#include "dpsketch/sketches/median.hpp"

namespace dpsketch::dyadic {

inline constexpr Family kDyadicFamily = static_cast<Family>(5);
inline constexpr std::uint8_t kDyadicKeyTag = 1;  // int64/uint64 items

// Checksum closing families 5 and 9: every 8-byte word w (the tail zero-padded) steps
// h <- rotl((h ^ w)·p, 29) with p odd, then fmix64. Each step is a bijection in h and, for fixed h, in
// w, so any change confined to one word -- every single bit flip -- always changes the result. It
// guards against corruption, not against forgery (a forger can recompute it). `first_word_clear`
// masks bits of the first word (header_checksum64).
inline std::uint64_t checksum64(std::string_view b, std::uint64_t first_word_clear = 0) noexcept {
  constexpr std::uint64_t p = 0x9e3779b97f4a7c15ULL;
  std::uint64_t h = 0x243f6a8885a308d3ULL ^ b.size();
  std::size_t i = 0;
  for (; i + 8 <= b.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, b.data() + i, 8);
    if (i == 0) w &= ~first_word_clear;
    h = (h ^ w) * p;
    h = (h << 29) | (h >> 35);
  }
  std::uint64_t w = 0;
  std::memcpy(&w, b.data() + i, b.size() - i);
  h = (h ^ w) * p;
  return fmix64(h);
}
// The checksum of families 5 and 9: checksum64 of the header and payload with the release-state bits
// of header byte 7 (bits 1-3) cleared; the release-state trailer follows the checksum and is not
// covered (docs/format.md).
inline std::uint64_t header_checksum64(std::string_view b) noexcept {
  return checksum64(b, std::uint64_t{kReleaseStateFlags} << 56);
}
inline void append_checksum(std::string& out) {
  const std::uint64_t c = header_checksum64(out);
  out.append(reinterpret_cast<const char*>(&c), 8);
}
// Verifies the checksum that closes `b` (the bytes before any release-state trailer).
inline void verify_checksum(std::string_view b) {
  if (b.size() < kHeaderBytes + 8) throw DeserializeError("truncated (shorter than header and checksum)");
  std::uint64_t stored;
  std::memcpy(&stored, b.data() + b.size() - 8, 8);
  if (header_checksum64(b.substr(0, b.size() - 8)) != stored)
    throw DeserializeError("checksum mismatch (truncated or altered bytes)");
}
// The common header of family 5 or 9 (release state and trailer included), then the checksum; `r`
// is left at the payload, its end before the checksum.
inline HeaderInfo read_checked_header(ByteReader& r, Family f, bool can_publish) {
  if (r.remaining() < kHeaderBytes + 8) throw DeserializeError("truncated (shorter than header and checksum)");
  const HeaderInfo h = r.read_header(f, kDyadicKeyTag, 0, can_publish, /*untyped_ok=*/false);
  verify_checksum(r.region());
  r.drop_tail(8);
  return h;
}

class DyadicCountSketch : public WireState<false> {
 public:
  DyadicCountSketch(std::uint64_t bits, std::uint64_t width, std::uint64_t depth, std::uint64_t seed)
      : shape_(make_shape(bits, width, depth)), seed_(seed) {
    offsets_.assign(shape_.bits + 2, 0);
    for (std::uint32_t j = 1; j <= shape_.bits; ++j) offsets_[j + 1] = offsets_[j] + shape_.level_cells(j);
    cells_ = detail::CellStore(offsets_[shape_.bits + 1]);
    rows_.reserve(std::size_t{shape_.sketch_levels()} * shape_.depth);
    for (std::uint32_t j = shape_.exact + 1; j <= shape_.bits; ++j)
      for (std::uint32_t i = 0; i < shape_.depth; ++i) rows_.push_back(RowHash::make(seed, j, i));
  }

  const DyadicShape& shape() const noexcept { return shape_; }
  std::uint32_t bits() const noexcept { return shape_.bits; }
  std::uint32_t width() const noexcept { return shape_.width; }
  std::uint32_t depth() const noexcept { return shape_.depth; }
  std::uint32_t exact_levels() const noexcept { return shape_.exact; }
  std::uint64_t seed() const noexcept { return seed_; }
  std::int64_t n() const noexcept { return n_; }
  std::uint64_t mass() const noexcept { return cells_.mass(); }
  const std::vector<std::int64_t>& cells() const noexcept { return cells_.values(); }
  std::uint64_t level_offset(std::uint32_t level) const noexcept { return offsets_[level]; }
  std::uint64_t level_size(std::uint32_t level) const noexcept { return offsets_[level + 1] - offsets_[level]; }
  std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + cells_.memory_bytes() + rows_.capacity() * sizeof(RowHash) + offsets_.capacity() * 8;
  }

  // Largest valid item, 2^L - 1.
  std::uint64_t max_item() const noexcept {
    return shape_.bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << shape_.bits) - 1;
  }
  void check_item(std::uint64_t x) const {
    if (x > max_item())
      throw ParameterError("item out of range: items must be in [0, 2^" + std::to_string(shape_.bits) +
                           "); map values first (e.g. bounds=) or raise universe_bits");
  }

  // One item with a signed count (turnstile; the privacy unit is one unit update).
  void update(std::uint64_t x, std::int64_t count = 1) {
    check_item(x);
    cells_.reserve(detail::magnitude(count));
    add_item(x, count);
    n_ += count;
  }

  // A batch; counts == nullptr means +1 each. All-or-nothing: every item and count is validated
  // before any cell changes.
  void update_many(const std::uint64_t* items, const std::int64_t* counts, std::size_t m) {
    std::uint64_t bad = 0;
    const std::uint64_t hi = max_item();
    for (std::size_t k = 0; k < m; ++k) bad |= items[k] > hi;
    if (bad) check_item(hi + 1);  // throws the range message
    std::uint64_t batch_mass = 0;
    std::int64_t net = 0;
    if (counts) {
      batch_mass = detail::batch_mass(counts, m);
      for (std::size_t k = 0; k < m; ++k) net += counts[k];  // |net| <= batch_mass <= 2^62
    } else {
      if (m > kMaxMass) detail::throw_mass_limit();
      batch_mass = m;
      net = static_cast<std::int64_t>(m);
    }
    Scratch scratch(std::min(m, kBatchChunk));  // allocated before anything changes (all-or-nothing)
    cells_.reserve(batch_mass);
    constexpr std::size_t kChunk = kBatchChunk;
    for (std::size_t start = 0; start < m; start += kChunk) {
      const std::size_t len = std::min(kChunk, m - start);
      if (counts) add_chunk<true>(items + start, counts + start, len, scratch);
      else add_chunk<false>(items + start, nullptr, len, scratch);
    }
    n_ += net;
  }

  // The same cells and n as update_many(items, nullptr, m), fed as the batch's distinct items with
  // their multiplicities (common/key_counts.hpp): on a skewed batch most rows repeat a key, and
  // one counted update replaces them. All-or-nothing as update_many: items are checked and the
  // mass reserved before any cell changes.
  void update_many_aggregated(const std::uint64_t* items, std::size_t m) {
    std::uint64_t bad = 0;
    const std::uint64_t hi = max_item();
    for (std::size_t k = 0; k < m; ++k) bad |= items[k] > hi;
    if (bad) check_item(hi + 1);
    if (m > kMaxMass) detail::throw_mass_limit();
    KeyCounts counts;
    for (std::size_t k = 0; k < m; ++k) counts.add(items[k]);
    std::vector<std::uint64_t> keys;
    std::vector<std::int64_t> mult;
    counts.drain(keys, mult);
    Scratch scratch(std::min(keys.size(), kBatchChunk));
    cells_.reserve(m);
    for (std::size_t start = 0; start < keys.size(); start += kBatchChunk) {
      const std::size_t len = std::min(kBatchChunk, keys.size() - start);
      add_chunk<true>(keys.data() + start, mult.data() + start, len, scratch);
    }
    n_ += static_cast<std::int64_t>(m);
  }

  // Estimate of node `prefix` at `level` (1..L): its exact count, or the CountSketch median.
  double node(std::uint32_t level, std::uint64_t prefix) const noexcept {
    const std::int64_t* base = cells_.data() + offsets_[level];
    if (shape_.is_exact(level)) return static_cast<double>(base[prefix]);
    const std::uint32_t d = shape_.depth, w = shape_.width;
    const RowHash* rows = rows_.data() + std::size_t{level - shape_.exact - 1} * d;
    std::int64_t v[kMaxDepth];
    for (std::uint32_t i = 0; i < d; ++i, base += w) {
      std::uint32_t col;
      std::int64_t mask;
      if (level <= 32) RowHash::narrow(rows[i].h.a_lo, rows[i].h.b_lo, prefix, w, col, mask);
      else rows[i].wide(prefix, w, col, mask);
      v[i] = (base[col] ^ mask) - mask;
    }
    return dpsketch::detail::median(v, d);
  }

  // rank(x) = estimated #items < x for x in [0, 2^L): the nodes of the ≤ L one-bits of x tile [0, x).
  double rank(std::uint64_t x) const {
    check_item(x);
    double r = 0;
    const std::uint32_t L = shape_.bits;
    for (std::uint32_t j = 1; j <= L; ++j) {
      const std::uint64_t p = x >> (L - j);
      if (p & 1) r += node(j, p - 1);
    }
    return r;
  }
  // rank(2^L): the two level-1 nodes (the root is not stored).
  double total() const noexcept { return node(1, 0) + node(1, 1); }

  // Smallest x with estimated rank(x + 1) >= target, by descent from the root (§6): at level j go to
  // the left child iff target <= passed + estimate(left). Monotone in target for any cell values.
  std::uint64_t quantile(double target) const noexcept {
    std::uint64_t p = 0;
    double passed = 0;
    for (std::uint32_t j = 1; j <= shape_.bits; ++j) {
      const std::uint64_t left = p << 1;
      const double e = node(j, left);
      if (target <= passed + e) {
        p = left;
      } else {
        passed += e;
        p = left | 1;
      }
    }
    return p;
  }

  // Hierarchical heavy hitters by descent (§6): keep every node whose estimate exceeds threshold,
  // expand kept nodes level by level; returns the leaves (items) kept with their estimates.
  // max_nodes bounds the nodes kept per level (a too-low threshold would otherwise expand the tree).
  std::vector<std::pair<std::uint64_t, double>> heavy_hitters(double threshold, std::uint64_t max_nodes) const {
    std::vector<std::uint64_t> frontier{0}, next;
    std::vector<std::pair<std::uint64_t, double>> out;
    for (std::uint32_t j = 1; j <= shape_.bits; ++j) {
      next.clear();
      out.clear();
      for (std::uint64_t p : frontier) {
        for (std::uint64_t c = p << 1; c <= ((p << 1) | 1); ++c) {
          const double e = node(j, c);
          if (e > threshold) {
            if (next.size() >= max_nodes)
              throw ParameterError("more than " + std::to_string(max_nodes) + " nodes exceed the threshold at level " +
                                   std::to_string(j) + "; raise the threshold");
            next.push_back(c);
            if (j == shape_.bits) out.emplace_back(c, e);
          }
        }
      }
      frontier.swap(next);
      if (frontier.empty()) break;
    }
    return out;
  }

  bool compatible(const DyadicCountSketch& o) const noexcept { return shape_ == o.shape_ && seed_ == o.seed_; }

  // Cellwise sum: the sketch of the concatenated streams (§8).
  void merge(const DyadicCountSketch& o) {
    if (!compatible(o))
      throw ParameterError("cannot merge dyadic sketches with different shape or hash seed (" + shape_.to_string() +
                           " vs " + o.shape_.to_string() + "); build both with the same universe_bits, width, "
                           "depth and seed");
    cells_.merge(o.cells_);  // checks the mass bound first
    n_ += o.n_;
  }

  // Adds v to every cell of `level` (noise; see release/private_dyadic.hpp). draw() must return values with
  // |v| < 2^62 - mass (checked).
  template <class Draw>
  void add_level_noise(std::uint32_t level, Draw&& draw) {
    std::int64_t* c = cells_.data() + offsets_[level];
    const std::uint64_t size = level_size(level);
    std::uint64_t peak = 0;
    for (std::uint64_t k = 0; k < size; ++k) {
      const std::int64_t v = draw();
      const std::uint64_t a = detail::magnitude(v);
      peak = std::max(peak, a);
      if (!cells_.has_room(a)) detail::throw_mass_limit();
      c[k] += v;
    }
    noise_peak_ = std::max(noise_peak_, peak);
  }
  // Drops the exact length and the gross mass for a published private sketch (docs/privacy.md
  // §Publishing): n = 0 and mass = max |cell|, a bound computed from the noisy cells alone. It keeps
  // every |cell|, |n| <= mass <= 2^62, which is what deserialization checks and the arithmetic uses.
  void withhold_length() noexcept {
    n_ = 0;
    cells_.set_mass(max_cell());
  }
  std::uint64_t max_cell() const noexcept { return cells_.max_abs(); }

  // After noise: every cell has |cell| <= old mass + peak noise, so add the peak once.
  void account_noise() {
    cells_.reserve(noise_peak_);
    noise_peak_ = 0;
  }

  // Descriptive parameters carried through serialization for the Python layer (not used here):
  // the γ the shape was derived from (0: explicit width/depth) and the public value bounds.
  struct Meta {
    double gamma = 0;
    bool has_bounds = false;
    double lo = 0, hi = 0;
  };
  const Meta& meta() const noexcept { return meta_; }
  // docs/algorithms.md §6: the bucket of a (non-NaN) value v with bounds, ⌊(clip(v) − lo)/(hi − lo)·2^L⌋
  // clamped to 2^L − 1. The same float64 operations in the same order as the Python batch mapping
  // (dpsketch/dyadic.py, _map_values), so a value lands in the same bucket either way.
  std::uint64_t bucket_of(double v) const noexcept {
    const double scale = std::ldexp(1.0, static_cast<int>(shape_.bits));
    const double clipped = v < meta_.lo ? meta_.lo : (v > meta_.hi ? meta_.hi : v);
    const double t = std::floor((clipped - meta_.lo) / (meta_.hi - meta_.lo) * scale);
    return static_cast<std::uint64_t>(t < scale - 1 ? t : scale - 1);
  }
  void set_meta(const Meta& m) {
    check_meta(m);
    meta_ = m;
  }
  static void check_meta(const Meta& m) {
    if (!(m.gamma == 0 || (m.gamma > 0 && m.gamma < 1))) throw ParameterError("gamma must be in (0, 1)");
    if (m.has_bounds && !(std::isfinite(m.lo) && std::isfinite(m.hi) && m.lo < m.hi))
      throw ParameterError("bounds must be finite with lo < hi");
  }

  // Payload: L u32, width u32, depth u32, seed u64, n i64, mass u64, gamma f64, has_bounds u8,
  // lo f64, hi f64, then every level's cells (int64, level 1 first; exact levels by prefix, sketch
  // levels row-major); serialize() closes with checksum64 of everything before it (u64).
  std::string serialize() const {
    ByteWriter w;
    w.reserve(kHeaderBytes + 40 + cells_.raw_bytes() + 8 + kReleaseTrailerBytes);
    w.header(kDyadicFamily, kDyadicKeyTag, wire_flags(0));
    write_payload(w);
    std::string out = w.take();
    append_checksum(out);
    append_trailer(out);
    return out;
  }
  // serialize().size() and the size of write_payload(), without writing the bytes.
  std::size_t serialized_size() const noexcept { return kHeaderBytes + payload_size() + 8 + trailer_bytes(); }
  std::size_t payload_size() const noexcept { return 4 + 4 + 4 + 8 + 8 + 8 + 8 + 1 + 8 + 8 + cells_.raw_bytes(); }
  void write_payload(ByteWriter& w) const {
    w.u32(shape_.bits);
    w.u32(shape_.width);
    w.u32(shape_.depth);
    w.u64(seed_);
    w.i64(n_);
    w.u64(cells_.mass());
    w.raw(&meta_.gamma, 8);
    w.u8(meta_.has_bounds ? 1 : 0);
    w.raw(&meta_.lo, 8);
    w.raw(&meta_.hi, 8);
    cells_.write(w);
  }

  // check_counts: the cells must be what updates can produce. Non-private: every level's cells sum
  // (exact levels) or each row's signed sum has the parity of n, exact levels sum to n, and every
  // |cell| and |n| are <= mass <= 2^62. Private (noisy) cells skip the sum checks but keep the bounds.
  static DyadicCountSketch deserialize(std::string_view bytes, bool check_counts = true) {
    ByteReader r(bytes);
    const HeaderInfo h = read_checked_header(r, kDyadicFamily, /*can_publish=*/false);
    DyadicCountSketch s = read_payload(r, check_counts);
    r.finish();
    s.restore_wire(h);
    return s;
  }
  static DyadicCountSketch read_payload(ByteReader& r, bool check_counts) {
    const std::uint32_t bits = r.u32();
    const std::uint32_t width = r.u32();
    const std::uint32_t depth = r.u32();
    const std::uint64_t seed = r.u64();
    const std::int64_t n = r.i64();
    const std::uint64_t mass = r.u64();
    Meta meta;
    r.raw(&meta.gamma, 8, "gamma");
    const std::uint8_t has_bounds = r.u8();
    if (has_bounds > 1) throw DeserializeError("bounds flag must be 0 or 1");
    meta.has_bounds = has_bounds == 1;
    r.raw(&meta.lo, 8, "bounds");
    r.raw(&meta.hi, 8, "bounds");
    try {
      check_meta(meta);
    } catch (const ParameterError&) {
      throw DeserializeError("gamma or bounds out of range");
    }
    DyadicShape shape;
    try {
      shape = make_shape(bits, width, depth);
    } catch (const ParameterError&) {
      throw DeserializeError("dyadic sketch shape out of range");
    }
    // Sizes come from the shape; make sure the blob holds them before allocating anything.
    detail::CellStore::need(r, shape.total_cells());
    if (mass > kMaxMass) throw DeserializeError("mass bound exceeds 2^62");
    DyadicCountSketch s(bits, width, depth, seed);
    s.cells_.read(r);
    s.n_ = n;
    s.cells_.set_mass(mass);  // checked against the cells and n below
    s.meta_ = meta;
    s.check_bounds();
    if (check_counts) s.check_counts();
    return s;
  }

 private:
  void add_item(std::uint64_t x, std::int64_t count) noexcept {
    const std::uint32_t L = shape_.bits;
    for (std::uint32_t j = 1; j <= L; ++j) add_node(j, x >> (L - j), count);
  }

  // `count` more at node `p` of level j: one exact cell, or one signed cell per row.
  DPSKETCH_ALWAYS_INLINE void add_node(std::uint32_t j, std::uint64_t p, std::int64_t count) noexcept {
    const std::uint32_t d = shape_.depth, w = shape_.width;
    std::int64_t* base = cells_.data() + offsets_[j];
    if (shape_.is_exact(j)) {
      base[p] += count;
      return;
    }
    const RowHash* rows = rows_.data() + std::size_t{j - shape_.exact - 1} * d;
    for (std::uint32_t i = 0; i < d; ++i, base += w) {
      std::uint32_t col;
      std::int64_t mask;
      if (j <= 32) RowHash::narrow(rows[i].h.a_lo, rows[i].h.b_lo, p, w, col, mask);
      else rows[i].wide(p, w, col, mask);
      base[col] += (count ^ mask) - mask;
    }
  }

  // Level-major, row-major over one chunk (see the header comment). Narrow rows (level <= 32) with
  // AVX2 go in pairs: narrow_rows_avx2 computes a sub-block's columns and deltas 4 items at a time
  // into the scratch (the values of RowHash::narrow), then scatter_rows adds them. Without AVX2,
  // narrow_pair_scalar does both for a row pair in one loop; wide levels (> 32 bits) and an odd
  // last row without AVX2 take the plain scalar loops.
  //
  // Chunks are long because each (level, row) pass brings that row into L1 again: the whole table
  // (2.2 MB at L = 32, d = 9, w = 1608) is read once per chunk, so short chunks stream kilobytes
  // from L2/L3 per item. At 16,384 items the idx/val streams (256 KiB, sequential) cost less than
  // that; a table that fits in L2 (L = 16) does not care.
  static constexpr std::size_t kBatchChunk = 16384;
  // Within a chunk, each row (pair) is hashed and added kSubBlock items at a time, so the columns
  // and deltas (4 x 4 KiB) stay in L1 next to the two rows (2 x 12.9 KiB at w = 1608) instead of
  // streaming 16 B per item and row through L2.
  static constexpr std::size_t kSubBlock = 512;
  struct Scratch {
    explicit Scratch(std::size_t len)
        : buf(new std::uint64_t[4 * kSubBlock + len / 4 + 4]),  // uninitialised: every use writes first
          idx(buf.get()),
          val(reinterpret_cast<std::int64_t*>(buf.get() + kSubBlock)),
          idx2(buf.get() + 2 * kSubBlock),
          val2(reinterpret_cast<std::int64_t*>(buf.get() + 3 * kSubBlock)),
          hist(reinterpret_cast<std::int64_t*>(buf.get() + 4 * kSubBlock)),
          hist_cells(len / 4 + 4) {}
    std::unique_ptr<std::uint64_t[]> buf;
    std::uint64_t* idx;   // columns and signed deltas of one row's sub-block (idx2/val2: the paired row)
    std::int64_t* val;
    std::uint64_t* idx2;
    std::int64_t* val2;
    std::int64_t* hist;  // the folded exact levels' histogram (fold_exact_levels)
    std::size_t hist_cells;
  };

  // The exact levels 1..F with 2^F <= len/4 are not incremented item by item: they have few cells,
  // so consecutive items hit the same cell and each increment would wait for the previous store.
  // Instead the chunk's level-F histogram is
  // built once and folded upwards: level j-1 of the chunk is level j with sibling cells summed.
  // Cost per chunk ~4 * 2^F + len operations instead of F * len dependent increments.
  static std::uint32_t folded_levels(std::uint32_t exact, std::size_t len, std::size_t hist_cells) noexcept {
    std::uint32_t f = 0;
    while (f < exact && (std::size_t{1} << (f + 1)) * 4 <= len && (std::size_t{1} << (f + 1)) <= hist_cells) ++f;
    return f >= 2 ? f : 0;
  }

  template <bool Counted>
  void fold_exact_levels(const std::uint64_t* __restrict x, const std::int64_t* __restrict counts, std::size_t len,
                         std::uint32_t f, std::int64_t* __restrict h) noexcept {
    const unsigned shift = shape_.bits - f;
    std::fill(h, h + (std::size_t{1} << f), std::int64_t{0});
    for (std::size_t k = 0; k < len; ++k) h[x[k] >> shift] += Counted ? counts[k] : 1;
    for (std::uint32_t j = f;; --j) {  // h holds the chunk's level-j counts
      std::int64_t* __restrict base = cells_.data() + offsets_[j];
      const std::size_t cells = std::size_t{1} << j;
      for (std::size_t p = 0; p < cells; ++p) base[p] += h[p];  // within the reserved mass (kMaxMass, dyadic_shape.hpp)
      if (j == 1) break;
      for (std::size_t p = 0; p < cells / 2; ++p) h[p] = h[2 * p] + h[2 * p + 1];
    }
  }

  template <bool Counted>
  void add_chunk(const std::uint64_t* __restrict x, const std::int64_t* __restrict counts, std::size_t len,
                 Scratch& scratch) noexcept {
    const std::uint32_t L = shape_.bits, d = shape_.depth, w = shape_.width;
    const bool vec = simd::avx2();
    const std::uint32_t folded = folded_levels(shape_.exact, len, scratch.hist_cells);
    if (folded) fold_exact_levels<Counted>(x, counts, len, folded, scratch.hist);
    // The levels where every item of the chunk has the same prefix (those of the smallest and
    // the largest item agree) get one update of the chunk's total: the same cells, as integer
    // sums, without a hash per item. Items from a small range of a wide universe (ids in a
    // 64-bit sketch) share most levels.
    std::uint64_t lo = x[0], hi = x[0];
    std::int64_t total = 0;
    for (std::size_t k = 0; k < len; ++k) {
      lo = std::min(lo, x[k]);
      hi = std::max(hi, x[k]);
      total += Counted ? counts[k] : 1;  // |total| <= the reserved batch mass
    }
    for (std::uint32_t j = folded + 1; j <= L; ++j) {
      const unsigned shift = L - j;
      if ((lo >> shift) == (hi >> shift)) {
        add_node(j, lo >> shift, total);
        continue;
      }
      std::int64_t* __restrict base = cells_.data() + offsets_[j];
      if (shape_.is_exact(j)) {
        for (std::size_t k = 0; k < len; ++k) base[x[k] >> shift] += Counted ? counts[k] : 1;
        continue;
      }
      const RowHash* rows = rows_.data() + std::size_t{j - shape_.exact - 1} * d;
      std::uint32_t i = 0;
#ifdef DPSKETCH_X86_DISPATCH
      // Rows in pairs: one kernel hashes both rows from one load and shift of the items, and one
      // scatter loop adds both rows' deltas, so the loop overhead is shared (both loops are
      // uop-bound, not memory-bound, once the rows are in L1).
      if (vec && j <= 32) {
        for (; i + 2 <= d; i += 2, base += 2 * std::size_t{w}) {
          for (std::size_t first = 0; first < len; first += kSubBlock) {
            const std::size_t m = std::min(kSubBlock, len - first);
            narrow_rows_avx2<Counted, 2>(x + first, Counted ? counts + first : nullptr, m, shift, &rows[i], w,
                                         scratch.idx, scratch.val, scratch.idx2, scratch.val2);
            scatter_rows<Counted, 2>(base, base + w, scratch.idx, scratch.val, scratch.idx2, scratch.val2, m);
          }
        }
        for (; i < d; ++i, base += w) {
          for (std::size_t first = 0; first < len; first += kSubBlock) {
            const std::size_t m = std::min(kSubBlock, len - first);
            narrow_rows_avx2<Counted, 1>(x + first, Counted ? counts + first : nullptr, m, shift, &rows[i], w,
                                         scratch.idx, scratch.val, nullptr, nullptr);
            scatter_rows<Counted, 1>(base, nullptr, scratch.idx, scratch.val, nullptr, nullptr, m);
          }
        }
      }
#endif
      if (!vec && j <= 32)  // the portable path pairs rows too (no AVX2 or DPSKETCH_NO_SIMD; non-x86 CPUs)
        for (; i + 2 <= d; i += 2, base += 2 * std::size_t{w})
          narrow_pair_scalar<Counted>(x, counts, len, shift, &rows[i], w, base);
      for (; i < d; ++i, base += w) {
        if (j <= 32) {
          const std::uint64_t a = rows[i].h.a_lo, b = rows[i].h.b_lo;
          for (std::size_t k = 0; k < len; ++k) {
            std::uint32_t col;
            std::int64_t mask;
            RowHash::narrow(a, b, x[k] >> shift, w, col, mask);
            base[col] += signed_delta<Counted>(counts, k, mask);
          }
        } else {
          const RowHash r = rows[i];
          for (std::size_t k = 0; k < len; ++k) {
            std::uint32_t col;
            std::int64_t mask;
            r.wide(x[k] >> shift, w, col, mask);
            base[col] += signed_delta<Counted>(counts, k, mask);
          }
        }
      }
    }
    (void)vec;
    (void)scratch;
  }

  // Two rows (row0 and the next, row0 + w) of a level <= 32 bits in one portable loop: one load and
  // shift of each item for both hashes (RowHash::narrow).
  // Out of line so that the loop has registers to itself.
  template <bool Counted>
  __attribute__((noinline)) static void narrow_pair_scalar(const std::uint64_t* __restrict x,
                                                           const std::int64_t* __restrict counts, std::size_t len,
                                                           unsigned shift, const RowHash* rows, std::uint32_t w,
                                                           std::int64_t* __restrict row0) noexcept {
    const std::uint64_t a0 = rows[0].h.a_lo, b0 = rows[0].h.b_lo, a1 = rows[1].h.a_lo, b1 = rows[1].h.b_lo;
    std::int64_t* __restrict row1 = row0 + w;
    for (std::size_t k = 0; k < len; ++k) {
      const std::uint64_t p = x[k] >> shift;
      std::uint32_t col0, col1;
      std::int64_t mask0, mask1;
      RowHash::narrow(a0, b0, p, w, col0, mask0);
      RowHash::narrow(a1, b1, p, w, col1, mask1);
      row0[col0] += signed_delta<Counted>(counts, k, mask0);
      row1[col1] += signed_delta<Counted>(counts, k, mask1);
    }
  }

  // The cell delta of item k for a row whose sign mask is `mask` (0: +1, all ones: -1).
  template <bool Counted>
  static std::int64_t signed_delta(const std::int64_t* counts, std::size_t k, std::int64_t mask) noexcept {
    if (Counted) return (counts[k] ^ mask) - mask;
    return mask | 1;  // +1 or -1
  }

#ifdef DPSKETCH_X86_DISPATCH
  // RowHash::narrow of R rows (1 or 2) for 4 items per vector, with as few vector ALU operations as
  // the bit-identical result allows (the kernel is bound by them):
  //  * p < 2^32, so h = (a·p + b) mod 2^64 >> 32 = ((lo32(a)·p + b) >> 32) + lo32(hi32(a)·p) mod 2^32:
  //    one vpmuludq and add for the low part, a dword shuffle for ">> 32" and a 32-bit add -- h sits
  //    in each lane's low dword (the high dword is not used).
  //  * the column ((h >> 1)·w) >> 31 equals ((h >> 1)·2w) >> 32 (no bit is lost: (h >> 1)·2w < 2^63),
  //    so idx[k] holds it in its HIGH dword and the scatter reads that dword -- no shift.
  //  * uncounted, the ±1 delta is looked up from bit 0 of h by a byte shuffle into the low byte of
  //    val[k] (the rest of val[k] is not used); counted, val[k] = ±count in full.
  // The scalar tail writes the same layout. Consumers: scatter_rows.
  template <bool Counted, int R>
  __attribute__((target("avx2"))) static void narrow_rows_avx2(
      const std::uint64_t* __restrict x, const std::int64_t* __restrict counts, std::size_t len, unsigned shift,
      const RowHash* rows, std::uint32_t w, std::uint64_t* __restrict idx0, std::int64_t* __restrict val0,
      std::uint64_t* __restrict idx1, std::int64_t* __restrict val1) noexcept {
    static_assert(R == 1 || R == 2, "one or two rows");
    const std::uint64_t a[2] = {rows[0].h.a_lo, R == 2 ? rows[1].h.a_lo : 0};
    const std::uint64_t b[2] = {rows[0].h.b_lo, R == 2 ? rows[1].h.b_lo : 0};
    std::uint64_t* __restrict idx[2] = {idx0, idx1};
    std::int64_t* __restrict val[2] = {val0, val1};
    __m256i a_lo[2], a_hi[2], bb[2];
    for (int r = 0; r < R; ++r) {
      a_lo[r] = _mm256_set1_epi64x(static_cast<long long>(a[r] & 0xffffffffu));
      a_hi[r] = _mm256_set1_epi64x(static_cast<long long>(a[r] >> 32));
      bb[r] = _mm256_set1_epi64x(static_cast<long long>(b[r]));
    }
    const __m256i w2 = _mm256_set1_epi64x(2 * static_cast<long long>(w));
    const __m256i one = _mm256_set1_epi64x(1);
    // Byte shuffle table: index 0 (bit 0 of h clear) -> -1, index 1 -> +1 (RowHash::narrow's sign).
    const __m256i sign_of_bit = _mm256_setr_epi8(-1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                                                 -1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i sh = _mm_cvtsi32_si128(static_cast<int>(shift));
    std::size_t k = 0;
    for (; k + 4 <= len; k += 4) {
      const __m256i p = _mm256_srl_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k)), sh);
      const __m256i c = Counted ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(counts + k)) : one;
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        const __m256i lo = _mm256_add_epi64(_mm256_mul_epu32(a_lo[r], p), bb[r]);
        const __m256i h = _mm256_add_epi32(_mm256_shuffle_epi32(lo, 0xF5), _mm256_mul_epu32(a_hi[r], p));
        const __m256i bit = _mm256_and_si256(h, one);
        __m256i v;
        if (Counted) {
          const __m256i mask = _mm256_sub_epi64(bit, one);  // 0 for +1, all ones for -1
          v = _mm256_sub_epi64(_mm256_xor_si256(c, mask), mask);
        } else {
          v = _mm256_shuffle_epi8(sign_of_bit, bit);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(val[r] + k), v);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx[r] + k), _mm256_mul_epu32(_mm256_srli_epi32(h, 1), w2));
      }
    }
    for (; k < len; ++k) {
      const std::int64_t c = Counted ? counts[k] : 1;
      for (int r = 0; r < R; ++r) {
        std::uint32_t col;
        std::int64_t mask;
        RowHash::narrow(a[r], b[r], x[k] >> shift, w, col, mask);
        idx[r][k] = std::uint64_t{col} << 32;
        val[r][k] = (c ^ mask) - mask;
      }
    }
  }

  // Adds one or two rows' deltas as narrow_rows_avx2 laid them out. Not inlined on purpose: inside
  // add_chunk the loop runs short of registers and reloads a row pointer per item.
  template <bool Counted, int R>
  __attribute__((noinline)) static void scatter_rows(std::int64_t* __restrict row0, std::int64_t* __restrict row1,
                                                     const std::uint64_t* __restrict idx0,
                                                     const std::int64_t* __restrict val0,
                                                     const std::uint64_t* __restrict idx1,
                                                     const std::int64_t* __restrict val1, std::size_t m) noexcept {
    // Columns in the high dwords (little-endian: the second uint32 of each uint64).
    const std::uint32_t* col0 = reinterpret_cast<const std::uint32_t*>(idx0) + 1;
    const std::uint32_t* col1 = R == 2 ? reinterpret_cast<const std::uint32_t*>(idx1) + 1 : nullptr;
#pragma GCC unroll 2
    for (std::size_t k = 0; k < m; ++k) {
      row0[col0[2 * k]] += Counted ? val0[k] : static_cast<std::int8_t>(val0[k]);
      if (R == 2) row1[col1[2 * k]] += Counted ? val1[k] : static_cast<std::int8_t>(val1[k]);
    }
  }
#endif

  void check_bounds() const {
    if (detail::magnitude(n_) > cells_.mass()) throw DeserializeError("|n| exceeds the mass bound");
    if (cells_.max_abs() > cells_.mass()) throw DeserializeError("a cell exceeds the mass bound");
  }

  void check_counts() const {
    const std::uint32_t L = shape_.bits, d = shape_.depth, w = shape_.width;
    for (std::uint32_t j = 1; j <= L; ++j) {
      const std::int64_t* c = cells_.data() + offsets_[j];
      if (shape_.is_exact(j)) {
        __int128 sum = 0;
        for (std::uint64_t k = 0; k < level_size(j); ++k) sum += c[k];
        if (sum != n_) throw DeserializeError("an exact level does not sum to n");
        continue;
      }
      for (std::uint32_t i = 0; i < d; ++i, c += w) {
        __int128 sum = 0;
        for (std::uint32_t k = 0; k < w; ++k) sum += c[k];
        if (((sum - n_) & 1) != 0) throw DeserializeError("a sketch row has the wrong parity for n");
      }
    }
  }

  DyadicShape shape_;
  Meta meta_;
  std::uint64_t seed_;
  std::int64_t n_ = 0;
  std::uint64_t noise_peak_ = 0;  // during add_level_noise
  std::vector<std::uint64_t> offsets_;  // offsets_[j]: first cell of level j (1..L); offsets_[L+1]: end
  std::vector<RowHash> rows_;           // (level - E - 1) * d + row
  // Every level's cells; its mass (Σ|count| absorbed + peak |noise|) bounds every |cell| and |n|
  // (cell_store.hpp).
  detail::CellStore cells_;
};

}  // namespace dpsketch::dyadic
