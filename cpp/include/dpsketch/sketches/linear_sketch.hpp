// Count-Min and CountSketch (docs/algorithms.md §4): d rows x w columns of int64 cells.
//
// A key is first reduced to a 64-bit fingerprint (integers: themselves; strings: seeded poly61,
// collision bound in common/hash.hpp). Row i evaluates its own strongly universal
// multiply-add-shift hash h_i on the fingerprint (one wide multiply); the bucket is the range
// reduction of h_i(x) to [0, w). CountSketch takes its sign from the lowest bit of the same word and
// its bucket from the other 63 bits, so bucket and sign are exactly independent and each is
// pairwise independent across keys -- what the Count-Min (Markov) and CountSketch (Chebyshev)
// point bounds need. Rows are seeded independently from one 64-bit seed via SplitMix64.
#pragma once

#include <algorithm>
#include <iterator>
#include <array>
#include <stdexcept>
#include <type_traits>
#include <cstdint>
#include <string>
#include <vector>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/common/hash.hpp"
#include "dpsketch/common/key_traits.hpp"
#include "dpsketch/common/limits.hpp"
#include "dpsketch/common/serialization.hpp"
#include "dpsketch/common/simd.hpp"
#include "dpsketch/sketches/cell_store.hpp"
#include "dpsketch/sketches/median.hpp"

namespace dpsketch {

enum class SketchKind : std::uint8_t { count_min, count_sketch };

inline constexpr std::uint32_t kMaxDepth = 255;
static_assert(kMaxDepth <= detail::kMaxMedianValues, "an estimate takes the median of one value per row");
inline constexpr std::uint64_t kMaxCells = std::uint64_t{1} << 28;  // 2 GiB of int64 cells

inline void check_shape(std::uint64_t width, std::uint64_t depth) {
  if (width < 1 || width > (std::uint64_t{1} << 31))
    throw ParameterError("width must be between 1 and 2^31, got " + std::to_string(width));
  if (depth < 1 || depth > kMaxDepth)
    throw ParameterError("depth must be between 1 and " + std::to_string(kMaxDepth) + ", got " +
                         std::to_string(depth));
  if (width * depth > kMaxCells)
    throw ParameterError("width * depth must be at most 2^28 cells (2 GiB), got " +
                         std::to_string(width * depth) + "; lower width or depth");
}

template <class Key, SketchKind Kind>
class LinearSketch : public WireState<false> {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;

 public:
  using key_type = Key;
  static constexpr SketchKind kind = Kind;
  static constexpr Family family = Kind == SketchKind::count_min ? Family::count_min : Family::count_sketch;
  // CountSketch estimates are medians (half-integers when d is even); Count-Min's are integers.
  using estimate_type = std::conditional_t<Kind == SketchKind::count_min, std::int64_t, double>;

  LinearSketch(std::uint64_t width, std::uint64_t depth, std::uint64_t seed)
      : width_((check_shape(width, depth), static_cast<std::uint32_t>(width))),
        depth_(static_cast<std::uint32_t>(depth)), seed_(seed), cells_(width * depth) {
    std::uint64_t state = seed;
    rows_.reserve(depth);
    for (std::uint32_t i = 0; i < depth_; ++i) rows_.push_back(MultiplyAddShift::from_stream(state));
    poly_seed_ = poly61_seed(splitmix64(state));
    shift_ = pow2_shift(width_);
  }

  std::uint64_t fingerprint(const View& x) const noexcept { return Traits::fingerprint(x, poly_seed_); }

