// The mass bound of the sketches' cells (sketches/cell_store.hpp): after every update path of the
// linear sketches and the dyadic sketch, and after a merge, the mass is exactly the total |count|
// absorbed, and every |cell| and |n| is at most the mass. Covers the per-update estimate of the
// heavy-hitter wrapper on both its row paths (the AVX2 row tables at depth >= 12 where the CPU has
// them, and the scalar rows).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

std::uint64_t magnitude(std::int64_t v) { return dpsketch::detail::magnitude(v); }

template <class S>
void check_bound(const S& s, std::uint64_t absorbed, const std::string& what) {
  std::uint64_t peak = magnitude(s.n());
  for (const std::int64_t c : s.cells()) peak = std::max(peak, magnitude(c));
  expect(s.mass() == absorbed, what + ": mass == total |count| absorbed");
  expect(peak <= s.mass(), what + ": every |cell| and |n| <= mass");
}

std::vector<std::int64_t> items(std::size_t m) {
  std::vector<std::int64_t> xs;
  std::uint64_t s = 0x243f6a8885a308d3ULL;
  for (std::size_t i = 0; i < m; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    xs.push_back(static_cast<std::int64_t>(s % 50));
  }
  return xs;
}

template <dpsketch::SketchKind Kind>
void linear(const char* name) {
  using S = dpsketch::LinearSketch<std::int64_t, Kind>;
  const std::vector<std::int64_t> xs = items(3000);
  const std::vector<std::int64_t> counts = {5, -3, 7, 0, -11, 2};
  for (const std::uint64_t depth : {5u, 32u}) {
    const std::string tag = std::string(name) + " d=" + std::to_string(depth);
    S s(256, depth, 7);
    std::uint64_t absorbed = 0;
    for (std::size_t i = 0; i < 1000; ++i) s.update(xs[i]);
    absorbed += 1000;
    check_bound(s, absorbed, tag + " update");
    s.update_many(xs.begin() + 1000, xs.begin() + 2000);
    absorbed += 1000;
    check_bound(s, absorbed, tag + " update_many");
    for (std::size_t i = 0; i < counts.size(); ++i) s.update(xs[i], counts[i]);
    s.update_many_counted(xs, counts.data(), counts.size());
    for (const std::int64_t c : counts) absorbed += 2 * magnitude(c);
    check_bound(s, absorbed, tag + " counted updates");
    s.prepare_update_and_estimate();  // the AVX2 row tables at depth >= 12, on an AVX2 CPU
    for (std::size_t i = 2000; i < 3000; ++i) s.update_and_estimate_fp(s.fingerprint(xs[i]));
    absorbed += 1000;
    check_bound(s, absorbed, tag + " update_and_estimate_fp");
    S other(256, depth, 7);
    other.update_many(xs.begin(), xs.end());
    s.merge(other);
    check_bound(s, absorbed + xs.size(), tag + " merge");
  }
}

void dyadic_sketch() {
  using dpsketch::dyadic::DyadicCountSketch;
  const std::vector<std::int64_t> xs = items(2000);
  std::vector<std::uint64_t> ux(xs.begin(), xs.end());
  const std::vector<std::int64_t> counts(ux.size(), -2);
  DyadicCountSketch s(16, 64, 3, 9);
  for (std::size_t i = 0; i < 500; ++i) s.update(ux[i], i % 2 ? 3 : -1);
  std::uint64_t absorbed = 500 / 2 * 4;
  check_bound(s, absorbed, "dyadic update");
  s.update_many(ux.data(), nullptr, ux.size());
  s.update_many(ux.data(), counts.data(), ux.size());
  absorbed += 3 * ux.size();
  check_bound(s, absorbed, "dyadic update_many");
  DyadicCountSketch other(16, 64, 3, 9);
  other.update_many(ux.data(), nullptr, ux.size());
  s.merge(other);
  check_bound(s, absorbed + ux.size(), "dyadic merge");
}

}  // namespace

int main() {
  linear<dpsketch::SketchKind::count_min>("CountMin");
  linear<dpsketch::SketchKind::count_sketch>("CountSketch");
  dyadic_sketch();
  return failures ? 1 : 0;
}
