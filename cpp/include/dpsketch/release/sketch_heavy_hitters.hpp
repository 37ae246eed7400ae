// Heavy hitters from a pure-DP frequency oracle: Holland's error-envelope wrapper (docs/algorithms.md §5).
//
// State: a noisy Count-Min or CountSketch (noise at construction, §4) plus at most k̃ candidates in
// an indexed min-heap keyed by the noisy estimate at their latest arrival. update(x): add x, read
// e = estimate(x) in the same pass; candidate -> re-key; fewer than k̃ -> insert; e > heap min ->
// replace the min. Release: candidates whose FINAL estimate exceeds max(τ, n/k - γ2(n)) with
// τ = n/k̃ + 1 + γ2(n) + 2γ1(n). Envelopes (δ_env = δ/(1 + e^ε) = δ_N + δ_C, δ_N = δ_C = δ_env/2):
//   noise  γ_N = the integer cell-noise bound for δ_N, Δ = d (Count-Min) or d + 1 (CountSketch with its F2 row);
//   Count-Min   γ2 = γ_N, γ1(t) = 2t/w + γ_N;
//   CountSketch γ1 = γ2 = 4 sqrt(F2_up/w) + γ_N, F2_up from the noisy unsigned row;
//   depth       d >= log2((n_max + k̃)/δ_C).
// (epsilon, delta) in EnvelopeParams are the mechanism's own share of the caller's budget
// (calibration.hpp); the length bounds come with the release.
#pragma once

#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

#include "dpsketch/common/limits.hpp"
#include "dpsketch/common/slot_table.hpp"
#include "dpsketch/release/private_sketch.hpp"
#include "dpsketch/release/release.hpp"

namespace dpsketch::release {

struct EnvelopeParams {
  std::uint64_t k = 0, capacity = 0, width = 0, depth = 0, max_stream_length = 0;
  double epsilon = 0, delta = 0;
};

template <class Key, SketchKind Kind>
class SketchHeavyHitters {
  using Traits = KeyTraits<Key>;
  using View = typename Traits::view_type;
  using Oracle = PrivateSketch<Key, Kind>;
  static constexpr std::int32_t kNone = -1;

 public:
  using key_type = Key;
  using estimate_type = typename Oracle::estimate_type;
  static constexpr bool is_count_min = Kind == SketchKind::count_min;

  // Validates the parameters against §5 and builds the noisy oracle. hash_seed: public hashes.
  SketchHeavyHitters(const EnvelopeParams& p, std::uint64_t hash_seed, noise::SecureRng& rng)
      : p_(checked(p)), eps_(p.epsilon),
        oracle_(p_.width, p_.depth, hash_seed,
                NoiseSpec{NoiseKind::laplace, noise::laplace_scale(sensitivity(p_), eps_.exact), 0},  // DLap(Δ/ε), §5
                /*f2_row=*/!is_count_min, rng),
        keys_(p.capacity), est_(p.capacity), heap_(), pos_(p.capacity, kNone), table_(static_cast<std::uint32_t>(p.capacity)) {
    heap_.reserve(p.capacity);
    oracle_.prepare_update_and_estimate();  // AVX2 row tables for the per-update estimate
  }

  static std::uint64_t sensitivity(const EnvelopeParams& p) { return is_count_min ? p.depth : p.depth + 1; }
  // δ_N = δ_C = δ_env/2 (thresholds.hpp envelope_delta), from the ε actually used.
  static real half_envelope_delta(const EnvelopeParams& p) {
    return envelope_delta(Epsilon(p.epsilon).value, p.delta) / 2;
  }

