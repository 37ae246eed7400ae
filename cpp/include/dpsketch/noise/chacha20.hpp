// dpsketch/noise/chacha20.hpp — ChaCha20 CSPRNG for the exact noise samplers.
//
// docs/algorithms.md §1: release noise must come from an OS-seeded CSPRNG; an explicit seed is allowed
// only for reproducible experiments (callers mark such releases reproducible_not_secret=True).
// The block function is ChaCha20 as specified in RFC 8439 §2.3 (20 rounds).
#pragma once

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/types.h>

#include "dpsketch/common/errors.hpp"
#include "dpsketch/common/hash.hpp"

#if defined(__linux__)
#include <sys/random.h>
#else
#include <unistd.h>  // getentropy (macOS, BSDs)
#endif

namespace dpsketch::noise {

__extension__ typedef unsigned __int128 u128;  // __extension__: quiet under -Wpedantic

namespace detail {

inline constexpr std::uint32_t rotl32(std::uint32_t x, int r) noexcept {
    return (x << r) | (x >> (32 - r));
}

inline void quarter_round(std::uint32_t* s, int a, int b, int c, int d) noexcept {
    s[a] += s[b]; s[d] = rotl32(s[d] ^ s[a], 16);
    s[c] += s[d]; s[b] = rotl32(s[b] ^ s[c], 12);
    s[a] += s[b]; s[d] = rotl32(s[d] ^ s[a], 8);
    s[c] += s[d]; s[b] = rotl32(s[b] ^ s[c], 7);
}

inline std::uint32_t load_le32(const std::uint8_t* p) noexcept {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
           std::uint32_t(p[3]) << 24;
}

// Fill buf with n bytes from the kernel CSPRNG; retries on EINTR and short reads.
inline void os_random_bytes(void* buf, std::size_t n) {
    auto* p = static_cast<std::uint8_t*>(buf);
    while (n > 0) {
#if defined(__linux__)
        const ssize_t r = ::getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            throw EntropyError(std::string("dpsketch: getrandom(2) failed: ") +
                                     std::strerror(errno));
        }
        p += r;
        n -= static_cast<std::size_t>(r);
#else
        const std::size_t chunk = n < 256 ? n : 256;  // getentropy's per-call limit
        if (::getentropy(p, chunk) != 0)
            throw EntropyError(std::string("dpsketch: getentropy failed: ") +
                                     std::strerror(errno));
        p += chunk;
        n -= chunk;
#endif
    }
}

}  // namespace detail

inline constexpr std::uint32_t kChaChaConst[4] = {0x61707865u, 0x3320646eu, 0x79622d32u,
                                                  0x6b206574u};  // "expand 32-byte k"

// Raw block function: out = in + 20 rounds(in), as 16 little-endian words (RFC 8439 §2.3).
inline void chacha20_block_words(const std::uint32_t in[16], std::uint32_t out[16]) noexcept {
    std::uint32_t x[16];
    std::memcpy(x, in, sizeof x);
    for (int i = 0; i < 10; ++i) {
        detail::quarter_round(x, 0, 4, 8, 12);
        detail::quarter_round(x, 1, 5, 9, 13);
        detail::quarter_round(x, 2, 6, 10, 14);
        detail::quarter_round(x, 3, 7, 11, 15);
        detail::quarter_round(x, 0, 5, 10, 15);
        detail::quarter_round(x, 1, 6, 11, 12);
        detail::quarter_round(x, 2, 7, 8, 13);
        detail::quarter_round(x, 3, 4, 9, 14);
    }
    for (int i = 0; i < 16; ++i) out[i] = x[i] + in[i];
}

