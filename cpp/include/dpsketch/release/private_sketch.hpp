// Count-Min / CountSketch as DP frequency oracles (ALGORITHMS.md §4): noise is added once, at
// construction, to every cell, so every estimate ever computed comes from a DP object and the whole
// noisy sketch (cells + hash seed) can be published, serialized and queried (post-processing).
//   Pure DP (Holland):  every cell += DLap(Δ/ε), Δ = ℓ1-sensitivity = number of noisy rows.
//   zCDP (Zhao):        every cell += DGauss(σ²), σ² = d/(2ρ) (ℓ2-sensitivity √d); Count-Min adds
//                       the shift E = ceil(σ·sqrt(2 ln(2dw/β))) + 1 to every cell.
// Optionally (CountSketch inside the §5 wrapper) one extra unsigned row B, +1 per update, noised
// like every cell; it bounds F2 deterministically: F2 <= Σ_j (|B̃_j| + γ_N)² (§5).
#pragma once

#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "dpsketch/common/serialization.hpp"
#include "dpsketch/noise/samplers.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace dpsketch::release {

enum class NoiseKind : std::uint8_t { laplace = 1, gaussian = 2 };

struct NoiseSpec {
  NoiseKind kind = NoiseKind::laplace;
  noise::Rational param{1, 1};  // Laplace scale Δ/ε, or Gaussian variance σ²
  std::int64_t shift = 0;       // added to every sketch cell (zCDP Count-Min), 0 otherwise
};

inline constexpr std::uint8_t kPrivateFamilyOffset = 4;  // families 7/8: private CM/CS

template <class Key, SketchKind Kind>
class PrivateSketch {
  using Sketch = LinearSketch<Key, Kind>;
  using View = typename KeyTraits<Key>::view_type;

 public:
  using key_type = Key;
  using estimate_type = typename Sketch::estimate_type;

  PrivateSketch(std::uint64_t width, std::uint64_t depth, std::uint64_t hash_seed, NoiseSpec spec, bool f2_row,
                noise::SecureRng& rng)
      : sketch_(width, depth, hash_seed), spec_(spec) {
    if (f2_row) {
      std::uint64_t state = hash_seed ^ 0xf2f2f2f2f2f2f2f2ULL;  // its own independent bucket hash
      f2_hash_ = MultiplyAddShift::from_stream(state);
      f2_cells_.assign(width, 0);
    }
    add_noise(rng);
  }

  std::uint64_t fingerprint(const View& x) const noexcept { return sketch_.fingerprint(x); }
  // Throws StreamLimitError (nothing changed) when n would exceed kMaxStreamLength (limits.hpp);
  // then every cell, the F2 row's included, keeps |cell| <= n + kMaxCellExcess.
  void update(const View& x) { update_fp(fingerprint(x)); }
  void update_fp(std::uint64_t fp) {
    sketch_.update_fp(fp);  // checks the limit before changing anything
    if (!f2_cells_.empty()) f2_cells_[reduce_range(f2_hash_(fp), sketch_.width())] += 1;
  }
  void check_room(std::uint64_t more) const { sketch_.check_room(more); }
  // All-or-nothing at the stream limit.
  template <class It>
  void update_many(It first, It last) {
    check_room(static_cast<std::uint64_t>(std::distance(first, last)));
    for (; first != last; ++first) update(*first);
  }
  void prepare_update_and_estimate() { sketch_.prepare_update_and_estimate(); }
  estimate_type update_and_estimate_fp(std::uint64_t fp) {
    sketch_.check_room(1);  // before the F2 row changes
    if (!f2_cells_.empty()) f2_cells_[reduce_range(f2_hash_(fp), sketch_.width())] += 1;
    return sketch_.update_and_estimate_fp(fp);
  }
  estimate_type estimate(const View& x) const noexcept { return sketch_.estimate(x); }
  estimate_type estimate_fp(std::uint64_t fp) const noexcept { return sketch_.estimate_fp(fp); }

  // §5: F2_up = Σ_j (|B̃_j| + γ_N)² >= Σ_j B_j² >= F2 whenever every |noise| <= γ_N.
  long double f2_upper(long double gamma_n) const {
    long double s = 0;
    for (std::int64_t c : f2_cells_) {
      const long double a = std::fabs(static_cast<long double>(c)) + gamma_n;
      s += a * a;
    }
    return s;
  }

