// dpsketch_bench: google-benchmark microbenchmarks of the per-update cost of every summary and
// sketch, and of release, over capacity k in {64 ... 65536}, Zipf skew in {0.8, 1.1, 1.5, 2.0} and
// int / str keys. Streams (2^20 items over 10^5 keys) are generated once, before any timing. Each
// structure lives across the benchmark's iterations, so after the first pass it is measured in
// steady state (full, evicting). Every stream is also fed to an exact counter
// (std::unordered_map increment) in the same run; the summary table printed at the end gives each
// figure as a ratio to that baseline.
//
// Adding a structure is one registration in register_key_type() / register_private():
//   add_update<Key>("Name", [](std::uint64_t k) { return Structure(k); });      // needs update(view)
//   add_release<Key>("Name", make, [](auto& s, std::uint64_t iter) { ...; return result; });
//
// A branch diagnostic (`hitmiss:alternating` vs `hitmiss:random`, see add_hitmiss) isolates the
// cost of the counters' unpredictable hit/miss branch. The probe-only floor (`ProbeFloor`, see
// below) is the counters' lower bound on the same stream: their hash and slot table, preloaded with
// the k most frequent keys; the end-of-run table gives the counters as a ratio to it too. The
// eviction floor (`EvictionFloor`) is the same storage evicting round-robin on a miss: what any
// evicting summary pays at least on a stream of misses.
//
// Usage: dpsketch_bench [--quick | --floor] [google-benchmark flags, e.g. --benchmark_filter=SpaceSaving]
//   --quick: k in {256, 4096}, skew in {1.1}; the full grid takes a few minutes on 2 cores.
//   --floor: k in {256, 1024, 4096}, Zipf 0.8 / 1.1 and uniform (the counters-vs-floor grid).
//   Skew 0 is the uniform stream (named `skew:uniform`).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "bench_streams.hpp"
#include "probe_floor.hpp"
#include "dpsketch/counters/misra_gries.hpp"
#include "dpsketch/counters/space_saving.hpp"
#include "dpsketch/release/counter_release.hpp"
#include "dpsketch/release/sketch_heavy_hitters.hpp"
#include "dpsketch/sketches/linear_sketch.hpp"


namespace {

using namespace dpsketch;
using dpsketch::bench::StringStream;
using dpsketch::bench::EvictionFloor;
using dpsketch::bench::ProbeFloor;

constexpr std::size_t kStreamLength = std::size_t{1} << 20;
constexpr std::size_t kUniverse = 100000;
std::vector<std::uint64_t> g_capacities = {64, 256, 1024, 4096, 16384, 65536};
std::vector<double> g_skews = {0.0, 0.8, 1.1, 1.5, 2.0};  // 0: uniform

std::string skew_name(double s) {
  if (s == 0.0) return "uniform";
  char b[16];
  std::snprintf(b, sizeof b, "%.1f", s);
  return b;
}

// ---- streams (generated lazily, once, outside the timed loops) ---------------------------------
const std::vector<std::int64_t>& int_stream(double skew) {
  static std::map<double, std::vector<std::int64_t>> cache;
  auto it = cache.find(skew);
  if (it == cache.end())
    it = cache.emplace(skew, bench::zipf_ints(kStreamLength, skew, kUniverse, 0x5eed0000 + std::uint64_t(skew * 10))).first;
  return it->second;
}
const StringStream& str_stream(double skew) {
  static std::map<double, std::unique_ptr<StringStream>> cache;
  auto it = cache.find(skew);
  if (it == cache.end()) it = cache.emplace(skew, std::make_unique<StringStream>(bench::to_strings(int_stream(skew)))).first;
  return *it->second;
}
template <class Key>
const auto& keys_of(double skew) {
  if constexpr (std::is_same_v<Key, std::int64_t>) return int_stream(skew);
  else return str_stream(skew).keys;
}

// ---- exact-count baseline ----------------------------------------------------------------------
template <class Key>
struct ExactCount;
template <>
struct ExactCount<std::int64_t> {
  std::unordered_map<std::uint64_t, std::uint64_t> m;
  void update(std::int64_t x) { ++m[static_cast<std::uint64_t>(x)]; }
  // libstdc++: one pointer per bucket, nodes of next pointer + pair (24 B, 32 B with malloc header).
  std::size_t memory_bytes() const { return m.bucket_count() * 8 + m.size() * 32; }
};
template <>
struct ExactCount<std::string> {
  // Views into the stream buffer, which outlives the map: no string copies.
  std::unordered_map<std::string_view, std::uint64_t> m;
  void update(std::string_view x) { ++m[x]; }
  std::size_t memory_bytes() const { return m.bucket_count() * 8 + m.size() * 48; }
};

// ---- floors: bench/probe_floor.hpp (ProbeFloor, EvictionFloor) ------------------------------

// ---- registration ------------------------------------------------------------------------------
struct Entry {
  std::string stream;       // "int/1.1": rows sharing the same exact baseline
  std::uint64_t capacity;   // 0 for the baseline
  std::size_t order = 0;    // registration order: the end-of-run table keeps it under random interleaving
};
std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}

