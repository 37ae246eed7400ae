// Private releases of the counter summaries: PMG (docs/algorithms.md §2, Lebeda-Tetek) and DPSS
// (§3, Holland Algorithm 3). Derivations in docs/privacy.md.
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <stdexcept>

#include "dpsketch/common/limits.hpp"

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/release/release.hpp"

namespace dpsketch::release {

// §8: the neighbour structure PMG/DPSS rely on (one counter ±1, or all shifted by one, <= 2 labels
// differ) does not survive merge(); no sensitivity bound is derived for merged summaries
// (docs/privacy.md §Merged counter summaries), so their release is refused.
inline void refuse_merged(bool merged, const char* mechanism) {
  if (merged)
    throw ParameterError(std::string(mechanism) +
                         " cannot release a merged counter summary: the per-stream sensitivity argument does not "
                         "hold after merge() (docs/privacy.md). Use a sound distributed route instead: partition "
                         "the data by key and release each partition's summary (dpsketch.spark.heavy_hitters("
                         "route='counters')), or build non-private linear sketches, merge them and add noise once "
                         "(PrivateCountSketch.from_sketch / route='sketch')");
}

// c + z1 + z2 without signed overflow: c <= kMaxStreamLength = 2^62 (common/limits.hpp, checked at
// deserialization and update), and a DLap draw beyond 2^61 in magnitude has probability far below
// 2^-1000 at the smallest ε (2^-32), so the throw is unreachable in practice; it only rules out UB.
inline std::int64_t noisy_count(std::uint64_t c, std::int64_t z1, std::int64_t z2) {
  std::int64_t v;
  if (c > kMaxStreamLength || __builtin_add_overflow(static_cast<std::int64_t>(c), z1, &v) ||
      __builtin_add_overflow(v, z2, &v))
    throw std::overflow_error("noisy count overflowed int64 (count above the 2^62 limit?)");
  return v;
}

// PMG. Every stored key (zero-count keys included: never filter by true count before noising)
// gets v_x = c(x) + η + Z_x with η, Z_x ~ DLap(1/ε), η shared; keep v_x >= τ = 1 + 2t (§2).
// With k, also keep v_x >= n̂/k (post-processing of the length L, release.hpp). (epsilon, delta)
// are the mechanism's own share (calibration.hpp splits the caller's budget).
template <class Key>
Release<Key, std::int64_t> pmg(const MisraGries<Key>& mg, double epsilon, double delta, std::optional<std::uint64_t> k,
                               const Length& L, SecureRng& rng) {
  refuse_merged(mg.merged(), "PMG");
  if (k && L.kind == Length::Kind::unused) throw ParameterError("PMG with k needs a length (n̂ or a public n)");
  const Epsilon eps(epsilon);
  const std::uint64_t t = pmg_t(eps.value, delta);
  const real tau = pmg_threshold(eps.value, delta);  // 1 + 2t (thresholds.hpp, the plan's τ too)
  const real hh = k ? L.n_hat / static_cast<real>(*k) : 0;
  const real cut = tau > hh ? tau : hh;

  const noise::DiscreteLaplace lap(noise::laplace_scale(1, eps.exact));  // sensitivity 1 per draw
  const std::int64_t eta = lap(rng);
  Release<Key, std::int64_t> rel;
  mg.for_each([&](const Key& key, std::uint64_t c) {
    const std::int64_t v = noisy_count(c, eta, lap(rng));
    if (static_cast<real>(v) >= cut) rel.items.emplace_back(key, v);
  });
  rel.sort_items();
  rel.threshold = static_cast<double>(cut);
  rel.threshold_inclusive = true;
  rel.note("epsilon_used", static_cast<double>(eps.value));
  rel.note("t", static_cast<double>(t));
  rel.note("tau", static_cast<double>(tau));
  // docs/privacy.md §PMG: the δ spent on unstable labels, 2(1 + e^ε)·P(η + Z >= 2t) <= δ.
  rel.note("delta_unstable_labels", static_cast<double>(pmg_unstable_delta(eps.value, t)));
  rel.note("capacity", mg.capacity());
  if (k) {
    rel.note("k", static_cast<double>(*k));
    rel.note("heavy_hitter_cut", static_cast<double>(hh));
  }
  L.describe(rel);
  return rel;
}

// DPSS. v_x = c(x) + Z_x, Z_x ~ DLap(1/ε) independent; release v_x > τ = max(n_lo/k - γ, n_up/k̃ + 1 + γ)
// (§3). The suppression term needs n_up >= the length of the summary's stream and of its neighbour:
// a public n, the global bound of a noisy length, or (Spark) the whole data set's bound, which also
// bounds every partition's length (§8: never an exact per-partition length).
template <class Key>
Release<Key, std::int64_t> dpss(const SpaceSaving<Key>& ss, double epsilon, double delta, std::uint64_t k,
                                const Length& L, SecureRng& rng) {
  refuse_merged(ss.merged(), "DPSS");
  if (k < 1) throw ParameterError("k must be >= 1");
  if (ss.capacity() < k)
    throw ParameterError("DPSS needs capacity (k̃) >= k; got capacity " + std::to_string(ss.capacity()) + " < k " +
                         std::to_string(k) + ". Use SpaceSaving(capacity >= 2*k) for full recall");
  const Epsilon eps(epsilon);
  if (L.kind == Length::Kind::unused) throw ParameterError("DPSS needs a length (noisy bounds or a public n)");
  const std::uint64_t gamma = dpss_gamma(eps.value, delta);
  const real tau = dpss_threshold(L.n_lo, L.n_up, k, ss.capacity(), gamma);

  const noise::DiscreteLaplace lap(noise::laplace_scale(1, eps.exact));
  Release<Key, std::int64_t> rel;
  ss.for_each([&](const Key& key, std::uint64_t c) {
    const std::int64_t v = noisy_count(c, 0, lap(rng));
    if (static_cast<real>(v) > tau) rel.items.emplace_back(key, v);
  });
  rel.sort_items();
  rel.threshold = static_cast<double>(tau);
  rel.note("epsilon_used", static_cast<double>(eps.value));
  rel.note("gamma", static_cast<double>(gamma));
  rel.note("k", static_cast<double>(k));
  rel.note("capacity", ss.capacity());
  L.describe(rel);
  return rel;
}

}  // namespace dpsketch::release
