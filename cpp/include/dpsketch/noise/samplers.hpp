// dpsketch/noise/samplers.hpp — exact integer noise (docs/algorithms.md §1).
//
// Samplers of Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for Differential Privacy"
// (CKS20): Bernoulli(exp(-γ)) (Alg. 1), discrete Laplace (Alg. 2), discrete Gaussian (Alg. 3).
// Sampling uses only integer/rational arithmetic on uniform integers from the RNG — no floating
// point, so there is no Mironov-style leak through rounding. Parameters are Rationals; doubles
// (ε, ρ) enter only through dyadic_down(), which rounds in the privacy-safe direction.
//
// Rng: any type with uniform_below(uint64_t), uniform_below_u128(u128) and next_u64(), e.g.
// SecureRng.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "dpsketch/noise/chacha20.hpp"

namespace dpsketch::noise {

// num/den with den > 0. Not reduced automatically; reduced() divides out the gcd.
struct Rational {
    std::uint64_t num = 0;
    std::uint64_t den = 1;

    void validate(const char* what) const {
        if (den == 0)
            throw ParameterError(std::string(what) + ": denominator must be > 0 (pass num/den with den >= 1)");
    }
    Rational reduced() const;
};

namespace detail {

inline u128 gcd128(u128 a, u128 b) noexcept {
    while (b != 0) {
        const u128 r = a % b;
        a = b;
        b = r;
    }
    return a;
}

inline constexpr u128 kU64Max = std::numeric_limits<std::uint64_t>::max();

// num/den reduced to lowest terms; NoiseRangeError if it does not fit in 64-bit parts.
inline Rational make_rational(u128 num, u128 den, const char* what) {
    const u128 g = gcd128(num, den);  // den > 0, so g > 0
    num /= g;
    den /= g;
    if (num > kU64Max || den > kU64Max)
        throw NoiseRangeError(std::string(what) +
                              ": result does not fit a 64-bit numerator/denominator; use "
                              "smaller parameters or fewer fractional bits");
    return Rational{std::uint64_t(num), std::uint64_t(den)};
}

inline std::uint64_t isqrt(std::uint64_t x) noexcept {
    std::uint64_t r = std::uint64_t(std::sqrt(double(x)));  // estimate, corrected exactly below
    while (u128(r) * r > x) --r;
    while (u128(r + 1) * (r + 1) <= x) ++r;
    return r;
}

template <class Rng>
bool bernoulli_u128(Rng& rng, u128 num, u128 den) {  // Bernoulli(num/den), den > 0
    if (num == 0) return false;
    if (num >= den) return true;
    return rng.uniform_below_u128(den) < num;
}

// CKS20 Alg. 1, γ = num/den ∈ [0, 1]: draw A_k ~ Bernoulli(γ/k) for k = 1, 2, ... until the
// first failure at k = K; P(K odd) = Σ_j (−γ)^j / j! = exp(−γ). Bernoulli(γ/k) is sampled as
// Bernoulli(γ) ∧ Bernoulli(1/k), which never forms den·k and so cannot overflow.
template <class Rng>
bool bernoulli_exp_le1(Rng& rng, u128 num, u128 den) {
    for (std::uint64_t k = 1;; ++k) {
        if (!bernoulli_u128(rng, num, den) || (k > 1 && rng.uniform_below(k) != 0))
            return (k & 1) != 0;
    }
}

// CKS20 Alg. 1 for any γ = num/den ≥ 0: exp(−γ) = exp(−1)^⌊γ⌋ · exp(−frac(γ)). Stops at the
// first failure, so the expected work is O(1) even for huge γ.
template <class Rng>
bool bernoulli_exp_u128(Rng& rng, u128 num, u128 den) {
    for (u128 i = num / den; i > 0; --i)
        if (!bernoulli_exp_le1(rng, 1, 1)) return false;
    return bernoulli_exp_le1(rng, num % den, den);
}

// CKS20 Alg. 2: discrete Laplace with scale t/s (t, s ≥ 1), P(Z=z) ∝ exp(−|z|·s/t).
// X = U + t·V is geometric with P(X=x) ∝ exp(−x/t); Y = ⌊X/s⌋ is geometric with ratio
// exp(−s/t); a random sign, rejecting "−0", gives the two-sided law.
template <class Rng>
std::int64_t discrete_laplace_ts(Rng& rng, std::uint64_t t, std::uint64_t s) {
    for (;;) {
        const std::uint64_t u = rng.uniform_below(t);
        if (!bernoulli_exp_le1(rng, u, t)) continue;
        std::uint64_t v = 0;
        while (bernoulli_exp_le1(rng, 1, 1)) ++v;
        const u128 y = (u128(u) + u128(t) * v) / s;
        const bool negative = (rng.next_u64() & 1) != 0;
        if (negative && y == 0) continue;
        if (y > u128(std::numeric_limits<std::int64_t>::max()))  // P < exp(-2^15) given the
            throw NoiseRangeError("discrete_laplace: sample exceeds int64");  // scale limit
        return negative ? -std::int64_t(y) : std::int64_t(y);
    }
}

}  // namespace detail

inline Rational Rational::reduced() const {
    validate("Rational::reduced");
    return detail::make_rational(num, den, "Rational::reduced");
}

// For reporting only (never used inside a sampler).
inline double to_double(Rational r) {
    r.validate("to_double");
    return double(static_cast<long double>(r.num) / static_cast<long double>(r.den));
}

// Bernoulli(num/den), exact. Requires den >= 1 and num <= den.
template <class Rng>
bool bernoulli_rational(Rng& rng, std::uint64_t num, std::uint64_t den) {
    Rational{num, den}.validate("bernoulli_rational");
    if (num > den)
        throw ParameterError("bernoulli_rational: probability num/den must be <= 1 "
                                    "(pass num <= den)");
    return detail::bernoulli_u128(rng, num, den);
}

// Bernoulli(exp(−γ)), exact, for rational γ ≥ 0 (CKS20 Alg. 1).
template <class Rng>
bool bernoulli_exp(Rng& rng, Rational gamma) {
    gamma.validate("bernoulli_exp");
    return detail::bernoulli_exp_u128(rng, gamma.num, gamma.den);
}

// Largest supported discrete-Laplace scale. Bounds P(|Z| > 2^63) by exp(−2^15), so the int64
// result cannot overflow in practice; larger scales throw NoiseRangeError up front.
inline constexpr std::uint64_t kMaxLaplaceScale = std::uint64_t{1} << 48;

// Discrete Laplace DLap(b), b = scale = num/den > 0: P(Z=z) ∝ exp(−|z|/b) (CKS20 Alg. 2).
// With b = Δ/ε this is ε-DP for an integer query of ℓ1-sensitivity Δ (docs/algorithms.md §1).
// Construction validates (and reduces) the scale once; operator() draws one sample.
class DiscreteLaplace {
public:
    explicit DiscreteLaplace(Rational scale) {
        scale.validate("discrete_laplace");
        if (scale.num == 0)
            throw ParameterError("discrete_laplace: scale must be > 0 (pass scale_num >= 1)");
        if (scale.num / scale.den >= kMaxLaplaceScale)
            throw NoiseRangeError("discrete_laplace: scale must be < 2^48 (int64 output range)");
        scale_ = scale.reduced();  // smaller numbers: fewer wide operations
    }
    Rational scale() const noexcept { return scale_; }
    template <class Rng>
    std::int64_t operator()(Rng& rng) const {
        return detail::discrete_laplace_ts(rng, scale_.num, scale_.den);
    }

private:
    Rational scale_;
};

// Discrete Gaussian DGauss(σ²), σ² = num/den > 0: P(Z=z) ∝ exp(−z²/(2σ²)) (CKS20 Alg. 3).
// ρ-zCDP with ρ = Δ²/(2σ²) for an integer query of ℓ2-sensitivity Δ (docs/algorithms.md §1).
//
// Proposal Y ~ DLap(t), t = ⌊σ⌋ + 1, accepted with probability exp(−γ(Y)),
//   γ(Y) = (|Y| − σ²/t)² / (2σ²) = (|Y|·d·t − n)² / (2·n·d·t²)   (σ² = n/d in lowest terms).
// ⌊σ⌋ = isqrt(⌊n/d⌋) exactly (⌊√x⌋ = ⌊√⌊x⌋⌋). Domain: 64·d·t² < 2^64 (roughly n < 2^58 after
// reduction; std::overflow_error otherwise). Then for |Y| ≤ y_max = ⌊(2^64−1)/(d·t)⌋ (≥ 64t)
// the numerator is < 2^128 and the denominator < 2^123, exactly. For |Y| > y_max (probability
// ≈ e^−64 per proposal) γ(Y) > L = γ(y_max) ≥ 63²/2, so we draw Bernoulli(exp(−L)) first and
// reject exactly on failure; only if it also succeeds (total probability < e^−2000) do we throw
// std::overflow_error rather than return an inexact sample.
class DiscreteGaussian {
public:
    explicit DiscreteGaussian(Rational sigma2) {
        sigma2.validate("discrete_gaussian");
        if (sigma2.num == 0)
            throw ParameterError(
                "discrete_gaussian: sigma2 must be > 0 (pass sigma2_num >= 1)");
        sigma2_ = sigma2.reduced();
        n_ = sigma2_.num;
        t_ = detail::isqrt(n_ / sigma2_.den) + 1;
        dt_ = u128(sigma2_.den) * t_;
        y_max_ = dt_ > detail::kU64Max ? 0 : detail::kU64Max / dt_;
        if (y_max_ < u128(64) * t_)
            throw NoiseRangeError(
                "discrete_gaussian: sigma2 = num/den too large for exact 128-bit arithmetic "
                "(need 64*den*(floor(sigma)+1)^2 < 2^64 after reducing the fraction, roughly "
                "num < 2^58); reduce the fraction or use fewer fractional bits");
        denom_ = u128(2) * n_ * dt_ * t_;  // < 2 · 2^64 · 2^58
        tail_numer_ = numer(y_max_);
    }
    Rational sigma2() const noexcept { return sigma2_; }