// RFC 8439 interface: 32-byte key, 32-bit block counter, 12-byte nonce -> 64 keystream bytes.
// (Reproduces the §2.3.2 test vector; used by tests.)
inline std::array<std::uint8_t, 64> chacha20_block(const std::uint8_t key[32], std::uint32_t counter,
                                                   const std::uint8_t nonce[12]) noexcept {
    std::uint32_t in[16], out[16];
    for (int i = 0; i < 4; ++i) in[i] = kChaChaConst[i];
    for (int i = 0; i < 8; ++i) in[4 + i] = detail::load_le32(key + 4 * i);
    in[12] = counter;
    for (int i = 0; i < 3; ++i) in[13 + i] = detail::load_le32(nonce + 4 * i);
    chacha20_block_words(in, out);
    std::array<std::uint8_t, 64> bytes{};
    for (std::size_t i = 0; i < 16; ++i)
        for (std::size_t j = 0; j < 4; ++j) bytes[4 * i + j] = std::uint8_t(out[i] >> (8 * j));
    return bytes;
}

// ChaCha20 keystream generator. Layout: constants | 256-bit key | 64-bit block counter (words
// 12–13) | zero 64-bit nonce (words 14–15). next_u64() returns keystream bytes 8i..8i+7 read
// little-endian, so the stream is identical on every platform.
//
// Not copyable: a copy would replay the same noise. Movable; a moved-from generator throws.
// Not thread-safe: guard a shared instance with a lock. Does not detect fork(): re-create after.
class SecureRng {
public:
    using result_type = std::uint64_t;  // UniformRandomBitGenerator
    static constexpr result_type min() noexcept { return 0; }
    static constexpr result_type max() noexcept { return ~std::uint64_t{0}; }
    result_type operator()() { return next_u64(); }

    // Secure: key from the OS CSPRNG (getrandom(2)). Throws EntropyError if unavailable.
    SecureRng() : seeded_(false) {
        std::uint8_t key[32];
        detail::os_random_bytes(key, sizeof key);
        init_key(key);
        wipe(key, sizeof key);
    }

    // Reproducible, NOT secret: key = splitmix64 expansion of seed. For experiments only.
    explicit SecureRng(std::uint64_t seed) : seeded_(true) {
        std::uint8_t key[32];
        for (int i = 0; i < 4; ++i) {
            const std::uint64_t w = dpsketch::splitmix64(seed);
            for (int j = 0; j < 8; ++j) key[8 * i + j] = std::uint8_t(w >> (8 * j));
        }
        init_key(key);
        wipe(key, sizeof key);
    }

    SecureRng(const SecureRng&) = delete;
    SecureRng& operator=(const SecureRng&) = delete;
    SecureRng(SecureRng&& o) noexcept { take(o); }
    SecureRng& operator=(SecureRng&& o) noexcept {
        if (this != &o) take(o);
        return *this;
    }
    ~SecureRng() {
        wipe(state_, sizeof state_);
        wipe(buf_, sizeof buf_);
    }

    bool seeded() const noexcept { return seeded_; }

    std::uint64_t next_u64() {
        if (pos_ == kBufWords) refill();
        return buf_[pos_++];
    }

    // Uniform on {0, ..., n-1}, exact (Lemire's multiply-and-reject). Requires n >= 1.
    std::uint64_t uniform_below(std::uint64_t n) {
        if (n == 0) throw ParameterError("SecureRng::uniform_below: n must be >= 1");
        if (n == 1) return 0;
        u128 m = u128(next_u64()) * n;
        if (std::uint64_t(m) < n) {
            const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
            while (std::uint64_t(m) < threshold) m = u128(next_u64()) * n;
        }
        return std::uint64_t(m >> 64);
    }

    // Uniform on {0, ..., n-1} for 128-bit n, exact (masked rejection, < 2 tries on average).
    u128 uniform_below_u128(u128 n) {
        if (n == 0) throw ParameterError("SecureRng::uniform_below_u128: n must be >= 1");
        if ((n >> 64) == 0) return uniform_below(std::uint64_t(n));
        const std::uint64_t hi_max = std::uint64_t((n - 1) >> 64);  // >= 1 here
        const std::uint64_t hi_mask = ~std::uint64_t{0} >> __builtin_clzll(hi_max);
        for (;;) {
            const u128 hi = next_u64() & hi_mask;
            const u128 r = (hi << 64) | next_u64();
            if (r < n) return r;
        }
    }

private:
    static constexpr int kBlocks = 4;  // refill 256 bytes at a time
    static constexpr unsigned kBufWords = kBlocks * 8;

