// Thresholds and tail bounds of the private releases. Every formula cites the section of
// docs/algorithms.md (or docs/privacy.md) it implements. All use the ε actually used after dyadic
// rounding down (§1), and round the integer thresholds up: both directions only strengthen privacy.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "dpsketch/common/errors.hpp"

namespace dpsketch::release {

using real = long double;

// Relative upward nudge before ceil(): a threshold computed a hair too small by floating-point
// rounding would weaken privacy; a hair too large only costs utility.
inline constexpr real kCeilSafety = 1e-12L;

inline std::uint64_t ceil_safe(real x) {
  if (!(x > 0)) return 0;
  return static_cast<std::uint64_t>(std::ceil(x * (1 + kCeilSafety)));
}

// §1 tails of Z ~ DLap(1/ε) (P(Z = z) ∝ e^{-ε|z|}), integer t:
//   P(Z > t) = e^{-εt}/(1+e^{ε}) (t >= 0);   P(Z >= t) = e^{-εt}/(1+e^{-ε}) (t >= 1).
inline real dlap_tail_gt(real eps, real t) { return std::exp(-eps * t) / (1 + std::exp(eps)); }
inline real dlap_tail_ge(real eps, real t) { return std::exp(-eps * t) / (1 + std::exp(-eps)); }

inline void check_eps_delta(real eps, real delta) {
  if (!(eps > 0) || !std::isfinite(static_cast<double>(eps)))
    throw ParameterError("epsilon must be a finite number > 0");
  if (!(delta > 0 && delta < 1)) throw ParameterError("delta must be in (0, 1)");
}

// docs/privacy.md §PMG "Why δ/6": P(η + Z >= 2t) for η, Z independent DLap(1/ε), integer t >= 1,
// exactly (q = e^{-ε}):  q^{2t}/(1+q) · [1 + 2t(1-q)/(1+q) - q(1-q)/(1+q)^2].
inline real dlap_sum_tail_bracket(real eps, std::uint64_t t) {
  const real q = std::exp(-eps);
  return 1 + 2 * static_cast<real>(t) * (1 - q) / (1 + q) - q * (1 - q) / ((1 + q) * (1 + q));
}
inline real dlap_sum_tail_ge_2t(real eps, std::uint64_t t) {
  return std::exp(-2 * eps * static_cast<real>(t)) / (1 + std::exp(-eps)) * dlap_sum_tail_bracket(eps, t);
}

// docs/privacy.md §PMG: the δ the unstable labels cost. At most 2 labels per side, each released
// only if η + Z_y >= 2t; the other side's failure event enters multiplied by e^ε because η is
// shared with the stable part:  δ_U(t) = 2·(1 + e^ε)·P(η + Z >= 2t).
inline real pmg_unstable_delta(real eps, std::uint64_t t) {
  // (1 + e^ε)·e^{-2εt} written as e^{-2εt} + e^{-ε(2t-1)}: no overflow for large ε.
  const real tt = static_cast<real>(t);
  const real scaled = std::exp(-2 * eps * tt) + std::exp(-eps * (2 * tt - 1));
  return 2 * scaled / (1 + std::exp(-eps)) * dlap_sum_tail_bracket(eps, t);
}

// §2 PMG: t = smallest integer >= 1 with P(Z >= t) = e^{-εt}/(1+e^{-ε}) <= δ/6.
//   t >= (ln(6/δ) - ln(1+e^{-ε})) / ε.
// docs/privacy.md §PMG proves that this t already gives δ_U(t) < δ (δ_U(t) = 2·P(Z >= t)·h(t) with
// h decreasing in t and h(1) < 3); the loop below re-checks δ_U(t) <= δ numerically, so a
// floating-point slip can only raise t, never lower the guarantee.
inline std::uint64_t pmg_t(real eps, real delta) {
  check_eps_delta(eps, delta);
  const real x = (std::log(6 / delta) - std::log1p(std::exp(-eps))) / eps;
  std::uint64_t t = ceil_safe(x);
  if (t < 1) t = 1;
  while (pmg_unstable_delta(eps, t) > delta * (1 - kCeilSafety)) ++t;
  return t;
}
// §2 PMG release threshold: keep v_x >= τ = 1 + 2t.
inline real pmg_threshold(real eps, real delta) { return 1 + 2 * static_cast<real>(pmg_t(eps, delta)); }

// §3 DPSS: γ = smallest integer >= 0 with P(Z > γ) = e^{-εγ}/(1+e^{ε}) <= δ/4.
//   γ >= (ln(4/δ) - ln(1+e^{ε})) / ε.
inline std::uint64_t dpss_gamma(real eps, real delta) {
  check_eps_delta(eps, delta);
  return ceil_safe((std::log(4 / delta) - std::log1p(std::exp(eps))) / eps);
}
// §3 DPSS threshold τ = max(n/k - γ, n/k̃ + 1 + γ), with n_lo for the lower-bound term and n_up for
// the suppression term (both equal n when the length is public; §0 rigorous mode otherwise).
inline real dpss_threshold(real n_lo, real n_up, std::uint64_t k, std::uint64_t k_tilde, std::uint64_t gamma) {
  const real g = static_cast<real>(gamma);
  const real a = n_lo / static_cast<real>(k) - g;
  const real b = n_up / static_cast<real>(k_tilde) + 1 + g;
  return a > b ? a : b;
}

// §0 private length: t_n = smallest integer >= 1 with P(Z >= t_n) = e^{-ε_n t_n}/(1+e^{-ε_n}) <= δ_n,
// Z ~ DLap(1/ε_n). Then n_up = n̂ + t_n >= n + 1 unless Z <= -t_n, so n_up bounds the length of
// both neighbours (n and n + 1) except with probability δ_n (docs/privacy.md §Stream length).
inline std::uint64_t length_t(real eps_n, real delta_n) {
  check_eps_delta(eps_n, delta_n);
  std::uint64_t t = ceil_safe((std::log(1 / delta_n) - std::log1p(std::exp(-eps_n))) / eps_n);
  if (t < 1) t = 1;
  while (dlap_tail_ge(eps_n, static_cast<real>(t)) > delta_n * (1 - kCeilSafety)) ++t;
  return t;
}

// §5 cell-noise bound: γ_N = the smallest integer >= 0 with cells · P(|DLap(Δ/ε)| > γ_N) <= δ_N, using
// the integer tail P(|Z| > t) = 2e^{-εt/Δ}/(1+e^{ε/Δ}) (§1). A non-integer γ_N would read the tail
// between two integers, where the true P(|Z| > γ) = P(|Z| > floor γ) is larger than the formula.
//   t >= (Δ/ε) · ln(2·cells / (δ_N (1 + e^{ε/Δ}))).
inline real envelope_noise(std::uint64_t l1_sensitivity, real eps, std::uint64_t cells, real delta_n) {
  check_eps_delta(eps, delta_n);
  const real a = eps / static_cast<real>(l1_sensitivity);
  const real c = static_cast<real>(cells);
  const auto union_tail = [&](std::uint64_t t) { return c * 2 * std::exp(-a * static_cast<real>(t)) / (1 + std::exp(a)); };
  std::uint64_t t = ceil_safe(std::log(2 * c / (delta_n * (1 + std::exp(a)))) / a);
  while (union_tail(t) > delta_n * (1 - kCeilSafety)) ++t;
  return static_cast<real>(t);
}

// §5 / docs/privacy.md §Error envelope: the envelope's failure event is read from the same noise
// as the released estimates, so by the bad-event lemma (docs/privacy.md §PMG, step 1) a failure
// probability δ_env costs (1 + e^ε)·δ_env. The envelope is therefore sized for
// δ_env = δ/(1 + e^ε), split evenly between the cell noise (δ_N) and the hash rows (δ_C).
inline real envelope_delta(real eps, real delta) { return delta / (1 + std::exp(eps)); }

// §5 depth rule: (n_max + k̃) · 2^{-d} <= δ_C  <=>  d >= log2((n_max + k̃)/δ_C).
inline std::uint64_t envelope_min_depth(std::uint64_t n_max, std::uint64_t k_tilde, real delta_c) {
  return ceil_safe(std::log2((static_cast<real>(n_max) + static_cast<real>(k_tilde)) / delta_c));
}

// §4 zCDP Count-Min shift E = ceil(σ·sqrt(2 ln(2dw/β))) + 1: with probability 1-β no cell's
// Gaussian noise is below -(E-1), so the shifted sketch never underestimates.
inline std::int64_t gaussian_cm_shift(real sigma2, std::uint64_t depth, std::uint64_t width, real beta) {
  if (!(beta > 0 && beta < 1)) throw ParameterError("beta must be in (0, 1)");
  const real x = std::sqrt(sigma2) * std::sqrt(2 * std::log(2 * static_cast<real>(depth) * static_cast<real>(width) / beta));
  return static_cast<std::int64_t>(ceil_safe(x)) + 1;
}

}  // namespace dpsketch::release
