// How a release spends the (ε, δ) its caller asked for (docs/algorithms.md §0; derivations in
// docs/privacy.md §Stream length). The totals a release reports are the caller's (ε, δ), never
// more: every share below is carved out of them, and every ε is rounded down (§1).
#pragma once

#include <cmath>
#include <cstdint>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/release/release.hpp"

namespace dpsketch::release {

// What a mechanism reads of the stream length n.
enum class LengthNeed {
  none,      // nothing (PMG without k)
  estimate,  // n̂ only, in a post-processing cut (PMG's n̂/k): costs ε_n, no δ
  bounds,    // an upper bound n_up >= n in a privacy-relevant threshold (DPSS, the envelope): ε_n and δ_n
};

// Default shares of the caller's budget spent on the noisy length (docs/privacy.md §Stream length).
inline constexpr double kLengthEpsilonShare = 0.1;
inline constexpr double kLengthDeltaShare = 0.1;

struct Calibration {
  double epsilon = 0, delta = 0;            // the caller's totals
  double eps_core = 0, delta_core = 0;      // what the mechanism proper is calibrated to
  double eps_n = 0, delta_n = 0;            // spent on n̂ (0 when the length is unused or public)
  bool public_length = false;
  bool replace = false;                     // neighbours replace-one (public length): group privacy of 2
  LengthNeed need = LengthNeed::none;

  // The guarantee that holds, from the ε actually used (rounded down): never above the request.
  double epsilon_total() const {
    const double core = static_cast<double>(Epsilon(eps_core).value);
    if (replace) return 2 * core;
    return core + (eps_n > 0 ? static_cast<double>(Epsilon(eps_n).value) : 0.0);
  }
  double delta_total() const {
    if (replace) return delta_core * (1 + std::exp(static_cast<double>(Epsilon(eps_core).value)));
    return delta_core + delta_n;
  }
  const char* neighbours() const { return replace ? "replace" : "add_remove"; }
};

// Split (ε, δ).
//  * private length (default): ε_n = length_epsilon (default kLengthEpsilonShare·ε) and, for
//    LengthNeed::bounds, δ_n = length_delta (default kLengthDeltaShare·δ); the mechanism runs at
//    (ε − ε_n, δ − δ_n). Sequential composition of n̂ and the mechanism given n̂ (the mechanism's
//    proof needs n_up >= both neighbours' lengths, which fails with probability <= δ_n).
//  * public length (opt-in, LengthNeed != none): n is fixed, so neighbours change one element.
//    A replacement is a removal then an addition, each an add/remove step of a mechanism whose
//    threshold reads the public n (>= both intermediate lengths); group privacy over the two
//    steps turns (ε', δ') into (2ε', (1 + e^{ε'})δ'), so ε' = ε/2, δ' = δ/(1 + e^{ε/2}).
//  * LengthNeed::none: the mechanism gets everything; public_length changes nothing.
inline Calibration calibrate(double epsilon, double delta, LengthNeed need, bool public_length,
                             double length_epsilon = 0, double length_delta = 0) {
  check_eps_delta(epsilon, delta);
  Calibration c;
  c.epsilon = epsilon;
  c.delta = delta;
  c.need = need;
  c.public_length = public_length && need != LengthNeed::none;
  if (need == LengthNeed::none) {
    c.eps_core = epsilon;
    c.delta_core = delta;
    return c;
  }
  if (c.public_length) {
    c.replace = true;
    c.eps_core = epsilon / 2;
    c.delta_core = delta / (1 + std::exp(c.eps_core));
    return c;
  }
  // Split the ε as used (a multiple of 2^-32, §1) into two multiples of 2^-32 that add up to it
  // exactly, so the reported total is the request rounded down once.
  const real scale = 4294967296.0L;  // 2^32
  const real used = Epsilon(epsilon).value;
  const real share = length_epsilon > 0 ? Epsilon(length_epsilon).value : std::floor(kLengthEpsilonShare * used * scale) / scale;
  if (!(share > 0) || !(share < used))
    throw ParameterError("length_epsilon must be positive and below epsilon: it is the part of epsilon spent on the "
                         "noisy length (epsilon too small to split: give length_epsilon, or public_length=True)");
  c.eps_n = static_cast<double>(share);
  c.eps_core = static_cast<double>(used - share);
  if (need == LengthNeed::bounds) {
    c.delta_n = length_delta > 0 ? length_delta : kLengthDeltaShare * delta;
    if (!(c.delta_n < delta))
      throw ParameterError("length_delta must be below delta: it is the part of delta spent on the length bound");
    c.delta_core = delta - c.delta_n;
  } else {
    c.delta_core = delta;
  }
  return c;
}

// §1: ρ-zCDP implies (ρ + 2·sqrt(ρ·ln(1/δ)), δ)-DP.
inline double zcdp_epsilon(double rho, double delta) {
  if (!(rho >= 0) || !std::isfinite(rho)) throw ParameterError("rho must be a finite number >= 0");
  if (!(delta > 0 && delta < 1)) throw ParameterError("delta must be in (0, 1)");
  return rho + 2 * std::sqrt(rho * std::log(1 / delta));
}

// The inverse: the largest ρ with ρ + 2·sqrt(ρ·L) <= ε, L = ln(1/δ). sqrt(ρ) = sqrt(L + ε) − sqrt(L)
// solves the equality; the result is stepped down until the forward conversion, as computed in
// floating point, does not exceed ε.
inline double zcdp_rho_for(double epsilon, double delta) {
  if (!(epsilon > 0) || !std::isfinite(epsilon)) throw ParameterError("epsilon must be a finite number > 0");
  if (!(delta > 0 && delta < 1)) throw ParameterError("delta must be in (0, 1)");
  const double L = std::log(1 / delta);
  const double r = std::sqrt(L + epsilon) - std::sqrt(L);
  double rho = r * r;
  while (rho > 0 && zcdp_epsilon(rho, delta) > epsilon) rho = std::nextafter(rho, 0.0);
  return rho;
}

template <class Rng>
Length make_length(const Calibration& c, std::uint64_t n, Rng& rng) {
  if (c.need == LengthNeed::none) return Length::unused();
  if (c.public_length) return Length::fixed(n);
  return Length::noisy(n, c.eps_n, c.delta_n, rng);
}

template <class R>
void describe(const Calibration& c, R& rel) {
  rel.note("epsilon_total", c.epsilon_total());
  rel.note("delta_total", c.delta_total());
  rel.note("epsilon_mechanism", static_cast<double>(Epsilon(c.eps_core).value));
  rel.note("delta_mechanism", c.delta_core);
  rel.note("neighbours_replace", c.replace ? 1 : 0);
}

}  // namespace dpsketch::release