  // Column of row i for fingerprint fp, and (CountSketch) its sign.
  std::uint32_t bucket(std::uint32_t i, std::uint64_t fp) const noexcept {
    const std::uint64_t h = rows_[i](fp);
    return Kind == SketchKind::count_min ? reduce_range(h, width_) : reduce_range(h & ~std::uint64_t{1}, width_);
  }
  static std::int64_t sign_of(std::uint64_t h) noexcept { return (h & 1) ? 1 : -1; }
  // The sign row i gives fingerprint fp: 1 for Count-Min, CountSketch's +1 or -1 (what a unit
  // update adds to cell (i, bucket(i, fp))). Callers that encode the cells themselves (the
  // correlated-noise series) need both.
  std::int64_t sign(std::uint32_t i, std::uint64_t fp) const noexcept {
    if constexpr (Kind == SketchKind::count_min) return 1;
    else return sign_of(rows_[i](fp));
  }

  // Unit update. Throws StreamLimitError (OverflowError in Python; nothing changed) when the mass
  // (total |count| absorbed plus the starting max |cell|, see kMaxCellMass) would pass 2^62.
  void update(const View& x) { update_fp(fingerprint(x)); }

  void update_fp(std::uint64_t fp) {
    check_room(1);
    absorb_fp(fp);
  }

  // Throws StreamLimitError unless `more` unit updates still fit (batches check first).
  void check_room(std::uint64_t more) const {
    if (!cells_.has_room(more)) throw StreamLimitError(cells_.mass(), more);
  }

  // update_fp without the check (callers check first). A unit update moves a cell and n by at most
  // 1 and the mass by 1, so |cell|, |n| <= mass <= 2^62 keeps holding: no overflow.
  void absorb_fp(std::uint64_t fp) noexcept {
    std::int64_t* row = cells_.data();
    for (std::uint32_t i = 0; i < depth_; ++i, row += width_) {
      const std::uint64_t h = rows_[i](fp);
      if constexpr (Kind == SketchKind::count_min) row[column(h)] += 1;
      else row[column(h)] += sign_mask(h) | 1;  // +1 or -1
    }
    ++n_;
    cells_.take_unit();
  }

  // Turnstile update (docs/algorithms.md §6, Zhao's model): a signed count, negative deletes. n is the
  // net count. Count-Min's never-underestimate guarantee needs the strict turnstile model (no
  // frequency ever negative) -- the caller's concern. The privacy unit stays one unit update.
  void update(const View& x, std::int64_t count) { update_fp(fingerprint(x), count); }
  void update_fp(std::uint64_t fp, std::int64_t count) {
    reserve_mass(detail::magnitude(count));
    add_fp(fp, count);
  }
  // For callers that reserved the batch's mass first (reserve_mass(batch_mass(...))).
  void add_reserved(const View& x, std::int64_t count) noexcept { add_fp(fingerprint(x), count); }
  // A counted batch, all-or-nothing: the total |count| is checked before any cell changes. `items`
  // is anything indexable whose elements convert to View (int64 for int keys, string views for
  // string keys); a template, so explicit instantiations of either key type compile.
  template <class Items>
  void update_many_counted(const Items& items, const std::int64_t* counts, std::size_t m) {
    reserve_mass(batch_mass(counts, m));
    for (std::size_t k = 0; k < m; ++k) add_fp(fingerprint(items[k]), counts[k]);
  }
  // Σ|count| of a batch, or std::overflow_error beyond the mass bound.
  static std::uint64_t batch_mass(const std::int64_t* counts, std::size_t m) { return detail::batch_mass(counts, m); }
  void reserve_mass(std::uint64_t a) { cells_.reserve(a); }
  // After cells were overwritten (noise at construction): the bound restarts from the cells.
  void reset_mass() {
    const std::uint64_t m = std::max(detail::magnitude(n_), cells_.max_abs());
    if (m > kMaxCellMass) throw DeserializeError("a cell or n exceeds 2^62 in magnitude");
    cells_.set_mass(m);
  }
  std::uint64_t mass() const noexcept { return cells_.mass(); }
  // Drops the exact length for a published private sketch (docs/privacy.md §Publishing): n = 0 and
  // the mass bound restarts from the (noisy) cells alone, so neither carries a function of the data.
  // Every |cell| <= mass still holds, which is all deserialization and later arithmetic rely on.
  void withhold_length() {
    n_ = 0;
    reset_mass();
  }
  // Raises the mass to at least m (cells outside this sketch that later unit updates also move, as
  // the private sketches' F2 row): DeserializeError beyond 2^62.
  void cover_mass(std::uint64_t m) {
    if (m > kMaxCellMass) throw DeserializeError("a cell exceeds 2^62 in magnitude");
    cells_.set_mass(std::max(cells_.mass(), m));
  }