    template <class Rng>
    std::int64_t operator()(Rng& rng) const {
        for (;;) {
            const std::int64_t y = detail::discrete_laplace_ts(rng, t_, 1);
            const u128 abs_y = y < 0 ? u128(-(y + 1)) + 1 : u128(y);
            if (abs_y <= y_max_) {
                if (detail::bernoulli_exp_u128(rng, numer(abs_y), denom_)) return y;
            } else if (detail::bernoulli_exp_u128(rng, tail_numer_, denom_)) {
                throw NoiseRangeError("discrete_gaussian: proposal beyond exact arithmetic "
                                          "range (probability < e^-2000); retry");
            }
        }
    }

private:
    u128 numer(u128 y) const noexcept {  // (|Y|·d·t − n)² for |Y| = y ≤ y_max: |Y|·d·t < 2^64
        const u128 a = y * dt_;
        const u128 diff = a >= n_ ? a - n_ : n_ - a;
        return diff * diff;
    }

    Rational sigma2_;
    std::uint64_t n_ = 0, t_ = 0;
    u128 dt_ = 0, y_max_ = 0, denom_ = 0, tail_numer_ = 0;
};

// One-off samples (prefer the classes above when drawing many with the same parameter).
template <class Rng>
std::int64_t discrete_laplace(Rng& rng, Rational scale) {
    return DiscreteLaplace(scale)(rng);
}
template <class Rng>
std::int64_t discrete_gaussian(Rng& rng, Rational sigma2) {
    return DiscreteGaussian(sigma2)(rng);
}

// Largest multiple of 2^-frac_bits that is ≤ x, reduced to lowest terms. Used for ε and ρ:
// rounding DOWN spends no more privacy than requested (more noise, never less); the caller
// reports the returned value as the budget actually used (docs/algorithms.md §1).
// Requires x finite, x > 0, 0 ≤ frac_bits ≤ 62, x < 2^(63 − frac_bits) (2^31 ≈ 2.1e9 for the
// default 32 bits), and x ≥ 2^-frac_bits (otherwise the result would be 0).
inline Rational dyadic_down(double x, int frac_bits = 32) {
    if (frac_bits < 0 || frac_bits > 62)
        throw ParameterError("dyadic_down: frac_bits must be in [0, 62]");
    if (!std::isfinite(x) || !(x > 0))
        throw ParameterError("dyadic_down: x must be a finite number > 0");
    const double scaled = std::ldexp(x, frac_bits);  // exact: scaling by a power of two
    if (!(scaled < 0x1p63))
        throw ParameterError("dyadic_down: x must be < 2^(63 - frac_bits) (2^31 for "
                                    "frac_bits=32); pass a smaller value or fewer frac_bits");
    const auto num = static_cast<std::uint64_t>(std::floor(scaled));  // floor is exact
    if (num == 0)
        throw ParameterError("dyadic_down: x < 2^-frac_bits rounds down to 0; pass a "
                                    "larger frac_bits");
    return detail::make_rational(num, u128(1) << frac_bits, "dyadic_down");
}

// Discrete-Laplace scale Δ/ε, exact and reduced. Δ ≥ 1, ε > 0.
inline Rational laplace_scale(std::uint64_t sensitivity, Rational epsilon) {
    epsilon.validate("laplace_scale");
    if (sensitivity == 0) throw ParameterError("laplace_scale: sensitivity must be >= 1");
    if (epsilon.num == 0) throw ParameterError("laplace_scale: epsilon must be > 0");
    return detail::make_rational(u128(sensitivity) * epsilon.den, epsilon.num, "laplace_scale");
}

// Discrete-Gaussian variance σ² = Δ²/(2ρ), exact and reduced. Δ² ≥ 1, ρ > 0.
inline Rational gaussian_sigma2(std::uint64_t l2_sensitivity_squared, Rational rho) {
    rho.validate("gaussian_sigma2");
    if (l2_sensitivity_squared == 0)
        throw ParameterError("gaussian_sigma2: l2_sensitivity_squared must be >= 1");
    if (rho.num == 0) throw ParameterError("gaussian_sigma2: rho must be > 0");
    return detail::make_rational(u128(l2_sensitivity_squared) * rho.den, u128(2) * rho.num,
                                 "gaussian_sigma2");
}

}  // namespace dpsketch::noise
