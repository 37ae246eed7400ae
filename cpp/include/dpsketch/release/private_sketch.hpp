// Count-Min / CountSketch as DP frequency oracles (docs/algorithms.md §4): noise is added once, at
// construction, to every cell, so every estimate ever computed comes from a DP object and the whole
// noisy sketch (cells + hash seed) can be published, serialized and queried (post-processing).
//   Pure DP (Holland):  every cell += DLap(Δ/ε), Δ = ℓ1-sensitivity = number of noisy rows.
//   zCDP (Zhao):        every cell += DGauss(σ²), σ² = d/(2ρ) (ℓ2-sensitivity √d); Count-Min adds
//                       the shift E = ceil(σ·sqrt(2 ln(2dw/β))) + 1 to every cell.
// Optionally (CountSketch inside the §5 wrapper) one extra unsigned row B, +1 per update, noised
// like every cell; it bounds F2 deterministically: F2 <= Σ_j (|B̃_j| + γ_N)² (§5).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpsketch/common/serialization.hpp"
#include "dpsketch/noise/samplers.hpp"
#include "dpsketch/sketches/cell_store.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace dpsketch::release {

enum class NoiseKind : std::uint8_t { laplace = 1, gaussian = 2 };

struct NoiseSpec {
  NoiseKind kind = NoiseKind::laplace;
  noise::Rational param{1, 1};  // Laplace scale Δ/ε, or Gaussian variance σ²
  std::int64_t shift = 0;       // added to every sketch cell (zCDP Count-Min), 0 otherwise
  // The neighbour model param was calibrated for (docs/privacy.md "Dyadic sketches (§6)", replace
  // neighbours): recorded so a restored sketch reports its guarantee. Serialized as bit 4 of the
  // noise-kind byte (0 for add/remove, so older bytes read unchanged).
  bool replace_neighbours = false;
};
inline constexpr std::uint8_t kReplaceNeighboursBit = 0x10;
// Bit 5 of the noise-kind byte: the length is withheld (a published copy, docs/privacy.md
// §Publishing): the n field is written as 0 and is no stream length.
inline constexpr std::uint8_t kLengthWithheldBit = 0x20;

// Updating a published copy (whose length is withheld). RuntimeError in Python.
struct LengthWithheldError : std::logic_error {
  LengthWithheldError()
      : std::logic_error("this sketch is a published copy (its stream length is withheld) and is read-only; "
                         "keep updating the original") {}
};

inline constexpr std::uint8_t kPrivateFamilyOffset = 4;  // families 7/8: private CM/CS

template <class Key, SketchKind Kind>
class PrivateSketch : public WireState<true> {
  using Sketch = LinearSketch<Key, Kind>;
  using View = typename KeyTraits<Key>::view_type;

 public:
  using key_type = Key;
  using sketch_type = Sketch;
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

  // Trusted-aggregator release (docs/algorithms.md §8): privatise a finished non-private sketch
  // (e.g. the merge of per-worker sketches) once. The noise is drawn cell by cell in the same order
  // as the constructor draws it, and addition commutes, so with the same hash seed and the same
  // noise stream the cells equal those of the single-stream private sketch fed the same items:
  // exactly its distribution.
  static PrivateSketch from_sketch(const Sketch& s, NoiseSpec spec, noise::SecureRng& rng) {
    PrivateSketch p(s, spec);
    p.add_noise(rng);
    return p;
  }

  std::uint64_t fingerprint(const View& x) const noexcept { return sketch_.fingerprint(x); }
  // Unit update: throws StreamLimitError (nothing changed) when the sketch's mass would pass 2^62
  // (kMaxCellMass; the mass also covers the F2 row: every |F2 cell| <= mass).
  void update(const View& x) { update_fp(fingerprint(x)); }
  // Turnstile update (signed count). The F2 row of §5 bounds F2 only for insertions, so a sketch
  // carrying it takes unit insertions only.
  void update(const View& x, std::int64_t count) {
    check_counted();
    check_writable();
    sketch_.update(x, count);
  }
  template <class Items>
  void update_many_counted(const Items& items, const std::int64_t* counts, std::size_t m) {
    check_counted();
    check_writable();
    sketch_.update_many_counted(items, counts, m);
  }
  static std::uint64_t batch_mass(const std::int64_t* counts, std::size_t m) { return Sketch::batch_mass(counts, m); }
  void reserve_mass(std::uint64_t a) {
    check_counted();
    check_writable();
    sketch_.reserve_mass(a);
  }
  void add_reserved(const View& x, std::int64_t count) noexcept { sketch_.add_reserved(x, count); }
  void update_fp(std::uint64_t fp) {
    check_writable();
    sketch_.update_fp(fp);  // checks the limit before changing anything
    if (!f2_cells_.empty()) f2_cells_[reduce_range(f2_hash_(fp), sketch_.width())] += 1;
  }
  void check_room(std::uint64_t more) const {
    check_writable();
    sketch_.check_room(more);
  }
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
  std::int64_t n() const noexcept { return sketch_.n(); }  // 0 when the length is withheld

  // Makes this the published form (docs/privacy.md §Publishing): the exact length and the mass
  // bound derived from it are dropped (the mass restarts from the noisy cells), and updates are
  // refused from now on, so no later state can pair the noisy cells with an exact count.
  void withhold_length() {
    sketch_.withhold_length();
    sketch_.cover_mass(max_magnitude(f2_cells_));
    length_withheld_ = true;
  }
  bool length_withheld() const noexcept { return length_withheld_; }
  std::size_t memory_bytes() const noexcept {
    return sizeof(*this) + sketch_.memory_bytes() - sizeof(Sketch) + f2_cells_.capacity() * 8;
  }