  // All-or-nothing at the stream limit: the room for the whole batch is checked first.
  template <class It>
  void update_many(It first, It last) {
    check_room(static_cast<std::uint64_t>(std::distance(first, last)));
    for (; first != last; ++first) absorb_fp(fingerprint(*first));
  }

  // Builds the AVX2 row tables that update_and_estimate_fp then uses when the CPU has AVX2, for
  // d >= kQuadMinDepth (below that the scalar rows measured as fast): 64 bytes per row, built on
  // every CPU so that memory_bytes() does not depend on the machine. Opt-in (the §5 wrapper calls
  // it) so plain sketches keep their memory and code paths.
  void prepare_update_and_estimate() {
    if (depth_ < kQuadMinDepth) return;
    build_quads();
    use_quads_ = simd::avx2();
  }

  // Adds fp and returns its estimate afterwards in the same pass over the rows (the candidate
  // tracking of §5 needs both on every update).
  estimate_type update_and_estimate_fp(std::uint64_t fp) {
    check_room(1);
    if constexpr (Kind == SketchKind::count_min) {
      ++n_;
      cells_.take_unit();
      if (use_quads_) return update_and_min_avx2(fp);
      std::int64_t* row = cells_.data();
      std::int64_t best = INT64_MAX;
      for (std::uint32_t i = 0; i < depth_; ++i, row += width_) best = std::min(best, ++row[column(rows_[i](fp))]);
      return best;
    } else {
      std::int64_t v[kMaxDepth];
      ++n_;
      cells_.take_unit();
      if (use_quads_) {
        update_values_avx2(fp, v);
      } else {
        std::int64_t* row = cells_.data();
        for (std::uint32_t i = 0; i < depth_; ++i, row += width_) {
          const std::uint64_t h = rows_[i](fp);
          const std::int64_t m = sign_mask(h);
          v[i] = signed_value(row[column(h)] += m | 1, m);
        }
      }
      return detail::median(v, depth_);
    }
  }

  estimate_type estimate(const View& x) const noexcept { return estimate_fp(fingerprint(x)); }

  estimate_type estimate_fp(std::uint64_t fp) const noexcept {
    const std::int64_t* row = cells_.data();
    if constexpr (Kind == SketchKind::count_min) {
      std::int64_t best = INT64_MAX;
      for (std::uint32_t i = 0; i < depth_; ++i, row += width_) best = std::min(best, row[column(rows_[i](fp))]);
      return best;
    } else {
      std::int64_t v[kMaxDepth];
      for (std::uint32_t i = 0; i < depth_; ++i, row += width_) {
        const std::uint64_t h = rows_[i](fp);
        v[i] = signed_value(row[column(h)], sign_mask(h));
      }
      return detail::median(v, depth_);
    }
  }

  bool compatible(const LinearSketch& o) const noexcept {
    return width_ == o.width_ && depth_ == o.depth_ && seed_ == o.seed_;
  }

  // Cellwise sum: the sketch of the concatenated streams (§4 mergeability).
  void merge(const LinearSketch& o) {
    if (!compatible(o))
      throw ParameterError("cannot merge sketches with different width, depth or seed (got " +
                           shape_string() + " and " + o.shape_string() +
                           "); build both with the same width, depth and seed");
    cells_.merge(o.cells_);  // checks the mass bound first
    n_ += o.n_;
  }

