// The counters' vector scan (FlatSlots::scan, counters/flat_slots.hpp) under whatever instruction
// set this file is compiled for: tests/cpp/CMakeLists.txt builds it portable and, on a host with
// AVX-512BW/VL, again with -march=native, so that the code generator's AVX-512 forms of the AVX2 kernel
// are run too; ctest runs each build with the vector paths on and with DPSKETCH_NO_SIMD=1.
//   1. scan() against a plain loop: the minimum count above `above` (0 as a literal, as
//      SpaceSaving passes it, and random values) and the marked slots, for every n from 1 to 64
//      and random larger ones.
//   2. SpaceSaving and MisraGries with int keys against the brute-force reference counters
//      (tests/native/reference_counters.hpp) on eviction-heavy streams: equal items, in structure
//      order, and equal bytes, every few thousand updates.
// Exit 0 iff everything agreed.
#include <cstdint>
#include <cstdio>
#include <random>
#include <type_traits>
#include <vector>

#include "dpsketch/counters/flat_slots.hpp"
#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "reference_counters.hpp"

namespace {

using Slots = dpsketch::detail::FlatSlots<std::int64_t>;
using Rng = std::mt19937_64;
int failures = 0;

void fail(const char* what, unsigned long long a, unsigned long long b) {
  if (++failures <= 10) std::fprintf(stderr, "FAIL %s (%llu, %llu)\n", what, a, b);
}

struct Marks {
  std::vector<std::int32_t> hit;
  void operator()(std::int32_t s, bool match) {
    if (match) hit.push_back(s);
  }
};

void check_scan(const Slots& slots, std::uint32_t n, std::uint64_t above, std::uint64_t eq, std::uint32_t before,
                std::uint64_t got, const Marks& marks) {
  std::uint64_t want = ~std::uint64_t{0};
  std::vector<std::int32_t> hit;
  for (std::uint32_t s = 0; s < n; ++s) {
    const auto i = static_cast<std::int32_t>(s);
    if (slots[i].count > above && slots[i].count < want) want = slots[i].count;
    if (slots[i].count == eq && slots.time(i) < before) hit.push_back(i);
  }
  if (got != want) fail("scan: minimum above `above` (got, want)", got, want);
  if (marks.hit != hit) fail("scan: marked slots (got, want)", marks.hit.size(), hit.size());
}

void scan_cases(Rng& rng) {
  for (int trial = 0; trial < 4000; ++trial) {
    const auto n = static_cast<std::uint32_t>(trial < 640 ? 1 + trial % 64 : 1 + rng() % 600);
    Slots slots(n);
    const std::uint64_t top = 1 + rng() % 6;  // few distinct counts: ties and equal minima
    const std::uint64_t offset = rng() % 4 == 0 ? (std::uint64_t{1} << 62) : 0;  // large counts too
    for (std::uint32_t s = 0; s < n; ++s) {
      const auto i = static_cast<std::int32_t>(s);
      slots[i].count = offset + 1 + rng() % top;
      slots.time(i) = static_cast<std::uint32_t>(rng() % 1000);
    }
    const std::uint64_t eq = offset + rng() % (top + 2);
    const auto before = static_cast<std::uint32_t>(rng() % 1100);
    Marks m0, m1;
    // `above` as the literal 0 (SpaceSaving's call), then a random one.
    const std::uint64_t got0 = slots.scan(n, 0, eq, before, m0);
    check_scan(slots, n, 0, eq, before, got0, m0);
    const std::uint64_t above = rng() % 2 ? offset + rng() % (top + 2) : rng() % 3;
    const std::uint64_t got1 = slots.scan(n, above, eq, before, m1);
    check_scan(slots, n, above, eq, before, got1, m1);
  }
}

// Every stored item: Misra-Gries's count-0 keys too (they are the next to be reused).
template <class S>
auto all_items(const S& s) {
  if constexpr (std::is_same_v<S, dpsketch::MisraGries<std::int64_t>> || std::is_same_v<S, reference::MisraGries<std::int64_t>>)
    return s.items(true);
  else
    return s.items();
}

template <class New, class Ref>
void stream_case(const char* family, std::uint32_t capacity, std::uint64_t universe, bool skewed, Rng& rng) {
  New a(capacity);
  Ref b(capacity);
  for (int i = 1; i <= 200000; ++i) {
    std::uint64_t u = rng() % universe;
    if (skewed) u = u * (rng() % universe) / universe;  // more mass on small keys
    const auto x = static_cast<std::int64_t>(u);
    a.update(x);
    b.update(x);
    if (i % 20000 == 0) {
      if (all_items(a) != all_items(b)) fail(family, capacity, static_cast<unsigned long long>(i));
      if (a.serialize() != b.serialize()) fail(family, capacity, static_cast<unsigned long long>(i));
    }
  }
}

}  // namespace

int main() {
#if defined(DPSKETCH_EXPECT_AVX512) && !(defined(__AVX512BW__) && defined(__AVX512VL__))
  std::fprintf(stderr, "counters_simd_native: -march=native did not enable AVX-512BW/VL on this host; skipped\n");
  return 77;  // ctest: skipped
#endif
  Rng rng(20261207);
  scan_cases(rng);
  for (std::uint32_t capacity : {5u, 64u, 256u, 257u}) {
    for (bool skewed : {false, true}) {
      stream_case<dpsketch::SpaceSaving<std::int64_t>, reference::SpaceSaving<std::int64_t>>("SpaceSaving", capacity, 1000,
                                                                                              skewed, rng);
      stream_case<dpsketch::MisraGries<std::int64_t>, reference::MisraGries<std::int64_t>>("MisraGries", capacity, 1000,
                                                                                            skewed, rng);
    }
  }
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  const char* isa = "AVX-512BW/VL enabled at compile time";
#else
  const char* isa = "without AVX-512BW/VL at compile time";
#endif
  if (failures) {
    std::fprintf(stderr, "counters_simd (%s, vector paths %s): %d failures\n", isa, dpsketch::simd::avx2() ? "on" : "off",
                 failures);
    return 1;
  }
  std::printf("counters_simd (%s, vector paths %s): OK\n", isa, dpsketch::simd::avx2() ? "on" : "off");
  return 0;
}