  bool has_f2_row() const noexcept { return !f2_cells_.empty(); }
  std::uint64_t noisy_cells() const noexcept { return sketch_.cells().size() + f2_cells_.size(); }
  const Sketch& sketch() const noexcept { return sketch_; }
  const NoiseSpec& noise_spec() const noexcept { return spec_; }
  const std::vector<std::int64_t>& f2_cells() const noexcept { return f2_cells_; }
  std::uint64_t n() const noexcept { return sketch_.n(); }
  std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + sketch_.memory_bytes() - sizeof(Sketch) + f2_cells_.capacity() * 8;
  }

  // Payload: noise kind u8, param num u64, den u64, shift i64, f2 width u32 (0: none), f2 cells,
  // then the inner sketch's own serialization (length-prefixed).
  std::string serialize() const {
    ByteWriter w;
    w.header(static_cast<Family>(static_cast<std::uint8_t>(Sketch::family) + kPrivateFamilyOffset), KeyTraits<Key>::tag);
    w.u8(static_cast<std::uint8_t>(spec_.kind));
    w.u64(spec_.param.num);
    w.u64(spec_.param.den);
    w.i64(spec_.shift);
    w.u32(static_cast<std::uint32_t>(f2_cells_.size()));
    w.raw(f2_cells_.data(), f2_cells_.size() * 8);
    w.bytes(sketch_.serialize());
    return w.take();
  }

  static PrivateSketch deserialize(std::string_view bytes) {
    ByteReader r(bytes);
    r.header(static_cast<Family>(static_cast<std::uint8_t>(Sketch::family) + kPrivateFamilyOffset), KeyTraits<Key>::tag);
    NoiseSpec spec;
    const std::uint8_t kind = r.u8();
    if (kind != 1 && kind != 2) throw DeserializeError("unknown noise kind");
    spec.kind = static_cast<NoiseKind>(kind);
    spec.param.num = r.u64();
    spec.param.den = r.u64();
    if (spec.param.num == 0 || spec.param.den == 0) throw DeserializeError("noise parameter must be positive");
    spec.shift = r.i64();
    if (!cell_within_limit(spec.shift, 0)) throw DeserializeError("shift exceeds the cell limit");
    const std::uint32_t f2w = r.u32();
    r.need_records(f2w, 8, "F2 cells");
    std::vector<std::int64_t> f2(f2w);
    r.raw(f2.data(), f2.size() * 8, "F2 cells");
    const std::string_view inner = r.bytes();
    r.finish();
    PrivateSketch p(Sketch::deserialize(inner, /*check_counts=*/false), spec);
    if (f2w != 0 && f2w != p.sketch_.width()) throw DeserializeError("F2 row width must equal the sketch width");
    for (const std::int64_t c : f2)
      if (!cell_within_limit(c, p.sketch_.n())) throw DeserializeError("an F2 cell exceeds the cell limit |cell| <= n + 2^62 - 1");
    if (f2w) {
      std::uint64_t state = p.sketch_.seed() ^ 0xf2f2f2f2f2f2f2f2ULL;
      p.f2_hash_ = MultiplyAddShift::from_stream(state);
    }
    p.f2_cells_ = std::move(f2);
    return p;
  }

 private:
  PrivateSketch(Sketch s, NoiseSpec spec) : sketch_(std::move(s)), spec_(spec) {}

  // Noise (plus shift) is the cells' excess over n = 0; it must stay within kMaxCellExcess
  // (limits.hpp) so later updates cannot overflow. Real draws are many orders of magnitude smaller.
  template <class Draw>
  void fill(Draw& draw, noise::SecureRng& rng) {
    const auto checked = [](std::int64_t z, std::int64_t shift) {
      std::int64_t c;
      if (__builtin_add_overflow(z, shift, &c) || !cell_within_limit(c, 0))
        throw ParameterError("noise plus shift exceeds the cell limit of 2^62 - 1; use a smaller noise scale or shift");
      return c;
    };
    for (std::int64_t& c : sketch_.mutable_cells()) c = checked(draw(rng), spec_.shift);
    for (std::int64_t& c : f2_cells_) c = checked(draw(rng), 0);
  }
  void add_noise(noise::SecureRng& rng) {
    if (spec_.kind == NoiseKind::laplace) {
      const noise::DiscreteLaplace draw(spec_.param);
      fill(draw, rng);
    } else {
      const noise::DiscreteGaussian draw(spec_.param);
      fill(draw, rng);
    }
  }

  Sketch sketch_;
  NoiseSpec spec_;
  MultiplyAddShift f2_hash_;
  std::vector<std::int64_t> f2_cells_;
};

}  // namespace dpsketch::release