  std::uint32_t width() const noexcept { return width_; }
  std::uint32_t depth() const noexcept { return depth_; }
  std::uint64_t seed() const noexcept { return seed_; }
  std::int64_t n() const noexcept { return n_; }  // net count (turnstile)
  const std::vector<std::int64_t>& cells() const noexcept { return cells_.values(); }
  std::vector<std::int64_t>& mutable_cells() noexcept { return cells_.values(); }
  std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + cells_.memory_bytes() + rows_.capacity() * sizeof(MultiplyAddShift) +
           quads_.capacity() * sizeof(RowQuad);
  }
  std::string shape_string() const {
    return "width=" + std::to_string(width_) + ", depth=" + std::to_string(depth_) + ", seed=" + std::to_string(seed_);
  }

  // Payload: width u32, depth u32, seed u64, n (u64 field, read as the signed net count), cells
  // (depth*width int64, row-major).
  // Hash parameters are a pure function of the seed and are rebuilt from it.
  std::string serialize() const {
    std::string out = write_bytes(wire_key_tag(Traits::tag, untyped_ && all_zero()), wire_flags(0));
    append_trailer(out);
    return out;
  }
  // The bytes without release state or untyped mark: the inner sketch of a private sketch.
  std::string serialize_bare() const { return write_bytes(Traits::tag, 0); }
  // serialize().size() and serialize_bare().size(), without writing the bytes.
  std::size_t serialized_size() const noexcept { return serialized_size_bare() + trailer_bytes(); }
  std::size_t serialized_size_bare() const noexcept { return kHeaderBytes + 24 + cells_.raw_bytes(); }

  // check_counts: the cells must be what (turnstile) updates can produce: Count-Min rows sum to the
  // net n; CountSketch rows have a signed sum of the parity of n (each update of count c changes
  // every row sum by ±c and n by c). Cells may be negative (deletions). Noisy private sketches skip
  // it: their cells carry noise by design. The 2^62 bound on |cell| and |n| holds for both.
  static LinearSketch deserialize(std::string_view bytes, bool check_counts = true) {
    return read_bytes(bytes, check_counts, /*wire=*/true);
  }
  // Reads serialize_bare() bytes: header flags 0 and the sketch's own key tag.
  static LinearSketch deserialize_bare(std::string_view bytes, bool check_counts) {
    return read_bytes(bytes, check_counts, /*wire=*/false);
  }

 private:
  std::string write_bytes(std::uint8_t tag, std::uint8_t flags) const {
    ByteWriter w;
    w.reserve(kHeaderBytes + 24 + cells_.raw_bytes() + kReleaseTrailerBytes);
    w.header(family, tag, flags);
    w.u32(width_);
    w.u32(depth_);
    w.u64(seed_);
    w.u64(n_);
    cells_.write(w);
    return w.take();
  }
  // Empty: what an untyped (key tag 0) sketch must be.
  bool all_zero() const noexcept { return n_ == 0 && cells_.all_zero(); }
  static LinearSketch read_bytes(std::string_view bytes, bool check_counts, bool wire) {
    ByteReader r(bytes);
    const HeaderInfo h = r.read_header(family, Traits::tag, 0, /*can_publish=*/false, /*untyped_ok=*/wire);
    if (!wire && h.release != ReleaseState{})
      throw DeserializeError("the inner sketch of a private sketch carries no release state");
    const std::uint32_t width = r.u32();
    const std::uint32_t depth = r.u32();
    if (width < 1 || depth < 1 || depth > kMaxDepth || std::uint64_t{width} * depth > kMaxCells)
      throw DeserializeError("sketch shape out of range");
    const std::uint64_t seed = r.u64();
    const std::int64_t n = r.i64();
    detail::CellStore::need(r, std::uint64_t{width} * depth);
    LinearSketch s(width, depth, seed);
    s.cells_.read(r);
    r.finish();
    s.n_ = n;
    if (h.untyped && !s.all_zero()) throw DeserializeError("an untyped sketch (key tag 0) must be empty");
    s.reset_mass();  // every |cell| and |n| <= 2^62 (turnstile cells and n may be negative)
    if (check_counts) s.check_counts();
    s.restore_wire(h);
    return s;
  }