    void init_key(const std::uint8_t key[32]) noexcept {
        for (int i = 0; i < 4; ++i) state_[i] = kChaChaConst[i];
        for (int i = 0; i < 8; ++i) state_[4 + i] = detail::load_le32(key + 4 * i);
        for (int i = 12; i < 16; ++i) state_[i] = 0;
        pos_ = kBufWords;
        valid_ = true;
    }

    // Four consecutive blocks at once, lanes interleaved (x[word][lane]) so the compiler can
    // vectorize the rounds; output equals chacha20_block_words for counters c, c+1, c+2, c+3.
    void refill() {
        if (!valid_) throw std::logic_error("SecureRng: generator used after being moved from");
        static_assert(kBlocks == 4, "refill() is written for 4 lanes");
        std::uint32_t s[16][4], x[16][4];
        const std::uint64_t ctr = std::uint64_t(state_[12]) | std::uint64_t(state_[13]) << 32;
        for (int w = 0; w < 16; ++w)
            for (int l = 0; l < 4; ++l) s[w][l] = state_[w];
        for (unsigned l = 0; l < 4; ++l) {
            s[12][l] = std::uint32_t(ctr + l);
            s[13][l] = std::uint32_t((ctr + l) >> 32);
        }
        std::memcpy(x, s, sizeof x);
        const auto qr = [&x](int a, int b, int c, int d) {
            for (int l = 0; l < 4; ++l) {
                x[a][l] += x[b][l]; x[d][l] = detail::rotl32(x[d][l] ^ x[a][l], 16);
                x[c][l] += x[d][l]; x[b][l] = detail::rotl32(x[b][l] ^ x[c][l], 12);
                x[a][l] += x[b][l]; x[d][l] = detail::rotl32(x[d][l] ^ x[a][l], 8);
                x[c][l] += x[d][l]; x[b][l] = detail::rotl32(x[b][l] ^ x[c][l], 7);
            }
        };
        for (int i = 0; i < 10; ++i) {
            qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15);
            qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14);
        }
        for (int l = 0; l < 4; ++l)
            for (int i = 0; i < 8; ++i)
                buf_[8 * l + i] = std::uint64_t(x[2 * i][l] + s[2 * i][l]) |
                                  std::uint64_t(x[2 * i + 1][l] + s[2 * i + 1][l]) << 32;
        const std::uint64_t next = ctr + 4;  // 64-bit block counter: cannot wrap in practice
        state_[12] = std::uint32_t(next);
        state_[13] = std::uint32_t(next >> 32);
        pos_ = 0;
    }

    void take(SecureRng& o) noexcept {
        std::memcpy(state_, o.state_, sizeof state_);
        std::memcpy(buf_, o.buf_, sizeof buf_);
        pos_ = o.pos_;
        seeded_ = o.seeded_;
        valid_ = o.valid_;
        wipe(o.state_, sizeof o.state_);
        wipe(o.buf_, sizeof o.buf_);
        o.pos_ = kBufWords;  // force a refill, which throws
        o.valid_ = false;
    }

    static void wipe(void* p, std::size_t n) noexcept {
        volatile std::uint8_t* v = static_cast<volatile std::uint8_t*>(p);
        while (n--) *v++ = 0;
    }

    std::uint32_t state_[16] = {};
    std::uint64_t buf_[kBufWords] = {};
    unsigned pos_ = kBufWords;
    bool seeded_ = false;
    bool valid_ = false;
};

}  // namespace dpsketch::noise
