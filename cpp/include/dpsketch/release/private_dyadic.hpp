// Private dyadic CountSketch (docs/algorithms.md §6, docs/privacy.md "Dyadic sketches (§6)"): a
// DyadicCountSketch whose every cell got one noise draw when it was built (or, for a merged
// non-private sketch, once at the aggregator: from_sketch). Level ℓ's cells get DGauss(σ_ℓ²) or
// DLap(b_ℓ); the per-level parameters are computed by the Python layer from ρ or ε, the allocation
// (joint: one σ² for all levels; Zhao: ρ split evenly) and the neighbour model, and are stored here
// so the object is self-describing. Everything computed afterwards is post-processing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/noise/samplers.hpp"
#include "dpsketch/release/private_sketch.hpp"

namespace dpsketch::dyadic {

inline constexpr Family kPrivateDyadicFamily = static_cast<Family>(9);

enum class Allocation : std::uint8_t { joint = 1, zhao = 2 };
enum class Neighbours : std::uint8_t { add_remove = 1, replace = 2 };

struct DyadicNoise {
  release::NoiseKind kind = release::NoiseKind::gaussian;
  Allocation allocation = Allocation::joint;
  Neighbours neighbours = Neighbours::add_remove;
  std::vector<noise::Rational> level_params;  // index ℓ - 1: Laplace scale or Gaussian σ² of level ℓ
};

class PrivateDyadicCountSketch : public WireState<true> {
 public:
  // A fresh private sketch: zero cells, then noise (ready for updates).
  PrivateDyadicCountSketch(std::uint64_t bits, std::uint64_t width, std::uint64_t depth, std::uint64_t hash_seed,
                           DyadicNoise spec, noise::SecureRng& rng)
      : sketch_(bits, width, depth, hash_seed), spec_(std::move(spec)) {
    check_spec();
    add_noise(rng);
  }
  // The aggregator route (§8): noise added once to a (merged) non-private sketch. With the same
  // hash seed and the same generator state as a fresh private object this gives identical cells.
  PrivateDyadicCountSketch(const DyadicCountSketch& s, DyadicNoise spec, noise::SecureRng& rng)
      : sketch_(s), spec_(std::move(spec)) {
    check_spec();
    add_noise(rng);
  }

  // Updates (turnstile, as DyadicCountSketch); refused once the length is withheld.
  void update(std::uint64_t x, std::int64_t count) {
    check_writable();
    sketch_.update(x, count);
  }
  void update_many(const std::uint64_t* items, const std::int64_t* counts, std::size_t m) {
    check_writable();
    sketch_.update_many(items, counts, m);
  }

  // Makes this the published form (docs/privacy.md §Publishing): n and the gross absorbed mass are
  // dropped (see DyadicCountSketch::withhold_length) and updates are refused from now on.
  void withhold_length() noexcept {
    sketch_.withhold_length();
    length_withheld_ = true;
  }
  bool length_withheld() const noexcept { return length_withheld_; }

  DyadicCountSketch& sketch() noexcept { return sketch_; }
  const DyadicCountSketch& sketch() const noexcept { return sketch_; }
  const DyadicNoise& noise_spec() const noexcept { return spec_; }
  std::size_t memory_bytes() const noexcept {
    return sketch_.memory_bytes() + sizeof(spec_) + spec_.level_params.capacity() * sizeof(noise::Rational);
  }

  // Payload: kind u8 (| release::kLengthWithheldBit), allocation u8, neighbours u8, L u8,
  // L x (num u64, den u64), then the sketch payload (as family 5, without its header; withheld:
  // n = 0 and mass = max |cell|), then checksum64 of everything before it (u64).
  std::string serialize() const {
    ByteWriter w;
    w.header(kPrivateDyadicFamily, kDyadicKeyTag, wire_flags(0));
    w.u8(static_cast<std::uint8_t>(static_cast<std::uint8_t>(spec_.kind) |
                                   (length_withheld_ ? release::kLengthWithheldBit : 0)));
    w.u8(static_cast<std::uint8_t>(spec_.allocation));
    w.u8(static_cast<std::uint8_t>(spec_.neighbours));
    w.u8(static_cast<std::uint8_t>(spec_.level_params.size()));
    for (const auto& p : spec_.level_params) {
      w.u64(p.num);
      w.u64(p.den);
    }
    sketch_.write_payload(w);
    std::string out = w.take();
    append_checksum(out);
    append_trailer(out);
    return out;
  }