  // AVX2 twin of the row hashes (common/simd.hpp), 4 rows per 256-bit vector: each row's
  // MultiplyAddShift parameters split into 32-bit halves for vpmuludq, and its first cell. Derived
  // from rows_ by prepare_update_and_estimate(); rows past depth_ are padding.
  static constexpr std::uint32_t kQuadMinDepth = 12;
  struct alignas(32) RowQuad {
    std::uint64_t a_lo[4], a_lo_hi[4], a_hi[4], a_hi_hi[4], b_lo_lo[4], b_lo_hi[4], b_hi[4], first_cell[4];
  };

  void build_quads() {
    quads_.assign((depth_ + 3) / 4, RowQuad{});
    for (std::uint32_t i = 0; i < depth_; ++i) {
      RowQuad& q = quads_[i / 4];
      const MultiplyAddShift& r = rows_[i];
      const unsigned j = i % 4;
      q.a_lo[j] = r.a_lo;
      q.a_lo_hi[j] = r.a_lo >> 32;
      q.a_hi[j] = r.a_hi;
      q.a_hi_hi[j] = r.a_hi >> 32;
      q.b_lo_lo[j] = r.b_lo & 0xffffffffu;
      q.b_lo_hi[j] = r.b_lo >> 32;
      q.b_hi[j] = r.b_hi;
      q.first_cell[j] = std::uint64_t{i} * width_;
    }
  }

#ifdef DPSKETCH_X86_DISPATCH
  // Cell index (row * w + column) of every row for fp into idx, and (CountSketch) its sign (+1 or
  // -1) into sgn, 4 rows at a time, exactly as the scalar path computes them: rows_[i](fp) (§4)
  // from 32 x 32 -> 64-bit partial products p_jk = a_lo[j] * x[k] (halves j, k): t0 = p00 +
  // b_lo[0], m = p01 + b_lo[1] + (t0 >> 32) and m2 = p10 + (m mod 2^32) never exceed 2^64 - 1,
  // and hi64(a_lo*x + b_lo) = p11 + (m >> 32) + (m2 >> 32). A scalar row costs a 64x64->128 mul
  // plus an imul on the one scalar multiplier; a quad here costs 7 vpmuludq and ~18 other vector
  // ops. All indices are computed before any cell is touched: updating each quad's cells inside
  // this loop would stall on reloads of just-stored indices.
  template <bool Pow2>
  __attribute__((target("avx2"))) void row_cells_avx2(std::uint64_t fp, std::uint64_t* idx, std::int64_t* sgn) const noexcept {
    const __m256i x0 = _mm256_set1_epi64x(static_cast<long long>(fp));
    const __m256i x1 = _mm256_set1_epi64x(static_cast<long long>(fp >> 32));
    const __m256i lo32 = _mm256_set1_epi64x(0xffffffff), one = _mm256_set1_epi64x(1);
    const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(shift_));
    const __m256i w = _mm256_set1_epi64x(width_);
    const RowQuad* const end = quads_.data() + quads_.size();
    std::size_t i = 0;
    for (const RowQuad* q = quads_.data(); q != end; ++q, i += 4) {
#define DPSKETCH_LD(field) _mm256_load_si256(reinterpret_cast<const __m256i*>(q->field))
      const __m256i a_lo = DPSKETCH_LD(a_lo), a_lo_hi = DPSKETCH_LD(a_lo_hi), a_hi = DPSKETCH_LD(a_hi);
      const __m256i t0 = _mm256_add_epi64(_mm256_mul_epu32(a_lo, x0), DPSKETCH_LD(b_lo_lo));
      const __m256i m = _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epu32(a_lo, x1), DPSKETCH_LD(b_lo_hi)), _mm256_srli_epi64(t0, 32));
      const __m256i m2 = _mm256_add_epi64(_mm256_mul_epu32(a_lo_hi, x0), _mm256_and_si256(m, lo32));
      const __m256i hi = _mm256_add_epi64(_mm256_mul_epu32(a_lo_hi, x1), _mm256_add_epi64(_mm256_srli_epi64(m, 32), _mm256_srli_epi64(m2, 32)));
      // + a_hi*x mod 2^64 + b_hi
      const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(DPSKETCH_LD(a_hi_hi), x0), _mm256_mul_epu32(a_hi, x1));
      __m256i h = _mm256_add_epi64(_mm256_add_epi64(hi, _mm256_mul_epu32(a_hi, x0)),
                                   _mm256_add_epi64(_mm256_slli_epi64(cross, 32), DPSKETCH_LD(b_hi)));
      if constexpr (Kind == SketchKind::count_sketch) {  // the sign itself, +1 or -1
        _mm256_store_si256(reinterpret_cast<__m256i*>(sgn + i), _mm256_or_si256(_mm256_sub_epi64(_mm256_and_si256(h, one), one), one));
        h = _mm256_andnot_si256(one, h);
      }
      __m256i col;
      if constexpr (Pow2) {
        col = _mm256_srl_epi64(h, shift);
      } else {  // reduce_range(h, w) = (h1*w + (h0*w >> 32)) >> 32 for w < 2^32
        col = _mm256_srli_epi64(
            _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(h, 32), w), _mm256_srli_epi64(_mm256_mul_epu32(h, w), 32)), 32);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(idx + i), _mm256_add_epi64(col, DPSKETCH_LD(first_cell)));