  static EnvelopeParams checked(EnvelopeParams p) {
    check_eps_delta(p.epsilon, p.delta);
    if (p.k < 1) throw ParameterError("k must be >= 1");
    if (p.capacity <= p.k)
      throw ParameterError("capacity (k̃) must exceed k (got capacity " + std::to_string(p.capacity) + ", k " +
                           std::to_string(p.k) + "); the paper uses capacity = 4k");
    if (p.capacity > kMaxCapacity) throw ParameterError("capacity too large");
    if (p.max_stream_length < 1) throw ParameterError("max_stream_length must be >= 1");
    const std::uint64_t dmin = envelope_min_depth(p.max_stream_length, p.capacity, half_envelope_delta(p));
    if (p.depth == 0) p.depth = dmin > 32 ? dmin : 32;  // paper: d >= 32
    if (p.depth < dmin)
      throw ParameterError("depth " + std::to_string(p.depth) + " is too small for the error envelope: need depth >= " +
                           std::to_string(dmin) + " = log2((max_stream_length + capacity)/delta_C), delta_C = delta/(2(1 + e^epsilon)); "
                           "omit depth to derive it");
    if (p.width == 0) p.width = (is_count_min ? 2 : 3) * p.capacity;  // paper: w = 2k̃ (CM) or 3k̃ (CS)
    check_shape(p.width, p.depth);
    return p;
  }

  // Throws StreamLimitError (nothing changed) at the stream limit of 2^62 (common/limits.hpp).
  void check_room(std::uint64_t more) const { oracle_.check_room(more); }
  // All-or-nothing at the stream limit.
  template <class It>
  void update_many(It first, It last) {
    check_room(static_cast<std::uint64_t>(std::distance(first, last)));
    for (; first != last; ++first) update(*first);
  }

  void update(const View& x) {
    const std::uint64_t fp = oracle_.fingerprint(x);
    const estimate_type e = oracle_.update_and_estimate_fp(fp);
    const std::uint64_t h = Traits::table_hash(x);
    std::int32_t s = table_.find(h, x, keys_);
    if (s != kNone) {
      est_[s] = e;
      if constexpr (is_count_min) sift_down(pos_[s]);  // Count-Min cells only grow: the key did not decrease
      else sift_down(sift_up(pos_[s]));
    } else if (heap_.size() < p_.capacity) {
      s = static_cast<std::int32_t>(heap_.size());
      Traits::assign(keys_[s], x);
      table_.insert(h, s);
      est_[s] = e;
      heap_.push_back(s);
      sift_up(heap_.size() - 1);
    } else if (e > est_[heap_[0]]) {
      s = heap_[0];
      table_.erase_slot(s);
      Traits::assign(keys_[s], x);
      table_.insert(h, s);
      est_[s] = e;
      sift_down(0);
    }
  }