template <class Key>
std::string stream_id(double skew) {
  return std::string(KeyTraits<Key>::name) + "/" + skew_name(skew);
}

void set_update_counters(benchmark::State& st, std::size_t n, std::size_t bytes, std::uint64_t k) {
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * n));
  st.counters["ns/update"] = benchmark::Counter(double(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.counters["bytes"] = double(bytes);
  if (k) st.counters["B/counter"] = double(bytes) / double(k);
}

// Per-update benchmark of `make(k)` (or `make(k, stream)`, built outside the timing) for every
// (k, skew). Structures need update(view) and memory_bytes(); `capacities` overrides the k grid
// (e.g. {0} for structures without one).
template <class Key, class Make>
void add_update(const std::string& name, Make make, const std::vector<std::uint64_t>* capacities = nullptr) {
  for (double skew : g_skews)
    for (std::uint64_t k : capacities ? *capacities : g_capacities) {
      std::string full = name + "<" + KeyTraits<Key>::name + ">/";
      if (k) full += "k:" + std::to_string(k) + "/";
      full += "skew:" + skew_name(skew);
      registry()[full] = Entry{stream_id<Key>(skew), k, registry().size()};
      benchmark::RegisterBenchmark(full.c_str(), [=](benchmark::State& st) {
        const auto& xs = keys_of<Key>(skew);
        auto s = [&] {
          if constexpr (std::is_invocable_v<Make, std::uint64_t, decltype(xs)>) return make(k, xs);
          else return make(k);
        }();
        for (auto _ : st) {
          for (const auto& x : xs) s.update(x);
          benchmark::ClobberMemory();
        }
        benchmark::DoNotOptimize(&s);
        set_update_counters(st, xs.size(), s.memory_bytes(), k);
      });
    }
}

// Release benchmark (skew 1.1 only): the structure is fed the whole stream once (untimed), then each iteration
// times release(s, iteration) -- the result is kept alive so the work is not optimised away.
template <class Key, class Make, class Release>
void add_release(const std::string& name, Make make, Release release) {
  for (double skew : {1.1})
    for (std::uint64_t k : g_capacities) {
      const std::string full = name + "<" + KeyTraits<Key>::name + ">/k:" + std::to_string(k) + "/skew:" + skew_name(skew);
      registry()[full] = Entry{"release", k, registry().size()};
      benchmark::RegisterBenchmark(full.c_str(), [=](benchmark::State& st) {
        const auto& xs = keys_of<Key>(skew);
        auto s = make(k);
        for (const auto& x : xs) s.update(x);
        std::uint64_t i = 0;
        for (auto _ : st) {
          auto out = release(s, i++);
          benchmark::DoNotOptimize(out);
        }
        st.counters["ns/counter"] = benchmark::Counter(double(k) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
      })->Unit(benchmark::kMicrosecond);
    }
}

// Private variants, one registration each: SketchHeavyHitters (noisy Count-Min / CountSketch
// oracle, d = 32, width 2k / 3k, k = capacity / 4 as in the paper) per update and per release;
// DPSS and PMG release on a summary fed the whole stream. Parameters: epsilon 1, and for the
// envelope delta 1e-2 with max_stream_length 2^20, which is what admits d = 32 (§5:
// d >= log2((n_max + k~) / delta_C), delta_C = delta / (2(1 + e^epsilon))).
noise::SecureRng& bench_rng() {
  static noise::SecureRng rng(12345);  // seeded: reproducible benchmark noise, not for real use
  return rng;
}
release::EnvelopeParams shh_params(std::uint64_t k) {
  release::EnvelopeParams p;
  p.k = std::max<std::uint64_t>(1, k / 4);
  p.capacity = k;
  p.depth = 32;
  p.max_stream_length = kStreamLength;
  p.epsilon = 1.0;
  p.delta = 1e-2;
  return p;
}
template <class Key>
void register_private() {
  using CM = release::SketchHeavyHitters<Key, SketchKind::count_min>;
  using CS = release::SketchHeavyHitters<Key, SketchKind::count_sketch>;
  add_update<Key>("SHH_CountMin_d32", [](std::uint64_t k) { return CM(shh_params(k), 42, bench_rng()); });
  add_update<Key>("SHH_CountSketch_d32", [](std::uint64_t k) { return CS(shh_params(k), 42, bench_rng()); });
  add_release<Key>("Release_DPSS", [](std::uint64_t k) { return SpaceSaving<Key>(k); },
                   [](const auto& s, std::uint64_t) { return release::dpss(s, 1.0, 1e-6, std::max<std::uint64_t>(1, s.capacity() / 2), release::Length::fixed(s.n()), bench_rng()); });
  add_release<Key>("Release_PMG", [](std::uint64_t k) { return MisraGries<Key>(k); },
                   [](const auto& s, std::uint64_t) { return release::pmg(s, 1.0, 1e-6, std::optional<std::uint64_t>(), release::Length::unused(), bench_rng()); });
  add_release<Key>("Release_SHH_CountMin_d32", [](std::uint64_t k) { return CM(shh_params(k), 42, bench_rng()); },
                   [](const auto& s, std::uint64_t) { return s.release(release::Length::fixed(s.n())); });
}

// Branch diagnostic for the counters' data-dependent hit/miss branch: one stream of 50% hits (100
// heavy keys, in turn) and 50% misses (keys never seen before), once with hits and misses
// alternating, which the branch predictor learns, and once in random order. Same work per update;
// the difference is the cost of mispredicting the hit/miss branch.
const std::vector<std::int64_t>& hitmiss_stream(bool random_order) {
  static std::map<bool, std::vector<std::int64_t>> cache;
  auto it = cache.find(random_order);
  if (it == cache.end()) {
    std::vector<std::int64_t> xs(kStreamLength);
    std::uint64_t state = 0x5eed4d15, heavy = 0;
    std::int64_t fresh = 1000000;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG: the top bit is a fair coin
      const bool hit = random_order ? (state >> 63) != 0 : (i & 1) != 0;
      xs[i] = hit ? std::int64_t(heavy++ % 100) : fresh++;
    }
    it = cache.emplace(random_order, std::move(xs)).first;
  }
  return it->second;
}
template <class S>
void add_hitmiss(const std::string& name) {
  for (bool random_order : {false, true}) {
    const std::string full = name + "<int>/k:256/hitmiss:" + (random_order ? "random" : "alternating");
    registry()[full] = Entry{"hitmiss", 256, registry().size()};
    benchmark::RegisterBenchmark(full.c_str(), [=](benchmark::State& st) {
      const auto& xs = hitmiss_stream(random_order);
      S s(256);
      for (auto _ : st) {
        for (const auto& x : xs) s.update(x);
        benchmark::ClobberMemory();
      }
      benchmark::DoNotOptimize(&s);
      set_update_counters(st, xs.size(), s.memory_bytes(), 256);
    });
  }
}

template <class Key>
void register_key_type() {
  static const std::vector<std::uint64_t> none = {0};
  add_update<Key>("Exact", [](std::uint64_t) { return ExactCount<Key>(); }, &none);
  add_update<Key>("SpaceSaving", [](std::uint64_t k) { return SpaceSaving<Key>(k); });
  add_update<Key>("MisraGries", [](std::uint64_t k) { return MisraGries<Key>(k); });
  add_update<Key>("ProbeFloor", [](std::uint64_t k, const auto& xs) { return ProbeFloor<Key>(k, xs); });
  add_update<Key>("EvictionFloor", [](std::uint64_t k) { return EvictionFloor<Key>(k); });
  // Linear sketches: width k (the same counter budget per row as a k-counter summary).
  add_update<Key>("CountMin_d5", [](std::uint64_t k) { return CountMin<Key>(k, 5, 42); });
  add_update<Key>("CountSketch_d5", [](std::uint64_t k) { return CountSketch<Key>(k, 5, 42); });
  add_update<Key>("CountMin_d32", [](std::uint64_t k) { return CountMin<Key>(k, 32, 42); });
  add_update<Key>("CountSketch_d32", [](std::uint64_t k) { return CountSketch<Key>(k, 32, 42); });
  register_private<Key>();
}

// ---- end-of-run table: ns/update and same-run ratio to the exact baseline ----------------------
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const bool agg = r.run_type == Run::RT_Aggregate;
      if (agg && r.aggregate_name != "median") continue;
      if (!agg && r.repetitions > 1) continue;
      const std::string name = r.run_name.str();
      Row row;
      auto ns = r.counters.find("ns/update");
      if (ns != r.counters.end()) row.ns = ns->second.value;
      auto it = r.counters.find("ns/counter");
      if (it != r.counters.end()) row.release_us = r.GetAdjustedCPUTime();
      auto b = r.counters.find("bytes");
      if (b != r.counters.end()) row.bytes = b->second.value;
      rows_.emplace_back(name, row);
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::stable_sort(rows_.begin(), rows_.end(),
                     [](const auto& a, const auto& b) { return registry()[a.first].order < registry()[b.first].order; });
    std::map<std::string, double> base;
    std::map<std::pair<std::string, std::uint64_t>, double> floor;  // (stream, k) -> ProbeFloor ns
    for (auto& [name, row] : rows_) {
      if (name.rfind("Exact<", 0) == 0) base[registry()[name].stream] = row.ns;
      if (name.rfind("ProbeFloor<", 0) == 0) floor[{registry()[name].stream, registry()[name].capacity}] = row.ns;
    }
    std::printf("\n| benchmark | ns/update | Mupdates/s | x exact | x floor | bytes | B/counter |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (auto& [name, row] : rows_) {
      if (row.ns <= 0) continue;
      const Entry& e = registry()[name];
      const double b = base.count(e.stream) ? base[e.stream] : 0;
      const auto fl = floor.find({e.stream, e.capacity});
      const double f = e.capacity && fl != floor.end() ? fl->second : 0;
      std::printf("| %s | %.2f | %.1f | %s | %s | %.0f | %s |\n", name.c_str(), row.ns, 1e3 / row.ns,
                  b > 0 ? fmt("%.2f", row.ns / b).c_str() : "-", f > 0 ? fmt("%.2f", row.ns / f).c_str() : "-",
                  row.bytes, e.capacity ? fmt("%.1f", row.bytes / double(e.capacity)).c_str() : "-");
    }
    bool any_release = false;
    for (auto& [name, row] : rows_)
      if (row.release_us > 0) {
        if (!any_release) std::printf("\n| release | us/release |\n|---|---:|\n");
        any_release = true;
        std::printf("| %s | %.1f |\n", name.c_str(), row.release_us);
      }
  }

 private:
  struct Row {
    double ns = 0, bytes = 0, release_us = 0;
  };
  static std::string fmt(const char* f, double v) {
    char b[32];
    std::snprintf(b, sizeof b, f, v);
    return b;
  }
  std::vector<std::pair<std::string, Row>> rows_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      g_capacities = {256, 4096};
      g_skews = {1.1};
    } else if (std::strcmp(argv[i], "--floor") == 0) {
      g_capacities = {256, 1024, 4096};
      g_skews = {1.1, 0.8, 0.0};
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  register_key_type<std::int64_t>();
  register_key_type<std::string>();
  add_hitmiss<SpaceSaving<std::int64_t>>("SpaceSaving");
  add_hitmiss<MisraGries<std::int64_t>>("MisraGries");
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