#undef DPSKETCH_LD
    }
  }

  void row_cells(std::uint64_t fp, std::uint64_t* idx, std::int64_t* sgn) const noexcept {
    if (shift_ != 0) row_cells_avx2<true>(fp, idx, sgn);
    else row_cells_avx2<false>(fp, idx, sgn);
  }
  std::int64_t update_and_min_avx2(std::uint64_t fp) noexcept {
    alignas(32) std::uint64_t idx[kMaxDepth + 1];
    row_cells(fp, idx, nullptr);
    return add_one_min(cells_.data(), idx, depth_);
  }
  void update_values_avx2(std::uint64_t fp, std::int64_t* v) noexcept {
    alignas(32) std::uint64_t idx[kMaxDepth + 1];
    alignas(32) std::int64_t sgn[kMaxDepth + 1];
    row_cells(fp, idx, sgn);
    add_signs(cells_.data(), idx, sgn, v, depth_);
  }
  // The cell loops behind the AVX2 indices, unrolled. Count-Min takes the min of the cells before
  // the increment, + 1 (the min then does not wait for the increments' stores).
  static std::int64_t add_one_min(std::int64_t* __restrict c, const std::uint64_t* __restrict idx, std::size_t d) noexcept {
    std::int64_t best0 = INT64_MAX, best1 = INT64_MAX;  // two cmov chains
    const auto row = [&](std::size_t r, std::int64_t& best) {
      const std::int64_t old = c[idx[r]];
      c[idx[r]] = old + 1;
      best = std::min(best, old);
    };
    const std::size_t d4 = d & ~std::size_t{3};
    for (std::size_t i = 0; i < d4; i += 4) {
      row(i, best0);
      row(i + 1, best1);
      row(i + 2, best0);
      row(i + 3, best1);
    }
    for (std::size_t i = d4; i < d; ++i) row(i, best0);
    return std::min(best0, best1) + 1;
  }
  // v = sign * (cell += sign); the multiply by +-1 wraps exactly like signed_value.
  static void add_signs(std::int64_t* __restrict c, const std::uint64_t* __restrict idx, const std::int64_t* __restrict sgn,
                        std::int64_t* __restrict v, std::size_t d) noexcept {
    const auto row = [&](std::size_t r) {
      const std::uint64_t cell = static_cast<std::uint64_t>(c[idx[r]]) + static_cast<std::uint64_t>(sgn[r]);
      c[idx[r]] = static_cast<std::int64_t>(cell);
      v[r] = static_cast<std::int64_t>(cell * static_cast<std::uint64_t>(sgn[r]));
    };
    const std::size_t d4 = d & ~std::size_t{3};
    for (std::size_t i = 0; i < d4; i += 4) {
      row(i);
      row(i + 1);
      row(i + 2);
      row(i + 3);
    }
    for (std::size_t i = d4; i < d; ++i) row(i);
  }
