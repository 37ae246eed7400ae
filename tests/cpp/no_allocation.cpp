// "Nothing allocates after construction": the update paths of every summary and sketch with
// integer keys run with a counting global operator new, which must not be called once the object
// exists (hot paths are allocation-free by design; string keys copy the key on a miss by nature).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace {
std::atomic<std::uint64_t> allocations{0};
}

void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

// A Zipf-like stream over a universe larger than the capacities: hits, misses and evictions.
std::vector<std::int64_t> stream() {
  std::vector<std::int64_t> xs;
  std::uint64_t s = 88172645463325252ull;
  for (int i = 0; i < 200000; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const std::uint64_t u = s % 1000000;
    xs.push_back(static_cast<std::int64_t>(u < 500000 ? u % 64 : u));  // half the mass on 64 keys
  }
  return xs;
}

int failures = 0;

template <class F>
void check(const char* what, F&& feed) {
  const std::uint64_t before = allocations.load();
  feed();
  const std::uint64_t after = allocations.load();
  if (after != before) {
    std::fprintf(stderr, "FAIL %s: %llu allocations while updating\n", what,
                 static_cast<unsigned long long>(after - before));
    ++failures;
  } else {
    std::printf("ok   %s\n", what);
  }
}

}  // namespace

int main() {
  using namespace dpsketch;
  const std::vector<std::int64_t> xs = stream();
  SpaceSaving<std::int64_t> ss(256);
  check("SpaceSaving<int64>::update", [&] { for (auto x : xs) ss.update(x); });
  MisraGries<std::int64_t> mg(256);
  check("MisraGries<int64>::update", [&] { for (auto x : xs) mg.update(x); });
  CountMin<std::int64_t> cm(1024, 5, 1);
  check("CountMin<int64>::update", [&] { for (auto x : xs) cm.update(x); });
  CountSketch<std::int64_t> cs(1024, 5, 1);
  check("CountSketch<int64>::update", [&] { for (auto x : xs) cs.update(x); });
  dyadic::DyadicCountSketch dy(32, 512, 3, 1);
  check("DyadicCountSketch::update", [&] {
    for (auto x : xs) dy.update(static_cast<std::uint64_t>(x));
  });
  return failures ? 1 : 0;
}
