// The shared release interface: every private mechanism returns a Release, whose items are the
// labels that passed the threshold with their noisy values, sorted by noisy value (then key) --
// never by true count (§0: output order is data) -- plus the threshold and every derived constant.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dpsketch/noise/samplers.hpp"
#include "dpsketch/release/thresholds.hpp"

namespace dpsketch::release {

using noise::Rational;
using noise::SecureRng;

template <class Key, class Value>
struct Release {
  std::vector<std::pair<Key, Value>> items;
  double threshold = 0;
  bool threshold_inclusive = false;  // PMG keeps v >= τ; DPSS and the envelope keep v > τ
  std::vector<std::pair<std::string, double>> metadata;

  void note(std::string name, double value) { metadata.emplace_back(std::move(name), value); }

  // Post-processing order: noisy value descending, ties by key (data-independent).
  void sort_items() {
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
  }
};

// ε as used: rounded down to a multiple of 2^-32 (§1), never up.
struct Epsilon {
  Rational exact;
  real value;
  explicit Epsilon(double eps) : exact(noise::dyadic_down(eps, 32)), value(static_cast<real>(noise::to_double(exact))) {}
};

// Stream length as a release uses it (§0; docs/privacy.md §Stream length). Three kinds:
//   unused  -- the release reads no n (PMG without k): nothing is spent on it;
//   noisy   -- n̂ = n + DLap(1/ε_n), n_up = n̂ + t_n, n_lo = n̂ - t_n (the default);
//   public  -- n is a fixed public parameter (the caller's opt-in; neighbours are replace-one).
// The bounds may also be computed once for a whole data set and shared by several releases
// (the Spark counters route: one n̂ for every partition).
struct Length {
  enum class Kind { unused, noisy, fixed };
  Kind kind = Kind::unused;
  real n_hat = 0, n_lo = 0, n_up = 0;
  std::uint64_t t_n = 0;
  double eps_n = 0, delta_n = 0;

  static Length unused() { return Length{}; }

  static Length fixed(std::uint64_t n) {
    Length L;
    L.kind = Kind::fixed;
    L.n_hat = L.n_lo = L.n_up = static_cast<real>(n);
    return L;
  }

  // n̂ = n + DLap(1/ε_n) (Δ(n) = 1). With delta_n > 0 the bounds n_lo, n_up = n̂ ∓ t_n hold for
  // both neighbours (n_up >= n + 1) except with probability δ_n (length_t); with delta_n == 0
  // only n̂ is meant to be used (a post-processing cut such as PMG's n̂/k), and t_n = 0.
  template <class Rng>
  static Length noisy(std::uint64_t n, double eps_n, double delta_n, Rng& rng) {
    const Epsilon e(eps_n);
    Length L;
    L.kind = Kind::noisy;
    L.eps_n = static_cast<double>(e.value);
    L.delta_n = delta_n;
    L.t_n = delta_n > 0 ? length_t(e.value, delta_n) : 0;
    const std::int64_t z = noise::discrete_laplace(rng, noise::laplace_scale(1, e.exact));
    L.n_hat = static_cast<real>(n) + static_cast<real>(z);
    L.n_lo = L.n_hat - static_cast<real>(L.t_n);
    L.n_up = L.n_hat + static_cast<real>(L.t_n);
    return L;
  }

  // Bounds computed elsewhere (e.g. on a driver) from a noisy length; checked for consistency.
  static Length from_bounds(double n_hat, std::uint64_t t_n, double eps_n, double delta_n) {
    if (!std::isfinite(n_hat)) throw ParameterError("n_hat must be finite");
    if (!(eps_n > 0) || !(delta_n >= 0 && delta_n < 1)) throw ParameterError("invalid length budget");
    Length L;
    L.kind = Kind::noisy;
    L.eps_n = eps_n;
    L.delta_n = delta_n;
    L.t_n = t_n;
    L.n_hat = static_cast<real>(n_hat);
    L.n_lo = L.n_hat - static_cast<real>(t_n);
    L.n_up = L.n_hat + static_cast<real>(t_n);
    return L;
  }

  const char* name() const { return kind == Kind::noisy ? "private" : kind == Kind::fixed ? "public" : "unused"; }

  template <class R>
  void describe(R& rel) const {
    rel.note("assumes_public_length", kind == Kind::fixed ? 1 : 0);
    if (kind == Kind::unused) return;
    rel.note("n_used", static_cast<double>(n_hat));
    if (kind == Kind::noisy) {
      rel.note("length_epsilon", eps_n);
      rel.note("length_delta", delta_n);
      rel.note("length_t", static_cast<double>(t_n));
      rel.note("n_lower", static_cast<double>(n_lo));
      rel.note("n_upper", static_cast<double>(n_up));
    }
  }
};

}  // namespace dpsketch::release