#else  // unreachable: use_quads_ stays false (simd::avx2() is false without dispatch)
  std::int64_t update_and_min_avx2(std::uint64_t) noexcept { return 0; }
  void update_values_avx2(std::uint64_t, std::int64_t*) noexcept {}
#endif

  // Column of hash h in every row: reduce_range(h, w) (CountSketch: of h & ~1), with a shift fast
  // path for w = 2^k (k >= 1), where reduce_range(h, w) = floor(h * 2^k / 2^64) = h >> (64 - k)
  // exactly.
  std::uint32_t column(std::uint64_t h) const noexcept {
    if constexpr (Kind == SketchKind::count_sketch) h &= ~std::uint64_t{1};
    return shift_ != 0 ? static_cast<std::uint32_t>(h >> shift_) : reduce_range(h, width_);
  }
  // CountSketch: 0 when sign_of(h) is +1, all ones when it is -1.
  static std::int64_t sign_mask(std::uint64_t h) noexcept { return static_cast<std::int64_t>(h & 1) - 1; }
  // sign * c for the sign encoded by mask m (wrapping like the two's-complement multiply).
  static std::int64_t signed_value(std::int64_t c, std::int64_t m) noexcept {
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(c) ^ static_cast<std::uint64_t>(m)) - static_cast<std::uint64_t>(m));
  }
  // 64 - log2(w) for w = 2^k with k >= 1, else 0 (general path).
  static unsigned pow2_shift(std::uint32_t w) noexcept {
    if (w < 2 || (w & (w - 1)) != 0) return 0;
    return 64 - static_cast<unsigned>(__builtin_ctz(w));
  }

  void check_counts() const {
    const std::int64_t* row = cells_.data();
    for (std::uint32_t i = 0; i < depth_; ++i, row += width_) {
      __int128 sum = 0;
      for (std::uint32_t j = 0; j < width_; ++j) sum += row[j];
      if (Kind == SketchKind::count_min ? sum != static_cast<__int128>(n_)
                                        : ((sum - static_cast<__int128>(n_)) & 1) != 0)
        throw DeserializeError("cells are inconsistent with the stream length");
    }
  }

  void add_fp(std::uint64_t fp, std::int64_t count) noexcept {
    std::int64_t* row = cells_.data();
    for (std::uint32_t i = 0; i < depth_; ++i, row += width_) {
      const std::uint64_t h = rows_[i](fp);
      if constexpr (Kind == SketchKind::count_min) {
        row[column(h)] += count;
      } else {
        const std::int64_t m = sign_mask(h);
        row[column(h)] += (count ^ m) - m;
      }
    }
    n_ += count;
  }

  std::uint32_t width_;
  std::uint32_t depth_;
  std::uint64_t seed_;
  std::uint64_t poly_seed_ = 1;
  std::int64_t n_ = 0;
  unsigned shift_ = 0;  // pow2_shift(width_)
  std::vector<MultiplyAddShift> rows_;
  std::vector<RowQuad> quads_;  // built by prepare_update_and_estimate() (d >= kQuadMinDepth)
  bool use_quads_ = false;       // ... and used when the CPU has AVX2
  // d x w, row-major; its mass (Σ|count| absorbed, + max |cell| when restored or noised) bounds
  // every |cell| and |n| (cell_store.hpp).
  detail::CellStore cells_;
};

template <class Key>
using CountMin = LinearSketch<Key, SketchKind::count_min>;
template <class Key>
using CountSketch = LinearSketch<Key, SketchKind::count_sketch>;

}  // namespace dpsketch