  // L: the length bounds (noisy n̂ ∓ t_n, or a public n), drawn by the caller before this call.
  Release<Key, estimate_type> release(const Length& L) const {
    if (static_cast<std::uint64_t>(oracle_.n()) > p_.max_stream_length)  // update paths refuse this earlier; a guard for restored states
      throw ParameterError("the stream is longer than max_stream_length; the depth (and so the envelope) was derived for " +
                           std::to_string(p_.max_stream_length) + " items. Rebuild with a larger max_stream_length");
    if (L.kind == Length::Kind::unused) throw ParameterError("the envelope needs a length (noisy bounds or a public n)");
    const real eps = eps_.value;
    const real delta_n = half_envelope_delta(p_);
    const std::uint64_t delta_sens = sensitivity(p_);
    const real gamma_n = envelope_noise(delta_sens, eps, oracle_.noisy_cells(), delta_n);
    const real w = static_cast<real>(p_.width);
    real gamma1, gamma2, f2_up = 0;
    if constexpr (is_count_min) {
      gamma2 = gamma_n;
      gamma1 = 2 * L.n_up / w + gamma_n;  // Markov per row at 1/2, n_up >= n (§0)
    } else {
      f2_up = oracle_.f2_upper(gamma_n);
      gamma1 = gamma2 = 4 * std::sqrt(f2_up / w) + gamma_n;  // Chebyshev per row at 1/16
    }
    const real tau = L.n_up / static_cast<real>(p_.capacity) + 1 + gamma2 + 2 * gamma1;
    const real hh = L.n_lo / static_cast<real>(p_.k) - gamma2;
    const real cut = tau > hh ? tau : hh;

    Release<Key, estimate_type> rel;
    for (std::int32_t s : heap_) {
      const estimate_type v = oracle_.estimate(keys_[s]);  // the final estimate, not the heap key
      if (static_cast<real>(v) > cut) rel.items.emplace_back(keys_[s], v);
    }
    rel.sort_items();
    rel.threshold = static_cast<double>(cut);
    rel.note("epsilon_used", static_cast<double>(eps));
    rel.note("k", static_cast<double>(p_.k));
    rel.note("capacity", static_cast<double>(p_.capacity));
    rel.note("width", static_cast<double>(p_.width));
    rel.note("depth", static_cast<double>(p_.depth));
    rel.note("noisy_cells", static_cast<double>(oracle_.noisy_cells()));
    rel.note("l1_sensitivity", static_cast<double>(delta_sens));
    rel.note("delta_noise", static_cast<double>(delta_n));
    rel.note("delta_hash", static_cast<double>(delta_n));
    rel.note("delta_envelope", static_cast<double>(2 * delta_n));
    rel.note("max_stream_length", static_cast<double>(p_.max_stream_length));
    rel.note("gamma_noise", static_cast<double>(gamma_n));
    rel.note("gamma1", static_cast<double>(gamma1));
    rel.note("gamma2", static_cast<double>(gamma2));
    if (!is_count_min) rel.note("f2_upper", static_cast<double>(f2_up));
    rel.note("tau", static_cast<double>(tau));
    rel.note("heavy_hitter_cut", static_cast<double>(hh));
    L.describe(rel);
    return rel;
  }

  const EnvelopeParams& params() const noexcept { return p_; }
  const Oracle& oracle() const noexcept { return oracle_; }
  std::uint64_t n() const noexcept { return oracle_.n(); }
  std::size_t candidates() const noexcept { return heap_.size(); }
  estimate_type estimate(const View& x) const noexcept { return oracle_.estimate(x); }
  std::size_t memory_bytes() const noexcept {
    std::size_t b = sizeof(*this) + oracle_.memory_bytes() - sizeof(Oracle) + keys_.capacity() * sizeof(Key) +
                    est_.capacity() * sizeof(estimate_type) + (heap_.capacity() + pos_.capacity()) * 4 + table_.memory_bytes();
    for (std::size_t s = 0; s < heap_.size(); ++s) b += Traits::heap_bytes(keys_[s]);
    return b;
  }

 private:
  // Puts slot s at heap position i; pos_ stays the inverse of heap_.
  void place(std::size_t i, std::int32_t s) noexcept {
    heap_[i] = s;
    pos_[s] = static_cast<std::int32_t>(i);
  }
  // Moves the slot at heap position i up past every parent with a larger estimate; returns its
  // final position.
  std::size_t sift_up(std::size_t i) noexcept {
    const std::int32_t s = heap_[i];
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!(est_[s] < est_[heap_[parent]])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, s);
    return i;
  }
  // Moves the slot at heap position i down below every child with a smaller estimate.
  void sift_down(std::size_t i) noexcept {
    const std::int32_t s = heap_[i];
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && est_[heap_[c + 1]] < est_[heap_[c]]) ++c;
      if (!(est_[heap_[c]] < est_[s])) break;
      place(i, heap_[c]);
      i = c;
    }
    place(i, s);
  }

  EnvelopeParams p_;
  Epsilon eps_;
  Oracle oracle_;
  std::vector<Key> keys_;
  std::vector<estimate_type> est_;
  std::vector<std::int32_t> heap_, pos_;
  detail::SlotTable<Key> table_;
};

}  // namespace dpsketch::release
