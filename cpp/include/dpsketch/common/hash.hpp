// Hashing primitives shared by every summary and sketch.
//
//  * fmix64: MurmurHash3's 64-bit finalizer. It is a bijection on 64-bit words, so two integer
//    keys collide in a table iff they are equal; the tables use that to skip the key compare.
//  * poly61: seeded polynomial hash over the Mersenne prime p = 2^61 - 1. Byte strings are cut into
//    7-byte chunks (each < 2^56 < p) followed by a length chunk, which makes the chunk encoding
//    injective. For two distinct strings of at most L chunks (including the length chunk) and a seed
//    r uniform in [1, p), the difference polynomial is nonzero of degree <= L, so
//        P_r[poly61(s) == poly61(t)] <= L / (2^61 - 1)      (docs/algorithms.md §4, collision bound).
//  * MultiplyAddShift: h(x) = ((a*x + b) mod 2^128) >> 64 for 64-bit x and random 128-bit a, b.
//    Dietzfelbinger (1996): with input width 64 and output width 64, 128 >= 64 + 64 - 1 bits of
//    arithmetic make the family strongly universal (pairwise independent, uniform outputs)
//    (docs/algorithms.md §4). One 64x64->128 multiply plus one 64x64 multiply per evaluation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace dpsketch {

inline constexpr std::uint64_t fmix64(std::uint64_t k) noexcept {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

// SplitMix64: expands one 64-bit seed into a stream of well-mixed words: hash parameters, and the
// ChaCha20 key of a seeded (reproducible, not secret) generator. Secure noise is keyed from the OS
// instead (noise/chacha20.hpp).
inline constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline constexpr std::uint64_t kMersenne61 = (std::uint64_t{1} << 61) - 1;

inline std::uint64_t mulmod61(std::uint64_t a, std::uint64_t b) noexcept {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  std::uint64_t r = (static_cast<std::uint64_t>(p) & kMersenne61) + static_cast<std::uint64_t>(p >> 61);
  return r >= kMersenne61 ? r - kMersenne61 : r;
}

// Seed for poly61 drawn from any 64-bit word: maps into [1, p).
inline constexpr std::uint64_t poly61_seed(std::uint64_t word) noexcept {
  return 1 + (word % (kMersenne61 - 1));
}

inline std::uint64_t poly61(std::string_view s, std::uint64_t r) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t len = s.size();
  std::uint64_t h = 0;
  while (len >= 7) {
    std::uint64_t chunk = 0;
    std::memcpy(&chunk, p, 7);  // little-endian hosts; the value is < 2^56 either way
    h = mulmod61(h, r) + chunk;
    h = h >= kMersenne61 ? h - kMersenne61 : h;
    p += 7;
    len -= 7;
  }
  if (len > 0) {
    std::uint64_t chunk = 0;
    std::memcpy(&chunk, p, len);
    h = mulmod61(h, r) + chunk;
    h = h >= kMersenne61 ? h - kMersenne61 : h;
  }
  // Length chunk: distinguishes strings whose last chunk differs only by trailing zero bytes.
  h = mulmod61(h, r) + (static_cast<std::uint64_t>(s.size()) & ((std::uint64_t{1} << 56) - 1));
  return h >= kMersenne61 ? h - kMersenne61 : h;
}

// Strongly universal 64-bit -> 64-bit hash (see header comment).
struct MultiplyAddShift {
  std::uint64_t a_lo = 0, a_hi = 0, b_lo = 0, b_hi = 0;

  static MultiplyAddShift from_stream(std::uint64_t& state) noexcept {
    MultiplyAddShift h;
    h.a_lo = splitmix64(state);
    h.a_hi = splitmix64(state);
    h.b_lo = splitmix64(state);
    h.b_hi = splitmix64(state);
    return h;
  }

  // Top 64 bits of (a*x + b) mod 2^128.
  std::uint64_t operator()(std::uint64_t x) const noexcept {
    const unsigned __int128 lo = static_cast<unsigned __int128>(a_lo) * x + b_lo;
    return static_cast<std::uint64_t>(lo >> 64) + a_hi * x + b_hi;
  }

  bool operator==(const MultiplyAddShift& o) const noexcept {
    return a_lo == o.a_lo && a_hi == o.a_hi && b_lo == o.b_lo && b_hi == o.b_hi;
  }
};

// Maps a uniform 64-bit word to [0, w) (Lemire's multiply-shift range reduction). Each bucket gets
// probability within w / 2^64 of 1/w.
inline std::uint32_t reduce_range(std::uint64_t h, std::uint32_t w) noexcept {
  return static_cast<std::uint32_t>((static_cast<unsigned __int128>(h) * w) >> 64);
}

}  // namespace dpsketch
