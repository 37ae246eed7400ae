// Dependency-free timing program for the CI regression check (driven by bench/timing_check.py).
//
// Times a few key update paths on a Zipf(1.1) stream over 10^5 keys (and the counters also on a
// uniform one, their miss-heavy regime) and expresses each as a ratio to an exact counter
// (std::unordered_map increment) timed on the same stream in the same round. Rounds interleave baseline and paths, so slow phases of a loaded machine hit both; the
// per-path figure is the median over rounds. Prints one JSON object.
//
// Usage: dpsketch_timing [rounds] [items] [dump.bin]
//   dump.bin: also write the int stream there (raw little-endian int64), so the Python side of the
//   check can time the bindings on the very same stream.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bench_streams.hpp"
#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/dyadic/dyadic_count_sketch.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"

namespace {

using namespace dpsketch;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

volatile std::uint64_t g_sink;

// One timed pass of `s` over `xs`; seconds.
template <class S, class Xs>
double pass(S& s, const Xs& xs) {
  const double t0 = bench::now_seconds();
  for (const auto& x : xs) s.update(x);
  const double t1 = bench::now_seconds();
  g_sink = g_sink + s.n();
  return t1 - t0;
}

struct ExactInt {
  std::unordered_map<std::uint64_t, std::uint64_t> m;
  std::uint64_t count = 0;
  void update(std::int64_t x) { ++m[static_cast<std::uint64_t>(x)]; ++count; }
  std::uint64_t n() const { return count; }
};
struct ExactStr {
  std::unordered_map<std::string_view, std::uint64_t> m;
  std::uint64_t count = 0;
  void update(std::string_view x) { ++m[x]; ++count; }
  std::uint64_t n() const { return count; }
};

enum class Base { zipf_int, zipf_str, uniform_int };  // the exact baseline a path is compared with

struct Path {
  std::string name;
  Base base;
  std::function<double()> run;  // one timed pass, seconds
  std::vector<double> ratios, ns;
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  const std::size_t items = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (std::size_t{1} << 20);
  const auto ints = bench::zipf_ints(items, 1.1, 100000, 0x5eed000b);
  const auto strs = bench::to_strings(ints);
  const auto uniform = bench::zipf_ints(items, 0.0, 100000, 0x5eed0000);
  if (argc > 3) {
    std::FILE* f = std::fopen(argv[3], "wb");
    if (!f || std::fwrite(ints.data(), sizeof(std::int64_t), ints.size(), f) != ints.size()) {
      std::fprintf(stderr, "cannot write %s\n", argv[3]);
      return 2;
    }
    std::fclose(f);
  }

  ExactInt exact_int, exact_uniform;
  ExactStr exact_str;
  SpaceSaving<std::int64_t> ss(256), ss4096(4096), ss_uniform(256);
  MisraGries<std::int64_t> mg(256), mg4096(4096), mg_uniform(256);
  CountMin<std::int64_t> cm(2048, 5, 42);
  CountSketch<std::int64_t> cs(2048, 5, 42);
  CountMin<std::int64_t> cm32(256, 32, 42);
  SpaceSaving<std::string> ss_str(256);
  // Zhao's shape for L = 32, gamma = 1% (9 x 1608, 13 exact levels), fed through its batch path on
  // 32-bit items (the uniform stream's values spread over [0, 2^32) by a fixed odd multiplier).
  dyadic::DyadicCountSketch dyadic32(32, 1608, 9, 42);
  std::vector<std::uint64_t> items32(uniform.size());
  for (std::size_t i = 0; i < uniform.size(); ++i)
    items32[i] = (static_cast<std::uint64_t>(uniform[i]) * 0x9E3779B1u) & 0xFFFFFFFFu;

  std::vector<Path> paths;
  paths.push_back({"spacesaving_int_k256", Base::zipf_int, [&] { return pass(ss, ints); }, {}, {}});
  paths.push_back({"misragries_int_k256", Base::zipf_int, [&] { return pass(mg, ints); }, {}, {}});
  paths.push_back({"spacesaving_int_k4096", Base::zipf_int, [&] { return pass(ss4096, ints); }, {}, {}});
  paths.push_back({"misragries_int_k4096", Base::zipf_int, [&] { return pass(mg4096, ints); }, {}, {}});
  paths.push_back({"spacesaving_uniform_k256", Base::uniform_int, [&] { return pass(ss_uniform, uniform); }, {}, {}});
  paths.push_back({"misragries_uniform_k256", Base::uniform_int, [&] { return pass(mg_uniform, uniform); }, {}, {}});
  paths.push_back({"countmin_int_2048x5", Base::zipf_int, [&] { return pass(cm, ints); }, {}, {}});
  paths.push_back({"countsketch_int_2048x5", Base::zipf_int, [&] { return pass(cs, ints); }, {}, {}});
  paths.push_back({"countmin_int_256x32", Base::zipf_int, [&] { return pass(cm32, ints); }, {}, {}});
  paths.push_back({"spacesaving_str_k256", Base::zipf_str, [&] { return pass(ss_str, strs.keys); }, {}, {}});
  paths.push_back({"dyadic_l32_batch", Base::uniform_int, [&] {
                     const double t0 = bench::now_seconds();
                     dyadic32.update_many(items32.data(), nullptr, items32.size());
                     const double t1 = bench::now_seconds();
                     g_sink = g_sink + static_cast<std::uint64_t>(dyadic32.n());
                     return t1 - t0;
                   }, {}, {}});

  // Warm-up: fills the maps and summaries (steady state from the first timed round on).
  pass(exact_int, ints);
  pass(exact_str, strs.keys);
  pass(exact_uniform, uniform);
  for (auto& p : paths) p.run();

  std::vector<double> base_int_ns, base_str_ns;
  for (int r = 0; r < rounds; ++r) {
    const double bi = pass(exact_int, ints);
    const double bs = pass(exact_str, strs.keys);
    const double bu = pass(exact_uniform, uniform);
    base_int_ns.push_back(bi * 1e9 / double(items));
    base_str_ns.push_back(bs * 1e9 / double(items));
    for (auto& p : paths) {
      const double t = p.run();
      p.ratios.push_back(t / (p.base == Base::zipf_str ? bs : p.base == Base::uniform_int ? bu : bi));
      p.ns.push_back(t * 1e9 / double(items));
    }
  }

  std::printf("{\n  \"items\": %zu,\n  \"rounds\": %d,\n", items, rounds);
  std::printf("  \"exact_int_ns\": %.3f,\n  \"exact_str_ns\": %.3f,\n", median(base_int_ns), median(base_str_ns));
  std::printf("  \"paths\": {\n");
  for (std::size_t i = 0; i < paths.size(); ++i)
    std::printf("    \"%s\": {\"ratio\": %.4f, \"ns\": %.3f}%s\n", paths[i].name.c_str(), median(paths[i].ratios),
                median(paths[i].ns), i + 1 < paths.size() ? "," : "");
  std::printf("  }\n}\n");
  return 0;
}