  // Payload: noise kind u8 (| kReplaceNeighboursBit, | kLengthWithheldBit), param num u64, den u64,
  // shift i64, f2 width u32 (0: none), f2 cells, then the inner sketch's own serialization
  // (length-prefixed; its n is 0 when the length is withheld).
  std::string serialize() const {
    ByteWriter w;
    w.header(static_cast<Family>(static_cast<std::uint8_t>(Sketch::family) + kPrivateFamilyOffset),
             wire_key_tag(KeyTraits<Key>::tag, untyped_ && sketch_.n() == 0), wire_flags(0));
    w.u8(static_cast<std::uint8_t>(static_cast<std::uint8_t>(spec_.kind) |
                                   (spec_.replace_neighbours ? kReplaceNeighboursBit : 0) |
                                   (length_withheld_ ? kLengthWithheldBit : 0)));
    w.u64(spec_.param.num);
    w.u64(spec_.param.den);
    w.i64(spec_.shift);
    w.u32(static_cast<std::uint32_t>(f2_cells_.size()));
    w.raw(f2_cells_.data(), f2_cells_.size() * 8);
    w.bytes(sketch_.serialize_bare());
    std::string out = w.take();
    append_trailer(out);
    return out;
  }

  // serialize().size(), without writing the bytes.
  std::size_t serialized_size() const noexcept {
    return kHeaderBytes + 1 + 8 + 8 + 8 + 4 + f2_cells_.size() * 8 + 4 + sketch_.serialized_size_bare() +
           trailer_bytes();
  }

  static PrivateSketch deserialize(std::string_view bytes) {
    ByteReader r(bytes);
    const HeaderInfo h = r.read_header(static_cast<Family>(static_cast<std::uint8_t>(Sketch::family) + kPrivateFamilyOffset),
                                       KeyTraits<Key>::tag, 0, /*can_publish=*/true, /*untyped_ok=*/true);
    NoiseSpec spec;
    const std::uint8_t kind_byte = r.u8();
    const std::uint8_t kind = kind_byte & 0x0f;
    if ((kind != 1 && kind != 2) || (kind_byte & 0xf0 & ~(kReplaceNeighboursBit | kLengthWithheldBit)) != 0)
      throw DeserializeError("unknown noise kind");
    spec.replace_neighbours = (kind_byte & kReplaceNeighboursBit) != 0;
    const bool withheld = (kind_byte & kLengthWithheldBit) != 0;
    spec.kind = static_cast<NoiseKind>(kind);
    spec.param.num = r.u64();
    spec.param.den = r.u64();
    if (spec.param.num == 0 || spec.param.den == 0) throw DeserializeError("noise parameter must be positive");
    spec.shift = r.i64();
    if (spec.shift < -static_cast<std::int64_t>(kMaxCellMass) || spec.shift > static_cast<std::int64_t>(kMaxCellMass))
      throw DeserializeError("shift exceeds 2^62 in magnitude");
    const std::uint32_t f2w = r.u32();
    r.need_records(f2w, 8, "F2 cells");
    std::vector<std::int64_t> f2(f2w);
    r.raw(f2.data(), f2.size() * 8, "F2 cells");
    const std::string_view inner = r.bytes();
    r.finish();
    PrivateSketch p(Sketch::deserialize_bare(inner, /*check_counts=*/false), spec);
    if (h.untyped && p.sketch_.n() != 0) throw DeserializeError("an untyped sketch (key tag 0) must be empty");
    // A withheld length is written as 0 (one canonical form: the field can carry nothing else).
    if (withheld && p.sketch_.n() != 0) throw DeserializeError("a withheld stream length must be written as 0");
    p.length_withheld_ = withheld;
    if (f2w != 0 && f2w != p.sketch_.width()) throw DeserializeError("F2 row width must equal the sketch width");
    p.sketch_.cover_mass(max_magnitude(f2));  // unit updates move F2 cells too
    if (f2w) {
      std::uint64_t state = p.sketch_.seed() ^ 0xf2f2f2f2f2f2f2f2ULL;
      p.f2_hash_ = MultiplyAddShift::from_stream(state);
    }
    p.f2_cells_ = std::move(f2);
    p.restore_wire(h);
    return p;
  }

 private:
  PrivateSketch(Sketch s, NoiseSpec spec) : sketch_(std::move(s)), spec_(spec) {
    sketch_.set_untyped(false);  // the inner sketch is written bare; its own marks mean nothing here
    sketch_.set_release_state(ReleaseState{});
  }

  static std::uint64_t max_magnitude(const std::vector<std::int64_t>& cells) noexcept {
    return detail::max_magnitude(cells.data(), cells.size());
  }
  void check_writable() const {
    if (length_withheld_) throw LengthWithheldError();
  }
  void check_counted() const {
    if (!f2_cells_.empty())
      throw ParameterError("this sketch carries the F2 row of the heavy-hitter wrapper, which needs insertions "
                           "only; update without counts");
  }

  template <class Draw>
  void fill(Draw& draw, noise::SecureRng& rng) {
    // += : cells are 0 when constructed empty, the counts when built by from_sketch.
    for (std::int64_t& c : sketch_.mutable_cells()) c += draw(rng) + spec_.shift;
    for (std::int64_t& c : f2_cells_) c += draw(rng);
    sketch_.reset_mass();
    sketch_.cover_mass(max_magnitude(f2_cells_));
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
  bool length_withheld_ = false;
};

}  // namespace dpsketch::release
