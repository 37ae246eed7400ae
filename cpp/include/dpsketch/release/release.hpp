// The shared release interface: every private mechanism returns a Release, whose items are the
// labels that passed the threshold with their noisy values, sorted by noisy value (then key) --
// never by true count (§0: output order is data) -- plus the threshold and every derived constant.
#pragma once

#include <algorithm>
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

// Stream length as the release may use it (§0). Public by default (n_hat = n_lo = n_up = n);
// with length_epsilon, n̂ = n + DLap(1/ε_n) and n_lo/n_up = n̂ ∓ t_n.
struct Length {
  bool public_length = true;
  real n_hat = 0, n_lo = 0, n_up = 0;
  std::uint64_t t_n = 0;
  double eps_n = 0, delta_n = 0;

  template <class Rng>
  static Length make(std::uint64_t n, std::optional<double> length_epsilon, double length_delta, Rng& rng) {
    Length L;
    if (!length_epsilon) {
      L.n_hat = L.n_lo = L.n_up = static_cast<real>(n);
      return L;
    }
    const Epsilon e(*length_epsilon);
    L.public_length = false;
    L.eps_n = static_cast<double>(e.value);
    L.delta_n = length_delta;
    L.t_n = length_t(e.value, length_delta);
    const std::int64_t z = noise::discrete_laplace(rng, noise::laplace_scale(1, e.exact));  // Δ(n) = 1
    L.n_hat = static_cast<real>(n) + static_cast<real>(z);
    L.n_lo = L.n_hat - static_cast<real>(L.t_n);
    L.n_up = L.n_hat + static_cast<real>(L.t_n);
    return L;
  }

  template <class R>
  void describe(R& rel) const {
    rel.note("assumes_public_length", public_length ? 1 : 0);
    rel.note("n_used", static_cast<double>(n_hat));
    if (!public_length) {
      rel.note("length_epsilon", eps_n);
      rel.note("length_delta", delta_n);
      rel.note("length_t", static_cast<double>(t_n));
      rel.note("n_lower", static_cast<double>(n_lo));
      rel.note("n_upper", static_cast<double>(n_up));
    }
  }
};

}  // namespace dpsketch::release