  // serialize().size(), without writing the bytes.
  std::size_t serialized_size() const noexcept {
    return kHeaderBytes + 4 + 16 * spec_.level_params.size() + sketch_.payload_size() + 8 + trailer_bytes();
  }

  static PrivateDyadicCountSketch deserialize(std::string_view bytes) {
    ByteReader r(bytes);
    const HeaderInfo h = read_checked_header(r, kPrivateDyadicFamily, /*can_publish=*/true);
    DyadicNoise spec;
    const std::uint8_t kind_byte = r.u8(), alloc = r.u8(), nb = r.u8(), levels = r.u8();
    const bool withheld = (kind_byte & release::kLengthWithheldBit) != 0;
    const std::uint8_t kind = kind_byte & static_cast<std::uint8_t>(~release::kLengthWithheldBit);
    if (kind != 1 && kind != 2) throw DeserializeError("unknown noise kind");
    if (alloc != 1 && alloc != 2) throw DeserializeError("unknown noise allocation");
    if (nb != 1 && nb != 2) throw DeserializeError("unknown neighbour model");
    if (levels < 1 || levels > kMaxUniverseBits) throw DeserializeError("level count out of range");
    spec.kind = static_cast<release::NoiseKind>(kind);
    spec.allocation = static_cast<Allocation>(alloc);
    spec.neighbours = static_cast<Neighbours>(nb);
    spec.level_params.resize(levels);
    for (auto& p : spec.level_params) {
      p.num = r.u64();
      p.den = r.u64();
    }
    DyadicCountSketch s = DyadicCountSketch::read_payload(r, /*check_counts=*/false);
    r.finish();
    if (s.bits() != levels) throw DeserializeError("noise parameters do not match the number of levels");
    // One canonical withheld form, so the n and mass fields can carry nothing about the data.
    if (withheld && (s.n() != 0 || s.mass() != s.max_cell()))
      throw DeserializeError("a withheld length must be written as n = 0 and mass = max |cell|");
    PrivateDyadicCountSketch p(std::move(s), std::move(spec));
    p.length_withheld_ = withheld;
    p.restore_wire(h);
    try {
      p.check_spec();
    } catch (const std::exception&) {
      throw DeserializeError("noise parameters out of range");
    }
    return p;
  }

 private:
  PrivateDyadicCountSketch(DyadicCountSketch&& s, DyadicNoise&& spec) : sketch_(std::move(s)), spec_(std::move(spec)) {}

  void check_writable() const {
    if (length_withheld_) throw release::LengthWithheldError();
  }

  void check_spec() const {
    if (spec_.level_params.size() != sketch_.bits())
      throw ParameterError("need one noise parameter per level (" + std::to_string(sketch_.bits()) + ")");
    for (const auto& p : spec_.level_params) {
      if (p.num == 0 || p.den == 0) throw ParameterError("noise parameters must be positive");
      // The samplers' own range checks (Laplace scale < 2^48; Gaussian exact-arithmetic domain).
      if (spec_.kind == release::NoiseKind::laplace) noise::DiscreteLaplace{p};
      else noise::DiscreteGaussian{p};
    }
  }

  void add_noise(noise::SecureRng& rng) {
    for (std::uint32_t j = 1; j <= sketch_.bits(); ++j) {
      const noise::Rational p = spec_.level_params[j - 1];
      if (spec_.kind == release::NoiseKind::laplace) {
        const noise::DiscreteLaplace draw(p);
        sketch_.add_level_noise(j, [&] { return draw(rng); });
      } else {
        const noise::DiscreteGaussian draw(p);
        sketch_.add_level_noise(j, [&] { return draw(rng); });
      }
    }
    sketch_.account_noise();
  }

  DyadicCountSketch sketch_;
  DyadicNoise spec_;
  bool length_withheld_ = false;
};

}  // namespace dpsketch::dyadic
